"""Drift between ini files, agents' reports and Placement (plan/drift.py, agentconf.config_from_report)."""
from __future__ import annotations

import pytest

from minbw.errors import ConfigError
from minbw.neutron.agentconf import config_from_report, load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.reports.drift import drift_rows, snapshots

OVS = """[DEFAULT]
host = devstack0
[ovs]
bridge_mappings = physnet0:br-test,public:br-ex
resource_provider_bandwidths = br-test:1500:1500,br-ex::1
resource_provider_packet_processing_with_direction = :1000:2000
"""
SRIOV = """[DEFAULT]
host = devstack0
[sriov_nic]
physical_device_mappings = physnet0:ens5,physnet1:ens6
resource_provider_bandwidths = ens5:100000:100000,ens6:5:
resource_provider_inventory_defaults = reserved:1,allocation_ratio:2.0
"""
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"


def state(*texts):
    return desired_state([load_agent_ini(t, source=f"f{i}.ini") for i, t in enumerate(texts)])


@pytest.mark.parametrize("text", [OVS, SRIOV])
def test_a_report_stands_for_the_same_providers_as_its_ini(text):
    cfg = load_agent_ini(text, source="x.ini")
    reported = config_from_report(cfg.agent_kind.agent_type, cfg.host, cfg.configurations())
    assert snapshots(desired_state([reported])) == snapshots(desired_state([cfg]))


def test_agreeing_sides_show_no_drift():
    ini = state(OVS, SRIOV)
    rows = drift_rows(ini, ini, snapshots(ini))
    assert rows and all(r.agree for r in rows)
    assert {s for r in rows for s in r.sides} == {"ini", "agent", "placement"}


def test_each_kind_of_drift_is_named():
    ini = state(OVS, SRIOV)
    agent = state(OVS.replace("br-test:1500:1500", "br-test:3000:1500"), SRIOV)
    placement = snapshots(ini)
    placement.pop(BR_TEST)
    rows = {r.uuid: r for r in drift_rows(ini, agent, placement)}
    row = rows[BR_TEST]
    assert not row.agree and row.differences[0] == "missing from placement"
    # each difference is a sentence naming the class, the field and every side's value
    assert row.differences[1] == "NET_BW_EGR_KILOBIT_PER_SEC total: ini 1500, agent 3000"
    assert sum(not r.agree for r in rows.values()) == 1
    # a side not read is not a side: only ini vs placement here
    only = drift_rows(ini, None, placement)
    assert {s for r in only for s in r.sides} == {"ini", "placement"}


def test_report_of_an_agent_without_bandwidth_is_refused():
    with pytest.raises(ConfigError, match="reports no bandwidth"):
        config_from_report("DHCP agent", "devstack0", {})


def test_a_host_without_a_compute_node_is_left_out_unless_it_has_bandwidth():
    """Neutron's network nodes: their Open vSwitch agents report a hypervisor for each mapped bridge and rp_tunnelled
    (their own name), which has no root provider. Without bandwidth there is nothing to compare (Neutron's plugin
    cannot write their agent provider either); with it each row says why it is missing."""
    from minbw.reports.drift import without_compute_node
    network = "[DEFAULT]\nhost = network-1\n[ovs]\nbridge_mappings = physnet0:br-net\n"
    ini = state(OVS, network, network.replace("network-1", "network-2") + "resource_provider_bandwidths = br-net:9:9\n")
    placement = {u: s for u, s in snapshots(ini).items() if not s["name"].startswith("network-")}
    rows = drift_rows(ini, ini, placement)
    assert sorted(r.name for r in rows if not r.agree) == [
        "network-1:Open vSwitch agent", "network-2:Open vSwitch agent", "network-2:Open vSwitch agent:br-net"]
    kept = without_compute_node(rows, (ini, ini), roots={"devstack0"})
    assert [r for r in kept if r.name.startswith("devstack0")] == [r for r in rows if r.name.startswith("devstack0")]
    assert [(r.name, r.differences[-1].split(":")[0]) for r in kept if not r.agree] == [
        ("network-2:Open vSwitch agent", "no compute node provider 'network-2' in Placement"),
        ("network-2:Open vSwitch agent:br-net", "no compute node provider 'network-2' in Placement")]
    # a root of that name (a network node that runs nova-compute too): compared as any compute
    assert without_compute_node(rows, (ini, ini), roots={"devstack0", "network-1", "network-2"}) == rows
