"""Where minbw's warm sync time goes (run when the warm speed-up target is missed, or --diagnose always).

On the minbw server of the largest size, after its warm run:

1. the benchmarked warm runs (minbw's and Neutron's) taken apart: per kind of call, the time
   spent waiting on the server (``response.elapsed``), and the client time outside those waits;
2. the cost of one provider GET, measured the same way through each layer, interleaved:
   the placement WSGI app called in-process (server work only, same database), a raw
   ``requests`` GET, keystoneauth's Session (neutron-lib's client), openstacksdk's proxy,
   and minbw's ``Placement`` method;
3. options, measured here rather than guessed: the per-provider reads done by 1, 2 and 4
   threads; and what a warm run would cost without per-provider reads at all (what remains
   when nothing has changed since the last sync and the sync can tell so from generations).
"""
from __future__ import annotations

from minbw.placement.client import READERS

import io
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import Column, Table, progress

ROUNDS = 150           # per-GET samples per layer and path
THREAD_SAMPLE = 1200   # provider GETs per concurrency measurement


@dataclass
class Diagnosis:
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)


def _wsgi_get(app, path: str, microversion: str) -> None:
    out: list[str] = []
    env = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
           "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.url_scheme": "http",
           "wsgi.input": io.BytesIO(), "wsgi.errors": sys.stderr, "wsgi.version": (1, 0),
           "wsgi.multithread": False, "wsgi.multiprocess": False, "wsgi.run_once": False,
           "HTTP_X_AUTH_TOKEN": "admin", "HTTP_OPENSTACK_API_VERSION": f"placement {microversion}",
           "HTTP_ACCEPT": "application/json"}
    b"".join(app(env, lambda status, headers, exc_info=None: out.append(status)))
    if not out or not out[0].startswith("200"):
        raise RuntimeError(f"in-process GET {path}: {out}")


def get_cost_stack(server, uuids: list[str]) -> dict:
    """Median ms of one GET of a provider's traits / inventories through each layer (interleaved)."""
    import requests
    from minbw.model import microversions
    from minbw.placement.client import Placement
    from minbw.deploy.serve import load_app
    from tests.support.oracle.neutron_sync import neutron_client

    app = load_app(server.state_dir / "placement.conf")   # same database, no HTTP
    conn = server.connect()
    api = Placement(conn)
    client = neutron_client(server.url)
    paths = {"traits": ("/resource_providers/{}/traits", microversions.format(microversions.TRAITS)),
             "inventories": ("/resource_providers/{}/inventories", microversions.format(microversions.INVENTORIES))}

    def layers(what):
        tmpl, mv = paths[what]
        headers = {"X-Auth-Token": "admin", "OpenStack-API-Version": f"placement {mv}", "Accept": "application/json"}
        minbw_call = api.get_provider_traits if what == "traits" else api.get_inventories
        return {
            "server only (WSGI app in-process)": lambda u: _wsgi_get(app, tmpl.format(u), mv),
            "raw requests.get": lambda u: requests.get(server.url + tmpl.format(u), headers=headers).json(),
            "keystoneauth Session (neutron-lib)": lambda u: client._get(tmpl.format(u)).json(),
            "openstacksdk proxy.get": lambda u: conn.placement.get(tmpl.format(u), microversion=mv).json(),
            "minbw Placement method": minbw_call,
        }
    result: dict[str, dict[str, float]] = {}
    for what in paths:
        fns = layers(what)
        samples: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(3):  # warm every path up
            for fn in fns.values():
                fn(uuids[0])
        for i in range(ROUNDS):
            u = uuids[i % len(uuids)]
            order = list(fns.items())
            order = order[i % len(order):] + order[:i % len(order)]  # rotate: no layer always goes first
            for name, fn in order:
                t = time.perf_counter()
                fn(u)
                samples[name].append(time.perf_counter() - t)
        result[what] = {k: 1000 * statistics.median(v) for k, v in samples.items()}
    return result


def concurrent_reads(server, uuids: list[str], workers: int) -> dict:
    """GET traits + inventories of the given providers with ``workers`` threads (one connection each)."""
    from minbw.placement.client import Placement
    apis = [Placement(server.connect()) for _ in range(workers)]
    chunks = [uuids[i::workers] for i in range(workers)]

    def work(i):
        for u in chunks[i]:
            apis[i].get_provider_traits(u)
            apis[i].get_inventories(u)
    t = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(work, range(workers)))
    seconds = time.perf_counter() - t
    return {"workers": workers, "gets": 2 * len(uuids), "seconds": seconds, "ms_per_get": 1000 * seconds / (2 * len(uuids))}


