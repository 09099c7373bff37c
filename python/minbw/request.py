"""A port's ``resource_request``, built exactly as Neutron's QoS plugin builds it.

Pure: no I/O. ``build_port_request`` reproduces
``neutron.services.qos.qos_plugin.QoSPlugin._get_min_bw_request_group`` /
``_get_min_pps_request_group`` / ``_get_resource_request``; the unit tests drive
Neutron's own code with the same inputs and compare.
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from minbw import naming
from minbw.errors import RequestError

MIN_BW = "minimum_bandwidth"
MIN_PPS = "minimum_packet_rate"
RULE_TYPES = (MIN_BW, MIN_PPS)
# Neutron's API: bandwidth rules have a direction, packet-rate rules may be direction-less ("any").
RULE_DIRECTIONS = {MIN_BW: tuple(naming.BW_CLASSES), MIN_PPS: tuple(naming.PPS_CLASSES)}
RULE_VALUE_KEYS = {MIN_BW: "min_kbps", MIN_PPS: "min_kpps"}
RULE_UNITS = {MIN_BW: "kbps", MIN_PPS: "kpps"}
# neutron_lib.db.constants.DB_INTEGER_MAX_VALUE: the API range of min_kbps / min_kpps.
MAX_RULE_VALUE = 2**31 - 1

# Minimum rules each agent's QoS driver accepts (SUPPORTED_RULES of
# neutron/services/qos/drivers/{openvswitch,sriov}/driver.py; tests compare).
QOS_MIN_RULE_TYPES = {naming.OVS: (MIN_BW, MIN_PPS), naming.SRIOV: (MIN_BW,)}

# neutron_lib.api.definitions.portbindings.VNIC_TYPES: what the port API accepts.
VNIC_TYPES = ("normal", "direct", "macvtap", "baremetal", "direct-physical", "virtio-forwarder",
              "smart-nic", "vdpa", "accelerator-direct", "accelerator-direct-physical",
              "remote-managed")

# How the network part of the bandwidth group was built.
MODE_NEUTRON = "neutron"          # exactly Neutron's request (first segment only)
MODE_ANY_TRAITS = "any-traits"    # required=in:A,B over all segments (Placement 1.39)


@dataclass(frozen=True)
class QosRule:
    id: str
    type: str
    direction: str
    value: int

    @classmethod
    def from_neutron(cls, rule: Mapping) -> QosRule:
        """From a Neutron API rule dict (``type``, ``direction``, ``min_kbps``/``min_kpps``)."""
        rtype = rule.get("type")
        if rtype not in RULE_TYPES:
            raise RequestError(f"QoS rule {rule.get('id')!r}: type {rtype!r} is not a minimum rule "
                               f"({', '.join(RULE_TYPES)}); only those reserve resources in Placement.")
        return cls(id=rule["id"], type=rtype, direction=rule.get("direction", "egress"),
                   value=rule[RULE_VALUE_KEYS[rtype]])


def min_rules(rules: Iterable[Mapping]) -> tuple[QosRule, ...]:
    """The minimum rules of a policy's ``rules`` list, in the policy's order; others are ignored."""
    return tuple(QosRule.from_neutron(r) for r in rules if r.get("type") in RULE_TYPES)


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


@dataclass(frozen=True)
class RequestGroup:
    """One request group; ``id`` is its Placement suffix ("" for the unsuffixed group)."""

    id: str
    resources: tuple[tuple[str, int], ...] = ()
    required: tuple[str, ...] = ()
    # each inner tuple is one "required=in:A,B": at least one of them
    required_any: tuple[tuple[str, ...], ...] = ()
    forbidden: tuple[str, ...] = ()

    def __post_init__(self):
        res = self.resources.items() if isinstance(self.resources, Mapping) else self.resources
        object.__setattr__(self, "resources", tuple(sorted((str(k), v) for k, v in res)))
        # required keeps Neutron's order (network trait, then vnic trait) so to_neutron() is exact
        object.__setattr__(self, "required", tuple(dict.fromkeys(self.required)))
        object.__setattr__(self, "required_any", tuple(tuple(sorted(set(a))) for a in self.required_any))
        object.__setattr__(self, "forbidden", tuple(sorted(set(self.forbidden))))

    @property
    def resource_dict(self) -> dict[str, int]:
        return dict(self.resources)

    def to_neutron(self) -> dict:
        out = {"id": self.id, "required": list(self.required), "resources": self.resource_dict}
        if self.required_any:
            # Not Neutron's: Neutron has no any-traits yet; from_neutron() reads it back.
            out["required_any"] = [list(a) for a in self.required_any]
        return out

    @classmethod
    def from_neutron(cls, group: Mapping, group_id: str | None = None, where: str = "") -> RequestGroup:
        gid = group.get("id", group_id)
        if not gid or not isinstance(gid, str):
            raise RequestError(f"{where}request group without an 'id'. Fix: pass the port's "
                               f"resource_request exactly as Neutron returns it.")
        resources = group.get("resources")
        if not isinstance(resources, Mapping) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in resources.values()):
            raise RequestError(f"{where}group {gid}: 'resources' must map resource classes to "
                               f"non-negative integers, got {resources!r}.")
        required = group.get("required", [])
        if isinstance(required, str) or not all(isinstance(t, str) for t in required):
            raise RequestError(f"{where}group {gid}: 'required' must be a list of trait names, "
                               f"got {required!r}.")
        return cls(id=gid, resources=resources, required=tuple(required),
                   required_any=tuple(tuple(a) for a in group.get("required_any", ())))


@dataclass(frozen=True)
class PortRequest:
    """A port's resource request: its groups and ``same_subtree``.

    ``legacy`` says the port speaks the single-group format (``binding:profile.allocation``
    is then one provider uuid); ``mode`` and ``notes`` say how the request was built.
    """

    port_id: str | None
    groups: tuple[RequestGroup, ...]
    same_subtree: tuple[str, ...] = ()
    legacy: bool = False
    mode: str = MODE_NEUTRON
    notes: tuple[str, ...] = field(default=(), compare=False)

    def to_neutron(self) -> dict | None:
        if not self.groups:
            return None
        return {"request_groups": [g.to_neutron() for g in self.groups],
                "same_subtree": list(self.same_subtree)}

    def to_legacy(self) -> dict | None:
        if not self.groups:
            return None
        if len(self.groups) > 1 or self.groups[0].required_any:
            raise RequestError(
                f"port {self.port_id}: the legacy resource_request format holds one group of "
                f"required traits; this request has {len(self.groups)} group(s)"
                f"{' and any-traits' if self.groups[0].required_any else ''}. Fix: use the "
                f"request_groups format (Neutron extension port-resource-request-groups).")
        g = self.groups[0]
        return {"required": list(g.required), "resources": g.resource_dict}

    @classmethod
    def from_neutron(cls, value: Mapping | None, port_id: str | None = None) -> PortRequest | None:
        """Read a port's ``resource_request`` in either format; None means no request."""
        if value is None:
            return None
        where = f"port {port_id}: " if port_id else ""
        if not isinstance(value, Mapping):
            raise RequestError(f"{where}resource_request must be an object or null, got {value!r}.")
        if "request_groups" in value:
            groups = tuple(RequestGroup.from_neutron(g, where=where) for g in value["request_groups"])
            ids = [g.id for g in groups]
            if len(set(ids)) != len(ids):
                raise RequestError(f"{where}duplicate request group ids {ids}.")
            subtree = tuple(value.get("same_subtree") or ())
            unknown = set(subtree) - set(ids)
            if unknown:
                raise RequestError(f"{where}same_subtree names groups that are not in "
                                   f"request_groups: {sorted(unknown)}.")
            if not groups:
                return None
            mode = MODE_ANY_TRAITS if any(g.required_any for g in groups) else MODE_NEUTRON
            return cls(port_id=port_id, groups=groups, same_subtree=subtree, mode=mode)
        if "resources" in value:
            if not port_id:
                # Nova uses the port id as the suffix of a legacy group; without it there is no id.
                raise RequestError("a legacy resource_request (no request_groups) has no group id: "
                                   "Nova names the group after the port. Fix: pass port_id.")
            return cls(port_id=port_id, groups=(RequestGroup.from_neutron(value, port_id, where),),
                       legacy=True)
        raise RequestError(f"{where}resource_request has neither 'request_groups' nor 'resources': "
                           f"{value!r}.")


