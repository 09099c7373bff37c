"""Routed networks: read Neutron's segments, predict and read their Placement providers, sync them.

Reads: Neutron's networks, segments, subnets, ports, agents and IP availability (openstacksdk's network
proxy, admin) and Placement through :class:`minbw.placement.Placement`. The prediction and the plan
are pure (:mod:`minbw.neutron.segments`, :mod:`minbw.plan.segments`).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Protocol

from minbw.errors import (
    ConcurrentUpdate,
    MinbwError,
    NotFound,
    ObjectNotFound,
    PartialApply,
    PlacementUnavailable,
    ProviderNotFound,
)
from minbw.neutron.segments import IPV4_ADDRESS, RoutedSegment, SegmentChoice, port_member_of, routed_segments
from minbw.ops import apply_in_order, write_failures
from minbw.placement.client import Placement
from minbw.plan import base
from minbw.plan.segments import ObservedSegments, SegmentOp, SegmentsPlan, plan_segments, steady_recounts

RETRIES = 4
# A recount waits this long and reads everything again: Neutron sends a segment's deltas in batches, at most
# `[DEFAULT] send_events_interval` (2 s by default) after the change, so a count that has not moved for
# longer has no delta of Neutron's on its way.
QUIET_SECONDS = 5.0
_PORT_FIELDS = ("id", "name", "device_owner", "fixed_ips", "ip_allocation")


@dataclass(frozen=True)
class NeutronSegments:
    segments: tuple[RoutedSegment, ...]
    subnet_segment: dict  # subnet id → segment id

    def of_network(self, network_id: str) -> tuple[RoutedSegment, ...]:
        """The routed segments of the network ``network_id``, a tuple in listing order."""
        return tuple(s for s in self.segments if s.network_id == network_id)


def _network_ids(conn, networks: Iterable[str] | None) -> list[str]:
    if networks:
        out = []
        for n in networks:
            net = conn.network.find_network(n, ignore_missing=True)
            if net is None:
                raise ObjectNotFound(
                    f"no network {n!r} in Neutron. Fix: pass a network name or id that `openstack network list` shows."
                )
            out.append(net.id)
        return out
    # every network with more than one segment, or a segment that has subnets bound to it (routed)
    ids = {s.network_id for s in conn.network.segments()}
    return sorted(i for i in ids if any(sub.segment_id for sub in conn.network.subnets(network_id=i)))


def read_neutron(conn, networks: Iterable[str] | None = None) -> NeutronSegments:
    """The routed segments of ``networks`` (default: every network with subnets on segments) and which segment each
    subnet is on: a NeutronSegments. Raises ObjectNotFound for a network Neutron does not have."""
    segs, subnets, ports, availability = [], [], [], {}
    for net_id in _network_ids(conn, networks):
        segs += [s.to_dict(computed=False) for s in conn.network.segments(network_id=net_id)]
        subnets += [s.to_dict(computed=False) for s in conn.network.subnets(network_id=net_id)]
        ports += [{k: p[k] for k in _PORT_FIELDS} for p in conn.network.ports(network_id=net_id)]
        avail = conn.network.get_network_ip_availability(net_id)
        for sub in avail.subnet_ip_availability or []:
            availability[sub["subnet_id"]] = sub
    agents = [
        {"host": a.host, "configurations": a.configuration or {}, "alive": a.is_alive} for a in conn.network.agents()
    ]
    segments = routed_segments(segs, subnets, agents, availability, ports)
    return NeutronSegments(segments, {s["id"]: s["segment_id"] for s in subnets if s.get("segment_id")})


def observe(api: Placement, segments: Iterable[RoutedSegment]) -> ObservedSegments:
    """What Placement holds for ``segments``: their providers (a missing one left out), inventories and aggregates,
    and each of their hosts' root provider with its aggregates (an ObservedSegments). Lets other PlacementErrors
    through."""
    providers, inventories, aggregates, roots, generations = {}, {}, {}, {}, {}
    for seg in segments:
        try:
            providers[seg.id] = api.get_provider(seg.id)
        except (ProviderNotFound, NotFound):
            continue
        inventories[seg.id], generations[seg.id] = api.get_inventories(seg.id)
        aggregates[seg.id] = frozenset(api.get_provider_aggregates(seg.id)[0])
    for host in sorted({h for s in segments for h in s.hosts}):
        found = api.list_providers(name=host)
        if found:
            roots[host] = found[0]
            aggregates[found[0].uuid] = frozenset(api.get_provider_aggregates(found[0].uuid)[0])
    return ObservedSegments(providers, inventories, aggregates, roots, generations)


def _read_and_plan(
    conn, api: Placement, networks, recount: bool = False
) -> tuple[NeutronSegments, ObservedSegments, SegmentsPlan]:
    facts = read_neutron(conn, networks)
    observed = observe(api, facts.segments)
    return facts, observed, plan_segments(facts.segments, observed, recount=recount)


@dataclass(frozen=True)
class PlannedSegments:
    """The segments' plan (writes, warnings) and the counts that differ from Neutron's: all of them, and as sentences
    (``unresolved``) the ones the plan does not recount."""

    planned: SegmentsPlan

    @property
    def unresolved(self) -> list[str]:
        """The differing counts the plan leaves as they are (not recounted), one sentence each."""
        recounted = {op.uuid for op in self.planned.plan.ops if op.action == "recount"}
        return [str(d) for d in self.planned.differences if d.segment not in recounted]

    def to_dict(self) -> dict:
        """A JSON-ready dict: plan, warnings, diff, differences, unresolved."""
        return {
            "plan": self.planned.plan.to_dict(),
            "warnings": list(self.planned.warnings),
            "diff": self.planned.plan.diff(),
            "differences": [d.to_dict() for d in self.planned.differences],
            "unresolved": self.unresolved,
        }


@dataclass(frozen=True)
class SegmentPlacement:
    """What Placement holds for a segment's provider: its inventories, its aggregates (sorted) and the hosts whose
    compute node provider shares one of them (sorted)."""

    inventories: Mapping[str, Mapping]
    aggregates: tuple[str, ...]
    hosts_in_aggregate: tuple[str, ...]

    def to_dict(self) -> dict:
        """A JSON-ready dict: inventories, aggregates, hosts_in_aggregate."""
        return {
            "inventories": {rc: dict(inv) for rc, inv in self.inventories.items()},
            "aggregates": list(self.aggregates),
            "hosts_in_aggregate": list(self.hosts_in_aggregate),
        }


@dataclass(frozen=True)
class SegmentView:
    """A routed segment as Neutron would report it, and what Placement holds for it (None: no provider)."""

    segment: RoutedSegment
    placement: SegmentPlacement | None

    def to_dict(self) -> dict:
        """The segment's dict (:meth:`RoutedSegment.to_dict`) followed by ``placement`` (its dict, or None)."""
        return {**self.segment.to_dict(), "placement": None if self.placement is None else self.placement.to_dict()}


