"""A server's bandwidth guarantee across Nova's moves, judged at every step. Pure.

How Nova moves a server's allocations (nova 34; ``nova.conductor.tasks.migrate`` /
``live_migrate``, ``nova.scheduler.utils.move_allocations``, ``ComputeManager``):

* cold migrate, resize, live migration: before the move the server's source allocations are
  given to a *migration consumer* (the migration record's uuid) and the server consumer claims
  the target. In ``VERIFY_RESIZE`` both exist: the source held by the migration's uuid, the
  target by the server. Confirm empties the migration consumer; revert hands its allocations back
  to the server (and the target's go). A live migration confirms by itself (status ``completed``).
* evacuation: no migration consumer; the server consumer holds the source AND the target until
  nova-compute on the source starts again and cleans up (migration ``done`` -> ``completed``).
  Nova refuses to un-force the source service down before that.
* shelve offload: every allocation goes, the ports are unbound; unshelve schedules again.

Each step is checked against the rules of its phase (:func:`phase_of`) by :func:`check_move`:

* ``verify_resize``: the migration consumer holds the source (every port group on a source
  provider with the group's traits), the server holds the target; the ports are bound to the
  target and their ``binding:profile.allocation`` names the target providers;
* ``settled`` (no move in progress): the guarantee of :func:`minbw.reports.guarantee.check_guarantee`,
  the server's allocations in ONE host tree, on the target after a confirm (or a completed live
  migration or evacuation) and on the source after a revert, the migration consumer empty, each
  port group's bandwidth counted on exactly one provider;
* ``evacuated``: the target part of the server's allocation satisfies the request and the ports
  name it; the source part is Nova's pending clean-up (a note, not a problem);
* ``shelved_offloaded``: no allocations, ports unbound without an allocation;
* always: no provider's usage exceeds its capacity, and its usage equals the sum of its
  consumers' allocations.

:mod:`minbw.ops.server_move` reads the facts; everything here is data in, sentences out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from minbw.model.claims import Claim
from minbw.model.requests import ServerRequest
from minbw.placement.mapping import binding_allocations, solve
from minbw.reports.guarantee import PortState, check_guarantee

# phases of a server in a move
SETTLED = "settled"
VERIFY_RESIZE = "verify_resize"
EVACUATED = "evacuated"
SHELVED_OFFLOADED = "shelved_offloaded"
MOVING = "moving"
FAILED = "failed"

# Nova's migration statuses (nova.objects.migration) by what they mean for the allocations
DONE_TO_TARGET = frozenset({"confirmed", "completed"})  # the server lives on the target
DONE_TO_SOURCE = frozenset({"reverted"})  # back on the source
BROKEN = frozenset({"error", "failed", "cancelled"})  # the move stopped; the server is where it is
EVACUATION = "evacuation"
# Nova's instance actions (nova.compute.instance_actions) that put a server on a host or take it off,
# and the ones that belong to each kind of migration record
HOST_ACTIONS = frozenset(
    {
        "create",
        "migrate",
        "resize",
        "confirmResize",
        "revertResize",
        "live-migration",
        "evacuate",
        "shelve",
        "shelveOffload",
        "unshelve",
    }
)
_COLD = frozenset({"migrate", "resize", "confirmResize", "revertResize"})
MIGRATION_ACTIONS = {
    "migration": _COLD,
    "resize": _COLD,
    "live-migration": frozenset({"live-migration"}),
    EVACUATION: frozenset({"evacuate"}),
}
# a server with its resources: ACTIVE, or SHUTOFF (stopped servers keep their allocations; an
# evacuation with compute API microversion 2.95+ leaves the server stopped on the target)
HOLDING_STATUSES = frozenset({"ACTIVE", "SHUTOFF"})


@dataclass(frozen=True)
class Migration:
    """A Nova migration record (``GET /os-migrations``; ``uuid`` from microversion 2.59)."""

    uuid: str
    status: str | None
    migration_type: str | None = None
    source_compute: str | None = None
    dest_compute: str | None = None
    source_node: str | None = None
    dest_node: str | None = None
    id: int | None = None

    @classmethod
    def from_api(cls, m: Mapping[str, Any]) -> Migration:
        """From a ``GET /os-migrations`` record (a KeyError without ``uuid``; the other fields None when absent)."""
        return cls(
            uuid=m["uuid"],
            status=m.get("status"),
            migration_type=m.get("migration_type"),
            source_compute=m.get("source_compute"),
            dest_compute=m.get("dest_compute"),
            source_node=m.get("source_node"),
            dest_node=m.get("dest_node"),
            id=m.get("id"),
        )

    def to_dict(self) -> dict:
        """The migration as a JSON-ready dict of its fields."""
        return {
            "uuid": self.uuid,
            "id": self.id,
            "status": self.status,
            "migration_type": self.migration_type,
            "source_compute": self.source_compute,
            "dest_compute": self.dest_compute,
            "source_node": self.source_node,
            "dest_node": self.dest_node,
        }


@dataclass(frozen=True)
class ProviderState:
    """A provider as Placement shows it: tree position, traits, capacity per class
    (``(total - reserved) * allocation_ratio``), usage and its consumers' allocations."""

    uuid: str
    name: str
    root_uuid: str
    parent_uuid: str | None = None
    traits: frozenset[str] = frozenset()
    capacity: Mapping[str, int] = field(default_factory=dict)
    usages: Mapping[str, int] = field(default_factory=dict)
    consumers: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def summary(self) -> dict:
        """Placement's ``provider_summaries`` shape, as the solver reads it."""
        return {
            "resources": {},
            "traits": sorted(self.traits),
            "parent_provider_uuid": self.parent_uuid,
            "root_provider_uuid": self.root_uuid,
            "name": self.name,
        }

    def to_dict(self) -> dict:
        """The provider as a JSON-ready dict: uuid, name, root, capacity, usages, consumers."""
        return {
            "uuid": self.uuid,
            "name": self.name,
            "root": self.root_uuid,
            "capacity": dict(self.capacity),
            "usages": dict(self.usages),
            "consumers": {c: dict(r) for c, r in self.consumers.items()},
        }


