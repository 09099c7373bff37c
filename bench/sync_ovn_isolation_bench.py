"""Issue 29 item 3 ("one bad host never blocks the fleet"): the OVN provider sync of N chassis (the workload of
bench/sync_ovn_bench.py: 2 bridges each, 3 providers per host) read from a real OVN southbound database
(``ovsdb-server`` with the ``OVN_Southbound`` schema, written with ``ovn-sbctl``: bench/ovn_sb.py), clean and
with 10 chassis broken in different ways, against the same kind of Placement.

The 10 broken chassis (positions k·N/10 + 1 for k = 1..9, and N; at N = 1,000: chassis-0101 … chassis-0901 and
chassis-1000), each of a kind ``minbw provider sync`` isolates (the chassis gets no writes and one
``minbw: skipped:`` line; every other chassis is synced; exit 3):

- 3 typos in ``resource_provider_hypervisors`` naming the next chassis's hypervisor for a bridge it also has
  (br-phys0; br-phys1; both): two chassis describe one bridge provider, so *both* are skipped, the typo's
  chassis and its partner (13 chassis skipped in all, 3·(N - 13) providers planned);
- 3 ``resource_provider_bandwidths`` that do not parse (4 fields; a rate that is not a number; a bridge twice);
- 2 inventories Placement would refuse (``resource_provider_inventory_defaults`` reserved above the total;
  step_size 0);
- 1 ``ovn-bridge-mappings`` that does not parse (a physnet twice) and 1 ``resource_provider_hypervisors`` that
  does not parse (';' typed for ':').

A chassis name given twice cannot be in the southbound database (``Chassis`` is indexed on ``name``: ovsdb-server
refuses the second row, checked here); it is checked with the database plus a saved chassis of a name in it,
untimed, without Placement.

Phases (``BENCH_OVN_ISOLATION_PHASES``; all three by default, in this order):

- ``sequential``: timed in-process, as ``minbw provider sync --ovn-sb-db DB`` runs (the usecase reads the
  database with ovn-sbctl; cache on, 4 workers), clean on one fresh Placement (A) and broken on another (B), the
  database switched between the clean and broken options before each run (one ovn-sbctl transaction, not
  counted), in alternating order so that a drift of the machine's load does not favour one side: cold (round 1
  on fresh Placements; round 2 after deleting every agent/device provider, broken first), warm with the cache
  (``WARM_ROUNDS`` pairs) and warm without it (``NOCACHE_ROUNDS`` pairs).
- ``cli``: ``minbw provider sync --ovn-sb-db DB --no-cache --json`` in its own process: clean on A (exit 0),
  broken on B (exit 3), broken on A over the clean providers (exit 3, nothing written, the skipped chassis'
  providers left as they were).
- ``side``: the CLI's clean sync (on A, from the database) and broken sync (on B, from a second ovsdb-server
  holding the same chassis with the 10 broken) started at the same moment in two processes, so that the load of a
  shared machine hits both alike: cold (``SIDE_COLD_ROUNDS``, each after deleting the providers), warm with the
  cache and without it.

Checked and reported (targets): every host of a synced chassis has on B exactly the providers (names, UUIDs,
parents, traits, inventories) it has on A after the clean run, every skipped one has none; 13 skipped lines, each
skipped chassis the subject of exactly one; exit 3; wall time broken ÷ clean ≤ 1.10 (medians of each phase).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import (BenchError, Column, Context, HttpCounter, Section, Table, Target, cpu_seconds, loadavg,
                          progress, server_cpu_seconds)
from bench.ovn_sb import SouthboundDB
from bench.workload import host_name, make_roots
from bench.sync_ovn_bench import PROVIDERS_PER_HOST, chassis_table

BW = "br-phys0:10000000:10000000;br-phys1:10000000:10000000"
# pairs of runs (clean, broken) per warm phase; the cached warm run is short (19 calls) and its seconds move with the
# machine's load from one second to the next, so it gets more pairs
WARM_ROUNDS = int(os.environ.get("BENCH_OVN_ISOLATION_WARM_ROUNDS", "15"))
NOCACHE_ROUNDS = int(os.environ.get("BENCH_OVN_ISOLATION_NOCACHE_ROUNDS", "3"))
TIME_RATIO_MAX = 1.10
READERS = 4  # threads reading the trees for the comparison (not timed)


def _cms(host: str, bw: str = BW, hyp: str | None = None, inv: str | None = None) -> str:
    return (f"resource_provider_bandwidths={bw},"
            + (f"resource_provider_inventory_defaults={inv}," if inv else "")
            + f"resource_provider_hypervisors={hyp or f'br-phys0:{host};br-phys1:{host}'}")


def broken_chassis(n: int) -> dict[str, dict]:
    """chassis name → {kind, other_config (the keys that replace the clean ones), partner (collision) or None,
    what (how it is broken)}."""
    if n < 20:
        raise BenchError("the isolation benchmark needs at least 20 chassis")
    pos = [k * n // 10 + 1 for k in range(1, 10)] + [n]
    h = host_name
    kinds = [
        ("collision", "resource_provider_hypervisors names the next chassis's hypervisor for br-phys0",
         lambda i: {"ovn-cms-options": _cms(h(i), hyp=f"br-phys0:{h(i + 1)};br-phys1:{h(i)}")}, 1),
        ("unparseable bandwidths", "resource_provider_bandwidths with 4 fields for br-phys0",
         lambda i: {"ovn-cms-options": _cms(h(i), bw="br-phys0:10000000:10000000:5;br-phys1:10000000:10000000")}, 0),
        ("refused inventory", "resource_provider_inventory_defaults reserved:20000000 (> total 10000000)",
         lambda i: {"ovn-cms-options": _cms(h(i), inv="reserved:20000000")}, 0),
        ("collision", "resource_provider_hypervisors names the next chassis's hypervisor for br-phys1",
         lambda i: {"ovn-cms-options": _cms(h(i), hyp=f"br-phys0:{h(i)};br-phys1:{h(i + 1)}")}, 1),
        ("unparseable bandwidths", "resource_provider_bandwidths with a rate 'ten'",
         lambda i: {"ovn-cms-options": _cms(h(i), bw="br-phys0:ten:10000000;br-phys1:10000000:10000000")}, 0),
        ("refused inventory", "resource_provider_inventory_defaults step_size:0",
         lambda i: {"ovn-cms-options": _cms(h(i), inv="step_size:0")}, 0),
        ("collision", "resource_provider_hypervisors names the next chassis's hypervisor for both bridges",
         lambda i: {"ovn-cms-options": _cms(h(i), hyp=f"br-phys0:{h(i + 1)};br-phys1:{h(i + 1)}")}, 1),
        ("unparseable bandwidths", "resource_provider_bandwidths with br-phys0 twice",
         lambda i: {"ovn-cms-options": _cms(h(i), bw="br-phys0:10000000:10000000;br-phys0:1000000:1000000")}, 0),
        ("unparseable bridge mappings", "ovn-bridge-mappings with physnet0 twice",
         lambda i: {"ovn-bridge-mappings": "physnet0:br-phys0,physnet0:br-phys1"}, 0),
        ("unparseable hypervisors", "resource_provider_hypervisors with ';' typed for ':'",
         lambda i: {"ovn-cms-options": _cms(h(i), hyp=f"br-phys0:{h(i)};br-phys1;{h(i)}")}, 0),
    ]
    out = {}
    for i, (kind, what, other, partner) in zip(pos, kinds):
        out[f"chassis-{i:04d}"] = {"kind": kind, "what": what, "other_config": other(i), "host": h(i),
                                   "partner": f"chassis-{i + partner:04d}" if partner else None}
    names = set(out) | {b["partner"] for b in out.values() if b["partner"]}
    if len(names) != 13:
        raise BenchError(f"N={n}: broken chassis and collision partners overlap: {sorted(names)}")
    return out


def clean_rows(n: int) -> list[tuple[str, str, dict[str, str]]]:
    """(name, hostname, other_config) of bench/sync_ovn_bench.py's chassis (chassis-0001 on compute-0001 ...)."""
    return [(name, hostname, dict(other[1])) for name, hostname, other in chassis_table(n)["data"]]


