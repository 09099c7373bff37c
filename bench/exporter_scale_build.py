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
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from bench.common import BenchError, Servers, progress  # noqa: E402
from bench.workload import (check_workload, dump, host_name, make_roots_at_once, post_consumers, restore,  # noqa: E402
                            sync_agents, write_agent_files)

DUMP = "placement.sql.gz"
BUILD = "build.json"
CACHE = "cache.json"


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
    args = parser.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    servers = Servers(out / "servers", "prod", args.workers)
    server = servers.start(f"exporter-scale-{args.hosts}")
    hosts = [host_name(i) for i in range(1, args.hosts + 1)]
    cache = out / CACHE
    cache.unlink(missing_ok=True)
    try:
        started = time.perf_counter()
        build = [make_roots_at_once(server, hosts),
                 sync_agents(server, write_agent_files(out / "agents", args.hosts), cache),
                 post_consumers(server, hosts)]
        checked = check_workload(server, args.hosts)
        build_s = time.perf_counter() - started
        progress(f"exporter_scale: built in {build_s:.0f} s; dumping the database")
        dump(server, out / DUMP)
    finally:
        servers.stop_all()
    shutil.rmtree(out / "servers", ignore_errors=True)
    (out / BUILD).write_text(json.dumps({"n": args.hosts, "when": time.strftime("%Y-%m-%d %H:%M"), "build": build,
                                         "build_s": build_s, "built_checked": checked, "placement": servers.describe()},
                                        indent=1, default=str))
    progress(f"exporter_scale: {out / DUMP} ({(out / DUMP).stat().st_size / 2**20:.0f} MiB), {out / CACHE}, "
             f"{out / BUILD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