@dataclass(frozen=True)
class MoveFacts:
    """Everything one step is judged on.

    ``allocations``: consumer uuid -> provider -> class -> amount, for the server and (when there
    is a migration record) the migration consumer; ``providers``: every provider of the host trees
    involved; ``hosts``: compute node name -> root provider uuid; ``claim`` / ``claim_error``: the
    server consumer mapped to its request by :func:`minbw.ops.claims.existing_claim`.
    """

    server: Mapping[str, Any]  # id, name, status, task_state, compute_host, hypervisor_hostname, fault
    request: ServerRequest
    ports: tuple[PortState, ...]
    allocations: Mapping[str, Mapping[str, Mapping[str, int]]]
    providers: Mapping[str, ProviderState]
    hosts: Mapping[str, str]
    migration: Migration | None = None
    claim: Claim | None = None
    claim_error: str | None = None
    last_action: str | None = None  # the server's newest instance action of HOST_ACTIONS


@dataclass(frozen=True)
class Part:
    """One consumer's allocations within one host tree, mapped to the port groups."""

    consumer: str
    root: str
    allocations: Mapping[str, Mapping[str, int]]
    groups: Mapping[str, str]  # group id -> provider ({} when unmapped)
    bindings: Mapping[str, Any]  # port id -> the binding:profile.allocation it implies
    error: str | None = None


@dataclass(frozen=True)
class Verdict:
    phase: str
    problems: tuple[str, ...]
    notes: tuple[str, ...]
    parts: tuple[Part, ...]

    @property
    def ok(self) -> bool:
        """Whether the phase has no problems (notes do not count)."""
        return not self.problems


