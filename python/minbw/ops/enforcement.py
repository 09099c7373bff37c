"""``minbw enforcement show``: read what one host's Open vSwitch data plane enforces, what Neutron's rules ask of
the ports bound there and what Placement reserved for them, and join them with
:func:`minbw.reports.enforcement.ovs_host`. Reads only: nothing is written to OVSDB, netlink, Neutron or Placement.

The calls, whatever the number of ports:

- Neutron: one agent listing (``GET /v2.0/agents?host=H``: the OVS agent's ``bridge_mappings`` and
  ``resource_provider_hypervisors``), one port listing (``GET /v2.0/ports?binding:host_id=H``), and one QoS policy
  listing and one network listing filtered by the ids those ports name (``?id=A&id=B...``, up to 100 ids a call);
- Placement: one allocation read per consumer (``GET /allocations/{server}``) and the inventories of each physical
  bridge's provider (``GET /resource_providers/{uuid}/inventories``: its uuid is Neutron's uuid5, no listing);
- the host: one read of its Open vSwitch database (the physical and integration bridges, every QoS and Queue row),
  and per NIC of the physical bridges its tc classes and its speed (netlink and ethtool, in ``netns`` if given).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from minbw.dataplane import netlink, ovs, ovsdb
from minbw.errors import InvalidInput, NotFound, ProviderNotFound
from minbw.model.claims import resources_by_provider
from minbw.neutron import naming
from minbw.neutron.agentconf import config_from_report
from minbw.neutron.qos import min_rules
from minbw.placement.client import Placement
from minbw.reports.enforcement import BoundPort, BridgeProvider, HostReport, OvsPlane, nics, ovs_host

DEFAULT_OVS_DB = "unix:/run/openvswitch/db.sock"
IDS_PER_CALL = 100  # ids in one filtered listing (the URL stays well under the usual 8 KiB limits)
SRIOV_VIF_TYPES = ("hw_veb", "hostdev_physical")  # the SR-IOV agent's bindings (neutron-lib portbindings)


@dataclass(frozen=True)
class HostPlane:
    """Where and how a host's data plane is read."""

    ovs_db: str = DEFAULT_OVS_DB
    netns: str | None = None  # the network namespace of the NICs (None: this process's)
    kernel: bool = True  # read the NICs' tc classes and speed (False: off the host, e.g. a tcp: OVSDB)


def ovs_agent(conn, host: str):
    """The OVS agent on ``host`` as its heartbeat reports it (an AgentConfig) and its integration bridge."""
    agents = list(conn.network.agents(host=host))
    kind = naming.AGENT_KINDS[naming.OVS]
    found = [a for a in agents if a.agent_type == kind.agent_type]
    if not found:
        there = ", ".join(sorted({a.agent_type for a in agents})) or "none"
        raise InvalidInput(f"host {host}: no {kind.agent_type} in Neutron's agent list (agents there: {there}); "
                           f"minbw enforcement show checks the Open vSwitch agent's data plane")
    report = found[0].configuration or {}
    return config_from_report(kind.agent_type, host, report), report.get("integration_bridge") or "br-int"


def by_ids(listing, ids: Iterable[str]) -> list:
    """``listing(id=[...])`` for every id, ``IDS_PER_CALL`` ids a call."""
    ids = sorted(set(ids))
    return [x for i in range(0, len(ids), IDS_PER_CALL) for x in listing(id=ids[i:i + IDS_PER_CALL])]


def physical_network(network, allocation: Iterable[str], bridge_rps: dict[str, str]) -> str | None:
    """The physical network of a port on ``network``: the network's, or on a network of several segments the one
    whose bridge's provider holds the port's allocation (None: a tunnelled network)."""
    if network is None:
        return None
    if network.provider_physical_network:
        return network.provider_physical_network
    physnets = sorted({s.get("provider:physical_network") for s in network.segments or ()} - {None})
    held = [p for p in physnets if bridge_rps.get(p) in set(allocation)]
    return (held or physnets or [None])[0]


