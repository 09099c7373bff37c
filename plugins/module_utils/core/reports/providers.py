"""Read-only reports of the bandwidth providers: what Placement holds (providers with traits, inventories,
usage) and what Neutron's agents report."""
from __future__ import annotations

from collections.abc import Iterable

from ..errors import ObjectNotFound
from ..model.providers import DesiredState, snapshot
from ..neutron import naming
from ..neutron.agentconf import config_from_report
from ..neutron.provider_tree import desired_state
from ..placement.client import Placement


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


def reported_state(conn, hosts: Iterable[str] | None = None) -> DesiredState:
    """The desired state the bandwidth-reporting agents' heartbeats stand for (Neutron's agent list)."""
    hosts = set(hosts or ())
    configs = [config_from_report(a.agent_type, a.host, a.configuration or {})
               for a in conn.network.agents() if a.agent_type in naming.AGENT_KIND_BY_TYPE
               and (not hosts or a.host in hosts)]
    return desired_state(configs)


def placement_snapshots(api: Placement, uuids: Iterable[str]) -> dict[str, dict]:
    """uuid → snapshot of those providers that exist in Placement (agents' parent shown as root:NAME)."""
    wanted = set(uuids)
    providers = api.list_providers()
    by_uuid = {p.uuid: p for p in providers}
    out = {}
    for d in api.provider_details([p for p in providers if p.uuid in wanted]):
        p = d.provider
        parent = by_uuid.get(p.parent_uuid)
        shown = f"root:{parent.name}" if parent is not None and parent.parent_uuid is None else p.parent_uuid
        out[p.uuid] = snapshot(p.name, shown, d.traits, d.inventories)
    return out