@dataclass(frozen=True)
class MoveState:
    """One step of a move, judged: the facts read and the verdict on them (what ``server_move_info`` returns)."""

    facts: MoveFacts
    verdict: Verdict

    @property
    def ok(self) -> bool:
        """Whether the step breaks no rule of its phase."""
        return self.verdict.ok

    def to_dict(self) -> dict:
        """A JSON-ready dict: ok, problems, notes, phase, the server, the migration, last_action, the consumers,
        their allocations, the ports' binding allocations and hosts, where each consumer's groups are, the hosts and
        the providers that hold something or are a host's root."""
        facts, verdict = self.facts, self.verdict
        mig = facts.migration
        names = {rp: p.name for rp, p in facts.providers.items()}
        return {
            "ok": verdict.ok,
            "problems": list(verdict.problems),
            "notes": list(verdict.notes),
            "phase": verdict.phase,
            "server": dict(facts.server),
            "migration": mig.to_dict() if mig else None,
            "last_action": facts.last_action,
            "consumers": {"server": facts.server["id"], "migration": mig.uuid if mig else None},
            "allocations": {c: {rp: dict(r) for rp, r in a.items()} for c, a in facts.allocations.items()},
            "binding_allocations": {p.id: dict(p.binding_profile).get("allocation") for p in facts.ports},
            "binding_hosts": {p.id: p.binding_host for p in facts.ports},
            "groups": {
                part.consumer: {
                    gid: {"provider": rp, "provider_name": names.get(rp)} for gid, rp in part.groups.items()
                }
                for part in verdict.parts
                if part.groups
            },
            "hosts": dict(facts.hosts),
            "providers": {
                rp: p.to_dict() for rp, p in facts.providers.items() if p.consumers or rp in facts.hosts.values()
            },
        }


@dataclass(frozen=True)
class MoveWait:
    """What the wait for a move's end state saw: the server as Nova shows it (id, name, status, task_state,
    vm_state, compute_host, hypervisor_hostname, flavor, fault) and its newest migration (None: not waited for)."""

    server: Mapping[str, Any]
    migration: Migration | None = None

    def to_dict(self) -> dict:
        """A JSON-ready dict: the server's view and the migration's dict (None)."""
        return {"server": dict(self.server), "migration": self.migration.to_dict() if self.migration else None}


@dataclass(frozen=True)
class ComputeService:
    """A host's nova-compute service: whether it is forced down, its state (up/down) and status (enabled...)."""

    host: str
    forced_down: bool
    state: str | None
    status: str | None

    def to_dict(self) -> dict:
        """A JSON-ready dict: host, forced_down, state, status."""
        return {"host": self.host, "forced_down": self.forced_down, "state": self.state, "status": self.status}


def current_migration(migration: Migration | None, last_action: str | None) -> Migration | None:
    """The migration record, unless a later action moved the server again (an unshelve, say, makes
    no record): then it no longer says where the server belongs. Unknown actions: it is current."""
    if migration is None or last_action is None:
        return migration
    return migration if last_action in MIGRATION_ACTIONS.get(migration.migration_type or "", ()) else None


def phase_of(server: Mapping[str, Any], migration: Migration | None) -> str:
    """Where the server is in a move, from its status, task state and latest migration record."""
    status, task = server.get("status"), server.get("task_state")
    if status == "ERROR":
        return FAILED
    if status == "SHELVED_OFFLOADED" and not task:
        return SHELVED_OFFLOADED
    if status == "VERIFY_RESIZE" and not task and migration is not None and migration.status == "finished":
        return VERIFY_RESIZE
    if task or status not in HOLDING_STATUSES:
        return MOVING
    if migration is None or migration.status in DONE_TO_TARGET | DONE_TO_SOURCE | BROKEN:
        return SETTLED
    if migration.migration_type == EVACUATION and migration.status == "done":
        return EVACUATED
    return MOVING


