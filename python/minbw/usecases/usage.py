"""``minbw usage show``: usage and allocations of the providers with inventory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minbw.model.providers import Provider, ProviderDetail, usages_of
from minbw.placement.client import Placement
from minbw.readers.providers import tree_details
from minbw.usecases.cloud import Cloud

TRIES = 3  # reads of a provider whose generation moves meanwhile (then the last read is shown)


@dataclass(frozen=True)
class UsageRequest:
    hypervisor: str | None = None
    provider: str | None = None


@dataclass(frozen=True)
class ProviderUsage:
    """A provider with inventory: its inventories, usages and allocations (consumer →
    ``{"resources": ...}``, as Placement returns them)."""

    provider: Provider
    inventories: Mapping[str, Mapping]
    usages: Mapping[str, int]
    allocations: Mapping[str, Mapping]

    def to_dict(self) -> dict:
        """A JSON-ready dict: uuid, name, generation, usages and allocations."""
        return {
            **self.provider.identity(),
            "usages": self.usages,
            "allocations": self.allocations,
        }


@dataclass(frozen=True)
class UsageResult:
    providers: tuple[ProviderUsage, ...]

    def to_dict(self) -> list[dict]:
        """Each provider's uuid, name, generation, usages and allocations, a list of dicts."""
        return [p.to_dict() for p in self.providers]


def usage(cloud: Cloud, request: UsageRequest) -> UsageResult:
    """The providers with inventory (every one, one hypervisor's tree, or ``request.provider`` alone) with their
    inventories, usages and allocations, read at one generation (a UsageResult). Raises ObjectNotFound when no provider
    has the hypervisor's name; lets PlacementError (ProviderNotFound, NotFound) through.

    One listing, each provider's inventories, and the allocations of those with inventory, their usages summed from
    them (:func:`~minbw.model.providers.usages_of`: what Placement's usages answer, one read less); a provider whose
    generation moved between the listing and its reads is read again (:data:`TRIES` times at most)."""
    api = cloud.placement
    if request.provider:
        details = list(api.provider_details([api.get_provider(request.provider)], traits=False, allocations=True))
    else:
        details = [d for d in tree_details(api, request.hypervisor, traits=False, allocations=True) if d.inventories]
    return UsageResult(tuple(_usage(api, d) for d in details))


def _usage(api: Placement, detail: ProviderDetail) -> ProviderUsage:
    """The provider's usage from ``detail``, or, when its generation moved between the reads, from reads again."""
    for _ in range(TRIES - 1):
        if detail.unmoved:
            break
        provider = api.get_provider(detail.provider.uuid)
        detail = next(api.provider_details([provider], traits=False, allocations=True))
    allocations = detail.allocations or {}
    return ProviderUsage(detail.provider, detail.inventories, usages_of(detail.inventories, allocations), allocations)
