"""How many more servers of one shape fit, read from Placement: the providers with traits,
inventories and usages, counted by :func:`minbw.plan.capacity.capacity`."""
from __future__ import annotations

from minbw.errors import InvalidInput
from minbw.placement.client import Placement
from minbw.plan.capacity import CapacityReport, CapacityRequest, capacity


def capacity_report(api: Placement, request: CapacityRequest, hypervisor: str | None = None,
                    option: str = "hypervisor") -> CapacityReport:
    """Every host (or the one named ``hypervisor``; ``option`` names it in an error), counted now."""
    if hypervisor:
        roots = api.list_providers(name=hypervisor)
        if not roots:
            known = sorted(p.name for p in api.list_providers() if p.parent_uuid is None)
            raise InvalidInput(f"{option}: no compute node (root resource provider) named {hypervisor!r} in "
                               f"Placement. Fix: use one of {', '.join(known) or '(none: Placement has no providers)'}.")
        if roots[0].parent_uuid is not None:
            raise InvalidInput(f"{option}: {hypervisor!r} is not a compute node: it has a parent provider. Fix: "
                               f"name the root provider (the hypervisor name nova-compute reports).")
        providers = api.list_providers(in_tree=roots[0].uuid)
    else:
        providers = api.list_providers()
    return capacity(api.provider_details(providers, usages=True), request)
