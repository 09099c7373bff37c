"""A port's ``resource_request``, built exactly as Neutron's QoS plugin builds it.

Pure: no I/O. ``build_port_request`` reproduces
``neutron.services.qos.qos_plugin.QoSPlugin._get_min_bw_request_group`` /
``_get_min_pps_request_group`` / ``_get_resource_request``; the unit tests drive
Neutron's own code with the same inputs and compare.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minbw.errors import RequestError
from minbw.model.requests import MODE_ANY_TRAITS, MODE_NEUTRON, PortRequest, RequestGroup
from minbw.neutron import naming
from minbw.neutron.qos import MIN_BW, MIN_PPS, RULE_GRAMMAR, VNIC_TYPES, QosRule, validate_rules

# Minimum rules each agent's QoS driver accepts (SUPPORTED_RULES of
# neutron/services/qos/drivers/{openvswitch,sriov,ovn}/driver.py; tests compare).
QOS_MIN_RULE_TYPES = {naming.OVS: (MIN_BW, MIN_PPS), naming.SRIOV: (MIN_BW,), naming.OVN: (MIN_BW,)}


@dataclass(frozen=True)
class Segment:
    network_type: str
    physical_network: str | None = None

    @classmethod
    def from_neutron(cls, seg: Mapping[str, Any]) -> Segment:
        """From a segment dict or a network's ``provider:*`` attributes."""
        return cls(
            network_type=seg.get("network_type", seg.get("provider:network_type")),
            physical_network=seg.get("physical_network", seg.get("provider:physical_network")),
        )


TUNNEL_TYPES = ("vxlan", "geneve", "gre")
NETWORK_TYPES = ("vlan", "flat") + TUNNEL_TYPES


def _segment(network_type: str | None, physnet: str | None, where: str) -> Segment:
    """A segment a port is described on: a physnet (vlan or flat) or a tunnel type."""
    tunnel = network_type in TUNNEL_TYPES
    if network_type is not None and network_type not in NETWORK_TYPES:
        raise RequestError(f"{where}: network_type must be one of {', '.join(NETWORK_TYPES)}; got {network_type!r}.")
    if tunnel and physnet:
        raise RequestError(
            f"{where}: a {network_type} network has no physnet; give physical_network or a "
            f"tunnel network_type, not both."
        )
    if physnet is not None and (not isinstance(physnet, str) or not physnet.strip()):
        raise RequestError(f"{where}: physical_network must be a physnet name, got {physnet!r}.")
    if not tunnel and not physnet:
        raise RequestError(f"{where}: a {network_type} segment needs a physical_network.")
    return Segment(network_type or "vlan", None if tunnel else physnet)


def _segment_keys(seg: object, where: str) -> tuple[str | None, str | None]:
    if not isinstance(seg, Mapping):
        raise RequestError(f"{where}: a segment is {{network_type, physical_network}}, got {seg!r}")
    found = Segment.from_neutron(seg)
    return found.network_type, found.physical_network


# A port described without its network: built on a placeholder physnet whose trait is then taken out.
_OPEN_PHYSNET = "minbw-open-physnet"
_OPEN_TRAIT = naming.physnet_trait(_OPEN_PHYSNET)

# The items of a QoS port on the command line besides its rules; each has its module key.
QOS_PORT_ITEMS = {
    "vnic": "vnic_type",
    "vnic_type": "vnic_type",
    "physnet": "physical_network",
    "physical_network": "physical_network",
    "network_type": "network_type",
    "id": "id",
}
QOS_PORT_KEYS = ("qos_rules", "vnic_type", "physical_network", "network_type", "segments", "id")
QOS_PORT_GRAMMAR = (
    f"RULE[,RULE...][,vnic=TYPE][,physnet=NAME | network_type=vxlan|geneve|gre]"
    f"[,segment=TYPE:PHYSNET...][,id=PORT_UUID] where RULE is {RULE_GRAMMAR}"
)
QOS_PORT_EXAMPLE = "min_bw:egress:1000,min_bw:ingress:1000,vnic=normal,physnet=physnet0"


