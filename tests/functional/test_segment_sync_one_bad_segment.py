"""One failing segment costs that segment only (issue 29): the segment sync's writes are grouped by segment (its
provider, inventory, aggregate and the compute nodes it puts in its aggregate); a segment whose provider is deleted
in the real Placement between the plan and the writes (the fault made real: the test deletes it) stops its own writes
and is named with those not made, and the other segments are written. Every segment failing is a PartialApply.
The command's exit code on a real Neutron: tests/e2e/test_one_bad_unit_cloud.py."""
from __future__ import annotations

import pytest

from minbw.errors import PartialApply
from minbw.ops import segments as seg_ops
from minbw.plan.segments import plan_segments
from tests.faults.test_ops_faults import routed
from tests.functional.test_allocation_migration_placement import host

HOSTS = ("sg0", "sg1", "sg2")


@pytest.fixture
def three_segments(placement):
    roots = {name: host(placement, name, ovs_kbps=0) for name in HOSTS}
    segs = routed(3, HOSTS)
    # the middle segment's provider is there already (without inventory or aggregate): its writes read it first
    placement.create_provider(segs[1].id, segs[1].provider_name, None)
    return segs, roots


def plan_of(api, segs):
    return plan_segments(segs, seg_ops.observe(api, segs)).plan


def in_aggregate(api, uuid: str) -> frozenset[str]:
    return frozenset(api.get_provider_aggregates(uuid)[0])


def test_a_segment_provider_deleted_before_its_writes_costs_that_segment_only(placement, three_segments):
    segs, roots = three_segments
    plan = plan_of(placement, segs)
    units = seg_ops.segment_units(plan)
    assert list(units) == [s.id for s in segs]
    assert [op.action for op in units[segs[1].id]] == ["set_inventories", "set_aggregates", "add_root_to_aggregate"]
    placement.delete_provider(segs[1].id)  # gone between the plan and its writes (Neutron deleted the segment)

    done = seg_ops.apply_segments(placement, plan, {s.id: s.label for s in segs})

    for seg, h in ((segs[0], "sg0"), (segs[2], "sg2")):  # the good segments: written whole
        assert placement.get_inventories(seg.id)[0]["IPV4_ADDRESS"]["total"] == 6
        assert in_aggregate(placement, seg.id) == {seg.id} and seg.id in in_aggregate(placement, roots[h])
    assert in_aggregate(placement, roots["sg1"]) == frozenset()  # the bad one's compute node: not put anywhere
    assert placement.list_providers(name=segs[1].provider_name) == []
    (failed,) = done.to_dict()["failed"]
    assert failed["segment"] == segs[1].id and failed["label"] == "segment rack1 (rack1)"
    assert f"No resource provider with uuid {segs[1].id} found (status 404" in failed["error"], failed
    assert [op["action"] for op in failed["pending"]] == ["set_inventories", "set_aggregates", "add_root_to_aggregate"]
    assert len(done.applied) + len(failed["pending"]) == len(plan.ops)
    (line,) = done.failures()
    assert line.startswith("segment rack1 (rack1): ") and "3 of its writes not made (the first: set_inventories on " \
        f"{segs[1].provider_name})" in line and "segment sync again resumes" in line, line

    # the next sync makes the segment again, from nothing; then there is nothing left to write
    again = seg_ops.apply_segments(placement, plan_of(placement, segs))
    assert again.failed == [] and [op.action for op in again.applied] == [
        "create_provider", "set_inventories", "set_aggregates", "add_root_to_aggregate"]
    assert segs[1].id in in_aggregate(placement, roots["sg1"])
    assert plan_of(placement, segs).ops == ()


def test_every_segment_failing_is_a_partial_apply_naming_each(placement, three_segments):
    segs, _ = three_segments
    for seg in segs[:1] + segs[2:]:
        placement.create_provider(seg.id, seg.provider_name, None)
    plan = plan_of(placement, segs)
    for seg in segs:
        placement.delete_provider(seg.id)
    with pytest.raises(PartialApply) as err:
        seg_ops.apply_segments(placement, plan, {s.id: s.label for s in segs})
    e = err.value
    assert e.applied == [] and e.pending == list(plan.ops)
    assert "the writes of every segment failed (segment rack0 (rack0), segment rack1 (rack1), segment rack2 " \
           "(rack2))" in str(e), str(e)
    # the whole-plan contract (ops.segments.apply): the same
    with pytest.raises(PartialApply):
        seg_ops.apply(placement, plan)


def test_the_whole_plan_apply_writes_the_others_then_raises(placement, three_segments):
    """``ops.segments.apply`` (all or an error): the good segments are written before the bad one is raised."""
    segs, _ = three_segments
    plan = plan_of(placement, segs)
    placement.delete_provider(segs[1].id)
    with pytest.raises(PartialApply) as err:
        seg_ops.apply(placement, plan)
    e = err.value
    assert [op.action for op in e.pending] == ["set_inventories", "set_aggregates", "add_root_to_aggregate"]
    assert {op.uuid for op in e.pending[:2]} == {segs[1].id} and len(e.applied) == len(plan.ops) - 3
    assert f"segment {segs[1].id}: " in str(e) and "3 of its writes not made" in str(e)
