"""The HTTP calls of one claim and where its client time goes, raw ``PUT /allocations`` beside minbw's verified claim:
a fresh embedded Placement (3 hosts of the query section's shape: root + OVS agent + one bridge), the query section's
request, the candidates fetched once (not measured). For each system: the calls of one claim (the requests hook of
bench.common.HttpCounter), then N claims twice, alternating, with wall time, client CPU and the time spent waiting on
Placement (``response.elapsed``) per claim; then minbw's claim under cProfile (top functions by cumulative time).

- raw: the PUT of a precomputed body through the placement proxy (microversion 1.28);
- current: ``claims.claim(..., candidates=cands, candidates_current=True)`` (``minbw allocation create``'s claim);
- older: ``claims.claim(..., candidates=cands)`` (a caller's older candidates: the inventories are read too).

The embedded Placement serves one request at a time (the usage reads of a verification queue there): its wall times
say nothing of a production Placement's; the call counts and the client CPU do. Not a section of bench/run.py.

Usage: PYTHONPATH=python:. .venv/bin/python bench/claim_profile.py [N=60]
"""
import cProfile
import io
import pstats
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path


def main(n: int) -> None:
    warnings.filterwarnings("ignore")
    from bench.common import HttpCounter
    from bench.query_bench import OVS_INI, ROOT_INVENTORIES, server_request
    from minbw.neutron.agentconf import load_agent_ini
    from minbw.neutron.provider_tree import desired_state
    from minbw.ops import claims, sync
    from minbw.placement.client import Placement
    from tests.conftest import PlacementServer
    from tests.support.compute_roots import compute_root

    server = PlacementServer(Path(tempfile.mkdtemp(prefix="minbw-claim-profile-")))
    server.start()
    try:
        conn = server.connect()
        api = Placement(conn)
        for i in range(3):
            compute_root(api, f"host-{i}", ROOT_INVENTORIES)
        sync.sync_providers(api, desired_state([load_agent_ini(OVS_INI, source="ovs.ini", host=f"host-{i}")
                                                for i in range(3)]))
        req = server_request()
        cands = claims.get_candidates(api, req)
        first = cands.by_host()[0][1][0]
        body = {"allocations": {rp: {"resources": dict(a["resources"])} for rp, a in first["allocations"].items()},
                "project_id": "p", "user_id": "u", "consumer_generation": None}
        proxy = conn.placement
        counter = HttpCounter(conn.session.session)

        def raw(c):
            r = proxy.put(f"/allocations/{c}", json=body, microversion="1.28", raise_exc=False)
            if r.status_code != 204:
                raise RuntimeError(f"raw PUT: {r.status_code} {r.text[:300]}")

        def current(c):
            claims.claim(api, c, req, project_id="p", user_id="u", candidates=cands, candidates_current=True)

        def older(c):
            claims.claim(api, c, req, project_id="p", user_id="u", candidates=cands)

        systems = (raw, current, older)
        for fn in systems:
            fn(str(uuid.uuid4()))    # warm-up
            counter.calls.clear()
            fn(str(uuid.uuid4()))
            print(f"{fn.__name__:8s} one claim: " + ", ".join(f"{m} {p.split('?')[0]}" for m, p, _ in counter.calls))
        for fn in systems + systems:
            counter.calls.clear()
            consumers = [str(uuid.uuid4()) for _ in range(n)]
            cpu0, t0 = time.process_time(), time.perf_counter()
            for c in consumers:
                fn(c)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
            wait = sum(e for _m, _p, e in counter.calls)
            print(f"{fn.__name__:8s} {n} claims: wall {1000 * wall / n:.2f} ms/claim, client CPU {1000 * cpu / n:.2f} "
                  f"ms/claim, waiting {1000 * wait / n:.2f} ms/claim (summed over calls), "
                  f"calls/claim {len(counter.calls) / n:.2f}")
        prof = cProfile.Profile()
        consumers = [str(uuid.uuid4()) for _ in range(n)]
        prof.enable()
        for c in consumers:
            current(c)
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(30)
        print(out.getvalue())
    finally:
        server.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
