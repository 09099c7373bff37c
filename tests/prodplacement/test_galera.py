"""minbw on Placement as production deployments run it: two Placement API processes (uWSGI) behind HAProxy, on a
three-node MariaDB Galera cluster behind HAProxy (tests/support/galera/galera.sh), in kolla-ansible's
single-writer mode (nodes 2 and 3 are HAProxy backups) and with writes spread over the three nodes.

Opt-in: these tests start a cluster per mode (about a minute each on 2 loaded cores), so they run only with
MINBW_GALERA=1, which ``make galera`` sets; ``make test`` collects and skips them (this suite's budget is not
theirs)."""
from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import shutil
import time
import uuid

import pytest

from minbw.ops import claims
from minbw.placement.client import Placement
from tests.conftest import CallCounter, wipe
from tests.prodplacement.test_prod_placement import (FLAVOR, KBPS, PORT_ID, _cli_claimer, check_round, make_hosts,
                                                     no_overcommit, request_json)

pytestmark = pytest.mark.skipif(os.environ.get("MINBW_GALERA") != "1",
                                reason="the Galera Placement (3 MariaDB nodes, HAProxy): `make galera` runs these "
                                       "(MINBW_GALERA=1)")


@pytest.fixture(scope="module", params=["single-writer", "multi-writer"])
def galera(request):
    """One cluster per mode, shared by the module's tests of that mode (pytest groups them by mode)."""
    from tests.support.galera.server import GaleraPlacement, state_dir_for
    server = GaleraPlacement(state_dir_for(), mode=request.param)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        if os.environ.get("MINBW_GALERA_KEEP") != "1":
            shutil.rmtree(server.state_dir, ignore_errors=True)


@pytest.fixture
def api(galera):
    conn = galera.connect()
    client = Placement(conn)
    client.counter = CallCounter(conn)
    wipe(client)
    client.counter.reset()
    return client


@pytest.fixture(scope="module")
def pool():
    with multiprocessing.get_context("spawn").Pool(8) as p:
        yield p


def wait_until(what, predicate, timeout=60.0):
    end = time.time() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.time() > end:
            raise AssertionError(f"timeout ({timeout:.0f} s) waiting for: {what}")
        time.sleep(0.5)


def same_on_every_node(galera, query, nodes=(1, 2, 3), timeout=30.0):
    """The query's answer once it is the same on each node (replication is synchronous, applying is not)."""
    answers = {}

    def agreed():
        answers.update({n: galera.sql(n, query).strip() for n in nodes})
        return len(set(answers.values())) == 1
    wait_until(f"{query!r} the same on nodes {nodes}: {answers}", agreed, timeout)
    return answers[nodes[0]]


# ---------------------------------------------------------------- the cluster

def test_three_synced_nodes_behind_haproxy(galera):
    for n in (1, 2, 3):
        w = galera.wsrep(n)
        assert (w["wsrep_cluster_size"], w["wsrep_local_state_comment"], w["wsrep_cluster_status"]) == \
            ("3", "Synced", "Primary"), (n, galera.status())
    servers = galera.haproxy_servers()
    nodes = {s: row for (px, s), row in servers.items() if px == "mariadb"}
    assert sorted(nodes) == ["node1", "node2", "node3"]
    assert all(row["status"] == "UP" for row in nodes.values()), servers
    backups = sorted(s for s, row in nodes.items() if row["bck"] == "1")
    assert backups == (["node2", "node3"] if galera.mode == "single-writer" else [])
    assert sorted(s for (px, s), row in servers.items() if px == "placement_api" and row["status"] == "UP") == \
        ["api1", "api2"]
    # new connections through HAProxy: all to node 1 (single-writer) or round robin over the three
    seen = {galera.via_haproxy("SELECT @@wsrep_node_name") for _ in range(6)}
    assert seen == ({"node1"} if galera.mode == "single-writer" else {"node1", "node2", "node3"})


# ---------------------------------------------------------------- sync and a claim through HAProxy