@dataclass(frozen=True)
class QosPort:
    """A port described by its QoS minimum rules, vnic type and network: what a user gives instead of a port
    that exists. One shape for both front ends: a module's dict (:meth:`from_dict`) and the command line's
    ``--qos-port`` value (:meth:`parse`). ``segments`` empty: the network is left open (capacity counts each
    physnet). ``rules`` may lack ids: :meth:`request` makes them up from the port id, as stable uuid5s."""

    rules: tuple[QosRule, ...]
    vnic_type: str = "normal"
    segments: tuple[Segment, ...] = ()
    port_id: str | None = None

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any], where: str) -> QosPort:
        """``{qos_rules: [{type, direction, min_kbps | min_kpps, id?}], vnic_type?, physical_network? |
        network_type?, segments?: [{network_type, physical_network}], id?}``."""
        if not isinstance(spec, Mapping):
            raise RequestError(f"{where}: expected {{{', '.join(QOS_PORT_KEYS)}}}, got {spec!r}")
        unknown = sorted(set(spec) - set(QOS_PORT_KEYS))
        if unknown:
            raise RequestError(f"{where}: unknown key(s) {', '.join(unknown)}; expected {', '.join(QOS_PORT_KEYS)}")
        items = spec.get("qos_rules") or []
        if not isinstance(items, Sequence) or isinstance(items, (str, bytes)) or not items:
            raise RequestError(f"{where}: give at least one QoS rule ({{type, direction, min_kbps | min_kpps}}).")
        rules = []
        for i, item in enumerate(items):
            if isinstance(item, QosRule):
                rules.append(item)
                continue
            if not isinstance(item, Mapping):
                raise RequestError(
                    f"{where}: rule {i}: expected {{type, direction, min_kbps | min_kpps}}, got {item!r}"
                )
            try:
                rules.append(QosRule.from_option(item))
            except RequestError as e:
                raise RequestError(f"{where}: rule {i}: {e}") from None
        try:
            validate_rules([dataclasses.replace(r, id=None) for r in rules], where)
        except RequestError as e:
            raise RequestError(str(e)) from None
        vnic_type = spec.get("vnic_type") or "normal"
        if vnic_type not in VNIC_TYPES:
            raise RequestError(f"{where}: unknown vnic_type {vnic_type!r}; Neutron accepts {', '.join(VNIC_TYPES)}.")
        segments = [
            s if isinstance(s, Segment) else _segment(*_segment_keys(s, where), where)
            for s in spec.get("segments") or ()
        ]
        net, physnet = spec.get("network_type"), spec.get("physical_network")
        if physnet is not None or net in TUNNEL_TYPES:
            segments.insert(0, _segment(net, physnet, where))
        elif net is not None and net not in NETWORK_TYPES:
            _segment(net, physnet, where)  # refused, naming the types
        # else: a vlan or flat network whose physnet is left open
        port_id = spec.get("id")
        if port_id is not None:
            try:
                port_id = str(uuid.UUID(str(port_id)))
            except ValueError:
                raise RequestError(
                    f"{where}: id {port_id!r} is not a UUID; Neutron derives group ids from the port's id."
                ) from None
        return cls(tuple(rules), vnic_type, tuple(segments), port_id)

    @classmethod
    def parse(cls, text: str, where: str) -> QosPort:
        """One ``--qos-port`` value: comma-separated rules (``min_bw:egress:1000``) and items (``vnic=direct``,
        ``physnet=physnet0`` or ``network_type=vxlan``, ``segment=vlan:physnet1`` for more segments,
        ``id=UUID``)."""
        spec: dict[str, Any] = {"qos_rules": [], "segments": []}
        for item in filter(None, (x.strip() for x in str(text).split(","))):
            key, eq, value = item.partition("=")
            if not eq:
                spec["qos_rules"].append(QosRule.parse(item, where))
                continue
            key, value = key.strip(), value.strip()
            if key == "segment":
                net, _colon, physnet = value.partition(":")
                spec["segments"].append({"network_type": net or None, "physical_network": physnet or None})
            elif key in QOS_PORT_ITEMS and value and QOS_PORT_ITEMS[key] not in spec:
                spec[QOS_PORT_ITEMS[key]] = value
            else:
                raise RequestError(f"{where}: {item!r} is not understood (each item once); expected {QOS_PORT_GRAMMAR}")
        return cls.from_dict(spec, where)

    def rules_with_ids(self, port_id: str) -> tuple[QosRule, ...]:
        """The rules, those without an id given a stable made-up one (Neutron derives group ids from them)."""
        return tuple(
            r if r.id else dataclasses.replace(r, id=str(uuid.uuid5(uuid.UUID(port_id), f"rule-{i}")))
            for i, r in enumerate(self.rules)
        )

    def request(
        self,
        port_id: str,
        segments: Sequence[Segment] | None = None,
        *,
        agent_kind: str | naming.AgentKind | None = None,
        any_traits: bool = False,
    ) -> PortRequest | None:
        """The port's ``resource_request`` as Neutron builds it, on ``segments`` (default: its own)."""
        return build_port_request(
            port_id,
            self.rules_with_ids(port_id),
            self.segments if segments is None else segments,
            self.vnic_type,
            agent_kind=agent_kind,
            any_traits=any_traits,
        )

    def open_request(self, port_id: str) -> tuple[PortRequest | None, frozenset[str]]:
        """The request on its own segments, or, with its network left open (no segment given), the request
        Neutron would build on any physnet: its bandwidth group without a physnet trait. Also the ids of the
        groups left open (empty when the network is given)."""
        if self.segments:
            return self.request(port_id), frozenset()
        pr = self.request(port_id, (Segment("vlan", _OPEN_PHYSNET),))
        if pr is None:
            return None, frozenset()
        groups = tuple(
            dataclasses.replace(g, required=tuple(t for t in g.required if t != _OPEN_TRAIT)) for g in pr.groups
        )
        opened = frozenset(g.id for g, old in zip(groups, pr.groups) if old.required != g.required)
        return dataclasses.replace(pr, groups=groups), opened


