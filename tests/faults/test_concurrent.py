"""Real concurrent ``minbw provider sync`` processes, started at the same instant (forked from one
pre-imported minbw, tests/support/faults/forker.py), straight against the real Placement: two or three syncs of
the same host, and syncs of different hosts. The end state is read from Placement."""
from __future__ import annotations

import json

import pytest

from minbw.ops import sync as s
from tests.faults.test_faults import converged, desired, root
from tests.faults.test_kill import Forker, agent_files


@pytest.fixture(scope="module")
def forker(placement_server):
    """One forker for the module's tests (its start imports minbw and openstacksdk: about 1 CPU s); each run's
    processes are forked afresh from it."""
    f = Forker({**placement_server.env(), "MINBW_PLACEMENT_BACKOFF": "0.05"})
    yield f
    f.close()


def results(outs) -> list[dict]:
    return [json.loads(o.read_text()) for o in outs]


@pytest.mark.parametrize("round_", range(3))
@pytest.mark.parametrize("create_root", [False, True], ids=["roots-exist", "create-root"])
def test_same_host_synced_by_three_processes_at_once(placement, forker, tmp_path, round_, create_root):
    hosts = ("c0",)
    roots = set() if create_root else {root(placement, h) for h in hosts}
    argv = ["provider", "sync", *agent_files(tmp_path, hosts), "--json"] + (["--create-root"] if create_root else [])
    outs = [tmp_path / f"out{i}.json" for i in range(3)]
    codes = forker.run_all([{"argv": argv, "out": str(o)} for o in outs])
    assert codes == [0, 0, 0], [o.read_text() for o in outs]
    done = results(outs)
    if create_root:
        roots = {p.uuid for p in placement.list_providers(name="c0")}
    converged(placement, desired(*hosts), roots)
    # every write a process reports is real, and none was lost: each planned write was either made by it or
    # found made by another (a duplicate create read back, a generation conflict re-read and rewritten)
    print("same host: writes, of them found applied, conflict retries:",
          [tuple((d["result"] or {}).get(k) for k in ("writes", "found_applied", "retries")) for d in done])
    for d in done:
        assert d["result"] is None or d["result"]["writes"] == len(d["ops"])
    placement.counter.reset()
    plan, result = s.sync_providers(placement, desired(*hosts), create_root=create_root)
    assert plan.ops == () and placement.counter.writes == 0


def test_different_hosts_synced_at_once(placement, forker, tmp_path):
    hosts = ("d0", "d1", "d2", "d3")
    roots = {root(placement, h) for h in hosts}
    outs = [tmp_path / f"{h}.json" for h in hosts]
    codes = forker.run_all([{"argv": ["provider", "sync", *agent_files(tmp_path, (h,)), "--json"], "out": str(o)}
                            for h, o in zip(hosts, outs)])
    assert codes == [0] * len(hosts), [o.read_text() for o in outs]
    converged(placement, desired(*hosts), roots)
    assert all(d["result"]["writes"] == len(d["ops"]) for d in results(outs))
