#!/usr/bin/env python3
"""Where a scrape's time goes while the exporter collects (docs/benchmarks.md).

Builds N hosts on a fresh Placement as the ``exporter_scale`` section does (bench/exporter_scale_bench.py), then,
for each ``--variant``, runs the exporter in a process of its own, instrumented, and scrapes it from another
process (OpenMetrics, gzip, one scrape every ``--spacing`` s) through ``--cycles`` warm collections:

- the garbage collector's pauses (``gc.callbacks``, each over 2 ms);
- every JSON body the collection decodes that takes over 2 ms (requests' ``Response.json``: one C call that holds
  the interpreter lock all along);
- how late a thread that sleeps 1 ms wakes up (the "probe", over 4 ms: the interpreter lock, or the CPU, held by
  someone else);

then the slowest scrapes with what overlapped them, and the scrape percentiles per variant. Variants:

- ``default``: CPython's defaults (5 ms switch interval, ``Loops.collect_once``);
- ``exporter``: the loop as it runs (``Loops.cycle``: gc.freeze after each cycle).

The run recorded on 2026-11-28 (bench/results/exporter-scrape-diag-prod-1000-2026-11-28.txt) served the scrapes
from a thread of the exporter's process, which then lowered the switch interval to 1 ms in its ``exporter``
variant: what it found (garbage collections and listing decodes holding the interpreter lock) is why the scrapes
are now answered by a process of their own (``minbw.exporter.http``). Run now, both variants scrape that
process, so their scrape figures show what the collecting process's pauses no longer cost.

- ``memory``: no scrapes; the exporter's largest allocations after a cold and two warm cycles (tracemalloc, by
  file and by line), its RSS and the objects the garbage collector tracks.

    nice -n 5 .venv/bin/python bench/exporter_scrape_diag.py --placement prod --hosts 1000 \
        --variants default,exporter,memory
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Servers, loadavg, percentile, progress  # noqa: E402

SCRAPER = """
import json, sys, time, urllib.request
url, seconds, spacing, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
rows, end = [], time.time() + seconds
while time.time() < end:
    req = urllib.request.Request(url, headers={"Accept": "application/openmetrics-text; version=1.0.0",
                                                "Accept-Encoding": "gzip"})
    t0, p = time.time(), time.perf_counter()
    with urllib.request.urlopen(req, timeout=60) as r:
        r.read()
    rows.append((t0, time.perf_counter() - p))
    time.sleep(spacing)
