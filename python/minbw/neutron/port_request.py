"""A port's ``resource_request``, built exactly as Neutron's QoS plugin builds it.

Pure: no I/O. ``build_port_request`` reproduces
``neutron.services.qos.qos_plugin.QoSPlugin._get_min_bw_request_group`` /
``_get_min_pps_request_group`` / ``_get_resource_request``; the unit tests drive
Neutron's own code with the same inputs and compare.
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minbw.errors import RequestError
from minbw.model.requests import MODE_ANY_TRAITS, MODE_NEUTRON, PortRequest, RequestGroup
from minbw.neutron import naming
from minbw.neutron.qos import MIN_BW, MIN_PPS, VNIC_TYPES, QosRule, validate_rules

# Minimum rules each agent's QoS driver accepts (SUPPORTED_RULES of
# neutron/services/qos/drivers/{openvswitch,sriov,ovn}/driver.py; tests compare).
QOS_MIN_RULE_TYPES = {naming.OVS: (MIN_BW, MIN_PPS), naming.SRIOV: (MIN_BW,), naming.OVN: (MIN_BW,)}

@dataclass(frozen=True)
class Segment:
    network_type: str
    physical_network: str | None = None

    @classmethod
    def from_neutron(cls, seg: Mapping) -> Segment:
        """From a segment dict or a network's ``provider:*`` attributes."""
        return cls(network_type=seg.get("network_type", seg.get("provider:network_type")),
                   physical_network=seg.get("physical_network", seg.get("provider:physical_network")))


def segments_of_network(network: Mapping) -> tuple[Segment, ...]:
    """A network's segments as the API shows them: ``segments`` (multi-provider) or ``provider:*``."""
    if network.get("segments"):
        return tuple(Segment.from_neutron(s) for s in network["segments"])
    if network.get("provider:network_type"):
        return (Segment.from_neutron(network),)
    return ()


def _kind(agent_kind: str | naming.AgentKind | None) -> naming.AgentKind | None:
    if agent_kind is None or isinstance(agent_kind, naming.AgentKind):
        return agent_kind
    if agent_kind in naming.AGENT_KINDS:
        return naming.AGENT_KINDS[agent_kind]
    if agent_kind in naming.AGENT_KIND_BY_TYPE:
        return naming.AGENT_KIND_BY_TYPE[agent_kind]
    raise RequestError(f"unknown agent kind {agent_kind!r}; expected one of "
                       f"{', '.join(naming.AGENT_KINDS)}.")


def _validate_for_agent(port_id: str, rules: tuple[QosRule, ...], vnic_type: str,
                        kind: naming.AgentKind) -> None:
    """The QoS driver of ``kind`` must accept the vnic type and every rule (driver manager logic)."""
    if vnic_type not in kind.qos_vnic_types:
        raise RequestError(
            f"port {port_id}: vnic_type {vnic_type!r} cannot carry minimum-bandwidth QoS on the "
            f"{kind.agent_type}: its QoS driver accepts vnic types {', '.join(kind.qos_vnic_types)}. "
            f"Fix: set the port's binding:vnic_type to one of those, or use an agent that serves "
            f"{vnic_type!r} ports.")
    supported = QOS_MIN_RULE_TYPES[kind.key]
    for r in rules:
        if r.type not in supported:
            others = [k.agent_type for k in naming.AGENT_KINDS.values()
                      if r.type in QOS_MIN_RULE_TYPES[k.key]]
            raise RequestError(
                f"port {port_id}: QoS rule {r.id!r} ({r.type}) cannot be served by the "
                f"{kind.agent_type}: its QoS driver supports only {', '.join(supported)}. Fix: remove "
                f"the rule from the port's QoS policy, or use a port served by {', '.join(others)}.")


def build_port_request(port_id: str, rules: Iterable[QosRule], segments: Iterable[Segment],
                       vnic_type: str, agent_kind: str | naming.AgentKind | None = None,
                       any_traits: bool = False) -> PortRequest | None:
    """The port's ``resource_request`` as Neutron computes it (None when it has no minimum rules).

    ``any_traits=True`` (Placement >= 1.39) lets a multi-segment network's bandwidth group land on
    any segment's physnet (``required=in:A,B``); otherwise Neutron's first-segment request is built
    and ``notes`` say what that excludes.
    """
    try:
        port_ns = uuid.UUID(str(port_id))
    except ValueError:
        raise RequestError(f"port id {port_id!r} is not a UUID; Neutron derives group ids from it.")
    rules = tuple(rules)
    segments = tuple(segments)
    validate_rules(rules, f"port {port_id}")
    if vnic_type not in VNIC_TYPES:
        raise RequestError(f"port {port_id}: unknown vnic_type {vnic_type!r}; Neutron accepts "
                           f"{', '.join(VNIC_TYPES)}.")
    kind = _kind(agent_kind)
    if kind is not None and rules:
        _validate_for_agent(port_id, rules, vnic_type, kind)

    bw_rules = [r for r in rules if r.type == MIN_BW]
    pps_rules = [r for r in rules if r.type == MIN_PPS]
    vnic_trait = naming.vnic_type_trait(vnic_type)
    groups = []
    mode = MODE_NEUTRON
    notes = []
    if bw_rules:
        if not segments:
            # Neutron's single-port path fails (segments[0]); its bulk path silently drops the group.
            raise RequestError(f"port {port_id}: its network has no segments, so the bandwidth "
                               f"group has no physnet or tunnel trait. Fix: check the network's "
                               f"provider attributes / segments.")
        net_traits = list(dict.fromkeys(
            naming.physnet_trait(s.physical_network) if s.physical_network
            else naming.TRAIT_NETWORK_TUNNEL for s in segments))
        resources = {naming.BW_CLASSES[r.direction]: r.value for r in bw_rules}
        gid = naming.request_group_uuid(str(port_ns), [r.id for r in bw_rules])
        if any_traits and len(net_traits) > 1:
            mode = MODE_ANY_TRAITS
            groups.append(RequestGroup(gid, resources, (vnic_trait,), (tuple(net_traits),)))
            notes.append(f"bandwidth may come from any of the network's {len(segments)} segments "
                         f"(required=in:{','.join(sorted(net_traits))}, Placement >= 1.39); "
                         f"Neutron itself would use only the first.")
        else:
            groups.append(RequestGroup(gid, resources, (net_traits[0], vnic_trait)))
            if len(net_traits) > 1:
                notes.append(f"the network has {len(segments)} segments with different providers "
                             f"({', '.join(net_traits)}); as Neutron does, only the first "
                             f"({net_traits[0]}) is requested, so the port cannot land on the "
                             f"others. With Placement >= 1.39 use any-traits to accept all.")
    if pps_rules:
        resources = {naming.PPS_CLASSES[r.direction]: r.value for r in pps_rules}
        gid = naming.request_group_uuid(str(port_ns), [r.id for r in pps_rules])
        groups.append(RequestGroup(gid, resources, (vnic_trait,)))
    if not groups:
        return None
    return PortRequest(port_id=str(port_id), groups=tuple(groups),
                       same_subtree=tuple(g.id for g in groups), mode=mode, notes=tuple(notes))
