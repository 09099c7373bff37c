"""Issue 3: claim throughput against raw PUT throughput, with 1 and 8 claimer processes (issue 10, on the
production-style Placement, ``--placement prod``, and issue 46 on Galera, ``--placement galera``: 1, 8 and 32).
Target (issue 46): a verified claim takes at most 1.15x a raw PUT (raw's claims/s ÷ minbw's, median of the paired
rounds) at every claimer count.

Workload: the query section's Placement (1,000 hosts, each root + OVS agent + one 10 Gbit/s
bridge on physnet0; roots with VCPU 100,000), a fresh server process on a copy of its database
(built here when the query section did not run). Every claim asks for the query section's request
(VCPU:1, MEMORY_MB:256, DISK_GB:1 + one port 1000/1000 kbps on physnet0, vnic normal) and lands
on the first candidate's host, which has room for every claim of the run, so every claim succeeds.

Claimers are long-lived processes (spawned and warmed up before any timing), each with its own
openstacksdk connection. For one timed run the parent hands each claimer its consumers and a
common start instant; throughput = all claims / (last claimer's end - start).

- raw: PUT /allocations/{consumer} of a precomputed body (the first candidate's allocations,
  project/user, consumer_generation null) through the placement proxy's keystoneauth adapter;
- minbw: ``claims.claim(api, consumer, req, project_id=, user_id=, candidates=cands, candidates_current=True)``
  with the CandidateSet fetched beforehand (not timed), as ``minbw allocation create`` claims right after its
  candidates query: the claim path (mapping, body, PUT, error handling) and its verification (the usages of the
  providers the PUT raised, read at once, against the candidates' capacities; the inventories never change here);
- minbw-inv: the same without ``candidates_current`` (a caller's older candidates): the verification reads the
  providers' inventories too (what every claim with candidates given did before 2026-12-06);
- end to end, for information: raw = GET the candidates + PUT the first; minbw = ``claims.claim``
  without candidates (get_candidates per claim).

Rounds rotate which system goes first. After every run the usages of the host's root and
bridge must have grown by exactly what the run claimed (else BenchError).

The embedded Placement serves one request at a time (wsgiref, SQLite), so with 8 claimers the
requests queue at the server: the 8-claimer figures show queueing, not parallel capacity. The
production-style one (uWSGI workers on MariaDB) writes concurrently, so concurrent claims on the one
host meet provider generation conflicts (409 ``placement.concurrent_update``): raw PUT retries the same
body at once until it lands (the most favourable peer: Nova sleeps between its retries); minbw's claim
path retries with jittered backoff, then moves to the next candidate host, and a claim that finds no
host fails with NoValidHost: counted and shown with its message, never a traceback. After every run the
usage of every host that got claims must equal exactly what was claimed there (0 overcommit, nothing lost).
"""
from __future__ import annotations

import os
import statistics
import time
import uuid as uuidlib
import warnings

from bench.common import (BenchError, Column, Context, HttpCounter, Section, Table, Target, loadavg, progress,
                          server_cpu_seconds, spawn_workers, stop_workers)

ROUNDS = 5
CLAIMS_1 = 100          # consumers per run with 1 claimer
CLAIMS_8 = 25           # consumers per claimer per run with 8 claimers
E2E_ROUNDS = int(os.environ.get("MINBW_BENCH_CLAIMS_E2E_ROUNDS", "2"))   # end-to-end rounds (0: none)
E2E_1 = 10
E2E_8 = 2
TIME_RATIO_MAX = 1.15   # issue 46: a verified claim takes at most 1.15x a raw PUT (median of paired rounds)
# (claimers, claims per claimer) per run, and rounds, by Placement kind
_SERVED = {"runs": ((1, 60), (8, 15), (32, 4)), "rounds": 3, "e2e": ((1, E2E_1), (8, E2E_8), (32, 1))}
PLAN = {"embedded": {"runs": ((1, CLAIMS_1), (8, CLAIMS_8)), "rounds": ROUNDS,
                     "e2e": ((1, E2E_1), (8, E2E_8))},
        "prod": _SERVED, "galera": _SERVED}
