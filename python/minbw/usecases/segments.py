"""``minbw segment list|sync`` and the ``segment_providers`` module:
routed networks' segment providers in Placement (IPV4_ADDRESS, aggregate, hosts) as Neutron's segments plugin
reports them, and a sync where it does not."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.errors import InvalidInput
from minbw.ops.segments import QUIET_SECONDS, SegmentsReport, failure_line, report_segments, sync_segments
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class SegmentsRequest:
    networks: tuple[str, ...] = ()  # names or ids; none: every network with subnets on segments
    sync: bool = False  # write what is missing
    check: bool = False  # with sync: the plan, nothing written
    recount: bool = False  # with sync: also set counts that differ from Neutron's (once they stay still)
    quiet_window: float = QUIET_SECONDS
    option: str = "recount"  # how the front end names recount (in errors)


@dataclass(frozen=True)
class SegmentsResult:
    """``report``: a SegmentsReport (segments with what Placement holds, plan, warnings, diff, differences), or for a
    sync what ops.segments.sync_segments returns (a dict: changed, steps, segments, plan, warnings, diff,
    differences, unresolved, failed_segments)."""

    report: SegmentsReport | dict
    sync: bool

    @property
    def changed(self) -> bool:
        """Whether the sync wrote (False for a report)."""
        return isinstance(self.report, dict) and bool(self.report.get("changed", False))

    @property
    def in_sync(self) -> bool:
        """Whether Placement matches Neutron: the report's ``in_sync``, else whether the plan has no writes."""
        if isinstance(self.report, SegmentsReport):
            return self.report.in_sync
        return not self.report["plan"]["writes"]

    @property
    def failed(self) -> list[str]:
        """The segments whose writes failed, one line each (their writes stopped, the others' made: exit 3)."""
        if isinstance(self.report, SegmentsReport):
            return []
        return [failure_line(f) for f in self.report.get("failed_segments") or ()]

    @property
    def unresolved(self) -> list[str]:
        """Counts that differ from Neutron's and are left as they are (exit 3 for a sync)."""
        if isinstance(self.report, SegmentsReport):
            return self.report.unresolved
        return list(self.report.get("unresolved") or ())

    def to_dict(self) -> dict:
        """The report as a JSON-ready dict (a copy)."""
        return self.report.to_dict() if isinstance(self.report, SegmentsReport) else dict(self.report)


def segments(cloud: Cloud, request: SegmentsRequest) -> SegmentsResult:
    """Report the routed segments' providers against Neutron, or with ``request.sync`` make Placement hold them: a
    SegmentsResult. Raises InvalidInput for a recount without a sync, MissingService without Neutron, ObjectNotFound
    for a network Neutron does not have; lets PlacementError through."""
    if request.recount and not request.sync:
        raise InvalidInput(
            f"{request.option} goes with a sync (minbw segment sync, or --dry-run to see the recount planned)"
        )
    cloud.require("network", "the routed networks' segments are read from Neutron")
    networks = list(request.networks) or None
    if request.sync:
        return SegmentsResult(
            sync_segments(
                cloud.conn,
                cloud.placement,
                networks,
                check=request.check,
                recount=request.recount,
                quiet=request.quiet_window,
            ),
            True,
        )
    return SegmentsResult(report_segments(cloud.conn, cloud.placement, networks), False)
