"""The shape to count: a server's flavor resources and traits, and its ports (as Neutron reports their
``resource_request``, or described by their QoS rules). Pure."""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from minbw.errors import InvalidInput, RequestError
from minbw.model.requests import PortRequest, RequestGroup, ServerRequest
from minbw.model.resources import check_resources
from minbw.neutron import naming
from minbw.neutron.port_request import QosPort

PHYSNET_PREFIX = "CUSTOM_PHYSNET_"
TUNNEL_TRAIT = naming.TRAIT_NETWORK_TUNNEL
TUNNEL_LABEL = "tunnel"

_PORT_NS = uuid.UUID("5b0d7f0e-2a55-4d1b-9f4c-1f3ce7a0c0de")  # stable ids for ports given by rules


@dataclass(frozen=True)
class CapacityRequest:
    """A server's shape. ``open_groups``: ids of port groups whose network (physnet or tunnel) is not
    fixed, counted once per network of each host. ``labels``: trait → physnet name as the user wrote
    it (the trait alone loses case and punctuation)."""

    server: ServerRequest
    open_groups: frozenset[str] = frozenset()
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    port_names: Mapping[str, str] = dataclasses.field(default_factory=dict)  # port id → how the user named it
    root_reasons: Mapping[str, str] = dataclasses.field(default_factory=dict)  # root trait → why it is asked for
    # root uuid → why Nova's request filters keep the host out by its aggregates (an availability zone, tenant
    # isolation, isolated aggregates: member_of on the compute node)
    excluded_roots: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "open_groups", frozenset(self.open_groups))
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))
        object.__setattr__(self, "port_names", MappingProxyType(dict(self.port_names)))
        object.__setattr__(self, "root_reasons", MappingProxyType(dict(self.root_reasons)))
        object.__setattr__(self, "excluded_roots", MappingProxyType(dict(self.excluded_roots)))
        groups = self.server.request_groups()
        if not any(g.resources for g in groups):
            raise InvalidInput(
                "nothing to count: the server asks for no resources. Fix: give the flavor's "
                "resources (--resources / resources) and/or a QoS port (--port / qos_ports)."
            )
        unknown = self.open_groups - {g.id for g in groups}
        if unknown:
            raise RequestError(f"open groups {sorted(unknown)} are not request groups of the server")

    def for_network(self, traits: Sequence[str]) -> ServerRequest:
        """The server with every open group on one of ``traits`` (one trait: that network)."""
        if not self.open_groups:
            return self.server
        traits = tuple(traits)

        def group(g: RequestGroup) -> RequestGroup:
            """``g`` with ``traits`` required (one trait) or as any-traits (several) when it is an open group, else
            ``g``."""
            if g.id not in self.open_groups:
                return g
            if len(traits) == 1:
                return dataclasses.replace(g, required=(traits[0], *g.required))
            return dataclasses.replace(g, required_any=(*g.required_any, traits))

        ports = tuple(dataclasses.replace(p, groups=tuple(group(g) for g in p.groups)) for p in self.server.ports)
        return dataclasses.replace(self.server, ports=ports)

    def fixed_networks(self) -> tuple[str, ...]:
        """The network traits the server's port groups require (the ports whose network is fixed)."""
        found = {t for g in self.server.request_groups() for t in g.required if is_network_trait(t)}
        return tuple(sorted(found))

    def label(self, trait: str) -> str:
        """The network's name for a trait: as the user wrote it, else as far as the trait tells (network_label)."""
        return self.labels.get(trait) or network_label(trait)

    def to_dict(self) -> dict:
        """The shape as a JSON-ready dict: flavor resources, required, group_policy and each request group (``network``:
        ``each`` for an open group)."""
        return {
            "flavor": self.server.flavor_resources(),
            "required": list(self.server.required),
            "group_policy": self.server.effective_group_policy(),
            "groups": [
                {
                    "id": g.id,
                    "resources": g.resource_dict,
                    "required": list(g.required),
                    "required_any": [list(a) for a in g.required_any],
                    "forbidden": list(g.forbidden),
                    "network": "each" if g.id in self.open_groups else None,
                }
                for g in self.server.request_groups()
            ],
        }


def is_network_trait(trait: str) -> bool:
    """Whether the trait names a network: ``CUSTOM_PHYSNET_*`` or the tunnel trait."""
    return trait.startswith(PHYSNET_PREFIX) or trait == TUNNEL_TRAIT


