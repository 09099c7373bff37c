"""The provider cache's safety check (pure): which filtered provider listings to ask for, and which
cached providers disagree with their answers.

A cached provider is trusted while its generation, name and parent are unchanged. That misses one case:
a provider deleted and re-created (same uuid5 UUID) that reached the same generation with other
content. The check asks Placement a few listings whose number depends on the distinct traits, resource
classes and capacities of the cached providers, not on how many there are:

- ``GET /resource_providers?required=TRAIT`` per trait: exactly the providers that have it;
- ``GET /resource_providers?resources=CLASS:1`` per class, and ``CLASS:C`` and ``CLASS:C+1`` per
  capacity ``C = (total - reserved) * allocation_ratio`` seen: a provider is listed when its
  inventory of the class accepts that amount (min_unit, max_unit, step_size) and has that much free.

Each cached entry predicts its answer to each listing; a provider whose membership differs from the
prediction is re-read. Free capacity needs the usage, which the cache knows only for providers it saw
created (usage 0, and every allocation moves the generation); for the others an absence proves nothing
and only an unexpected presence counts. Traits are asked for only when some cached provider has them:
an extra trait nobody is meant to have is not seen either. So with usage unknown a lower total at the same generation
and the same classes, and an extra unrelated trait, go unnoticed until the periodic full check (the cache's maximum
age).
An entry without traits (the audit reads none) is checked by its inventories alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from minbw.model.providers import MAX_INT, normalize_inventory


@dataclass(frozen=True)
class Listing:
    """One filtered listing: by a required trait, or by ``amount`` of a resource class."""

    trait: str = ""
    resource_class: str = ""
    amount: int = 0

    def filters(self) -> dict[str, str]:
        """The query parameters of this listing: ``required`` (the trait) or ``resources`` (``CLASS:amount``)."""
        if self.trait:
            return {"required": self.trait}
        return {"resources": f"{self.resource_class}:{self.amount}"}

    def expects(self, entry: Mapping) -> bool | None:
        """Whether the cached ``entry`` is in this listing's answer; None when it depends on unknown usage."""
        if self.trait:
            return None if entry.get("traits") is None else self.trait in entry["traits"]
        inv = entry["inventories"].get(self.resource_class)
        if inv is None:
            return False
        inv = normalize_inventory(inv)
        capacity = (inv["total"] - inv["reserved"]) * inv["allocation_ratio"]
        if not (
            inv["min_unit"] <= self.amount <= inv["max_unit"]
            and self.amount % inv["step_size"] == 0
            and capacity >= self.amount
        ):
            return False
        used = entry.get("used")
        if used is None:
            return None
        return capacity - used.get(self.resource_class, 0) >= self.amount


def capacity(inv: Mapping) -> int:
    """What the inventory ``inv`` can hold: ``(total - reserved) * allocation_ratio``, rounded down to an int."""
    inv = normalize_inventory(inv)
    return int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"])


def listings(entries: Iterable[Mapping]) -> tuple[Listing, ...]:
    """The listings that check ``entries`` (cached provider entries), in a stable order."""
    entries = list(entries)
    traits = sorted({t for e in entries for t in e.get("traits") or ()})
    amounts: set[tuple[str, int]] = set()
    for e in entries:
        for rc, inv in e["inventories"].items():
            c = capacity(inv)
            amounts |= {(rc, a) for a in (1, c, c + 1) if 1 <= a <= MAX_INT}
    return tuple(Listing(trait=t) for t in traits) + tuple(
        Listing(resource_class=rc, amount=a) for rc, a in sorted(amounts)
    )


def disagreeing(entries: Mapping[str, Mapping], answers: Mapping[Listing, set[str]]) -> set[str]:
    """UUIDs of the cached ``entries`` whose membership in some listing's answer is not the predicted one."""
    out = set()
    for listing, listed in answers.items():
        for uuid, entry in entries.items():
            expected = listing.expects(entry)
            if expected is not None and expected != (uuid in listed):
                out.add(uuid)
    return out
