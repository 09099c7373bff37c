"""The Neutron and Placement reads of a host's enforcement check (minbw.ops.enforcement.NeutronRead): built from
openstacksdk's own resources, carried as JSON (the module's ``neutron_reads``, as Ansible passes it) and back; the
providers read for an agent are the ones neutron-lib names; a malformed read, or one lacking a provider, is one line."""
from __future__ import annotations

import json

import pytest
from neutron_lib.placement import utils as place_utils
from openstack.network.v2.agent import Agent as SdkAgent
from openstack.network.v2.network import Network as SdkNetwork
from openstack.network.v2.port import Port as SdkPort

from minbw.errors import InvalidInput
from minbw.neutron import naming
from minbw.ops.enforcement import Agent, Network, NeutronRead, Port, _providers, _record, agent_providers

PORT = "8d7c3a4e-4a1b-4c62-9d9e-0d5f4b2b9a01"
SERVER = "3f0e8b0c-8f0e-4f43-a5b0-7a3f3b0b6c11"
POLICY = "b1f2c3d4-0000-4000-8000-000000000001"
NET = "c1f2c3d4-0000-4000-8000-000000000002"


def sdk_read() -> NeutronRead:
    agent = SdkAgent(agent_type="Open vSwitch agent", host="cmp1",
                     configuration={"bridge_mappings": {"physnet1": "br-phy"},
                                    "resource_provider_hypervisors": {"br-phy": "cmp1.example"}})
    port = SdkPort(id=PORT, device_id=SERVER, network_id=NET, qos_policy_id=POLICY,
                   **{"binding:host_id": "cmp1", "binding:vnic_type": "normal", "binding:vif_type": "ovs",
                      "binding:profile": {"allocation": "a" * 8}})
    network = SdkNetwork(id=NET, **{"provider:physical_network": "physnet1"})
    return NeutronRead("cmp1", (_record(Agent, agent),), (_record(Port, port),),
                       {POLICY: ({"type": "minimum_bandwidth", "min_kbps": 1000, "direction": "egress"},)},
                       {NET: _record(Network, network)}, {SERVER: {"a" * 8: {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}},
                       {"u" * 8: None})


def test_read_from_openstacksdk_resources_survives_json():
    read = sdk_read()
    assert read.ports[0].binding_host_id == "cmp1" and read.ports[0].policy == POLICY
    assert read.networks[NET].provider_physical_network == "physnet1"
    carried = json.loads(json.dumps(read.to_dict()))
    back = NeutronRead.from_dict(carried)
    assert json.loads(json.dumps(back.to_dict())) == carried
    assert back.ports == read.ports and back.agents == read.agents and back.networks == read.networks


def test_an_agents_providers_are_neutron_libs():
    agent = sdk_read().agents[0]
    kind = naming.AGENT_KINDS[naming.OVS]
    uuid = str(place_utils.device_resource_provider_uuid(kind.namespace, "cmp1.example", "br-phy"))
    assert agent_providers(agent) == {"br-phy": (uuid, "cmp1.example:Open vSwitch agent:br-phy")}
    ovn = Agent("OVN Controller agent", "cmp2", {"chassis_name": "x", "bridge-mappings": "physnet1:br-ex"})
    uuid = str(place_utils.device_resource_provider_uuid(naming.AGENT_KINDS[naming.OVN].namespace, "cmp2", "br-ex"))
    assert agent_providers(ovn) == {"br-ex": (uuid, "cmp2:OVN Controller agent:br-ex")}
    assert agent_providers(Agent("DHCP agent", "cmp1", {})) == {}


@pytest.mark.parametrize("value, says", [
    ({"host": "cmp1"}, "got ['host']"),
    ("cmp1", "got str"),
    (dict(sdk_read().to_dict(), ports=[{"id": PORT}]), "not the Neutron and Placement reads of one host"),
])
def test_a_malformed_read_is_one_line(value, says):
    with pytest.raises(InvalidInput) as error:
        NeutronRead.from_dict(value)
    assert str(error.value).startswith("neutron_reads: ") and says in str(error.value)
    assert len(str(error.value).splitlines()) == 1


def test_a_provider_the_read_lacks_is_named_when_there_is_no_placement():
    read = sdk_read()
    with pytest.raises(InvalidInput) as error:
        _providers(read, {"br-ex": ("v" * 8, "cmp1.example:OVN Controller agent:br-ex")}, None)
    assert str(error.value).startswith("host cmp1: Placement's inventories of cmp1.example:OVN Controller agent:br-ex "
                                       "are not in its neutron_reads")
    assert _providers(read, {"br-phy": ("u" * 8, "n")}, None)["br-phy"].inventories is None


def test_another_hosts_read_is_refused_before_anything_is_read():
    from minbw.usecases.cloud import Cloud
    from minbw.usecases.enforcement import EnforcementRequest, show_enforcement

    def no_cloud():
        raise AssertionError("with neutron_reads, nothing connects to the cloud")
    with pytest.raises(InvalidInput) as error:
        show_enforcement(Cloud(no_cloud), EnforcementRequest("cmp2", ovs_db="unix:/nonexistent.sock",
                                                             neutron_reads=sdk_read().to_dict()))
    assert str(error.value) == ("neutron_reads: read for host cmp1, not cmp2: give the host's own "
                                "(neutron_reads['cmp2'] of bandwidth_enforcement_info with hosts)")


def test_mappings_neutron_has_wrong_leave_that_agent_without_providers():
    from minbw.ops.enforcement import _agent_providers
    assert _agent_providers(Agent("OVN Controller agent", "cmp2", {"bridge-mappings": "physnet1"})) == {}
    with pytest.raises(ValueError):
        agent_providers(Agent("OVN Controller agent", "cmp2", {"bridge-mappings": "physnet1"}))
