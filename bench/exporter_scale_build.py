"""Build the exporter_scale workload once and keep it: the n-host workload of bench/exporter_scale_bench.py,
built through Placement's API exactly as that section builds it (roots with nova-compute's calls, minbw's own
sync of every host's agent files, the consumers by bulk ``POST /allocations``), checked through the API, then
Placement's database dumped (``mariadb-dump``, gzipped) beside the sync's cache file and the build's rows.

``BENCH_EXPORTER_BUILT=DIR .venv/bin/python bench/run.py --placement prod --sections exporter_scale --sizes N``
then loads that dump into its fresh production-style Placement instead of building (minutes instead of most of
an hour at 10,000 hosts) and reports the build's rows as they were measured here. Nothing is written into the
database but what Placement's API wrote: the dump is of the database Placement made.

Usage::

    nice -n 5 .venv/bin/python bench/exporter_scale_build.py --hosts 10000 --out .state/bench-built/exporter-10000

A build that cannot finish (most of an hour at 10,000 hosts on a quiet machine, far longer on a loaded one) can be
continued later: while it runs, ``--save-partial`` (same ``--hosts`` and ``--out``) dumps its Placement's database
into ``partial.sql.gz``; after it is stopped, ``--resume`` loads that dump into a fresh Placement and runs the steps
``steps.json`` does not hold (each step's row is written there as it ends): the sync again in full (it converges
what it finds: the providers the stopped sync made are read, the rest written), then the consumers. A step stopped
half-way is run again whole; the consumers' step cannot be (its bulk POSTs make new consumers): stop a build before
it, or build again.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from bench.common import BenchError, Servers, progress  # noqa: E402
from bench.workload import (check_workload, dump, host_name, make_roots_at_once, post_consumers, restore,  # noqa: E402
                            sync_agents, write_agent_files)

DUMP = "placement.sql.gz"
BUILD = "build.json"
CACHE = "cache.json"
PARTIAL = "partial.sql.gz"  # a running build's database, dumped by --save-partial
STEPS = "steps.json"        # the rows of the steps done, each written as it ends (what --resume skips)


def load_built(directory: Path, n: int, server, cache: Path) -> dict:
    """The workload of ``n`` hosts built by this script in ``directory``, loaded into ``server`` (and the sync's
    cache file copied to ``cache``): the build's rows as measured then, and the check made now."""
    from tests.support.prodplacement.server import ProdPlacement
    if not isinstance(server, ProdPlacement):
        raise BenchError("BENCH_EXPORTER_BUILT loads into the production-style Placement only (--placement prod): "
                         "its one MariaDB and uWSGI master")
    built = json.loads((directory / BUILD).read_text())
    if built["n"] != n:
        raise BenchError(f"{directory} holds the workload of {built['n']} hosts, not {n}")
    progress(f"exporter_scale: loading the {n}-host workload built {built['when']} from {directory}")
    seconds = restore(server, directory / DUMP)
    # the sync's cache file, for this Placement: the same database, at another address (the cache is per endpoint)
    from minbw.placement.client import Placement
    data = json.loads((directory / CACHE).read_text())
    data["endpoint"] = Placement(server.connect()).endpoint()
    cache.write_text(json.dumps(data))
    progress(f"exporter_scale: loaded in {seconds:.0f} s")
    return {**built, "loaded_s": seconds, "checked": check_workload(server, n)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=4, help="uWSGI workers of the Placement (default 4)")
    parser.add_argument("--save-partial", action="store_true",
                        help=f"dump the database of the build of --out running now into {PARTIAL}, then exit")
    parser.add_argument("--resume", action="store_true",
                        help=f"continue a stopped build: load {PARTIAL}, run the steps {STEPS} does not hold")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    name = f"exporter-scale-{args.hosts}"
    if args.save_partial:
        t = time.perf_counter()
        dump(SimpleNamespace(state_dir=out / "servers" / name), out / PARTIAL)
        progress(f"exporter_scale: {out / PARTIAL} ({(out / PARTIAL).stat().st_size / 2**20:.0f} MiB) in "
                 f"{time.perf_counter() - t:.0f} s")
        return 0
    if args.resume and not (out / PARTIAL).exists():
        raise BenchError(f"--resume: no {out / PARTIAL} (dumped by --save-partial while the build ran)")
    steps = json.loads((out / STEPS).read_text()) if args.resume and (out / STEPS).exists() else []
    if steps and steps[-1]["key"] == "consumers":
        raise BenchError(f"--resume: {out / STEPS} holds every step; nothing to continue")
    out.mkdir(parents=True, exist_ok=True)
    if not args.resume:
        (out / STEPS).unlink(missing_ok=True)
    servers = Servers(out / "servers", "prod", args.workers)
    server = servers.start(name)
    hosts = [host_name(i) for i in range(1, args.hosts + 1)]
    cache = out / CACHE
    cache.unlink(missing_ok=True)
    resumed = None
    try:
        started = time.perf_counter()
        if args.resume:
            resumed = {"from": str(out / PARTIAL), "loaded_s": restore(server, out / PARTIAL),
                       "steps_before": [row["key"] for row in steps]}
            progress(f"exporter_scale: resumed from {out / PARTIAL} (loaded in {resumed['loaded_s']:.0f} s), steps "
                     f"done before: {resumed['steps_before']}")

        def step(key, run, resumed_note=""):
            if any(row["key"] == key for row in steps):
                return
            row = run()
            row["key"] = key
            if resumed is not None and resumed_note:
                row["how"] += resumed_note
            steps.append(row)
            (out / STEPS).write_text(json.dumps(steps, indent=1, default=str))
        step("roots", lambda: make_roots_at_once(server, hosts))
        step("sync", lambda: sync_agents(server, write_agent_files(out / "agents", args.hosts), cache),
             "; resumed: run in full on the database a stopped build left")
        step("consumers", lambda: post_consumers(server, hosts))
        build = [{k: v for k, v in row.items() if k != "key"} for row in steps]
        checked = check_workload(server, args.hosts)
        build_s = time.perf_counter() - started if resumed is None else sum(row["s"] for row in build)
        progress(f"exporter_scale: built in {build_s:.0f} s; dumping the database")
        dump(server, out / DUMP)
    finally:
        servers.stop_all()
    shutil.rmtree(out / "servers", ignore_errors=True)
    (out / BUILD).write_text(json.dumps({"n": args.hosts, "when": time.strftime("%Y-%m-%d %H:%M"), "build": build,
                                         "build_s": build_s, "built_checked": checked, "placement": servers.describe(),
                                         "resumed": resumed},
                                        indent=1, default=str))
    progress(f"exporter_scale: {out / DUMP} ({(out / DUMP).stat().st_size / 2**20:.0f} MiB), {out / CACHE}, "
             f"{out / BUILD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
