"""SegmentsReport: the segment report is typed to the edge; its dict is today's, keys in the same order."""
from __future__ import annotations

from minbw.ops.segments import PlannedSegments, SegmentPlacement, SegmentsReport, SegmentView
from minbw.plan.segments import ObservedSegments, plan_segments
from tests.unit.neutron.test_segments import AGG0, ROOT0, SEG0, SEG1, _routed, _rp


def test_report_dict_keys_in_order_and_placement_view():
    segs = _routed()
    planned = plan_segments(segs, ObservedSegments({}, {}, {}, {"devstack0": _rp(ROOT0, "devstack0")}))
    seen = SegmentPlacement({"IPV4_ADDRESS": {"total": 4}}, (AGG0,), ("devstack0",))
    report = SegmentsReport((SegmentView(segs[0], seen), SegmentView(segs[1], None)), PlannedSegments(planned))
    doc = report.to_dict()
    assert list(doc) == ["segments", "in_sync", "plan", "warnings", "diff", "differences", "unresolved"]
    assert not report.in_sync and doc["in_sync"] is False and report.unresolved == doc["unresolved"] == []
    assert [s["id"] for s in doc["segments"]] == [SEG0, SEG1]
    assert list(doc["segments"][0]) == [*segs[0].to_dict(), "placement"]
    assert doc["segments"][0]["placement"] == {"inventories": {"IPV4_ADDRESS": {"total": 4}}, "aggregates": [AGG0],
                                               "hosts_in_aggregate": ["devstack0"]}
    assert doc["segments"][1]["placement"] is None
    assert doc["plan"] == planned.plan.to_dict() and doc["warnings"] == planned.warnings


def test_planned_dict_keys_in_order():
    planned = plan_segments((), ObservedSegments({}, {}, {}, {}))
    assert list(PlannedSegments(planned).to_dict()) == ["plan", "warnings", "diff", "differences", "unresolved"]
    assert SegmentsReport((), PlannedSegments(planned)).in_sync
