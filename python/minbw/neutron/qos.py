"""QoS minimum rules as Neutron's API and policy checks define them. Pure.

One rule model for both sides: the rules a port's request is built from, and the rules a
policy should have.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from minbw.errors import RequestError
from minbw.neutron import naming

MIN_BW = "minimum_bandwidth"
MIN_PPS = "minimum_packet_rate"
RULE_TYPES = (MIN_BW, MIN_PPS)
# Neutron's API: bandwidth rules have a direction, packet-rate rules may be direction-less ("any").
RULE_DIRECTIONS = {MIN_BW: tuple(naming.BW_CLASSES), MIN_PPS: tuple(naming.PPS_CLASSES)}
RULE_VALUE_KEYS = {MIN_BW: "min_kbps", MIN_PPS: "min_kpps"}
RULE_UNITS = {MIN_BW: "kbps", MIN_PPS: "kpps"}
# neutron_lib.db.constants.DB_INTEGER_MAX_VALUE: the API range of min_kbps / min_kpps.
MAX_RULE_VALUE = 2**31 - 1

# The command line's short names of the rule types, and the one grammar of a rule there.
RULE_SHORT = {"min_bw": MIN_BW, "min_pps": MIN_PPS}
RULE_GRAMMAR = "min_bw:DIRECTION:KBPS[:RULE_ID] or min_pps:DIRECTION:KPPS[:RULE_ID]"

# Neutron's API defaults when a rule is created without a direction.
DEFAULT_DIRECTION = {MIN_BW: "egress", MIN_PPS: "egress"}

# neutron_lib.api.definitions.portbindings.VNIC_TYPES: what the port API accepts.
VNIC_TYPES = (
    "normal",
    "direct",
    "macvtap",
    "baremetal",
    "direct-physical",
    "virtio-forwarder",
    "smart-nic",
    "vdpa",
    "accelerator-direct",
    "accelerator-direct-physical",
    "remote-managed",
)


@dataclass(frozen=True)
class QosRule:
    """A minimum rule: ``(type, direction)`` is its key in a policy (Neutron allows one of each);
    ``id`` is None for a rule not created yet (a desired rule)."""

    id: str | None
    type: str
    direction: str
    value: int

    @property
    def key(self) -> tuple[str, str]:
        """The rule's key in a policy: ``(type, direction)``."""
        return self.type, self.direction

    @property
    def value_key(self) -> str:
        """The API field of the rule's value: ``min_kbps`` or ``min_kpps``."""
        return RULE_VALUE_KEYS[self.type]

    def to_api(self) -> dict[str, Any]:
        """The rule's body for Neutron's API: ``{"direction": ..., "min_kbps" / "min_kpps": value}``."""
        return {"direction": self.direction, self.value_key: self.value}

    @classmethod
    def from_neutron(cls, rule: Mapping[str, Any]) -> QosRule:
        """From a Neutron API rule dict (``type``, ``direction``, ``min_kbps``/``min_kpps``)."""
        rtype = rule.get("type")
        if rtype not in RULE_TYPES:
            raise RequestError(
                f"QoS rule {rule.get('id')!r}: type {rtype!r} is not a minimum rule "
                f"({', '.join(RULE_TYPES)}); only those reserve resources in Placement."
            )
        missing = [key for key in ("id", RULE_VALUE_KEYS[rtype]) if key not in rule]
        if missing:
            raise RequestError(
                f"QoS rule {rule.get('id')!r} ({rtype}) has no {' or '.join(missing)}. Fix: pass "
                f"the rule as Neutron's API shows it (id, type, direction, {RULE_VALUE_KEYS[rtype]})."
            )
        return cls(
            id=rule["id"], type=rtype, direction=rule.get("direction", "egress"), value=rule[RULE_VALUE_KEYS[rtype]]
        )

    @classmethod
    def from_option(cls, item: Mapping[str, Any]) -> QosRule:
        """A rule from ``{type, direction?, min_kbps | min_kpps, id?}`` (a module option, or a command-line
        rule): the direction defaults as in Neutron's API; the value key must match the type; ``id`` is
        None for a rule not created yet (or one whose id the caller makes up)."""
        rtype = item.get("type")
        if rtype not in RULE_TYPES:
            raise RequestError(f"QoS rule {dict(item)!r}: type must be one of {', '.join(RULE_TYPES)}.")
        vkey = RULE_VALUE_KEYS[rtype]
        other = RULE_VALUE_KEYS[MIN_PPS if rtype == MIN_BW else MIN_BW]
        if item.get(other) is not None:
            raise RequestError(f"a {rtype} rule takes {vkey}, not {other}. Fix: give its value as {vkey}.")
        # the type: ignore below: a rule without its value is refused by validate_rules, which every caller runs
        value = item.get(vkey)
        direction = item.get("direction") or DEFAULT_DIRECTION[rtype]
        return cls(item.get("id"), rtype, direction, value)  # type: ignore[arg-type]

    @classmethod
    def parse(cls, text: str, where: str) -> QosRule:
        """One command-line rule: ``min_bw:DIRECTION:KBPS[:RULE_ID]`` or ``min_pps:DIRECTION:KPPS[:RULE_ID]``."""
        parts = text.split(":")
        if len(parts) not in (3, 4) or parts[0] not in RULE_SHORT or not parts[1]:
            raise RequestError(f"{where}: {text!r} is not a rule; expected {RULE_GRAMMAR}, e.g. min_bw:egress:1000")
        rtype = RULE_SHORT[parts[0]]
        value = parts[2].strip()
        if not (value.isascii() and value.isdigit()):
            raise RequestError(f"{where}: {text!r}: {RULE_VALUE_KEYS[rtype]} must be a whole number, got {value!r}")
        return cls(parts[3] if len(parts) == 4 and parts[3] else None, rtype, parts[1], int(value))


