"""Read-only reports of the bandwidth providers: what Placement holds (providers with traits, inventories,
usage) and what Neutron's agents report."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

from minbw.errors import ObjectNotFound
from minbw.model.providers import SHARING_TRAIT, DesiredState, ProviderDetail, ProviderReport, snapshot
from minbw.neutron import naming
from minbw.placement.client import Placement
from minbw.neutron.provider_tree import swept_agents
from minbw.readers.placement import Reader

if TYPE_CHECKING:  # imported where the agents are read: the Placement reports (usage show) do not parse them
    from minbw.neutron.agentconf import AgentConfig


def provider_report(
    api: Placement, hypervisor: str | None = None, *, traits: bool = True, usages: bool = True
) -> list[ProviderReport]:
    """Every provider (or one hypervisor's tree) with traits, inventories and usages, in tree order (``traits``,
    ``usages`` False: not read, empty). Raises ObjectNotFound when no provider has the hypervisor's name; lets
    PlacementError through."""
    return [
        ProviderReport(d.provider, tuple(sorted(d.traits)), dict(d.inventories), dict(d.usages or {}))
        for d in tree_details(api, hypervisor, usages=usages, traits=traits)
    ]


def tree_details(api: Placement, hypervisor: str | None = None, **reads: bool) -> list[ProviderDetail]:
    """Every provider (or one hypervisor's tree) with what ``reads`` asks of :meth:`Placement.provider_details`
    (``traits``, ``inventories``, ``usages``, ``allocations``), in tree order. Raises ObjectNotFound when no provider
    has the hypervisor's name; lets PlacementError through."""
    if hypervisor:
        roots = api.list_providers(name=hypervisor)
        if not roots:
            raise ObjectNotFound(f"no resource provider named {hypervisor!r}")
        provs = api.list_providers(in_tree=roots[0].uuid)
    else:
        provs = api.list_providers()
    return _tree_order(list(api.provider_details(provs, **reads)))


def sharing_providers(api: Placement) -> dict[str, frozenset[str]]:
    """Placement's sharing providers (trait ``MISC_SHARES_VIA_AGGREGATE``), each with the roots of the trees
    it serves: those with a provider in one of its aggregates, and its own (as Placement's
    ``anchors_for_sharing_providers``). One listing, then two calls per sharing provider."""
    out = {}
    for s in api.list_providers(required=SHARING_TRAIT):
        aggregates, _generation = api.get_provider_aggregates(s.uuid)
        members = api.list_providers(member_of="in:" + ",".join(sorted(aggregates))) if aggregates else []
        out[s.uuid] = frozenset({p.root_uuid for p in members} | {s.root_uuid})
    return out


_Read = TypeVar("_Read", ProviderReport, ProviderDetail)


def _tree_order(provs: list[_Read]) -> list[_Read]:
    children: dict = {}
    for p in provs:
        children.setdefault(p.provider.parent_uuid, []).append(p)
    known = {p.provider.uuid for p in provs}
    ordered: list[_Read] = []

    def walk(p):
        ordered.append(p)
        for c in sorted(children.get(p.provider.uuid, []), key=lambda x: x.provider.name):
            walk(c)

    for p in sorted(provs, key=lambda x: x.provider.name):
        if p.provider.parent_uuid not in known:
            walk(p)
    return ordered


def reported_configs(conn, hosts: Iterable[str] | None = None) -> list[AgentConfig]:
    """What the bandwidth-reporting agents' heartbeats stand for (Neutron's agent list; OVS and SR-IOV: OVN
    chassis report no bandwidth there)."""
    return agent_reports(conn, hosts)[0]


def agent_reports(conn, hosts: Iterable[str] | None = None) -> tuple[list[AgentConfig], list[str]]:
    """One listing of Neutron's agents: what the bandwidth-reporting agents' heartbeats stand for (OVS, SR-IOV), and
    the hosts of the OVN controller agents (an ML2/OVN cloud: its bandwidth is in the chassis options, not here)."""
    from minbw.neutron.agentconf import config_from_report

    hosts = set(hosts or ())
    configs, ovn_hosts = [], []
    for a in conn.network.agents():
        kind = naming.AGENT_KIND_BY_TYPE.get(a.agent_type)
        if kind is None or (hosts and a.host not in hosts):
            continue
        if kind.key == naming.OVN:  # the controller and the gateway agents
            ovn_hosts.append(a.host)
        elif kind.key in naming.INI_KINDS:
            configs.append(config_from_report(a.agent_type, a.host, a.configuration or {}))
    return configs, sorted(set(ovn_hosts))


def placement_snapshots(
    api: Placement | Reader, uuids: Iterable[str], sides: Iterable[DesiredState | None] = ()
) -> tuple[dict[str, dict], frozenset[str]]:
    """uuid → snapshot of those providers that exist in Placement (agents' parent shown as root:NAME), with
    the device providers under the agents ``sides`` sweep (OVN) that no side describes: stale ones; and the names
    of Placement's root providers (the compute nodes the agents' providers hang under). One listing, then their
    traits and inventories (from the provider cache where it holds them)."""
    reader = api if isinstance(api, Reader) else Reader(api)
    wanted = set(uuids)
    providers = reader.listing()
    by_uuid = {p.uuid: p for p in providers}
    swept = set().union(*(swept_agents(d, providers) for d in sides if d is not None))
    wanted |= {p.uuid for p in providers if p.parent_uuid in swept}
    out = {}
    for d in reader.details([p for p in providers if p.uuid in wanted], usages=False).values():
        p = d.provider
        parent = by_uuid.get(p.parent_uuid or "")
        shown = f"root:{parent.name}" if parent is not None and parent.parent_uuid is None else p.parent_uuid
        out[p.uuid] = snapshot(p.name, shown, d.traits, d.inventories)
    reader.save()
    return dict(sorted(out.items())), frozenset(p.name for p in providers if p.parent_uuid is None)