# ---------------------------------------------------------------- runs

class SB:
    """The southbound database and which options it holds now (clean or broken)."""

    def __init__(self, db: SouthboundDB, rows, broken):
        self.db = db
        self.clean = {name: {k: other[k] for k in ("ovn-bridge-mappings", "ovn-cms-options")}
                      for name, _host, other in rows if name in broken}
        self.broken = {name: b["other_config"] for name, b in broken.items()}
        self.state = "clean"

    def use(self, state: str) -> None:
        if state != self.state:
            self.db.set_other_config(self.clean if state == "clean" else self.broken)
            self.state = state


def sync_run(server, sb: SB, case: str, phase: str, round_: int, cache_file: Path | None) -> tuple[dict, object]:
    """One timed ``provider sync`` in-process (the CLI's usecase): the southbound read with ovn-sbctl, the plan,
    the writes."""
    from minbw.usecases import providers
    from minbw.usecases.cloud import NO_CACHE, Cache, Cloud

    sb.use(case)
    cloud = Cloud(server.connect)
    cloud.conn.placement.get("/", microversion="1.0")  # load the client's code paths; not counted
    api = cloud.placement
    counter = HttpCounter(cloud.conn.session.session)
    request = providers.ProvidersRequest(ovn=providers.OvnSources(southbound=True, sb_db=sb.db.db),
                                         cache=Cache.at(str(cache_file)) if cache_file else NO_CACHE, workers=4)
    load0, c0, s0 = loadavg(), cpu_seconds(), server_cpu_seconds(server)
    t0 = time.perf_counter()
    result = providers.sync(cloud, request)
    seconds = time.perf_counter() - t0
    client_cpu, server_cpu, load1 = cpu_seconds() - c0, server_cpu_seconds(server) - s0, loadavg()
    counter.detach()
    if api.calls != counter.total:
        raise BenchError(f"{case} {phase}: the client counted {api.calls} calls, the HTTP hook {counter.total}")
    row = {"round": round_, "case": case, "phase": phase, "seconds": seconds, "calls": counter.total,
           "gets": counter.gets, "writes": counter.writes, "skipped": len(result.skipped),
           "warnings": len(result.warnings), "client_cpu_s": client_cpu, "server_cpu_s": server_cpu,
           "load_start": load0, "load_end": load1, "summary": result.summary}
    progress(f"{case} {phase} (round {round_}): {seconds:.1f} s, {counter.total} calls, {counter.writes} writes, "
             f"{len(result.skipped)} skipped; load {load0}→{load1}; {result.summary}")
    return row, result


