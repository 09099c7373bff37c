"""QoS policies with minimum rules, and QoS ports, declaratively: desired state -> plan -> apply.

The planning half is pure (API-shaped dicts in, a list of :class:`Change` out) so check mode and
diff mode show exactly what the real run does. The applying half talks to Neutron only through
openstacksdk's network proxy.

Rules are identified by ``(type, direction)``: Neutron allows one rule per type and direction in a
policy, so that pair is the natural key. A changed value is updated in place (the rule keeps its
id); a rule whose pair is not listed is deleted and a listed pair that is missing is created (a new
id). A port's request group ids are ``uuid5(port id, rule ids)``, so creating or deleting a rule of
a type changes the ids of that type's group on every port using the policy; changing a value does not.
Only ``minimum_bandwidth`` and ``minimum_packet_rate`` rules are managed; other rule types in the
policy (bandwidth limits, DSCP marking) are left as they are.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from minbw.errors import MinbwError, RequestError
from minbw.request import MAX_RULE_VALUE, MIN_BW, MIN_PPS, RULE_DIRECTIONS, RULE_TYPES, RULE_VALUE_KEYS, VNIC_TYPES

# Neutron's API defaults when a rule is created without a direction.
DEFAULT_DIRECTION = {MIN_BW: "egress", MIN_PPS: "egress"}


@dataclass(frozen=True)
class RuleSpec:
    type: str
    direction: str
    value: int

    @property
    def key(self) -> tuple[str, str]:
        return self.type, self.direction

    @property
    def value_key(self) -> str:
        return RULE_VALUE_KEYS[self.type]

    @classmethod
    def from_option(cls, item: Mapping) -> RuleSpec:
        """From ``{type, direction, min_kbps | min_kpps}`` (a module option or an API rule)."""
        rtype = item.get("type")
        if rtype not in RULE_TYPES:
            raise RequestError(f"QoS rule {dict(item)!r}: type must be one of {', '.join(RULE_TYPES)}.")
        direction = item.get("direction") or DEFAULT_DIRECTION[rtype]
        if direction not in RULE_DIRECTIONS[rtype]:
            raise RequestError(f"a {rtype} rule's direction must be one of "
                               f"{', '.join(RULE_DIRECTIONS[rtype])}, got {direction!r}.")
        vkey = RULE_VALUE_KEYS[rtype]
        other = RULE_VALUE_KEYS[MIN_PPS if rtype == MIN_BW else MIN_BW]
        if item.get(other) is not None:
            raise RequestError(f"a {rtype} rule takes {vkey}, not {other}.")
        value = item.get(vkey)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RULE_VALUE:
            raise RequestError(f"a {rtype} rule ({direction}) needs {vkey}: an integer in "
                               f"[0, {MAX_RULE_VALUE}], got {value!r}.")
        return cls(rtype, direction, value)

    def to_api(self) -> dict:
        return {"direction": self.direction, self.value_key: self.value}


def parse_rules(items: Iterable[Mapping]) -> tuple[RuleSpec, ...]:
    """Validate the desired rules as Neutron's policy checks would (one per type and direction;
    a direction-less packet-rate rule does not mix with directed ones)."""
    rules = tuple(RuleSpec.from_option(i) for i in items)
    keys = [r.key for r in rules]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise RequestError(f"QoS rules listed twice (type, direction): {dup}; Neutron allows one per "
                           f"type and direction in a policy.")
    pps = {r.direction for r in rules if r.type == MIN_PPS}
    if "any" in pps and len(pps) > 1:
        raise RequestError("minimum_packet_rate rules mix direction 'any' with egress/ingress; Neutron "
                           "refuses that. Fix: list either one 'any' rule or directed ones.")
    return rules


@dataclass(frozen=True)
class PolicySpec:
    """What the policy should be. ``None`` fields (and ``rules=None``) are left as they are."""

    name: str
    description: str | None = None
    shared: bool | None = None
    is_default: bool | None = None
    rules: tuple[RuleSpec, ...] | None = None


@dataclass(frozen=True)
class Change:
    """One write: ``create_policy``, ``update_policy``, ``delete_policy``, ``create_rule``,
    ``update_rule`` or ``delete_rule``; ``values`` are the API attributes sent."""

    action: str
    values: Mapping = field(default_factory=dict)
    rule_type: str | None = None
    rule_id: str | None = None

    def to_dict(self) -> dict:
        out = {"action": self.action, "values": dict(self.values)}
        if self.rule_type:
            out.update(rule_type=self.rule_type, rule_id=self.rule_id)
        return out


def policy_view(policy) -> dict | None:
    """The API-shaped, comparable view of a policy (an openstacksdk QoSPolicy or its dict)."""
    if policy is None:
        return None
    d = policy.to_dict(computed=False) if hasattr(policy, "to_dict") else dict(policy)
    rules = [{k: v for k, v in dict(r).items() if k in ("id", "type", "direction", "min_kbps", "min_kpps",
                                                          "max_kbps", "max_burst_kbps", "dscp_mark")
              and v is not None} for r in d.get("rules") or ()]
    return {"id": d.get("id"), "name": d.get("name"), "description": d.get("description") or "",
            "shared": bool(d.get("is_shared", d.get("shared"))), "is_default": bool(d.get("is_default")),
            "rules": sorted(rules, key=lambda r: (r.get("type", ""), r.get("direction", "")))}


def _managed(view: Mapping) -> dict[tuple[str, str], dict]:
    return {(r["type"], r.get("direction", DEFAULT_DIRECTION.get(r["type"], ""))): r
            for r in view["rules"] if r.get("type") in RULE_TYPES}


def plan_policy(desired: PolicySpec | None, current: Mapping | None) -> list[Change]:
    """The writes that make ``current`` (a :func:`policy_view`, or None) into ``desired`` (None: absent).

    Order matters to Neutron: rules are deleted before others are created (an 'any' packet-rate
    rule must go before directed ones can come), and the policy exists before its rules.
    """
    if desired is None:
        return [Change("delete_policy")] if current else []
    changes: list[Change] = []
    attrs = {k: v for k, v in (("description", desired.description), ("shared", desired.shared),
                               ("is_default", desired.is_default)) if v is not None}
    if current is None:
        changes.append(Change("create_policy", dict(name=desired.name, **attrs)))
        have: dict = {}
    else:
        diff = {k: v for k, v in attrs.items() if current[k] != v}
        if current["name"] != desired.name:
            diff["name"] = desired.name  # found by id: the name converges too
        if diff:
            changes.append(Change("update_policy", diff))
        have = _managed(current)
    if desired.rules is None:
        return changes
    want = {r.key: r for r in desired.rules}
    for key, rule in sorted(have.items()):
        if key not in want:
            changes.append(Change("delete_rule", {"direction": key[1]}, key[0], rule["id"]))
    for key, spec in sorted(want.items()):
        rule = have.get(key)
        if rule is not None and rule.get(spec.value_key) != spec.value:
            changes.append(Change("update_rule", {spec.value_key: spec.value}, spec.type, rule["id"]))
    for key, spec in sorted(want.items()):
        if key not in have:
            changes.append(Change("create_rule", spec.to_api(), spec.type))
    return changes


def predict_policy(current: Mapping | None, changes: Iterable[Change]) -> dict | None:
    """The view the changes lead to (new rules have ``id`` None): the "after" of check mode."""
    after = None if current is None else {**current, "rules": [dict(r) for r in current["rules"]]}
    for c in changes:
        if c.action == "delete_policy":
            return None
        if c.action == "create_policy":
            after = {"id": None, "name": c.values["name"], "description": c.values.get("description", ""),
                     "shared": bool(c.values.get("shared")), "is_default": bool(c.values.get("is_default")),
                     "rules": []}
        elif c.action == "update_policy":
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


# ---------------------------------------------------------------- I/O (openstacksdk network proxy)
_RULE_VERBS = {MIN_BW: "qos_minimum_bandwidth_rule", MIN_PPS: "qos_minimum_packet_rate_rule"}
_POLICY_ATTRS = {"shared": "is_shared"}  # API name -> openstacksdk attribute


def find_policy(conn, name_or_id: str):
    return conn.network.find_qos_policy(name_or_id, ignore_missing=True)


def apply_policy(conn, policy, changes: Iterable[Change]) -> dict | None:
    """Run ``changes`` against ``policy`` (an openstacksdk QoSPolicy, or None to create); the result's view."""
    net = conn.network
    for c in changes:
        values = {_POLICY_ATTRS.get(k, k): v for k, v in c.values.items()}
        if c.action == "create_policy":
            policy = net.create_qos_policy(**values)
        elif c.action == "update_policy":
            policy = net.update_qos_policy(policy, **values)
        elif c.action == "delete_policy":
            net.delete_qos_policy(policy, ignore_missing=True)
            return None
        else:
            verb = _RULE_VERBS[c.rule_type]
            if c.action == "create_rule":
                getattr(net, "create_" + verb)(policy, **values)
            elif c.action == "update_rule":
                getattr(net, "update_" + verb)(c.rule_id, policy, **values)
            else:
                getattr(net, "delete_" + verb)(c.rule_id, policy, ignore_missing=True)
    return policy_view(net.get_qos_policy(policy.id))