@dataclass(frozen=True)
class SegmentsReport:
    """Each segment as Neutron would report it with what Placement holds, the writes a sync would make and the
    counts that differ from Neutron's."""

    segments: tuple[SegmentView, ...]
    planned: PlannedSegments

    @property
    def in_sync(self) -> bool:
        """Whether Placement matches Neutron: no write to make and no count that differs."""
        return not self.planned.planned.plan.changed and not self.planned.planned.differences

    @property
    def unresolved(self) -> list[str]:
        """The differing counts a sync would leave as they are, one sentence each."""
        return self.planned.unresolved

    @property
    def changed(self) -> bool:
        """False: a report writes nothing."""
        return False

    @property
    def failed(self) -> tuple[FailedSegment, ...]:
        """None: a report writes nothing, so no segment's writes failed."""
        return ()

    @property
    def writes(self) -> int:
        """How many writes a sync would make."""
        return self.planned.planned.plan.writes()

    @property
    def steps(self) -> tuple[str, ...]:
        """The writes a sync would make, one line each."""
        return tuple(str(op) for op in self.planned.planned.plan.ops)

    @property
    def warnings(self) -> tuple[str, ...]:
        """The plan's warnings (hosts without a compute node provider, ...)."""
        return tuple(self.planned.planned.warnings)

    def to_dict(self) -> dict:
        """A JSON-ready dict: segments (each its dict), in_sync, plan, warnings, diff, differences, unresolved."""
        return {"segments": [s.to_dict() for s in self.segments], "in_sync": self.in_sync, **self.planned.to_dict()}


