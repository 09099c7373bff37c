"""Issue 17: Placement's overcommit under concurrent claims, minbw's verified claim, and the patch.

Always on production-style Placements (tests/prodplacement: uWSGI, 4 workers, MariaDB; the race needs
several workers), whatever ``--placement`` says: **stock** openstack-placement 16.0.0 and **patched**
(patches/placement/*.patch), both with upstream's ``allocation_conflict_retry_count = 10``.

- **Contended** (what overcommits): 2 hosts whose bridges have room for half of the claims; K claimer
  processes (8, 16, 32) run 3 claims each, all starting at the same instant, ROUNDS rounds per mode. Modes:
  ``raw`` (PUT the first host's candidate, a 409 ``placement.concurrent_update`` sent again at once, a capacity
  409 moves to the other host), ``plain`` (minbw's claim with its verification off: ``verify_writes=False``),
  ``verified`` (minbw's claim as shipped). After every round the bridges' usage against their capacity (the
  overcommit, in claims), then everything is freed.
- **Cost of the verification**: 1 claimer, claims that all fit, ``verified`` vs ``plain`` alternating, on the
  claim path (candidates fetched beforehand: the verification reads usages and inventories) and end to end
  (each claim fetches its candidates: usages only); ms and HTTP calls per claim; ratio = verified ÷ plain.
- **Throughput, stock vs patched**: raw PUT claims that all fit (the server-side retry at work, no capacity
  refusal), K = 8, 16, 32 claimers, rounds alternating the servers; ratio = patched ÷ stock claims/s.

``MINBW_BENCH_OVERCOMMIT_ROUNDS=contended,cost,fit`` sets the rounds (default 3,3,3).
"""
from __future__ import annotations

import os
import statistics
import time
import uuid as uuidlib
import warnings

from bench.common import (BenchError, Column, Context, Section, Table, Target, loadavg, progress, spawn_workers,
                          stop_workers)

KS = (8, 16, 32)
PER_CLAIMER = 3
ROUNDS = 3
COST_CLAIMS = 40
COST_ROUNDS = 3
FIT_PER_CLAIMER = 8
FIT_ROUNDS = 3
KBPS = 1000
PROJECT, USER = "bench-project", "bench-user"
MV = "1.28"
RAW_CONFLICT_TRIES = 100
VERIFY_COST_MAX = 2.0      # a verified claim takes at most twice the time of a plain one (1 claimer)
PATCH_RATIO_MIN = 0.85     # patched ÷ stock raw claims/s: no loss beyond noise (rounds vary by ~±10%)


def _claimer(pipe) -> None:
    """One claimer process, for every server of the section: a connection per server, made on first use."""
    warnings.filterwarnings("ignore")
    import openstack.config
    from openstack import connection

    from bench.common import HttpCounter
    from minbw.errors import NoValidHost
    from minbw.ops import claims
    from minbw.placement.client import Placement

    apis = {}
    pipe.send("ready")
    while True:
        cmd = pipe.recv()
        if cmd[0] == "stop":
            return
        _, (clouds_yaml, cloud, req), mode, consumers, start_at, bodies, cands = cmd
        if clouds_yaml not in apis:
            conn = connection.Connection(config=openstack.config.OpenStackConfig(
                config_files=[clouds_yaml]).get_one(cloud=cloud))
            api = Placement(conn)
            api.max_version()
            apis[clouds_yaml] = (api, HttpCounter(conn.session.session))
        api, counter = apis[clouds_yaml]
        counter.calls.clear()
        made, failed, undone, errors, conflicts = [], 0, 0, [], 0
        time.sleep(max(0.0, start_at - time.monotonic()))
        t0 = time.monotonic()
        for c in consumers:
            try:
                if mode == "raw":
                    ok = False
                    for body in bodies:            # the first host's candidate, then the other's
                        for _ in range(RAW_CONFLICT_TRIES):
                            r = api.proxy.put(f"/allocations/{c}", json={**body, "consumer_generation": None},
                                              microversion=MV, raise_exc=False)
                            if r.status_code == 409 and "placement.concurrent_update" in r.text:
                                conflicts += 1
                                continue
                            break
                        if r.status_code == 204:
                            ok = True
                            break
                        if r.status_code != 409:
                            raise RuntimeError(f"raw PUT: {r.status_code} {r.text[:200]}")
                    if ok:
                        made.append(c)
                    failed += not ok
                else:
                    try:
                        got = claims.claim(api, c, req, project_id=PROJECT, user_id=USER, candidates=cands,
                                           verify_writes=(mode == "verified"), diagnose_on_failure=False)
                        made.append(c)
                        undone += sum(a.outcome == claims.UNDONE for a in got.attempts)
                    except NoValidHost as e:
                        failed += 1
                        undone += sum(a.outcome == claims.UNDONE for a in e.attempts)
            except Exception as e:  # reported: the parent fails the run
                errors.append(f"{type(e).__name__}: {e}")
        pipe.send({"made": made, "failed": failed, "undone": undone, "errors": errors, "conflicts": conflicts,
                   "start": t0, "end": time.monotonic(), "calls": len(counter.calls),
                   "gets": sum(1 for m, _, _ in counter.calls if m == "GET")})


