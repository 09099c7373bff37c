"""minbw doctor's judgments (minbw.reports.doctor), one table each: what a cloud's facts say, and what to fix."""
from __future__ import annotations

import pytest

from minbw.nova.owner import ComputeService
from minbw.reports import doctor as d

OVS = "Open vSwitch agent"
BW = {"resource_provider_bandwidths": {"br-x": {"egress": 1000, "ingress": 1000}}, "extensions": ["qos"]}


@pytest.mark.parametrize("server, status, said", [
    ((1, 35), d.FAIL, "needs 1.36"),
    ((1, 36), d.WARN, "no any-traits (1.39)"),
    ((1, 39), d.OK, "up to 1.39"),
])
def test_placement_version(server, status, said):
    check = d.placement_version(server)
    assert check.status == status and said in check.detail and bool(check.fix) == (status != d.OK)


def test_neutron_extensions_missing_ones_say_how_bad():
    checks = {c.name: c for c in d.neutron_extensions(["qos", "port-resource-request"])}
    assert checks["neutron extension qos"].status == d.OK
    assert checks["neutron extension port-resource-request"].status == d.OK
    assert checks["neutron extension port-resource-request-groups"].status == d.WARN
    assert checks["neutron extension qos-pps-minimum"].status == d.WARN
    assert d.neutron_extensions([])[0].status == d.FAIL and "service_plugins" in d.neutron_extensions([])[0].fix


@pytest.mark.parametrize("agents, statuses", [
    ([d.Agent(OVS, "h0", True, BW, None)],
     {"agents reporting bandwidth": d.OK, "agents alive": d.OK, "agents' qos extension": d.OK,
      "agents' resources_synced": d.OK}),
    ([d.Agent(OVS, "h0", False, BW, True), d.Agent(OVS, "h1", True, {**BW, "extensions": []}, False)],
     {"agents reporting bandwidth": d.OK, "agents alive": d.FAIL, "agents' qos extension": d.WARN,
      "agents' resources_synced": d.WARN}),
    ([d.Agent(OVS, "h0", True, {}, None)],
     {"agents reporting bandwidth": d.FAIL, "agents alive": d.OK, "agents' qos extension": d.OK,
      "agents' resources_synced": d.OK}),
    ([d.Agent("OVN Controller agent", "h0", True, {}, None)], {"agents reporting bandwidth": d.WARN}),
])
def test_agents(agents, statuses):
    assert {c.name: c.status for c in d.agents(agents)} == statuses


def test_who_writes_the_providers():
    plugin = d.provider_writers([d.Agent(OVS, "h0", True, BW, True)])
    assert "Neutron's placement plugin writes" in plugin.detail and "do not run minbw provider sync" in plugin.detail
    assert "placement plugin is off" in d.provider_writers([d.Agent(OVS, "h0", True, BW, None)]).detail
    assert d.provider_writers([]).status == d.SKIP


def test_nova():
    assert d.nova_services([]).status == d.FAIL
    assert d.nova_services([ComputeService("h0"), ComputeService("h1", state="down", disabled=True)]).status == d.WARN
    assert d.compute_microversion("2.71").status == d.FAIL and d.compute_microversion("2.96").status == d.OK
    assert d.compute_versions(True, "x").status == d.OK and d.compute_versions(False, "y").status == d.SKIP


def test_the_worst_status_ignores_skipped_checks():
    assert d.worst([d.Check("a", d.OK, ""), d.Check("b", d.SKIP, "")]) == d.OK
    assert d.worst([d.Check("a", d.WARN, ""), d.Check("b", d.FAIL, "")]) == d.FAIL
    assert d.worst([]) == d.OK
