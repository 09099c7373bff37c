"""``minbw enforcement show`` and the ``bandwidth_enforcement_info`` module: for each minimum rule of the ports bound
to a host, what Neutron's rule asks, what Placement reserved, what the Open vSwitch agent programmed (OVSDB) and what
the kernel applies (tc), with a verdict; the orphans (queues and QoS rows no bound port accounts for); per NIC its
speed, Placement's inventory and the minimums enforced on it. Reads only (docs/enforcement.md)."""
from __future__ import annotations

from dataclasses import dataclass

from ..ops.enforcement import DEFAULT_OVS_DB, HostPlane, run_enforcement
from ..reports.enforcement import HostReport
from ..usecases.cloud import Cloud


@dataclass(frozen=True)
class EnforcementRequest:
    host: str
    ovs_db: str = DEFAULT_OVS_DB  # the host's Open vSwitch database (an OVSDB remote)
    netns: str | None = None  # the network namespace of the host's NICs (None: the caller's)
    kernel: bool = True  # read the NICs' tc classes and speed (False: the caller is not on the host)


@dataclass(frozen=True)
class EnforcementResult:
    report: HostReport

    @property
    def ok(self) -> bool:
        """Nothing to act on: no rule missing or at a wrong rate, no orphan, no NIC promised above its link."""
        return self.report.ok

    def to_dict(self) -> dict:
        return self.report.to_dict()


def show_enforcement(cloud: Cloud, request: EnforcementRequest) -> EnforcementResult:
    cloud.require("network", "enforcement show reads the ports bound to the host, their QoS rules and the host's "
                             "agent from Neutron")
    where = HostPlane(request.ovs_db, request.netns, request.kernel)
    return EnforcementResult(run_enforcement(cloud.conn, cloud.placement, request.host, where))