def report_segments(conn, api: Placement, networks: Iterable[str] | None = None) -> SegmentsReport:
    """Each segment as Neutron would report it, what Placement holds, the writes a sync would make, and the
    counts that differ from Neutron's (with their possible causes): a SegmentsReport. Raises ObjectNotFound for a
    network Neutron does not have; lets PlacementError through."""
    facts, observed, planned = _read_and_plan(conn, api, networks)
    return SegmentsReport(tuple(_segment_view(s, observed) for s in facts.segments), PlannedSegments(planned))


def _segment_view(seg: RoutedSegment, observed: ObservedSegments) -> SegmentView:
    if seg.id not in observed.providers:
        return SegmentView(seg, None)
    mine = observed.aggregates.get(seg.id, frozenset())
    return SegmentView(
        seg,
        SegmentPlacement(
            observed.inventories.get(seg.id, {}),
            tuple(sorted(mine)),
            tuple(sorted(h for h, r in observed.roots.items() if mine & observed.aggregates.get(r.uuid, frozenset()))),
        ),
    )


@dataclass(frozen=True)
class FailedSegment:
    """A segment whose writes stopped while the others' were made: its id and label (its name in messages), the
    error (one line) and Placement's error code, its writes not made (the failed one first) and the exception."""

    segment: str
    label: str
    error: str
    code: str | None
    pending: tuple[SegmentOp, ...]
    cause: BaseException = field(compare=False)

    @property
    def line(self) -> str:
        """The segment's one line: which, why, what is left (its first write not made), and that a sync resumes."""
        first = self.pending[0]
        return (
            f"{self.label}: {self.error} — {len(self.pending)} of its writes not made (the first: "
            f"{first.action} on {first.name}); {RESUME}"
        )

    def to_dict(self) -> dict:
        """A JSON-ready dict: segment, label, error, code, pending (each write's dict); not the exception."""
        return {
            "segment": self.segment,
            "label": self.label,
            "error": self.error,
            "code": self.code,
            "pending": [op.to_dict() for op in self.pending],
        }


