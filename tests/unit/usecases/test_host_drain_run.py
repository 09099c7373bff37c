"""The drain's pure parts (issue 45 item 2): the order and the bound of the moves (``waves``), which servers a re-run
confirms from what Nova shows (``to_confirm``), the line that says where a stopped drain stands, the request's
refusals of bad input, the run's document and the command's table and exit codes. The moves themselves run on the
mini-cloud (tests/e2e/test_host_drain_cloud.py)."""
from __future__ import annotations

import pytest

from minbw.cli.host import pending_rows, run_exit_code, step_rows
from minbw.errors import InvalidInput
from minbw.ops.drain import ComputeState
from minbw.plan.drain import DrainPlan, Move, Stuck, waves
from minbw.usecases.drain import (
    NO_PLACE,
    REASON,
    DrainRun,
    DrainStep,
    HostDrainRequest,
    newly_stuck,
    other_providers,
    step_line,
    to_confirm,
    where_it_stands,
)


def move(sid: str, kind: str = "live", host: str = "h1") -> Move:
    return Move(sid, f"vm-{sid}", kind, host, f"r-{host}", {f"r-{host}": {"VCPU": 1}}, {"": (f"r-{host}",)})


MOVES = (move("a"), move("b", "cold"), move("c"), move("d", host="h2"), move("e"))


def test_the_moves_keep_the_plans_order_at_most_parallel_at_a_time():
    assert [[m.server_id for m in w] for w in waves(MOVES)] == [["a"], ["b"], ["c"], ["d"], ["e"]]
    assert [[m.server_id for m in w] for w in waves(MOVES, 2)] == [["a", "b"], ["c", "d"], ["e"]]
    assert [[m.server_id for m in w] for w in waves(MOVES, 9)] == [["a", "b", "c", "d", "e"]]
    assert waves((), 3) == ()
    # --cold: every move cold, nothing else changed
    cold = waves(MOVES, 2, cold=True)
    assert {m.kind for w in cold for m in w} == {"cold"}
    assert [m.host for w in cold for m in w] == [m.host for m in MOVES]
    assert [m.kind for w in waves(MOVES, 5) for m in w] == ["live", "cold", "live", "live", "live"]


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True, None])
def test_a_bound_below_one_or_not_a_whole_number_is_refused(bad):
    with pytest.raises(InvalidInput, match=r"parallel: .*--parallel 1"):
        waves(MOVES, bad)
    with pytest.raises(InvalidInput, match="parallel"):
        HostDrainRequest("h0", parallel=bad)


def test_the_request_refuses_an_empty_host_or_reason():
    with pytest.raises(InvalidInput, match="HOST: give the compute host"):
        HostDrainRequest(" ", host_option="HOST")
    with pytest.raises(InvalidInput, match=r"reason: give why h0 is disabled"):
        HostDrainRequest("h0", reason=" ")
    request = HostDrainRequest("h0", nova_options=["a.b=c"])
    assert request.reason == REASON and request.parallel == 1 and not request.partial and not request.cold
    assert request.query.host == "h0" and request.query.nova_options == ("a.b=c",)


def test_a_rerun_confirms_only_the_servers_still_verifying_their_cold_migration_each_once():
    finished = [("s1", "VERIFY_RESIZE"), ("s2", "ACTIVE"), ("s1", "VERIFY_RESIZE"), ("s3", "VERIFY_RESIZE"),
                ("s4", "SHUTOFF")]
    assert to_confirm(finished) == ["s1", "s3"]
    assert to_confirm([]) == []