json.dump(rows, open(out, "w"))
"""


def build(args, state: Path) -> tuple:
    from bench.exporter_scale_bench import check_workload, make_roots, post_consumers, sync_agents
    from bench.workload import host_name, write_agent_files
    servers = Servers(state, args.placement)
    server = servers.start("diag")
    hosts = [host_name(i) for i in range(1, args.hosts + 1)]
    make_roots(server, hosts)
    sync_agents(server, write_agent_files(state / "agents", args.hosts), state / "sync-cache.json")
    post_consumers(server, hosts)
    check_workload(server, args.hosts)
    return servers, server


def variant(args) -> dict:
    """One variant, in this (child) process: the exporter instrumented, scraped by another process."""
    warnings.filterwarnings("ignore")
    from bench.exporter_scale_bench import _Cloud, memory
    from bench.reports_bench import exporter_for, scrape_once
    from minbw.exporter.http import start_server
    from minbw.placement.client import Placement
    import requests.models
    cloud = _Cloud(args.clouds_yaml, args.cloud)
    exp = exporter_for(cloud, Path(args.cache), workers=8)
    api = Placement(cloud.connect())
    api.max_version()
    exp.collector.api = exp.collector.reader.api = api
    events = []  # (start epoch s, kind, seconds, what)
    gc_started = {}

    def on_gc(phase, info):
        if phase == "start":
            gc_started["t"] = time.perf_counter()
        else:
            d = time.perf_counter() - gc_started["t"]
            if d > 0.002:
                events.append((time.time() - d, "gc", d, f"generation {info['generation']}, {info['collected']} "
                                                          f"collected"))
    gc.callbacks.append(on_gc)
    plain_json = requests.models.Response.json

    def timed_json(self, **kw):
        t = time.perf_counter()
        out = plain_json(self, **kw)
        d = time.perf_counter() - t
        if d > 0.002:
            events.append((time.time() - d, "json", d, f"{len(self.content)} bytes"))
        return out
    requests.models.Response.json = timed_json
    stop = threading.Event()

    def probe():
        while not stop.is_set():
            t = time.perf_counter()
            time.sleep(0.001)
            d = time.perf_counter() - t - 0.001
            if d > 0.004:
                events.append((time.time() - d, "probe", d, "late by"))
    threading.Thread(target=probe, daemon=True).start()
    if args.memory:
        import tracemalloc
        tracemalloc.start(1)  # from the start: what the cold cycle leaves (the cache) counts
        exp.loops.collect_once()
        exp.loops.collect_once()
        exp.served.gzipped(True)
        exp.loops.collect_once()
        exp.served.gzipped(True)
        gc.collect()
        snap = tracemalloc.take_snapshot()
        current, peak = tracemalloc.get_traced_memory()
        top = [str(s) for s in snap.statistics("lineno")[:30]]
        by_file = [str(s) for s in snap.statistics("filename")[:15]]
        return {"variant": "memory", "traced_mib": current / 2**20, "traced_peak_mib": peak / 2**20,
                "memory": memory(), "top_lines": top, "top_files": by_file, "tracked": len(gc.get_objects())}
    loop = args.variant == "exporter"
    one = exp.loops.cycle if loop else exp.loops.collect_once
    t = time.perf_counter()
    one()  # the first cycle: cold (empty cache)
    cold_s = time.perf_counter() - t
    one()  # a warm one before the scrapes
    http = start_server(exp.served, "127.0.0.1", 0)
    if not loop:
        sys.setswitchinterval(0.005)  # CPython's default, as before
    url = f"http://127.0.0.1:{http.server_port}/metrics"
    scrape_once(url)  # the first scrape of the format renders it
    events.clear()
    cycles, scrapes = [], []
    for c in range(args.cycles):
        out = Path(args.cache).with_name(f"scrapes-{os.getpid()}-{c}.json")
        scraper = subprocess.Popen([sys.executable, "-c", SCRAPER, url, str(args.window), str(args.spacing),
                                    str(out)])
        time.sleep(0.5)
        t0 = time.time()
        one()
        cycles.append((t0, time.time(), loadavg()))
        scraper.wait()
        scrapes += json.loads(out.read_text())
    stop.set()
    http.shutdown()
    lat = sorted(d for _, d in scrapes)
    slowest = []
    for t, d in sorted(scrapes, key=lambda r: -r[1])[:args.show]:
        during = any(a <= t <= b for a, b, _ in cycles)
        over = [(round((et - t) * 1000, 1), k, round(ed * 1000, 1), w) for et, k, ed, w in events
                if et < t + d and et + ed > t]
        slowest.append({"ms": round(d * 1000, 1), "during_collection": during, "overlapping": over[:8]})
    kinds = {}
    for _, k, d, _ in events:
        kinds.setdefault(k, []).append(d)
    return {"variant": args.variant, "switch_interval": sys.getswitchinterval(), "cold_s": cold_s,
            "cycles_s": [b - a for a, b, _ in cycles], "load": [x for _, _, x in cycles],
            "scrapes": len(lat), "median_ms": percentile(lat, 50) * 1000, "p90_ms": percentile(lat, 90) * 1000,
            "p99_ms": percentile(lat, 99) * 1000, "max_ms": lat[-1] * 1000,
            "events": {k: {"count": len(v), "max_ms": max(v) * 1000, "total_s": sum(v),
                           "largest_ms": sorted(round(x * 1000, 1) for x in v)[-6:]} for k, v in kinds.items()},
            "slowest": slowest, "memory": memory()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=1000)
    p.add_argument("--placement", choices=Servers.KINDS, default="prod")
    p.add_argument("--variants", default="default,exporter,memory", help="default, exporter, memory (see above)")
    p.add_argument("--cycles", type=int, default=3, help="warm collections scraped, per variant")
    p.add_argument("--spacing", type=float, default=0.05, help="seconds between scrapes")
    p.add_argument("--show", type=int, default=6, help="slowest scrapes shown per variant")
    p.add_argument("--memory", action="store_true", help=argparse.SUPPRESS)
    # one variant in a child process (internal)
    p.add_argument("--variant", help=argparse.SUPPRESS)
    p.add_argument("--clouds-yaml", help=argparse.SUPPRESS)
    p.add_argument("--cloud", help=argparse.SUPPRESS)
    p.add_argument("--cache", help=argparse.SUPPRESS)
    p.add_argument("--window", type=float, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.variant:
        print(json.dumps(variant(args)))
        return 0
    warnings.filterwarnings("ignore")
    state = Path(tempfile.mkdtemp(prefix="minbw-scrape-diag-"))
    servers, server = build(args, state)
    results = []
    try:
        for name in [v.strip() for v in args.variants.split(",")]:
            progress(f"scrape diag: variant {name}")
            # the scraper runs for a warm cycle's length and a bit: measured by the variant's second cycle
            cmd = [sys.executable, __file__, "--variant", "exporter" if name == "memory" else name,
                   "--clouds-yaml", str(server.clouds_yaml), "--cloud", server.cloud,
                   "--cache", str(state / f"cache-{name}.json"), "--cycles", str(args.cycles),
                   "--spacing", str(args.spacing), "--show", str(args.show),
                   "--window", str(25 * max(1, args.hosts // 1000))] + (["--memory"] if name == "memory" else [])
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                print(r.stderr[-4000:], file=sys.stderr)
                return 1
            results.append(json.loads(r.stdout.strip().splitlines()[-1]))
    finally:
        servers.stop_all()
        shutil.rmtree(state, ignore_errors=True)
    print(f"exporter scrape diagnosis at {args.hosts} hosts ({servers.describe()}), "
          f"{time.strftime('%Y-%m-%d %H:%M')}; load average {loadavg()} at the end")
    for r in results:
        print()
        if r["variant"] == "memory":
            m = r["memory"]
            print(f"memory after two warm cycles: RSS {m['rss_mib']:.0f} MiB (peak {m['hwm_mib']:.0f}); "
                  f"traced by tracemalloc {r['traced_mib']:.0f} MiB (peak {r['traced_peak_mib']:.0f}); "
                  f"{r['tracked']} objects tracked by the GC")
            print("largest allocations by file:")
            print("\n".join("  " + s for s in r["top_files"]))
            print("largest allocations by line:")
            print("\n".join("  " + s for s in r["top_lines"]))
            continue
        print(f"variant {r['variant']}: switch interval {r['switch_interval'] * 1000:g} ms; cold cycle "
              f"{r['cold_s']:.1f} s; warm cycles scraped {', '.join(f'{s:.1f}' for s in r['cycles_s'])} s (load "
              f"{', '.join(str(x) for x in r['load'])})")
        print(f"  {r['scrapes']} scrapes (one every {args.spacing} s through each cycle): median "
              f"{r['median_ms']:.1f} ms, p90 {r['p90_ms']:.1f}, p99 {r['p99_ms']:.1f}, max {r['max_ms']:.1f}")
        for k, e in r["events"].items():
            print(f"  {k}: {e['count']} events, max {e['max_ms']:.1f} ms, {e['total_s']:.2f} s in all; largest "
                  f"{e['largest_ms']}")
        print("  slowest scrapes (ms after the scrape began, kind, ms, what):")
        for s in r["slowest"]:
            print(f"    {s['ms']} ms{'' if s['during_collection'] else ' (between cycles)'}: {s['overlapping']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
