"""``minbw segment list|sync`` and the ``segment_providers`` module:
routed networks' segment providers in Placement (IPV4_ADDRESS, aggregate, hosts) as Neutron's segments plugin
reports them, and a sync where it does not."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.errors import InvalidInput
from minbw.ops.segments import QUIET_SECONDS, SegmentsOutcome, report_segments, sync_segments
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
    """``report``: for a list a SegmentsReport (segments with what Placement holds, plan, warnings, diff,
    differences), for a sync a SegmentsSync (steps, segments, plan, warnings, diff, differences, unresolved, the
    segments whose writes failed); both a SegmentsOutcome."""

    report: SegmentsOutcome
    sync: bool

    @property
    def changed(self) -> bool:
        """Whether the sync wrote (False for a report)."""
        return self.report.changed

    @property
    def in_sync(self) -> bool:
        """Whether Placement matches Neutron: the report's ``in_sync``, for a sync whether the plan has no writes."""
        return self.report.in_sync

    @property
    def failed(self) -> list[str]:
        """The segments whose writes failed, one line each (their writes stopped, the others' made: exit 3)."""
        return [f.line for f in self.report.failed]

    @property
    def unresolved(self) -> list[str]:
        """Counts that differ from Neutron's and are left as they are (exit 3 for a sync)."""
        return self.report.unresolved

    def to_dict(self) -> dict:
        """The report as a JSON-ready dict."""
        return self.report.to_dict()


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
