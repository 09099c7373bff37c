"""100 scrapers, paced (as Prometheus scrapes: each once per period from a phase of its own, an open loop) and in a
closed loop (each scrapes again at its answer: a stress test), against the exporter's own HTTP server serving a
given publication, beside the section's control (the same HTTP stack serving the same bytes: a static server in a
process of its own), with ``--busy`` processes spinning a CPU each beside them standing for the collection.

The publication: what bench/exporter_memory_fake.py's collection publishes at N hosts (OpenMetrics gzipped, as
the HTTP server process holds it: without the age and ``# EOF`` each scrape adds), saved with its ``BODY``:

    TM=0 BODY=/tmp/head-10000.gz .venv/bin/python bench/exporter_memory_fake.py 10000
    .venv/bin/python bench/exporter_paced_body.py /tmp/head-10000.gz --seconds 60 --json-out FILE.json

The exporter's server is ``minbw.exporter.http.start_server`` (its own process, its WSGI application adding the
age per scrape) fed one :class:`~minbw.exporter.http.Board` of that publication; the scrapers, the turns and the
server CPU per scrape are bench/exporter_scale_bench.py's ``time_concurrent``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.environ.get("SRC", str(ROOT / "python")))
sys.path.insert(0, str(ROOT))

from bench.common import loadavg, spawn_workers, stop_workers
from bench.exporter_scale_bench import (
    CONCURRENT,
    PACED_PERIOD_S,
    SCRAPER_PROCESSES,
    _control_process,
    concurrent_window,
    time_concurrent,
)
from bench.reports_bench import scrape_once


class Held:
    """What ``start_server`` needs of a ``Served``: one board, the given publication (OpenMetrics gzipped)."""

    def __init__(self, head: bytes):
        from minbw.exporter.http import Board
        self._board = Board(time.time(), {}, {True: head})

    def board(self, openmetrics=None, zipped=False):
        return self._board

    def subscribe(self, receive) -> None:
        receive(self._board)


def _busy_process(pipe) -> None:
    """One CPU spun in Python until told to stop (what stands for the collection)."""
    pipe.send(("ready",))
    while not pipe.poll():
        sum(range(10000))


class Alive:
    def __init__(self, procs):
        self.procs = procs

    def is_alive(self) -> bool:
        return all(p.is_alive() for p in self.procs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("head", type=Path, help="the publication (exporter_memory_fake.py's BODY file)")
    p.add_argument("--seconds", type=float, default=60.0, help="seconds of scrapes per mode (the two servers in turns)")
    p.add_argument("--busy", type=int, default=1, help="processes spinning a CPU each beside them (the collection)")
    p.add_argument("--period", type=float, default=PACED_PERIOD_S, help="each paced scraper's period, seconds")
    p.add_argument("--json-out", type=Path)
    args = p.parse_args()
    from minbw.exporter.http import start_server
    head = args.head.read_bytes()
    http = start_server(Held(head), "127.0.0.1", 0)
    url = f"http://127.0.0.1:{http.server_port}/metrics"
    body = scrape_once(url)[2]
    procs, pipes, _ = spawn_workers(_control_process, [()], 120, "the control server")
    busy_procs, busy_pipes = [], []
    try:
        pipes[0].send(("body", body))
        _, control_port = pipes[0].recv()
        control = "control (a static server, a process of its own)"
        urls = {"the exporter's HTTP server": url, control: f"http://127.0.0.1:{control_port}/metrics"}
        pids = {"the exporter's HTTP server": http.pid, control: procs[0].pid}
        busy_procs, busy_pipes, _ = spawn_workers(_busy_process, [()] * args.busy, 120, "a busy process")
        beside = f"{args.busy} process(es) spinning a CPU each beside them"
        load0 = loadavg()
        rows = time_concurrent(urls, f"{CONCURRENT} paced scrapers (each every {args.period:g} s from a random phase, "
                               f"an open loop; {SCRAPER_PROCESSES} client processes; turns of "
                               f"{concurrent_window(args.seconds, args.period):.1f} s), {beside}", args.seconds,
                               busy=Alive(busy_procs), server_pids=pids, period=args.period)
        rows += time_concurrent(urls, f"{CONCURRENT} scrapers in a closed loop (a stress test; {SCRAPER_PROCESSES} "
                                f"client processes; turns of {concurrent_window(args.seconds):.1f} s), {beside}",
                                args.seconds, busy=Alive(busy_procs), server_pids=pids)
    finally:
        stop_workers(busy_procs, busy_pipes)
        stop_workers(procs, pipes)
        http.shutdown()
        http.server_close()
    print(f"publication {len(head) / 1024:.0f} KiB gzipped (a scrape's body {len(body) / 1024:.0f} KiB); load "
          f"{load0} at the start")
    print("| while: server | scrapes | late slots | p50 ms | p99 ms | max ms | server CPU ms per scrape | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['situation']} | {r['scrapes']} | {r['late'] if r['late'] is not None else '-'} | "
              f"{r['median_s'] * 1000:.1f} | {r['p99_s'] * 1000:.1f} | {r['max_s'] * 1000:.1f} | "
              f"{r['server_cpu_ms_per_scrape']:.2f} | {r['load']} |")
    if args.json_out:
        args.json_out.write_text(json.dumps({"head": str(args.head), "head_bytes": len(head), "body_bytes": len(body),
                                             "busy": args.busy, "seconds": args.seconds, "load_start": load0,
                                             "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
