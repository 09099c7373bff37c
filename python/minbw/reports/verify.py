"""After a write of allocations: is any provider it touched over capacity, and how is the write undone.
Pure: :mod:`minbw.ops.verify` reads Placement and applies.

Why (docs/placement-overcommit.md): openstack-placement (16.0.0 and earlier) on MySQL/MariaDB, with its
default ``[placement] allocation_conflict_retry_count = 10``, can accept a claim that leaves a provider over
capacity when claimers race: its server-side retry reuses the request's transaction. So minbw reads the
usage of every provider a write gave resources to, after the write, and compares it with the capacity
``(total - reserved) * allocation_ratio`` per class (what Placement itself checks). A write that finds one
over capacity undoes *its own* write at the consumer generation it left, and the caller tries again
(bounded, jittered back-off, the next candidate).

Why that is enough: every write that raises a usage is followed by its writer's read. If the usage of a
provider is above capacity once the racing writes are over, the last write that raised it was read by its
writer afterwards, and only lowering writes came between: that read saw the provider over capacity, so
the write was undone. (An undo that Placement refuses is reported, never left silent.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from minbw.errors import ConsumerConflict

Allocations = Mapping[str, Mapping[str, Any]]  # {rp: {"resources": {rc: amount}}}


@dataclass(frozen=True)
class Excess:
    """One provider and class over capacity after a write: ``used`` > ``capacity``."""

    provider: str
    resource_class: str
    used: int
    capacity: float

    def __str__(self) -> str:
        cap = int(self.capacity) if float(self.capacity).is_integer() else self.capacity
        return f"{self.provider} {self.resource_class}: used {self.used} > capacity {cap}"

    def to_dict(self) -> dict:
        """The excess as a JSON-ready dict: provider, resource_class, used, capacity."""
        return {
            "provider": self.provider,
            "resource_class": self.resource_class,
            "used": self.used,
            "capacity": self.capacity,
        }


def capacity(inventory: Mapping[str, Any]) -> float:
    """Placement's capacity of one inventory: ``(total - reserved) * allocation_ratio``."""
    return (inventory["total"] - inventory.get("reserved", 0)) * inventory.get("allocation_ratio", 1.0)


def resources(allocations: Allocations | None) -> dict[str, dict[str, int]]:
    """``{rp: {rc: amount}}`` of a body's or a GET's allocations (without generations, no empty entries)."""
    return {rp: dict(a.get("resources", {})) for rp, a in (allocations or {}).items() if a.get("resources")}


def raised(after: Allocations, before: Allocations | None = None) -> dict[str, set[str]]:
    """The provider classes a write from ``before`` to ``after`` raised (the ones it can have overfilled)."""
    old = resources(before)
    return {
        rp: rcs
        for rp, res in resources(after).items()
        if (rcs := {rc for rc, n in res.items() if n > old.get(rp, {}).get(rc, 0)})
    }


def capacities_from_summaries(summaries: Mapping[str, Mapping] | None) -> dict[str, dict[str, float]]:
    """``{rp: {rc: capacity}}`` from allocation candidates' ``provider_summaries`` (Placement's own
    ``(total - reserved) * allocation_ratio``, rounded down: the same verdict for integer usages)."""
    return {
        rp: {rc: r["capacity"] for rc, r in s.get("resources", {}).items() if "capacity" in r}
        for rp, s in (summaries or {}).items()
    }


def over_capacity(
    touched: Mapping[str, set[str]],
    usages: Mapping[str, Mapping[str, int]],
    capacities: Mapping[str, Mapping[str, float]],
) -> tuple[Excess, ...]:
    """Every (provider, class) of ``touched`` whose usage is above its capacity, in a stable order.
    A class without an inventory (gone since the write) counts as capacity 0 when something uses it."""
    out = []
    for rp in sorted(touched):
        for rc in sorted(touched[rp]):
            used = usages.get(rp, {}).get(rc, 0)
            cap = capacities.get(rp, {}).get(rc, 0)
            if used > cap:
                out.append(Excess(rp, rc, used, cap))
    return tuple(out)


def undo_body(
    consumer: str,
    now: Mapping[str, Any],
    written: Allocations,
    before: Allocations | None = None,
    *,
    project_id: str | None = None,
    user_id: str | None = None,
) -> dict:
    """The ``PUT /allocations/{consumer}`` body that puts back ``before`` (nothing: a new consumer) in place
    of ``written``, at the consumer generation of ``now`` (its GET after the write).

    Raises ConsumerConflict when the consumer no longer holds exactly ``written``: someone else changed it
    since our write, and what it holds now is not ours to take back.
    """
    if resources(now.get("allocations")) != resources(written):
        raise ConsumerConflict(
            f"consumer {consumer} changed after our write left a provider over capacity: it holds "
            f"{resources(now.get('allocations')) or 'nothing'} instead of what we wrote, so we cannot undo our "
            f"write without touching someone else's. Check it (minbw audit) and free or fix it by hand."
        )
    return {
        "allocations": {rp: {"resources": dict(res)} for rp, res in resources(before).items()},
        "consumer_generation": now.get("consumer_generation"),
        "project_id": now.get("project_id") or project_id,
        "user_id": now.get("user_id") or user_id,
    }
