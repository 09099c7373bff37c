"""Issue 46, item 2: the warm provider sync as the listing, beside the listing's own fetch + decode, in the same run.

Per size N, a fresh Placement gets N compute-node roots (not measured) and N hosts' agent files (OVS with two
bridges, SR-IOV with two PFs: 6 providers a host), then:

- cold: ``provider sync``'s use case (cache on, the files parsed and their state kept), everything created;
- ``ITERATIONS`` interleaved rounds of: the **listing** (``GET /resource_providers`` through the same keystoneauth
  session, its JSON decoded: the floor) and the **warm sync** (the use case, files unchanged: the kept desired state,
  the record of the last sync, the one listing compared with it);
- once, the **full path** (the record removed: the provider cache loaded, the observed state, the plan), as before
  the warm path existed, and the warm sync again after it (it recorded again);
- ``minbw provider sync`` in a process of its own (Python's start and imports counted), files unchanged, twice
  (its first run records under its own digest: its errors name ``--agent-config``), the second beside a listing
  measured right before it.

Targets: the warm sync (median) ≤ 1.5 × the listing's fetch + decode (median), both in this process; one call; no
write. Correctness checked inside the run: the warm answers say ``unchanged`` with every provider, the full path plans
nothing.
"""
from __future__ import annotations

import statistics
import time
import types
from pathlib import Path

from bench.common import BenchError, Column, Context, HttpCounter, Section, Table, Target, loadavg, progress
from bench.sync_bench import run_cli
from bench.workload import host_name, make_roots, write_agent_files

ITERATIONS = 5
WARM_OVER_LISTING_MAX = 1.5


def listing(conn) -> dict:
    """One ``GET /resource_providers`` through the session minbw's client uses, its JSON decoded: wall, wait."""
    t = time.perf_counter()
    resp = conn.placement.get("/resource_providers", microversion="1.14")
    body = resp.json()
    wall = time.perf_counter() - t
    if resp.status_code != 200:
        raise BenchError(f"listing: {resp.status_code}")
    return {"run": "listing (fetch + decode)", "s": wall, "wait_s": resp.elapsed.total_seconds(),
            "calls": 1, "providers": len(body["resource_providers"]), "load": loadavg()}


def run_sync(cloud, request, phase: str, n: int) -> tuple[dict, object]:
    from minbw.usecases import providers

    counter = HttpCounter(cloud.placement.conn.session.session)
    t = time.perf_counter()
    result = providers.sync(cloud, request)
    wall = time.perf_counter() - t
    counter.detach()
    progress(f"sync_warm N={n} {phase}: {wall:.2f} s, {counter.total} calls; {result.summary}")
    return {"run": phase, "s": wall, "wait_s": counter.http_seconds, "calls": counter.total,
            "writes": counter.writes, "unchanged": result.unchanged is not None, "load": loadavg()}, result


