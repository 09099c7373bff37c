"""What a host's drain is planned on, read from the cloud: every server on the host (Nova, all projects), each with
what Nova's scheduler would ask Placement for when it moves it (:mod:`minbw.nova.moves`: the embedded flavor, the
image, the pinned availability zone, the ports' request groups read from Neutron, Nova 34's request filters), the
hosts it may go to (the filters' roots, the source left out, its server group's), and the other hosts' provider trees
with their usage (:func:`minbw.reports.capacity.report.trees`, read as the capacity report reads them).

Reads: Nova's nova-compute services and hypervisors, the servers on the host (``GET /servers/detail?host=HOST&
all_tenants=1``, admin), the server groups, each server's ports (Neutron) and image (Glance, once per image),
its allocations (Placement), and what the capacity report reads of Placement."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from minbw.errors import InvalidInput, MinbwError
from minbw.model.requests import ServerRequest
from minbw.nova import moves, owner
from minbw.nova.inputs import Aggregate, CloudFacts
from minbw.nova.options import SchedulerOptions
from minbw.nova.scheduler import NovaQuery, query
from minbw.ops import server_move
from minbw.ops.nova_query import (
    needs_aggregates,
    prefiltered_hosts,
    read_aggregates,
    read_compute_services,
    read_owner_nova,
    routed_network_facts,
)
from minbw.placement.client import Placement
from minbw.plan.drain import LIVE
from minbw.readers.placement import Reader, read_for_capacity
from minbw.readers.providers import sharing_providers
from minbw.reports.capacity import report
from minbw.reports.capacity.solver import Tree
from minbw.reports.server_move import MoveState, MoveWait, check_move


@dataclass(frozen=True)
class ServerToMove:
    """One server on the drained host as its move is planned: Nova's view of it (``id``, ``name``, ``status``,
    ``task_state``), the request Nova's scheduler would make for its move (``request``; None with ``unmovable``
    saying why it cannot be planned), the roots it may go to (uuids), its anti-affinity group (id), its ports'
    names by id, its allocations now (provider uuid → class → amount) and Nova's request filters (``nova``)."""

    id: str
    name: str
    status: str
    task_state: str | None
    request: ServerRequest | None
    roots: frozenset[str] = frozenset()
    anti_affinity: str | None = None
    port_names: Mapping[str, str] = field(default_factory=dict)
    allocations: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    nova: NovaQuery | None = None
    group: str = ""  # what its server group allows, in words ("" when it has none that bounds)
    unmovable: str = ""  # why it cannot be planned ("" when it can)
    excluded: Mapping[str, str] = field(default_factory=dict)  # host (root name) → why it may not go there


@dataclass(frozen=True)
class DrainFacts:
    """What a drain of ``host`` is planned on: its compute nodes' roots, the servers on it, the compute hosts' roots
    (uuid → name, the source's among them), the other hosts' trees, and the compute services (host → disabled)."""

    host: str
    source_roots: tuple[str, ...]
    servers: tuple[ServerToMove, ...]
    roots: Mapping[str, str]
    trees: tuple[Tree, ...]
    services: Mapping[str, bool]


def compute_services(conn) -> dict[str, bool]:
    """Nova's nova-compute hosts, each with whether its service is disabled (``GET /os-services``)."""
    return {s.host: s.disabled for s in read_compute_services(conn)}


COMPUTE_DOWN = "its nova-compute service is down: Nova's ComputeFilter sends it nothing until it reports again"


def down_computes(services: Iterable, roots: Mapping[str, str], nodes: Mapping[str, str]) -> list[dict]:
    """The compute nodes whose nova-compute is down or forced down (``services``: :func:`minbw.ops.nova_query.
    read_compute_services`' entries; ``roots``: root uuid → name; ``nodes``: compute node → its host), as one entry
    in the shape of :func:`minbw.ops.nova_query.prefiltered_hosts`' (Nova's ComputeFilter removes them: no move
    goes there); none when every compute is up."""
    down = {s.host for s in services if s.state == "down" or s.forced_down}
    removed = sorted(u for u, name in roots.items() if nodes.get(name) in down)
    if not removed:
        return []
    return [
        {
            "filter": "ComputeFilter",
            "why": "",
            "added": "",
            "reason": COMPUTE_DOWN,
            "hosts": sorted(roots[u] for u in removed),
            "uuids": removed,
        }
    ]


