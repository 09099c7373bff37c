"""Section ``reports``: the reports' Placement reads and the exporter's collection and scrapes at N hosts (the
largest of ``--sizes``) with 10 QoS consumers per host, beside the way they read before (every provider's details,
then each provider's allocations) and a generic exporter's way (every provider's inventories and usages per
scrape).

The workload: N hosts as the sync section builds them (a compute root with VCPU/MEMORY_MB/DISK_GB, an OVS agent
with two bridges and an SR-IOV agent with two PFs: 7 providers per host, 4 of them bandwidth providers), then 10
consumers per host, each holding VCPU 1 on the root and 1000 kbps each way on the host's first bridge (one PUT
/allocations each, 8 at a time). Measured per report: calls, client wall seconds, seconds waiting on Placement,
peak Python memory (tracemalloc) — cold (no cache) and warm (the provider cache the cold run filled; nothing moved
in between). The floor beside them: one allocation read per bandwidth provider.

The exporter (part ``exporter``, :func:`measure_exporter`): its collection cycles as its collection loop runs them
(cold; warm with 4, 8 and 16 usage reads at once; after a claim moved one host; after a ``DELETE
/allocations/{consumer}``, whose freed bandwidth must be in the body the next collection publishes), against the
floor of one listing plus one usage read per bandwidth provider with an inventory; then its HTTP server scraped as
Prometheus scrapes it (OpenMetrics, gzip), timed at the client, while nothing else runs, during a collection and
during the slow reports; and a generic exporter's scrape beside a warm collection.

The audit, drift and heal use cases also read Nova and Neutron, which a Placement-only server lacks: their rows
measure the Placement side only (the readers they call), and say so.
"""
from __future__ import annotations

import statistics
import time
import tracemalloc
import uuid as uuidlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import (BenchError, Column, Context, HttpCounter, Section, Table, Target, loadavg, percentile,
                          progress)
from bench.sync_bench import run_minbw
from bench.workload import CONSUMERS_PER_HOST, EGR, IGR, claim_on, host_name, make_roots, root_uuid, write_agent_files



def _consumers(server, hosts: list[str]) -> int:
    from minbw.neutron import naming
    from minbw.placement.client import Placement
    api = Placement(server.connect())
    kind = naming.AGENT_KINDS[naming.OVS]

    def claim(host):  # one host's consumers in turn: two claims on one provider at once would conflict
        bridge = naming.device_rp_uuid(kind, host, "br-phys0")
        for j in range(CONSUMERS_PER_HOST):
            consumer = str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f"{host}-consumer-{j}"))
            api.put_allocations(consumer, {"allocations": {root_uuid(host): {"resources": {"VCPU": 1}},
                                                           bridge: {"resources": {EGR: 1000, IGR: 1000}}},
                                           "project_id": "bench", "user_id": "bench", "consumer_generation": None})
    with ThreadPoolExecutor(8) as pool:
        for i, _ in enumerate(pool.map(claim, hosts), 1):
            if i % 200 == 0:
                progress(f"reports: consumers of {i}/{len(hosts)} hosts")
    return len(hosts) * CONSUMERS_PER_HOST


class _Measure:
    """Calls (the HTTP hook), wall and waiting seconds, and peak Python memory of one run of ``fn``."""

    def __init__(self, server):
        self.server = server

    def __call__(self, name: str, fn, cache_file: Path | None = None, trace: bool = True, **extra):
        """``trace`` False: without tracemalloc (no peak memory), whose hooks slow every allocation down (parsing
        a listing of 7,000 providers takes 6 times as long under it): the seconds of a process as it runs."""
        from minbw.placement.client import Placement
        from minbw.cache.providers import ProviderCache
        from minbw.readers.placement import Reader
        conn = self.server.connect()
        api = Placement(conn)
        api.max_version()  # discovered once, as a long-running client does; not counted
        counter = HttpCounter(conn.session.session)
        before = api.calls
        reader = Reader(api, ProviderCache(cache_file, api.endpoint()) if cache_file else None)
        if trace:
            tracemalloc.start()
        t = time.perf_counter()
        out = fn(api, reader)
        seconds = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1] if trace else None
        if trace:
            tracemalloc.stop()
        counter.detach()
        if api.calls - before != counter.total:
            raise BenchError(f"{name}: the client counted {api.calls - before} calls, the HTTP hook {counter.total}")
        row = {"report": name, "calls": counter.total, "s": seconds, "waiting_s": counter.http_seconds,
               "peak_mib": peak / 2**20 if trace else None, "load": loadavg(), "kinds": counter.kinds(),
               "traced": trace, **extra}
        progress(f"reports: {name}: {counter.total} calls, {seconds:.2f} s" +
                 (f", peak {peak / 2**20:.1f} MiB" if trace else ", not traced"))
        return row, out