def segments_of_network(network: Mapping[str, Any]) -> tuple[Segment, ...]:
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
    raise RequestError(f"unknown agent kind {agent_kind!r}; expected one of {', '.join(naming.AGENT_KINDS)}.")


def _validate_for_agent(port_id: str, rules: tuple[QosRule, ...], vnic_type: str, kind: naming.AgentKind) -> None:
    """The QoS driver of ``kind`` must accept the vnic type and every rule (driver manager logic)."""
    if vnic_type not in kind.qos_vnic_types:
        raise RequestError(
            f"port {port_id}: vnic_type {vnic_type!r} cannot carry minimum-bandwidth QoS on the "
            f"{kind.agent_type}: its QoS driver accepts vnic types {', '.join(kind.qos_vnic_types)}. "
            f"Fix: set the port's binding:vnic_type to one of those, or use an agent that serves "
            f"{vnic_type!r} ports."
        )
    supported = QOS_MIN_RULE_TYPES[kind.key]
    for r in rules:
        if r.type not in supported:
            others = [k.agent_type for k in naming.AGENT_KINDS.values() if r.type in QOS_MIN_RULE_TYPES[k.key]]
            raise RequestError(
                f"port {port_id}: QoS rule {r.id!r} ({r.type}) cannot be served by the "
                f"{kind.agent_type}: its QoS driver supports only {', '.join(supported)}. Fix: remove "
                f"the rule from the port's QoS policy, or use a port served by {', '.join(others)}."
            )


def build_port_request(
    port_id: str,
    rules: Iterable[QosRule],
    segments: Iterable[Segment],
    vnic_type: str,
    agent_kind: str | naming.AgentKind | None = None,
    any_traits: bool = False,
) -> PortRequest | None:
    """The port's ``resource_request`` as Neutron computes it (None when it has no minimum rules).

    ``any_traits=True`` (Placement >= 1.39) lets a multi-segment network's bandwidth group land on
    any segment's physnet (``required=in:A,B``); otherwise Neutron's first-segment request is built
    and ``notes`` say what that excludes.
    """
    try:
        port_ns = uuid.UUID(str(port_id))
    except ValueError:
        raise RequestError(f"port id {port_id!r} is not a UUID; Neutron derives group ids from it.") from None
    rules = tuple(rules)
    segments = tuple(segments)
    validate_rules(rules, f"port {port_id}")
    if vnic_type not in VNIC_TYPES:
        raise RequestError(f"port {port_id}: unknown vnic_type {vnic_type!r}; Neutron accepts {', '.join(VNIC_TYPES)}.")
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
            raise RequestError(
                f"port {port_id}: its network has no segments, so the bandwidth "
                f"group has no physnet or tunnel trait. Fix: check the network's "
                f"provider attributes / segments."
            )
        net_traits = list(
            dict.fromkeys(
                naming.physnet_trait(s.physical_network) if s.physical_network else naming.TRAIT_NETWORK_TUNNEL
                for s in segments
            )
        )
        resources = {naming.BW_CLASSES[r.direction]: r.value for r in bw_rules}
        # the type: ignore below: the rules have their ids by now (QosPort.rules_with_ids for a described port)
        gid = naming.request_group_uuid(str(port_ns), [r.id for r in bw_rules])  # type: ignore[misc]
        if any_traits and len(net_traits) > 1:
            mode = MODE_ANY_TRAITS
            groups.append(RequestGroup(gid, tuple(resources.items()), (vnic_trait,), (tuple(net_traits),)))
            notes.append(
                f"bandwidth may come from any of the network's {len(segments)} segments "
                f"(required=in:{','.join(sorted(net_traits))}, Placement >= 1.39); "
                f"Neutron itself would use only the first."
            )
        else:
            groups.append(RequestGroup(gid, tuple(resources.items()), (net_traits[0], vnic_trait)))
            if len(net_traits) > 1:
                notes.append(
                    f"the network has {len(segments)} segments with different providers "
                    f"({', '.join(net_traits)}); as Neutron does, only the first "
                    f"({net_traits[0]}) is requested, so the port cannot land on the "
                    f"others. With Placement >= 1.39 use any-traits to accept all."
                )
    if pps_rules:
        resources = {naming.PPS_CLASSES[r.direction]: r.value for r in pps_rules}
        gid = naming.request_group_uuid(str(port_ns), [r.id for r in pps_rules])  # type: ignore[misc]  # as above
        groups.append(RequestGroup(gid, tuple(resources.items()), (vnic_trait,)))
    if not groups:
        return None
    return PortRequest(
        port_id=str(port_id),
        groups=tuple(groups),
        same_subtree=tuple(g.id for g in groups),
        mode=mode,
        notes=tuple(notes),
    )