def test_sync_and_claim_through_haproxy(api, galera, tmp_path, monkeypatch):
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(galera.clouds_yaml))
    names = [f"galera-{i:02d}" for i in range(4)]
    cold = make_hosts(api, names, 10_000_000, 25_000_000)
    assert cold.writes > 0
    from minbw.neutron.provider_tree import desired_state
    from minbw.ops import sync
    from tests.prodplacement.test_prod_placement import agent_configs
    api.counter.reset()
    plan, warm = sync.sync(api, desired_state(agent_configs(names, 10_000_000, 25_000_000)))
    assert api.counter.writes == 0 and not plan.ops and warm is None
    assert len(api.list_providers()) == 4 * 5
    # every node holds the providers (each API request went to one of them, through HAProxy)
    assert same_on_every_node(galera, "SELECT COUNT(*) FROM placement.resource_providers") == "20"

    from minbw.cli.shell import main
    port = request_json(tmp_path)
    consumer = str(uuid.uuid4())
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["--os-cloud", galera.cloud, "allocation", "create", "--consumer", consumer, "--project-id", "p",
                   "--user-id", "u", *FLAVOR, "--port-request", f"{PORT_ID}={port}", "--json"])
    assert rc == 0, err.getvalue()
    got = json.loads(out.getvalue())
    assert got["claimed"] is True and got["host_name"] in names
    allocs = api.get_allocations(consumer)["allocations"]
    assert sum(a["resources"].get("NET_BW_EGR_KILOBIT_PER_SEC", 0) for a in allocs.values()) == KBPS
    query = ("SELECT COUNT(*) FROM placement.allocations a JOIN placement.consumers c ON a.consumer_id = c.uuid "
             f"WHERE c.uuid = '{consumer}'")
    rows = sum(len(a["resources"]) for a in allocs.values())   # one row per provider and resource class
    assert rows == 5 and same_on_every_node(galera, query) == str(rows)
    assert claims.free(api, consumer) and not api.get_allocations(consumer)["allocations"]
    assert same_on_every_node(galera, query) == "0"
    # both API processes answered (HAProxy's round robin; uWSGI's request logs)
    assert galera.serving_apis() == {1, 2}


# ---------------------------------------------------------------- 8 concurrent claimers

def run_round(galera, pool, consumers, claimers, args, delay):
    start_at = time.time() + delay      # every process imported and waiting: all at once
    jobs = [(str(galera.clouds_yaml), galera.cloud, consumers[i::claimers], start_at, args) for i in range(claimers)]
    return [r for chunk in pool.map(_cli_claimer, jobs, chunksize=1) for r in chunk]


def commit_deadlocks(results):
    """(the others, the claims that failed because Placement answered 500 with MySQL's error 1213). With writes
    on several nodes, Galera certifies a transaction at COMMIT and fails the loser with "Deadlock found ...":
    after Placement's allocation write and its retry loop succeeded, outside oslo.db's deadlock retries, so
    Placement answers 500 and ``minbw allocation create`` exits 1 (docs/galera.md). Seen only in multi-writer mode."""
    dead = [r for r in results if r[1] == 1 and "(1213, " in r[3] and "status 500" in r[3]]
    return [r for r in results if r not in dead], dead


