"""Moves of a server through Nova, and its bandwidth guarantee checked at every step.

:func:`read_move_state` reads the server (openstacksdk compute), its ports (:func:`minbw.ops.servers.port_state`),
its latest migration record, the allocations of the server consumer and of the migration consumer
and the providers of the host trees involved (:class:`minbw.placement.client.Placement`), and asks
:func:`minbw.reports.server_move.check_move` what breaks the rules of the step's phase.

The drivers (:func:`migrate`, :func:`resize`, :func:`confirm`, :func:`revert`, :func:`live_migrate`,
:func:`evacuate`, :func:`shelve`, :func:`unshelve`, :func:`start`, :func:`force_down`) make one Nova
call each and wait, bounded, until the server and its migration record reach the statuses that
call leads to; a server in ERROR, a migration in ``error``/``failed`` or a timeout raises
:class:`minbw.errors.NovaMoveFailed` naming the server, the migration and what was seen.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Mapping

from minbw.errors import InvalidInput, MappingError, NovaMoveFailed, ObjectNotFound
from minbw.model.claims import resources_by_provider
from minbw.model.providers import stocks_of
from minbw.ops import claims
from minbw.ops.servers import find_server, port_state, request_of_server
from minbw.placement.client import Placement
from minbw.plan.base import Plan
from minbw.plan.server_move import plan_action
from minbw.reports.server_move import (
    BROKEN,
    HOST_ACTIONS,
    ComputeService,
    Migration,
    MoveFacts,
    MoveState,
    MoveWait,
    ProviderState,
    check_move,
)

KINDS = ("migrate", "resize", "live_migrate", "evacuate", "shelve_unshelve")


# ---------------------------------------------------------------- reading
def migrations(conn, server_id: str) -> list[Migration]:
    """The server's migration records, newest first (Nova lists them so from microversion 2.59)."""
    found = [m.to_dict(computed=False) for m in conn.compute.migrations(server_id=server_id)]
    found = [m for m in found if m.get("server_id") in (None, server_id)]
    # openstacksdk shows the record's uuid as its id (alternate id) and hides the integer id
    found = [dict(m, uuid=m.get("uuid") or m.get("id"), id=None) for m in found]
    found.sort(key=lambda m: m.get("created_at") or "", reverse=True)  # stable: ties keep Nova's order
    return [Migration.from_api(m) for m in found if m.get("uuid")]


def latest_migration(conn, server_id: str) -> Migration | None:
    """The server's newest migration record (a Migration), or None when it has none."""
    found = migrations(conn, server_id)
    return found[0] if found else None


def last_host_action(conn, server_id: str) -> str | None:
    """The server's newest instance action that put it on a host or took it off (create, migrate,
    resize, confirmResize, revertResize, live-migration, evacuate, shelve*, unshelve)."""
    actions = [a for a in conn.compute.server_actions(server_id) if a.action in HOST_ACTIONS]
    actions.sort(key=lambda a: a.start_time or "", reverse=True)  # stable: ties keep Nova's (newest first)
    return actions[0].action if actions else None


def _server_view(server) -> dict:
    return {
        "id": server.id,
        "name": server.name,
        "status": server.status,
        "task_state": server.task_state,
        "vm_state": server.vm_state,
        "compute_host": server.compute_host,
        "hypervisor_hostname": server.hypervisor_hostname,
        "flavor": (server.flavor or {}).get("original_name"),
        "fault": server.fault or None,
    }


def read_trees(api: Placement, roots: Iterable[str]) -> dict[str, ProviderState]:
    """Every provider of the given host trees, with traits, capacity, usage and consumers."""
    out: dict[str, ProviderState] = {}
    for root in dict.fromkeys(roots):
        if root in out:
            continue
        tree = api.list_providers(in_tree=root)
        for d in api.provider_details(tree, inventories=True, usages=True):
            p = d.provider
            consumers = api.provider_allocations(p.uuid) if d.inventories else {}
            out[p.uuid] = ProviderState(
                uuid=p.uuid,
                name=p.name,
                root_uuid=p.root_uuid,
                parent_uuid=p.parent_uuid,
                traits=d.traits,
                capacity={rc: s.capacity for rc, s in stocks_of(p.uuid, d.inventories, None).items()},
                usages=dict(d.usages or {}),
                consumers=resources_by_provider(consumers),
            )
    return out


