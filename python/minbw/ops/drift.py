"""``minbw drift``: the agents' ini files vs what the agents report to Neutron vs Placement."""
from __future__ import annotations

from collections.abc import Iterable

from minbw.neutron import naming
from minbw.neutron.agentconf import config_from_report
from minbw.neutron.provider_tree import desired_state
from minbw.ops.agent_files import read_agent_configs
from minbw.placement.client import Placement
from minbw.plan.drift import DriftRow, drift
from minbw.plan.providers import snapshot


def reported_state(conn, hosts: Iterable[str] | None = None):
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


def run_drift(conn=None, api: Placement | None = None, *, agent_configs: Iterable[str] = (), host: str | None = None,
              neutron: bool = True) -> list[DriftRow]:
    """Compare what is given: the ini files (when ``agent_configs``), Neutron's agents (when ``neutron``
    and a connection), and Placement (when ``api``)."""
    ini = desired_state(read_agent_configs(agent_configs, host=host)) if agent_configs else None
    hosts = {p.hypervisor for p in ini.providers} if ini else None
    agent = reported_state(conn, hosts) if neutron and conn is not None else None
    uuids = {p.uuid for d in (ini, agent) if d for p in d.providers}
    placement = placement_snapshots(api, uuids) if api is not None else None
    return drift(ini, agent, placement)