# ---------------------------------------------------------------- ports
@dataclass(frozen=True)
class PortSpec:
    """What the port should be, with names already resolved to ids.

    ``qos_policy_id`` is declarative (None: no policy); ``vnic_type`` and ``fixed_ips`` None are
    left as Neutron has them. ``fixed_ips`` entries are ``{"subnet_id"?, "ip_address"?}``.
    """

    name: str
    network_id: str | None = None
    vnic_type: str | None = None
    qos_policy_id: str | None = None
    fixed_ips: tuple[Mapping, ...] | None = None

    def __post_init__(self):
        if self.vnic_type is not None and self.vnic_type not in VNIC_TYPES:
            raise RequestError(f"port {self.name}: unknown vnic_type {self.vnic_type!r}; Neutron accepts "
                               f"{', '.join(VNIC_TYPES)}.")


def port_view(port) -> dict | None:
    if port is None:
        return None
    d = port.to_dict(computed=False) if hasattr(port, "to_dict") else dict(port)
    return {"id": d.get("id"), "name": d.get("name"), "network_id": d.get("network_id"),
            "binding:vnic_type": d.get("binding_vnic_type", d.get("binding:vnic_type")) or "normal",
            "qos_policy_id": d.get("qos_policy_id"),
            "fixed_ips": sorted(({"subnet_id": f.get("subnet_id"), "ip_address": f.get("ip_address")}
                                 for f in d.get("fixed_ips") or ()),
                                key=lambda f: (f["subnet_id"] or "", f["ip_address"] or ""))}