def network_label(trait: str) -> str:
    """A physnet's name as far as its trait tells (upper case and punctuation are lost: lower case)."""
    if trait == TUNNEL_TRAIT:
        return TUNNEL_LABEL
    return trait.removeprefix(PHYSNET_PREFIX).lower() if trait.startswith(PHYSNET_PREFIX) else trait


_TRAIT = re.compile(r"^[A-Z0-9_]{1,255}$")


def qos_port(index: int, port: QosPort, where: str = "") -> tuple[PortRequest, frozenset[str]]:
    """A port given by its QoS rules, vnic type and network, as Neutron would request it: its ``PortRequest``
    and the ids of its groups whose network is left open (no physnet and no tunnel type given: each physnet
    of each host is tried)."""
    where = where or f"port {index}"
    if len(port.segments) > 1:
        raise InvalidInput(
            f"{where}: capacity counts a port on one network; give one physnet (or a tunnel "
            f"network_type), or leave it out to count each physnet."
        )
    pr, open_ids = port.open_request(port.port_id or str(uuid.uuid5(_PORT_NS, f"port-{index}")))
    if pr is None:
        raise InvalidInput(f"{where}: no minimum rule: nothing to reserve.")
    return pr, open_ids


def capacity_request(
    resources: Mapping | None = None,
    required: Iterable[str] = (),
    port_requests: Iterable = (),
    qos_ports: Sequence[QosPort | Mapping] = (),
    *,
    group_policy: str | None = None,
    resources_option: str = "resources",
    port_labels: Sequence[str] | None = None,
    flavor: ServerRequest | None = None,
    root_reasons: Mapping[str, str] | None = None,
    excluded_roots: Mapping[str, str] | None = None,
) -> CapacityRequest:
    """The shape to count, from plain data (CLI options, module parameters): the flavor's resources and
    traits, ports as Neutron reports their ``resource_request`` (``port_requests``), and ports given by
    their QoS rules (``qos_ports``: :class:`QosPort` or its dict; a port without physical_network or tunnel
    network_type is counted on each physnet). ``port_labels`` name the qos_ports in errors (default
    ``qos_ports[i]``). ``flavor``: the server as Nova's query has it without ports (its flavor groups, traits and
    root traits: :mod:`minbw.nova`), instead of ``resources``, ``required`` and ``group_policy``;
    ``root_reasons``: why it asks for each root trait; ``excluded_roots``: the hosts (root uuid → why) Nova's
    request filters keep out by their aggregates."""
    amounts = check_resources(resources, resources_option)
    built: list[PortRequest] = []
    opened: set[str] = set()
    labels: dict[str, str] = {}
    names: dict[str, str] = {}
    for i, spec in enumerate(qos_ports or ()):
        where = port_labels[i] if port_labels else f"qos_ports[{i}]"
        try:
            port = spec if isinstance(spec, QosPort) else QosPort.from_dict(spec, where)
        except RequestError as e:
            raise InvalidInput(str(e)) from None
        pr, open_ids = qos_port(i, port, where)
        built.append(pr)
        names[pr.port_id or ""] = where  # qos_port gives each port an id
        opened |= open_ids
        for s in port.segments:
            if s.physical_network:
                labels[naming.physnet_trait(s.physical_network)] = s.physical_network
    traits = [t for t in (required or ()) if t]
    for t in traits:
        if not _TRAIT.match(t.removeprefix("!")):
            raise InvalidInput(f"required: {t!r} is not a trait name (A-Z, 0-9, _; forbidden ones start with !).")
    if group_policy not in (None, "none", "isolate"):
        raise InvalidInput(f"group_policy must be none or isolate, got {group_policy!r}.")
    server = ServerRequest.from_options(
        amounts, [t for t in traits if not t.startswith("!")], port_requests, group_policy=group_policy
    )
    server = dataclasses.replace(server, forbidden=tuple(t[1:] for t in traits if t.startswith("!")))
    if flavor is not None:
        server = dataclasses.replace(
            flavor, ports=server.ports, limit=None, group_policy=group_policy or flavor.group_policy
        )
    return CapacityRequest(
        dataclasses.replace(server, ports=server.ports + tuple(built)),
        frozenset(opened),
        labels,
        names,
        root_reasons or {},
        excluded_roots or {},
    )
