"""The ``qos_policy`` module: a QoS policy with minimum rules, declaratively (check mode and diff from the same
plan)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minbw.ops import neutron
from minbw.plan import base, qos
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class DesiredPolicy:
    name: str
    description: str | None = None
    shared: bool | None = None
    is_default: bool | None = None
    rules: tuple[Mapping, ...] | None = None  # {type, direction?, min_kbps | min_kpps}; None: left as they are
    present: bool = True
    check: bool = False


@dataclass(frozen=True)
class PolicyResult:
    plan: base.Plan[qos.Op]
    before: dict | None
    after: dict | None

    def diff(self) -> dict:
        """Ansible's diff shape: the policy before and after ({} for absent)."""
        return {"before": self.before or {}, "after": self.after or {}}

    def to_dict(self) -> dict:
        """``policy``: the policy after; ``changes``: the plan's ops as dicts."""
        return {"policy": self.after, "changes": [op.to_dict() for op in self.plan.ops]}


def qos_policy(cloud: Cloud, request: DesiredPolicy) -> PolicyResult:
    """Make the QoS policy as desired (present or absent; check mode: the plan only): a PolicyResult with the policy
    before and after. Raises RequestError for bad rules (before any read), MissingService without Neutron; a write
    failing after others is a PartialApply."""
    rules = (
        None
        if request.rules is None
        else qos.parse_rules({k: v for k, v in r.items() if v is not None} for r in request.rules)
    )  # bad rules: refused before any read
    cloud.require("network", "QoS policies live in Neutron")
    found = neutron.find_policy(cloud.conn, request.name)
    current = qos.policy_view(found)
    desired = None
    if request.present:
        desired = qos.PolicySpec(
            name=request.name if found is None or found.name == request.name else found.name,
            description=request.description,
            shared=request.shared,
            is_default=request.is_default,
            rules=rules,
        )
    plan = qos.plan_policy(desired, current)
    after = plan.after if request.check or not plan.changed else neutron.apply_policy(cloud.conn, found, plan)
    return PolicyResult(plan, current, after)
