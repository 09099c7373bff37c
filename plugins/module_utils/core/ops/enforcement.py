"""``minbw enforcement show``: read what one host's data plane enforces, what Neutron's rules ask of the ports bound
there and what Placement reserved for them, and join them with :mod:`minbw.reports.enforcement` (``ovs_host``,
``ovn_host``, ``sriov_host``). Reads only: nothing is written to OVSDB, netlink, Neutron or Placement.

The backend is the host's agent in Neutron's agent list: the Open vSwitch agent, the NIC Switch agent (SR-IOV) or
an OVN Controller agent (ML2/OVN; the gateway agent too); ``backend`` picks one where the host has several.

The calls, whatever the number of ports:

- Neutron: one agent listing (``GET /v2.0/agents?host=H``: the agent's mappings and ``resource_provider_hypervisors``),
  one port listing (``GET /v2.0/ports?binding:host_id=H``), and one QoS policy listing and one network listing
  filtered by the ids those ports name (``?id=A&id=B...``, up to 100 ids a call);
- Placement: one allocation read per consumer (``GET /allocations/{server}``) and the inventories of each physical
  bridge's or PF's provider (``GET /resource_providers/{uuid}/inventories``: its uuid is Neutron's uuid5, no
  listing);
- the host, per backend:
  - Open vSwitch agent: one read of its Open vSwitch database (the physical and integration bridges, every QoS and
    Queue row), and per NIC of the physical bridges its tc classes and its speed (netlink and ethtool, in
    ``netns`` if given);
  - ML2/OVN: one read of its Open vSwitch database (``ovn-bridge-mappings``, ``ovn-cms-options``, the bridges and
    their ``ovn-egress-iface`` NICs), one read of the northbound database for the ports bound to the host only
    (conditional monitoring on the ``Logical_Switch_Port`` names), and each egress NIC's speed;
  - SR-IOV agent: per PF of its ``device_mappings`` its VFs and their rates (netlink), the VFs' PCI addresses
    (sysfs) and its speed.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..dataplane import netlink, ovn, ovs, ovsdb, pci
from ..errors import InvalidInput, NotFound, ProviderNotFound
from ..model.claims import resources_by_provider
from ..neutron import naming
from ..neutron.agentconf import config_from_report
from ..neutron.ovn import chassis_config, chassis_from_values
from ..neutron.qos import min_rules
from ..placement.client import Placement
from ..reports.enforcement import (OVN, OVS, SRIOV, BoundPort, BridgeProvider, HostReport, OvnPlane, OvsPlane,
                                       SriovPlane, egress_nics, nics, ovn_host, ovs_host, sriov_host)

DEFAULT_OVS_DB = "unix:/run/openvswitch/db.sock"
IDS_PER_CALL = 100  # ids in one filtered listing (the URL stays well under the usual 8 KiB limits)
SRIOV_VIF_TYPES = ("hw_veb", "hostdev_physical")  # the SR-IOV agent's bindings (neutron-lib portbindings)
BACKENDS = (OVS, SRIOV, OVN)
BACKEND_NAMES = {OVS: "the Open vSwitch agent", SRIOV: "the SR-IOV agent (NIC Switch agent)",
                 OVN: "ML2/OVN (OVN Controller agent)"}


@dataclass(frozen=True)
class HostPlane:
    """Where and how a host's data plane is read."""

    ovs_db: str = DEFAULT_OVS_DB
    netns: str | None = None  # the network namespace of the NICs (None: this process's)
    kernel: bool = True  # read the NICs' tc classes and speed (False: off the host, e.g. a tcp: OVSDB)
    backend: str | None = None  # OVS, SRIOV or OVN; None: the one the host's agents in Neutron say
    ovn_nb: str | None = None  # ML2/OVN's northbound database (an OVSDB remote)
    ovn_nb_ssl: tuple[str, str, str] | None = None  # an ssl: remote's private key, certificate and CA certificate


