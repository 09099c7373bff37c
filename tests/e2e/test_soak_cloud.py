"""The soak on the mini-cloud (docs/soak.md, "The cloud topology"): claimers, the sync, the exporter, servers booted
with guaranteed-bandwidth ports, moved (cold migrate + confirm, live migrate, resize + confirm) and deleted,
``minbw audit`` and ``minbw server heal`` at once, while faults of the seed's schedule (Placement's, Neutron's and
Nova's API processes killed or paused, MariaDB paused, Placement slowed) are injected and healed; every invariant
holds (0 violations), the cloud's too (servers' allocations, ports' bindings, no allocation without its owner, the
audit's and heal's findings), and every fault was healed.

The command is the one docs/soak.md shows, run as written, against the suite's two-host cloud (``cloud_two_hosts``:
the runner adopts it, and leaves it as it found it). Not in ``make test`` (its cost: docs/soak.md):
``make soak-cloud-test`` runs it (``MINBW_SOAK_CLOUD=1``), in a network namespace of its own."""
from __future__ import annotations

import os

import pytest

from tests.support.soak.documented import run_as_documented

pytestmark = pytest.mark.skipif(os.environ.get("MINBW_SOAK_CLOUD") != "1",
                                reason="the cloud soak: make soak-cloud-test (MINBW_SOAK_CLOUD=1), not make test")


def test_the_cloud_soak_as_docs_soak_md_runs_it(cloud_two_hosts):
    rep, _ = run_as_documented("### Run it on the mini-cloud", "python -m tests.support.soak.runner --topology cloud ",
                               "cloud", cloud_two_hosts.env, timeout=900, tail=8000)
    for kind in ("claim", "free", "sync", "scrape", "boot", "audit", "heal"):
        assert rep["operations"][kind]["succeeded"] > 0, (kind, rep["operations"].get(kind))
    for name in ("servers_allocations_match", "bindings_name_holders", "no_allocation_without_owner",
                 "audit_no_false_finding", "heal_nothing_to_do", "no_orphans", "faults_healed"):
        assert rep["invariants"][name]["checked"] > 0, name
    # the cloud as the runner found it: none of the soak's servers or providers left
    conn = cloud_two_hosts.connect()
    assert [s.name for s in conn.compute.servers() if s.name.startswith("soak-")] == []
    from minbw.placement.client import Placement
    assert [p.name for p in Placement(conn).list_providers() if p.name.startswith("soak-")] == []