# ---------------------------------------------------------------- how they read before (for comparison)

def old_audit_read(api, reader):
    """The audit's reader before: every provider's traits and inventories, then each provider with an
    inventory's allocations."""
    providers = api.list_providers()
    allocations = {}
    for d in api.provider_details(providers):
        if d.inventories:
            allocations[d.provider.uuid] = api.provider_allocations(d.provider.uuid)
    return allocations


def old_details_read(api, reader):
    """capacity's and the exporter's way before (a generic exporter's too): every provider's traits,
    inventories and usages."""
    return list(api.provider_details(api.list_providers(), usages=True))


def generic_exporter_scrape(api, reader):
    """openstack-exporter's Placement collector: the providers, then each one's inventories and usages."""
    out = []
    for p in api.list_providers():
        out.append((api.get_inventories(p.uuid), api.provider_usages(p.uuid)))
    return out


# ---------------------------------------------------------------- the reports now

def audit_read(api, reader):
    from minbw.ops.audit import read_placement
    return read_placement(reader)


def drift_read(desired_uuids):
    def read(api, reader):
        from minbw.readers.providers import placement_snapshots
        return placement_snapshots(reader, desired_uuids)
    return read


def capacity_read(api, reader):
    from minbw.reports.capacity.request import capacity_request
    from minbw.usecases.capacity import capacity_report
    from minbw.usecases.exporter import PortSize
    req = capacity_request({"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1},
                           qos_ports=(PortSize.parse("p=min_bw:egress:1000,min_bw:ingress:1000").port,))
    return capacity_report(reader, req)


def heal_read(consumers_by_host):
    """``server heal --dry-run``'s Placement side (minbw.ops.heal without Nova and Neutron): the trees of the
    servers' hosts through the reports' reader (one listing; the provider cache where it holds them), then each
    server's allocations and its host's tree, in the order heal plans them."""
    def read(api, reader):
        from minbw.ops.heal import Trees
        trees = Trees(reader)
        trees.prefetch(consumers_by_host)
        for host, consumers in consumers_by_host.items():
            for c in consumers:
                api.get_allocations(c)
                trees.of(host)
        reader.save()
        return len(consumers_by_host)
    return read


def guarantee_read(host, consumer):
    """server_bandwidth_info's Placement side for one server (ops.servers.verify without Nova and Neutron): its
    claim mapped by the solver (its allocations, its tree, the allocated providers' traits), then the names in
    its host's tree and each allocated provider's usages and allocations."""
    def read(api, reader):
        from minbw.model.requests import ServerRequest
        from minbw.neutron.port_request import QosPort
        from minbw.ops import claims
        port = QosPort.parse("min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0", "bench").request(
            str(uuidlib.uuid4()))
        claim = claims.existing_claim(api, consumer, ServerRequest(extra_resources={"VCPU": 1}, ports=(port,)))
        allocs = claim.allocations
        api.provider_names(in_tree=root_uuid(host))
        for rp in allocs:
            api.provider_usages(rp)
            api.provider_allocations(rp)
    return read


SCRAPES = 20  # scrapes timed at the client, per situation
OPENMETRICS = "application/openmetrics-text; version=1.0.0"


def exporter_for(server, cache_file, workers: int = 4):
    """``minbw exporter`` as the service builds it (one port size; Placement only: no Neutron, the audit's
    over-capacity part), its cache file ``cache_file``; the safety check runs at the first cycle only (a slow
    interval of a day), so that every later cycle measured is a plain one."""
    from minbw.usecases.cloud import Cache, Cloud
    from minbw.usecases.exporter import Exporter, ExporterRequest, PortSize
    req = ExporterRequest(port_sizes=(PortSize.parse("small=min_bw:egress:1000,min_bw:ingress:1000"),),
                          cache=Cache.at(str(cache_file)), neutron=False, audit=False, workers=workers, slow_interval=86400.0)
    return Exporter(Cloud(server.connect), req)


def exporter_collection(exp, workers: int = 4):
    """One collection cycle of ``exp`` (as its collection loop runs it: read, count, render, publish), through
    this measurement's client (its calls are counted), ``workers`` usage reads at once."""
    def collect(api, reader):
        exp.collector.api = api
        exp.collector.reader.api = api
        exp.collector.reader.workers = workers
        collection = exp.loops.collect_once()
        if not collection.ok:
            raise BenchError(f"exporter collection failed: {exp.collector.status.get('providers')}")
        return collection
    return collect


def _series(body: str) -> dict:
    """(name, labels) → value of an OpenMetrics body, by prometheus_client's parser."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(body) for s in f.samples}


def _used(series: dict, provider: str) -> dict[str, float]:
    """direction → a provider's bandwidth used (bits/s) in a parsed body."""
    return {dict(ls)["direction"]: v for (n, ls), v in series.items()
            if n == "minbw_bandwidth_used_bits_per_second" and dict(ls).get("provider") == provider}


def scrape_once(url: str) -> tuple[float, int, bytes]:
    """One scrape as Prometheus sends it (OpenMetrics, gzip): seconds at the client (request sent → body read),
    body size on the wire, the body."""
    import urllib.request
    req = urllib.request.Request(url, headers={"Accept": OPENMETRICS, "Accept-Encoding": "gzip"})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=60) as resp:
        raw = resp.read()
        encoding = resp.headers.get("Content-Encoding")
    seconds = time.perf_counter() - t
    if encoding != "gzip":
        raise BenchError(f"scrape of {url}: asked for gzip, got Content-Encoding {encoding!r}")
    return seconds, len(raw), raw