# the claim path's systems, in the order of round 1 (the order rotates by round and claimer count)
CLAIM_MODES = ("raw", "minbw", "minbw-inv")
RAW_CONFLICT_TRIES = 50
PROJECT, USER = "bench-project", "bench-user"
MV_CLAIM = "1.28"


# ---------------------------------------------------------------- the claimer process

def _claimer(pipe, clouds_yaml: str, cloud: str, req, cands, query_url: str, query_mv: str) -> None:
    warnings.filterwarnings("ignore")
    import openstack.config
    from openstack import connection

    from minbw.errors import NoValidHost
    from minbw.ops import claims
    from minbw.placement.client import Placement

    cfg = openstack.config.OpenStackConfig(config_files=[clouds_yaml])
    conn = connection.Connection(config=cfg.get_one(cloud=cloud))
    api = Placement(conn)
    proxy = conn.placement
    api.max_version()
    host, host_cands = cands.by_host()[0]
    allocs = {rp: {"resources": dict(a["resources"])} for rp, a in host_cands[0]["allocations"].items()}

    stats = {"conflicts": 0, "extra_attempts": 0, "hosts": {}, "failed": []}

    def raw_put(consumer, body, h=host):
        for _ in range(RAW_CONFLICT_TRIES):
            r = proxy.put(f"/allocations/{consumer}", json=body, microversion=MV_CLAIM, raise_exc=False)
            if r.status_code == 409 and "placement.concurrent_update" in r.text:
                stats["conflicts"] += 1      # a provider generation conflict: the same body again
                continue
            if r.status_code != 204:
                raise RuntimeError(f"raw PUT {consumer}: {r.status_code} {r.text[:300]}")
            stats["hosts"][h] = stats["hosts"].get(h, 0) + 1
            return
        raise RuntimeError(f"raw PUT {consumer}: {RAW_CONFLICT_TRIES} generation conflicts in a row")

    def minbw_claim(consumer, **kw):
        try:
            got = claims.claim(api, consumer, req, project_id=PROJECT, user_id=USER, **kw)
        except NoValidHost as e:            # explained: kept with its message
            stats["failed"].append(str(e))
            return None
        stats["hosts"][got.host] = stats["hosts"].get(got.host, 0) + 1
        stats["extra_attempts"] += len(got.attempts) - 1
        return got

    def body_of(ar_allocs):
        return {"allocations": ar_allocs, "project_id": PROJECT, "user_id": USER, "consumer_generation": None}

    def minbw(consumer, c=cands):
        minbw_claim(consumer, candidates=c, candidates_current=True)

    def minbw_inv(consumer, c=cands):
        minbw_claim(consumer, candidates=c)

    def raw_e2e(consumer, _):
        r = proxy.get(query_url, microversion=query_mv, raise_exc=False)
        if r.status_code != 200:
            raise RuntimeError(f"raw GET: {r.status_code}")
        answer = r.json()
        first = answer["allocation_requests"][0]["allocations"]
        # the host Placement puts first now (not necessarily the first of the candidates fetched at the start)
        h = answer["provider_summaries"][next(iter(first))]["root_provider_uuid"]
        raw_put(consumer, body_of({rp: {"resources": a["resources"]} for rp, a in first.items()}), h)

    def minbw_e2e(consumer, _):
        minbw_claim(consumer)

    # warm-up: every code path once (these consumers are counted in the usage checks by the parent)
    counter = HttpCounter(conn.session.session)
    warm = [str(uuidlib.uuid4()) for _ in range(2)]
    raw_put(warm[0], body_of(allocs))
    minbw(warm[1])
    if stats["failed"]:
        raise RuntimeError(f"warm-up claim failed: {stats['failed']}")
    pipe.send(("ready", warm, dict(stats["hosts"])))

    modes = {"raw": lambda c, body: raw_put(c, body), "minbw": lambda c, _: minbw(c),
             "minbw-inv": lambda c, _: minbw_inv(c), "raw-e2e": raw_e2e, "minbw-e2e": minbw_e2e}
    while True:
        cmd = pipe.recv()
        if cmd[0] == "stop":
            break
        _, mode, consumers, start_at = cmd
        # precomputed, not timed: the raw claimer's bodies
        work = [(c, body_of(allocs) if mode == "raw" else None) for c in consumers]
        fn = modes[mode]
        counter.calls.clear()
        stats.update({"conflicts": 0, "extra_attempts": 0, "hosts": {}, "failed": []})
        errors = []
        time.sleep(max(0.0, start_at - time.monotonic()))
        cpu0, t0 = time.process_time(), time.monotonic()
        for c, body in work:
            try:
                fn(c, body)
            except Exception as e:  # reported to the parent, which fails the run
                errors.append(f"{type(e).__name__}: {e}")
        end = time.monotonic()
        pipe.send({"mode": mode, "n": len(work), "start": t0, "end": end, "cpu": time.process_time() - cpu0,
                   "errors": errors[:5], "n_errors": len(errors), "kinds": counter.kinds(),
                   "conflicts": stats["conflicts"], "extra_attempts": stats["extra_attempts"],
                   "hosts": dict(stats["hosts"]), "failed": list(stats["failed"])})


