"""minbw on Placement as production deployments run it: two Placement API processes (uWSGI) behind HAProxy, on a
three-node MariaDB Galera cluster behind HAProxy (tests/support/galera/galera.sh), in kolla-ansible's
single-writer mode (nodes 2 and 3 are HAProxy backups) and with writes spread over the three nodes.

Opt-in: these tests start a cluster per mode (about a minute each on 2 loaded cores), so all of them run only with
MINBW_GALERA=1, which ``make galera`` sets. MINBW_GALERA=reduced, which ``make test`` sets in its placement lane
(tests/support/run_suites.py), runs the reduced form: the single-writer cluster only, one claim storm and one
fault (the writer node killed mid-storm); without MINBW_GALERA they are skipped. The other faults (a node killed during a cold sync of 100 hosts, an
API process killed mid-storm) are in test_galera_faults.py."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import time
import uuid

import pytest

from minbw.ops import claims
from minbw.placement.client import Placement
from tests.conftest import REPO, CallCounter, doc_commands, wipe
from tests.support.claimers import warm_pool
from tests.support.galera.orphans import Orphans, count_orphans_on
from tests.prodplacement.test_prod_placement import (FLAVOR, KBPS, PORT_ID, _cli_claimer, check_round, make_hosts,
                                                     no_overcommit, request_json)

REDUCED = os.environ.get("MINBW_GALERA") == "reduced"
pytestmark = pytest.mark.skipif(os.environ.get("MINBW_GALERA") not in ("1", "reduced"),
                                reason="the Galera Placement (3 MariaDB nodes, HAProxy): `make galera` runs these "
                                       "(MINBW_GALERA=1; MINBW_GALERA=reduced: one storm and one fault)")
full_only = pytest.mark.skipif(REDUCED, reason="MINBW_GALERA=reduced: one storm and one fault only")
MODES = ["single-writer"] if REDUCED else ["single-writer", "multi-writer"]


@pytest.fixture(scope="module", params=MODES)
def galera(request):
    """One cluster per mode, shared by the module's tests of that mode (pytest groups them by mode)."""
    from tests.support.galera.server import running
    with running(mode=request.param) as server:
        yield server


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
    """8 claimer processes forked from a process that imported the command line (tests/support/claimers.py), as the
    production-style storm's, instead of each spawned afresh (its imports: about 0.5 CPU s a process)."""
    with warm_pool(8, _cli_claimer) as p:
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


# ---------------------------------------------------------------- what the claims did

def no_orphans(galera, when: str) -> str:
    """The orphans on every running node (tests/support/galera/orphans.py): none (asserted), said as a line. Run
    once everything a fault test started has ended, so no request is between creating a consumer and writing its
    allocations (the only window in which Placement holds a consumer without allocations)."""
    nodes = [n for n in (1, 2, 3) if galera.node_alive(n)]
    got = dict(zip(nodes, count_orphans_on([galera.db_url(n) for n in nodes])))
    assert got and all(o == Orphans(0, 0) for o in got.values()), (when, got)
    return f"0 orphans {when} on nodes {sorted(got)}"


def tally(api, results) -> dict:
    """Every claim of ``results`` ((consumer, exit code, stdout, stderr) each) accounted for, read back from
    Placement: accepted (exit 0: exactly its bandwidth allocated), refused (exit 4: nothing allocated) or failed
    (any other exit: one line ``minbw: error: ...`` naming the cause). Returns the counts, the failures'
    messages (the first 160 characters each, counted) and ``leftover``: failed claims whose consumer holds an
    allocation afterwards (each must have said that its write may have been applied)."""
    out = {"accepted": 0, "refused": 0, "failed": 0, "leftover": 0, "messages": {}, "refusals": []}
    for c, rc, stdout, err in results:
        assert rc != "traceback" and "Traceback" not in err, err
        allocs = api.get_allocations(c)["allocations"]
        got = sum(a["resources"].get("NET_BW_EGR_KILOBIT_PER_SEC", 0) for a in allocs.values())
        if rc == 0:
            out["accepted"] += 1
            assert json.loads(stdout)["claimed"] is True and got == KBPS, (c, stdout, allocs)
            continue
        if rc == 4:
            out["refused"] += 1
            assert err.startswith("minbw: error: No valid host: ") and not allocs, (c, err, allocs)
            try:   # what each attempt of the claim met (the JSON's attempts), then the reason
                seen = [a.get("outcome") for a in json.loads(stdout).get("attempts", [])]
            except ValueError:
                seen = []
            out["refusals"].append(f"attempts {seen}: {err.strip()[:300]}")
            continue
        out["failed"] += 1
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("minbw: error: ") and len(lines[0]) > 30, (rc, err)
        key = lines[0][:160]
        out["messages"][key] = out["messages"].get(key, 0) + 1
        if allocs:
            out["leftover"] += 1
            assert "may or may not have been applied" in err, (c, err, allocs)
    return out


