"""``minbw drift`` / ``openstack bandwidth drift`` and the ``bandwidth_drift_info`` module: the agents' ini files
vs what the agents report to Neutron vs Placement, provider by provider."""
from __future__ import annotations

from dataclasses import dataclass

from ..neutron.provider_tree import desired_state
from ..ops.agent_files import read_agent_configs
from ..reports.drift import DriftRow, drift as compare
from ..reports.providers import placement_snapshots, reported_state
from ..usecases.cloud import Cloud


@dataclass(frozen=True)
class DriftRequest:
    """``agent_configs``: ini files to compare (none: Neutron vs Placement only); ``neutron``: read what the
    agents report (off against a cloud of Placement alone)."""

    agent_configs: tuple[str, ...] = ()
    host: str | None = None
    neutron: bool = True
    option: str = "agent_configs"  # how the front end names the files (in errors)


@dataclass(frozen=True)
class DriftResult:
    rows: tuple[DriftRow, ...]

    @property
    def ok(self) -> bool:
        return all(r.agree for r in self.rows)

    def to_dict(self) -> dict:
        return {"ok": self.ok, "providers": [r.to_dict() for r in self.rows]}


def drift(cloud: Cloud, request: DriftRequest) -> DriftResult:
    """Compare what is given: the ini files (when any), Neutron's agents (when ``neutron``), and Placement."""
    ini = (desired_state(read_agent_configs(request.agent_configs, host=request.host, paths_option=request.option))
           if request.agent_configs else None)
    hosts = {p.hypervisor for p in ini.providers} if ini else None
    agent = None
    if request.neutron:
        cloud.require("network", "drift reads what the agents report from Neutron",
                      fix="leave Neutron out (minbw drift --no-neutron; the module's neutron: false) to compare "
                          "the ini files with Placement only")
        agent = reported_state(cloud.conn, hosts)
    uuids = {p.uuid for d in (ini, agent) if d for p in d.providers}
    return DriftResult(tuple(compare(ini, agent, placement_snapshots(cloud.placement, uuids))))
