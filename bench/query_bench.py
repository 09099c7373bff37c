"""Issue 3: client overhead of one allocation-candidates query at 1,000 candidates, beside the raw GET.

Workload: a fresh embedded Placement with 1,000 hosts, each a compute-node root (VCPU, MEMORY_MB,
DISK_GB, as nova-compute makes it) plus an OVS agent with one bridge on physnet0 (10 Gbit/s both
ways), made by minbw's own sync from real agent ini text: 3,000 providers. One server request
(flavor VCPU:1, MEMORY_MB:256, DISK_GB:1 + one QoS port, 1000/1000 kbps on physnet0, vnic normal)
then yields exactly 1,000 candidates, one per host. (An OVS agent maps each physnet to ONE
bridge, so "50 hosts x 20 bridges on physnet0" cannot come from real agent configs with vnic
normal; 1,000 x 1 is what the agents can express, and the claims section reuses the database.)

Measured, interleaved (the order of the two systems alternates per iteration), ITERATIONS times:

(a) raw: the same query string through the openstacksdk placement proxy's keystoneauth adapter,
    ``proxy.get(url, microversion=mv)`` + ``resp.json()``;
(b) minbw: ``claims.get_candidates(api, req)`` (build_query + GET + parse), ``by_host()`` and
    ``mapping_from_candidate`` of the first candidate (the one a claim uses);
(c) mapping all 1,000 candidates (what ``allocation_candidates_info`` does), on (b)'s result.

Client overhead = (b) - (a) per iteration. Because that difference carries the noise of two
~0.5 s server answers on a loaded machine, two steadier views are given beside it: the
client-side time outside the server wait (total minus ``response.elapsed``) of each, and the
client-side steps timed in-process without HTTP on the same JSON body.
"""
from __future__ import annotations

import json
import sqlite3
import statistics
import time
import uuid as uuidlib
import warnings
from pathlib import Path

from bench.common import (BenchError, Column, Context, HttpCounter, Section, Table, Target, cpu_seconds, loadavg,
                          percentile, progress, server_cpu_seconds)

HOSTS = 1000
ITERATIONS = 50
OVERHEAD_MAX_MS = 5.0
FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}
KBPS = 1000
BRIDGE_KBPS = 10_000_000
# big enough that every claim of the claims section fits on one host
ROOT_INVENTORIES = {"VCPU": {"total": 100_000}, "MEMORY_MB": {"total": 100_000_000}, "DISK_GB": {"total": 1_000_000}}
OVS_INI = f"""\
[ovs]
bridge_mappings = physnet0:br-phys0
resource_provider_bandwidths = br-phys0:{BRIDGE_KBPS}:{BRIDGE_KBPS}
"""
PORT_ID = "5b3a3d6e-2a0c-4b55-9a51-3c3a40e0b001"
RULE_IDS = ("0c6b1c39-64c6-4e1b-9f54-6c6f5f0a0e01", "0c6b1c39-64c6-4e1b-9f54-6c6f5f0a0e02")
DB_KEY = "candidates_db"   # ctx.options: a copy of the 1,000-host database, for the claims section
PROD_KEY = "candidates_server"   # ctx.options, --placement prod|galera: the running 1,000-host server, for the claims section
SERVED = ("prod", "galera")      # Placements on MariaDB: the claims section goes on on the query section's server
NOVA_LIMIT = 1000          # Nova's [scheduler] max_placement_results default: every query of Nova carries limit


def host_name(i: int) -> str:
    return f"compute-{i:04d}"


def root_uuid(host: str) -> str:
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, host))


def server_request():
    """The one server request both sections use (flavor + one QoS port, 1000/1000 kbps, physnet0, normal), as
    Nova 34's scheduler builds it (minbw.nova: its request filters, the roots made as nova-compute makes them, so
    root_required=OWNER_NOVA,!COMPUTE_STATUS_DISABLED; ``limit`` max_placement_results, default 1000)."""
    from minbw.neutron.port_request import QosRule, Segment, build_port_request
    from minbw.nova.inputs import CloudFacts, Flavor, Port, Server
    from minbw.nova.scheduler import query
    rules = [QosRule(RULE_IDS[0], "minimum_bandwidth", "egress", KBPS),
             QosRule(RULE_IDS[1], "minimum_bandwidth", "ingress", KBPS)]
    port = build_port_request(PORT_ID, rules, [Segment("vlan", "physnet0")], "normal")
    req = query(Server(flavor=Flavor.given(FLAVOR), ports=(Port(PORT_ID, request=port),)), None,
                CloudFacts(every_compute_reports_owner_nova=True)).request
    if req.limit != NOVA_LIMIT:
        raise BenchError(f"Nova's query has limit {req.limit}, expected {NOVA_LIMIT}")
    return req