def fixed_ips_match(desired: Iterable[Mapping], current: Iterable[Mapping]) -> bool:
    """Each desired entry matches a distinct current one on the keys it gives, and none is left over."""
    left = list(current)
    for want in desired:
        keys = [k for k in ("subnet_id", "ip_address") if want.get(k)]
        hit = next((c for c in left if all(c.get(k) == want[k] for k in keys)), None)
        if hit is None:
            return False
        left.remove(hit)
    return not left


def plan_port(desired: PortSpec | None, current: Mapping | None) -> tuple[str | None, dict]:
    """``(action, API attributes)``: action is ``create``, ``update``, ``delete`` or None (nothing to do)."""
    if desired is None:
        return ("delete", {}) if current else (None, {})
    if current is None:
        if not desired.network_id:
            raise MinbwError(f"port {desired.name} does not exist; creating it needs its network.")
        attrs = {"name": desired.name, "network_id": desired.network_id, "qos_policy_id": desired.qos_policy_id}
        if desired.vnic_type:
            attrs["binding:vnic_type"] = desired.vnic_type
        if desired.fixed_ips is not None:
            attrs["fixed_ips"] = [dict(f) for f in desired.fixed_ips]
        return "create", attrs
    if desired.network_id and desired.network_id != current["network_id"]:
        raise MinbwError(f"port {current['name'] or current['id']} is on network {current['network_id']}, not "
                         f"{desired.network_id}; Neutron cannot move a port. Fix: remove it (state=absent) first.")
    attrs = {}
    if current["name"] != desired.name:
        attrs["name"] = desired.name
    if desired.vnic_type and desired.vnic_type != current["binding:vnic_type"]:
        attrs["binding:vnic_type"] = desired.vnic_type
    if desired.qos_policy_id != current["qos_policy_id"]:
        attrs["qos_policy_id"] = desired.qos_policy_id
    if desired.fixed_ips is not None and not fixed_ips_match(desired.fixed_ips, current["fixed_ips"]):
        attrs["fixed_ips"] = [dict(f) for f in desired.fixed_ips]
    return ("update" if attrs else None), attrs


def predict_port(current: Mapping | None, action: str | None, attrs: Mapping) -> dict | None:
    if action == "delete":
        return None
    base = dict(current) if current else {"id": None, "name": None, "network_id": None,
                                          "binding:vnic_type": "normal", "qos_policy_id": None, "fixed_ips": []}
    base.update(attrs)
    return base


_PORT_ATTRS = {"binding:vnic_type": "binding_vnic_type"}


def apply_port(conn, port, action: str | None, attrs: Mapping) -> dict | None:
    net = conn.network
    values = {_PORT_ATTRS.get(k, k): v for k, v in attrs.items()}
    if action == "create":
        port = net.create_port(**values)
    elif action == "update":
        port = net.update_port(port, **values)
    elif action == "delete":
        net.delete_port(port, ignore_missing=True)
        return None
    return port_view(port)
