"""Routed-network segment providers as Placement should hold them → the writes (pure).

What Neutron's segments plugin does on its own when it can reach Placement and Nova (one provider per
segment with an IPv4 subnet, its ``IPV4_ADDRESS`` inventory, an aggregate, the segment's hosts' compute
node providers in that aggregate); :mod:`minbw.ops.segments` reads both sides and applies. A segment
provider that already has an aggregate keeps it (Neutron's is a Nova host aggregate's uuid); a new one
gets the segment id as its aggregate. Roots are only ever added to an aggregate, never removed from one
(Nova owns the others).

The inventory's ``total`` and ``reserved`` are Neutron's running counts: it reads them and writes them
back plus a delta for every subnet and port change, and never writes them whole again. So a plan writes
them only where no count exists yet (a new provider or inventory: the count Neutron's deltas reach from
today's subnets and ports). Where Placement's count differs from that, the plan reports a
:class:`CountDifference` with its possible causes; only with ``recount`` does it add a ``recount`` write,
guarded by the generation it was read at, which sets the count Neutron's next deltas continue from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple

from minbw.model.providers import Provider
from minbw.neutron.segments import IPV4_ADDRESS, RoutedSegment
from minbw.plan import base


COUNTS = ("total", "reserved")  # Neutron's running counts: only ever changed by its deltas


@dataclass(frozen=True)
class ObservedSegments:
    """Placement's side: segment providers (by segment id), their inventories (and the generation they
    were read at) and aggregates, and the compute roots by host name with their aggregates."""

    providers: Mapping[str, Provider]
    inventories: Mapping[str, Mapping[str, Mapping[str, Any]]]
    aggregates: Mapping[str, frozenset[str]]  # provider uuid (segment or root) → aggregates
    roots: Mapping[str, Provider]  # host name → root provider
    generations: Mapping[str, int] = field(default_factory=dict)  # segment id → generation of its inventories


@dataclass(frozen=True)
class SegmentOp(base.Op):
    """One write. ``set_inventories``: a new IPV4_ADDRESS inventory (no count yet); ``set_inventory_fields``:
    the fields Neutron never changes (``inventories`` holds only those), the counts as they are then;
    ``recount``: the whole inventory, written only at ``generation``."""

    # action: create_provider | set_inventories | set_inventory_fields | recount | set_aggregates
    #         | add_root_to_aggregate
    uuid: str = ""
    name: str = ""
    inventories: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    aggregates: tuple[str, ...] = ()
    host: str = ""
    generation: int | None = None
    counted: Mapping[str, int] = field(default_factory=dict)  # recount: the counts it replaces

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: action, uuid, name and what the action writes (inventories; for ``recount`` also
        ``generation`` and ``from``, the counts replaced; aggregates), host when set."""
        d: dict[str, Any] = {"action": self.action, "uuid": self.uuid, "name": self.name}
        if self.action in ("set_inventories", "set_inventory_fields", "recount"):
            d["inventories"] = {rc: dict(i) for rc, i in self.inventories.items()}
        if self.action == "recount":
            d["generation"], d["from"] = self.generation, dict(self.counted)
        if self.action in ("set_aggregates", "add_root_to_aggregate"):
            d["aggregates"] = list(self.aggregates)
        if self.host:
            d["host"] = self.host
        return d

    def __str__(self) -> str:
        if self.action == "create_provider":
            return f"create provider {self.name} ({self.uuid})"
        if self.action == "set_inventories":
            return f"set inventories of {self.name}: " + ", ".join(
                f"{rc} total={i['total']} reserved={i['reserved']}" for rc, i in self.inventories.items()
            )
        if self.action == "set_inventory_fields":
            return (
                f"set {IPV4_ADDRESS} "
                + ", ".join(f"{k}={v}" for k, v in self.inventories[IPV4_ADDRESS].items())
                + f" on {self.name} (total and reserved as they are)"
            )
        if self.action == "recount":
            inv = self.inventories[IPV4_ADDRESS]
            return f"recount {IPV4_ADDRESS} of {self.name}: " + ", ".join(
                f"{k} {self.counted[k]} -> {inv[k]}" for k in COUNTS if self.counted.get(k) != inv[k]
            )
        if self.action == "set_aggregates":
            return f"put {self.name} in aggregate {', '.join(self.aggregates)}"
        return f"add compute node {self.name} ({self.host}) to aggregate {', '.join(self.aggregates)}"