def _allocations(api: Placement, consumer: str) -> dict[str, dict[str, int]]:
    return resources_by_provider(api.get_allocations(consumer).get("allocations"))


def move_facts(conn, name_or_id: str, api: Placement | None = None) -> MoveFacts:
    """What one step of a move is judged on (see :class:`minbw.reports.server_move.MoveFacts`)."""
    api = api or Placement(conn)
    server = find_server(conn, name_or_id)
    ports = tuple(port_state(conn, p.id) for p in conn.network.ports(device_id=server.id))
    request = request_of_server(server, ports)
    mig = latest_migration(conn, server.id)
    allocations = {server.id: _allocations(api, server.id)}
    if mig is not None:
        allocations[mig.uuid] = _allocations(api, mig.uuid)
    names = {n for n in (server.hypervisor_hostname, mig and mig.source_node, mig and mig.dest_node) if n}
    hosts = {}
    for name in sorted(names):
        found = api.list_providers(name=name)
        if found:
            hosts[name] = found[0].uuid
    roots = list(hosts.values())
    for allocs in allocations.values():
        for rp in allocs:
            roots.append(api.get_provider(rp).root_uuid)
    providers = read_trees(api, roots)
    claim, claim_error = None, None
    try:
        claim = claims.existing_claim(api, server.id, request)
    except MappingError as e:
        claim_error = str(e)
    return MoveFacts(
        server=_server_view(server),
        request=request,
        ports=ports,
        allocations=allocations,
        providers=providers,
        hosts=hosts,
        migration=mig,
        claim=claim,
        claim_error=claim_error,
        last_action=last_host_action(conn, server.id) if mig else None,
    )


def read_move_state(
    conn, name_or_id: str, api: Placement | None = None, *, expect_allocations: Mapping | None = None
) -> MoveState:
    """Where the server is in a move and whether its guarantee holds there: a MoveState (``ok``, the verdict's
    problems and phase; the facts: the migration, the allocations per consumer, the ports' binding allocations).
    Raises ObjectNotFound when Nova has no such server."""
    facts = move_facts(conn, name_or_id, api)
    return MoveState(facts, check_move(facts, expect_allocations=expect_allocations))


# ---------------------------------------------------------------- waiting
# how often a wait for a migration reads the server while its migration record is on its way (seconds)
SERVER_EVERY = 5.0