def check_host(host: str, services: Mapping[str, bool]) -> None:
    """Refuse a host that runs no nova-compute, naming those that do. Raises InvalidInput."""
    if host not in services:
        known = ", ".join(sorted(services)) or "(none: Nova lists no nova-compute service)"
        raise InvalidInput(
            f"host {host!r}: no nova-compute service runs on it. Fix: name one of the compute hosts: {known} "
            f"('openstack compute service list --service nova-compute')."
        )


def compute_nodes(conn) -> dict[str, str]:
    """Each compute node (hypervisor hostname, its root provider's name) → the nova-compute host it belongs to
    (``GET /os-hypervisors/detail``; 2.53+ shows ``service.host``)."""
    out = {}
    for h in conn.compute.hypervisors(details=True):
        out[h.name] = (h.service_details or {}).get("host") or h.name
    return out


def servers_on(conn, host: str) -> list:
    """The servers whose ``host`` is ``host``, of every project (admin: ``GET /servers/detail?host=...&
    all_tenants=1``), as openstacksdk Servers (embedded flavor, pinned availability zone, scheduler hints)."""
    return list(conn.compute.servers(details=True, all_projects=True, compute_host=host))


def server_groups(conn) -> list[moves.ServerGroup]:
    """Every project's server groups (``GET /os-server-groups?all_projects=True``) with their policy and members."""
    return [moves.ServerGroup.from_api(g.to_dict()) for g in conn.compute.server_groups(all_projects=True)]


def _allocations(api: Placement, consumer: str) -> dict[str, dict[str, int]]:
    got = api.get_allocations(consumer).get("allocations") or {}
    return {rp: dict(a.get("resources") or {}) for rp, a in got.items()}


def read_drain(
    conn,
    api: Placement,
    reader: Reader,
    host: str,
    options: SchedulerOptions,
    *,
    owner_nova: bool | None = None,
) -> DrainFacts:
    """Everything a drain of ``host`` is planned on (:class:`DrainFacts`). Raises InvalidInput when no
    nova-compute runs on ``host`` (naming the hosts that do)."""
    read = read_compute_services(conn)
    services = {s.host: s.disabled for s in read}
    check_host(host, services)
    nodes = compute_nodes(conn)
    listed = api.list_providers()
    roots = {p.uuid: p.name for p in listed if p.parent_uuid is None and p.name in nodes}
    down = down_computes(read, roots, nodes)
    source_roots = tuple(sorted(u for u, name in roots.items() if nodes[name] == host))
    found = servers_on(conn, host)
    groups = server_groups(conn) if found else []
    group_of = {m: g for g in groups for m in g.members}
    # members of a group elsewhere: where they are (a read of each, once)
    host_of: dict[str, str | None] = {s.id: host for s in found}
    others = {m for s in found if s.id in group_of for m in group_of[s.id].members} - set(host_of)
    for m in sorted(others):
        member = conn.compute.find_server(m, ignore_missing=True, all_projects=True)
        host_of[m] = getattr(member and conn.compute.get_server(member.id), "hypervisor_hostname", None)
    source_names = {roots[u] for u in source_roots}
    host_of = {m: (host if h in source_names else h) for m, h in host_of.items()}
    decided = read_owner_nova(api, conn) if owner_nova is None else owner.given(owner_nova)
    aggregates: tuple[Aggregate, ...] = ()
    if found and (needs_aggregates(options, None) or any(getattr(s, "pinned_availability_zone", None) for s in found)):
        aggregates = read_aggregates(conn)
    images: dict[str, dict | None] = {}
    removed_by: dict[tuple, tuple[dict, ...]] = {}
    servers = []
    for s in found:
        view = s.to_dict()
        ports = [p.to_dict() for p in conn.network.ports(device_id=s.id)]
        image_id = (view.get("image") or {}).get("id")
        if image_id and image_id not in images:
            image = conn.image.find_image(image_id, ignore_missing=True)
            images[image_id] = image.to_dict() if image is not None else None
        common = dict(
            id=s.id,
            name=s.name or s.id,
            status=s.status,
            task_state=s.task_state,
            port_names={p["id"]: p.get("name") or p["id"] for p in ports},
            allocations=_allocations(api, s.id),
        )
        kind = moves.move_kind(s.status)
        if kind is None or s.task_state:
            state = f"{s.status}" + (f", task {s.task_state}" if s.task_state else "")
            servers.append(
                ServerToMove(
                    request=None,
                    unmovable=f"it is {state}: Nova moves a server only when it is ACTIVE or PAUSED (live "
                    f"migration) or SHUTOFF (cold migration), with no task under way",
                    **common,
                )
            )
            continue
        try:
            server = moves.moving_server(view, ports, images.get(image_id) if image_id else None)
            subnets, segment_aggregates = (
                routed_network_facts(api, conn, server.ports)
                if options.query_placement_for_routed_network_aggregates
                else ((), {})
            )
            facts = CloudFacts(
                every_compute_reports_owner_nova=decided.applies,
                aggregates=aggregates,
                owner_nova_why=decided.why,
                subnets=subnets,
                segment_aggregates=tuple(segment_aggregates.items()),
            )
            nq = query(server, options, facts)
        except MinbwError as e:
            servers.append(ServerToMove(request=None, unmovable=f"Nova cannot schedule it: {e}", **common))
            continue
        key = tuple(nq.applied)
        if key not in removed_by:
            removed_by[key] = tuple(prefiltered_hosts(api, nq.applied)) + tuple(down)
        group = group_of.get(s.id)
        only, never, why = moves.group_hosts(s.id, group, host_of, host)
        servers.append(
            ServerToMove(
                request=nq.request,
                roots=moves.allowed_roots(
                    roots, (u for r in removed_by[key] for u in r["uuids"]), source_roots, only, never
                ),
                anti_affinity=group.id if group is not None and group.policy == moves.ANTI_AFFINITY else None,
                nova=nq,
                group=why,
                excluded=excluded_hosts(removed_by[key], roots, source_names, only, never, why),
                **common,
            )
        )
    return DrainFacts(
        host,
        source_roots,
        tuple(servers),
        roots,
        destination_trees(reader, listed, [s.request for s in servers if s.request is not None], source_roots),
        services,
    )