def test_a_stopped_drain_says_what_failed_what_moved_what_is_left_and_how_to_go_on():
    steps = [DrainStep("a", "vm-a", "live", "h1", "moved"),
             DrainStep("b", "vm-b", "cold", "h1", "failed", problems=("server b holds {}, expected {...}",))]
    line = where_it_stands("h0", steps, MOVES[2:], True)
    assert line == (
        "host h0: drain stopped: vm-b (cold to h1) failed: server b holds {}, expected {...}. 1 server(s) moved and "
        "verified, 3 not started; h0 is disabled. Fix the cause, then run 'minbw host drain h0' again (it reads Nova "
        "and Placement and goes on), or 'minbw host drain h0 --undo' to enable it again.")
    nova = [DrainStep("a", "vm-a", "live", "h1", "failed", error="live_migrate: Nova refused it")]
    assert "vm-a (live to h1) failed: live_migrate: Nova refused it. 0 server(s) moved" in where_it_stands(
        "h0", nova, (), False)
    assert "h0 is enabled" in where_it_stands("h0", nova, (), False)


def test_the_run_document_the_table_and_the_exit_codes():
    compute = ComputeState("h0", "7", True, REASON)
    plan = DrainPlan("h0", MOVES[:2], (), "greedy", 2)
    steps = (DrainStep("a", "vm-a", "live", "h1", "moved"),
             DrainStep("b", "vm-b", "cold", "h1", "failed", error="migrate: ERROR"))
    stopped = DrainRun("h0", "stopped", True, compute, plan, steps, (), "stopped")
    doc = stopped.to_dict()
    assert doc["ok"] is False and doc["compute"] == {"host": "h0", "id": "7", "disabled": True, "reason": REASON}
    assert doc["plan"] == plan.to_dict() and doc["steps"][1]["error"] == "migrate: ERROR"
    assert step_rows(doc) == (("vm-a", "live", "h1", "moved", ""), ("vm-b", "cold", "h1", "failed", "migrate: ERROR"))
    assert run_exit_code(doc) == 1
    drained = DrainRun("h0", "drained", True, compute, plan, steps[:1]).to_dict()
    assert drained["ok"] is True and run_exit_code(drained) == 0
    refused_plan = DrainPlan("h0", MOVES[:1], (Stuck("z", "vm-z", "no room"),), "exact", 0)
    refused = DrainRun("h0", "refused", False, compute, refused_plan, (), refused_plan.moves).to_dict()
    assert run_exit_code(refused) == 4 and pending_rows(refused) == (("vm-a", "live", "h1"),)
    enabled = DrainRun("h0", "enabled", False, ComputeState("h0", "7", False)).to_dict()
    assert enabled["ok"] is True and enabled["plan"] is None and run_exit_code(enabled) == 0
    # check mode: ok only when every server has a destination
    assert DrainRun("h0", "planned", True, compute, plan).ok is True
    assert DrainRun("h0", "planned", True, compute, refused_plan).ok is False


# ---------------------------------------------------------------- faults mid-drain (issue 45 item 5)

NO_ROOM = ("no room left on the 1 host(s) it could use once the others are placed; nearest h1: "
           "NET_BW_EGR_KILOBIT_PER_SEC on h1:br-test (100 free, 500 needed, 400 short)")


def test_a_replan_stops_only_on_a_server_the_run_had_planned_to_move():
    plan = DrainPlan("h0", MOVES[1:], (Stuck("a", "vm-a", NO_ROOM), Stuck("z", "vm-z", "no room")), "exact", 0)
    # z was stuck when the run began (--partial let it stay); a had a place then, none now
    assert [s.server_id for s in newly_stuck(plan, frozenset({"z"}))] == ["a"]
    assert newly_stuck(plan, frozenset({"a", "z"})) == ()
    assert [s.server_id for s in newly_stuck(plan, frozenset())] == ["a", "z"]
    assert newly_stuck(DrainPlan("h0", MOVES, (), "greedy", 5), frozenset()) == ()


