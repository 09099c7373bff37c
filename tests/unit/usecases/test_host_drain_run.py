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
    REASON,
    DrainRun,
    DrainStep,
    HostDrainRequest,
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