@dataclass(frozen=True)
class SegmentsSync:
    """What a segment sync did (check mode: would do): the steps of its plan, the segments as Neutron would report
    them, the plan with the counts that differ from Neutron's, the warnings (a recount's after its quiet window), and
    the segments whose writes failed while the others' were made."""

    steps: tuple[str, ...]
    segments: tuple[RoutedSegment, ...]
    planned: PlannedSegments
    warnings: tuple[str, ...]
    failed: tuple[FailedSegment, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether the plan has writes (in check mode too: what a real run would change)."""
        return self.planned.planned.plan.changed

    @property
    def writes(self) -> int:
        """How many writes the plan makes."""
        return self.planned.planned.plan.writes()

    @property
    def in_sync(self) -> bool:
        """Whether Placement already held the segments: the plan has no writes."""
        return not self.writes

    @property
    def unresolved(self) -> list[str]:
        """The differing counts the sync leaves as they are (not recounted), one sentence each."""
        return self.planned.unresolved

    def to_dict(self) -> dict:
        """A JSON-ready dict: changed, steps, segments (each its dict), plan, warnings, diff, differences,
        unresolved, failed_segments (each its dict)."""
        return {
            "changed": self.changed,
            "steps": list(self.steps),
            "segments": [s.to_dict() for s in self.segments],
            **self.planned.to_dict(),
            "warnings": list(self.warnings),
            "failed_segments": [f.to_dict() for f in self.failed],
        }


class SegmentsOutcome(Protocol):
    """What a segment list (SegmentsReport) or sync (SegmentsSync) gives the front ends."""

    @property
    def changed(self) -> bool:
        """Whether the sync wrote (or would write)."""

    @property
    def in_sync(self) -> bool:
        """Whether Placement matches Neutron."""

    @property
    def writes(self) -> int:
        """How many writes the plan makes."""

    @property
    def failed(self) -> tuple[FailedSegment, ...]:
        """The segments whose writes failed."""

    @property
    def steps(self) -> tuple[str, ...]:
        """The plan's writes, one line each."""

    @property
    def warnings(self) -> tuple[str, ...]:
        """The warnings, one line each."""

    @property
    def unresolved(self) -> list[str]:
        """The differing counts left as they are, one sentence each."""

    def to_dict(self) -> dict:
        """A JSON-ready dict."""


def sync_segments(
    conn,
    api: Placement,
    networks: Iterable[str] | None = None,
    *,
    check: bool = False,
    recount: bool = False,
    quiet: float = QUIET_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> SegmentsSync:
    """Make Placement hold the routed segments' providers (check: only plan). Idempotent: warm, 0 writes.

    Neutron's counts (IPV4_ADDRESS total and reserved) are written only for a new provider or inventory;
    one that differs is reported in ``differences`` and, with ``recount``, set to Neutron's count when
    neither it nor the segment's subnets and ports moved during ``quiet`` seconds (a count still moving
    is left alone and said so in ``warnings``). Returns a SegmentsSync (its ``failed``: the segments whose writes
    Placement refused while the others' were made). Raises ObjectNotFound for a network Neutron does not have,
    PartialApply when Placement became unavailable or every segment's writes failed (:func:`apply_segments`);
    lets other PlacementErrors through."""
    facts, observed, planned = _read_and_plan(conn, api, networks, recount)
    if recount and not check and any(op.action == "recount" for op in planned.plan.ops):
        sleep(quiet)
        first = planned
        facts, observed, planned = _read_and_plan(conn, api, networks, recount)
        planned = steady_recounts(first, planned, facts.segments)
    plan = planned.plan
    result = SegmentsSync(
        tuple(str(op) for op in plan.ops), facts.segments, PlannedSegments(planned), tuple(planned.warnings)
    )
    if check or not plan.changed:
        return result
    applied = apply_segments(api, plan, {s.id: s.label for s in facts.segments})
    return dataclasses.replace(result, failed=tuple(applied.failed))


RESUME = "running the segment sync again resumes from what is in Placement"


@dataclass
class SegmentsApplied:
    """The writes made (plan order) and the segments whose writes stopped (FailedSegment each), gathered while
    :func:`apply_segments` runs."""

    applied: list[SegmentOp] = field(default_factory=list)
    failed: list[FailedSegment] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The writes made and the failed segments, each its dict."""
        return {"applied": [op.to_dict() for op in self.applied], "failed": [f.to_dict() for f in self.failed]}

    def failures(self) -> list[str]:
        """One line per failed segment (:attr:`FailedSegment.line`), a list of str."""
        return [f.line for f in self.failed]


def segment_units(plan: base.Plan) -> dict[str, list[SegmentOp]]:
    """The plan's writes by segment, in plan order: its provider's (create, inventory, aggregate) and those putting
    compute nodes in its aggregate."""
    by_aggregates = {tuple(after["aggregates"]): seg for seg, after in plan.after.items()}
    units: dict[str, list[SegmentOp]] = {}
    for op in plan.ops:
        seg = by_aggregates.get(tuple(op.aggregates), op.uuid) if op.action == "add_root_to_aggregate" else op.uuid
        units.setdefault(seg, []).append(op)
    return units


def apply_segments(api: Placement, plan: base.Plan, labels: Mapping[str, str] | None = None) -> SegmentsApplied:
    """Each segment's writes in plan order. Placement refusing one (the provider deleted meanwhile, a conflict past
    the retries) stops that segment's writes only: it is reported in ``failed``, the other segments are written.
    Placement unavailable (or a write whose outcome is unknown) stops the run, and so does every segment failing:
    a PartialApply naming what was written and what was not (Placement unavailable before any write: its error as it
    is). ``labels``: segment id → its name in messages."""
    units = segment_units(plan)
    done = SegmentsApplied()
    for seg, ops in units.items():
        try:
            done.applied += apply_in_order(ops, lambda op: _apply_op(api, op), then=RESUME)
        except write_failures() as e:
            cause, made, pending = (e.cause, e.applied, e.pending) if isinstance(e, PartialApply) else (e, [], ops)
            done.applied += made
            if not isinstance(cause, MinbwError) or isinstance(cause, PlacementUnavailable):
                if not done.applied:
                    raise  # nothing was written: the error as it is
                raise _stopped(cause, plan, done, RESUME) from cause  # not this segment's: the next would meet it
            done.failed.append(
                FailedSegment(
                    seg,
                    (labels or {}).get(seg, f"segment {seg}"),
                    " ".join(str(cause).split()),  # one line (Placement's have breaks)
                    getattr(cause, "code", None),
                    tuple(pending),
                    cause,
                )
            )
    if done.failed and len(done.failed) == len(units):
        raise _stopped(
            done.failed[0].cause,
            plan,
            done,
            f"the writes of every segment failed ({', '.join(f.label for f in done.failed)}); {RESUME}",
        )
    return done


def apply(api: Placement, plan: base.Plan) -> list[SegmentOp]:
    """The whole plan or a PartialApply: :func:`apply_segments`, a failed segment raised after the others were
    written. Returns the writes made."""
    done = apply_segments(api, plan)
    if done.failed:
        raise _stopped(done.failed[0].cause, plan, done, "; ".join(done.failures()))
    return done.applied


def _stopped(cause: BaseException, plan: base.Plan, done: SegmentsApplied, then: str) -> PartialApply:
    made = {id(op) for op in done.applied}
    return PartialApply(
        cause, done.applied, len(plan.ops), then=then, pending=[op for op in plan.ops if id(op) not in made]
    )


def _apply_op(api: Placement, op: SegmentOp) -> None:
    if op.action == "create_provider":
        api.create_provider(op.uuid, op.name, None)
        return
    if op.action == "recount":
        # only at the generation the quiet window saw: a delta of Neutron's since then must not be overwritten
        try:
            # a recount has its generation
            api.set_inventories(op.uuid, op.inventories, op.generation)  # type: ignore[arg-type]
        except ConcurrentUpdate as e:
            raise ConcurrentUpdate(
                f"{op.name}: its inventory changed after the quiet window (a delta of "
                f"Neutron's): not recounted; run the recount again",
                status=409,
            ) from e
        return
    for _attempt in range(RETRIES + 1):
        try:
            if op.action == "set_inventories":  # a new count: only where there is none yet
                have, gen = api.get_inventories(op.uuid)
                if IPV4_ADDRESS not in have:
                    api.set_inventories(op.uuid, {**have, **op.inventories}, gen)
            elif op.action == "set_inventory_fields":  # Neutron's counts as they are now
                have, gen = api.get_inventories(op.uuid)
                inv = {**have[IPV4_ADDRESS], **op.inventories[IPV4_ADDRESS]}
                api.set_inventories(op.uuid, {**have, IPV4_ADDRESS: inv}, gen)
            else:  # set_aggregates / add_root_to_aggregate: add to what is there (Nova owns the rest)
                aggregates, gen = api.get_provider_aggregates(op.uuid)
                api.set_provider_aggregates(op.uuid, aggregates | set(op.aggregates[:1]), gen)
            return
        except ConcurrentUpdate:
            continue
    raise ConcurrentUpdate(
        f"provider {op.name} ({op.uuid}) kept changing during `{op}` ({RETRIES + 1} tries)", status=409
    )


def member_of_for_ports(
    conn, api: Placement, ports: Iterable[dict], facts: NeutronSegments | None = None
) -> tuple[tuple[tuple[str, ...], ...], tuple[SegmentChoice, ...]]:
    """The ``member_of`` entries for ports on routed networks (one per port), with each port's choice (a
    SegmentChoice). Raises NoValidHost when a port has no segment left (every reason named); lets PlacementError
    through."""
    ports = list(ports)
    if facts is None:
        facts = read_neutron(conn, sorted({p["network_id"] for p in ports}))
    routed = {s.network_id for s in facts.segments if s.subnets}
    aggregates = {}
    for seg in facts.segments:
        if seg.network_id not in routed:
            continue  # not a routed network: no segment provider to ask about
        try:
            aggregates[seg.id] = api.get_provider_aggregates(seg.id)[0]
        except (ProviderNotFound, NotFound):
            aggregates[seg.id] = set()
    member_of, choices = [], []
    for port in ports:
        if port["network_id"] not in routed:
            continue
        choice = port_member_of(port, facts.segments, facts.subnet_segment, aggregates)
        if choice is not None:
            member_of.append(choice.aggregates)
            choices.append(choice)
    return tuple(member_of), tuple(choices)


__all__ = [
    "read_neutron",
    "observe",
    "report_segments",
    "SegmentsReport",
    "SegmentView",
    "SegmentPlacement",
    "PlannedSegments",
    "sync_segments",
    "SegmentsSync",
    "SegmentsOutcome",
    "FailedSegment",
    "apply",
    "apply_segments",
    "segment_units",
    "SegmentsApplied",
    "member_of_for_ports",
]