def test_a_server_the_replan_has_no_place_for_says_which_resource_how_short_and_where():
    steps = [DrainStep("b", "vm-b", "live", "h1", "moved"),
             DrainStep("a", "vm-a", "", "", NO_PLACE, error=NO_ROOM)]
    line = where_it_stands("h0", steps, MOVES[2:], True)
    assert line.startswith(
        "host h0: drain stopped: vm-a was not moved: the re-plan before its move found no place for it: no room left "
        "on the 1 host(s) it could use once the others are placed; nearest h1: NET_BW_EGR_KILOBIT_PER_SEC on "
        "h1:br-test (100 free, 500 needed, 400 short). 1 server(s) moved and verified, 4 not started; h0 is disabled."
    ), line
    assert step_line("h0", steps[1]) == f"drain h0: vm-a not moved: the re-plan found no place for it: {NO_ROOM}"
    # a stop with no step to blame (the re-plan itself failed): the reason given
    why = where_it_stands("h0", steps[:1], MOVES[2:], True, "the re-plan before the next move failed: Placement down")
    assert why.startswith("host h0: drain stopped: the re-plan before the next move failed: Placement down. 1 server")


def test_a_step_on_other_providers_of_the_planned_host_says_which():
    planned = {"r1": {"VCPU": 1}, "br-a": {"NET_BW_EGR_KILOBIT_PER_SEC": 500}}
    held = {"r1": {"VCPU": 1}, "br-b": {"NET_BW_EGR_KILOBIT_PER_SEC": 500}}
    names = {"r1": "h1", "br-a": "h1:br-a", "br-b": "h1:br-b"}
    assert other_providers(planned, planned, names) == ""
    note = other_providers(planned, held, names)
    assert note == ("Nova chose other providers than planned on the same host: planned h1:br-a "
                    "{'NET_BW_EGR_KILOBIT_PER_SEC': 500}; holds h1:br-b {'NET_BW_EGR_KILOBIT_PER_SEC': 500} instead "
                    "(verified for what Nova chose)")
    # an amount split differently over the same providers, a provider without a name: said by uuid
    assert "planned br-a {'NET_BW_EGR_KILOBIT_PER_SEC': 500}; holds br-a {'NET_BW_EGR_KILOBIT_PER_SEC': 400}" in \
        other_providers(planned, {"r1": {"VCPU": 1}, "br-a": {"NET_BW_EGR_KILOBIT_PER_SEC": 400}}, {})
    step = DrainStep("a", "vm-a", "live", "h1", "moved", note=note)
    assert step.to_dict()["note"] == note
    assert step_rows({"steps": [step.to_dict()]}) == (("vm-a", "live", "h1", "moved", note),)
    assert step_line("h0", step) == f"drain h0: vm-a moved and verified; {note}"
    assert step_line("h0", DrainStep("a", "vm-a", "live", "h1", "moved")) == "drain h0: vm-a moved and verified"
    assert step_line("h0", DrainStep("c", "vm-c", "live", "h1", "failed", error="live_migrate: ERROR")) == \
        "drain h0: vm-c failed: live_migrate: ERROR"


def test_a_move_on_other_providers_is_judged_again_on_the_facts_read():
    """A drain step whose allocation is not the planned one is verified for what Nova chose on the same facts
    (``judged_again``: nothing read again): the planned providers' expectation dropped, every other rule kept."""
    from minbw.ops.drain import judged_again
    from minbw.reports.server_move import MoveState, check_move
    from tests.unit.reports.test_server_move_checks import facts, mig, on

    settled = facts(host=1, migration=mig("completed", "live-migration"), binding_host="devstack1")
    planned = on(1, bw={"NET_BW_EGR_KILOBIT_PER_SEC": 500, "NET_BW_IGR_KILOBIT_PER_SEC": 500})
    state = MoveState(settled, check_move(settled, expect_allocations=planned))
    assert not state.ok
    again = judged_again(state)
    assert again.ok and again.facts is settled, again.verdict.problems
    # a rule other than the planned providers still holds: the migration consumer not freed fails again
    held = facts(host=1, migration=mig("completed", "live-migration"), binding_host="devstack1", mig_allocs=on(0))
    assert not judged_again(MoveState(held, check_move(held, expect_allocations=planned))).ok