def build_placement(ctx: Context, name: str):
    """A Placement with HOSTS hosts (root + OVS agent + one bridge). Built once per bench run; a
    later section gets a fresh server process on a copy of the database (sqlite3 backup)."""
    from minbw.ops import sync
    from minbw.neutron.agentconf import load_agent_ini
    from minbw.placement.client import Placement
    from minbw.neutron.provider_tree import desired_state
    from minbw.model.providers import NOVA_ROOT_TRAITS, freeze_inventories

    shared = ctx.options.get(PROD_KEY)
    if ctx.options.get("placement") in SERVED and shared is not None and shared in ctx.servers.running:
        progress(f"{name}: the query section's {HOSTS}-host production-style Placement, still running")
        return shared, 0.0
    cached = ctx.options.get(DB_KEY)
    if ctx.options.get("placement") not in SERVED and cached and Path(cached).exists():
        target = ctx.state_dir / name
        target.mkdir(parents=True, exist_ok=True)
        _copy_db(Path(cached), target / "placement.sqlite")
        progress(f"{name}: fresh Placement on a copy of the {HOSTS}-host database")
        return ctx.servers.start(name), 0.0
    progress(f"{name}: building {HOSTS} hosts (root + OVS agent + 1 bridge each; about 7,000 calls)")
    server = ctx.servers.start(name)
    api = Placement(server.connect())
    t = time.perf_counter()
    invs = freeze_inventories(ROOT_INVENTORIES)
    for i in range(1, HOSTS + 1):  # as nova-compute makes its compute node: inventories, COMPUTE_NODE and OWNER_NOVA
        prov = api.create_provider(root_uuid(host_name(i)), host_name(i), None)
        api.set_provider_traits(prov.uuid, NOVA_ROOT_TRAITS, api.set_inventories(prov.uuid, invs, prov.generation))
        if i % 250 == 0:
            progress(f"{name}: {i}/{HOSTS} roots")
    configs = [load_agent_ini(OVS_INI, source=f"{host_name(i)}/openvswitch_agent.ini", host=host_name(i))
               for i in range(1, HOSTS + 1)]
    sync.sync_providers(api, desired_state(configs), progress=lambda step, done, total: (
        done == total or done % 1000 == 0) and progress(f"{name}: sync: {step} {done}/{total}"))
    setup_s = time.perf_counter() - t
    if ctx.options.get("placement") in SERVED:
        ctx.options[PROD_KEY] = server
        return server, setup_s
    copy = ctx.state_dir / f"{DB_KEY}.sqlite"
    _copy_db(server.state_dir / "placement.sqlite", copy)
    ctx.options[DB_KEY] = str(copy)
    return server, setup_s


def _copy_db(src: Path, dst: Path) -> None:
    a, b = sqlite3.connect(str(src)), sqlite3.connect(str(dst))
    try:
        a.backup(b)
    finally:
        a.close()
        b.close()


def _ms(xs):
    return [1000 * x for x in xs]


def _stats(xs: list[float]) -> dict:
    return {"p50": percentile(xs, 50), "p90": percentile(xs, 90), "min": min(xs), "max": max(xs), "n": len(xs)}