def test_claim_storm_never_overcommits(api, galera, tmp_path, pool):
    """8 ``minbw allocation create`` processes, 3 claims each, all at the same instant, for twice the bandwidth there is
    (2 hosts), 2 rounds: after each no provider is over capacity and every claim is accounted for
    (check_round of the single-server test), but for the claims Galera's certification failed at commit (multi-
    writer: a 500 from Placement, nothing allocated); what certification did is printed."""
    claimers, per_claimer, rounds = 8, 3, 2
    demand = claimers * per_claimer
    fits = demand // 2
    make_hosts(api, ["storm-0", "storm-1"], fits // 2 * KBPS)
    port = request_json(tmp_path)
    args = ["--project-id", "p", "--user-id", "u", *FLAVOR, "--port-request", f"{PORT_ID}={port}"]
    bridges = [p for p in api.list_providers() if p.name.endswith(":br-phys0")]
    logs0, cert0, t0 = galera.log_counts(), galera.certification(), time.time()
    undone, claimed, lost_at_commit = 0, 0, 0
    for rnd in range(rounds):
        results = run_round(galera, pool, [str(uuid.uuid4()) for _ in range(demand)], claimers, args,
                            8 if rnd == 0 else 2)
        rest, dead = commit_deadlocks(results)
        for c, _, _, _ in dead:     # failed at commit: nothing of it stays
            assert not api.get_allocations(c)["allocations"], c
        lost_at_commit += len(dead)
        # check_round's checks on the others; each claim lost at commit may leave its bandwidth idle (claimers
        # // 8 is how many claims it lets end idle)
        undone += check_round(api, rest, len(rest), fits, claimers + 8 * len(dead), bridges,
                              f"{galera.mode} round {rnd + 1}")
        claimed += sum(r[1] == 0 for r in results)
        for c, rc, _, _ in results:
            if rc == 0:
                claims.free(api, c)
        assert no_overcommit(api) == []
    logs = {k: v - logs0[k] for k, v in galera.log_counts().items()}
    cert = {k: v - cert0[k] for k, v in galera.certification().items()}
    print(f"\n{claimers} claimers x {per_claimer} claims x {rounds} rounds on {galera.describe()}: 0 overcommit, "
          f"{claimed} claimed, {undone} undone, {lost_at_commit} failed by a deadlock at commit (HTTP 500), "
          f"{time.time() - t0:.0f} s; Placement's logs: {logs}; Galera: {cert}")


# ---------------------------------------------------------------- a node killed during the claims

def test_a_node_killed_mid_storm_then_rejoining(api, galera, tmp_path, pool, monkeypatch):
    """kill -9 of a Galera node while 8 claimers run (single-writer: node 1, the one HAProxy sends every
    connection to; multi-writer: node 2): the two others stay a primary cluster of 2, no provider ends over
    capacity, claims made after the kill succeed; the node then rejoins (IST) with the same data."""
    victim = 1 if galera.mode == "single-writer" else 2
    survivors = tuple(n for n in (1, 2, 3) if n != victim)
    claimers, per_claimer = 8, 4
    demand = claimers * per_claimer
    make_hosts(api, ["kill-0", "kill-1"], demand * KBPS)   # room for all: failures are the kill's, not capacity's
    port = request_json(tmp_path)
    args = ["--project-id", "p", "--user-id", "u", *FLAVOR, "--port-request", f"{PORT_ID}={port}"]
    consumers = [str(uuid.uuid4()) for _ in range(demand)]
    start_at = time.time() + 8
    jobs = [(str(galera.clouds_yaml), galera.cloud, consumers[i::claimers], start_at, args) for i in range(claimers)]
    pending = pool.map_async(_cli_claimer, jobs, chunksize=1)
    time.sleep(max(0.0, start_at - time.time()) + 1.0)   # the claims are under way
    galera.kill_node(victim)
    t_kill = time.time()
    results = [r for chunk in pending.get(timeout=600) for r in chunk]
    for n in survivors:
        wait_until(f"node {n}: a primary cluster of 2",
                   lambda n=n: galera.wsrep(n)["wsrep_cluster_size"] == "2"
                   and galera.wsrep(n)["wsrep_cluster_status"] == "Primary", 60)
    assert no_overcommit(api) == []
    outcome = {}
    for _, rc, _, _ in results:
        outcome[rc] = outcome.get(rc, 0) + 1
    # what each claim left: a claimed one exactly its bandwidth; any other nothing (or its bandwidth, when the
    # answer was lost with the node after the commit: counted, not hidden)
    leftover = 0
    for c, rc, out, err in results:
        got = sum(a["resources"].get("NET_BW_EGR_KILOBIT_PER_SEC", 0)
                  for a in api.get_allocations(c)["allocations"].values())
        if rc == 0:
            assert got == KBPS, (c, out, err)
        elif got:
            leftover += 1
    # the claims go on after the kill, through HAProxy to the survivors
    after = [str(uuid.uuid4()) for _ in range(4)]
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(galera.clouds_yaml))   # _cli_claimer sets it: restored after
    for c, rc, out, err in _cli_claimer((str(galera.clouds_yaml), galera.cloud, after, 0, args)):
        assert rc == 0, (rc, err)
    wait_until("HAProxy marks the killed node DOWN",
               lambda: galera.haproxy_servers()[("mariadb", f"node{victim}")]["status"].startswith("DOWN"), 30)
    print(f"\n{galera.describe()}: node {victim} killed {t_kill - start_at:.1f} s into {demand} claims by "
          f"{claimers} claimers: exit codes {outcome}, {leftover} failed claims left an allocation, "
          f"0 overcommit; 4 claims after the kill succeeded")
    # the node rejoins, with what it missed
    galera.start_node(victim)
    for n in (1, 2, 3):
        assert galera.wsrep(n)["wsrep_cluster_size"] == "3"
    same_on_every_node(galera, "SELECT COUNT(*), COALESCE(SUM(used), 0) FROM placement.allocations")
    for c in after:
        assert claims.free(api, c)