# ---------------------------------------------------------------- the cluster

@full_only
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

@full_only
def test_sync_and_claim_through_haproxy(api, galera, tmp_path, monkeypatch):
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(galera.clouds_yaml))
    names = [f"galera-{i:02d}" for i in range(4)]
    cold = make_hosts(api, names, 10_000_000, 25_000_000)
    assert cold.writes > 0
    from minbw.neutron.provider_tree import desired_state
    from minbw.ops import sync
    from tests.prodplacement.test_prod_placement import agent_configs
    api.counter.reset()
    plan, warm = sync.sync_providers(api, desired_state(agent_configs(names, 10_000_000, 25_000_000)))
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
    assert claims.free_allocations(api, consumer) and not api.get_allocations(consumer)["allocations"]
    assert same_on_every_node(galera, query) == "0"
    # both API processes answered (HAProxy's round robin; uWSGI's request logs)
    assert galera.serving_apis() == {1, 2}


# ---------------------------------------------------------------- 8 concurrent claimers

def run_round(galera, pool, consumers, claimers, args, delay):
    start_at = time.time() + delay      # every process imported and waiting: all at once
    jobs = [(str(galera.clouds_yaml), galera.cloud, consumers[i::claimers], start_at, args) for i in range(claimers)]
    return [r for chunk in pool.map(_cli_claimer, jobs, chunksize=1) for r in chunk]


def split_failed(results):
    """(the others, the claims that failed: any exit but 0 and 4). With writes on several nodes Galera certifies a
    transaction at COMMIT and fails the loser with MySQL's 1213 "Deadlock found ...", after Placement's allocation
    write and its retry loop succeeded, outside oslo.db's deadlock retries: Placement answers 500
    (docs/galera.md). minbw's client takes a 500 as a lost answer (the write re-read, then tried again), so such a
    claim fails only when every try of its retry policy got one; what is left is counted, not hidden."""
    failed = [r for r in results if r[1] not in (0, 4, "traceback")]
    return [r for r in results if r not in failed], failed


