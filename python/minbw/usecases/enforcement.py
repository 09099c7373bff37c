"""``minbw enforcement show`` and the ``bandwidth_enforcement_info`` module: for each minimum rule of the ports bound
to a host, what Neutron's rule asks, what Placement reserved, what the host's backend programmed (the Open vSwitch
agent's queue in OVSDB and the kernel's tc class; ML2/OVN's qos_min_rate in the northbound database; the SR-IOV
agent's VF rate through netlink), with a verdict; the orphans (what is programmed for no bound port's rule); per NIC
its speed, Placement's inventory and the minimums enforced on it. Reads only (docs/enforcement.md).

``read_enforcement_fleet``: the Neutron and Placement reads of several hosts at once (the module with ``hosts``, on
the controller), each host's handed to its check (``neutron_reads``), which then reads only its data plane."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minbw.errors import InvalidInput
from minbw.ops.enforcement import DEFAULT_OVS_DB, HostPlane, NeutronRead, read_neutron, run_enforcement
from minbw.reports.enforcement import HostReport
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class EnforcementRequest:
    host: str
    ovs_db: str = DEFAULT_OVS_DB  # the host's Open vSwitch database (an OVSDB remote)
    netns: str | None = None  # the network namespace of the host's NICs (None: the caller's)
    kernel: bool = True  # read the NICs' tc classes and speed (False: the caller is not on the host)
    backend: str | None = None  # "openvswitch", "sriov" or "ovn"; None: the host's agent in Neutron's agent list
    ovn_nb: str | None = None  # ML2/OVN's northbound database (an OVSDB remote), for an ML2/OVN host
    ovn_nb_private_key: str | None = None  # an ssl: northbound remote's client files (all three, as ovn-nbctl's
    ovn_nb_certificate: str | None = None  # -p, -c and -C)
    ovn_nb_ca_cert: str | None = None
    neutron_reads: Mapping | None = None  # the host's reads as read_enforcement_fleet gives them (None: read here)


@dataclass(frozen=True)
class EnforcementResult:
    report: HostReport

    @property
    def ok(self) -> bool:
        """Nothing to act on: no rule missing or at a wrong rate, no orphan, no NIC promised above its link."""
        return self.report.ok

    def to_dict(self) -> dict:
        """The host report's dict."""
        return self.report.to_dict()


@dataclass(frozen=True)
class FleetReads:
    reads: dict[str, NeutronRead]

    def to_dict(self) -> dict:
        """``neutron_reads``: host → its reads as a dict (by host name)."""
        return {"neutron_reads": {h: r.to_dict() for h, r in sorted(self.reads.items())}}


def _require_network(cloud: Cloud) -> None:
    cloud.require(
        "network",
        "enforcement show reads the ports bound to the host, their QoS rules and the host's agent from Neutron",
    )


def read_enforcement_fleet(cloud: Cloud, hosts) -> FleetReads:
    """The Neutron and Placement reads of every host of ``hosts`` at once (FleetReads). Raises InvalidInput unless
    ``hosts`` is a list of host names, MissingService without Neutron; lets PlacementError through."""
    hosts = list(hosts or ())
    if not hosts or not all(isinstance(h, str) and h for h in hosts):
        raise InvalidInput(
            f"hosts: expected a list of host names as Neutron names them (the ports' binding:host_id), got {hosts!r}"
        )
    _require_network(cloud)
    return FleetReads(read_neutron(cloud.conn, cloud.placement, hosts))


def show_enforcement(cloud: Cloud, request: EnforcementRequest) -> EnforcementResult:
    """The host's enforcement check, from ``request.neutron_reads`` or read here (an EnforcementResult). Raises
    InvalidInput for some but not all of the northbound ssl files, ``neutron_reads`` of another host or not of the
    expected shape, or a backend that cannot be read as asked; DataPlaneUnreadable when the data plane cannot be
    read; MissingService without Neutron."""
    ssl = (request.ovn_nb_private_key, request.ovn_nb_certificate, request.ovn_nb_ca_cert)
    if any(ssl) and not all(ssl):
        raise InvalidInput(
            "an ssl: northbound remote needs the client's private key, certificate and CA certificate "
            "together (--ovn-nb-private-key, --ovn-nb-certificate, --ovn-nb-ca-cert)"
        )
    where = HostPlane(
        request.ovs_db,
        request.netns,
        request.kernel,
        request.backend,
        request.ovn_nb,
        ssl if all(ssl) else None,  # type: ignore[arg-type]  # all three given
    )
    if request.neutron_reads is not None:
        reads = NeutronRead.from_dict(request.neutron_reads)
        if reads.host != request.host:
            raise InvalidInput(
                f"neutron_reads: read for host {reads.host}, not {request.host}: give the host's own "
                f"(neutron_reads[{request.host!r}] of bandwidth_enforcement_info with hosts)"
            )
        return EnforcementResult(run_enforcement(reads, where))
    _require_network(cloud)
    api = cloud.placement
    return EnforcementResult(run_enforcement(read_neutron(cloud.conn, api, [request.host])[request.host], where, api))
