"""What the cyclic garbage collector costs the warm provider sync at N hosts, without a Placement: the parts of the
warm path that run in the client, each timed, with the kept desired state loaded as before 2026-12-06 (the collector
on) and as now (:func:`minbw.cache.desired.load`: paused during the load, the state then frozen out of its
generations), alternated, ROUNDS rounds of each. Not a section of bench/run.py.

The parts, in the use case's order: *load* (the kept desired state), *scope* (``state_scope``: which record),
*decode* (``json.loads`` of a listing body of the N roots and 6·N providers, as Placement answers it: the floor's
decode), *providers* (the ``Provider`` objects of the listing), *compare* (``make_warm_plan``); *all* their sum. The
listing's fetch is not here (no server).

Usage: nice -n 5 .venv/bin/python bench/sync_warm_gc.py 10000
"""

import gc
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "python"))
from minbw.cache import desired
from minbw.model.providers import Provider
from minbw.model.synced import Synced, state_scope
from minbw.ops import ovn_chassis
from minbw.ops.agent_files import read_agent_units
from minbw.plan.providers import make_warm_plan, owned_agents

from bench.common import loadavg
from bench.workload import root_uuid, write_agent_files

ROUNDS = 3


def listing_body(state) -> bytes:
    """The listing's JSON as Placement 1.14 answers it: the roots, then every desired provider (generation 3)."""
    body = [
        {
            "uuid": root_uuid(h),
            "name": h,
            "generation": 1,
            "parent_provider_uuid": None,
            "root_provider_uuid": root_uuid(h),
            "links": [],
        }
        for h in state.hypervisors
    ]
    body += [
        {
            "uuid": s.uuid,
            "name": s.name,
            "generation": 3,
            "parent_provider_uuid": s.parent_uuid or root_uuid(s.hypervisor),
            "root_provider_uuid": root_uuid(s.hypervisor),
            "links": [{"rel": "self", "href": f"/resource_providers/{s.uuid}"}],
        }
        for s in state.providers
    ]
    return json.dumps({"resource_providers": body}).encode()


def one(raw: bytes, kept: Path, how: str) -> dict:
    """The client's parts of one warm sync, in the order the use case runs them: the kept state, its scope, then
    the listing's decode and providers, then the comparison."""
    r = {}
    saved = desired._uncollected
    if how == "before":
        desired._uncollected = lambda load, f: load(f)
    try:
        t = time.perf_counter()
        state = desired.load(kept, "bench")
        r["load"] = time.perf_counter() - t
    finally:
        desired._uncollected = saved
    t = time.perf_counter()
    state_scope(state)
    r["scope"] = time.perf_counter() - t
    t = time.perf_counter()
    doc = json.loads(raw)
    r["decode"] = time.perf_counter() - t
    t = time.perf_counter()
    listed = [Provider.from_api(b) for b in doc["resource_providers"]]
    by_uuid, by_name = {p.uuid: p for p in listed}, {p.name: p for p in listed}
    r["providers"] = time.perf_counter() - t
    roots = {h: by_name[h] for h in state.hypervisors}
    now = time.time()
    last = Synced(
        "f",
        now,
        {h: p.uuid for h, p in roots.items()},
        {s.uuid: 3 for s in state.providers},
        frozenset(owned_agents(state, by_uuid.values())),
        now,
        now,
    )
    t = time.perf_counter()
    _plan, why = make_warm_plan(state, last, "f", by_uuid, roots, now=now, check_interval=3600, max_age=86400)
    r["compare"] = time.perf_counter() - t
    if why != "unchanged":
        raise SystemExit(f"the comparison did not answer unchanged: {why}")
    r["all"] = sum(r.values())
    r["load avg"] = loadavg()
    return r


def main(n: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="minbw-warmgc-"))
    files = write_agent_files(work / "agents", n)
    configs, _unread = read_agent_units(
        [str(p) for h in files for p in files[h]], host=None
    )
    state = ovn_chassis.desired(configs, isolate=True)
    kept = work / "kept.desired"
    desired.save(kept, "bench", state)
    raw = listing_body(state)
    print(
        f"N={n}: {len(state.providers)} desired providers, listing body {len(raw) / 2**20:.1f} MiB, "
        f"kept state {kept.stat().st_size / 2**20:.1f} MiB",
        flush=True,
    )
    del state, configs
    gc.collect()
    for _round in range(ROUNDS):
        for how in ("before", "now"):
            r = one(raw, kept, how)
            gc.unfreeze()
            gc.collect()
            print(
                f"{how:6}  "
                + "  ".join(
                    f"{k} {v:.3f}" if k != "load avg" else f"{k} {v}"
                    for k, v in r.items()
                ),
                flush=True,
            )


if __name__ == "__main__":
    main(int(sys.argv[1]))