def split_by_root(
    allocations: Mapping[str, Mapping[str, int]], providers: Mapping[str, ProviderState]
) -> dict[str, dict[str, dict[str, int]]]:
    """A consumer's allocations per host tree (root provider uuid; an unknown provider is its own root)."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for rp, res in allocations.items():
        root = providers[rp].root_uuid if rp in providers else rp
        out.setdefault(root, {})[rp] = dict(res)
    return out


def map_part(
    consumer: str,
    root: str,
    allocations: Mapping[str, Mapping[str, int]],
    request: ServerRequest,
    providers: Mapping[str, ProviderState],
) -> Part:
    """Which provider serves each port group in one tree of a consumer's allocations.

    The flavor part is what the consumer holds on the root provider: Nova does not show a
    migration consumer's (old) flavor, and the server's own flavor is checked exactly by
    :func:`minbw.ops.claims.existing_claim`; here the question is where the bandwidth is.
    """
    flavor = dict(allocations.get(root, {}))
    req = replace(
        request, vcpus=0, memory_mb=0, disk_gb=0, extra_resources=tuple(flavor.items()), required=(), forbidden=()
    )
    summaries = {rp: p.summary() for rp, p in providers.items()}
    result = solve({rp: {"resources": res} for rp, res in allocations.items()}, summaries, req)
    if not result.unique:
        return Part(consumer, root, allocations, {}, {}, result.describe())
    groups = result.group_providers()
    return Part(consumer, root, allocations, groups, binding_allocations(request.ports, groups))


def _name(providers: Mapping[str, ProviderState], rp: str | None) -> str:
    p = providers.get(rp or "")
    return f"{p.name} ({rp})" if p else str(rp)


def _host_name(facts: MoveFacts, root: str | None) -> str:
    return facts.providers[root].name if root is not None and root in facts.providers else str(root)


def _guarantee_view(facts: MoveFacts) -> dict:
    # check_guarantee wants ACTIVE; the status a move step may be in is judged here (SHUTOFF and
    # VERIFY_RESIZE hold their resources), so an acceptable status is passed on as ACTIVE.
    server = facts.server
    status = server.get("status")
    ok = status in HOLDING_STATUSES or status == "VERIFY_RESIZE"
    return {
        "id": server["id"],
        "status": "ACTIVE" if ok else status,
        "hypervisor_hostname": server.get("hypervisor_hostname"),
        "compute_host": server.get("compute_host"),
    }


def _provider_views(facts: MoveFacts) -> dict[str, dict]:
    return {
        rp: {
            "name": p.name,
            "usages": dict(p.usages),
            "allocations": {c: {"resources": dict(r)} for c, r in p.consumers.items()},
        }
        for rp, p in facts.providers.items()
    }


def capacity_problems(providers: Mapping[str, ProviderState]) -> list[str]:
    """Usage within capacity, and usage equal to the sum of the consumers' allocations (nothing
    counted twice or lost)."""
    problems = []
    for rp, p in sorted(providers.items(), key=lambda kv: kv[1].name):
        for rc, used in sorted(p.usages.items()):
            cap = p.capacity.get(rc)
            if cap is not None and used > cap:
                problems.append(f"{_name(providers, rp)}: usage {used} of {rc} exceeds its capacity {cap}")
            total = sum(res.get(rc, 0) for res in p.consumers.values())
            if total != used:
                holders = {c: res.get(rc) for c, res in p.consumers.items() if res.get(rc)}
                problems.append(
                    f"{_name(providers, rp)}: usage of {rc} is {used}, but its consumers hold {total} ({holders})"
                )
    return problems


def _port_where(port: PortState) -> str:
    return f"port {port.name} ({port.id})" if port.name else f"port {port.id}"


def _check_part_on(facts: MoveFacts, part: Part, root: str | None, who: str) -> list[str]:
    """The part maps every port group to a provider of ``root`` with the group's traits."""
    problems = []
    if part.error:
        return [
            f"{who} on {_host_name(facts, part.root)}: its allocation does not serve the ports' request "
            f"groups: {part.error}"
        ]
    if root is not None and part.root != root:
        problems.append(
            f"{who} holds allocations on {_host_name(facts, part.root)}, expected {_host_name(facts, root)}"
        )
    for port in facts.ports:
        for group in port.request.groups if port.request else ():
            rp = part.groups.get(group.id)
            if rp is None:
                problems.append(f"{who}: {_port_where(port)} group {group.id} has no provider in its allocation")
                continue
            traits = facts.providers[rp].traits if rp in facts.providers else frozenset()
            why = group.trait_problem(traits)
            if why:
                problems.append(
                    f"{who}: {_port_where(port)} group {group.id} is on {_name(facts.providers, rp)}, which {why}"
                )
    return problems


