"""A port with its QoS policy, declaratively: desired port + the port as it is → a Plan. Pure.

:mod:`minbw.ops.neutron` applies the plan through openstacksdk's network proxy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minbw.errors import InvalidInput, RequestError
from minbw.neutron.qos import VNIC_TYPES
from minbw.plan import base


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
    fixed_ips: tuple[Mapping[str, Any], ...] | None = None

    def __post_init__(self) -> None:
        if self.vnic_type is not None and self.vnic_type not in VNIC_TYPES:
            raise RequestError(
                f"port {self.name}: unknown vnic_type {self.vnic_type!r}; Neutron accepts {', '.join(VNIC_TYPES)}."
            )


@dataclass(frozen=True)
class Op(base.Op):
    """``create``, ``update`` or ``delete``; ``values`` are the API attributes sent."""

    values: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``action`` and the ``values`` sent."""
        return {"action": self.action, "values": dict(self.values)}


def port_view(port: Any) -> dict[str, Any] | None:
    """What a plan compares of a port (an SDK port or a dict; None: None): id, name, network, ``binding:vnic_type``
    (``normal`` when unset), QoS policy and ``fixed_ips`` (subnet and address only, sorted)."""
    if port is None:
        return None
    d = port.to_dict(computed=False) if hasattr(port, "to_dict") else dict(port)
    return {
        "id": d.get("id"),
        "name": d.get("name"),
        "network_id": d.get("network_id"),
        "binding:vnic_type": d.get("binding_vnic_type", d.get("binding:vnic_type")) or "normal",
        "qos_policy_id": d.get("qos_policy_id"),
        "fixed_ips": sorted(
            ({"subnet_id": f.get("subnet_id"), "ip_address": f.get("ip_address")} for f in d.get("fixed_ips") or ()),
            key=lambda f: (f["subnet_id"] or "", f["ip_address"] or ""),
        ),
    }


def fixed_ips_match(desired: Iterable[Mapping[str, Any]], current: Iterable[Mapping[str, Any]]) -> bool:
    """Each desired entry matches a distinct current one on the keys it gives, and none is left over."""
    left = list(current)
    for want in desired:
        keys = [k for k in ("subnet_id", "ip_address") if want.get(k)]
        hit = next((c for c in left if all(c.get(k) == want[k] for k in keys)), None)
        if hit is None:
            return False
        left.remove(hit)
    return not left


def _op(desired: PortSpec | None, current: Mapping[str, Any] | None) -> Op | None:
    if desired is None:
        return Op("delete") if current else None
    if current is None:
        if not desired.network_id:
            raise InvalidInput(f"port {desired.name} does not exist; creating it needs its network.")
        attrs: dict[str, Any] = {
            "name": desired.name,
            "network_id": desired.network_id,
            "qos_policy_id": desired.qos_policy_id,
        }
        if desired.vnic_type:
            attrs["binding:vnic_type"] = desired.vnic_type
        if desired.fixed_ips is not None:
            attrs["fixed_ips"] = [dict(f) for f in desired.fixed_ips]
        return Op("create", attrs)
    if desired.network_id and desired.network_id != current["network_id"]:
        raise InvalidInput(
            f"port {current['name'] or current['id']} is on network {current['network_id']}, not "
            f"{desired.network_id}; Neutron cannot move a port. Fix: remove it (state=absent) first."
        )
    attrs = {}
    if current["name"] != desired.name:
        attrs["name"] = desired.name
    if desired.vnic_type and desired.vnic_type != current["binding:vnic_type"]:
        attrs["binding:vnic_type"] = desired.vnic_type
    if desired.qos_policy_id != current["qos_policy_id"]:
        attrs["qos_policy_id"] = desired.qos_policy_id
    if desired.fixed_ips is not None and not fixed_ips_match(desired.fixed_ips, current["fixed_ips"]):
        attrs["fixed_ips"] = [dict(f) for f in desired.fixed_ips]
    return Op("update", attrs) if attrs else None


def predict_port(current: Mapping[str, Any] | None, op: Op | None) -> dict[str, Any] | None:
    """The port as ``op`` leaves it: ``current`` (a copy) with ``op``'s values over it; None when ``op`` deletes it or
    neither exists."""
    if op is None:
        return None if current is None else dict(current)
    if op.action == "delete":
        return None
    base_view = (
        dict(current)
        if current
        else {
            "id": None,
            "name": None,
            "network_id": None,
            "binding:vnic_type": "normal",
            "qos_policy_id": None,
            "fixed_ips": [],
        }
    )
    base_view.update(op.values)
    return base_view


def plan_port(desired: PortSpec | None, current: Mapping[str, Any] | None) -> base.Plan[Op]:
    """At most one op (create, update or delete) that makes ``current`` (a :func:`port_view`) ``desired``."""
    op = _op(desired, current)
    return base.Plan(tuple([op] if op else ()), before=current, after=predict_port(current, op))
