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


def test_sync_dict_keys_in_order_and_a_failed_segment():
    from minbw.errors import NotFound
    from minbw.ops.segments import FailedSegment, SegmentsSync
    from minbw.plan.segments import SegmentOp
    from minbw.usecases.segments import SegmentsResult

    segs = _routed()
    planned = plan_segments(segs, ObservedSegments({}, {}, {}, {"devstack0": _rp(ROOT0, "devstack0")}))
    pending = (SegmentOp("set_inventories", uuid=SEG1, name="Neutron segment id x"),)
    failed = FailedSegment(SEG1, "segment rack1", "gone", "placement.undefined_code", pending, NotFound("gone"))
    sync = SegmentsSync(tuple(str(op) for op in planned.plan.ops), segs, PlannedSegments(planned),
                        tuple(planned.warnings), (failed,))
    doc = sync.to_dict()
    assert list(doc) == ["changed", "steps", "segments", "plan", "warnings", "diff", "differences", "unresolved",
                         "failed_segments"]
    assert doc["changed"] is sync.changed is True and not sync.in_sync and sync.writes == len(planned.plan.ops)
    assert doc["steps"] == list(sync.steps) and doc["segments"] == [s.to_dict() for s in segs]
    assert doc["failed_segments"] == [{"segment": SEG1, "label": "segment rack1", "error": "gone",
                                       "code": "placement.undefined_code", "pending": [pending[0].to_dict()]}]
    assert failed.line == ("segment rack1: gone — 1 of its writes not made (the first: set_inventories on "
                           "Neutron segment id x); running the segment sync again resumes from what is in Placement")
    result = SegmentsResult(sync, True)
    assert result.failed == [failed.line] and result.changed and result.to_dict() == doc


def test_a_report_and_a_sync_answer_the_front_ends_alike():
    from minbw.ops.segments import SegmentsSync
    from minbw.usecases.segments import SegmentsResult

    planned = PlannedSegments(plan_segments((), ObservedSegments({}, {}, {}, {})))
    for outcome in (SegmentsReport((), planned), SegmentsSync((), (), planned, ())):
        result = SegmentsResult(outcome, isinstance(outcome, SegmentsSync))
        assert (result.changed, result.in_sync, result.failed, result.unresolved) == (False, True, [], [])
        assert outcome.writes == 0 and outcome.steps == () and outcome.warnings == ()
