"""Overrides for kolla-ansible / openstack-ansible: validated as agent_config validates, read back as given."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from minbw.errors import ConfigError
from minbw.neutron import agentconf as ac
from minbw.neutron.overrides import agent_sections, render_ini, server_sections

SEED = {"bridge_mappings": {"public": "br-ex", "physnet0": "br-test"},
        "resource_provider_bandwidths": {"br-test": {"egress": 1500, "ingress": 1500}, "br-ex": {"ingress": 1}}}


def test_openvswitch_sections_and_the_kolla_ini_read_back():
    sections = agent_sections("openvswitch", SEED)
    assert sections == {"ovs": {"bridge_mappings": "public:br-ex,physnet0:br-test",
                                "resource_provider_bandwidths": "br-test:1500:1500,br-ex::1"}}
    text = render_ini(sections)
    assert ac.read_ini(text) == sections
    # the project's own ini reader makes the same agent of the kolla file as of the values
    assert ac.load_agent_ini(text, source="kolla", host="cmp1") == ac.load_agent_values("openvswitch", SEED, "cmp1",
                                                                                        source="kolla")


def test_sriov_sections():
    values = {"physical_device_mappings": {"physnet0": ["ens5", "ens6"]},
              "resource_provider_bandwidths": {"ens5": {"egress": 10}, "ens6": {"egress": 20}},
              "resource_provider_inventory_defaults": {"reserved": 1}}
    assert agent_sections("sriov", values) == {"sriov_nic": {
        "physical_device_mappings": "physnet0:ens5,physnet0:ens6",
        "resource_provider_bandwidths": "ens5:10:,ens6:20:", "resource_provider_inventory_defaults": "reserved:1"}}


@pytest.mark.parametrize("kind, values, message", [
    ("openvswitch", {"bridge_mappings": {"p": "br-a"}, "resource_provider_bandwidths": {"br-b": {"egress": 1}}},
     "resource_provider_bandwidths: Invalid resource_provider_bandwidths: Device name br-b is missing from device mappings"),
    ("openvswitch", {"bridge_mappings": {"p": "br-a"}, "resource_provider_bandwidths": {"br-a": {"egress": -1}}},
     "Expected: non-negative integer value, got: -1"),
    ("sriov", {"physical_device_mappings": {"p": "ens5"}, "resource_provider_bandwidths": {"ens5": {"egress": 5}},
               "resource_provider_inventory_defaults": {"reserved": 10}},
     "Placement would refuse the NET_BW_EGR_KILOBIT_PER_SEC inventory of device ens5"),
    ("sriov", {"bridge_mappings": {"p": "br-a"}}, "bridge_mappings: not an option of the NIC Switch agent"),
    ("linuxbridge", {}, "agent_type: agent_type must be one of openvswitch, sriov"),
])
def test_bad_values_name_the_option(kind, values, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        agent_sections(kind, values)


def test_server_lists():
    assert server_sections("neutron_server", "router,metering") == {
        "DEFAULT": {"service_plugins": "router,metering,qos,placement"}}
    assert server_sections("neutron_server", "router, qos, placement") == {
        "DEFAULT": {"service_plugins": "router, qos, placement"}}
    assert server_sections("ml2", "") == {"ml2": {"extension_drivers": "qos"}}
    with pytest.raises(ConfigError, match="neutron_server, ml2"):
        server_sections("openvswitch", "")


names = st.text(st.sampled_from("abcxyz_-.0"), min_size=1, max_size=8)
raw = st.text(st.sampled_from("abc:,-_ 01"), max_size=12).map(str.strip)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(names, st.dictionaries(names, raw, max_size=4), max_size=3))
def test_render_ini_reads_back(sections):
    assert ac.read_ini(render_ini(sections)) == sections


def test_render_ini_refuses_what_would_not_read_back():
    with pytest.raises(ConfigError, match="one-line string"):
        render_ini({"ovs": {"bridge_mappings": "a:b\nc = d"}})
    with pytest.raises(ConfigError, match="does not read back"):
        render_ini({"ovs": {"a=b": "c"}})