def _inprocess(body_bytes: bytes, req, max_mv: str, repeat: int) -> dict[str, dict]:
    """CPU and wall ms of each client-side step on the same JSON body, no HTTP."""
    from minbw.ops.claims import CandidateSet
    from minbw.placement.mapping import mapping_from_candidate
    from minbw.placement.query import build_query

    params, mv = build_query(req, max_mv)
    body = json.loads(body_bytes)
    cands = CandidateSet(tuple(body["allocation_requests"]), body["provider_summaries"], params, mv)
    first = cands.by_host()[0][1][0]
    steps = {
        "Nova's request (request filters + ResourceRequest, minbw.nova)": server_request,
        "build_query": lambda: build_query(req, max_mv),
        "json.loads of the body (also in raw)": lambda: json.loads(body_bytes),
        "CandidateSet from the parsed body": lambda: CandidateSet(tuple(body["allocation_requests"]),
                                                                  body["provider_summaries"], params, mv),
        "by_host()": cands.by_host,
        "mapping_from_candidate (first)": lambda: mapping_from_candidate(first, cands.provider_summaries, req),
        "mapping all 1,000 candidates": lambda: [mapping_from_candidate(ar, cands.provider_summaries, req)
                                                 for ar in cands.allocation_requests],
    }
    out = {}
    for name, fn in steps.items():
        n = max(5, repeat // 20) if ("all" in name or "json" in name) else repeat
        walls, cpus = [], []
        fn()
        for _ in range(n):
            c, t = time.process_time(), time.perf_counter()
            fn()
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        out[name] = {"wall_ms_p50": 1000 * statistics.median(walls), "cpu_ms_p50": 1000 * statistics.median(cpus),
                     "n": n}
    return out


def run(ctx: Context) -> Section:
    warnings.filterwarnings("ignore")
    from minbw.ops import claims
    from minbw.placement.mapping import mapping_from_candidate
    from minbw.placement.client import Placement
    from minbw.placement.query import build_query, query_string

    section = Section("query", f"Allocation candidates at {HOSTS:,} candidates: minbw's client overhead "
                               f"beside the raw GET")
    server, setup_s = build_placement(ctx, "query")
    try:
        conn = server.connect()
        api = Placement(conn)
        proxy = conn.placement
        counter = HttpCounter(conn.session.session)
        req = server_request()
        max_mv = api.max_version()
        params, mv = build_query(req, max_mv)
        url = "/allocation_candidates?" + query_string(params)
        section.data.update({"hosts": HOSTS, "setup_s": setup_s, "query": url, "microversion": mv,
                             "placement_max_microversion": max_mv})

        # warm-up and correctness (not counted)
        cands = claims.get_candidates(api, req)
        n = len(cands.allocation_requests)
        if n != HOSTS or len(cands.by_host()) != HOSTS:
            raise BenchError(f"expected {HOSTS} candidates on {HOSTS} hosts, got {n} on {len(cands.by_host())}")
        resp = proxy.get(url, microversion=mv)
        if resp.status_code != 200 or len(resp.json()["allocation_requests"]) != HOSTS:
            raise BenchError(f"raw GET: {resp.status_code}, not {HOSTS} candidates")
        body_bytes = resp.content
        bad = [ar for ar in cands.allocation_requests
               if not mapping_from_candidate(ar, cands.provider_summaries, req).unique]
        if bad:
            raise BenchError(f"{len(bad)} candidates have no unique mapping, e.g. {bad[0]}")

        def raw():
            counter.calls.clear()
            t = time.perf_counter()
            r = proxy.get(url, microversion=mv)
            body = r.json()
            total = time.perf_counter() - t
            if r.status_code != 200 or len(body["allocation_requests"]) != HOSTS:
                raise BenchError(f"raw GET: {r.status_code}")
            return total, counter.calls[-1][2]

        def minbw():
            counter.calls.clear()
            t = time.perf_counter()
            cs = claims.get_candidates(api, req)
            host, host_cands = cs.by_host()[0]
            m = mapping_from_candidate(host_cands[0], cs.provider_summaries, req)
            total = time.perf_counter() - t
            t2 = time.perf_counter()
            allm = [mapping_from_candidate(ar, cs.provider_summaries, req) for ar in cs.allocation_requests]
            map_all = time.perf_counter() - t2
            if len(cs.allocation_requests) != HOSTS or not m.unique or len(allm) != HOSTS:
                raise BenchError("minbw: wrong candidates or mapping")
            if len(counter.calls) != 1:
                raise BenchError(f"minbw sent {len(counter.calls)} requests for one get_candidates, expected 1")
            return total, counter.calls[-1][2], map_all

        rows = {k: [] for k in ("raw", "raw_wait", "minbw", "minbw_wait", "map_all", "diff", "client_diff")}
        loads = []
        c0, s0 = cpu_seconds(), server_cpu_seconds(server)
        progress(f"query: {ITERATIONS} interleaved iterations (raw GET, minbw), {n} candidates, "
                 f"{len(body_bytes) / 1e6:.2f} MB body, load {loadavg()}")
        for i in range(ITERATIONS):
            if i % 2 == 0:
                a, aw = raw()
                b, bw, ma = minbw()
            else:
                b, bw, ma = minbw()
                a, aw = raw()
            for k, v in (("raw", a), ("raw_wait", aw), ("minbw", b), ("minbw_wait", bw), ("map_all", ma),
                         ("diff", b - a), ("client_diff", (b - bw) - (a - aw))):
                rows[k].append(v)
            loads.append(loadavg())
            if (i + 1) % 10 == 0:
                progress(f"query: {i + 1}/{ITERATIONS} (raw p50 {1000 * statistics.median(rows['raw']):.0f} ms, "
                         f"minbw p50 {1000 * statistics.median(rows['minbw']):.0f} ms, load {loads[-1]})")
        client_cpu, server_cpu = cpu_seconds() - c0, server_cpu_seconds(server) - s0
        counter.detach()
        load_med = statistics.median(x for x in loads if x is not None) if any(loads) else None

        ms = {k: _stats(_ms(v)) for k, v in rows.items()}
        all_diff = _stats(_ms([b + m - a for a, b, m in zip(rows["raw"], rows["minbw"], rows["map_all"])]))
        plus_all = _stats(_ms([b + m for b, m in zip(rows["minbw"], rows["map_all"])]))
        client_raw = _stats(_ms([t - w for t, w in zip(rows["raw"], rows["raw_wait"])]))
        client_minbw = _stats(_ms([t - w for t, w in zip(rows["minbw"], rows["minbw_wait"])]))
        table = Table(f"Per query, {ITERATIONS} interleaved iterations, ms (load average {min(loads)}–{max(loads)}, "
                      f"median {load_med})",
                      [Column("what", "what"), Column("p50", "p50", "{:.1f}"), Column("p90", "p90", "{:.1f}"),
                       Column("min", "min", "{:.1f}"), Column("max", "max", "{:.1f}"), Column("load", "load")])
        for label, st in (("(a) raw GET + resp.json()", ms["raw"]),
                          ("    of which waiting on Placement (response.elapsed)", ms["raw_wait"]),
                          ("    client side (total - waiting)", client_raw),
                          ("(b) minbw get_candidates + by_host + mapping (first)", ms["minbw"]),
                          ("    of which waiting on Placement (response.elapsed)", ms["minbw_wait"]),
                          ("    client side (total - waiting)", client_minbw),
                          ("(c) mapping all 1,000 candidates (after b)", ms["map_all"]),
                          ("(b) + (c)", plus_all),
                          ("overhead (b) - (a), per iteration", ms["diff"]),
                          ("overhead, client side only, per iteration", ms["client_diff"]),
                          ("overhead with all mapped, (b) + (c) - (a), per iteration", all_diff)):
            table.rows.append({"what": label, **st, "load": load_med})

        progress(f"query: client-side steps in-process, no HTTP (load {loadavg()})")
        steps = _inprocess(body_bytes, req, max_mv, repeat=200)
        steps_table = Table(f"Client-side steps in-process on the same {len(body_bytes) / 1e6:.2f} MB body, no HTTP "
                            f"(load {loadavg()})",
                            [Column("step", "step"), Column("wall_ms_p50", "wall ms p50", "{:.3f}"),
                             Column("cpu_ms_p50", "CPU ms p50", "{:.3f}"), Column("n", "runs")])
        steps_table.rows = [{"step": k, **v} for k, v in steps.items()]
        own = ("build_query", "CandidateSet from the parsed body", "by_host()", "mapping_from_candidate (first)")
        own_ms = sum(steps[k]["wall_ms_p50"] for k in own)
        steps_table.rows.append({"step": "minbw's own steps for a claim (sum of the 4 above without json)",
                                 "wall_ms_p50": own_ms,
                                 "cpu_ms_p50": sum(steps[k]["cpu_ms_p50"] for k in own)})
        steps_table.rows.append({"step": "... plus mapping all 1,000 (allocation_candidates_info)",
                                 "wall_ms_p50": own_ms - steps["mapping_from_candidate (first)"]["wall_ms_p50"]
                                 + steps["mapping all 1,000 candidates"]["wall_ms_p50"]})

        section.tables = [table, steps_table]
        section.targets = [
            Target("client overhead p50, (b) - (a) per iteration", f"{HOSTS} candidates",
                   round(ms["diff"]["p50"], 2), "<=", OVERHEAD_MAX_MS, " ms"),
            Target("client overhead p50, client side only", f"{HOSTS} candidates",
                   round(ms["client_diff"]["p50"], 2), "<=", OVERHEAD_MAX_MS, " ms"),
            Target("minbw's own steps in-process (build + parse + by_host + mapping)", f"{HOSTS} candidates",
                   round(own_ms, 2), "<=", OVERHEAD_MAX_MS, " ms"),
        ]
        section.notes += [
            f"Placement ({ctx.servers.describe()}): {HOSTS} hosts x (root + OVS agent + 1 bridge on physnet0) = {3 * HOSTS} providers, built "
            f"by minbw's sync" + (f" in {setup_s:.0f} s" if setup_s else " (database copied from an earlier section)")
            + f"; Placement serves up to {max_mv}; the query goes at {mv} (mappings) and returns "
              f"{n} candidates, {len(body_bytes) / 1e6:.2f} MB.",
            f"Query: GET {url}",
            f"CPU during the iterations: client {client_cpu:.1f} s, Placement {server_cpu:.1f} s.",
            "The (b) - (a) difference carries the noise of two server answers on a shared machine; the "
            "client-side-only difference (each total minus its response.elapsed) and the in-process steps "
            "remove the server's share.",
        ]
        section.data.update({"iterations": ITERATIONS, "ms": ms, "b_plus_c": plus_all, "client_raw": client_raw,
                             "client_minbw": client_minbw, "overhead_all_mapped": all_diff, "inprocess": steps, "loadavg": loads,
                             "client_cpu_s": client_cpu, "server_cpu_s": server_cpu,
                             "body_bytes": len(body_bytes)})
    finally:
        if ctx.options.get(PROD_KEY) is not server:   # prod: the claims section goes on on the same server
            ctx.servers.stop(server)
    return section
