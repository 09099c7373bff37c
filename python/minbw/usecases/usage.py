"""``minbw usage show``: usage and allocations of the providers with inventory."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.readers.providers import provider_report
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class UsageRequest:
    hypervisor: str | None = None
    provider: str | None = None


@dataclass(frozen=True)
class UsageResult:
    providers: tuple[dict, ...]  # uuid, name, generation, inventories, usages, allocations

    def to_dict(self) -> list[dict]:
        """Each provider's uuid, name, generation, usages and allocations, a list of dicts."""
        return [{k: p[k] for k in ("uuid", "name", "generation", "usages", "allocations")} for p in self.providers]


def usage(cloud: Cloud, request: UsageRequest) -> UsageResult:
    """The providers with inventory (every one, one hypervisor's tree, or ``request.provider`` alone) with their
    inventories, usages and allocations, each read again (a UsageResult). Raises ObjectNotFound when no provider has
    the hypervisor's name; lets PlacementError (ProviderNotFound, NotFound) through."""
    api = cloud.placement
    if request.provider:
        p = api.get_provider(request.provider)
        provs = [{"uuid": p.uuid, "name": p.name, "generation": p.generation}]
    else:
        provs = [p for p in provider_report(api, request.hypervisor) if p["inventories"]]
    out = []
    for p in provs:
        provider = api.get_provider(p["uuid"])
        out.append(
            {
                "uuid": provider.uuid,
                "name": provider.name,
                "generation": provider.generation,
                "inventories": api.get_inventories(provider.uuid)[0],
                "usages": api.provider_usages(provider.uuid),
                "allocations": api.provider_allocations(provider.uuid),
            }
        )
    return UsageResult(tuple(out))
