"""A Neutron port's request beside Neutron's own: typed to the edge; its dict is today's, keys in the same order."""
from minbw.neutron.port_request import Segment, build_port_request
from minbw.neutron.qos import MIN_BW, QosRule
from minbw.ops.neutron import ComparedRequest
from minbw.usecases.port_request import PortRequestResult

PORT = "9f9d8e59-2b7c-4e4f-8a0e-6c1f7a3b5d21"
OURS = build_port_request(PORT, [QosRule("2a4c1f8e-0d6b-4b8e-9f3a-5c7d9e1b3a50", MIN_BW, "egress", 1000)], [Segment("vlan", "physnet0")], "normal")
OTHER = build_port_request(PORT, [QosRule("2a4c1f8e-0d6b-4b8e-9f3a-5c7d9e1b3a50", MIN_BW, "egress", 2000)], [Segment("vlan", "physnet0")], "normal")


def test_the_comparison_and_its_dict():
    same = ComparedRequest(PORT, OURS, OURS, True)
    assert list(same.to_dict()) == ["neutron_resource_request", "matches_neutron"]
    assert same.to_dict() == {"neutron_resource_request": OURS.to_neutron(), "matches_neutron": True}
    assert ComparedRequest(PORT, OURS, OTHER, True).matches_neutron is False
    assert ComparedRequest(PORT, OURS, None, False).to_dict() == {"neutron_resource_request": None,
                                                                  "matches_neutron": None}
    assert ComparedRequest(PORT, None, None, True).matches_neutron is True  # both request nothing


def test_the_results_dict_keys_in_order():
    compared = PortRequestResult(PORT, OURS, ComparedRequest(PORT, OURS, OURS, True)).to_dict()
    alone = PortRequestResult(PORT, OURS).to_dict()
    assert list(compared) == [*alone, "neutron_resource_request", "matches_neutron"]
    assert list(alone)[-1] == "port_id" and alone["port_id"] == PORT