def wait_for(
    conn,
    server_id: str,
    action: str,
    *,
    statuses: Iterable[str],
    migration_statuses: Iterable[str] = (),
    since: str | None = None,
    timeout: float = 180,
    poll: float = 1.0,
    server_every: float = SERVER_EVERY,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> MoveWait:
    """Wait until the server is in one of ``statuses`` with no task and, when ``migration_statuses``
    is given, its newest migration (other than ``since``, the one before the call) is in one of them.
    Returns what it saw then (a MoveWait: the server's view, the migration or None). Raises NovaMoveFailed when the
    server goes to ERROR, the migration fails (error, failed, or cancelled: aborted) or the wait runs out.
    With ``migration_statuses``, the migration record is read every ``poll`` and the server (a heavier read for
    Nova) at the first poll, once the migration has reached one of them or failed, at the deadline, and otherwise
    every ``server_every`` seconds (a server that goes to ERROR without its migration failing is seen then)."""
    statuses, want_mig = set(statuses), set(migration_statuses)
    deadline = clock() + timeout
    server, mig, server_read = None, None, 0.0
    while True:
        mig = latest_migration(conn, server_id) if want_mig else None
        if mig is not None and since is not None and mig.uuid == since:
            mig = None  # the call has not made its migration record yet
        now = clock()
        if (
            server is None
            or not want_mig
            or (mig is not None and (mig.status in want_mig or mig.status in BROKEN))
            or now - server_read >= server_every
            or now >= deadline
        ):
            server, server_read = conn.compute.get_server(server_id), now
        fault = (server.fault or {}).get("message")
        if server.status == "ERROR":
            raise NovaMoveFailed(
                f"{action}: server {server.name} ({server.id}) is ERROR"
                + (f": {fault}" if fault else "")
                + (f"; migration {mig.uuid} is {mig.status}" if mig else ""),
                action=action,
                server=server.id,
                migration=mig.uuid if mig else None,
                status=server.status,
                task_state=server.task_state,
                migration_status=mig.status if mig else None,
                fault=fault,
                expected={"status": sorted(statuses), "migration_status": sorted(want_mig)},
            )
        if mig is not None and mig.status in BROKEN and mig.status not in want_mig:  # cancelled: an abort
            raise NovaMoveFailed(
                f"{action}: migration {mig.uuid} of server {server.name} ({server.id}) is "
                f"{mig.status}; the server is {server.status} (task {server.task_state})",
                action=action,
                server=server.id,
                migration=mig.uuid,
                status=server.status,
                task_state=server.task_state,
                migration_status=mig.status,
                fault=fault,
                expected={"status": sorted(statuses), "migration_status": sorted(want_mig)},
            )
        done = server.status in statuses and not server.task_state
        if done and want_mig:
            done = mig is not None and mig.status in want_mig
        if done:
            return MoveWait(_server_view(server), mig)
        if now >= deadline:
            seen = f"migration {mig.uuid} is {mig.status}" if mig else "no new migration record"
            raise NovaMoveFailed(
                f"{action}: server {server.name} ({server.id}) did not reach status "
                f"{'/'.join(sorted(statuses))}"
                + (f" with its migration {'/'.join(sorted(want_mig))}" if want_mig else "")
                + f" within {timeout:.0f} s: it is {server.status} (task {server.task_state}), {seen}",
                action=action,
                server=server.id,
                migration=mig.uuid if mig else None,
                status=server.status,
                task_state=server.task_state,
                migration_status=mig.status if mig else None,
                timed_out=True,
                fault=fault,
                expected={"status": sorted(statuses), "migration_status": sorted(want_mig)},
            )
        sleep(poll)


# where the call of a move leads: the server's statuses and its migration's (resize and cold migration: waiting for
# the confirmation or the revert)
MOVE_ENDS = {
    "migrate": ({"VERIFY_RESIZE"}, {"finished"}),
    "resize": ({"VERIFY_RESIZE"}, {"finished"}),
    "live_migrate": ({"ACTIVE"}, {"completed"}),
}


def wait_moved(conn, server_id: str, action: str, since: str | None, *, timeout: float = 180) -> MoveWait:
    """Wait (:func:`wait_for`) until the ``action`` (migrate, resize, live_migrate) Nova was asked for after the
    migration ``since`` reached where it leads (:data:`MOVE_ENDS`). Returns what the wait saw; raises as wait_for."""
    statuses, migration_statuses = MOVE_ENDS[action]
    return wait_for(
        conn,
        server_id,
        action,
        statuses=statuses,
        migration_statuses=migration_statuses,
        since=since,
        timeout=timeout,
    )


@contextmanager
def nova_refusal(action: str, target: str, *, server=None, label: str | None = None) -> Iterator[None]:
    """Around one Nova call: a refusal (openstacksdk's HttpException, a 4xx/5xx) becomes NovaMoveFailed
    ``"{label}: Nova refused it for {target}: {Nova's message}"`` (``label``: ``action`` unless given), with the
    server's id, status and task when ``server`` is given. Nothing else is caught."""
    from openstack import exceptions as sdk_exceptions

    try:
        yield
    except sdk_exceptions.HttpException as e:
        raise NovaMoveFailed(
            f"{label or action}: Nova refused it for {target}: {e.details or e}",
            action=action,
            server=server.id if server is not None else None,
            status=server.status if server is not None else None,
            task_state=server.task_state if server is not None else None,
        ) from None


def server_named(server) -> str:
    """How a refusal names a server: ``server NAME (ID)``."""
    return f"server {server.name} ({server.id})"


def _call(action: str, server, fn, *args, **kwargs) -> None:
    """One Nova call on ``server``; a refusal becomes NovaMoveFailed (:func:`nova_refusal`)."""
    with nova_refusal(action, server_named(server), server=server):
        fn(*args, **kwargs)


def _before(conn, name_or_id: str):
    server = find_server(conn, name_or_id)
    mig = latest_migration(conn, server.id)
    return server, (mig.uuid if mig else None)


# ---------------------------------------------------------------- the moves
def migrate(conn, name_or_id: str, *, host: str | None = None, timeout: float = 180) -> MoveWait:
    """Cold migration (to ``host``, or where the scheduler puts it): VERIFY_RESIZE, migration ``finished``."""
    server, since = _before(conn, name_or_id)
    _call("migrate", server, conn.compute.migrate_server, server, host=host)
    return wait_moved(conn, server.id, "migrate", since, timeout=timeout)


def resize(conn, name_or_id: str, flavor: str, *, timeout: float = 180) -> MoveWait:
    """Resize to ``flavor`` (name or id): VERIFY_RESIZE, migration ``finished``."""
    server, since = _before(conn, name_or_id)
    target = conn.compute.find_flavor(flavor, ignore_missing=True)
    if target is None:
        raise InvalidInput(
            f"flavor {flavor!r} does not exist in Nova. Fix: name an existing flavor to resize server {server.name} to."
        )
    _call("resize", server, conn.compute.resize_server, server, target)
    return wait_moved(conn, server.id, "resize", since, timeout=timeout)


def confirm(conn, name_or_id: str, *, timeout: float = 120) -> MoveWait:
    """Confirm a resize or cold migration: ACTIVE (or SHUTOFF), migration ``confirmed``."""
    server = find_server(conn, name_or_id)
    _call("confirm", server, conn.compute.confirm_server_resize, server)
    return wait_for(
        conn, server.id, "confirm", statuses={"ACTIVE", "SHUTOFF"}, migration_statuses={"confirmed"}, timeout=timeout
    )


def revert(conn, name_or_id: str, *, timeout: float = 120) -> MoveWait:
    """Revert a resize or cold migration: ACTIVE (or SHUTOFF), migration ``reverted``."""
    server = find_server(conn, name_or_id)
    _call("revert", server, conn.compute.revert_server_resize, server)
    return wait_for(
        conn, server.id, "revert", statuses={"ACTIVE", "SHUTOFF"}, migration_statuses={"reverted"}, timeout=timeout
    )


def live_migrate(conn, name_or_id: str, *, host: str | None = None, timeout: float = 180) -> MoveWait:
    """Live migration (through the scheduler, to ``host`` when given): ACTIVE, migration ``completed``."""
    server, since = _before(conn, name_or_id)
    _call("live_migrate", server, conn.compute.live_migrate_server, server, host=host, block_migration="auto")
    return wait_moved(conn, server.id, "live_migrate", since, timeout=timeout)


def compute_service(conn, host: str):
    """The nova-compute service on ``host`` (an openstacksdk Service). Raises ObjectNotFound when there is none."""
    found = list(conn.compute.services(binary="nova-compute", host=host))
    if not found:
        raise ObjectNotFound(f"no nova-compute service on host {host!r}")
    return found[0]


def force_down(conn, host: str, down: bool = True) -> ComputeService:
    """Mark the host's nova-compute forced down (or not): what evacuation needs of a failed source.
    Nova refuses to lift it while evacuations from the host wait for its clean-up."""
    svc = compute_service(conn, host)
    with nova_refusal("force_down", f"nova-compute on {host}", label=f"force_down={down}"):
        conn.compute.update_service_forced_down(svc, host, "nova-compute", down)
    svc = compute_service(conn, host)
    return ComputeService(host, svc.is_forced_down, svc.state, svc.status)


def evacuate(conn, name_or_id: str, *, host: str | None = None, timeout: float = 180) -> MoveWait:
    """Evacuate from a source whose nova-compute is down (:func:`force_down`): the server rebuilt on
    the target, migration ``done``. With compute API 2.95+ (openstacksdk's default) Nova leaves an
    evacuated server stopped: SHUTOFF; :func:`start` brings it back."""
    server, since = _before(conn, name_or_id)
    _call("evacuate", server, conn.compute.evacuate_server, server, host=host)
    # 2.95+: Nova shows the rebuilt server ACTIVE with no task, its migration already done, before it stops it
    # (nova/compute/manager.py, "bringing vm to original state"): wait for the state it ends in
    final = {"SHUTOFF"} if server.status != "ERROR" and _evacuate_stops(conn) else {"ACTIVE", "SHUTOFF"}
    return wait_for(
        conn, server.id, "evacuate", statuses=final, migration_statuses={"done"}, since=since, timeout=timeout
    )


def _evacuate_stops(conn) -> bool:
    """Whether openstacksdk's evacuate call uses compute API 2.95 or later (Nova then stops the evacuated server)."""
    from openstack.compute.v2.server import Server

    used = Server._get_microversion(conn.compute)  # the version openstacksdk's evacuate_server sends
    return used is not None and tuple(int(x) for x in str(used).split(".")) >= (2, 95)


def wait_evacuation_cleanup(conn, name_or_id: str, *, timeout: float = 180, poll: float = 1.0) -> MoveWait:
    """After the source's nova-compute started again: its clean-up moves the evacuation to ``completed``."""
    server = find_server(conn, name_or_id)
    return wait_for(
        conn,
        server.id,
        "evacuation clean-up",
        statuses={"ACTIVE", "SHUTOFF"},
        migration_statuses={"completed"},
        timeout=timeout,
        poll=poll,
    )


def start(conn, name_or_id: str, *, timeout: float = 120) -> MoveWait:
    """Start the server unless it is ACTIVE and wait until it is ACTIVE with no task: ``{"server": view, "migration":
    None}``. Raises ObjectNotFound for no such server, NovaMoveFailed when Nova refuses, it goes to ERROR or the wait
    runs out."""
    server = find_server(conn, name_or_id)
    if server.status != "ACTIVE":
        _call("start", server, conn.compute.start_server, server)
    return wait_for(conn, server.id, "start", statuses={"ACTIVE"}, timeout=timeout)


def shelve(conn, name_or_id: str, *, timeout: float = 180) -> MoveWait:
    """Shelve; with Nova's default ``shelved_offload_time = 0`` the server is offloaded at once:
    SHELVED_OFFLOADED (allocations released, ports unbound). A cloud that keeps shelved servers
    (SHELVED) is offloaded explicitly."""
    server = find_server(conn, name_or_id)
    _call("shelve", server, conn.compute.shelve_server, server)
    got = wait_for(conn, server.id, "shelve", statuses={"SHELVED", "SHELVED_OFFLOADED"}, timeout=timeout)
    if got.server["status"] == "SHELVED":
        _call("shelve_offload", server, conn.compute.shelve_offload_server, server)
        got = wait_for(conn, server.id, "shelve_offload", statuses={"SHELVED_OFFLOADED"}, timeout=timeout)
    return got


def unshelve(conn, name_or_id: str, *, host: str | None = None, timeout: float = 180) -> MoveWait:
    """Unshelve (scheduled again; to ``host`` with compute API 2.91+): ACTIVE."""
    server = find_server(conn, name_or_id)
    kwargs = {"host": host} if host else {}
    _call("unshelve", server, conn.compute.unshelve_server, server, **kwargs)
    return wait_for(conn, server.id, "unshelve", statuses={"ACTIVE"}, timeout=timeout)


ACTIONS: dict[str, Callable] = {
    "migrate": migrate,
    "resize": resize,
    "confirm": confirm,
    "revert": revert,
    "live_migrate": live_migrate,
    "evacuate": evacuate,
    "shelve": shelve,
    "unshelve": unshelve,
    "start": start,
}


def plan(
    conn,
    name_or_id: str,
    action: str,
    *,
    host: str | None = None,
    flavor: str | None = None,
    force_down_source: bool = False,
) -> Plan:
    """The Nova call :func:`move_server` makes for ``action`` (none when it is already done): check mode's plan."""
    server = find_server(conn, name_or_id)
    return plan_action(
        _server_view(server),
        latest_migration(conn, server.id),
        action,
        host=host,
        flavor=flavor,
        force_down_source=force_down_source,
    )


def move_server(
    conn,
    name_or_id: str,
    action: str,
    *,
    host: str | None = None,
    flavor: str | None = None,
    force_down_source: bool = False,
    timeout: float = 180,
    check: bool = False,
) -> tuple[Plan, MoveWait | None]:
    """Plan the action, then (unless ``check``) apply that plan: force the evacuation source down when
    asked, make the call, wait for its end state. Returns the plan and what the wait saw."""
    the_plan = plan(conn, name_or_id, action, host=host, flavor=flavor, force_down_source=force_down_source)
    if check or not the_plan.changed:
        return the_plan, None
    op = the_plan.ops[0]
    if op.force_down:
        force_down(conn, op.force_down, True)
    kwargs = {"timeout": timeout}
    if action in ("migrate", "live_migrate", "evacuate", "unshelve") and op.host:
        kwargs["host"] = op.host
    if action == "resize":
        return the_plan, resize(conn, op.server, op.flavor, **kwargs)
    return the_plan, ACTIONS[action](conn, op.server, **kwargs)
