"""Routed-network segment providers as Placement should hold them → the writes (pure).

What Neutron's segments plugin does on its own when it can reach Placement and Nova (one provider per
segment with an IPv4 subnet, its ``IPV4_ADDRESS`` inventory, an aggregate, the segment's hosts' compute
node providers in that aggregate); :mod:`minbw.ops.segments` reads both sides and applies. A segment
provider that already has an aggregate keeps it (Neutron's is a Nova host aggregate's uuid); a new one
gets the segment id as its aggregate. Roots are only ever added to an aggregate, never removed from one
(Nova owns the others).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from minbw.model.providers import Provider
from minbw.neutron.segments import RoutedSegment
from minbw.plan import base


@dataclass(frozen=True)
class ObservedSegments:
    """Placement's side: segment providers (by segment id), their inventories and aggregates, and the
    compute roots by host name with their aggregates."""

    providers: Mapping[str, Provider]
    inventories: Mapping[str, Mapping[str, Mapping]]
    aggregates: Mapping[str, frozenset[str]]          # provider uuid (segment or root) → aggregates
    roots: Mapping[str, Provider]                     # host name → root provider


@dataclass(frozen=True)
class SegmentOp(base.Op):
    # action: create_provider | set_inventories | set_aggregates | add_root_to_aggregate
    uuid: str = ""
    name: str = ""
    inventories: Mapping[str, Mapping] = field(default_factory=dict)
    aggregates: tuple[str, ...] = ()
    host: str = ""

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"action": self.action, "uuid": self.uuid, "name": self.name}
        if self.action == "set_inventories":
            d["inventories"] = {rc: dict(i) for rc, i in self.inventories.items()}
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
                f"{rc} total={i['total']} reserved={i['reserved']}" for rc, i in self.inventories.items())
        if self.action == "set_aggregates":
            return f"put {self.name} in aggregate {', '.join(self.aggregates)}"
        return f"add compute node {self.name} ({self.host}) to aggregate {', '.join(self.aggregates)}"


def segment_aggregates(seg: RoutedSegment, observed: ObservedSegments) -> tuple[str, ...]:
    """The aggregates that stand for ``seg``: its provider's (Neutron's Nova aggregate), else its id."""
    have = observed.aggregates.get(seg.id)
    return tuple(sorted(have)) if have else (seg.id,)


def _inventory_equal(want: Mapping[str, Mapping], have: Mapping[str, Mapping]) -> bool:
    if set(want) != set(have):
        return False
    return all(all(have[rc].get(k) == v for k, v in inv.items()) for rc, inv in want.items())


def plan_segments(segments: tuple[RoutedSegment, ...], observed: ObservedSegments) -> tuple[base.Plan, list[str]]:
    """The writes that make Placement show ``segments`` as Neutron would, and warnings (hosts without a
    compute node provider). Segments without IPv4 addresses get no provider (as in Neutron)."""
    ops: list[SegmentOp] = []
    warnings: list[str] = []
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    for seg in segments:
        if seg.inventory is None:
            continue
        rp = observed.providers.get(seg.id)
        aggs = segment_aggregates(seg, observed)
        have_inv = observed.inventories.get(seg.id, {})
        have_aggs = observed.aggregates.get(seg.id, frozenset())
        roots_in = sorted(h for h in seg.hosts if h in observed.roots
                          and set(aggs) & observed.aggregates.get(observed.roots[h].uuid, frozenset()))
        before[seg.id] = None if rp is None else {"name": rp.name, "inventories": dict(have_inv),
                                                   "aggregates": sorted(have_aggs), "hosts": roots_in}
        after[seg.id] = {"name": seg.provider_name, "inventories": dict(seg.inventory), "aggregates": list(aggs),
                         "hosts": sorted(h for h in seg.hosts if h in observed.roots)}
        if rp is None:
            ops.append(SegmentOp("create_provider", uuid=seg.id, name=seg.provider_name))
        if rp is None or not _inventory_equal(seg.inventory, have_inv):
            ops.append(SegmentOp("set_inventories", uuid=seg.id, name=seg.provider_name, inventories=seg.inventory))
        if not have_aggs:
            ops.append(SegmentOp("set_aggregates", uuid=seg.id, name=seg.provider_name, aggregates=aggs))
        for host in seg.hosts:
            root = observed.roots.get(host)
            if root is None:
                warnings.append(f"{seg.label}: host {host} has no compute node provider in Placement; it joins "
                                f"the segment's aggregate once nova-compute reports it (run the sync again)")
                continue
            if not set(aggs) & observed.aggregates.get(root.uuid, frozenset()):
                ops.append(SegmentOp("add_root_to_aggregate", uuid=root.uuid, name=root.name,
                                     aggregates=aggs, host=host))
    return base.Plan(tuple(ops), before=before, after=after), warnings