def excluded_hosts(
    removed: Iterable[Mapping],
    roots: Mapping[str, str],
    source: Iterable[str],
    only: frozenset[str] | None,
    never: Iterable[str],
    group_why: str,
) -> dict[str, str]:
    """Each host (root name) the server may not go to, but the source's, with why: the request filter that removes
    it (``removed``: :func:`minbw.ops.nova_query.prefiltered_hosts`' entries), else its server group (``only``,
    ``never``, ``group_why``: :func:`minbw.nova.moves.group_hosts`)."""
    source = set(source)
    out: dict[str, str] = {}
    for r in removed:
        for name in r["hosts"]:
            if name not in source:
                out.setdefault(name, f"Nova's {r['filter']} removes it ({r['reason']})")
    never = set(never)
    for name in sorted(roots.values()):
        if name not in source and (name in never or (only is not None and name not in only)):
            out.setdefault(name, group_why)
    return out


def destination_trees(
    reader: Reader, listed: list, requests: Iterable[ServerRequest], source_roots: Iterable[str]
) -> tuple[Tree, ...]:
    """The provider trees of every host but the source's, with their usage and the sharing providers that serve
    them, read as the capacity report reads them (:func:`minbw.readers.placement.read_for_capacity`: what can take
    some group of the requests)."""
    requests = list(requests)
    if not requests:
        return ()
    api = reader.api
    shared = sharing_providers(api)
    groups = [g for r in requests for g in r.request_groups()]
    items = {(rc, amount) for g in groups for rc, amount in g.resources}
    details = read_for_capacity(reader, listed, items, everything=any(not g.resources for g in groups), shared=shared)
    reader.save()
    built, _notes = report.trees(details, shared)
    source = set(source_roots)
    return tuple(t for t in built if t.root not in source)


# ---------------------------------------------------------------- executing a drain (issue 45 item 2)


@dataclass(frozen=True)
class ComputeState:
    """A host's nova-compute service as Nova shows it: its id, whether it is disabled and why."""

    host: str
    id: str
    disabled: bool
    reason: str | None = None

    def to_dict(self) -> dict:
        """A JSON-ready dict: host, id, disabled, reason."""
        return {"host": self.host, "id": self.id, "disabled": self.disabled, "reason": self.reason}


def compute_state(conn, host: str) -> ComputeState:
    """The nova-compute service of ``host`` (``GET /os-services?binary=nova-compute&host=HOST``). Raises InvalidInput
    when the host runs none."""
    found = [s for s in conn.compute.services(binary="nova-compute", host=host) if s.host == host]
    if not found:
        check_host(host, compute_services(conn))
        raise InvalidInput(f"host {host!r}: Nova lists no nova-compute service on it.")
    s = found[0]
    return ComputeState(host, str(s.id), s.status == "disabled", s.disabled_reason or None)


def _service_call(what: str, host: str, fn, *args, **kwargs) -> None:
    with server_move.nova_refusal(what, f"nova-compute on {host}"):
        fn(*args, **kwargs)