def _check_bindings(facts: MoveFacts, part: Part | None, host: str | None) -> list[str]:
    """Each QoS port bound to ``host`` with ``binding:profile.allocation`` naming ``part``'s providers."""
    problems = []
    for port in facts.ports:
        if not port.request:
            continue
        actual = dict(port.binding_profile).get("allocation")
        if host is not None and port.binding_host != host:
            problems.append(f"{_port_where(port)} is bound to {port.binding_host!r}, expected {host!r}")
        if part is not None and not part.error:
            expected = part.bindings.get(port.id)
            if actual != expected:
                problems.append(
                    f"{_port_where(port)}: binding:profile.allocation is {actual!r}, expected "
                    f"{expected!r} (the providers on {_host_name(facts, part.root)})"
                )
    return problems


def _holders(parts: list[Part]) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for part in parts:
        for gid, rp in part.groups.items():
            out.setdefault(gid, []).append((part.consumer, rp))
    return out


def check_move(facts: MoveFacts, *, expect_allocations: Mapping[str, Mapping[str, int]] | None = None) -> Verdict:
    """Every rule the step breaks, as sentences (empty: the guarantee holds at this step).

    ``expect_allocations``: what the server consumer must hold exactly (e.g. after a revert, what
    the migration consumer held in VERIFY_RESIZE).
    """
    server, record, providers = facts.server, facts.migration, facts.providers
    sid = server["id"]
    mig = current_migration(record, facts.last_action)
    phase = phase_of(server, mig)
    problems: list[str] = []
    notes: list[str] = []
    mine = facts.allocations.get(sid) or {}
    # the newest record's consumer must hold nothing once its move is over, current or not
    theirs = (facts.allocations.get(record.uuid) or {}) if record else {}
    parts = [
        map_part(sid, root, part, facts.request, providers) for root, part in split_by_root(mine, providers).items()
    ]
    parts += (
        [
            map_part(record.uuid, root, part, facts.request, providers)
            for root, part in split_by_root(theirs, providers).items()
        ]
        if record
        else []
    )
    src = facts.hosts.get(mig.source_node or "") if mig else None
    dst = facts.hosts.get(mig.dest_node or "") if mig else None
    mig_name = f"migration {record.uuid} ({record.migration_type}, {record.status})" if record else ""
    server_parts = [p for p in parts if p.consumer == sid]
    mig_parts = [p for p in parts if record and p.consumer == record.uuid]
    if record is not None and mig is None:
        notes.append(
            f"{mig_name} predates the server's last {facts.last_action}: the server's place is not judged against it"
        )

    if phase == FAILED:
        fault = (server.get("fault") or {}).get("message")
        problems.append(f"server {sid} is ERROR" + (f": {fault}" if fault else ""))
    elif phase == MOVING:
        notes.append(
            f"server {sid} is {server.get('status')} (task {server.get('task_state')}) "
            f"{'with ' + mig_name if mig else ''}: a move is in progress; only the capacity rules apply"
        )
    elif phase == SHELVED_OFFLOADED:
        if mine:
            problems.append(f"server {sid} is SHELVED_OFFLOADED but still holds allocations: {dict(mine)}")
        if theirs:
            problems.append(f"{mig_name} still holds allocations: {dict(theirs)}")
        for port in facts.ports:
            allocation = dict(port.binding_profile).get("allocation")
            if allocation:
                problems.append(
                    f"{_port_where(port)}: binding:profile.allocation is still {allocation!r} while the "
                    f"server is offloaded"
                )
            if port.binding_host:
                problems.append(
                    f"{_port_where(port)} is still bound to {port.binding_host!r} while the server is offloaded"
                )
    elif phase == VERIFY_RESIZE:
        problems += check_guarantee(
            _guarantee_view(facts), list(facts.ports), facts.claim, facts.claim_error, _provider_views(facts)
        )
        if src is None or dst is None:
            if mig is None:
                raise AssertionError("a server verifying a resize has its migration")
            problems.append(
                f"{mig_name}: source node {mig.source_node!r} or target node {mig.dest_node!r} has no "
                f"provider in Placement"
            )
        if not server_parts:
            problems.append(f"server {sid} holds no allocations in VERIFY_RESIZE (the target's belong to it)")
        for part in server_parts:
            problems += _check_part_on(facts, part, dst, f"server {sid}")
        if not mig_parts:
            problems.append(f"{mig_name} holds no allocations in VERIFY_RESIZE (the source's belong to it)")
        for part in mig_parts:
            problems += _check_part_on(facts, part, src, mig_name)
        # the ports' binding (host and allocation) against the server's claim: check_guarantee above
    elif phase == EVACUATED:
        problems += _check_evacuated(facts, server_parts, mig_parts, dst, mig_name, notes)
    else:  # SETTLED
        problems += check_guarantee(
            _guarantee_view(facts), list(facts.ports), facts.claim, facts.claim_error, _provider_views(facts)
        )
        if server.get("status") not in HOLDING_STATUSES:
            problems.append(f"server {sid} is {server.get('status')}")
        if len(server_parts) > 1:
            problems.append(
                f"server {sid} holds allocations on {len(server_parts)} hosts "
                f"({', '.join(_host_name(facts, p.root) for p in server_parts)}): counted more than once"
            )
        if theirs:
            problems.append(f"{mig_name} still holds allocations after the move: {dict(theirs)}")
        where, host = None, None
        if mig is not None and mig.status in DONE_TO_TARGET:
            where, host = dst, mig.dest_compute
        elif mig is not None and mig.status in DONE_TO_SOURCE:
            where, host = src, mig.source_compute
        for part in server_parts:
            problems += _check_part_on(facts, part, where, f"server {sid}")
        # the ports' binding against the server's host and claim: check_guarantee above
        if host is not None:
            if server.get("compute_host") != host:
                problems.append(
                    f"server {sid} runs on {server.get('compute_host')!r}, but {mig_name} puts it on {host!r}"
                )
        for gid, held in _holders(parts).items():
            if len(held) != 1:
                problems.append(
                    f"group {gid}: its bandwidth is counted on {len(held)} providers after the move "
                    f"({', '.join(f'{_name(providers, rp)} for {c}' for c, rp in held)})"
                )
    if expect_allocations is not None and phase in (SETTLED, VERIFY_RESIZE, EVACUATED):
        want = {rp: dict(res) for rp, res in expect_allocations.items()}
        have = {rp: dict(res) for rp, res in mine.items()}
        if want != have:
            problems.append(f"server {sid} holds {have}, expected {want}")
    problems += capacity_problems(providers)
    return Verdict(phase, tuple(problems), tuple(notes), tuple(parts))