def _kind(agent_kind: str | naming.AgentKind | None) -> naming.AgentKind | None:
    if agent_kind is None or isinstance(agent_kind, naming.AgentKind):
        return agent_kind
    if agent_kind in naming.AGENT_KINDS:
        return naming.AGENT_KINDS[agent_kind]
    if agent_kind in naming.AGENT_KIND_BY_TYPE:
        return naming.AGENT_KIND_BY_TYPE[agent_kind]
    raise RequestError(f"unknown agent kind {agent_kind!r}; expected one of "
                       f"{', '.join(naming.AGENT_KINDS)}.")


def _validate_rules(port_id: str, rules: tuple[QosRule, ...]) -> None:
    """What Neutron's API and QoS policy checks refuse before any request exists."""
    seen: dict[tuple[str, str], str] = {}
    for r in rules:
        where = f"port {port_id}: QoS rule {r.id!r}"
        if not isinstance(r.id, str) or not r.id:
            raise RequestError(f"port {port_id}: a QoS rule has no id; the group id is derived "
                               f"from rule ids. Fix: pass the rules as Neutron stores them.")
        if r.type not in RULE_TYPES:
            raise RequestError(f"{where}: type {r.type!r} is not one of {', '.join(RULE_TYPES)}.")
        if r.direction not in RULE_DIRECTIONS[r.type]:
            raise RequestError(f"{where}: a {r.type} rule's direction must be one of "
                               f"{', '.join(RULE_DIRECTIONS[r.type])}, got {r.direction!r}.")
        if not isinstance(r.value, int) or isinstance(r.value, bool) or not 0 <= r.value <= MAX_RULE_VALUE:
            raise RequestError(f"{where}: {RULE_VALUE_KEYS[r.type]} must be an integer in "
                               f"[0, {MAX_RULE_VALUE}], got {r.value!r}.")
        key = (r.type, r.direction)
        if key in seen:
            # neutron.objects.qos.qos_policy_validator.check_rules_conflict
            raise RequestError(f"{where}: duplicates rule {seen[key]!r} ({r.type}, {r.direction}); "
                               f"Neutron allows one per type and direction in a policy. Fix: keep one.")
        seen[key] = r.id
    pps_dirs = {r.direction for r in rules if r.type == MIN_PPS}
    if "any" in pps_dirs and len(pps_dirs) > 1:
        # check_min_pps_rule_conflict: direction-less and directed packet-rate rules do not mix
        raise RequestError(f"port {port_id}: minimum_packet_rate rules mix direction 'any' with "
                           f"{sorted(pps_dirs - {'any'})}; Neutron refuses that. Fix: use either one "
                           f"'any' rule or egress/ingress rules.")


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
    _validate_rules(port_id, rules)
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
