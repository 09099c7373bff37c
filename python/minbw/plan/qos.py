"""QoS policies with minimum rules, declaratively: desired policy + the policy as it is → a Plan.

Rules are identified by ``(type, direction)``: Neutron allows one rule per type and direction in a
policy, so that pair is the natural key. A changed value is updated in place (the rule keeps its
id); a rule whose pair is not listed is deleted and a listed pair that is missing is created (a new
id). A port's request group ids are ``uuid5(port id, rule ids)``, so creating or deleting a rule of
a type changes the ids of that type's group on every port using the policy; changing a value does not.
Only ``minimum_bandwidth`` and ``minimum_packet_rate`` rules are managed; other rule types in the
policy (bandwidth limits, DSCP marking) are left as they are. Pure: :mod:`minbw.ops.neutron` applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minbw.neutron.qos import DEFAULT_DIRECTION, RULE_TYPES, QosRule, validate_rules
from minbw.plan import base

POLICY_WHERE = "the QoS policy"


def parse_rules(items: Iterable[Mapping[str, Any]]) -> tuple[QosRule, ...]:
    """The desired rules from module options, validated as Neutron's policy checks would."""
    return validate_rules((QosRule.from_option(i) for i in items), POLICY_WHERE)


@dataclass(frozen=True)
class PolicySpec:
    """What the policy should be. ``None`` fields (and ``rules=None``) are left as they are."""

    name: str
    description: str | None = None
    shared: bool | None = None
    is_default: bool | None = None
    rules: tuple[QosRule, ...] | None = None


@dataclass(frozen=True)
class Op(base.Op):
    """One write: ``create_policy``, ``update_policy``, ``delete_policy``, ``create_rule``,
    ``update_rule`` or ``delete_rule``; ``values`` are the API attributes sent."""

    values: Mapping[str, Any] = field(default_factory=dict)
    rule_type: str | None = None
    rule_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``action`` and the ``values`` sent; a rule's write adds ``rule_type`` and ``rule_id``."""
        out: dict[str, Any] = {"action": self.action, "values": dict(self.values)}
        if self.rule_type:
            out.update(rule_type=self.rule_type, rule_id=self.rule_id)
        return out


def policy_view(policy: Any) -> dict[str, Any] | None:
    """The API-shaped, comparable view of a policy (an openstacksdk QoSPolicy or its dict)."""
    if policy is None:
        return None
    d = policy.to_dict(computed=False) if hasattr(policy, "to_dict") else dict(policy)
    rules = [
        {
            k: v
            for k, v in dict(r).items()
            if k in ("id", "type", "direction", "min_kbps", "min_kpps", "max_kbps", "max_burst_kbps", "dscp_mark")
            and v is not None
        }
        for r in d.get("rules") or ()
    ]
    return {
        "id": d.get("id"),
        "name": d.get("name"),
        "description": d.get("description") or "",
        "shared": bool(d.get("is_shared", d.get("shared"))),
        "is_default": bool(d.get("is_default")),
        "rules": sorted(rules, key=lambda r: (r.get("type", ""), r.get("direction", ""))),
    }


def _managed(view: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (r["type"], r.get("direction", DEFAULT_DIRECTION.get(r["type"], ""))): r
        for r in view["rules"]
        if r.get("type") in RULE_TYPES
    }


def _ops(desired: PolicySpec | None, current: Mapping[str, Any] | None) -> list[Op]:
    if desired is None:
        return [Op("delete_policy")] if current else []
    ops: list[Op] = []
    attrs = {
        k: v
        for k, v in (
            ("description", desired.description),
            ("shared", desired.shared),
            ("is_default", desired.is_default),
        )
        if v is not None
    }
    if current is None:
        ops.append(Op("create_policy", dict(name=desired.name, **attrs)))
        have: dict[tuple[str, str], dict[str, Any]] = {}
    else:
        diff = {k: v for k, v in attrs.items() if current[k] != v}
        if current["name"] != desired.name:
            diff["name"] = desired.name  # found by id: the name converges too
        if diff:
            ops.append(Op("update_policy", diff))
        have = _managed(current)
    if desired.rules is None:
        return ops
    want = {r.key: r for r in desired.rules}
    rule: dict[str, Any] | None
    for key, rule in sorted(have.items()):
        if key not in want:
            ops.append(Op("delete_rule", {"direction": key[1]}, key[0], rule["id"]))
    for key, spec in sorted(want.items()):
        rule = have.get(key)
        if rule is not None and rule.get(spec.value_key) != spec.value:
            ops.append(Op("update_rule", {spec.value_key: spec.value}, spec.type, rule["id"]))
    for key, spec in sorted(want.items()):
        if key not in have:
            ops.append(Op("create_rule", spec.to_api(), spec.type))
    return ops


def predict_policy(current: Mapping[str, Any] | None, ops: Iterable[Op]) -> dict[str, Any] | None:
    """The view the ops lead to (new rules have ``id`` None): the "after" of check mode."""
    after = None if current is None else {**current, "rules": [dict(r) for r in current["rules"]]}
    for c in ops:
        if c.action == "delete_policy":
            return None
        if c.action == "create_policy":
            after = {
                "id": None,
                "name": c.values["name"],
                "description": c.values.get("description", ""),
                "shared": bool(c.values.get("shared")),
                "is_default": bool(c.values.get("is_default")),
                "rules": [],
            }
            continue
        if after is None:
            raise AssertionError("a policy is created before its other ops")
        if c.action == "update_policy":
            after.update(c.values)
        elif c.action == "delete_rule":
            after["rules"] = [r for r in after["rules"] if r.get("id") != c.rule_id]
        elif c.action == "update_rule":
            for r in after["rules"]:
                if r.get("id") == c.rule_id:
                    r.update(c.values)
        elif c.action == "create_rule":
            after["rules"].append({"id": None, "type": c.rule_type, **c.values})
    if after is not None:
        after["rules"] = sorted(after["rules"], key=lambda r: (r.get("type", ""), r.get("direction", "")))
    return after


def plan_policy(desired: PolicySpec | None, current: Mapping[str, Any] | None) -> base.Plan[Op]:
    """The writes that make ``current`` (a :func:`policy_view`, or None) into ``desired`` (None: absent).

    Order matters to Neutron: rules are deleted before others are created (an 'any' packet-rate
    rule must go before directed ones can come), and the policy exists before its rules.
    """
    ops = tuple(_ops(desired, current))
    return base.Plan(ops, before=current, after=predict_policy(current, ops))