def test_claim_storm_never_overcommits(api, galera, tmp_path, pool):
    """8 ``minbw allocation create`` processes, 3 claims each, all at the same instant, for twice the bandwidth
    there is (2 hosts), 2 rounds: after each no provider is over capacity and every claim is accounted for
    (check_round of the single-server test, and tally: a failed claim is one line naming its cause and its
    consumer is read back); what certification did is printed."""
    claimers, per_claimer, rounds = 8, 3, 2
    demand = claimers * per_claimer
    fits = demand // 2
    make_hosts(api, ["storm-0", "storm-1"], fits // 2 * KBPS)
    port = request_json(tmp_path)
    args = ["--project-id", "p", "--user-id", "u", *FLAVOR, "--port-request", f"{PORT_ID}={port}"]
    bridges = [p for p in api.list_providers() if p.name.endswith(":br-phys0")]
    logs0, cert0, t0 = galera.log_counts(), galera.certification(), time.time()
    undone = 0
    total = {"accepted": 0, "refused": 0, "failed": 0, "leftover": 0, "messages": {}}
    for rnd in range(rounds):
        results = run_round(galera, pool, [str(uuid.uuid4()) for _ in range(demand)], claimers, args,
                            8 if rnd == 0 else 2)
        got = tally(api, results)
        for k in ("accepted", "refused", "failed", "leftover"):
            total[k] += got[k]
        for m, n in got["messages"].items():
            total["messages"][m] = total["messages"].get(m, 0) + n
        rest, failed = split_failed(results)
        # check_round's checks on the others; each failed claim may leave its bandwidth idle (claimers // 8 is
        # how many claims it lets end idle)
        undone += check_round(api, rest, len(rest), fits, claimers + 8 * len(failed), bridges,
                              f"{galera.mode} round {rnd + 1}")
        for c, rc, _, _ in results:
            if rc not in (4, "traceback"):   # accepted, or failed and maybe left: freed
                claims.free_allocations(api, c)
        assert no_overcommit(api) == []
    logs = {k: v - logs0[k] for k, v in galera.log_counts().items()}
    cert = {k: v - cert0[k] for k, v in galera.certification().items()}
    print(f"\n{claimers} claimers x {per_claimer} claims x {rounds} rounds on {galera.describe()}: 0 overcommit, "
          f"{total['accepted']} accepted, {total['refused']} refused, {total['failed']} failed "
          f"({total['leftover']} of them left an allocation; messages: {total['messages']}), {undone} undone, "
          f"{time.time() - t0:.0f} s; Placement's logs: {logs}; Galera: {cert}")


# ---------------------------------------------------------------- a node killed during the claims

def storm_with_a_fault(galera, api, tmp_path, pool, fault, hosts_prefix, claimers=8, per_claimer=4, after=1.0):
    """``claimers`` processes run ``minbw allocation create`` ``per_claimer`` times each, all starting at one
    instant, with room for all (a failure is the fault's, not capacity's); ``fault()`` runs ``after`` seconds into
    the claims. Returns (the claims' tally, the results, seconds from the start to the fault, the claim args)."""
    demand = claimers * per_claimer
    make_hosts(api, [f"{hosts_prefix}-0", f"{hosts_prefix}-1"], demand * KBPS)
    port = request_json(tmp_path)
    args = ["--project-id", "p", "--user-id", "u", *FLAVOR, "--port-request", f"{PORT_ID}={port}"]
    consumers = [str(uuid.uuid4()) for _ in range(demand)]
    start_at = time.time() + 8
    jobs = [(str(galera.clouds_yaml), galera.cloud, consumers[i::claimers], start_at, args) for i in range(claimers)]
    pending = pool.map_async(_cli_claimer, jobs, chunksize=1)
    time.sleep(max(0.0, start_at - time.time()) + after)   # the claims are under way
    fault()
    t_fault = time.time() - start_at
    results = [r for chunk in pending.get(timeout=600) for r in chunk]
    assert len(results) == demand
    return tally(api, results), results, t_fault, args


def said(got: dict, results) -> str:
    """A fault test's claims, as its output line says them (``got``: :func:`tally`'s)."""
    return (f"{len(results)} claims by 8 claimers: {got['accepted']} accepted, {got['refused']} refused "
            f"{got['refusals']}, {got['failed']} failed ({got['leftover']} of them left an allocation; messages: "
            f"{got['messages']}); 0 overcommit")


def free_claims(api, results, after) -> None:
    """Free what a fault test's claims hold: the storm's (refused ones hold nothing) and those made after."""
    for c, rc, _, _ in results:
        if rc != 4:
            claims.free_allocations(api, c)
    for c in after:
        assert claims.free_allocations(api, c)


def restart_and_rejoin(galera, victim) -> tuple[float, str]:
    """Start the killed node again: the seconds it took, and how it rejoined (IST or SST); all three nodes then
    Synced in a primary component."""
    since = len(galera.node_log(victim))
    t0 = time.time()
    galera.start_node(victim)
    rejoin = time.time() - t0
    for n in (1, 2, 3):
        w = galera.wsrep(n)
        assert (w["wsrep_cluster_size"], w["wsrep_local_state_comment"], w["wsrep_cluster_status"]) == \
            ("3", "Synced", "Primary"), (n, w)
    return rejoin, galera.rejoined_by(victim, since)


def claims_after(galera, args, monkeypatch, n=4):
    """n claims made after the fault, one after the other: each must succeed."""
    after = [str(uuid.uuid4()) for _ in range(n)]
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(galera.clouds_yaml))   # _cli_claimer sets it: restored after
    for c, rc, out, err in _cli_claimer((str(galera.clouds_yaml), galera.cloud, after, 0, args)):
        assert rc == 0, (rc, err)
    return after