class Claimers:
    """``n`` long-lived claimer processes (spawn), warmed up before anything is timed."""

    def __init__(self, n: int, server, req, cands, query_url: str, query_mv: str):
        self.warm_consumers: list[str] = []
        self.warm_hosts: dict[str, int] = {}
        self.procs, self.pipes, ready = spawn_workers(
            _claimer, [(str(server.clouds_yaml), server.cloud, req, cands, query_url, query_mv)] * n, 180)
        for status, warm, hosts in ready:
            self.warm_consumers += warm
            for h, k in hosts.items():
                self.warm_hosts[h] = self.warm_hosts.get(h, 0) + k

    def run(self, mode: str, claimers: int, per_claimer: int) -> dict:
        consumers = [[str(uuidlib.uuid4()) for _ in range(per_claimer)] for _ in range(claimers)]
        start_at = time.monotonic() + 0.3
        for pipe, mine in zip(self.pipes, consumers):
            pipe.send(("run", mode, mine, start_at))
        results = [pipe.recv() for pipe in self.pipes[:claimers]]
        n = sum(r["n"] for r in results)
        seconds = max(r["end"] for r in results) - start_at
        errors = [e for r in results for e in r["errors"]]
        kinds: dict[str, dict] = {}
        hosts: dict[str, int] = {}
        for r in results:
            for h, k in r["hosts"].items():
                hosts[h] = hosts.get(h, 0) + k
            for k, v in r["kinds"].items():
                a = kinds.setdefault(k, {"calls": 0, "http_s": 0.0})
                a["calls"] += v["calls"]
                a["http_s"] += v["http_s"]
        return {"mode": mode, "claimers": claimers, "claims": n, "seconds": seconds, "claims_per_s": n / seconds,
                "client_cpu": sum(r["cpu"] for r in results), "n_errors": sum(r["n_errors"] for r in results),
                "errors": errors, "kinds": kinds, "consumers": [c for cs in consumers for c in cs],
                "hosts": hosts, "failed": [f for r in results for f in r["failed"]],
                "conflicts": sum(r["conflicts"] for r in results),
                "extra_attempts": sum(r["extra_attempts"] for r in results)}

    def stop(self) -> None:
        stop_workers(self.procs, self.pipes)


# ---------------------------------------------------------------- the section

def _usage(api, root: str, bridge: str) -> tuple[int, int]:
    return api.provider_usages(root).get("VCPU", 0), api.provider_usages(bridge).get("NET_BW_EGR_KILOBIT_PER_SEC", 0)


