"""The ``port`` module: a Neutron port with a QoS policy and vnic type, declaratively, and the ``resource_request``
Neutron gave it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minbw.ops import neutron
from minbw.plan import ports
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class DesiredPort:
    name: str
    network: str | None = None
    vnic_type: str | None = None
    qos_policy: str | None = None
    fixed_ips: tuple[Mapping, ...] | None = None  # {subnet?, ip_address?}
    present: bool = True
    check: bool = False


@dataclass(frozen=True)
class PortResult:
    changed: bool
    before: dict | None
    after: dict | None
    resource_request: dict | None
    present: bool

    def diff(self) -> dict:
        """Ansible's diff shape: the port before and after ({} for absent)."""
        return {"before": self.before or {}, "after": self.after or {}}

    def to_dict(self) -> dict:
        """``port``: the port after, and Neutron's ``resource_request`` when the port is to be present."""
        return {"port": self.after, **({"resource_request": self.resource_request} if self.present else {})}


def port(cloud: Cloud, request: DesiredPort) -> PortResult:
    """Make the port as desired (present or absent; check mode: the plan only): a PortResult with the port before and
    after and, present, Neutron's ``resource_request``. Raises MissingService without Neutron; a write failing after
    others is a PartialApply."""
    cloud.require("network", "ports live in Neutron")
    net = cloud.conn.network
    network_id = net.find_network(request.network, ignore_missing=False).id if request.network else None
    found = net.find_port(request.name, ignore_missing=True, **({"network_id": network_id} if network_id else {}))
    current = ports.port_view(found)
    desired = None
    if request.present:
        desired = ports.PortSpec(
            name=found.name if found is not None else request.name,  # found by id: keep its name
            network_id=network_id,
            vnic_type=request.vnic_type,
            qos_policy_id=(
                net.find_qos_policy(request.qos_policy, ignore_missing=False).id if request.qos_policy else None
            ),
            fixed_ips=None if request.fixed_ips is None else tuple(fixed_ip(net, f) for f in request.fixed_ips),
        )
    plan = ports.plan_port(desired, current)
    if request.check or not plan.changed:
        after = plan.after
        resource_request = found.resource_request if found is not None and not plan.changed else None
    else:
        after = neutron.apply_port(cloud.conn, found, plan)
        resource_request = net.get_port(after["id"]).resource_request if after else None
    return PortResult(plan.changed, current, after, resource_request, request.present)


def fixed_ip(net, entry: Mapping) -> dict:
    """``entry`` ({subnet?, ip_address?}) as Neutron takes it: ``subnet_id`` (the subnet looked up by name or id) and
    ``ip_address``, each when given."""
    out = {"subnet_id": net.find_subnet(entry["subnet"], ignore_missing=False).id} if entry.get("subnet") else {}
    if entry.get("ip_address"):
        out["ip_address"] = entry["ip_address"]
    return out
