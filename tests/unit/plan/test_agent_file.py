"""Unit tables for plan/agent_file.py: the edits of an agent's (or the server's) ini file, and the refusals."""
from __future__ import annotations

import pytest

from minbw.errors import ConfigError
from minbw.plan.agent_file import plan_agent_file


@pytest.mark.parametrize("kind, text, values, updates, after", [
    ("openvswitch", "[ovs]\nbridge_mappings = physnet0:br-test\n",
     {"resource_provider_bandwidths": {"br-test": {"egress": 1500, "ingress": 1500}}},
     {"resource_provider_bandwidths": "br-test:1500:1500"},
     "[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = br-test:1500:1500\n"),
    ("openvswitch", "[ovs]\nbridge_mappings = physnet0:br-test, public:br-ex\n",
     {"bridge_mappings": {"physnet0": "br-test", "public": "br-ex"}}, {},
     "[ovs]\nbridge_mappings = physnet0:br-test, public:br-ex\n"),
    ("openvswitch", "[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = br-test:1:1\n",
     {"resource_provider_bandwidths": {}}, {"resource_provider_bandwidths": None},
     "[ovs]\nbridge_mappings = physnet0:br-test\n"),
    ("neutron_server", "[DEFAULT]\nservice_plugins = router\n", {}, {"service_plugins": "router,qos,placement"},
     "[DEFAULT]\nservice_plugins = router,qos,placement\n"),
    ("neutron_server", "[DEFAULT]\nservice_plugins = neutron.services.qos.qos_plugin.QoSPlugin,placement\n", {}, {},
     "[DEFAULT]\nservice_plugins = neutron.services.qos.qos_plugin.QoSPlugin,placement\n"),
    ("ml2", "[ml2]\n", {}, {"extension_drivers": "qos"}, "[ml2]\nextension_drivers = qos\n"),
])
def test_agent_file_plan(kind, text, values, updates, after):
    edit = plan_agent_file("f.ini", text, kind, values, host="devstack0")
    assert (dict(edit.updates), edit.after, edit.changed) == (updates, after, text != after)


@pytest.mark.parametrize("kind, text, values, match", [
    ("openvswitch", "[ovs]\n", {"resource_provider_bandwidths": {"br-x": {"egress": 1}}}, "missing from device mappings"),
    ("sriov", "[sriov_nic]\n", {"bridge_mappings": {"p": "b"}}, "not an option of the NIC Switch agent"),
    ("ml2", "[ml2]\n", {"bridge_mappings": {"p": "b"}}, "not an option of agent_type ml2"),
    ("openvswitch", "[ovs]\nbridge_mappings = p:b\n",
     {"resource_provider_bandwidths": {"b": {"egress": 5}}, "resource_provider_inventory_defaults": {"reserved": 9}},
     "Placement would refuse"),
])
def test_agent_file_plan_refusals(kind, text, values, match):
    with pytest.raises(ConfigError, match=match):
        plan_agent_file("f.ini", text, kind, values, host="devstack0")