def host_backends(agents: Iterable) -> dict:
    """backend -> the host's agent of it (the first of its kind), from Neutron's agent list."""
    out: dict = {}
    for a in agents:
        kind = naming.AGENT_KIND_BY_TYPE.get(a.agent_type)
        if kind is not None:
            out.setdefault(kind.key, a)
    return out


def pick_backend(host: str, agents: Iterable, wanted: str | None = None) -> tuple[str, object]:
    """The backend to check on ``host`` and its agent: ``wanted``, else the host's only one."""
    agents = list(agents)
    found = host_backends(agents)
    there = ", ".join(sorted({a.agent_type for a in agents})) or "none"
    if wanted is not None:
        if wanted not in BACKENDS:
            raise InvalidInput(f"backend {wanted!r}: expected one of {', '.join(BACKENDS)}")
        if wanted not in found:
            raise InvalidInput(f"host {host}: no {naming.AGENT_KINDS[wanted].agent_type} in Neutron's agent list "
                               f"(agents there: {there}); backend {wanted} checks {BACKEND_NAMES[wanted]}")
        return wanted, found[wanted]
    if not found:
        raise InvalidInput(f"host {host}: no agent minbw enforcement show reads in Neutron's agent list (agents "
                           f"there: {there}); it checks the Open vSwitch agent, the NIC Switch agent (SR-IOV) and "
                           f"OVN Controller agents")
    if len(found) > 1:
        raise InvalidInput(f"host {host} has {' and '.join(found[b].agent_type for b in sorted(found))}: choose the "
                           f"data plane to check with --backend {' or '.join(sorted(found))}")
    (backend, agent), = found.items()
    return backend, agent


def by_ids(listing, ids: Iterable[str]) -> list:
    """``listing(id=[...])`` for every id, ``IDS_PER_CALL`` ids a call."""
    ids = sorted(set(ids))
    return [x for i in range(0, len(ids), IDS_PER_CALL) for x in listing(id=ids[i:i + IDS_PER_CALL])]


def physical_network(network, allocation: Iterable[str], device_rps: dict[str, set[str]]) -> str | None:
    """The physical network of a port on ``network``: the network's, or on a network of several segments the one
    whose devices' providers hold the port's allocation (None: a tunnelled network)."""
    if network is None:
        return None
    if network.provider_physical_network:
        return network.provider_physical_network
    physnets = sorted({s.get("provider:physical_network") for s in network.segments or ()} - {None})
    held = [p for p in physnets if device_rps.get(p, set()) & set(allocation)]
    return (held or physnets or [None])[0]


def _owner(port, backend: str, others: Iterable[str]) -> str | None:
    """The backend that programs ``port`` on its host: the SR-IOV agent for its bindings, else the host's Open
    vSwitch agent or ML2/OVN (None: the host has neither)."""
    if port.binding_vif_type in SRIOV_VIF_TYPES:
        return SRIOV
    return backend if backend != SRIOV else next((b for b in sorted(others) if b != SRIOV), None)


def bound_ports(conn, host: str, backend: str, device_rps: dict[str, set[str]], others: Iterable[str] = ()
                ) -> tuple[list[BoundPort], dict[str, str | None], list[str]]:
    """The ports bound to ``host`` whose QoS policy (the port's, else its network's) has minimum rules and that
    ``backend`` programs; every port bound there -> its ``binding:profile.pci_slot``; and one line for each port
    with minimum rules of another backend (``others``: the host's other backends). ``device_rps``: physnet -> the
    providers of its devices."""
    # a host with no port bound is read all the same: whatever its data plane holds is then an orphan
    ports = list(conn.network.ports(**{"binding:host_id": host}))
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
        owner = _owner(p, backend, others)
        if owner != backend:
            whose = f"{BACKEND_NAMES[owner]}'s: --backend {owner} checks it" if owner else \
                f"no agent of {host} that minbw reads programs it"
            skipped.append(f"port {p.id} (vnic_type {p.binding_vnic_type}, vif_type {p.binding_vif_type}): {whose}")
            continue
        profile = p.binding_profile or {}
        allocation = profile.get("allocation") or {}
        allocation = {"": allocation} if isinstance(allocation, str) else dict(allocation)  # the single-group format
        out.append(BoundPort(p.id, p.device_id or None, p.binding_vnic_type or "normal",
                             physical_network(networks.get(p.network_id), allocation.values(), device_rps),
                             rules, policy, "port" if p.qos_policy_id else "network", allocation,
                             profile.get("pci_slot")))
    return out, {p.id: (p.binding_profile or {}).get("pci_slot") for p in ports}, skipped