def cli_run(server, sb: SB, case: str, where: str) -> dict:
    """``minbw provider sync --ovn-sb-db DB --no-cache --json`` in its own process."""
    sb.use(case)
    argv = [sys.executable, "-m", "minbw.cli", "provider", "sync", "--ovn-sb-db", sb.db.db, "--no-cache", "--json"]
    load0 = loadavg()
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=server.env(), timeout=1800)
    seconds = time.perf_counter() - t0
    lines = [x for x in done.stderr.splitlines() if x.startswith("minbw: skipped: ")]
    try:
        doc = json.loads(done.stdout)
    except ValueError:
        doc = None
    progress(f"CLI {case} on {where}: exit {done.returncode}, {seconds:.1f} s, {len(lines)} skipped lines; "
             f"load {load0}→{loadavg()}")
    return {"case": case, "placement": where, "argv": " ".join(argv[1:]), "exit": done.returncode,
            "seconds": seconds, "load_start": load0, "load_end": loadavg(), "skipped_lines": lines,
            "stderr": done.stderr, "result": doc}


# ---------------------------------------------------------------- checks

def all_trees(server, hosts: list[str]) -> dict[str, dict]:
    """host → {uuid: (name, parent, traits, inventories)} of every provider under its root (generations out)."""
    from minbw.placement.client import Placement
    api = Placement(server.connect())
    provs = api.list_providers()
    root_name = {p.uuid: p.name for p in provs if p.parent_uuid is None}
    children = [p for p in provs if p.parent_uuid is not None]

    def read(p):
        return p, sorted(api.get_provider_traits(p.uuid)[0]), api.get_inventories(p.uuid)[0]
    with ThreadPoolExecutor(max_workers=READERS) as pool:
        details = list(pool.map(read, children))
    trees: dict[str, dict] = {h: {} for h in hosts}
    for p, traits, invs in details:
        trees.setdefault(root_name.get(p.root_uuid, f"? {p.root_uuid}"), {})[p.uuid] = (p.name, p.parent_uuid,
                                                                                      traits, invs)
    return trees


def delete_agent_providers(server) -> int:
    """Every provider below the compute roots, devices first (resets a Placement for another cold run)."""
    from minbw.placement.client import Placement
    api = Placement(server.connect())
    provs = [p for p in api.list_providers() if p.parent_uuid is not None]
    devices = [p.uuid for p in provs if p.parent_uuid != p.root_uuid]
    agents = [p.uuid for p in provs if p.parent_uuid == p.root_uuid]
    with ThreadPoolExecutor(max_workers=READERS) as pool:
        list(pool.map(api.delete_provider, devices))
        list(pool.map(api.delete_provider, agents))
    return len(provs)


def compare_trees(clean: dict, broken: dict, skipped_hosts: set[str]) -> dict:
    same, differ, not_empty = [], [], []
    for host, tree in clean.items():
        if host in skipped_hosts:
            (not_empty if broken.get(host) else same).append(host)
        elif broken.get(host) == tree and len(tree) == PROVIDERS_PER_HOST:
            same.append(host)
        else:
            differ.append({"host": host, "clean": tree, "broken": broken.get(host)})
    return {"hosts": len(clean), "synced_identical": len([h for h in same if h not in skipped_hosts]),
            "skipped_empty": len([h for h in same if h in skipped_hosts]), "differ": differ[:5],
            "differ_count": len(differ), "skipped_not_empty": not_empty}


