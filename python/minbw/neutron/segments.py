"""Routed networks: what Neutron's segments plugin reports to Placement, and what a port's segment asks.

Pure: no I/O. Neutron (``neutron/services/segments/plugin.py``, ``NovaSegmentNotifier``) gives each
segment with an IPv4 subnet one resource provider: uuid = the segment id, name
``Neutron segment id <id>``, an ``IPV4_ADDRESS`` inventory summed over the segment's IPv4 subnets
(:func:`ipv4_inventory`, its ``_calculate_inventory_total_and_reserved``), and an aggregate that the
compute hosts mapped to the segment join. Hosts map to a segment as ``services/segments/db.py`` maps
them: an agent on the host has the segment's physical network in its bridge/interface/device
mappings and its driver accepts the segment's network type (:func:`hosts_of_segment`).

``total`` and ``reserved`` are running counts: Neutron only ever adds deltas to them. A subnet adds its
addresses and reservations; every IPv4 address of a port that is neither a compute port nor a DHCP
port adds one to ``reserved`` when the port is made and takes it off when the port goes
(``_notify_port_created_or_deleted``, :func:`port_reservation`). The count predicted here is the one
those deltas reach from today's subnets and ports.

Nova's routed-network prefilter (``nova/scheduler/request_filter.py`` ``routed_networks_filter``)
adds one ``member_of=in:...`` per port: the aggregates of the segment of each fixed IP's subnet, or,
for a port without an IP yet, of every segment of its network (:func:`port_member_of`). We do the
same, minus the segments whose subnets have no free address left (Nova would pick such a host and
fail at binding).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from minbw.errors import NoValidHost
from minbw.neutron.agentconf import parse_mappings

IPV4_ADDRESS = "IPV4_ADDRESS"
SEGMENT_NAME = "Neutron segment id %s"
# neutron_lib.constants: the ports whose addresses Neutron does not count (DEVICE_OWNER_COMPUTE_PREFIX,
# DEVICE_OWNER_DHCP; the subnet's own reservation stands for the DHCP port)
COMPUTE_OWNER_PREFIX = "compute:"
DHCP_OWNER = "network:dhcp"
# network types an L2 agent serves without tunnel_types (AgentMechanismDriverBase.get_allowed_network_types
# for OVS; the SR-IOV driver takes flat and vlan)
_PHYSNET_TYPES = ("flat", "vlan")
_MAPPING_KEYS = ("bridge_mappings", "interface_mappings", "device_mappings")
OVN_BRIDGE_MAPPINGS = "bridge-mappings"  # an OVN Controller (Gateway) agent's configurations


def subnet_total_reserved(subnet: Mapping[str, Any]) -> tuple[int, int]:
    """One IPv4 subnet's (total, reserved), as Neutron's ``_calculate_inventory_total_and_reserved``:
    every pool address, plus the gateway (total and reserved), plus one reserved for DHCP."""
    total = reserved = 0
    for pool in subnet.get("allocation_pools") or []:
        total += int(ipaddress.ip_address(pool["end"])) - int(ipaddress.ip_address(pool["start"])) + 1
    if total:
        if subnet.get("gateway_ip"):
            total += 1
            reserved += 1
        if subnet.get("enable_dhcp"):
            reserved += 1
    return total, reserved


def ipv4_inventory(subnets: Iterable[Mapping[str, Any]], port_addresses: int = 0) -> dict[str, dict[str, Any]] | None:
    """The segment provider's inventory for its subnets (IPv4 only) and the ``port_addresses`` Neutron
    counts on it (:func:`port_reservation`), None when it has no addresses.

    Neutron creates the inventory with the first subnet and adds each later one's total and reserved,
    and one reserved per counted port address."""
    total = reserved = 0
    for s in subnets:
        if int(s.get("ip_version") or 4) != 4:
            continue
        t, r = subnet_total_reserved(s)
        total, reserved = total + t, reserved + r
    if not total:
        return None
    reserved += port_addresses
    return {
        IPV4_ADDRESS: {
            "total": total,
            "reserved": reserved,
            "min_unit": 1,
            "max_unit": 1,
            "step_size": 1,
            "allocation_ratio": 1.0,
        }
    }


def counted_by_neutron(port: Mapping[str, Any]) -> bool:
    """Does Neutron count this port's addresses in its segment's ``reserved``
    (``_does_port_require_nova_inventory_update``)? Every device owner but ``compute:*`` and
    ``network:dhcp``: routers, floating IPs, load balancers, bare metal, and ports with no owner."""
    owner = port.get("device_owner") or ""
    return not owner.startswith(COMPUTE_OWNER_PREFIX) and owner != DHCP_OWNER


def ipv4_subnet_ids(port: Mapping[str, Any]) -> list[str]:
    """The subnets of the port's IPv4 addresses, one per address, in the port's order (``_get_ipv4_subnet_ids``)."""
    return [
        ip["subnet_id"] for ip in port.get("fixed_ips") or [] if ipaddress.ip_address(ip["ip_address"]).version == 4
    ]


def port_reservation(port: Mapping[str, Any], subnet_segment: Mapping[str, str]) -> tuple[str | None, int]:
    """``(segment id, addresses)`` that Neutron adds to ``reserved`` for ``port`` (and takes off when it
    goes); ``(None, 0)`` when it counts nothing. Every IPv4 address counts, all of them on the segment of
    the first one's subnet (``_get_ipv4_subnets_number_and_segment_id``), even when a later one is on
    another segment."""
    if not counted_by_neutron(port):
        return None, 0
    subnets = ipv4_subnet_ids(port)
    segment = subnet_segment.get(subnets[0]) if subnets else None
    return (segment, len(subnets)) if segment else (None, 0)


@dataclass(frozen=True)
class CountedPort:
    """A port whose IPv4 addresses Neutron counts in its segment's ``reserved``."""

    id: str
    name: str | None
    device_owner: str
    addresses: int
    deferred: bool = False  # created without an address (ip_allocation "deferred"), given one later

    def to_dict(self) -> dict[str, Any]:
        """The port as a JSON-ready dict: id, name, device_owner, addresses, deferred."""
        return {
            "id": self.id,
            "name": self.name,
            "device_owner": self.device_owner,
            "addresses": self.addresses,
            "deferred": self.deferred,
        }


