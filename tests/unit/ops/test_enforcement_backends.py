"""Which data plane minbw enforcement show reads on a host (minbw.ops.enforcement.pick_backend): the host's agent in
Neutron's agent list (openstacksdk's own Agent resources, as conn.network.agents gives them), or the one asked for."""
from __future__ import annotations

import pytest
from openstack.network.v2.agent import Agent

from minbw.errors import InvalidInput
from minbw.ops.enforcement import pick_backend


def agents(*types: str) -> list[Agent]:
    return [Agent(id=f"a{i}", agent_type=t, host="h") for i, t in enumerate(types)]


@pytest.mark.parametrize("types, backend", [
    (("Open vSwitch agent", "DHCP agent"), "openvswitch"),
    (("NIC Switch agent",), "sriov"),
    (("OVN Controller agent", "OVN Metadata agent"), "ovn"),
    (("OVN Controller Gateway agent",), "ovn"),
])
def test_the_hosts_one_agent(types, backend):
    assert pick_backend("h", agents(*types))[0] == backend


def test_several_ask_for_a_choice_and_a_choice_must_be_there():
    both = agents("Open vSwitch agent", "NIC Switch agent")
    with pytest.raises(InvalidInput) as error:
        pick_backend("h", both)
    assert str(error.value) == ("host h has Open vSwitch agent and NIC Switch agent: choose the data plane to check "
                                "with --backend openvswitch or sriov")
    assert pick_backend("h", both, "sriov")[1].agent_type == "NIC Switch agent"
    with pytest.raises(InvalidInput) as error:
        pick_backend("h", both, "ovn")
    assert str(error.value) == ("host h: no OVN Controller agent in Neutron's agent list (agents there: NIC Switch "
                                "agent, Open vSwitch agent); backend ovn checks ML2/OVN (OVN Controller agent)")
    with pytest.raises(InvalidInput) as error:
        pick_backend("h", agents("DHCP agent"))
    assert str(error.value) == ("host h: no agent minbw enforcement show reads in Neutron's agent list (agents there: "
                                "DHCP agent); it checks the Open vSwitch agent, the NIC Switch agent (SR-IOV) and OVN "
                                "Controller agents")