def device_providers(config, devices: Iterable[str]) -> dict[str, tuple[str, str]]:
    """device (bridge, PF) -> its provider's uuid and name, as Neutron makes them (the agent's hypervisor for the
    device, else its host): no call."""
    kind = config.agent_kind
    hypervisor = {d: config.hypervisors.get(d) or config.host for d in devices}
    return {d: (naming.device_rp_uuid(kind, h, d), naming.device_rp_name(kind, h, d)) for d, h in hypervisor.items()}


def inventories(api: Placement, uuid: str) -> dict | None:
    """A provider's inventories (None: Placement has no such provider)."""
    try:
        return api.get_inventories(uuid)[0]
    except (ProviderNotFound, NotFound):
        return None


def consumer_allocations(api: Placement, consumers: Iterable[str]) -> dict[str, dict[str, dict[str, int]]]:
    """consumer -> provider -> class -> amount, one read each."""
    return {c: resources_by_provider(api.get_allocations(c)["allocations"]) for c in sorted(set(consumers))}


def _providers(api: Placement, rps: dict[str, tuple[str, str]]) -> dict[str, BridgeProvider]:
    return {d: BridgeProvider(uuid, name, inventories(api, uuid)) for d, (uuid, name) in rps.items()}


def _agent_names(config) -> dict[str, str]:
    """The agent providers' uuid -> name (the parents of the device providers)."""
    kind = config.agent_kind
    return {naming.agent_rp_uuid(kind, h): naming.agent_rp_name(kind, h)
            for h in {config.host, *config.hypervisors.values()}}


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


def read_chassis(where: HostPlane, host: str) -> tuple:
    """An ML2/OVN host's Open vSwitch database (every bridge: the mapped ones, the integration bridge) and its
    chassis as an AgentConfig (from the database's ``external_ids``, as ovn-controller reads them: the bridge
    mappings, the hypervisor names of ``ovn-cms-options``)."""
    switch = ovs.read(where.ovs_db)
    ids = dict(switch.external_ids)
    config, _ = chassis_config(chassis_from_values({"external_ids": ids, "hostname": ids.get("hostname") or host},
                                                   f"the Open vSwitch database {where.ovs_db}"))
    for _, (bridge, *_) in sorted(config.device_mappings.items()):
        switch.bridge(bridge)  # one the chassis maps but the database lacks: one line
    return config, switch


def read_northbound(where: HostPlane, ports: Iterable[str]):
    """The northbound rows of ``ports`` (only those are sent)."""
    return ovn.read(where.ovn_nb, ports=ports, ssl=ovsdb.Ssl(*where.ovn_nb_ssl) if where.ovn_nb_ssl else None)


def read_sriov_plane(where: HostPlane, pfs: Iterable[str]) -> tuple:
    """Per PF its VFs with their rates (netlink), their PCI addresses (sysfs) and its speed."""
    pfs = sorted(set(pfs))
    return ({pf: netlink.vfs(pf, where.netns) for pf in pfs}, {pf: pci.vf_slots(pf) for pf in pfs},
            {pf: netlink.speed(pf, where.netns) for pf in pfs})