def time_scrapes(url: str, situation: str, spacing: float = 0.0, busy=None, count: int = SCRAPES) -> dict:
    """``count`` scrapes, ``spacing`` seconds apart; ``busy`` (a thread, or anything with ``is_alive()``) what
    runs meanwhile: how many of the scrapes were answered while it still ran."""
    import gzip
    times, sizes, during = [], [], 0
    for i in range(count):
        alive = busy is not None and busy.is_alive()
        s, size, raw = scrape_once(url)
        times.append(s)
        sizes.append(size)
        during += alive and busy.is_alive()
        if i == 0 and not gzip.decompress(raw).endswith(b"# EOF\n"):
            raise BenchError(f"scrape of {url}: the OpenMetrics body does not end with # EOF")
        if spacing:
            time.sleep(spacing)
    times.sort()
    row = {"situation": situation, "scrapes": count, "during": during if busy is not None else None,
           "median_s": percentile(times, 50), "p90_s": percentile(times, 90), "p99_s": percentile(times, 99),
           "max_s": times[-1], "kib": max(sizes) / 1024, "load": loadavg()}
    progress(f"exporter: scrapes {situation}: median {row['median_s'] * 1000:.1f} ms, p99 {row['p99_s'] * 1000:.1f} "
             f"ms, max {row['max_s'] * 1000:.1f} ms ({during if busy is not None else '-'} of {count} during), "
             f"{row['kib']:.0f} KiB gzipped")
    return row


