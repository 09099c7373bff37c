"""Unit tables for plan/qos.py: a QoS policy's writes (rules kept, updated in place, replaced) and the rules
refused as Neutron would refuse them."""
from __future__ import annotations

import pytest

from minbw.errors import InvalidInput
from minbw.neutron.qos import QosRule
from minbw.plan.qos import PolicySpec, parse_rules, plan_policy


def view(rules=(), **attrs):
    return {"id": "pid", "name": "qp0", "description": "", "shared": False, "is_default": False,
            "rules": list(rules), **attrs}


EGR = {"id": "r1", "type": "minimum_bandwidth", "direction": "egress", "min_kbps": 1000}
LIMIT = {"id": "r9", "type": "bandwidth_limit", "direction": "egress", "max_kbps": 5}


@pytest.mark.parametrize("case, current, want, ops", [
    ("create", None, dict(rules=[{"type": "minimum_bandwidth", "min_kbps": 1000}]),
     [{"action": "create_policy", "values": {"name": "qp0"}},
      {"action": "create_rule", "values": {"direction": "egress", "min_kbps": 1000},
       "rule_type": "minimum_bandwidth", "rule_id": None}]),
    ("same", view([EGR]), dict(rules=[{"type": "minimum_bandwidth", "direction": "egress", "min_kbps": 1000}]), []),
    ("value in place", view([EGR]), dict(rules=[{"type": "minimum_bandwidth", "min_kbps": 2000}]),
     [{"action": "update_rule", "values": {"min_kbps": 2000}, "rule_type": "minimum_bandwidth", "rule_id": "r1"}]),
    ("direction: delete then create", view([EGR]),
     dict(rules=[{"type": "minimum_bandwidth", "direction": "ingress", "min_kbps": 1000}]),
     [{"action": "delete_rule", "values": {"direction": "egress"}, "rule_type": "minimum_bandwidth", "rule_id": "r1"},
      {"action": "create_rule", "values": {"direction": "ingress", "min_kbps": 1000},
       "rule_type": "minimum_bandwidth", "rule_id": None}]),
    ("other rule types are left alone", view([EGR, LIMIT]), dict(rules=[]),
     [{"action": "delete_rule", "values": {"direction": "egress"}, "rule_type": "minimum_bandwidth", "rule_id": "r1"}]),
    ("rules unmanaged", view([EGR]), dict(rules=None, shared=True), [{"action": "update_policy", "values": {"shared": True}}]),
    ("absent", view([EGR]), None, [{"action": "delete_policy", "values": {}}]),
    ("absent and gone", None, None, []),
])
def test_policy_plan(case, current, want, ops):
    spec = None if want is None else PolicySpec(
        name="qp0", shared=want.get("shared"),
        rules=None if want["rules"] is None else parse_rules(want["rules"]))
    plan = plan_policy(spec, current)
    assert [op.to_dict() for op in plan.ops] == ops, case
    if want is None:
        assert plan.after is None
    elif want["rules"] is not None:
        managed = [(r["type"], r["direction"], r.get("min_kbps")) for r in plan.after["rules"]
                   if r["type"] == "minimum_bandwidth"]
        assert managed == sorted((r["type"], r.get("direction", "egress"), r["min_kbps"]) for r in want["rules"])
        assert LIMIT in plan.after["rules"] or LIMIT not in (current or view())["rules"]


@pytest.mark.parametrize("rules, match", [
    ([{"type": "minimum_bandwidth", "min_kbps": 1}, {"type": "minimum_bandwidth", "min_kbps": 2}], "duplicates"),
    ([{"type": "minimum_packet_rate", "direction": "any", "min_kpps": 1},
      {"type": "minimum_packet_rate", "direction": "egress", "min_kpps": 1}], "mix direction 'any'"),
    ([{"type": "minimum_bandwidth", "min_kpps": 1}], "takes min_kbps, not min_kpps"),
    ([{"type": "minimum_bandwidth", "direction": "any", "min_kbps": 1}], "direction must be one of egress, ingress"),
    ([{"type": "minimum_bandwidth", "min_kbps": -1}], "integer in"),
    ([{"type": "dscp_marking"}], "type must be one of"),
])
def test_policy_rules_refused_as_neutron_would(rules, match):
    with pytest.raises(InvalidInput, match=match):
        parse_rules(rules)


def test_rules_keep_ids_for_ports_and_none_for_desired():
    assert QosRule.from_option({"type": "minimum_bandwidth", "min_kbps": 5}) == QosRule(None, "minimum_bandwidth",
                                                                                        "egress", 5)
