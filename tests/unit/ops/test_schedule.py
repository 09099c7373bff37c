"""The ports-first workflow's pure parts: input checked before any call, and the host a candidate binds to."""
import pytest

from minbw.errors import InvalidInput
from minbw.ops.schedule import _binding_host, schedule_ports
from minbw.plan.allocations import ClaimOp


@pytest.mark.parametrize("kwargs, message", [
    ({"max_hosts": 0}, "max_hosts must be at least 1, got 0"),
    ({"consumer": "vm0"}, "consumer 'vm0' is not a UUID. Fix: pass a UUID"),
])
def test_bad_input_is_refused_before_anything_is_read_or_written(kwargs, message):
    # conn and api are None: any call to Neutron or Placement would raise AttributeError instead
    with pytest.raises(InvalidInput, match=message):
        schedule_ports(None, None, ["p"], {"VCPU": 1}, **kwargs)


def test_a_candidate_binds_to_the_agent_host_its_bandwidth_provider_names():
    op = ClaimOp("claim", host="root-uuid", mapping={"g1": ["rp-br"]})
    names = {"rp-br": "compute-0.example.org:Open vSwitch agent:br-test", "root-uuid": "compute-0"}
    # the hypervisor (root provider) name may differ from the agent host (neutron bug 1853840)
    assert _binding_host(names, op) == "compute-0.example.org"
    assert _binding_host(names, ClaimOp("claim", host="root-uuid", mapping={"": ["root-uuid"]})) == "compute-0"


def _scheduled(**kwargs):
    from minbw.neutron.segments import SegmentChoice
    from minbw.ops.schedule import Binding, PortPlan, Scheduled

    port = PortPlan("p1", "port-one", "net", (), None, ("a note",))
    return Scheduled(
        "c-uuid", (port,), (SegmentChoice("p1", ("seg1",), ("agg1",), (("seg0", "full"),)),), "compute-0",
        (Binding("p1", "port-one", "compute-0", {}),), **kwargs)


def test_a_claimed_schedule_renders_todays_dict():
    from minbw.model.claims import Tried

    done = _scheduled(attempts=(Tried("h0", "binding-failed", "dead"), Tried("compute-0", "claimed")),
                      root_provider="root", allocations={"rp": {"resources": {"VCPU": 1}}}, mapping={"": ("rp",)})
    out = done.to_dict()
    assert list(out) == ["consumer", "ports", "segments", "changed", "host", "root_provider", "allocations",
                         "mapping", "bindings", "attempts"]
    assert out["ports"] == [{"id": "p1", "name": "port-one", "network_id": "net", "resource_request": None,
                             "mode": None, "notes": ["a note"]}]
    assert out["segments"] == [{"port_id": "p1", "segments": ["seg1"], "member_of": ["agg1"],
                                "excluded": [{"segment": "seg0", "why": "full"}]}]
    assert out["mapping"] == {"": ["rp"]} and out["changed"] is True and not done.check
    assert out["bindings"] == [{"port": "p1", "name": "port-one", "host": "compute-0", "binding_profile": {}}]
    assert out["attempts"] == [{"host": "h0", "outcome": "binding-failed", "why": "dead"},
                               {"host": "compute-0", "outcome": "claimed"}]


def test_a_planned_schedule_renders_todays_dict():
    from minbw.plan.base import Plan

    out = _scheduled(plan=Plan(())).to_dict()
    assert list(out) == ["consumer", "ports", "segments", "changed", "check", "host", "plan", "bindings", "attempts"]
    assert out["check"] is True and out["attempts"] == [] and out["plan"] == {"changed": False, "writes": 0, "ops": []}


def test_a_binding_with_a_request_names_its_allocation():
    from minbw.ops.schedule import Binding

    bound = Binding("p1", None, "h", {"allocation": {"g": "rp"}})
    assert bound.allocation == {"g": "rp"} and Binding("p2", None, "h", {}).allocation is None
    assert list(bound.to_dict()) == ["port", "name", "host", "binding_profile"]