def segment_aggregates(seg: RoutedSegment, observed: ObservedSegments) -> tuple[str, ...]:
    """The aggregates that stand for ``seg``: its provider's (Neutron's Nova aggregate), else its id."""
    have = observed.aggregates.get(seg.id)
    return tuple(sorted(have)) if have else (seg.id,)


@dataclass(frozen=True)
class CountDifference:
    """A segment provider whose ``IPV4_ADDRESS`` count in Placement is not the one Neutron's deltas reach
    from today's subnets and ports, and what may have caused it."""

    segment: str
    label: str
    field: str
    placement: int
    neutron: int
    causes: tuple[str, ...]
    outcome: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: segment, field, the Placement and Neutron counts, causes and outcome."""
        return {
            "segment": self.segment,
            "field": self.field,
            "placement": self.placement,
            "neutron": self.neutron,
            "causes": list(self.causes),
            "outcome": self.outcome,
        }

    def __str__(self) -> str:
        return (
            f"{self.label}: {IPV4_ADDRESS} {self.field} is {self.placement} in Placement, {self.neutron} by "
            f"Neutron's count of the segment's subnets and ports. Possible causes: "
            + "; ".join(self.causes)
            + f". {self.outcome}"
        )


# Neutron 29 (services/segments/db.py, _delete_segments_for_network) makes a second segments plugin, with a second
# notifier, in a server process when that process first deletes a network (docs/scheduling.md)
_TWICE = (
    "a change counted twice: once a Neutron server process has deleted a network it runs a second segments "
    "notifier, and both add each subnet's and port's delta (the second one's lands when the two do not "
    "overlap)"
)


def explain_difference(seg: RoutedSegment, field_: str, placement: int, neutron: int) -> CountDifference:
    """Why Placement's ``field_`` count may differ from Neutron's count for ``seg``, and what follows."""
    fix = (
        "Fix: `minbw segment sync --recount` sets it to Neutron's count once nothing has changed for a "
        "quiet window; Neutron's later deltas then land right."
    )
    if field_ == "total":
        causes = ((_TWICE,) if placement > neutron else ()) + (
            "a subnet made, resized or deleted while Neutron could not reach Placement (it does not retry)",
            "another tool wrote the inventory",
        )
        outcome = f"Placement offers {placement - neutron:+d} addresses against what the subnets have. {fix}"
        return CountDifference(seg.id, seg.label, field_, placement, neutron, causes, outcome)
    if placement < neutron:
        deferred = [p.id for p in seg.ports if p.deferred]
        causes = (
            (
                f"ports that got their address when they were bound, after they were made (ip_allocation "
                f"deferred): {', '.join(deferred)}; Neutron books a port update on the segment of the port before "
                "it, which had no address, so it did not count that address unless the port was a compute port "
                "then and stopped being one later",
            )
            if deferred
            else ()
        )
        causes += (
            "a port that had its address before its subnet was put on the segment (Neutron then counts "
            "the subnet only)",
            "a notification Neutron lost: Placement or Nova unreachable, or an earlier write refused in the "
            "same batch (Neutron drops the rest of a batch after an error)",
            "another tool wrote the inventory (minbw's sync used to write the subnets' count without the ports)",
        )
        left = placement - seg.port_addresses
        outcome = (
            f"Neutron takes one off for each of the {seg.port_addresses} counted port addresses when their "
            f"ports go, which leaves {left}, {neutron - placement} fewer than the subnets reserve"
            + (
                " (Placement refuses a count below 0: Neutron's write fails and the rest of its batch is lost)"
                if left < 0
                else ""
            )
            + f". {fix}"
        )
    else:
        causes = (
            _TWICE,
            "a port whose first address moved to a subnet of another segment (Neutron books a port "
            "update on the segment the port was on before)",
            "ports deleted while Neutron's notifications were lost",
            "another tool wrote the inventory",
        )
        outcome = (
            f"{placement - neutron} addresses stay reserved that no port holds: Placement offers that many "
            f"fewer on this segment. {fix}"
        )
    return CountDifference(seg.id, seg.label, field_, placement, neutron, causes, outcome)


class SegmentsPlan(NamedTuple):
    plan: base.Plan[SegmentOp]
    warnings: list[str]
    differences: tuple[CountDifference, ...] = ()


def plan_segments(
    segments: tuple[RoutedSegment, ...], observed: ObservedSegments, recount: bool = False
) -> SegmentsPlan:
    """The writes that make Placement show ``segments`` as Neutron would, warnings (hosts without a
    compute node provider), and the counts that differ (recounted only with ``recount``). Segments
    without IPv4 addresses get no provider (as in Neutron)."""
    ops: list[SegmentOp] = []
    warnings: list[str] = []
    differences: list[CountDifference] = []
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    for seg in segments:
        if seg.inventory is None:
            continue
        rp = observed.providers.get(seg.id)
        aggs = segment_aggregates(seg, observed)
        have_inv = observed.inventories.get(seg.id, {})
        have_aggs = observed.aggregates.get(seg.id, frozenset())
        roots_in = sorted(
            h
            for h in seg.hosts
            if h in observed.roots and set(aggs) & observed.aggregates.get(observed.roots[h].uuid, frozenset())
        )
        before[seg.id] = (
            None
            if rp is None
            else {"name": rp.name, "inventories": dict(have_inv), "aggregates": sorted(have_aggs), "hosts": roots_in}
        )
        after[seg.id] = {
            "name": seg.provider_name,
            "inventories": dict(seg.inventory),
            "aggregates": list(aggs),
            "hosts": sorted(h for h in seg.hosts if h in observed.roots),
        }
        if rp is None:
            ops.append(SegmentOp("create_provider", uuid=seg.id, name=seg.provider_name))
        want, have = seg.inventory[IPV4_ADDRESS], have_inv.get(IPV4_ADDRESS)
        if rp is None or have is None:
            ops.append(SegmentOp("set_inventories", uuid=seg.id, name=seg.provider_name, inventories=seg.inventory))
        else:
            ops += _inventory_ops(seg, want, have, observed.generations.get(seg.id), recount, differences)
            after[seg.id]["inventories"] = {
                IPV4_ADDRESS: {**want, **({} if recount else {k: have.get(k) for k in COUNTS})}
            }
        if not have_aggs:
            ops.append(SegmentOp("set_aggregates", uuid=seg.id, name=seg.provider_name, aggregates=aggs))
        for host in seg.hosts:
            root = observed.roots.get(host)
            if root is None:
                warnings.append(
                    f"{seg.label}: host {host} has no compute node provider in Placement; it joins "
                    f"the segment's aggregate once nova-compute reports it (run the sync again)"
                )
                continue
            if not set(aggs) & observed.aggregates.get(root.uuid, frozenset()):
                ops.append(
                    SegmentOp("add_root_to_aggregate", uuid=root.uuid, name=root.name, aggregates=aggs, host=host)
                )
    return SegmentsPlan(base.Plan(tuple(ops), before=before, after=after), warnings, tuple(differences))


def _inventory_ops(
    seg: RoutedSegment,
    want: Mapping[str, Any],
    have: Mapping[str, Any],
    generation: int | None,
    recount: bool,
    differences: list[CountDifference],
) -> list[SegmentOp]:
    """An existing inventory: its fixed fields set where they differ; its counts only reported, or recounted."""
    off = {k: (have[k], want[k]) for k in COUNTS if have.get(k) != want[k]}
    differences += [explain_difference(seg, k, p, n) for k, (p, n) in off.items()]
    if off and recount:
        return [
            SegmentOp(
                "recount",
                uuid=seg.id,
                name=seg.provider_name,
                inventories={IPV4_ADDRESS: dict(want)},
                generation=generation,
                counted={k: have[k] for k in COUNTS},
            )
        ]
    fields = {k: v for k, v in want.items() if k not in COUNTS}
    if any(have.get(k) != v for k, v in fields.items()):
        return [
            SegmentOp("set_inventory_fields", uuid=seg.id, name=seg.provider_name, inventories={IPV4_ADDRESS: fields})
        ]
    return []


def steady_recounts(first: SegmentsPlan, second: SegmentsPlan, segments: tuple[RoutedSegment, ...]) -> SegmentsPlan:
    """``second`` (planned after the quiet window) without the recounts that are not the same as in ``first``
    (same counts, same generation): Neutron may still have a delta on its way there. Each one left out is a
    warning."""
    before = {op.uuid: op for op in first.plan.ops if op.action == "recount"}
    labels = {s.id: s.label for s in segments}
    ops, moved = [], []
    for op in second.plan.ops:
        if op.action == "recount" and op != before.get(op.uuid):
            moved.append(
                f"{labels.get(op.uuid, op.uuid)}: not recounted: its count or its ports changed during the "
                f"quiet window (Neutron may have a delta on its way); run the recount again"
            )
            continue
        ops.append(op)
    return SegmentsPlan(
        base.Plan(tuple(ops), second.plan.before, second.plan.after), second.warnings + moved, second.differences
    )
