"""``minbw usage show``: usage and allocations of the providers with inventory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minbw.model.providers import Provider

from minbw.readers.providers import provider_report
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class UsageRequest:
    hypervisor: str | None = None
    provider: str | None = None


@dataclass(frozen=True)
class ProviderUsage:
    """A provider with inventory, read again: its inventories, usages and allocations (consumer →
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
    inventories, usages and allocations, each read again (a UsageResult). Raises ObjectNotFound when no provider has
    the hypervisor's name; lets PlacementError (ProviderNotFound, NotFound) through."""
    api = cloud.placement
    if request.provider:
        uuids = [api.get_provider(request.provider).uuid]
    else:
        # which providers have inventory, in tree order: their inventories alone (each is read again below)
        listed = provider_report(api, request.hypervisor, traits=False, usages=False)
        uuids = [p.provider.uuid for p in listed if p.inventories]
    out = []
    for uuid in uuids:
        provider = api.get_provider(uuid)
        out.append(
            ProviderUsage(
                provider,
                api.get_inventories(provider.uuid)[0],
                api.provider_usages(provider.uuid),
                api.provider_allocations(provider.uuid),
            )
        )
    return UsageResult(tuple(out))
