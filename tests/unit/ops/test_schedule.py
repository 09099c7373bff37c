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