def agent_physnets(agent: Mapping[str, Any]) -> set[str]:
    """Physical networks in an agent's reported mappings (Neutron's ``_get_phys_nets``); an OVN Controller agent
    reports its chassis's ``ovn-bridge-mappings`` as the string ``bridge-mappings``, which the OVN mechanism
    driver parses (``ChassisEvent.run``: ``parse_mappings(mappings.split(','))``) to map the host."""
    conf = agent.get("configurations") or agent.get("configuration") or {}
    out: set[str] = set()
    for key in _MAPPING_KEYS:
        out |= set((conf.get(key) or {}).keys())
    if isinstance(conf.get(OVN_BRIDGE_MAPPINGS), str):
        try:
            out |= set(parse_mappings(conf[OVN_BRIDGE_MAPPINGS].split(",")))
        except ValueError:  # Neutron's chassis event fails alike: the host is mapped to no segment
            pass
    return out


def agent_serves(segment: Mapping[str, Any], agent: Mapping[str, Any]) -> bool:
    """Can ``agent`` bind ports on ``segment`` (its driver's ``check_segment_for_agent``)?"""
    conf = agent.get("configurations") or agent.get("configuration") or {}
    network_type = segment.get("network_type")
    allowed = set(_PHYSNET_TYPES) | set(conf.get("tunnel_types") or ())
    if network_type not in allowed:
        return False
    if network_type in _PHYSNET_TYPES:
        return segment.get("physical_network") in agent_physnets(agent)
    return True