def _check_evacuated(
    facts: MoveFacts, server_parts: list[Part], mig_parts: list[Part], dst: str | None, mig_name: str, notes: list[str]
) -> list[str]:
    sid = facts.server["id"]
    mig = facts.migration
    if mig is None:
        raise AssertionError("an evacuated server has its migration")
    problems = []
    if facts.server.get("compute_host") != mig.dest_compute:
        problems.append(
            f"server {sid} runs on {facts.server.get('compute_host')!r}, but {mig_name} evacuated it "
            f"to {mig.dest_compute!r}"
        )
    if mig_parts:
        problems.append(f"{mig_name} holds allocations; Nova's evacuation keeps everything on the server consumer")
    target = [p for p in server_parts if p.root == dst]
    if not target:
        problems.append(f"server {sid} holds nothing on the evacuation target {mig.dest_node!r}")
    for part in target:
        problems += _check_part_on(facts, part, dst, f"server {sid}")
    problems += _check_bindings(facts, target[0] if target else None, mig.dest_compute)
    for part in server_parts:
        if part.root != dst:
            notes.append(
                f"server {sid} still holds {dict(part.allocations)} on {_host_name(facts, part.root)}: Nova "
                f"releases an evacuated server's source allocation when nova-compute on "
                f"{mig.source_compute} starts again ({mig_name})"
            )
    return problems