def min_rules(rules: Iterable[Mapping[str, Any]]) -> tuple[QosRule, ...]:
    """The minimum rules of a policy's ``rules`` list, in the policy's order; others are ignored."""
    return tuple(QosRule.from_neutron(r) for r in rules if r.get("type") in RULE_TYPES)


def validate_rules(rules: Iterable[QosRule], where: str) -> tuple[QosRule, ...]:
    """What Neutron's API and QoS policy checks refuse; ``where`` (the port, the policy) starts each
    message. Returns the rules."""
    rules = tuple(rules)
    seen: dict[tuple[str, str], QosRule] = {}
    for r in rules:
        this = f"{where}: QoS rule {r.id!r}" if r.id is not None else f"{where}: a {r.type} rule"
        if r.id is not None and (not isinstance(r.id, str) or not r.id):
            raise RequestError(
                f"{where}: a QoS rule has no id; the group id is derived "
                f"from rule ids. Fix: pass the rules as Neutron stores them."
            )
        if r.type not in RULE_TYPES:
            raise RequestError(f"{this}: type {r.type!r} is not one of {', '.join(RULE_TYPES)}.")
        if r.direction not in RULE_DIRECTIONS[r.type]:
            raise RequestError(
                f"{this}: its direction must be one of {', '.join(RULE_DIRECTIONS[r.type])}, got {r.direction!r}."
            )
        if not isinstance(r.value, int) or isinstance(r.value, bool) or not 0 <= r.value <= MAX_RULE_VALUE:
            raise RequestError(
                f"{this}: {RULE_VALUE_KEYS[r.type]} must be an integer in [0, {MAX_RULE_VALUE}], got {r.value!r}."
            )
        if r.key in seen:
            # neutron.objects.qos.qos_policy_validator.check_rules_conflict
            other = seen[r.key].id
            raise RequestError(
                f"{this}: duplicates {'rule ' + repr(other) if other else 'another rule'} "
                f"({r.type}, {r.direction}); Neutron allows one per type and direction in a "
                f"policy. Fix: keep one."
            )
        seen[r.key] = r
    pps_dirs = {r.direction for r in rules if r.type == MIN_PPS}
    if "any" in pps_dirs and len(pps_dirs) > 1:
        # check_min_pps_rule_conflict: direction-less and directed packet-rate rules do not mix
        raise RequestError(
            f"{where}: minimum_packet_rate rules mix direction 'any' with "
            f"{sorted(pps_dirs - {'any'})}; Neutron refuses that. Fix: use either one "
            f"'any' rule or egress/ingress rules."
        )
    return rules