def named(lines: list[str], expected: set[str], prefix: str = "") -> dict:
    """Per chassis: in how many skipped lines it is the subject (the line starts with it), and in how many it is
    mentioned at all (a collision's line names its partner too)."""
    bodies = [x[len(prefix):] if prefix and x.startswith(prefix) else x for x in lines]
    subjects: dict[str, int] = {}
    for b in bodies:
        if b.startswith("chassis "):
            name = b.split(" ", 2)[1]
            subjects[name] = subjects.get(name, 0) + 1
    mentions = {c: sum(f"chassis {c} (" in b for b in bodies) for c in expected}
    return {"lines": len(lines), "subjects": subjects,
            "not_once": sorted(c for c in expected if subjects.get(c, 0) != 1),
            "unexpected": sorted(set(subjects) - expected), "mentions": mentions,
            "other_lines": [b for b in bodies if not b.startswith("chassis ")]}


def duplicate_name_check(sbdb: SouthboundDB, state_dir: Path, name: str, host: str) -> dict:
    """A second Chassis row of an existing name: refused by ovsdb-server. The same chassis given again from a file
    beside the database: both skipped, each named once (in memory, no Placement)."""
    from minbw.ops import ovn_chassis
    from minbw.usecases.providers import OvnSources
    refused = sbdb.try_sbctl("--", "--id=@e", "create", "Encap", "type=geneve", 'ip="10.255.255.254"',
                             f'chassis_name="{name}"', "--", "create", "Chassis", f'name="{name}"',
                             f'hostname="{host}"', "encaps=@e")
    path = state_dir / "duplicate-chassis.json"
    path.write_text(json.dumps([{"name": name, "hostname": host, "ovn-bridge-mappings":
                                 "physnet0:br-phys0,physnet1:br-phys1", "ovn-cms-options": _cms(host)}]))
    chassis, complete = OvnSources(files=(str(path),), southbound=True, sb_db=sbdb.db).read()
    desired = ovn_chassis.desired(chassis=chassis, complete=complete, isolate=True)
    lines = [u.skipped for u in desired.skipped]
    return {"sbctl_exit": refused.returncode, "sbctl_error": refused.stderr.strip().splitlines()[-1:],
            "chassis_read": len(chassis), "skipped_lines": lines,
            "providers_planned": len(desired.providers)}


# ---------------------------------------------------------------- the section

RUN_COLUMNS = [Column("round", "round"), Column("case", "case"), Column("phase", "run"),
               Column("seconds", "wall s", "{:.2f}"), Column("calls", "calls"), Column("writes", "writes"),
               Column("skipped", "skipped"), Column("client_cpu_s", "client CPU s", "{:.2f}"),
               Column("server_cpu_s", "server CPU s", "{:.2f}"), Column("load_start", "load start"),
               Column("load_end", "load end")]
SIDE_COLUMNS = [Column("round", "round"), Column("case", "case"), Column("phase", "run"),
                Column("seconds", "wall s", "{:.2f}"), Column("start_offset_s", "started after", "{:.3f}"),
                Column("exit", "exit"), Column("writes", "writes"), Column("skipped", "skipped lines"),
                Column("client_cpu_s", "process CPU s", "{:.2f}"), Column("load_start", "load start"),
                Column("load_end", "load end")]
RATIO_COLUMNS = [Column("phase", "run"), Column("pairs", "pairs"), Column("clean_s", "clean s (median)", "{:.2f}"),
                 Column("broken_s", "broken s (median)", "{:.2f}"), Column("ratio", "broken ÷ clean", "{:.3f}"),
                 Column("cpu_ratio", "CPU broken ÷ clean", "{:.3f}"),
                 Column("median_pair_ratio", "median of pairs", "{:.3f}"), Column("pair_ratios", "each pair"),
                 Column("load", "load (min-max)")]


