"""Read-only reports of what Placement holds (providers with traits, inventories, usage)."""
from __future__ import annotations

from minbw.errors import ObjectNotFound
from minbw.placement.client import Placement


def provider_report(api: Placement, hypervisor: str | None = None) -> list[dict]:
    """Every provider (or one hypervisor's tree) with traits, inventories and usages, in tree order."""
    if hypervisor:
        roots = api.list_providers(name=hypervisor)
        if not roots:
            raise ObjectNotFound(f"no resource provider named {hypervisor!r}")
        provs = api.list_providers(in_tree=roots[0].uuid)
    else:
        provs = api.list_providers()
    out = [{"uuid": p.uuid, "name": p.name, "generation": p.generation, "root_provider_uuid": p.root_uuid,
            "parent_provider_uuid": p.parent_uuid, "traits": sorted(d.traits),
            "inventories": dict(d.inventories), "usages": dict(d.usages)}
           for d in api.provider_details(provs, usages=True) for p in (d.provider,)]
    return _tree_order(out)


def _tree_order(provs: list[dict]) -> list[dict]:
    children: dict = {}
    for p in provs:
        children.setdefault(p["parent_provider_uuid"], []).append(p)
    known = {p["uuid"] for p in provs}
    ordered: list[dict] = []

    def walk(p):
        ordered.append(p)
        for c in sorted(children.get(p["uuid"], []), key=lambda x: x["name"]):
            walk(c)
    for p in sorted(provs, key=lambda x: x["name"]):
        if p["parent_provider_uuid"] not in known:
            walk(p)
    return ordered