def run(ctx: Context) -> Section:
    warnings.filterwarnings("ignore")
    from bench.query_bench import HOSTS, KBPS, build_placement, server_request
    from minbw.ops import claims
    from minbw.placement.client import Placement
    from minbw.placement.query import build_query, query_string

    kind = ctx.options.get("placement", "embedded")
    plan = PLAN[kind]
    counts = [k for k, _ in plan["runs"]]
    section = Section("claims", f"Claim throughput: minbw's claim path vs raw PUT /allocations, "
                                f"{', '.join(map(str, counts[:-1]))} and {counts[-1]} claimers ({kind} Placement)")
    server, setup_s = build_placement(ctx, "claims")
    claimers = None
    try:
        api = Placement(server.connect())
        req = server_request()
        cands = claims.get_candidates(api, req)
        if len(cands.allocation_requests) != HOSTS:
            raise BenchError(f"expected {HOSTS} candidates, got {len(cands.allocation_requests)}")
        params, mv = build_query(req, api.max_version())
        query_url = "/allocation_candidates?" + query_string(params)
        bridges = {h: next(rp for rp in hc[0]["allocations"] if rp != h) for h, hc in cands.by_host()}
        host, host_cands = cands.by_host()[0]
        first = host_cands[0]

        progress(f"claims: starting {max(counts)} claimer processes (load {loadavg()})")
        claimers = Claimers(max(counts), server, req, cands, query_url, mv)
        expected = dict(claimers.warm_hosts)   # host -> claims on it: every claim holds VCPU 1 and KBPS there

        def check_usage(what: str) -> None:
            for h, n in expected.items():
                got = _usage(api, h, bridges[h])
                if got != (n, n * KBPS):
                    raise BenchError(f"{what}: usage (VCPU, egress kbps) of host {h} is {got}, expected "
                                     f"{(n, n * KBPS)}: claims lost or overcommitted")
        check_usage("after warm-up")

        def one(mode: str, k: int, per: int, rnd: int) -> dict:
            s0 = server_cpu_seconds(server)
            r = claimers.run(mode, k, per)
            r["server_cpu"] = server_cpu_seconds(server) - s0
            r["load"] = loadavg()
            r["round"] = rnd
            if r["n_errors"]:
                raise BenchError(f"{mode} with {k} claimers: {r['n_errors']} claims failed, e.g. {r['errors'][:3]}")
            unexplained = [f for f in r["failed"] if not f.startswith("No valid host: ")]
            if unexplained:
                raise BenchError(f"{mode} with {k} claimers: failures without a reason: {unexplained[:3]}")
            r["attempted"] = r["claims"]
            r["claims"] = sum(r["hosts"].values())
            if r["claims"] + len(r["failed"]) != r["attempted"]:
                raise BenchError(f"{mode} with {k} claimers: {r['attempted']} claims, {r['claims']} made and "
                                 f"{len(r['failed'])} failed")
            r["claims_per_s"] = r["claims"] / r["seconds"]
            for h, n in r["hosts"].items():
                expected[h] = expected.get(h, 0) + n
            check_usage(f"{mode} with {k} claimers")
            progress(f"claims: round {rnd} {mode:9s} x{k}: {r['claims_per_s']:6.1f} claims/s "
                     f"({r['claims']} in {r['seconds']:.2f} s, {len(r['failed'])} failed, "
                     f"{r['conflicts']} raw conflicts, {r['extra_attempts']} extra minbw attempts, load {r['load']})")
            return r

        runs: list[dict] = []
        for rnd in range(1, plan["rounds"] + 1):
            for i, (k, per) in enumerate(plan["runs"]):
                turn = (rnd + i) % len(CLAIM_MODES)
                for mode in CLAIM_MODES[turn:] + CLAIM_MODES[:turn]:
                    runs.append(one(mode, k, per, rnd))
        for rnd in range(1, E2E_ROUNDS + 1):
            for k, per in plan["e2e"]:
                order = ("raw-e2e", "minbw-e2e") if (rnd + k) % 2 == 0 else ("minbw-e2e", "raw-e2e")
                for mode in order:
                    runs.append(one(mode, k, per, rnd))

        # sample: every claimed consumer of one minbw run holds exactly the first candidate's allocations
        sample = next(r for r in runs if r["mode"] == "minbw" and r["claimers"] == 8)["consumers"][:5]
        # (a consumer without allocations is one whose claim failed, counted and explained above)
        want = {}
        for a in first["allocations"].values():
            for rc, n in a["resources"].items():
                want[rc] = want.get(rc, 0) + n
        for c in sample:
            allocs = api.get_allocations(c)["allocations"]
            got = {}
            for a in allocs.values():
                for rc, n in a["resources"].items():
                    got[rc] = got.get(rc, 0) + n
            if allocs and got != want:
                raise BenchError(f"consumer {c}: allocations {allocs} are not one candidate's ({want})")

        # ---------------------------------------------------------------- tables
        rows, targets = [], []
        per_claim_rows = []
        labels = {"raw": "raw PUT", "minbw": "minbw allocation create (verified)",
                  "minbw-inv": "minbw, older candidates (verified, inventories read)",
                  "raw-e2e": "raw GET + PUT", "minbw-e2e": "minbw allocation create incl. get_candidates"}
        failures = []
        for modes, label, ks in ((CLAIM_MODES, "claim path", counts),
                                 (("raw-e2e", "minbw-e2e"), "end to end", [k for k, _ in plan["e2e"]] if E2E_ROUNDS else [])):
            for k in ks:
                sel = {m: sorted((r for r in runs if r["mode"] == m and r["claimers"] == k), key=lambda r: r["round"])
                       for m in modes}
                med = {m: statistics.median(r["claims_per_s"] for r in sel[m]) for m in modes}
                # time per claim ÷ raw's, per round: raw's claims/s ÷ the system's
                paired = {m: [a["claims_per_s"] / b["claims_per_s"] for a, b in zip(sel[modes[0]], sel[m])]
                          for m in modes[1:]}
                for m in modes:
                    rs = sel[m]
                    n = sum(r["claims"] for r in rs)
                    loads = [r["load"] for r in rs if r["load"] is not None]
                    rows.append({"kind": label, "system": labels[m], "claimers": k, "runs": len(rs),
                                 "claims_per_run": rs[0]["claims"], "cps_p50": med[m],
                                 "cps_min": min(r["claims_per_s"] for r in rs),
                                 "cps_max": max(r["claims_per_s"] for r in rs),
                                 "ms_per_claim": 1000 / med[m],
                                 "client_cpu_ms": 1000 * sum(r["client_cpu"] for r in rs) / n,
                                 "server_cpu_ms": 1000 * sum(r["server_cpu"] for r in rs) / n,
                                 "ratio": statistics.median(paired[m]) if m in paired else None,
                                 "failed": sum(len(r["failed"]) for r in rs),
                                 "retries": sum(r["conflicts"] + r["extra_attempts"] for r in rs),
                                 "load": f"{min(loads)}–{max(loads)}" if loads else None})
                    failures += [f"{labels[m]}, {k} claimers: {f}" for r in rs for f in r["failed"]]
                    kinds: dict[str, int] = {}
                    for r in rs:
                        for kk, v in r["kinds"].items():
                            kk = kk.split("?")[0] + "?…" if "?" in kk else kk
                            kinds[kk] = kinds.get(kk, 0) + v["calls"]
                    per_claim_rows.append({"system": labels[m], "claimers": k,
                                           "calls": "; ".join(f"{kk} ×{v / n:.2g}" for kk, v in sorted(kinds.items())),
                                           "wait_ms": 1000 * sum(v["http_s"] for r in rs for v in r["kinds"].values()) / n})
                if label == "claim path":
                    targets.append(Target("verified claim's time ÷ raw PUT's (median of paired rounds)",
                                           f"{k} claimer{'s' if k > 1 else ''}", round(statistics.median(paired["minbw"]), 3),
                                           "<=", TIME_RATIO_MAX))
                    section.data[f"paired_time_ratios_{k}"] = paired
                    section.data[f"time_ratio_of_medians_{k}"] = med["raw"] / med["minbw"]
        table = Table("Throughput (median over rounds; time ÷ raw = median of the per-round raw claims/s ÷ the "
                      "system's)",
                      [Column("kind", "kind"), Column("system", "system"), Column("claimers", "claimers"),
                       Column("runs", "runs"), Column("claims_per_run", "claims/run"),
                       Column("cps_p50", "claims/s p50", "{:.1f}"), Column("cps_min", "min", "{:.1f}"),
                       Column("cps_max", "max", "{:.1f}"), Column("ms_per_claim", "ms/claim", "{:.1f}"),
                       Column("client_cpu_ms", "client CPU ms/claim", "{:.1f}"),
                       Column("server_cpu_ms", "Placement CPU ms/claim", "{:.1f}"),
                       Column("ratio", "time ÷ raw", "{:.3f}"), Column("failed", "failed"),
                       Column("retries", "retries"), Column("load", "load")], rows)
        calls = Table("HTTP calls per claim and time waiting on Placement (response.elapsed, summed over claimers)",
                      [Column("system", "system"), Column("claimers", "claimers"), Column("calls", "calls per claim"),
                       Column("wait_ms", "waiting ms/claim", "{:.1f}")], per_claim_rows)
        section.tables = [table, calls]
        if failures:
            shown = sorted(set(failures))
            section.tables.append(Table(f"Failed claims, each with its reason ({len(failures)} in all; distinct "
                                        f"messages)", [Column("why", "claim and reason")],
                                        [{"why": f} for f in shown[:20]]))
        section.targets = targets
        section.notes += [
            f"{plan['rounds']} rounds per system of " + ", ".join(f"{k} x {per}" for k, per in plan["runs"])
            + f" claims (claimers x claims each), the order of the systems alternating; end to end: {E2E_ROUNDS} "
            f"rounds of " + ", ".join(f"{k} x {per}" for k, per in plan["e2e"]) + ". After each run the usage of "
            "every host that got claims equalled exactly what was claimed there (0 overcommit, nothing lost). "
            "claims/s counts the claims made; 'failed' are claims that ended in NoValidHost (listed with their "
            "reason); 'retries' are raw PUT's repeats on a generation conflict plus minbw's extra attempts "
            "on other candidates.",
            "Placement: " + ctx.servers.describe() + ". " + (
                "It serves one request at a time: with 8 claimers the requests queue at the server, so 8 "
                "claimers show queueing, not parallel capacity; 8 processes also share this machine's CPUs with "
                "the server." if kind == "embedded" else
                "Concurrent claims on one host meet provider generation conflicts (409 placement."
                "concurrent_update); allocation_conflict_retry_count = 10, upstream's default (its server-side "
                "retry overcommits racing claims on MariaDB, docs/placement-overcommit.md; here every claim fits, "
                "so it cannot show: the overcommit section measures it). The claimer processes share this "
                "machine's 2 CPUs with the uWSGI workers and MariaDB."),
            "Placement: " + ("built here" if setup_s else "the query section's database") + f" ({HOSTS} "
            f"hosts); claims go to the first candidate's host unless a conflict moves minbw's to the next.",
        ]
        section.data.update({"runs": [{k: v for k, v in r.items() if k not in ("consumers", "errors")} for r in runs],
                             "setup_s": setup_s})
    finally:
        if claimers is not None:
            claimers.stop()
        ctx.servers.stop(server)
    return section