def measure_exporter(ctx, server, measure, cache, hosts, by_host) -> tuple[list, list, dict]:
    """The exporter at ``len(hosts)`` hosts: its collection cycles (cold, warm at 4, 8 and 16 workers, after one
    host moved, after a DELETE /allocations/{consumer}), the scrapes as Prometheus sends them (idle, during a
    collection, during the slow reports), and a generic read-everything exporter's scrape beside them."""
    import threading
    from minbw.exporter.http import start_server
    from minbw.neutron import naming
    from minbw.placement.client import Placement
    n = len(hosts)
    cache.unlink(missing_ok=True)
    exp = exporter_for(server, cache, workers=4)
    rows = []

    def cycle(name, run, workers=4, trace=False):
        row, collection = measure(name, exporter_collection(exp, workers), trace=trace)
        stats = collection.stats
        floor = 1 + stats["bandwidth"]
        row.update(run=run, workers=workers, floor=floor, ratio=row["calls"] / floor,
                   usages_read=stats.get("usages_read"), read=stats.get("read"))
        rows.append(row)
        return row, collection

    # cold: the safety check (listings, sharing providers), every bandwidth provider's traits and inventories
    # (the cache fills), every usage; traced for its peak memory
    cycle("exporter collection", "cold (fills the cache; safety check)", trace=True)
    # warm, as the exporter runs (no tracemalloc), then once traced for the memory of a warm cycle
    for i in range(1, 4):
        cycle("exporter collection", f"warm {i}")
    cycle("exporter collection", "warm, traced", trace=True)
    for workers in (8, 16):
        for i in range(1, 3):
            cycle("exporter collection", f"warm {i}", workers=workers)
    for i in range(1, 4):
        claim_on(server, hosts[i * (n // 4)], i)
        cycle("exporter collection, one host moved (a claim on its root and bridge)", f"moved {i}")
    # freed bandwidth: one of the bench's consumers deleted as Nova frees a deleted server (no generation moves)
    host = hosts[n // 2]
    consumer = by_host[host][0]
    bridge = naming.device_rp_name(naming.AGENT_KINDS[naming.OVS], host, "br-phys0")
    before = _used(_series(exp.served.body(openmetrics=True)), bridge)
    if set(before) != {"egress", "ingress"} or min(before.values()) < 1000 * 1000:
        raise BenchError(f"exporter: {bridge}'s usage before the delete: {before} (expected ≥ 1,000,000 bits/s "
                         f"each way)")
    Placement(server.connect()).request("delete", f"/allocations/{consumer}", "1.28")
    cycle("exporter collection, after DELETE /allocations/{consumer}", "one consumer deleted")
    after = _used(_series(exp.served.body(openmetrics=True)), bridge)
    freed = {d: before[d] - after.get(d, before[d]) for d in before}
    if freed != {"egress": 1000 * 1000, "ingress": 1000 * 1000}:
        raise BenchError(f"exporter: after DELETE /allocations/{consumer}, one collection later {bridge}'s usage "
                         f"went {before} → {after} (expected 1,000,000 bits/s less each way)")
    progress(f"exporter: DELETE /allocations/{consumer}: {bridge} used {before} → {after}, one cycle later")
    delete = {"consumer": consumer, "provider": bridge, "before": before, "after": after, "cycles": 1}

    # the scrapes as Prometheus sends them: the exporter's HTTP server, served from memory
    http = start_server(exp.served, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{http.server_port}/metrics"
    scrapes = []
    try:
        scrape_once(url)  # the first scrape of OpenMetrics/gzip (the format is rendered from then on)
        scrapes.append(time_scrapes(url, "idle (nothing else runs)"))
        warm = statistics.median(r["s"] for r in rows if r["run"].startswith("warm ") and r["workers"] == 4)
        errors = []

        def guarded(fn):
            def run():
                try:
                    fn()
                except Exception as e:  # noqa: BLE001 - reported after the scrapes
                    errors.append(e)
            return threading.Thread(target=run, daemon=True)
        busy = guarded(exp.collect)
        busy.start()
        scrapes.append(time_scrapes(url, "during a collection (another thread)", spacing=warm / SCRAPES, busy=busy))
        busy.join()
        slow = {}

        def run_slow():
            t = time.perf_counter()
            calls = exp.slow_reports.reader.api.calls
            slow["status"] = exp.run_slow()
            slow["s"], slow["calls"] = time.perf_counter() - t, exp.slow_reports.reader.api.calls - calls
        busy = guarded(run_slow)
        busy.start()
        scrapes.append(time_scrapes(url, "during the slow reports (exp.run_slow(), another thread)", spacing=0.25,
                                    busy=busy))
        busy.join()
        if errors:
            raise BenchError(f"exporter: a collection or the slow reports failed while scraped: {errors[0]!r}")
        if slow:
            progress(f"exporter: slow reports: {slow['calls']} calls, {slow['s']:.1f} s")
            scrapes[-1]["slow_s"], scrapes[-1]["slow_calls"] = slow["s"], slow["calls"]
    finally:
        http.shutdown()
        http.server_close()

    # the peer: a generic exporter reads every provider's inventories and usages per scrape
    row, _ = measure("generic exporter scrape (every provider's inventories and usages)", generic_exporter_scrape,
                     trace=False)
    rows.append({**row, "run": "every provider", "workers": 1})
    return rows, scrapes, {"delete": delete, "warm_s": warm, "generic_s": row["s"],
                           "generic_over_warm": row["s"] / warm}


PARTS = ("reports", "heal", "exporter")


def run(ctx: Context, parts: tuple[str, ...] = PARTS) -> Section:
    """The reports (``reports``: audit, drift, capacity, server_bandwidth_info and the reads before),
    ``server heal --dry-run`` (``heal``) and the exporter's scrapes (``exporter``) on one workload; ``parts`` which."""
    n = max(ctx.sizes)
    state = ctx.state_dir / "reports"
    state.mkdir(parents=True, exist_ok=True)
    server = ctx.servers.start("reports")
    hosts = [host_name(i) for i in range(1, n + 1)]
    progress(f"reports: {n} hosts: roots, then minbw's sync")
    make_roots(server, hosts)
    files = write_agent_files(state / "agents", n)
    _, plan, _, _ = run_minbw(server, files, "reports build")
    desired = {op.uuid for op in plan.ops if op.uuid}
    consumers = _consumers(server, hosts)
    by_host = {h: [str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f"{h}-consumer-{j}")) for j in range(CONSUMERS_PER_HOST)]
               for h in hosts}
    measure = _Measure(server)
    bandwidth = 4 * n
    rows = []
    cache = state / "cache.json"
    reports = "reports" in parts
    for name, fn in (("audit (Placement side)", audit_read), ("drift (Placement side)", drift_read(desired)),
                     ("capacity", capacity_read)) if reports else ():
        row, _ = measure(name, fn)
        rows.append({**row, "run": "no cache"})
        cache.unlink(missing_ok=True)
        row, _ = measure(name, fn, cache)
        rows.append({**row, "run": "cold (fills the cache)"})
        row, _ = measure(name, fn, cache)
        rows.append({**row, "run": "warm (cache)"})
    if "heal" in parts:  # without a cache it reads what a cold run reads: cold, then warm
        cache.unlink(missing_ok=True)
        row, _ = measure("heal --dry-run (Placement side)", heal_read(by_host), cache)
        rows.append({**row, "run": "cold (fills the cache)"})
        row, _ = measure("heal --dry-run (Placement side)", heal_read(by_host), cache)
        rows.append({**row, "run": "warm (cache)"})
    if reports:
        row, _ = measure("server_bandwidth_info (Placement side, one server)",
                         guarantee_read(hosts[0], by_host[hosts[0]][0]))
        rows.append({**row, "run": "one server"})
    for name, fn in (("audit before (every provider's details, then allocations)", old_audit_read),
                     ("capacity before (every provider's details and usages)", old_details_read)) if reports else ():
        row, _ = measure(name, fn)
        rows.append({**row, "run": "before"})
    collections, scrapes, exporter = [], [], {}
    if "exporter" in parts:
        collections, scrapes, exporter = measure_exporter(ctx, server, measure, cache, hosts, by_host)
    providers = 7 * n
    tables = []
    if rows:
        tables.append(Table(
            f"Reports at {n} hosts ({providers} providers, {bandwidth} bandwidth providers, {consumers} QoS "
            f"consumers); floor: {bandwidth} allocation reads (one per bandwidth provider)",
            [Column("report", "report"), Column("run", "run"), Column("calls", "calls"), Column("s", "s", "{:.2f}"),
             Column("waiting_s", "waiting s", "{:.2f}"), Column("peak_mib", "peak MiB", "{:.1f}"),
             Column("load", "load")], rows))
    if collections:
        tables.append(Table(
            f"Exporter collection cycles at {n} hosts ({bandwidth} bandwidth providers, {consumers} QoS consumers); "
            f"floor: 1 listing + 1 usage read per bandwidth provider with an inventory",
            [Column("report", "collection"), Column("run", "run"), Column("workers", "workers"),
             Column("calls", "calls"), Column("floor", "floor"), Column("ratio", "calls ÷ floor", "{:.4f}"),
             Column("s", "s", "{:.2f}"), Column("waiting_s", "waiting s", "{:.2f}"),
             Column("peak_mib", "peak MiB", "{:.1f}"), Column("load", "load")], collections))
    if scrapes:
        tables.append(Table(
            f"Exporter scrapes at {n} hosts over HTTP, as Prometheus sends them (OpenMetrics, gzip), timed at the "
            f"client: {SCRAPES} each",
            [Column("situation", "while"), Column("during", "scrapes during it"),
             Column("median_s", "median s", "{:.4f}"), Column("p90_s", "p90 s", "{:.4f}"),
             Column("p99_s", "p99 s", "{:.4f}"), Column("max_s", "max s", "{:.4f}"),
             Column("kib", "body KiB (gzip)", "{:.0f}"),
             Column("load", "load")], scrapes))
    targets = []
    if collections:
        mine = [r for r in collections if r["report"].startswith("exporter collection") and
                not r["run"].startswith("cold")]
        worst = max(mine, key=lambda r: r["ratio"])
        targets.append(Target("exporter collection (warm, moved, after a delete): calls ÷ floor", f"N={n}",
                              round(worst["ratio"], 4), "<=", 1.01))
        targets.append(Target("freed bandwidth (DELETE /allocations) served after: collections", f"N={n}",
                              exporter["delete"]["cycles"], "<=", 1))
    for r in scrapes:
        targets.append(Target(f"scrape max, {r['situation']}", f"N={n}", round(r["max_s"], 4), "<=", 0.020, " s"))
    if "heal" in parts:
        warm_heal = next(r for r in rows if r["report"].startswith("heal") and r["run"] == "warm (cache)")
        # floor: one allocation read per server (its allocations and consumer generation), the listing, and one
        # usage read per provider with an inventory in the trees (n roots and the bandwidth providers): a
        # generation does not move when allocations are deleted, so no usage is taken from the cache
        targets.append(Target("heal --dry-run warm: calls ÷ (servers + 1 + usages)", f"N={n}",
                              round(warm_heal["calls"] / (consumers + 1 + n + bandwidth), 3), "<=", 1.01))
    if reports:
        targets.append(Target("audit warm: calls ÷ floor", f"N={n}",
                              round(next(r["calls"] for r in rows if r["report"].startswith("audit (") and
                                         r["run"] == "warm (cache)") / bandwidth, 3), "<=", 1.05))
    ctx.servers.stop(server)
    name = "reports" if reports else "_".join(parts)
    title = {"reports": "Reports and exporter collection at scale",
             "exporter": "Exporter collection and scrapes at scale",
             "heal": "heal --dry-run at scale"}.get(name, "Exporter collection and scrapes, heal --dry-run at scale")
    notes = ["audit, drift and heal need Nova and Neutron: their rows are the Placement side only (the readers the "
             "use cases call), measured on a Placement-only server"] if rows else []
    if exporter:
        d = exporter["delete"]
        notes += [f"the peer: a generic read-everything exporter's scrape took {exporter['generic_s']:.1f} s, "
                  f"{exporter['generic_over_warm']:.1f}× a warm collection's {exporter['warm_s']:.1f} s (median of "
                  f"warm 1-3, 4 workers)",
                  f"DELETE /allocations/{d['consumer']}: {d['provider']} used {d['before']} → {d['after']} "
                  f"bits/s in the body published by the next collection",
                  "collection rows without peak MiB ran without tracemalloc (the seconds of the exporter as it "
                  "runs); the traced rows give the peak memory"]
    return Section(name, title, tables, targets, notes=notes,
                   data={"rows": rows, "collections": collections, "scrapes": scrapes, "exporter": exporter,
                         "hosts": n, "consumers": consumers})