def test_a_node_killed_mid_storm_then_rejoining(api, galera, tmp_path, pool, monkeypatch):
    """kill -9 of a Galera node 1 s into 32 claims by 8 claimers (single-writer: node 1, the one HAProxy sends
    every connection to; multi-writer: node 2): the two others stay a primary cluster of 2, no provider ends
    over capacity, every accepted claim holds exactly its bandwidth, every failed one is one line naming its
    cause and its consumer is read back, claims made after the kill succeed; the node then rejoins (IST) with
    the same data."""
    victim = 1 if galera.mode == "single-writer" else 2
    survivors = tuple(n for n in (1, 2, 3) if n != victim)
    logs0 = galera.log_counts()
    got, results, t_kill, args = storm_with_a_fault(galera, api, tmp_path, pool,
                                                    lambda: galera.kill_node(victim), "kill")
    for n in survivors:
        wait_until(f"node {n}: a primary cluster of 2",
                   lambda n=n: galera.wsrep(n)["wsrep_cluster_size"] == "2"
                   and galera.wsrep(n)["wsrep_cluster_status"] == "Primary", 60)
    assert no_overcommit(api) == []
    # the claims go on after the kill, through HAProxy to the survivors
    after = claims_after(galera, args, monkeypatch)
    wait_until("HAProxy marks the killed node DOWN",
               lambda: galera.haproxy_servers()[("mariadb", f"node{victim}")]["status"].startswith("DOWN"), 30)
    logs = {k: v - logs0[k] for k, v in galera.log_counts().items()}
    # the node rejoins, with what it missed
    rejoin, how = restart_and_rejoin(galera, victim)
    same_on_every_node(galera, "SELECT COUNT(*), COALESCE(SUM(used), 0) FROM placement.allocations")
    orphans = no_orphans(galera, "after the rejoin")
    free_claims(api, results, after)
    orphans += "; " + no_orphans(galera, "once the claims were freed")
    print(f"\n{galera.describe()}: node {victim} killed {t_kill:.1f} s into {said(got, results)}; {len(after)} claims "
          f"after the kill succeeded; Placement's logs: {logs}; node {victim} rejoined by {how} in {rejoin:.0f} s; "
          f"{orphans}")


# ---------------------------------------------------------------- disjoint bulk POST /allocations (issue 47)

CONSUMER_409 = ("409 placement.concurrent_update: There was a conflict when trying to complete your request.\n\n "
                "Inventory and/or allocations changed while attempting to allocate: Another thread concurrently "
                "updated the data. Please retry your update")


def check_bulk_run(run: dict) -> None:
    """One run of tests/support/galera/repro_bulk_409.py (its JSON line): every answer 204 or the 409
    ``placement.concurrent_update`` of a consumer's generation (Placement's message names no provider), or a 500
    for a deadlock at commit (error 1213); every 409's request logged oslo.db's deadlock retry of
    ``_set_allocations`` first, then replace_all's retry on a provider generation, and the deletion of the
    consumers it had created last (docs/galera.md, "Why multi-writer answers 409 to disjoint bulk writes"); every
    other request whose log says more than its status was answered 204 (or that 500); no orphan on any node."""
    # a 500 naming error 1213: a brute-force abort at COMMIT, outside oslo.db's retry (docs/galera.md, "Runs since
    # minbw retries a 500"); nothing else
    assert all(k in ("204", CONSUMER_409) or (k.startswith("500 ") and "(1213, 'Deadl" in k) for k in run["answers"]), \
        run["answers"]
    for s in run["stories"]:
        assert s.endswith(("status 204", "status 409", "status 500")), run["stories"]
        if s.endswith("status 409"):
            assert s.startswith("deadlock > ") and " > rp-generation > " in s \
                and s.endswith(" > consumers-deleted > status 409"), run["stories"]
    assert sum(n for s, n in run["stories"].items() if s.endswith("status 409")) == run["conflicts"], run
    assert run["placement_log"]["consumers_deleted_after_failure"] >= 100 * run["conflicts"], run
    assert run["orphans"] and all(o == {"consumers_without_allocations": 0, "allocations_without_consumer": 0}
                                  for o in run["orphans"].values()), run["orphans"]