class Pool:
    """``n`` long-lived claimer processes (spawn), started before anything is timed."""

    def __init__(self, n: int):
        self.procs, self.pipes, _ = spawn_workers(_claimer, [()] * n, 240)

    def run(self, target, mode: str, k: int, per: int, bodies=(), cands=None) -> dict:
        """``target``: (clouds.yaml, cloud, request) of the server to claim on."""
        consumers = [[str(uuidlib.uuid4()) for _ in range(per)] for _ in range(k)]
        start_at = time.monotonic() + 0.5
        for pipe, mine in zip(self.pipes, consumers):
            pipe.send(("run", target, mode, mine, start_at, list(bodies), cands))
        rs = [pipe.recv() for pipe in self.pipes[:k]]
        errors = [e for r in rs for e in r["errors"]]
        if errors:
            raise BenchError(f"{mode} x{k}: {len(errors)} claims broke, e.g. {errors[:2]}")
        made = [c for r in rs for c in r["made"]]
        seconds = max(r["end"] for r in rs) - start_at
        return {"mode": mode, "k": k, "asked": k * per, "made": made, "failed": sum(r["failed"] for r in rs),
                "undone": sum(r["undone"] for r in rs), "conflicts": sum(r["conflicts"] for r in rs),
                "seconds": seconds, "cps": len(made) / seconds, "calls": sum(r["calls"] for r in rs),
                "gets": sum(r["gets"] for r in rs)}

    def stop(self) -> None:
        stop_workers(self.procs, self.pipes)


def _free_everything(api, bridges) -> None:
    """Free every consumer on the bridges (each run starts from empty bridges)."""
    from concurrent.futures import ThreadPoolExecutor

    from minbw.ops import claims
    consumers = set()
    for b in bridges:
        consumers |= set(api.provider_allocations(b))
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda c: claims.free_allocations(api, c), consumers))


