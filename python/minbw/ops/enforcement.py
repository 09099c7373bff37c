"""``minbw enforcement show``: read what one host's data plane enforces, what Neutron's rules ask of the ports bound
there and what Placement reserved for them, and join them with :mod:`minbw.reports.enforcement` (``ovs_host``,
``ovn_host``, ``sriov_host``). Reads only: nothing is written to OVSDB, netlink, Neutron or Placement.

The backend is the host's agent in Neutron's agent list: the Open vSwitch agent, the NIC Switch agent (SR-IOV) or
an OVN Controller agent (ML2/OVN; the gateway agent too); ``backend`` picks one where the host has several.

Neutron and Placement are read apart from the data plane, by :func:`read_neutron`, for one host or for several at
once (the role ``bandwidth_enforcement`` reads them once for the whole fleet, on the controller, and gives each
host its :class:`NeutronRead`; the host then reads only its data plane). The calls, whatever the number of ports,
for N hosts:

- Neutron: one agent listing (``GET /v2.0/agents?host=H1&host=H2...``: the agents' mappings and
  ``resource_provider_hypervisors``), one port listing (``GET /v2.0/ports?binding:host_id=H1&binding:host_id=H2...``),
  each up to 100 hosts a call, and one QoS policy listing and one network listing filtered by the ids those ports
  name (``?id=A&id=B...``, up to 100 ids a call);
- Placement: the allocations of each provider the ports' ``binding:profile.allocation`` name (``GET
  /resource_providers/{uuid}/allocations``: every server's there in one read; the report needs no other provider's)
  and the inventories of each physical bridge's or PF's provider the agents name (``GET
  /resource_providers/{uuid}/inventories``: its uuid is Neutron's uuid5, no listing);
- the host, per backend (:func:`run_enforcement`, no Neutron or Placement call):
  - Open vSwitch agent: one read of its Open vSwitch database (the physical and integration bridges, every QoS and
    Queue row), and per NIC of the physical bridges its tc classes and its speed (netlink and ethtool, in
    ``netns`` if given);
  - ML2/OVN: one read of its Open vSwitch database (``ovn-bridge-mappings``, ``ovn-cms-options``, the bridges and
    their ``ovn-egress-iface`` NICs, ``ovn-remote``), one read of the northbound database for the ports bound to the
    host only (conditional monitoring on the ``Logical_Switch_Port`` names), one of the southbound database at
    ``ovn-remote`` for those ports' ``Port_Binding`` rows (their ``qdisc_queue_id``), and each egress NIC's tc classes
    and speed (the southbound and the kernel left out with ``kernel`` False);
  - SR-IOV agent: per PF of its ``device_mappings`` its VFs and their rates (netlink), the VFs' PCI addresses
    (sysfs) and its speed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields

from minbw.dataplane import netlink, ovn, ovs, ovsdb, pci
from minbw.errors import DataPlaneUnreadable, InvalidInput, NotFound, ProviderNotFound
from minbw.neutron import naming
from minbw.neutron.agentconf import config_from_report
from minbw.neutron.ovn import chassis_config, chassis_from_values, parse_bridge_mappings
from minbw.neutron.qos import min_rules
from minbw.placement.client import Placement
from minbw.reports.enforcement import (
    OVN,
    OVS,
    SRIOV,
    BoundPort,
    BridgeProvider,
    HostReport,
    OvnPlane,
    OvsPlane,
    SriovPlane,
    egress_nics,
    nics,
    ovn_host,
    ovs_host,
    sriov_host,
)

DEFAULT_OVS_DB = "unix:/run/openvswitch/db.sock"
IDS_PER_CALL = 100  # ids in one filtered listing (the URL stays well under the usual 8 KiB limits)
SRIOV_VIF_TYPES = ("hw_veb", "hostdev_physical")  # the SR-IOV agent's bindings (neutron-lib portbindings)
BACKENDS = (OVS, SRIOV, OVN)
BACKEND_NAMES = {
    OVS: "the Open vSwitch agent",
    SRIOV: "the SR-IOV agent (NIC Switch agent)",
    OVN: "ML2/OVN (OVN Controller agent)",
}


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
            raise InvalidInput(
                f"host {host}: no {naming.AGENT_KINDS[wanted].agent_type} in Neutron's agent list "
                f"(agents there: {there}); backend {wanted} checks {BACKEND_NAMES[wanted]}"
            )
        return wanted, found[wanted]
    if not found:
        raise InvalidInput(
            f"host {host}: no agent minbw enforcement show reads in Neutron's agent list (agents "
            f"there: {there}); it checks the Open vSwitch agent, the NIC Switch agent (SR-IOV) and "
            f"OVN Controller agents"
        )
    if len(found) > 1:
        raise InvalidInput(
            f"host {host} has {' and '.join(found[b].agent_type for b in sorted(found))}: choose the "
            f"data plane to check with --backend {' or '.join(sorted(found))}"
        )
    backend, agent = next(iter(found.items()))  # the one found
    return backend, agent


def by_values(listing, key: str, values: Iterable[str]) -> list:
    """``listing(**{key: [...]})`` for every value, ``IDS_PER_CALL`` values a call (Neutron's filters take several
    values of a key: ``?key=A&key=B``)."""
    values = sorted(set(values))
    found = []
    for start in range(0, len(values), IDS_PER_CALL):
        end = start + IDS_PER_CALL
        found.extend(listing(**{key: values[start:end]}))
    return found


def by_ids(listing, ids: Iterable[str]) -> list:
    """``listing(id=[...])`` for every id, ``IDS_PER_CALL`` ids a call."""
    return by_values(listing, "id", ids)


def _record(cls, resource):
    """A frozen record of an openstacksdk resource's fields that ``cls`` names."""
    return cls(**{f.name: getattr(resource, f.name) for f in fields(cls)})