def hosts_of_segment(segment: Mapping[str, Any], agents: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The hosts Neutron maps to a segment with a physical network (none for tunnelled segments)."""
    if not segment.get("physical_network"):
        return ()
    return tuple(sorted({a["host"] for a in agents if agent_serves(segment, a)}))


@dataclass(frozen=True)
class RoutedSegment:
    """A segment of a routed network as Placement should show it, and how many addresses are left."""

    id: str
    network_id: str
    name: str | None
    network_type: str
    physical_network: str | None
    subnets: tuple[str, ...]
    inventory: Mapping[str, Mapping[str, Any]] | None
    hosts: tuple[str, ...]
    free_ips: int | None = None  # from Neutron's IP availability; None when unknown
    ports: tuple[CountedPort, ...] = ()  # the ports counted in the inventory's reserved

    @property
    def port_addresses(self) -> int:
        """The IPv4 addresses of the counted ports, summed (what the inventory's ``reserved`` includes for them)."""
        return sum(p.addresses for p in self.ports)

    @property
    def provider_name(self) -> str:
        """The segment's provider name in Placement, ``Neutron segment id <id>``."""
        return SEGMENT_NAME % self.id

    @property
    def label(self) -> str:
        """``segment NAME (PHYSNET)`` for messages (the id when unnamed, the network type when no physnet)."""
        where = self.physical_network or self.network_type
        return f"segment {self.name or self.id} ({where})"

    def to_dict(self) -> dict[str, Any]:
        """The segment as a JSON-ready dict: its fields, ``provider`` (uuid, name, inventories) and
        ``reserved_ports``."""
        return {
            "id": self.id,
            "network_id": self.network_id,
            "name": self.name,
            "network_type": self.network_type,
            "physical_network": self.physical_network,
            "subnets": list(self.subnets),
            "provider": {
                "uuid": self.id,
                "name": self.provider_name,
                "inventories": {rc: dict(i) for rc, i in (self.inventory or {}).items()},
            },
            "hosts": list(self.hosts),
            "free_ips": self.free_ips,
            "reserved_ports": [p.to_dict() for p in self.ports],
        }


def routed_segments(
    segments: Iterable[Mapping[str, Any]],
    subnets: Iterable[Mapping[str, Any]],
    agents: Iterable[Mapping[str, Any]],
    ip_availability: Mapping[str, Mapping[str, Any]] | None = None,
    ports: Iterable[Mapping[str, Any]] = (),
) -> tuple[RoutedSegment, ...]:
    """Every segment of the given networks with what Neutron reports for it.

    ``segments``/``subnets``/``agents``/``ports`` are Neutron API dicts (``segment_id`` on subnets; the
    networks' ports with ``device_owner``, ``fixed_ips``, ``ip_allocation``); ``ip_availability`` maps
    subnet id → ``{"total_ips", "used_ips"}`` (Neutron's network-ip-availabilities); a segment's
    ``free_ips`` sums its IPv4 subnets' free addresses."""
    agents, subnets = list(agents), list(subnets)
    by_segment: dict[str, list[Mapping[str, Any]]] = {}
    for s in subnets:
        if s.get("segment_id"):
            by_segment.setdefault(s["segment_id"], []).append(s)
    subnet_segment = {s["id"]: s["segment_id"] for s in subnets if s.get("segment_id")}
    counted: dict[str, list[CountedPort]] = {}
    for p in sorted(ports, key=lambda p: p["id"]):
        seg_id, n = port_reservation(p, subnet_segment)
        if seg_id:
            counted.setdefault(seg_id, []).append(
                CountedPort(
                    p["id"], p.get("name") or None, p.get("device_owner") or "", n, p.get("ip_allocation") == "deferred"
                )
            )
    out = []
    for seg in sorted(segments, key=lambda s: (s.get("network_id") or "", s["id"])):
        mine = by_segment.get(seg["id"], [])
        v4 = [s for s in mine if int(s.get("ip_version") or 4) == 4]
        free = None
        if ip_availability is not None:
            free = sum(
                max(0, int(ip_availability[s["id"]]["total_ips"]) - int(ip_availability[s["id"]]["used_ips"]))
                for s in v4
                if s["id"] in ip_availability
            )
        out.append(
            RoutedSegment(
                id=seg["id"],
                network_id=seg.get("network_id") or "",
                name=seg.get("name") or None,
                network_type=seg.get("network_type") or "",
                physical_network=seg.get("physical_network") or None,
                subnets=tuple(sorted(s["id"] for s in v4)),
                inventory=ipv4_inventory(v4, sum(p.addresses for p in counted.get(seg["id"], ()))),
                hosts=hosts_of_segment(seg, agents),
                free_ips=free,
                ports=tuple(counted.get(seg["id"], ())),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class SegmentChoice:
    """The segments a port may use, the aggregates that express them, and the ones left out (why)."""

    port_id: str
    candidates: tuple[str, ...]  # segment ids the port may land on
    aggregates: tuple[str, ...]  # member_of=in: these
    excluded: tuple[tuple[str, str], ...] = ()  # (segment id, why)

    def to_dict(self) -> dict[str, Any]:
        """The choice as a JSON-ready dict: port_id, ``segments``, ``member_of`` and ``excluded`` ({segment, why}
        each)."""
        return {
            "port_id": self.port_id,
            "segments": list(self.candidates),
            "member_of": list(self.aggregates),
            "excluded": [{"segment": s, "why": w} for s, w in self.excluded],
        }


def port_segments(
    port: Mapping[str, Any], segments: Iterable[RoutedSegment], subnet_segment: Mapping[str, str]
) -> tuple[str, ...]:
    """The segments a port can use (Nova's prefilter): its fixed IPs' subnets' segments, else all of its network's."""
    fixed = [ip.get("subnet_id") for ip in port.get("fixed_ips") or []]
    if fixed:
        return tuple(sorted({subnet_segment[s] for s in fixed if subnet_segment.get(s)}))
    return tuple(sorted(s.id for s in segments if s.network_id == port.get("network_id")))


def port_member_of(
    port: Mapping[str, Any],
    segments: Iterable[RoutedSegment],
    subnet_segment: Mapping[str, str],
    aggregates: Mapping[str, Iterable[str]],
) -> SegmentChoice | None:
    """The ``member_of`` a port on a routed network adds to its server's query (None: not routed).

    ``aggregates`` maps segment id → the aggregates of its Placement provider. A segment without a
    provider, without hosts, or (for a port that still needs an address) without a free address is
    left out and said why; when none is left, NoValidHost names every reason."""
    segments = tuple(segments)
    wanted = port_segments(port, segments, subnet_segment)
    if not wanted:
        return None
    by_id = {s.id: s for s in segments}
    needs_address = not port.get("fixed_ips")
    keep, aggs, excluded = [], set(), []
    for sid in wanted:
        seg = by_id.get(sid)
        label = seg.label if seg else f"segment {sid}"
        seg_aggs = set(aggregates.get(sid) or ())
        if not seg_aggs:
            excluded.append(
                (
                    sid,
                    f"{label}: Placement has no provider with an aggregate for it (no IPv4 subnet, "
                    f"or nobody reported it: run `minbw segment sync`)",
                )
            )
        elif seg is not None and not seg.hosts:
            excluded.append((sid, f"{label}: no host has an agent mapping physical network {seg.physical_network!r}"))
        elif needs_address and seg is not None and seg.free_ips == 0:
            excluded.append(
                (
                    sid,
                    f"{label}: no host in its aggregate has free IPv4 addresses (its subnets "
                    f"{', '.join(seg.subnets)} are exhausted)",
                )
            )
        else:
            keep.append(sid)
            aggs |= seg_aggs
    if not keep:
        raise NoValidHost(
            f"No valid host: port {port.get('id')}: no segment of its network can take it: "
            + "; ".join(why for _port, why in excluded)
            + ". Fix: add addresses (a subnet or a larger "
            "allocation pool) to a segment, or map a host to it."
        )
    return SegmentChoice(
        port_id=port.get("id") or "", candidates=tuple(keep), aggregates=tuple(sorted(aggs)), excluded=tuple(excluded)
    )


def host_not_in_segments(host: str, choice: SegmentChoice, segments: Iterable[RoutedSegment]) -> str:
    """Why ``host`` cannot take the port ("" when it can): "host H is not in segment S"."""
    by_id = {s.id: s for s in segments}
    if any(host in by_id[s].hosts for s in choice.candidates if s in by_id):
        return ""
    names = ", ".join(by_id[s].label if s in by_id else s for s in choice.candidates)
    return f"host {host} is not in {names}"
