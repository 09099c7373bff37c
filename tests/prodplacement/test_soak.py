"""The soak's reduced form (docs/soak.md; `make soak` runs it for 10 minutes on 1,000 hosts): on the production-style
Placement, claimers, frees, a periodic sync and the exporter with a scraper at once, for about 40 s, while faults
of the seed's schedule are injected and healed; every invariant holds (0 violations) and every fault was healed.
The command is the one docs/soak.md shows, run as written (its own network and mount namespace: root)."""
from __future__ import annotations

import os

import pytest

from tests.support.soak.documented import run_as_documented
from tests.support.soak.faults import PROD_KINDS
from tests.support.soak.runner import schedule


def test_the_seed_makes_the_schedule():
    """The same seed replays the same faults (kinds, times, holds, targets); another seed makes another schedule;
    every kind comes once before any comes twice."""
    a = schedule(1234, PROD_KINDS, 600, 120, (3.0, 12.0))
    assert a == schedule(1234, PROD_KINDS, 600, 120, (3.0, 12.0))
    assert a != schedule(1235, PROD_KINDS, 600, 120, (3.0, 12.0))
    assert len(a) > len(PROD_KINDS) and {p.kind for p in a[:len(PROD_KINDS)]} == set(PROD_KINDS)
    assert a[0].at == 120 and all(p.at + p.hold <= 600 for p in a)
    assert all(b.at >= p.at + p.hold for p, b in zip(a, a[1:]))


@pytest.mark.skipif(os.geteuid() != 0, reason="the soak runs in a network and mount namespace of its own: root")
def test_the_soak_as_docs_soak_md_runs_it():
    # the workload ran beside the faults
    rep, out = run_as_documented("## Run it", "python -m tests.support.soak.runner --netns ", "prod", dict(os.environ),
                                 timeout=600, tail=6000)
    for kind in ("claim", "free", "sync", "scrape"):
        assert rep["operations"][kind]["succeeded"] > 0, (kind, rep["operations"].get(kind))
    for name in ("no_overcapacity", "claims_present", "frees_gone", "no_orphans", "sync_converges",
                 "exporter_equals_placement", "no_process_leaked", "faults_healed"):
        assert rep["invariants"][name]["checked"] > 0, name
    assert (out / "latency.png").stat().st_size > 10_000 and "| invariant |" in (out / "report.md").read_text()


def test_a_database_outage_does_not_age_a_consumer_into_an_orphan():
    """The seconds a consumer stays without allocations are the database's: samples that failed (MariaDB paused or
    down) stop the clock, since the claim's second transaction waits for the database too. The same 8 s with the
    database answering make an orphan."""
    from types import SimpleNamespace

    from tests.support.soak.judges import ORPHAN_AFTER, invariants, judge_sample

    def soak():
        return SimpleNamespace(inv=invariants(), over_since={}, over_seen=set(), transient_over=0, empty_since={},
                               orphans_seen=set(), expected_providers=3)

    def sample(t, ok=True):
        return {"t": t, "ok": True, "over": [], "orphans": [1, 0], "providers": 3,
                "empty_consumers": ["c1"]} if ok else {"t": t, "ok": False, "error": "OperationalError: timed out"}

    paused = soak()
    for s in [sample(0.0), sample(1.0), *(sample(t, ok=False) for t in (2.0, 5.0, 8.0)), sample(9.0)]:
        judge_sample(paused, s)
    assert paused.inv["no_orphans"].violations == 0 and paused.inv["no_orphans"].checked == 3
    answering = soak()
    for t in (0.0, 1.0, 2.0, 5.0, 8.0, 9.0):
        judge_sample(answering, sample(t))
    assert 9.0 >= ORPHAN_AFTER and answering.inv["no_orphans"].violations == 1