def bound_ports(conn, host: str, bridge_rps: dict[str, str]) -> tuple[list[BoundPort], list[str]]:
    """The ports bound to ``host`` whose QoS policy (the port's, else its network's) has minimum rules, and one line
    for each such port of the SR-IOV agent (not read here). ``bridge_rps``: physnet -> its bridge's provider."""
    ports = list(conn.network.ports(**{"binding:host_id": host}))
    if not ports:
        raise InvalidInput(f"host {host}: no port is bound to it in Neutron (binding:host_id {host})")
    policies = {p.id: min_rules(p.rules or ()) for p in by_ids(conn.network.qos_policies,
                                                                 {p.qos_policy_id or p.qos_network_policy_id
                                                                  for p in ports} - {None})}
    networks = {n.id: n for n in by_ids(conn.network.networks, {p.network_id for p in ports})}
    out, skipped = [], []
    for p in ports:
        policy = p.qos_policy_id or p.qos_network_policy_id
        rules = policies.get(policy, ())
        if not rules:
            continue
        if p.binding_vif_type in SRIOV_VIF_TYPES:
            skipped.append(f"port {p.id} (vnic_type {p.binding_vnic_type}, vif_type {p.binding_vif_type}): the SR-IOV "
                           f"agent's VF rates are not checked yet")
            continue
        allocation = (p.binding_profile or {}).get("allocation") or {}
        allocation = {"": allocation} if isinstance(allocation, str) else dict(allocation)  # the single-group format
        out.append(BoundPort(p.id, p.device_id or None, p.binding_vnic_type or "normal",
                             physical_network(networks.get(p.network_id), allocation.values(), bridge_rps),
                             rules, policy, "port" if p.qos_policy_id else "network", allocation))
    return out, skipped


def bridge_providers(config, bridges: Iterable[str]) -> dict[str, tuple[str, str]]:
    """bridge -> its provider's uuid and name, as Neutron makes them (the agent's hypervisor for the bridge, else its
    host): no call."""
    kind = naming.AGENT_KINDS[naming.OVS]
    hypervisor = {b: config.hypervisors.get(b) or config.host for b in bridges}
    return {b: (naming.device_rp_uuid(kind, h, b), naming.device_rp_name(kind, h, b)) for b, h in hypervisor.items()}


def inventories(api: Placement, uuid: str) -> dict | None:
    """A provider's inventories (None: Placement has no such provider)."""
    try:
        return api.get_inventories(uuid)[0]
    except (ProviderNotFound, NotFound):
        return None


def consumer_allocations(api: Placement, consumers: Iterable[str]) -> dict[str, dict[str, dict[str, int]]]:
    """consumer -> provider -> class -> amount, one read each."""
    return {c: resources_by_provider(api.get_allocations(c)["allocations"]) for c in sorted(set(consumers))}


def read_plane(where: HostPlane, bridges: dict[str, str], integration: str) -> tuple:
    """One read of the Open vSwitch database (the mapped bridges and the integration bridge), and each NIC's tc and
    speed."""
    switch = ovs.read(where.ovs_db, bridges=[*bridges.values(), integration])
    kernel, speeds = {}, {}
    if where.kernel:
        for nic in nics(switch, bridges.values()):
            kernel[nic.name] = netlink.tc(nic.name, where.netns)
            speeds[nic.name] = netlink.speed(nic.name, where.netns)
    return switch, kernel, speeds


def run_enforcement(conn, api: Placement, host: str, where: HostPlane = HostPlane()) -> HostReport:
    ovsdb.check(where.ovs_db)  # a remote that is none is said before anything is read
    config, integration = ovs_agent(conn, host)
    bridges = {physnet: devices[0] for physnet, devices in config.device_mappings.items()}
    rps = bridge_providers(config, bridges.values())
    ports, skipped = bound_ports(conn, host, {p: rps[b][0] for p, b in bridges.items()})
    switch, kernel, speeds = read_plane(where, bridges, integration)
    providers = {b: BridgeProvider(uuid, name, inventories(api, uuid)) for b, (uuid, name) in rps.items()}
    kind = naming.AGENT_KINDS[naming.OVS]
    names = {naming.agent_rp_uuid(kind, h): naming.agent_rp_name(kind, h)
             for h in {config.host, *config.hypervisors.values()}}
    plane = OvsPlane(switch, bridges, kernel, speeds, providers, integration)
    return ovs_host(host, ports, consumer_allocations(api, [p.server for p in ports if p.server]), plane, names,
                    skipped)