@dataclass(frozen=True)
class Agent:
    """A Neutron agent, as far as a host's check reads it."""

    agent_type: str
    host: str
    configuration: Mapping


@dataclass(frozen=True)
class Port:
    """A port bound to a host (``binding:host_id``), as far as a host's check reads it."""

    id: str
    binding_host_id: str
    device_id: str | None
    network_id: str
    binding_vnic_type: str | None
    binding_vif_type: str | None
    binding_profile: Mapping | None
    qos_policy_id: str | None
    qos_network_policy_id: str | None

    @property
    def policy(self) -> str | None:
        """The QoS policy that applies: the port's, else its network's."""
        return self.qos_policy_id or self.qos_network_policy_id


@dataclass(frozen=True)
class Network:
    id: str
    provider_physical_network: str | None
    segments: list | None


@dataclass(frozen=True)
class NeutronRead:
    """What one host's check reads from Neutron and Placement (:func:`read_neutron` reads it for several hosts at
    once): the host's agents, the ports bound to it, their QoS policies' rules and networks, the allocations of their
    servers and the inventories of the providers of its agents' physical bridges and PFs. As a dict (``to_dict``,
    ``from_dict``) it is the module's ``neutron_reads``."""

    host: str
    agents: tuple[Agent, ...]
    ports: tuple[Port, ...]
    policies: Mapping[str, tuple]  # QoS policy id -> its rules as Neutron gives them
    networks: Mapping[str, Network]
    allocations: Mapping[str, Mapping]  # server -> provider -> class -> amount
    inventories: Mapping[str, Mapping | None]  # provider uuid -> its inventories (None: no such provider)

    def to_dict(self) -> dict:
        """The read as a dict of JSON values (the module's ``neutron_reads`` entry; ``from_dict`` reads it back)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, value, where: str = "neutron_reads") -> NeutronRead:
        """The read a dict holds (``to_dict``'s), or a one-line error naming what is wrong."""
        names = [f.name for f in fields(cls)]
        if not isinstance(value, Mapping) or sorted(value) != sorted(names):
            got = sorted(value) if isinstance(value, Mapping) else type(value).__name__
            raise InvalidInput(
                f"{where}: expected the Neutron and Placement reads of one host (the keys "
                f"{', '.join(names)}, as bandwidth_enforcement_info with hosts returns them for each "
                f"host), got {got}"
            )
        try:
            return cls(
                value["host"],
                tuple(Agent(**a) for a in value["agents"]),
                tuple(Port(**p) for p in value["ports"]),
                dict(value["policies"]),
                {i: Network(**n) for i, n in value["networks"].items()},
                dict(value["allocations"]),
                dict(value["inventories"]),
            )
        except (TypeError, AttributeError) as e:
            raise InvalidInput(
                f"{where}: not the Neutron and Placement reads of one host as "
                f"bandwidth_enforcement_info with hosts returns them ({e})"
            ) from None


def agent_providers(agent: Agent) -> dict[str, tuple[str, str]]:
    """The providers of an agent's physical bridges or PFs (device -> uuid, name), as Neutron makes them from what
    its agent list reports: an ML2/OVN chassis's at its host (the chassis's ``resource_provider_hypervisors`` are not
    in Neutron's agent list); none for an agent of no bandwidth."""
    kind = naming.AGENT_KIND_BY_TYPE.get(agent.agent_type)
    if kind is None:
        return {}
    if kind.key == OVN:
        bridges = parse_bridge_mappings((agent.configuration or {}).get("bridge-mappings")).values()
        return {
            b: (naming.device_rp_uuid(kind, agent.host, b), naming.device_rp_name(kind, agent.host, b)) for b in bridges
        }
    config = config_from_report(agent.agent_type, agent.host, agent.configuration or {})
    return device_providers(config, {d for ds in config.device_mappings.values() for d in ds})


def _agent_providers(agent: Agent) -> dict[str, tuple[str, str]]:
    """:func:`agent_providers`, none for mappings Neutron's agent list has wrong: that host's own check says why,
    and the other hosts are read all the same."""
    try:
        return agent_providers(agent)
    except (InvalidInput, ValueError):
        return {}


def read_neutron(conn, api: Placement, hosts: Iterable[str]) -> dict[str, NeutronRead]:
    """Each host's :class:`NeutronRead`, read for all of them at once (the calls: this module's docstring); a host
    Neutron knows nothing of has an empty one."""
    hosts = sorted(set(hosts))
    agents = [_record(Agent, a) for a in by_values(conn.network.agents, "host", hosts)]
    ports = [_record(Port, p) for p in by_values(conn.network.ports, "binding:host_id", hosts)]
    policies = {
        p.id: tuple(p.rules or ()) for p in by_ids(conn.network.qos_policies, {p.policy for p in ports} - {None})
    }
    networks = {n.id: _record(Network, n) for n in by_ids(conn.network.networks, {p.network_id for p in ports})}
    named: dict[str, set[str]] = {}
    for p in ports:
        if p.device_id and min_rules(policies.get(p.policy, ())):
            named.setdefault(p.device_id, set()).update(port_allocation(p).values())
    allocations = server_allocations(api, named)
    providers = {h: {u for a in agents if a.host == h for u, _name in _agent_providers(a).values()} for h in hosts}
    read = {u: inventories(api, u) for u in sorted(set().union(*providers.values()))}
    out = {}
    for h in hosts:
        mine = tuple(p for p in ports if p.binding_host_id == h)
        out[h] = NeutronRead(
            h,
            tuple(a for a in agents if a.host == h),
            mine,
            {p.policy: policies[p.policy] for p in mine if p.policy in policies},
            {p.network_id: networks[p.network_id] for p in mine if p.network_id in networks},
            {p.device_id: allocations[p.device_id] for p in mine if p.device_id in allocations},
            {u: read[u] for u in sorted(providers[h])},
        )
    return out


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


def bound_ports(
    reads: NeutronRead, backend: str, device_rps: dict[str, set[str]], others: Iterable[str] = ()
) -> tuple[list[BoundPort], dict[str, str | None], list[str]]:
    """The ports bound to the host whose QoS policy (the port's, else its network's) has minimum rules and that
    ``backend`` programs; every port bound there -> its ``binding:profile.pci_slot``; and one line for each port
    with minimum rules of another backend (``others``: the host's other backends). ``device_rps``: physnet -> the
    providers of its devices."""
    # a host with no port bound is read all the same: whatever its data plane holds is then an orphan
    host, ports = reads.host, reads.ports
    out, skipped = [], []
    for p in ports:
        policy = p.policy
        rules = min_rules(reads.policies.get(policy or "", ()))
        if not rules:
            continue
        owner = _owner(p, backend, others)
        if owner != backend:
            whose = (
                f"{BACKEND_NAMES[owner]}'s: --backend {owner} checks it"
                if owner
                else f"no agent of {host} that minbw reads programs it"
            )
            skipped.append(f"port {p.id} (vnic_type {p.binding_vnic_type}, vif_type {p.binding_vif_type}): {whose}")
            continue
        profile = p.binding_profile or {}
        allocation = port_allocation(p)
        out.append(
            BoundPort(
                p.id,
                p.device_id or None,
                p.binding_vnic_type or "normal",
                physical_network(reads.networks.get(p.network_id), allocation.values(), device_rps),
                rules,
                policy,
                "port" if p.qos_policy_id else "network",
                allocation,
                profile.get("pci_slot"),
            )
        )
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


def port_allocation(port: Port) -> dict[str, str]:
    """A port's ``binding:profile.allocation``: request group -> provider (the single-group format: one provider)."""
    allocation = (port.binding_profile or {}).get("allocation") or {}
    return {"": allocation} if isinstance(allocation, str) else dict(allocation)


def server_allocations(api: Placement, named: Mapping[str, set[str]]) -> dict[str, dict[str, dict[str, int]]]:
    """server -> provider -> class -> amount on the providers its ports' allocations name (``named``), one read of
    each provider's allocations (``GET /resource_providers/{uuid}/allocations``, whatever the number of servers on
    it; a provider that is not there holds nothing)."""
    held = {}
    for rp in sorted(set().union(*named.values())):
        try:
            held[rp] = api.provider_allocations(rp)
        except (ProviderNotFound, NotFound):
            held[rp] = {}
    return {s: {rp: dict(held[rp][s]["resources"]) for rp in sorted(rps) if s in held[rp]} for s, rps in named.items()}


def _providers(reads: NeutronRead, rps: dict[str, tuple[str, str]], api: Placement | None) -> dict[str, BridgeProvider]:
    """The devices' providers with their inventories from ``reads``; one the reads lack (an ML2/OVN chassis's
    ``resource_provider_hypervisors``, not in Neutron's agent list) read from ``api``, or without one an error."""
    missing = sorted((name, uuid) for uuid, name in rps.values() if uuid not in reads.inventories)
    if missing and api is None:
        raise InvalidInput(
            f"host {reads.host}: Placement's inventories of {', '.join(n for n, _uuid in missing)} are not "
            f"in its neutron_reads (read for the bridges and PFs Neutron's agent list reports, at the "
            f"host's own name; an ML2/OVN chassis's resource_provider_hypervisors are not there): "
            f"check this host without neutron_reads"
        )
    # missing: api given (above)
    read = {**reads.inventories, **{uuid: inventories(api, uuid) for _name, uuid in missing}}  # type: ignore[arg-type]
    return {d: BridgeProvider(uuid, name, read[uuid]) for d, (uuid, name) in rps.items()}


def _agent_names(config) -> dict[str, str]:
    """The agent providers' uuid -> name (the parents of the device providers)."""
    kind = config.agent_kind
    return {
        naming.agent_rp_uuid(kind, h): naming.agent_rp_name(kind, h)
        for h in {config.host, *config.hypervisors.values()}
    }


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
    config, _warnings = chassis_config(
        chassis_from_values(
            {"external_ids": ids, "hostname": ids.get("hostname") or host}, f"the Open vSwitch database {where.ovs_db}"
        )
    )
    for _physnet, (bridge, *_rest) in sorted(config.device_mappings.items()):
        switch.bridge(bridge)  # one the chassis maps but the database lacks: one line
    return config, switch


def read_northbound(where: HostPlane, ports: Iterable[str]):
    """The northbound rows of ``ports`` (only those are sent)."""
    # read for a host with ovn_nb
    ssl = ovsdb.Ssl(*where.ovn_nb_ssl) if where.ovn_nb_ssl else None
    return ovn.read(where.ovn_nb, ports=ports, ssl=ssl)  # type: ignore[arg-type]


def read_queues(where: HostPlane, switch, ports: Iterable[str]):
    """The southbound ``qdisc_queue_id`` of ``ports``, from the southbound database ovn-controller itself reads: the
    chassis's ``external_ids:ovn-remote`` (of a list, the first that answers; an ``ssl:`` one with ``--ovn-nb``'s
    client key and certificates)."""
    remotes = [r.strip() for r in switch.external_ids.get("ovn-remote", "").split(",") if r.strip()]
    if not remotes:
        raise InvalidInput(
            f"the Open vSwitch database {where.ovs_db} has no external_ids:ovn-remote (the southbound "
            f"database ovn-controller reads, where the ports' queue numbers are): is ovn-controller "
            f"configured there? --no-kernel leaves the kernel's side out"
        )
    ssl = ovsdb.Ssl(*where.ovn_nb_ssl) if where.ovn_nb_ssl else None
    for remote in remotes[:-1]:
        try:
            return ovn.queues(remote, ports, ssl=ssl)
        except DataPlaneUnreadable:
            continue  # another member of a clustered southbound database
    return ovn.queues(remotes[-1], ports, ssl=ssl)


def read_sriov_plane(where: HostPlane, pfs: Iterable[str]) -> tuple:
    """Per PF its VFs with their rates (netlink), their PCI addresses (sysfs) and its speed."""
    pfs = sorted(set(pfs))
    return (
        {pf: netlink.vfs(pf, where.netns) for pf in pfs},
        {pf: pci.vf_slots(pf) for pf in pfs},
        {pf: netlink.speed(pf, where.netns) for pf in pfs},
    )


def run_enforcement(reads: NeutronRead, where: HostPlane = HostPlane(), api: Placement | None = None) -> HostReport:
    """The check of ``reads.host``: its data plane read as ``where`` says, against ``reads``; ``api`` only for what
    ``reads`` lacks (:func:`_providers`)."""
    host = reads.host
    for remote in (where.ovs_db, where.ovn_nb):
        if remote is not None:
            ovsdb.check(remote)  # a remote that is none is said before anything is read
    agents = list(reads.agents)
    backend, agent = pick_backend(host, agents, where.backend)
    others = set(host_backends(agents)) - {backend}
    read = {OVS: _ovs, OVN: _ovn, SRIOV: _sriov}[backend]
    return read(reads, api, agent, where, others)


def _ovs(reads: NeutronRead, api: Placement | None, agent, where: HostPlane, others) -> HostReport:
    host = reads.host
    report = agent.configuration or {}
    config = config_from_report(agent.agent_type, host, report)
    integration = report.get("integration_bridge") or "br-int"
    bridges, rps, (ports, bound, skipped) = _bridged(reads, OVS, config, others)
    switch, kernel, speeds = read_plane(where, bridges, integration)
    plane = OvsPlane(switch, bridges, kernel, speeds, _providers(reads, rps, api), integration)
    return _joined(ovs_host, reads, ports, plane, config, skipped, bound)


def _bridged(reads: NeutronRead, backend: str, config, others) -> tuple:
    """The agent's or chassis's bridges (physnet -> bridge), their providers and the ports bound to the host
    (:func:`bound_ports`)."""
    bridges = {physnet: devices[0] for physnet, devices in config.device_mappings.items()}
    rps = device_providers(config, bridges.values())
    return bridges, rps, bound_ports(reads, backend, {p: {rps[b][0]} for p, b in bridges.items()}, others)


def _joined(join, reads: NeutronRead, ports, plane, config, skipped, bound) -> HostReport:
    """``join`` (ovs_host, ovn_host, sriov_host) of what was read, with the servers' allocations."""
    return join(
        reads.host,
        ports,
        {p.server: reads.allocations[p.server] for p in ports if p.server},
        plane,
        _agent_names(config),
        skipped,
        bound,
    )


def _ovn(reads: NeutronRead, api: Placement | None, agent, where: HostPlane, others) -> HostReport:
    host = reads.host
    if not where.ovn_nb:
        raise InvalidInput(
            f"host {host} runs ML2/OVN ({agent.agent_type} in Neutron's agent list): give its "
            f"northbound database with --ovn-nb (tcp:HOST:6641, ssl:HOST:6641 with the client's key "
            f"and certificates, or unix:PATH)"
        )
    config, switch = read_chassis(where, host)
    bridges, rps, (ports, bound, skipped) = _bridged(reads, OVN, config, others)
    northbound = read_northbound(where, bound)
    egress = egress_nics(switch, bridges.values()) if where.kernel else ()
    speeds = {n.name: netlink.speed(n.name, where.netns) for n in egress}
    kernel = {n.name: netlink.tc(n.name, where.netns) for n in egress}
    queues = read_queues(where, switch, [p.id for p in ports]).queues if where.kernel and ports else {}
    integration = switch.external_ids.get("ovn-bridge") or "br-int"
    plane = OvnPlane(switch, northbound, bridges, speeds, _providers(reads, rps, api), integration, kernel, queues)
    return _joined(ovn_host, reads, ports, plane, config, skipped, bound)


def _sriov(reads: NeutronRead, api: Placement | None, agent, where: HostPlane, others) -> HostReport:
    host = reads.host
    if not where.kernel:
        raise InvalidInput(
            f"host {host}: the SR-IOV agent's VF rates are read through netlink on the host itself; "
            f"without the kernel's side (--no-kernel) there is nothing to check"
        )
    config = config_from_report(agent.agent_type, host, agent.configuration or {})
    devices = dict(config.device_mappings)
    rps = device_providers(config, {pf for pfs in devices.values() for pf in pfs})
    ports, bound, skipped = bound_ports(reads, SRIOV, {p: {rps[d][0] for d in ds} for p, ds in devices.items()}, others)
    vfs, slots, speeds = read_sriov_plane(where, rps)
    plane = SriovPlane(devices, vfs, slots, speeds, _providers(reads, rps, api))
    return _joined(sriov_host, reads, ports, plane, config, skipped, bound)
