"""``minbw drift``: the agents' configuration vs what Neutron reports from it vs Placement.

OVS / SR-IOV: the agents' ini files, the agents' heartbeats in Neutron's agent list, Placement. ML2/OVN: the
chassis options on the computes (their Open vSwitch ``external_ids``, or a file) on the "ini" side, and the
southbound ``Chassis`` rows on the "agent" side: they are what Neutron's OVN placement extension reads
(Neutron's agent list carries no bandwidth for OVN chassis)."""
from __future__ import annotations

from collections.abc import Iterable

from minbw.neutron import naming
from minbw.neutron.agentconf import AgentConfig, config_from_report
from minbw.neutron.ovn import Chassis
from minbw.ops import ovn
from minbw.ops.agent_files import read_agent_configs
from minbw.placement.client import Placement
from minbw.plan.drift import DriftRow, drift
from minbw.plan.providers import snapshot, swept_agents


def reported_configs(conn, hosts: Iterable[str] | None = None) -> list[AgentConfig]:
    """What the bandwidth-reporting agents' heartbeats stand for (Neutron's agent list; OVS and SR-IOV)."""
    hosts = set(hosts or ())
    return [config_from_report(a.agent_type, a.host, a.configuration or {})
            for a in conn.network.agents() if a.agent_type in naming.AGENT_KIND_BY_TYPE
            and naming.AGENT_KIND_BY_TYPE[a.agent_type].key in naming.INI_KINDS
            and (not hosts or a.host in hosts)]


def reported_state(conn, hosts: Iterable[str] | None = None):
    """The desired state the agents' heartbeats stand for."""
    return ovn.desired(reported_configs(conn, hosts))


def placement_snapshots(api: Placement, uuids: Iterable[str], sides=()) -> dict[str, dict]:
    """uuid → snapshot of those providers that exist in Placement (agents' parent shown as root:NAME), with
    the device providers under the agents ``sides`` sweep (OVN) that no side describes: stale ones."""
    wanted = set(uuids)
    providers = api.list_providers()
    by_uuid = {p.uuid: p for p in providers}
    swept = set().union(*(swept_agents(d, providers) for d in sides if d is not None))
    wanted |= {p.uuid for p in providers if p.parent_uuid in swept}
    out = {}
    for d in api.provider_details([p for p in providers if p.uuid in wanted]):
        p = d.provider
        parent = by_uuid.get(p.parent_uuid)
        shown = f"root:{parent.name}" if parent is not None and parent.parent_uuid is None else p.parent_uuid
        out[p.uuid] = snapshot(p.name, shown, d.traits, d.inventories)
    return out


def run_drift(conn=None, api: Placement | None = None, *, agent_configs: Iterable[str] = (), host: str | None = None,
              neutron: bool = True, chassis: Iterable[Chassis] = (),
              southbound: Iterable[Chassis] | None = None) -> list[DriftRow]:
    """Compare what is given: the ini files (``agent_configs``) and OVN chassis options as the computes hold
    them (``chassis``); Neutron's agents (when ``neutron`` and a connection) and the southbound chassis
    (``southbound``, what Neutron's OVN extension reads); Placement (when ``api``)."""
    chassis = list(chassis)
    configs = read_agent_configs(agent_configs, host=host) if agent_configs else []
    ini = ovn.desired(configs, chassis) if (agent_configs or chassis) else None
    hosts = {p.hypervisor for p in ini.providers} if ini else None
    agent = None
    # the heartbeats carry OVS / SR-IOV bandwidth only: with OVN chassis alone they have nothing to compare
    heartbeats_wanted = neutron and conn is not None and (bool(configs) or not chassis)
    if heartbeats_wanted or southbound is not None:
        heartbeats = reported_configs(conn, hosts) if heartbeats_wanted else []
        sb = list(southbound or ())
        if chassis:  # the same chassis on both sides
            names = {c.name for c in chassis}
            sb = [c for c in sb if c.name in names]
        agent = ovn.desired(heartbeats, sb, complete=southbound is not None and not chassis)
    uuids = {p.uuid for d in (ini, agent) if d for p in d.providers}
    placement = placement_snapshots(api, uuids, (ini, agent)) if api is not None else None
    return drift(ini, agent, placement)
