"""The pure part of a write's verification (minbw.reports.verify): what a write raised, capacity, excess, undo."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from minbw.errors import ConsumerConflict
from minbw.placement.client import RetryPolicy
from minbw.reports.verify import (Excess, capacities_from_summaries, capacity, over_capacity, raised, resources,
                                undo_body)

A, B = "rp-a", "rp-b"


def allocs(**by_rp):
    return {rp: {"resources": dict(res)} for rp, res in by_rp.items()}


def test_capacity_is_placements_arithmetic():
    assert capacity({"total": 10}) == 10
    assert capacity({"total": 10, "reserved": 2, "allocation_ratio": 1.5}) == 12.0
    assert capacity({"total": 4, "reserved": 4, "allocation_ratio": 16.0}) == 0


def test_raised_is_what_grew():
    before = allocs(**{A: {"VCPU": 2, "MEMORY_MB": 512}})
    after = allocs(**{A: {"VCPU": 2, "MEMORY_MB": 1024}, B: {"NET_BW_EGR_KILOBIT_PER_SEC": 10}})
    assert raised(after, before) == {A: {"MEMORY_MB"}, B: {"NET_BW_EGR_KILOBIT_PER_SEC"}}
    assert raised(after) == {A: {"VCPU", "MEMORY_MB"}, B: {"NET_BW_EGR_KILOBIT_PER_SEC"}}
    assert raised(before, after) == {}              # a shrink raises nothing
    assert raised({}, before) == {}


def test_over_capacity_names_each_excess_in_order():
    touched = {B: {"X", "Y"}, A: {"VCPU"}}
    usages = {A: {"VCPU": 9}, B: {"X": 5, "Y": 7}}
    caps = {A: {"VCPU": 8}, B: {"X": 5, "Y": 6.5}}
    got = over_capacity(touched, usages, caps)
    assert got == (Excess(A, "VCPU", 9, 8), Excess(B, "Y", 7, 6.5))
    assert str(got[0]) == "rp-a VCPU: used 9 > capacity 8" and str(got[1]).endswith("capacity 6.5")
    assert over_capacity(touched, usages, {A: {}, B: {"X": 5, "Y": 7}}) == (Excess(A, "VCPU", 9, 0),)
    assert over_capacity({A: {"VCPU"}}, {}, {A: {"VCPU": 0}}) == ()   # nothing used: nothing over


@given(total=st.integers(0, 10_000), reserved=st.integers(0, 10_000), ratio=st.sampled_from([1.0, 1.5, 4.0, 16.0]),
       used=st.integers(0, 200_000))
def test_excess_exactly_when_placement_would_refuse_one_more_unit_of_nothing(total, reserved, ratio, used):
    """Placement refuses a write when ``capacity < used + needed`` (objects/allocation.py): a usage is over
    capacity exactly when ``capacity < used`` (needed 0), which is what over_capacity reports."""
    cap = capacity({"total": total, "reserved": reserved, "allocation_ratio": ratio})
    found = over_capacity({A: {"R"}}, {A: {"R": used}}, {A: {"R": cap}})
    assert bool(found) == (cap < used)


def test_undo_body_puts_back_before_at_the_generation_read():
    written = allocs(**{A: {"VCPU": 1}})
    now = {"allocations": {A: {"resources": {"VCPU": 1}, "generation": 7}}, "consumer_generation": 3,
           "project_id": "p", "user_id": "u"}
    assert undo_body("c", now, written) == {"allocations": {}, "consumer_generation": 3, "project_id": "p",
                                            "user_id": "u"}
    before = allocs(**{A: {"VCPU": 1}, B: {"X": 2}})
    now2 = {**now, "allocations": {**now["allocations"], B: {"resources": {"X": 4}}}}
    assert undo_body("c", now2, allocs(**{A: {"VCPU": 1}, B: {"X": 4}}), before)["allocations"] == before


def test_undo_body_refuses_a_consumer_someone_else_changed():
    written = allocs(**{A: {"VCPU": 1}})
    for allocations in ({A: {"resources": {"VCPU": 2}}}, {}):
        with pytest.raises(ConsumerConflict, match="not ours|someone else's"):
            undo_body("c", {"allocations": allocations, "consumer_generation": 4}, written)


def test_resources_drops_generations_and_empty_entries():
    assert resources({A: {"resources": {"VCPU": 1}, "generation": 3}, B: {"resources": {}}}) == {A: {"VCPU": 1}}


def test_the_pause_after_an_undo_is_wider_than_after_a_conflict():
    p = RetryPolicy()
    for n in (1, 2, 5):
        for _ in range(50):
            assert 0 <= p.pause(n, overcommit=True) <= p.overcommit_backoff * n
            assert 0 <= p.pause(n, conflict=True) <= p.conflict_backoff * n
    assert p.overcommit_backoff > p.conflict_backoff


def test_capacities_from_candidates_summaries():
    summaries = {A: {"resources": {"VCPU": {"capacity": 64, "used": 3}}, "traits": []},
                 B: {"resources": {"X": {"capacity": 10, "used": 0}, "Y": {"used": 1}}}}
    assert capacities_from_summaries(summaries) == {A: {"VCPU": 64}, B: {"X": 10}}
    assert capacities_from_summaries(None) == {}
