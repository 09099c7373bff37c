"""A QoS policy plan that Neutron stops half-way (another writer added the same rule between our read and
our write) is reported as a PartialApply naming what was written; running the desired state again converges."""
from __future__ import annotations

import pytest

from minbw.errors import PartialApply
from minbw.ops import neutron
from minbw.plan import qos


def test_a_policy_plan_stopped_by_neutron_names_the_writes_made(demo):
    net = demo.conn.network
    policy = demo.policy("e2e-partial")
    desired = qos.PolicySpec(name="e2e-partial", description="guaranteed 1 Mbps",
                             rules=qos.parse_rules([{"type": "minimum_bandwidth", "direction": "egress",
                                                     "min_kbps": 1000}]))
    plan = qos.plan_policy(desired, qos.policy_view(policy))
    assert [op.action for op in plan.ops] == ["update_policy", "create_rule"]
    # another writer adds the same rule after our read: Neutron refuses the duplicate (409)
    net.create_qos_minimum_bandwidth_rule(policy, min_kbps=500, direction="egress")

    with pytest.raises(PartialApply) as err:
        neutron.apply_policy(demo.conn, policy, plan)
    assert err.value.planned == 2 and [op.action for op in err.value.applied] == ["update_policy"]
    assert err.value.status == 409 or getattr(err.value.cause, "status_code", None) == 409, err.value.cause
    assert "1 of 2 planned writes" in str(err.value) and "again" in str(err.value)
    assert err.value.to_dict()["applied"][0]["action"] == "update_policy"
    assert net.get_qos_policy(policy.id).description == "guaranteed 1 Mbps"  # the first write stands, reported

    # the same desired state again, planned from what is there now: one update of the rule, then nothing
    again = qos.plan_policy(desired, qos.policy_view(net.get_qos_policy(policy.id)))
    assert [op.action for op in again.ops] == ["update_rule"]
    after = neutron.apply_policy(demo.conn, net.get_qos_policy(policy.id), again)
    assert qos.plan_policy(desired, after).ops == ()