def run_enforcement(conn, api: Placement, host: str, where: HostPlane = HostPlane()) -> HostReport:
    for remote in (where.ovs_db, where.ovn_nb):
        if remote is not None:
            ovsdb.check(remote)  # a remote that is none is said before anything is read
    agents = list(conn.network.agents(host=host))
    backend, agent = pick_backend(host, agents, where.backend)
    others = set(host_backends(agents)) - {backend}
    read = {OVS: _ovs, OVN: _ovn, SRIOV: _sriov}[backend]
    return read(conn, api, host, agent, where, others)


def _ovs(conn, api: Placement, host: str, agent, where: HostPlane, others) -> HostReport:
    report = agent.configuration or {}
    config = config_from_report(agent.agent_type, host, report)
    integration = report.get("integration_bridge") or "br-int"
    bridges, rps, (ports, bound, skipped) = _bridged(conn, host, OVS, config, others)
    switch, kernel, speeds = read_plane(where, bridges, integration)
    plane = OvsPlane(switch, bridges, kernel, speeds, _providers(api, rps), integration)
    return _joined(ovs_host, api, host, ports, plane, config, skipped, bound)


def _bridged(conn, host: str, backend: str, config, others) -> tuple:
    """The agent's or chassis's bridges (physnet -> bridge), their providers and the ports bound to ``host``
    (:func:`bound_ports`)."""
    bridges = {physnet: devices[0] for physnet, devices in config.device_mappings.items()}
    rps = device_providers(config, bridges.values())
    return bridges, rps, bound_ports(conn, host, backend, {p: {rps[b][0]} for p, b in bridges.items()}, others)


def _joined(join, api: Placement, host: str, ports, plane, config, skipped, bound) -> HostReport:
    """``join`` (ovs_host, ovn_host, sriov_host) of what was read, with the servers' allocations."""
    return join(host, ports, consumer_allocations(api, [p.server for p in ports if p.server]), plane,
                _agent_names(config), skipped, bound)


def _ovn(conn, api: Placement, host: str, agent, where: HostPlane, others) -> HostReport:
    if not where.ovn_nb:
        raise InvalidInput(f"host {host} runs ML2/OVN ({agent.agent_type} in Neutron's agent list): give its "
                           f"northbound database with --ovn-nb (tcp:HOST:6641, ssl:HOST:6641 with the client's key "
                           f"and certificates, or unix:PATH)")
    config, switch = read_chassis(where, host)
    bridges, rps, (ports, bound, skipped) = _bridged(conn, host, OVN, config, others)
    northbound = read_northbound(where, bound)
    speeds = {n.name: netlink.speed(n.name, where.netns) for n in egress_nics(switch, bridges.values())} \
        if where.kernel else {}
    integration = switch.external_ids.get("ovn-bridge") or "br-int"
    plane = OvnPlane(switch, northbound, bridges, speeds, _providers(api, rps), integration)
    return _joined(ovn_host, api, host, ports, plane, config, skipped, bound)


def _sriov(conn, api: Placement, host: str, agent, where: HostPlane, others) -> HostReport:
    if not where.kernel:
        raise InvalidInput(f"host {host}: the SR-IOV agent's VF rates are read through netlink on the host itself; "
                           f"without the kernel's side (--no-kernel) there is nothing to check")
    config = config_from_report(agent.agent_type, host, agent.configuration or {})
    devices = dict(config.device_mappings)
    rps = device_providers(config, {pf for pfs in devices.values() for pf in pfs})
    ports, bound, skipped = bound_ports(conn, host, SRIOV, {p: {rps[d][0] for d in ds} for p, ds in devices.items()},
                                        others)
    vfs, slots, speeds = read_sriov_plane(where, rps)
    plane = SriovPlane(devices, vfs, slots, speeds, _providers(api, rps))
    return _joined(sriov_host, api, host, ports, plane, config, skipped, bound)
