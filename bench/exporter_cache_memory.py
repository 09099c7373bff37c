"""What the exporter's collecting process holds of the provider cache before its first cycle, without a Placement:
the cache file a sync left (e.g. the kept 10,000-host workload's ``cache.json``) opened as ``minbw exporter`` opens
it, once for the collector, then for the slow reports (a twin of the collector's where the tree has
``ProviderCache.twin``, else the file loaded again), with the exporter's imports and allocator settings.

    [TM=1 TOP=8] SRC=<a tree's python dir> .venv/bin/python bench/exporter_cache_memory.py CACHE_FILE

RSS and VmHWM from /proc/self/status after the imports, after each cache; with TM=1 (tracemalloc: slower, and its
own memory in the RSS) what the two caches hold, by line, and per entry."""

import json
import os
import re
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, os.environ.get("SRC", str(Path(__file__).resolve().parent.parent / "python")))


def status() -> str:
    got = dict(re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M))
    return f"RSS {int(got['VmRSS']) / 1024:.0f} MiB (VmHWM {int(got['VmHWM']) / 1024:.0f})"


def main() -> None:
    path = Path(sys.argv[1])
    import minbw.usecases.exporter  # noqa: F401 - the exporter's imports, as the service has them
    from minbw.cache.providers import ProviderCache
    from minbw.exporter.memory import limit_arenas
    with open(path, "rb") as f:  # the endpoint the file is for, from its head (the file is not read whole here)
        endpoint = json.loads(f.read(4096).split(b', "providers"')[0] + b"}")["endpoint"]
    traced = os.environ.get("TM") == "1"
    print(f"{path} ({path.stat().st_size / 2**20:.1f} MiB); the imports: {status()}")
    if traced:
        tracemalloc.start(1)
        before = tracemalloc.take_snapshot()
    t = time.perf_counter()
    collector = ProviderCache(path, endpoint)
    print(f"the collector's cache, {collector.size()} entries, {time.perf_counter() - t:.1f} s: {status()}")
    limit_arenas()  # as Collector() sets them, after the collector's cache is opened
    t = time.perf_counter()
    twin = hasattr(collector, "twin")
    slow = collector.twin() if twin else ProviderCache(path, endpoint)
    print(f"the slow reports' cache ({'a twin' if twin else 'the file loaded again'}), {slow.size()} entries, "
          f"{time.perf_counter() - t:.1f} s: {status()}")
    if traced:
        held = tracemalloc.take_snapshot().compare_to(before, "lineno")
        total = sum(s.size_diff for s in held)
        n = collector.size()
        print(f"traced, the two caches: {total / 2**20:.1f} MiB, {total / n:.0f} B per entry")
        for s in held[: int(os.environ.get("TOP", "8"))]:
            where = str(s.traceback).replace(os.environ.get("SRC", ""), "")
            print(f"  {s.size_diff / 2**20:6.1f} MiB  {s.size_diff / n:5.0f} B/entry  {s.count_diff / n:5.2f} "
                  f"objects/entry  {where}")


if __name__ == "__main__":
    main()