def _request():
    from minbw.model.requests import ServerRequest
    from minbw.neutron.port_request import QosRule, Segment, build_port_request
    port = build_port_request("99a97b12-6364-4d10-8d8e-c3dab4161691",
                              [QosRule("5d8a3c1e-0000-4000-8000-000000000001", "minimum_bandwidth", "egress", KBPS),
                               QosRule("5d8a3c1e-0000-4000-8000-000000000002", "minimum_bandwidth", "ingress", KBPS)],
                              [Segment("vlan", "physnet0")], "normal")
    return ServerRequest(extra_resources={"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}, ports=(port,))


def _setup(server):
    """2 hosts (root with room for every claim + OVS agent + bridge); the request, its candidates, the raw
    claimer's bodies (the first candidate of each host, in Placement's order) and the bridges."""
    from minbw.ops import claims
    from minbw.placement.client import Placement
    from tests.conftest import wipe
    from tests.prodplacement.test_prod_placement import make_hosts
    api = Placement(server.connect())
    wipe(api)
    make_hosts(api, ["oc-0", "oc-1"], 10_000 * KBPS, vcpu=100_000)
    req = _request()
    cands = claims.get_candidates(api, req)
    bodies = [{"allocations": {rp: {"resources": dict(a["resources"])} for rp, a in hc[0]["allocations"].items()},
               "project_id": PROJECT, "user_id": USER} for _, hc in cands.by_host()]
    bridges = [p.uuid for p in api.list_providers() if p.name.endswith(":br-phys0")]
    return api, req, cands, bodies, bridges


def _room(api, bridges, claims_per_host: int) -> None:
    """Each bridge's inventory: room for exactly ``claims_per_host`` claims (both directions)."""
    for b in bridges:
        invs, gen = api.get_inventories(b)
        api.set_inventories(b, {rc: {**inv, "total": claims_per_host * KBPS, "reserved": 0}
                                for rc, inv in invs.items()}, gen)


def _over(api, bridges) -> int:
    """Claims beyond capacity on the bridges (egress kbps over (total - reserved) × ratio, in claims)."""
    over = 0
    for b in bridges:
        inv = api.get_inventories(b)[0]["NET_BW_EGR_KILOBIT_PER_SEC"]
        cap = (inv["total"] - inv.get("reserved", 0)) * inv.get("allocation_ratio", 1.0)
        over += max(0, api.provider_usages(b).get("NET_BW_EGR_KILOBIT_PER_SEC", 0) - cap) // KBPS
    return int(over)


def _rounds() -> None:
    """MINBW_BENCH_OVERCOMMIT_ROUNDS="contended,cost,fit" overrides the rounds (a shorter run)."""
    global ROUNDS, COST_ROUNDS, FIT_ROUNDS
    text = os.environ.get("MINBW_BENCH_OVERCOMMIT_ROUNDS")
    if text:
        try:
            ROUNDS, COST_ROUNDS, FIT_ROUNDS = (int(x) for x in text.split(","))
        except ValueError:
            raise BenchError(f"MINBW_BENCH_OVERCOMMIT_ROUNDS={text!r}: expected three numbers, e.g. 1,1,3") from None


def run(ctx: Context) -> Section:
    warnings.filterwarnings("ignore")
    from tests.support.prodplacement.server import ProdPlacement
    _rounds()

    section = Section("overcommit", "Placement's overcommit under concurrent claims (upstream's retry count 10): "
                                    "raw claims, minbw's plain and verified claim, stock and patched Placement")
    servers, setups, targets = {}, {}, {}
    pool = None
    contended, cost, fit = [], [], []
    try:
        for name, patched in (("stock", False), ("patched", True)):
            progress(f"overcommit: starting the production-style Placement, {name}, retry count 10")
            servers[name] = ProdPlacement(ctx.state_dir / f"overcommit-{name}", workers=4, conflict_retries=10,
                                          patched=patched)
            servers[name].start()
            setups[name] = _setup(servers[name])
            targets[name] = (str(servers[name].clouds_yaml), servers[name].cloud, setups[name][1])
        progress(f"overcommit: starting {max(KS)} claimer processes (load {loadavg()})")
        pool = Pool(max(KS))
        for rnd in range(1, ROUNDS + 1):
            for k in KS:
                for name in (("stock", "patched") if rnd % 2 else ("patched", "stock")):
                    api, _, cands, bodies, bridges = setups[name]
                    _room(api, bridges, k * PER_CLAIMER // 4)   # room for half of the claims, on 2 hosts
                    modes = ("raw", "plain", "verified") if name == "stock" else ("raw", "verified")
                    for mode in (modes if rnd % 2 else tuple(reversed(modes))):
                        r = pool.run(targets[name], mode, k, PER_CLAIMER, bodies, cands)
                        r.pop("made")
                        r.update(server=name, round=rnd, over=_over(api, bridges), load=loadavg())
                        progress(f"overcommit: {name} round {rnd} {mode:8s} x{k}: {r['asked'] - r['failed']} of "
                                 f"{r['asked']} claimed, over capacity by {r['over']} claims, {r['undone']} undone, "
                                 f"{r['seconds']:.1f} s (load {r['load']})")
                        if mode == "verified" and r["over"]:
                            raise BenchError(f"{name} x{k} round {rnd}: minbw's verified claims left the bridges "
                                             f"{r['over']} claims over capacity")
                        contended.append(r)
                        _free_everything(api, bridges)
        for name in servers:
            api, *_, bridges = setups[name]
            _room(api, bridges, 10_000)
        # the cost of the verification: 1 claimer, every claim fits; the claim path (candidates given: the
        # verification reads usages and inventories) and end to end (each claim fetches its candidates: the
        # verification reads usages, the capacities come from the candidates)
        api, _, cands, bodies, bridges = setups["stock"]
        for rnd in range(1, COST_ROUNDS + 1):
            for kind, given in (("claim path", cands), ("end to end", None)):
                for mode in (("plain", "verified") if rnd % 2 else ("verified", "plain")):
                    r = pool.run(targets["stock"], mode, 1, COST_CLAIMS, bodies, given)
                    if r["failed"] or r["undone"]:
                        raise BenchError(f"cost run {mode}: {r['failed']} failed, {r['undone']} undone")
                    r.pop("made")
                    r.update(round=rnd, kind=kind, load=loadavg(), ms=1000 * r["seconds"] / COST_CLAIMS)
                    cost.append(r)
                    _free_everything(api, bridges)
                    progress(f"overcommit: cost {kind} round {rnd} {mode}: {r['ms']:.1f} ms/claim, "
                             f"{r['calls'] / COST_CLAIMS:.2f} calls/claim (load {r['load']})")
        # throughput of raw claims that all fit, stock vs patched (the server-side retry at work)
        for rnd in range(1, FIT_ROUNDS + 1):
            for k in KS:
                for name in (("stock", "patched") if rnd % 2 else ("patched", "stock")):
                    api, _, _, bodies, bridges = setups[name]
                    r = pool.run(targets[name], "raw", k, FIT_PER_CLAIMER, bodies[:1])
                    if r["failed"] or _over(api, bridges):
                        raise BenchError(f"fit run {name} x{k}: {r['failed']} failed")
                    r.pop("made")
                    r.update(server=name, round=rnd, load=loadavg())
                    fit.append(r)
                    _free_everything(api, bridges)
                    progress(f"overcommit: fit {name} round {rnd} x{k}: {r['cps']:.1f} claims/s, "
                             f"{r['conflicts']} conflicts re-sent (load {r['load']})")
        _tables(section, contended, cost, fit)
        section.notes.append("Placement: " + "; ".join(s.describe() for s in servers.values()) + ". " + (
            f"Contended: {ROUNDS} rounds of {', '.join(map(str, KS))} claimers x {PER_CLAIMER} claims for twice the "
            f"room of 2 hosts; 'over' is the bridges' usage beyond capacity after the round, in claims (usage "
            f"checked after every round), 'undone' the writes minbw's verification undid. Cost: 1 claimer x "
            f"{COST_CLAIMS} claims that fit, {COST_ROUNDS} rounds. Fit: raw PUT, "
            f"{FIT_PER_CLAIMER} claims per claimer, all fitting on one host, {FIT_ROUNDS} rounds alternating the "
            f"servers."))
        section.data.update({"contended": contended, "cost": cost, "fit": fit})
    finally:
        if pool is not None:
            pool.stop()
        for server in servers.values():
            server.stop()
    return section


def _tables(section: Section, contended: list[dict], cost: list[dict], fit: list[dict]) -> None:
    rows = []
    for name in ("stock", "patched"):
        for mode in ("raw", "plain", "verified"):
            for k in KS:
                rs = [r for r in contended if r["server"] == name and r["mode"] == mode and r["k"] == k]
                if not rs:
                    continue
                rows.append({"server": name, "mode": mode, "k": k, "rounds": len(rs),
                             "over_rounds": sum(1 for r in rs if r["over"]), "over_max": max(r["over"] for r in rs),
                             "claimed": statistics.median(r["asked"] - r["failed"] for r in rs),
                             "room": rs[0]["asked"] // 2, "undone": sum(r["undone"] for r in rs),
                             "cps": statistics.median(r["cps"] for r in rs)})
    section.tables.append(Table(
        "Contended claims, retry count 10: rounds that ended over capacity (usage checked after every round)",
        [Column("server", "Placement"), Column("mode", "claims"), Column("k", "claimers"), Column("rounds", "rounds"),
         Column("over_rounds", "rounds over capacity"), Column("over_max", "max claims over"),
         Column("room", "room (claims)"), Column("claimed", "claimed p50"), Column("undone", "undone (all rounds)"),
         Column("cps", "claims/s p50", "{:.1f}")], rows))
    for name in ("stock", "patched"):
        section.targets.append(Target("rounds over capacity with minbw's verified claim", f"{name}, 8/16/32 claimers",
                                      sum(r["over_rounds"] for r in rows if r["server"] == name
                                          and r["mode"] == "verified"), "==", 0))
    section.targets.append(Target("rounds over capacity with raw claims", "patched Placement, 8/16/32 claimers",
                                  sum(r["over_rounds"] for r in rows if r["server"] == "patched"
                                      and r["mode"] == "raw"), "==", 0))
    crow = []
    for kind in ("claim path", "end to end"):
        by = {m: sorted((r for r in cost if r["mode"] == m and r["kind"] == kind), key=lambda r: r["round"])
              for m in ("plain", "verified")}
        paired = [v["ms"] / p["ms"] for p, v in zip(by["plain"], by["verified"])]
        ratio = statistics.median(paired)
        for m in ("plain", "verified"):
            crow.append({"kind": kind, "mode": m, "ms": statistics.median(r["ms"] for r in by[m]),
                         "calls": statistics.median(r["calls"] / COST_CLAIMS for r in by[m]),
                         "gets": statistics.median(r["gets"] / COST_CLAIMS for r in by[m]),
                         "ratio": ratio if m == "verified" else None})
        section.targets.append(Target("verified ÷ plain claim time (median of paired rounds)", f"1 claimer, {kind}",
                                      round(ratio, 3), "<=", VERIFY_COST_MAX))
        section.data[f"verify_cost_ratio_{kind.replace(' ', '_')}"] = ratio
    section.tables.append(Table(
        "Cost of the verification: 1 claimer, claims that fit (claim path: candidates given, the verification reads "
        "usages and inventories; end to end: each claim fetches its candidates, the verification reads usages)",
        [Column("kind", "kind"), Column("mode", "claim"), Column("ms", "ms/claim p50", "{:.1f}"),
         Column("calls", "HTTP calls/claim", "{:.2f}"), Column("gets", "of them GETs", "{:.2f}"),
         Column("ratio", "verified ÷ plain", "{:.3f}")], crow))
    frows = []
    for k in KS:
        st = sorted((r for r in fit if r["server"] == "stock" and r["k"] == k), key=lambda r: r["round"])
        pa = sorted((r for r in fit if r["server"] == "patched" and r["k"] == k), key=lambda r: r["round"])
        ratio = statistics.median(b["cps"] / a["cps"] for a, b in zip(st, pa))
        frows.append({"k": k, "stock": statistics.median(r["cps"] for r in st),
                      "patched": statistics.median(r["cps"] for r in pa), "ratio": ratio,
                      "stock_min": min(r["cps"] for r in st), "stock_max": max(r["cps"] for r in st),
                      "conflicts_stock": sum(r["conflicts"] for r in st),
                      "conflicts_patched": sum(r["conflicts"] for r in pa)})
        section.targets.append(Target("raw claims/s patched ÷ stock (median of paired rounds)", f"{k} claimers",
                                      round(ratio, 3), ">=", PATCH_RATIO_MIN))
    section.tables.append(Table(
        "Throughput of raw claims that all fit, stock vs patched (retry count 10)",
        [Column("k", "claimers"), Column("stock", "stock claims/s p50", "{:.1f}"),
         Column("stock_min", "stock min", "{:.1f}"), Column("stock_max", "stock max", "{:.1f}"),
         Column("patched", "patched claims/s p50", "{:.1f}"), Column("ratio", "patched ÷ stock", "{:.3f}"),
         Column("conflicts_stock", "409s re-sent, stock"), Column("conflicts_patched", "409s re-sent, patched")],
        frows))