def one_size(ctx: Context, n: int) -> tuple[list[dict], list[Target]]:
    from minbw.cache import synced
    from minbw.model.synced import state_scope
    from minbw.placement.client import Placement
    from minbw.usecases import providers
    from minbw.usecases.cloud import Cache

    server = ctx.servers.start(f"sync-warm-{n}")
    try:
        hosts = [host_name(i) for i in range(1, n + 1)]
        make_roots(server, hosts)
        files = write_agent_files(ctx.state_dir / f"sync-warm-agents-{n}", n)
        cache_file = ctx.state_dir / f"sync-warm-cache-{n}.json"
        conn = server.connect()
        conn.placement.get("/", microversion="1.0")  # load the client's code paths; not counted
        cloud = types.SimpleNamespace(placement=Placement(conn), progress=None, has=lambda service: False)
        request = providers.ProvidersRequest(agent_configs=tuple(str(p) for h in files for p in files[h]),
                                             cache=Cache.at(str(cache_file)))
        rows = []
        cold, _ = run_sync(cloud, request, "cold", n)
        rows.append(cold)
        lists, warms = [], []
        for _i in range(ITERATIONS):
            lists.append(listing(conn))
            row, result = run_sync(cloud, request, "warm (files unchanged)", n)
            if not row["unchanged"] or row["calls"] != 1 or row["writes"] or len(result.plan.providers) != 6 * n:
                raise BenchError(f"sync_warm N={n}: the warm sync did not answer from the listing alone: {row}")
            warms.append(row)
        synced.forget(synced.record_path(cache_file, state_scope(result.desired)))
        full, result = run_sync(cloud, request, "full path (record removed: cache, observe, plan)", n)
        if full["unchanged"] or full["writes"] or result.plan.ops:
            raise BenchError(f"sync_warm N={n}: the full path planned writes: {full}")
        after, _ = run_sync(cloud, request, "warm after the full path", n)
        if not after["unchanged"]:
            raise BenchError(f"sync_warm N={n}: the full path recorded nothing")
        # the CLI's own first run records under its own digest (its option is named --agent-config in its errors)
        run_cli(server, files, "warm (CLI process, first: records)", cache_file)
        cli_listing = listing(conn)
        cli = run_cli(server, files, "warm (files unchanged, CLI process)", cache_file)
        if "unchanged:" not in cli.extra["summary"] or cli.calls != 1:
            raise BenchError(f"sync_warm N={n}: the CLI's second warm run was not the listing alone: {cli.extra}")
        median_list = statistics.median(r["s"] for r in lists)
        median_warm = statistics.median(r["s"] for r in warms)
        rows += [
            {**min(lists, key=lambda r: r["s"]), "run": f"listing (fetch + decode), median of {ITERATIONS}",
             "s": median_list, "wait_s": statistics.median(r["wait_s"] for r in lists)},
            {**warms[0], "run": f"warm sync (files unchanged), median of {ITERATIONS}", "s": median_warm,
             "wait_s": statistics.median(r["wait_s"] for r in warms), "ratio": median_warm / median_list},
            {**full, "ratio": full["s"] / median_list},
            {**after, "ratio": after["s"] / median_list},
            {**cli_listing, "run": "listing (fetch + decode), before the CLI run"},
            {"run": "warm, `minbw provider sync` in a process of its own", "s": cli.seconds, "calls": cli.calls,
             "writes": cli.writes, "ratio": cli.seconds / cli_listing["s"], "load": cli.load,
             "peak_rss_mib": cli.extra["peak_rss_mib"]},
        ]
        for r in rows:
            r["n"] = n
        scope = f"N={n}"
        targets = [
            Target("warm sync ÷ the listing's fetch + decode (this process, medians)", scope,
                   median_warm / median_list, "<=", WARM_OVER_LISTING_MAX, "×"),
            Target("warm sync calls", scope, warms[0]["calls"], "==", 1),
            Target("warm sync writes", scope, sum(r["writes"] for r in warms), "==", 0),
        ]
        return rows, targets
    finally:
        ctx.servers.stop(server)


def run(ctx: Context) -> Section:
    rows, targets = [], []
    for n in ctx.sizes:
        r, t = one_size(ctx, n)
        rows += r
        targets += t
    table = Table("The warm provider sync (files unchanged) beside the listing's fetch + decode, same run", [
        Column("n", "N"), Column("run", "run"), Column("calls", "calls"), Column("writes", "writes"),
        Column("s", "s", "{:.3f}"), Column("wait_s", "waiting s", "{:.3f}"),
        Column("ratio", "÷ listing", "{:.2f}×"), Column("load", "load")], rows)
    return Section("sync_warm", "Warm provider sync as the listing (issue 46)", [table], targets,
                   notes=["listing: GET /resource_providers through the same keystoneauth session, JSON decoded; "
                          "the warm sync: providers.sync (the use case `minbw provider sync` calls), in this process; "
                          "the CLI row: a process of its own, Python's start and imports included, beside the "
                          "listing measured right before it"],
                   data={"rows": rows})