def diagnose(server, files: dict[str, list[Path]], size_data: dict) -> Diagnosis:
    """``size_data``: the sync section's data for this size (its runs, with calls and waits by kind)."""
    from minbw.neutron.agentconf import load_agent_ini
    from minbw.neutron.provider_tree import desired_state

    n = len(files)
    d = Diagnosis()
    mw, nw = size_data["runs"]["minbw_warm"], size_data["runs"]["neutron_warm"]

    # ---- 1. the benchmarked warm runs, taken apart
    def breakdown(r):
        wall = r["seconds"]
        parse = r.get("parse_desired_s", 0.0)
        rows = [{"part": f"waiting on {k}", "calls_per_host": v["calls"] / n,
                 "ms_per_call": 1000 * v["http_s"] / v["calls"], "s": v["http_s"], "share": v["http_s"] / wall}
                for k, v in r["kinds"].items()]
        client = wall - r["http_seconds"] - parse
        rows += [{"part": "client outside the waits (HTTP client, JSON, sync logic)", "s": client,
                  "ms_per_call": 1000 * client / r["calls"], "share": client / wall}]
        if parse:
            rows.append({"part": "read + parse ini, desired state", "s": parse, "share": parse / wall})
        rows.append({"part": "total (wall)", "calls_per_host": r["calls"] / n, "s": wall, "share": 1.0})
        return rows
    cols = [Column("part", "part"), Column("calls_per_host", "calls/host", "{:.3g}"),
            Column("ms_per_call", "ms/call", "{:.2f}"), Column("s", "seconds", "{:.2f}"), Column("share", "share", "{:.0%}")]
    d.tables.append(Table(f"Where minbw's warm sync time goes (N={n}, the run above)", cols, breakdown(mw)))
    d.tables.append(Table(f"Where Neutron's warm resync time goes (N={n}, the run above)", cols, breakdown(nw)))
    d.data["warm_breakdown"] = {"minbw": breakdown(mw), "neutron": breakdown(nw)}

    desired = desired_state([load_agent_ini(p.read_text(), source=str(p)) for h in files for p in files[h]])
    uuids = [p.uuid for p in desired.providers]

    # ---- 2. one GET through each layer
    progress("diagnosis: cost of one GET through each layer")
    stack = get_cost_stack(server, uuids)
    d.data["get_cost_ms"] = stack
    layer_names = list(next(iter(stack.values())))
    d.tables.append(Table("One provider GET, median ms, by layer (interleaved)",
                          [Column("layer", "layer"), Column("traits", "GET …/traits", "{:.2f}"),
                           Column("inventories", "GET …/inventories", "{:.2f}")],
                          [{"layer": name, "traits": stack["traits"][name], "inventories": stack["inventories"][name]}
                           for name in layer_names]))

    # ---- 3. concurrency, measured
    progress("diagnosis: per-provider reads with 1, 2, 4 threads")
    sample = uuids[:THREAD_SAMPLE // 2]
    conc = [concurrent_reads(server, sample, w) for w in (1, 2, 4)]
    d.data["concurrent_reads"] = conc
    d.tables.append(Table(f"Per-provider reads (traits + inventories of {len(sample)} providers) by threads",
                          [Column("workers", "threads"), Column("gets", "GETs"), Column("seconds", "seconds", "{:.2f}"),
                           Column("ms_per_get", "ms/GET (wall)", "{:.2f}")], conc))

    # ---- projections: the measured warm run minus what each option removes
    wall, calls = mw["seconds"], mw["calls"]
    client_per_call = (wall - mw["http_seconds"] - mw.get("parse_desired_s", 0.0)) / calls
    per_prov = {k: v for k, v in mw["kinds"].items() if k.startswith("GET /resource_providers/{uuid}/")}
    cost = {k: v["http_s"] + v["calls"] * client_per_call for k, v in per_prov.items()}
    reads_s = sum(cost.values())
    inv = "GET /resource_providers/{uuid}/inventories"
    agents = sum(1 for p in desired.providers if p.role == "agent")
    agent_inv_s = cost.get(inv, 0.0) * agents / per_prov[inv]["calls"] if inv in per_prov else 0.0
    best = min(conc, key=lambda c: c["ms_per_get"])
    options = [
        ("measured warm run", wall),
        ("skip the agent-RP inventory GET when no packet rate is configured", wall - agent_inv_s),
        (f"per-provider reads by {best['workers']} threads (this single-threaded server)",
         wall - reads_s * (1 - best["ms_per_get"] / conc[0]["ms_per_get"])),
        ("no per-provider reads (generations unchanged since the last sync)", wall - reads_s),
    ]
    d.data["options"] = [{"option": o, "seconds": x, "s_per_host": x / n, "speedup_vs_neutron_warm": nw["seconds"] / x}
                         for o, x in options]
    d.tables.append(Table(f"Warm run options, projected from the measurements (N={n}; Neutron warm "
                          f"{nw['seconds'] / n:.4f} s/host)",
                          [Column("option", "option"), Column("seconds", "seconds", "{:.2f}"),
                           Column("s_per_host", "s/host", "{:.4f}"),
                           Column("speedup_vs_neutron_warm", "Neutron warm ÷ this", "{:.1f}×")], d.data["options"]))
    t = stack["traits"]
    d.notes.append(
        f"one traits GET: {t['minbw Placement method']:.2f} ms through minbw; Placement's own work (in-process, no "
        f"HTTP) {t['server only (WSGI app in-process)']:.2f} ms; HTTP + wsgiref "
        f"{t['raw requests.get'] - t['server only (WSGI app in-process)']:.2f} ms; openstacksdk "
        f"{t['openstacksdk proxy.get'] - t['raw requests.get']:+.2f} ms over raw requests; minbw "
        f"{t['minbw Placement method'] - t['openstacksdk proxy.get']:+.2f} ms over openstacksdk.")
    d.notes.append(
        f"projections subtract the removed calls' measured waits plus the run's mean client time per call "
        f"({1000 * client_per_call:.2f} ms); the last option assumes the sync can tell, without reading them, that "
        f"providers are unchanged: that is the opt-in --cache (generations remembered from the last sync), measured "
        f"for real in the targets as 'warm speed-up Neutron ÷ minbw --cache'; minbw now reads providers on "
        f"{READERS} threads.")
    return d