def _ratio_row(phase: str, runs: list[dict]) -> dict:
    clean = [r["seconds"] for r in runs if r["case"] == "clean" and r["phase"] == phase]
    broken = [r["seconds"] for r in runs if r["case"] == "broken" and r["phase"] == phase]
    loads = [x for r in runs if r["phase"] == phase for x in (r["load_start"], r["load_end"]) if x is not None]
    c, b = statistics.median(clean), statistics.median(broken)
    cpu = {case: statistics.median(r["client_cpu_s"] + r["server_cpu_s"] for r in runs
                                   if r["case"] == case and r["phase"] == phase) for case in ("clean", "broken")}
    return {"phase": phase, "pairs": min(len(clean), len(broken)), "clean_s": c, "broken_s": b, "ratio": b / c,
            "cpu_ratio": cpu["broken"] / cpu["clean"], "clean_cpu_s": cpu["clean"], "broken_cpu_s": cpu["broken"],
            "pair_ratios": " ".join(f"{y / x:.2f}" for x, y in zip(clean, broken)),
            "median_pair_ratio": statistics.median(y / x for x, y in zip(clean, broken)),
            "load": f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"}



def side_by_side(jobs: list[dict], phase: str, round_: int) -> list[dict]:
    """``minbw provider sync --ovn-sb-db DB --json ARGS`` for each job ({case, server, db, args}) in its own process,
    all started at once (in the order given, a few ms apart), so that the machine's load hits them alike; each one's
    wall time from its own start to its exit, and its CPU (the process's, from wait4)."""
    started, procs = [], []
    load0 = loadavg()
    for j in jobs:
        out, err = tempfile.TemporaryFile(mode="w+"), tempfile.TemporaryFile(mode="w+")
        argv = [sys.executable, "-m", "minbw.cli", "provider", "sync", "--ovn-sb-db", j["db"], "--json", *j["args"]]
        started.append(time.perf_counter())
        procs.append((j, subprocess.Popen(argv, stdout=out, stderr=err, env=j["server"].env()), out, err, argv))
    ends: dict[int, tuple] = {}

    def reap(i: int, proc: subprocess.Popen) -> None:
        _pid, status, usage = os.wait4(proc.pid, 0)
        ends[i] = (time.perf_counter(), os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime)
        proc.returncode = ends[i][1]
    threads = [threading.Thread(target=reap, args=(i, p[1])) for i, p in enumerate(procs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=3600)
    rows = []
    for i, (j, _proc, out, err, argv) in enumerate(procs):
        end, code, cpu = ends[i]
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
        try:
            doc = json.loads(stdout)
        except ValueError:
            doc = {}
        lines = [x for x in stderr.splitlines() if x.startswith("minbw: skipped: ")]
        if code not in (0, 3):
            raise BenchError(f"side by side {phase}: {' '.join(argv[1:])} exited {code}: {stderr[-3000:]}")
        rows.append({"round": round_, "case": j["case"], "phase": phase, "seconds": end - started[i],
                     "start_offset_s": started[i] - started[0], "exit": code, "client_cpu_s": cpu,
                     "writes": (doc.get("result") or {}).get("writes", 0), "skipped": len(lines),
                     "summary": doc.get("summary"), "load_start": load0, "load_end": loadavg(),
                     "argv": " ".join(argv[1:])})
    progress(f"side by side {phase} (round {round_}): " + "; ".join(
        f"{r['case']} {r['seconds']:.1f} s exit {r['exit']} {r['writes']} writes {r['skipped']} skipped"
        for r in rows) + f"; load {load0}→{loadavg()}")
    return rows


def _side_ratio_row(phase: str, rows: list[dict]) -> dict:
    by_round: dict[int, dict] = {}
    for r in rows:
        if r["phase"] == phase:
            by_round.setdefault(r["round"], {})[r["case"]] = r
    pairs = [(v["clean"]["seconds"], v["broken"]["seconds"]) for _k, v in sorted(by_round.items())]
    cpu = [(v["clean"]["client_cpu_s"], v["broken"]["client_cpu_s"]) for _k, v in sorted(by_round.items())]
    loads = [x for r in rows if r["phase"] == phase for x in (r["load_start"], r["load_end"]) if x is not None]
    c, b = statistics.median(x for x, _ in pairs), statistics.median(y for _, y in pairs)
    return {"phase": phase, "pairs": len(pairs), "clean_s": c, "broken_s": b, "ratio": b / c,
            "cpu_ratio": statistics.median(y for _, y in cpu) / statistics.median(x for x, _ in cpu),
            "median_pair_ratio": statistics.median(y / x for x, y in pairs),
            "pair_ratios": " ".join(f"{y / x:.2f}" for x, y in pairs),
            "load": f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"}


PHASES = ("sequential", "cli", "side")
SIDE_COLD_ROUNDS = int(os.environ.get("BENCH_OVN_ISOLATION_SIDE_COLD_ROUNDS", "3"))
SIDE_WARM_ROUNDS = int(os.environ.get("BENCH_OVN_ISOLATION_SIDE_WARM_ROUNDS", "10"))
SIDE_NOCACHE_ROUNDS = int(os.environ.get("BENCH_OVN_ISOLATION_SIDE_NOCACHE_ROUNDS", "3"))


def run(ctx: Context) -> Section:
    """Phases (``BENCH_OVN_ISOLATION_PHASES``, comma-separated, in this order by default): ``sequential`` (the
    in-process runs one after the other), ``cli`` (the CLI's exit status and lines), ``side`` (the CLI's clean and
    broken syncs side by side, reading two southbound databases: the clean one and a second ovsdb-server holding
    the same chassis with the 10 broken)."""
    warnings.filterwarnings("ignore")
    phases = [p.strip() for p in os.environ.get("BENCH_OVN_ISOLATION_PHASES", ",".join(PHASES)).split(",")
              if p.strip()]
    if not phases or set(phases) - set(PHASES):
        raise BenchError(f"BENCH_OVN_ISOLATION_PHASES: expected some of {', '.join(PHASES)}, got {phases}")
    section = Section("sync_ovn_isolation", "ML2/OVN provider sync from a real southbound database: 10 of N "
                                            "chassis broken vs clean (issue 29: one bad host never blocks the fleet)")
    runs_table = Table("Runs (in-process providers sync --ovn-sb-db, cache on unless 'no cache')", RUN_COLUMNS)
    side_table = Table("Side by side (minbw provider sync --ovn-sb-db DB --json in two processes started at once)",
                       SIDE_COLUMNS)
    ratio_table = Table("Wall time broken ÷ clean", RATIO_COLUMNS)
    per_size = {}
    for n in ctx.sizes:
        hosts = [host_name(i) for i in range(1, n + 1)]
        rows = clean_rows(n)
        broken = broken_chassis(n)
        skipped_chassis = set(broken) | {b["partner"] for b in broken.values() if b["partner"]}
        skipped_hosts = {host_name(int(c.split("-")[1])) for c in skipped_chassis}
        expected_lines = len(skipped_chassis)
        good = n - len(skipped_hosts)
        scope = f"N={n}"
        data: dict = {"phases": phases, "broken": broken, "skipped_chassis": sorted(skipped_chassis), "runs": [],
                      "cli": [], "side": []}
        sbdb = SouthboundDB(ctx.state_dir / f"ovn-sb-{n}")
        sbdb2 = SouthboundDB(ctx.state_dir / f"ovn-sb-{n}-broken") if "side" in phases else None
        progress(f"N={n}: starting the OVN southbound ovsdb-server, writing {n} Chassis rows with ovn-sbctl")
        sbdb.start()
        srv_a = srv_b = None
        try:
            t0 = time.perf_counter()
            sbdb.create_chassis(rows)
            data["sb"] = {"db": sbdb.db, "chassis": sbdb.count(), "encaps": sbdb.count("Encap"),
                          "write_s": time.perf_counter() - t0,
                          "ovsdb_server": subprocess.run(["ovsdb-server", "--version"], capture_output=True,
                                                         text=True).stdout.splitlines()[0],
                          "ovn_sbctl": subprocess.run(["ovn-sbctl", "--version"], capture_output=True,
                                                      text=True).stdout.splitlines()[0]}
            if data["sb"]["chassis"] != n:
                raise BenchError(f"N={n}: the southbound database holds {data['sb']['chassis']} chassis")
            sb = SB(sbdb, rows, broken)
            data["duplicate_name"] = duplicate_name_check(sbdb, ctx.state_dir, rows[4][0], rows[4][1])
            progress(f"N={n}: duplicate name: {data['duplicate_name']}")
            if sbdb2 is not None:
                sbdb2.start()
                sbdb2.create_chassis([(name, host, {**other, **broken[name]["other_config"]} if name in broken
                                       else other) for name, host, other in rows])
                data["sb_broken_copy"] = {"db": sbdb2.db, "chassis": sbdb2.count()}

            progress(f"N={n}: starting two Placements (A: clean, B: broken), {n} compute roots each")
            srv_a = ctx.servers.start(f"ovn-iso-n{n}-clean")
            make_roots(srv_a, hosts)
            srv_b = ctx.servers.start(f"ovn-iso-n{n}-broken")
            make_roots(srv_b, hosts)
            where = {"clean": srv_a, "broken": srv_b}
            cache = {"clean": ctx.state_dir / f"ovn-iso-n{n}-clean-cache.json",
                     "broken": ctx.state_dir / f"ovn-iso-n{n}-broken-cache.json"}
            runs: list[dict] = data["runs"]
            results: dict = {}
            synced = False  # A holds the clean run's providers and B the broken run's

            def one(case, phase, round_, with_cache=True):
                row, result = sync_run(where[case], sb, case, phase, round_, cache[case] if with_cache else None)
                runs.append(row)
                results[(case, phase, round_)] = result
                return row, result

            def reset():
                progress(f"N={n}: deleting the agent and device providers of both Placements (not counted)")
                for case in ("clean", "broken"):
                    delete_agent_providers(where[case])
                    cache[case].unlink(missing_ok=True)

            def compare(key):
                progress(f"N={n}: reading and comparing every host's providers on both Placements")
                trees_a, trees_b = all_trees(srv_a, hosts), all_trees(srv_b, hosts)
                data[key] = compare_trees(trees_a, trees_b, skipped_hosts)
                progress(f"N={n}: {key}: " + json.dumps({k: v for k, v in data[key].items() if k != "differ"}))
                section.targets.append(Target(f"synced hosts identical to the clean run ({key})", scope,
                                              data[key]["synced_identical"], "==", good))
                section.targets.append(Target(f"skipped hosts without providers ({key})", scope,
                                              data[key]["skipped_empty"], "==", len(skipped_hosts)))
                return trees_a

            for phase in phases:
                if phase == "sequential":
                    if synced:
                        reset()
                    # cold, round 1: clean first
                    for case in ("clean", "broken"):
                        one(case, "cold", 1)
                    c1, b1 = results[("clean", "cold", 1)], results[("broken", "cold", 1)]
                    if c1.skipped or not c1.applied or c1.applied.failed:
                        raise BenchError(f"N={n}: the clean cold run skipped or failed something: {c1.skipped[:3]}")
                    data["lines_broken_cold"] = b1.skipped
                    data["warnings_broken_cold"] = b1.warnings
                    data["units_skipped_broken_cold"] = sum(1 for u in b1.units() if u["skipped"])
                    trees_a = compare("sequential cold 1")
                    # warm with the cache, then without, alternating which side goes first
                    for r in range(1, WARM_ROUNDS + 1):
                        for case in (("clean", "broken") if r % 2 else ("broken", "clean")):
                            one(case, "warm", r)
                    for r in range(1, NOCACHE_ROUNDS + 1):
                        for case in (("broken", "clean") if r % 2 else ("clean", "broken")):
                            one(case, "warm (no cache)", r, with_cache=False)
                    for row in runs:
                        if row["phase"] != "cold" and row["writes"]:
                            raise BenchError(f"N={n}: a warm run wrote {row['writes']} times: {row}")
                    data["warm_cache_stats"] = {c: results[(c, "warm", 1)].summary for c in ("clean", "broken")}
                    # cold, round 2: broken first
                    reset()
                    for case in ("broken", "clean"):
                        one(case, "cold", 2)
                    data["clean_trees_same_both_rounds"] = compare("sequential cold 2") == trees_a
                    names_cold = named(data["lines_broken_cold"], skipped_chassis)
                    data["named_cold"] = names_cold
                    section.targets += [
                        Target("skipped lines (in-process)", scope, names_cold["lines"], "==", expected_lines),
                        Target("skipped chassis not the subject of exactly 1 line", scope,
                               len(names_cold["not_once"]) + len(names_cold["unexpected"]), "==", 0)]
                    synced = True
                elif phase == "side":
                    side = data["side"]
                    dbs = {"clean": sbdb.db, "broken": sbdb2.db}
                    sb.use("clean")

                    def pair(ph, r, args_of):
                        order = ("clean", "broken") if r % 2 else ("broken", "clean")
                        side.extend(side_by_side([{"case": c, "server": where[c], "db": dbs[c], "args": args_of(c)}
                                                  for c in order], ph, r))
                    for r in range(1, SIDE_COLD_ROUNDS + 1):
                        if synced:
                            reset()
                        pair("cold", r, lambda c: ["--cache", str(cache[c])])
                        synced = True
                        if r == 1:
                            compare("side by side cold 1")
                    for r in range(1, SIDE_WARM_ROUNDS + 1):
                        pair("warm", r, lambda c: ["--cache", str(cache[c])])
                    for r in range(1, SIDE_NOCACHE_ROUNDS + 1):
                        pair("warm (no cache)", r, lambda c: ["--no-cache"])
                    bad = [r for r in side if r["exit"] != {"clean": 0, "broken": 3}[r["case"]]
                           or r["skipped"] != {"clean": 0, "broken": expected_lines}[r["case"]]
                           or (r["phase"] != "cold" and r["writes"])]
                    section.targets.append(Target("side-by-side runs with a wrong exit, line count or writes", scope,
                                                  len(bad), "==", 0))
                    data["side_bad"] = bad[:5]
                elif phase == "cli":
                    if not synced:
                        raise BenchError("the cli phase needs the Placements synced first (sequential or side)")
                    before = all_trees(srv_a, hosts)
                    data["cli"].append(cli_run(srv_a, sb, "clean", "A (clean providers)"))
                    data["cli"].append(cli_run(srv_b, sb, "broken", "B (broken run's providers)"))
                    data["cli"].append(cli_run(srv_a, sb, "broken", "A (clean providers)"))
                    data["broken_over_clean_left_a_unchanged"] = all_trees(srv_a, hosts) == before
        finally:
            for srv in (srv_b, srv_a):
                if srv is not None:
                    ctx.servers.stop(srv)
            sbdb.stop()
            if sbdb2 is not None:
                sbdb2.stop()

        runs_table.rows += runs
        side_table.rows += data["side"]
        ratios = []
        if runs:
            ratios += [_ratio_row(p, runs) for p in ("cold", "warm", "warm (no cache)")]
        if data["cli"]:
            for c in data["cli"]:
                stderr = c.pop("stderr")
                c["warning_lines"] = sum(1 for x in stderr.splitlines() if x.startswith("minbw: warning: "))
                if c["exit"] not in (0, 3):
                    c["stderr_tail"] = stderr[-4000:]
                res = c.pop("result") or {}
                c["writes"] = (res.get("result") or {}).get("writes", 0)
                c["units"] = len(res.get("units", []))
                c["units_skipped"] = sum(1 for u in res.get("units", []) if u.get("skipped"))
                c["summary"] = res.get("summary")
            cli_clean, cli_broken_b, cli_broken_a = data["cli"]
            # the CLI's broken runs (the clean one has no lines: its count is a target of its own)
            names_cli = [named(c["skipped_lines"], skipped_chassis, "minbw: skipped: ") for c in data["cli"][1:]]
            data["named_cli"] = names_cli
            ratios.append({"phase": "CLI --no-cache (one each)", "pairs": 1, "clean_s": cli_clean["seconds"],
                           "broken_s": cli_broken_b["seconds"], "ratio": cli_broken_b["seconds"] / cli_clean["seconds"],
                           "cpu_ratio": None, "median_pair_ratio": None,
                           "pair_ratios": f"{cli_broken_b['seconds'] / cli_clean['seconds']:.2f}",
                           "load": f"{min(cli_clean['load_start'], cli_broken_b['load_start']):.1f}-"
                                   f"{max(cli_clean['load_end'], cli_broken_b['load_end']):.1f}"})
            section.targets += [
                Target("CLI exit, clean", scope, cli_clean["exit"], "==", 0),
                Target("CLI exit, broken on B", scope, cli_broken_b["exit"], "==", 3),
                Target("CLI exit, broken over clean (A)", scope, cli_broken_a["exit"], "==", 3),
                Target("CLI skipped lines, clean", scope, len(cli_clean["skipped_lines"]), "==", 0),
                Target("CLI skipped lines, broken on B", scope, names_cli[0]["lines"], "==", expected_lines),
                Target("CLI chassis not named exactly once, broken on B", scope,
                       len(names_cli[0]["not_once"]) + len(names_cli[0]["unexpected"]), "==", 0),
                Target("CLI skipped lines, broken over clean (A)", scope, names_cli[1]["lines"], "==", expected_lines),
                Target("CLI chassis not named exactly once, broken over clean (A)", scope,
                       len(names_cli[1]["not_once"]) + len(names_cli[1]["unexpected"]), "==", 0),
                Target("CLI writes, broken over clean (A)", scope, cli_broken_a["writes"], "==", 0),
                Target("CLI broken over clean: Placement A unchanged", scope,
                       int(data["broken_over_clean_left_a_unchanged"]), "==", 1)]
        if data["side"]:
            ratios += [{**_side_ratio_row(p, data["side"]), "phase": f"{p}, side by side"}
                       for p in ("cold", "warm", "warm (no cache)")]
        ratio_table.rows += ratios
        section.targets += [Target(f"wall time broken ÷ clean, {r['phase']}", scope, round(r["ratio"], 3), "<=",
                                   TIME_RATIO_MAX) for r in ratios if not r["phase"].startswith("CLI")]
        data["ratios"] = ratios
        per_size[n] = data
        progress(f"N={n}: done; ratios " + ", ".join(f"{r['phase']} {r['ratio']:.3f}" for r in ratios))
    section.tables = [t for t in (runs_table, side_table, ratio_table) if t.rows]
    section.data["sizes"] = per_size
    section.notes.append(
        "Broken: 10 chassis (3 hypervisor typos colliding with the next chassis, 3 bandwidths, 2 refused "
        "inventories, 1 bridge mappings, 1 hypervisors that do not parse); the 3 collision partners are skipped "
        "too (both describe one bridge provider), so 13 lines and 13 hosts without writes. Trees compared for "
        "every host (names, UUIDs, parents, traits, inventories).")
    return section