def disable_compute(conn, host: str, reason: str) -> ComputeState:
    """Disable the nova-compute of ``host`` with ``reason`` as Nova's API does (``PUT /os-services/{id}`` with
    ``status: disabled`` and ``disabled_reason``, compute API 2.53+): the scheduler sends it nothing new. Returns the
    service as Nova shows it then. Raises InvalidInput for a host without nova-compute, NovaMoveFailed when Nova
    refuses."""
    state = compute_state(conn, host)
    _service_call("disable", host, conn.compute.disable_service, state.id, host, "nova-compute", disabled_reason=reason)
    return compute_state(conn, host)


def enable_compute(conn, host: str) -> ComputeState:
    """Enable the nova-compute of ``host`` again (``status: enabled``; Nova clears the reason). Returns the service
    as Nova shows it then. Raises InvalidInput for a host without nova-compute, NovaMoveFailed when Nova refuses."""
    state = compute_state(conn, host)
    _service_call("enable", host, conn.compute.enable_service, state.id, host, "nova-compute")
    return compute_state(conn, host)


def finished_from(conn, host: str) -> list[tuple[str, str]]:
    """The cold migrations out of ``host`` that wait for their confirmation (``GET /os-migrations?source_compute=
    HOST&status=finished``), each as (server id, the server's status now), oldest first."""
    found = [m.to_dict(computed=False) for m in conn.compute.migrations(source_compute=host, status="finished")]
    found = [m for m in found if m.get("source_compute") == host and m.get("status") == "finished"]
    found.sort(key=lambda m: m.get("created_at") or "")
    out = []
    for m in found:
        server = conn.compute.find_server(m.get("server_id") or "", ignore_missing=True, all_projects=True)
        if server is not None:
            out.append((server.id, conn.compute.get_server(server.id).status))
    return out


def start_move(conn, server_id: str, kind: str, host: str) -> str | None:
    """Ask Nova to move the server to ``host`` (its nova-compute host), through the scheduler and never forced: a
    live migration (``kind`` ``live``, block migration ``auto``) or a cold one (``cold``). Returns the uuid of the
    server's newest migration before the call (what :func:`finish_move` waits past). Raises NovaMoveFailed when Nova
    refuses."""
    server = conn.compute.get_server(server_id)
    before = server_move.latest_migration(conn, server_id)
    what = "live_migrate" if kind == LIVE else "migrate"
    with server_move.nova_refusal(what, f"{server_move.server_named(server)} to {host}", server=server):
        if kind == LIVE:
            conn.compute.live_migrate_server(server, host=host, block_migration="auto")
        else:
            conn.compute.migrate_server(server, host=host)
    return before.uuid if before else None


def finish_move(conn, server_id: str, kind: str, since: str | None, *, timeout: float = 300) -> MoveWait:
    """Wait for the move :func:`start_move` asked for to end: a live migration ``completed`` with the server
    ACTIVE; a cold one ``finished`` (VERIFY_RESIZE), then confirmed (``confirmed``, the server back in its state).
    Returns what the last wait saw. Raises NovaMoveFailed on ERROR, a failed migration or a wait that runs out."""
    if kind == LIVE:
        return server_move.wait_moved(conn, server_id, "live_migrate", since, timeout=timeout)
    server_move.wait_moved(conn, server_id, "migrate", since, timeout=timeout)
    return server_move.confirm(conn, server_id, timeout=timeout)


def verify_move(conn, api: Placement, server_id: str, allocations: Mapping[str, Mapping[str, int]] | None) -> MoveState:
    """The server after its move, judged (:func:`minbw.ops.server_move.read_move_state`): its allocation exactly
    ``allocations`` (the planned providers; None: any that serves its request), every port's
    ``binding:profile.allocation`` rewritten to them, the migration consumer holding nothing
    (the source's usage freed)."""
    return server_move.read_move_state(conn, server_id, api, expect_allocations=allocations)


def judged_again(state: MoveState) -> MoveState:
    """``state``'s facts judged with no providers expected (any allocation that serves the server's request): what a
    move Nova placed on other providers than planned is verified for, without reading the server again."""
    return MoveState(state.facts, check_move(state.facts))


__all__ = [
    "ComputeState",
    "compute_state",
    "disable_compute",
    "enable_compute",
    "finished_from",
    "start_move",
    "finish_move",
    "verify_move",
    "judged_again",
    "ServerToMove",
    "DrainFacts",
    "compute_services",
    "check_host",
    "down_computes",
    "compute_nodes",
    "servers_on",
    "server_groups",
    "read_drain",
    "excluded_hosts",
    "destination_trees",
]