def check_gap_lock(found: list[dict]) -> None:
    """tests/support/galera/gap_lock.py's three cases, as docs/galera.md says them."""
    assert len(found) == 1, found
    got = found[0]
    same, two, rc = got["same-node"], got["two-nodes"], got["two-nodes-read-committed"]
    assert same["insert"].startswith("error 1205: Lock wait timeout") and same["deleting_transaction"] == "committed" \
        and same["bf_aborts_on_its_node"] == 0, got
    assert two["insert"] == "committed" and two["deleting_transaction"].startswith("error 1213: Deadlock found") \
        and two["bf_aborts_on_its_node"] == 1, got
    assert rc["insert"] == "committed" and rc["deleting_transaction"] == "committed" \
        and rc["bf_aborts_on_its_node"] == 0, got


@full_only
def test_the_documented_409_reproduction():
    """The reproduction as docs/galera.md shows it (each command a cluster of its own): multi-writer with the
    nodes' defaults, READ COMMITTED, wsrep_sync_wait=3; then single-writer. Each run passes check_bulk_run;
    single-writer: no brute-force abort and no 409; READ COMMITTED: no brute-force abort and no 409. Each command's
    gap-lock cases (tests/support/galera/gap_lock.py) end as check_gap_lock says."""
    commands = doc_commands(REPO / "docs" / "galera.md", "## Why multi-writer answers 409 to disjoint bulk writes")
    assert [c.split("--mode ")[1].split()[0] for c in commands] == ["multi-writer", "single-writer"], commands
    for command in commands:
        r = subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True, text=True, timeout=1800)
        print(f"\n$ {command}\n{''.join(line + chr(10) for line in r.stdout.splitlines() if not line.startswith('{'))}")
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        docs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
        runs = [d for d in docs if "mode" in d]
        assert len(runs) == max(1, command.count("--run ")), r.stdout
        check_gap_lock([d["gap_lock"] for d in docs if "gap_lock" in d])
        for i, run in enumerate(runs, 1):
            print(f"run {i}: what Placement logged for the requests: {run['stories']}")
            check_bulk_run(run)
            aborts = sum(c["wsrep_local_bf_aborts"] for c in run["galera"].values())
            if run["mode"] == "single-writer" or run["settings"]["tx_isolation"] == "READ-COMMITTED":
                assert aborts == 0 and run["conflicts"] == 0, run


# ---------------------------------------------------------------- the paused writer's stale reads (issue 47)

@full_only
def test_the_documented_stale_read_reproduction():
    """The reproduction as docs/galera.md shows it (each command a cluster of its own): node 1, the writer, paused
    12 s (past its eviction) and continued. With Placement's sessions at MariaDB's default wsrep_sync_wait (0),
    whatever HAProxy's check, node 1 serves reads through HAProxy that miss what node 2 committed seconds before,
    all of them within 8 s after the SIGCONT; with wsrep_sync_wait 1 (galera.sh's default) no reader saw a stale
    value. No run lost an increment of the row written through HAProxy that node 1 had acknowledged."""
    commands = doc_commands(REPO / "docs" / "galera.md", "## HAProxy's check of the Galera nodes, and causal reads")
    assert len(commands) >= 3, commands
    for command in commands:
        r = subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True, text=True, timeout=1200)
        print(f"\n$ {command}\n{''.join(line + chr(10) for line in r.stdout.splitlines() if not line.startswith('{'))}")
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        [got] = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
        readers = got["readers"]
        assert got["writes"]["through_haproxy"]["lost"] == 0, got["writes"]
        if got["settings"]["placement_session_wsrep_sync_wait"] == "0":
            assert readers["pool"]["stale"] > 0 and readers["node1"]["stale"] > 0, readers
            for reader in readers.values():
                for stale in reader["stale_first"] + reader["stale_last"]:
                    assert stale["node"] == "node1" and -1.5 < stale["since_cont"] < 8, reader
        else:
            assert all(reader["stale"] == 0 for reader in readers.values()), readers
