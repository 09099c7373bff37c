"""``minbw doctor`` (``openstack bandwidth doctor``): the preflight an operator runs before and after enabling
guaranteed minimum bandwidth: each check one line with what to fix (:mod:`minbw.reports.doctor`). Read only."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.ops.doctor import check_neutron, check_nova, check_placement
from minbw.reports.doctor import Check, skipped, worst
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class DoctorResult:
    checks: tuple[Check, ...]

    @property
    def status(self) -> str:
        """The worst status among the checks ("ok" when there are none; skipped checks do not count)."""
        return worst(self.checks)

    def to_dict(self) -> dict:
        """The status and every check as a dict, in order."""
        return {"status": self.status, "checks": [c.to_dict() for c in self.checks]}


def doctor(cloud: Cloud) -> DoctorResult:
    """Every check, in order: Placement, Neutron, Nova, then what only the services' configuration files tell."""
    out = check_placement(cloud.placement)
    for service, project, reader in (
        ("network", "Neutron", check_neutron),
        ("compute", "Nova", lambda conn: check_nova(conn, cloud.placement)),
    ):
        why = cloud.absent(service)
        out += [skipped(project, f"the cloud has no {service} service: {why}")] if why else reader(cloud.conn)
    out += [
        skipped(
            "placement allocation_conflict_retry_count",
            "not visible through Placement's API",
            "read [placement] allocation_conflict_retry_count in placement.conf (default 10; docs/reliability.md)",
        ),
        skipped(
            "ovn qos_min_rate units",
            "Neutron's release is not visible through its API",
            "on ML2/OVN, Neutron before 26.0.0 writes qos_min_rate in kbps where OVN reads bit/s (docs/enforcement.md)",
        ),
    ]
    return DoctorResult(tuple(out))
