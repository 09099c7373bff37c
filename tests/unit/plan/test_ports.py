"""Unit tables for plan/ports.py: a port's writes and the port predicted after; what cannot be changed."""
from __future__ import annotations

import pytest

from minbw.errors import InvalidInput
from minbw.plan.ports import PortSpec, plan_port


PORT = {"id": "p1", "name": "port0", "network_id": "net0", "binding:vnic_type": "normal", "qos_policy_id": None,
        "fixed_ips": [{"subnet_id": "s1", "ip_address": "10.0.0.5"}]}


@pytest.mark.parametrize("case, current, spec, ops, after", [
    ("create", None, PortSpec("port0", "net0", "direct", "qp"),
     [{"action": "create", "values": {"name": "port0", "network_id": "net0", "qos_policy_id": "qp",
                                      "binding:vnic_type": "direct"}}],
     {"id": None, "name": "port0", "network_id": "net0", "binding:vnic_type": "direct", "qos_policy_id": "qp",
      "fixed_ips": []}),
    ("same", PORT, PortSpec("port0", "net0", "normal", None, ({"subnet_id": "s1"},)), [], PORT),
    ("policy on", PORT, PortSpec("port0", qos_policy_id="qp"),
     [{"action": "update", "values": {"qos_policy_id": "qp"}}], {**PORT, "qos_policy_id": "qp"}),
    ("another address", PORT, PortSpec("port0", fixed_ips=({"ip_address": "10.0.0.6"},)),
     [{"action": "update", "values": {"fixed_ips": [{"ip_address": "10.0.0.6"}]}}],
     {**PORT, "fixed_ips": [{"ip_address": "10.0.0.6"}]}),
    ("absent", PORT, None, [{"action": "delete", "values": {}}], None),
])
def test_port_plan(case, current, spec, ops, after):
    plan = plan_port(spec, current)
    assert [op.to_dict() for op in plan.ops] == ops, case
    assert plan.after == after and plan.diff() == {"before": current or {}, "after": after or {}}


@pytest.mark.parametrize("current, spec, match", [
    (None, PortSpec("port0"), "needs its network"),
    (PORT, PortSpec("port0", "net1"), "cannot move a port"),
])
def test_port_plan_refusals(current, spec, match):
    with pytest.raises(InvalidInput, match=match):
        plan_port(spec, current)
