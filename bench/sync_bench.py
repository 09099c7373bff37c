"""Issue 2: provider sync for N hosts, minbw vs Neutron's own algorithm, against the same Placement.

Per size N and per system, a fresh embedded Placement (``minbw placement serve``) gets the N
compute-node root providers first (as nova-compute creates them; not counted), then:

- cold: the agents' providers do not exist yet;
- warm: the same run again, everything already in place.

minbw: every host's two agent ini files → one ``desired_state`` → one ``sync()`` as ``minbw provider sync``
runs it by default: the provider cache on (no safety check due: the cold run confirmed every entry less than
``DEFAULT_CACHE_CHECK_INTERVAL`` ago) and ``DEFAULT_WORKERS`` host trees written at once. Its warm run is also
measured with the safety check due (``--cache-check-interval 0``, as a sync an hour or more after the last one)
and, on request, without the cache (``--no-cache``), for comparison.
Neutron: for every host and agent, what the placement plugin does on each agent heartbeat
after a (re)start: root look-ups by hypervisor name, then ``PlacementState.deferred_sync()``
executed call by call with neutron-lib's ``PlacementAPIClient`` (tests/support/oracle/neutron_sync.py).

Both read the same generated ini files; timing covers reading and parsing them too.
Correctness is checked inside the run, not counted: the trees of a sample of hosts are equal
on both servers, minbw's plan against Neutron's result is empty for every host, and minbw's
warm run writes nothing. Any failure raises :class:`BenchError`.
"""
from __future__ import annotations

import random
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import (BenchError, Column, Context, HttpCounter, Section, Table, Target, cpu_seconds, loadavg,
                          progress, server_cpu_seconds)
from bench.workload import dump, host_name, make_roots, restore, write_agent_files

SAMPLE = 10   # hosts whose trees are compared between the two servers

COLD_CALLS_MAX_RATIO = 1 / 3
WARM_SPEEDUP_MIN = 10.0
COLD_SPEEDUP_MIN = 3.0
# with the raw peer (--sync-peer raw; issue 32's 10,000-host goals)
RAW_THROUGHPUT_MIN = 0.9     # minbw's cold writes per second ÷ the same writes replayed raw
WARM_WALL_MAX_S = 2.0        # minbw's warm run (cache on: one listing)
PEAK_RSS_MAX_MIB = 1024      # the peak RSS of the process running minbw's sync


@dataclass
class Run:
    system: str
    phase: str
    hosts: int
    seconds: float          # wall clock, perf_counter
    calls: int
    gets: int
    writes: int
    http_seconds: float     # sum of response.elapsed: waiting on the server
    client_cpu: float       # CPU time of this (client) process
    server_cpu: float       # CPU time of the Placement process
    load: float | None = None
    kinds: dict[str, dict] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    def row(self, n: int) -> dict:
        return {"n": n, "system": self.system, "phase": self.phase,
                "calls_per_host": self.calls / n, "gets_per_host": self.gets / n,
                "writes_per_host": self.writes / n, "s_per_host": self.seconds / n,
                "http_s_per_host": self.http_seconds / n,
                "cpu_s_per_host": (self.client_cpu + self.server_cpu) / n,
                "ms_per_call": 1000 * self.seconds / self.calls if self.calls else None,
                "seconds": self.seconds, "calls": self.calls, "writes": self.writes,
                "http_seconds": self.http_seconds, "client_cpu_s": self.client_cpu,
                "server_cpu_s": self.server_cpu, "loadavg": self.load, **self.extra}


class _Meter:
    """Wall clock, client CPU and server CPU around one run (the server's: every process serving it, as
    bench.common.server_cpu_seconds counts them: prod's uWSGI master, workers and MariaDB; galera's two uWSGI
    masters and workers, HAProxy and the three MariaDB nodes; before 2026-11-28 only ``server.proc.pid``, which on
    prod is uWSGI's master alone)."""

    def __init__(self, server):
        self.server = server

    def __enter__(self):
        self.t, self.c, self.s = time.perf_counter(), cpu_seconds(), server_cpu_seconds(self.server)
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t
        self.client_cpu = cpu_seconds() - self.c
        self.server_cpu = server_cpu_seconds(self.server) - self.s


def _status_mib() -> dict[str, float]:
    import re
    status = Path("/proc/self/status").read_text()
    return {k: int(v) / 1024 for k, v in re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", status, re.M)}


def reset_peak_rss() -> float:
    """Collect garbage and reset this process's peak RSS (VmHWM) to its RSS now (``/proc/self/clear_refs``, 5);
    the RSS now (MiB)."""
    import gc
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return _status_mib()["VmRSS"]


class _Recorder:
    """Every write (not GET) an openstacksdk session sends, in order, to a JSON-lines file: method, path, the
    microversion header and the body (a requests ``response`` hook, as HttpCounter; the file keeps them out of
    the process's memory)."""

    def __init__(self, requests_session, path: Path):
        import threading
        self._session, self.path = requests_session, path
        self._f = path.open("w")
        self._lock = threading.Lock()
        requests_session.hooks["response"].append(self._hook)

    def _hook(self, resp, *args, **kwargs):
        import json
        req = resp.request
        if req.method == "GET":
            return
        body = req.body.decode() if isinstance(req.body, bytes) else req.body
        line = json.dumps({"m": req.method, "p": req.path_url, "v": req.headers.get("OpenStack-API-Version"),
                           "b": body, "s": resp.status_code})
        with self._lock:
            self._f.write(line + "\n")

    def detach(self) -> None:
        try:
            self._session.hooks["response"].remove(self._hook)
        except ValueError:
            pass
        self._f.close()


# ---------------------------------------------------------------- the two systems

def run_minbw(server, files: dict[str, list[Path]], phase: str,
              cache_file: Path | None = None, record: Path | None = None,
              check_interval: float | None = None) -> tuple[Run, object, object, object]:
    """minbw's sync of ``files``, with the cache in ``cache_file`` (None: without) and its ``check_interval``
    (None: ``minbw provider sync``'s default)."""
    from minbw.ops.sync import DEFAULT_CACHE_CHECK_INTERVAL, ProviderCache, summary, sync_providers
    from minbw.neutron.agentconf import load_agent_ini
    from minbw.placement.client import Placement
    from minbw.neutron.provider_tree import desired_state

    conn = server.connect()
    conn.placement.get("/", microversion="1.0")    # load the client's code paths; not counted
    counter = HttpCounter(conn.session.session)
    recorder = _Recorder(conn.session.session, record) if record else None
    api = Placement(conn)                            # fresh: discovers the server's version, as a CLI run does
    step = 500 if len(files) <= 1000 else 10000

    def every_500(step_name, done, total):
        if done % step == 0:
            progress(f"minbw {phase}: {step_name} {done}/{total}")

    rss_before = reset_peak_rss()
    with _Meter(server) as m:
        t = time.perf_counter()
        configs = [load_agent_ini(p.read_text(), source=str(p)) for host in files for p in files[host]]
        desired = desired_state(configs)
        parse_s = time.perf_counter() - t
        interval = DEFAULT_CACHE_CHECK_INTERVAL if check_interval is None else check_interval
        cache = ProviderCache(cache_file, api.endpoint(), check_interval=interval) if cache_file else None
        plan, result = sync_providers(api, desired, progress=every_500, cache=cache)
    mem = _status_mib()
    counter.detach()
    if recorder:
        recorder.detach()
    line = summary(desired, plan, result, seconds=m.seconds, calls=api.calls, cache=cache)
    progress(f"minbw {phase}: {line}")
    if api.calls != counter.total:
        raise BenchError(f"minbw {phase}: the client counted {api.calls} calls, the HTTP hook {counter.total}")
    if result is not None and result.writes != counter.writes:
        raise BenchError(f"minbw {phase}: {result.writes} writes applied but {counter.writes} write calls seen")
    progress(f"minbw {phase}: this process's RSS {rss_before:.0f} MiB before, peak {mem['VmHWM']:.0f} MiB during")
    run_ = Run("minbw", phase, len(files), m.seconds, counter.total, counter.gets, counter.writes,
               counter.http_seconds, m.client_cpu, m.server_cpu, loadavg(), counter.kinds(),
               {"parse_desired_s": parse_s, "summary": line, "rss_before_mib": rss_before,
                "peak_rss_mib": mem["VmHWM"]})
    return run_, plan, result, cache


# runs ``python -m minbw.cli ARGS`` and, at its exit, writes its peak RSS (VmHWM) to the file $MINBW_BENCH_HWM: the
# process's own high-water mark (getrusage's ru_maxrss of a child spawned by a large process starts at that
# process's RSS: vfork then exec keeps it)
_CLI_WITH_HWM = ("import atexit, os, runpy, re, sys\n"
                 "def hwm():\n"
                 "    with open(os.environ['MINBW_BENCH_HWM'], 'w') as f:\n"
                 "        f.write(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1))\n"
                 "atexit.register(hwm)\n"
                 "sys.argv[0] = 'minbw'\n"
                 "runpy.run_module('minbw.cli', run_name='__main__', alter_sys=True)\n")


def run_cli(server, files: dict[str, list[Path]], phase: str, cache_file: Path) -> Run:
    """``minbw provider sync --cache FILE --agent-config FILE...`` with every agent file after one option (as a
    shell glob gives them), as a user runs it: a process of its own (Python's start and imports counted), its
    default output (a table: the summary line; ``--json`` would list every provider), its CPU (``wait4``'s rusage)
    and peak RSS (VmHWM, read by the process at its exit) its own, its calls and writes from its summary line."""
    import os
    import re
    import subprocess
    import sys
    import tempfile

    args = [sys.executable, "-c", _CLI_WITH_HWM, "provider", "sync", "--cache", str(cache_file), "--agent-config"]
    args += [str(p) for host in files for p in files[host]]
    with tempfile.TemporaryDirectory() as tmp, _Meter(server) as m:
        hwm, out, err = Path(tmp, "hwm"), Path(tmp, "out"), Path(tmp, "err")
        with out.open("wb") as o, err.open("wb") as e:
            proc = subprocess.Popen(args, stdout=o, stderr=e, env={**server.env(), "MINBW_BENCH_HWM": str(hwm)})
            _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        stdout, stderr = out.read_text(), err.read_text()
        peak = int(hwm.read_text()) / 1024 if hwm.exists() else float("nan")
    if proc.returncode != 0:
        raise BenchError(f"minbw {phase}: `minbw provider sync` exited {proc.returncode}: {stderr[-2000:]}")
    summary = stdout.strip().splitlines()[-1]
    calls = int(re.search(r"(\d+) calls", summary).group(1))
    writes = int(re.search(r"\((\d+) writes", summary).group(1))
    progress(f"minbw {phase}: {summary}")
    progress(f"minbw {phase}: the process's peak RSS {peak:.0f} MiB")
    return Run("minbw", phase, len(files), m.seconds, calls, calls - writes, writes, 0.0,
               usage.ru_utime + usage.ru_stime, m.server_cpu, loadavg(), {},
               {"summary": summary, "peak_rss_mib": peak, "process": "own"})


def run_neutron(server, files: dict[str, list[Path]], phase: str) -> Run:
    from tests.support.oracle.neutron_sync import agent_from_ini, neutron_client, neutron_sync

    client = neutron_client(server.url)
    client.list_resource_providers(name="warm-up")  # load the client's code paths; not counted
    counter = HttpCounter(client._client.session)
    n = len(files)
    every = max(10, n // 10)
    with _Meter(server) as m:
        for i, (host, paths) in enumerate(files.items(), 1):
            for path in paths:
                neutron_sync(client, *agent_from_ini(path.read_text(), host))
            if i % every == 0 and i < n:
                progress(f"neutron {phase}: {i}/{n} hosts, {counter.total} calls")
    counter.detach()
    return Run("neutron", phase, n, m.seconds, counter.total, counter.gets, counter.writes,
               counter.http_seconds, m.client_cpu, m.server_cpu, loadavg(), counter.kinds())


def run_raw(server, record: Path, workers: int) -> Run:
    """The writes minbw's cold run made (``record``, in order), sent again raw through openstacksdk's placement
    adapter to ``server`` (a fresh Placement with the same roots): the calls that name no provider (traits,
    resource classes) first, one at a time, as minbw sends them; then every host tree's calls in their order,
    ``workers`` trees at once (minbw's parallelism). Bodies are sent as minbw sent them (generations included:
    the same calls on the same roots give the same generations). Any answer but minbw's status is a BenchError."""
    import json
    import re
    from concurrent.futures import ThreadPoolExecutor
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    uuid_re = re.compile(r"/resource_providers/([0-9a-f-]{36})")
    parent: dict[str, str | None] = {}
    for c in calls:
        if c["m"] == "POST" and c["p"].startswith("/resource_providers"):
            body = json.loads(c["b"])
            parent[body["uuid"]] = body.get("parent_provider_uuid")

    def tree_of(c) -> str | None:
        m = uuid_re.search(c["p"])
        u = m.group(1) if m else (json.loads(c["b"]).get("uuid") if c["m"] == "POST" and c["b"] else None)
        if u is None:
            return None
        while parent.get(u):
            u = parent[u]
        return u
    first, trees = [], {}
    for c in calls:
        key = tree_of(c)
        if key is None:
            first.append(c)
        else:
            trees.setdefault(key, []).append(c)
    conn = server.connect()
    conn.placement.get("/", microversion="1.0")  # load the client's code paths; not counted
    counter = HttpCounter(conn.session.session)
    adapter = conn.placement

    def send(c):
        version = c["v"].split()[-1] if c["v"] else None
        kwargs = {"microversion": version, "raise_exc": False}
        if c["b"] is not None:
            kwargs["json"] = json.loads(c["b"])
        r = adapter.request(c["p"], c["m"], **kwargs)
        if r.status_code != c["s"]:
            raise BenchError(f"raw replay: {c['m']} {c['p']} answered {r.status_code} (minbw's: {c['s']}): "
                             f"{r.text[:300]}")

    def tree(cs):
        for c in cs:
            send(c)
    progress(f"raw: {len(calls)} writes ({len(first)} first, then {len(trees)} trees, {workers} at once)")
    with _Meter(server) as m:
        for c in first:
            send(c)
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(tree, trees.values()))
    counter.detach()
    if counter.total != len(calls):
        raise BenchError(f"raw replay: {counter.total} calls sent, {len(calls)} recorded")
    return Run("raw", "cold", len(trees), m.seconds, counter.total, counter.gets, counter.writes,
               counter.http_seconds, m.client_cpu, m.server_cpu, loadavg(), counter.kinds(),
               {"trees": len(trees), "first": len(first), "workers": workers})


# ---------------------------------------------------------------- correctness

def host_tree(api, host: str) -> dict:
    """{uuid: (name, parent, traits, inventories)} under the host's root (generations left out)."""
    found = api.list_providers(name=host)
    if not found:
        raise BenchError(f"root provider {host} missing")
    root = found[0].uuid
    return {p.uuid: (p.name, p.parent_uuid, sorted(api.get_provider_traits(p.uuid)[0]), api.get_inventories(p.uuid)[0])
            for p in api.list_providers(in_tree=root) if p.uuid != root}


def sample_hosts(hosts: list[str], seed: int) -> list[str]:
    if len(hosts) <= SAMPLE:
        return list(hosts)
    middle = random.Random(seed).sample(hosts[1:-1], SAMPLE - 2)
    return [hosts[0]] + sorted(middle) + [hosts[-1]]


def check_same_trees(minbw_server, neutron_server, hosts: list[str], seed: int, when: str) -> int:
    from minbw.placement.client import Placement
    a, b = Placement(minbw_server.connect()), Placement(neutron_server.connect())
    checked = sample_hosts(hosts, seed)
    for host in checked:
        ours, theirs = host_tree(a, host), host_tree(b, host)
        if ours != theirs:
            only_ours = sorted(set(ours) - set(theirs))
            only_theirs = sorted(set(theirs) - set(ours))
            differ = sorted(u for u in set(ours) & set(theirs) if ours[u] != theirs[u])
            raise BenchError(
                f"{when}: the provider trees of {host} differ between minbw's and Neutron's result: "
                f"only minbw {only_ours}, only Neutron {only_theirs}, different "
                + "; ".join(f"{u}: minbw {ours[u]} / Neutron {theirs[u]}" for u in differ[:3]))
        if len(ours) != 6:
            raise BenchError(f"{when}: {host} has {len(ours)} agent/device providers, expected 6: {ours}")
    return len(checked)


def check_minbw_plan_empty(neutron_server, files: dict[str, list[Path]]) -> None:
    """minbw's desired state for every host against Neutron's result: nothing to write."""
    from minbw.ops.sync import sync_providers
    from minbw.neutron.agentconf import load_agent_ini
    from minbw.placement.client import Placement
    from minbw.neutron.provider_tree import desired_state
    configs = [load_agent_ini(p.read_text(), source=str(p)) for host in files for p in files[host]]
    plan, _ = sync_providers(Placement(neutron_server.connect()), desired_state(configs), check=True)
    if plan.ops or plan.kept:
        raise BenchError(f"minbw would change Neutron's result ({len(plan.ops)} writes), e.g. "
                         + "; ".join(str(op) for op in plan.ops[:5]))


# ---------------------------------------------------------------- the section

RUN_COLUMNS = [
    Column("n", "N hosts"), Column("system", "system"), Column("phase", "run"),
    Column("calls_per_host", "calls/host", "{:.2f}"), Column("gets_per_host", "GETs/host", "{:.2f}"),
    Column("writes_per_host", "writes/host", "{:.2f}"), Column("s_per_host", "s/host", "{:.4f}"),
    Column("http_s_per_host", "waiting s/host", "{:.4f}"), Column("cpu_s_per_host", "CPU s/host", "{:.4f}"),
    Column("ms_per_call", "ms/call", "{:.2f}"), Column("seconds", "total s", "{:.1f}"), Column("loadavg", "load"),
]
RATIO_COLUMNS = [
    Column("n", "N hosts"),
    Column("cold_calls_ratio", "calls cold minbw/Neutron", "{:.3f}"),
    Column("warm_calls_ratio", "calls warm minbw/Neutron", "{:.3f}"),
    Column("cold_speedup", "cold speed-up Neutron/minbw", "{:.1f}×"),
    Column("warm_speedup", "warm speed-up Neutron/minbw", "{:.1f}×"),
    Column("warm_cpu_ratio", "warm CPU Neutron/minbw", "{:.1f}×"),
    Column("warm_writes", "minbw warm writes", "{}"),
    Column("warm_calls", "minbw warm calls (all hosts)", "{}"),
    Column("warm_nocache_speedup", "warm --no-cache speed-up Neutron/minbw", "{:.1f}×"),
    Column("warm_nocache_calls", "warm --no-cache calls/host", "{:.2f}"),
]


def kinds_table(n: int, runs: dict[tuple[str, str], Run]) -> Table:
    order = [k for k in [("minbw", "cold"), ("minbw", "warm"), ("minbw", "warm (check due)"),
                         ("minbw", "warm (no cache)"), ("neutron", "cold"),
                         ("neutron", "warm"), ("raw", "cold")] if k in runs]
    kinds: list[str] = []
    for key in order:
        kinds += [k for k in runs[key].kinds if k not in kinds]

    def per_host(r, k):
        return r.kinds.get(k, {}).get("calls", 0) / n
    rows = [{"kind": k, **{f"{s}_{p}": per_host(runs[(s, p)], k) for s, p in order}} for k in kinds]
    rows.append({"kind": "total", **{f"{s}_{p}": runs[(s, p)].calls / n for s, p in order}})
    return Table(f"Calls per host by kind (N={n})",
                 [Column("kind", "call")] + [Column(f"{s}_{p}", f"{s} {p}", "{:.3g}") for s, p in order], rows)


def _dump_roots(server, path: Path) -> bool:
    """prod: Placement's database with the roots only, for the raw peer's fresh server (bench/workload.py's
    dump); False where there is no such dump (the roots are then made again through the API)."""
    from tests.support.prodplacement.server import ProdPlacement
    if not isinstance(server, ProdPlacement):
        return False
    dump(server, path)
    return True


def run(ctx: Context) -> Section:
    warnings.filterwarnings("ignore")
    from minbw.ops.sync import DEFAULT_WORKERS
    sizes = ctx.sizes
    peer = ctx.options.get("sync_peer", "neutron")
    nocache = ctx.options.get("sync_nocache", True)
    files_all = write_agent_files(ctx.state_dir / "agents", max(sizes))
    section = Section("sync", "Provider sync: minbw vs "
                      + {"neutron": "Neutron's placement sync", "raw": "the same writes sent raw",
                         "none": "no peer (minbw's runs alone)"}[peer]
                      + " (per host: OVS agent with 2 bridges + SR-IOV agent with 2 PFs)")
    runs_table = Table("Runs (per host unless said)", RUN_COLUMNS + [
        Column("rss_before_mib", "RSS before MiB", "{:.0f}"), Column("peak_rss_mib", "peak RSS MiB", "{:.0f}")])
    ratio_table = Table("Ratios", RATIO_COLUMNS if peer == "neutron" else [
        Column("n", "N hosts"), Column("warm_writes", "minbw warm writes", "{}"),
        Column("warm_calls", "minbw warm calls (all hosts)", "{}"), Column("warm_s", "minbw warm s", "{:.2f}"),
        Column("cold_writes_per_s", "minbw cold writes/s", "{:.1f}"),
        Column("raw_writes_per_s", "raw writes/s", "{:.1f}"),
        Column("cold_throughput_ratio", "minbw ÷ raw throughput", "{:.3f}"),
        Column("peak_rss_mib", "minbw peak RSS MiB", "{:.0f}")])
    per_size: dict[int, dict] = {}
    diag_needed = ctx.diagnose == "always"
    largest = max(sizes)
    kept_server = None
    kinds_tbl: Table | None = None
    try:
        for n in sizes:
            hosts = [host_name(i) for i in range(1, n + 1)]
            files = {h: files_all[h] for h in hosts}
            runs: dict[tuple[str, str], Run] = {}

            progress(f"N={n}: starting Placement for minbw, creating {n} root providers")
            srv_m = ctx.servers.start(f"n{n}-minbw")
            t = time.perf_counter()
            make_roots(srv_m, hosts)
            progress(f"N={n}: {n} roots made in {time.perf_counter() - t:.0f} s")
            roots_dump = ctx.state_dir / f"n{n}-roots.sql.gz"
            dumped = peer == "raw" and _dump_roots(srv_m, roots_dump)
            if "placement_max_microversion" not in section.data:
                from minbw.placement.client import Placement
                section.data["placement_max_microversion"] = "%d.%d" % Placement(srv_m.connect()).max_version()
                section.notes.append(f"Placement serves microversions up to {section.data['placement_max_microversion']}.")
            progress(f"N={n}: minbw cold")
            cache_file = ctx.state_dir / f"n{n}-cache.json"  # the default: the cache on, filled by the cold run
            record = ctx.state_dir / f"n{n}-minbw-cold-writes.jsonl" if peer == "raw" else None
            runs[("minbw", "cold")], plan, result, _ = run_minbw(srv_m, files, "cold", cache_file, record)
            if not plan.ops or result is None:
                raise BenchError(f"N={n}: minbw's cold run planned nothing")
            # the default (the cache, no safety check due: everything confirmed by the cold run less than an hour
            # ago), then the same with the check due (as a sync an hour or more after the last one)
            for phase, interval in (("warm", None), ("warm (check due)", 0)):
                progress(f"N={n}: minbw {phase}")
                runs[("minbw", phase)], plan, result, cache = run_minbw(srv_m, files, phase, cache_file,
                                                                        check_interval=interval)
                if plan.ops or result is not None or runs[("minbw", phase)].writes:
                    raise BenchError(f"N={n}: minbw's {phase} run is not a no-op: {len(plan.ops)} planned, "
                                     f"{runs[('minbw', phase)].writes} write calls; e.g. "
                                     + "; ".join(str(op) for op in plan.ops[:5]))
                if cache.stats["trusted"] != 6 * n or cache.stats["reread"] or (interval == 0) != bool(cache.stats["checks"]):
                    raise BenchError(f"N={n}: minbw's {phase} run did not trust its cache as expected: {cache.stats}")
            progress(f"N={n}: minbw warm, `minbw provider sync` in a process of its own")
            runs[("minbw", "warm (CLI process)")] = run_cli(srv_m, files, "warm (CLI process)", cache_file)
            # the first CLI run parsed the files and kept their desired state beside the cache; the second reuses it
            from minbw.cache.desired import memo_path
            if not memo_path(cache_file).exists():
                raise BenchError(f"N={n}: minbw's warm CLI run kept no desired state beside {cache_file}")
            progress(f"N={n}: minbw warm, `minbw provider sync` in a process of its own, the files unchanged since")
            runs[("minbw", "warm (CLI process, files unchanged)")] = run_cli(
                srv_m, files, "warm (CLI process, files unchanged)", cache_file)
            if runs[("minbw", "warm (CLI process)")].writes or runs[("minbw", "warm (CLI process, files unchanged)")].writes:
                raise BenchError(f"N={n}: minbw's warm CLI run wrote")
            if nocache:
                progress(f"N={n}: minbw warm without the cache (--no-cache)")
                runs[("minbw", "warm (no cache)")], plan, result, _ = run_minbw(srv_m, files, "warm (no cache)")
                if plan.ops or result is not None or runs[("minbw", "warm (no cache)")].writes:
                    raise BenchError(f"N={n}: minbw's warm run without the cache is not a no-op")

            sampled = 0
            if peer == "neutron":
                progress(f"N={n}: starting Placement for Neutron, creating {n} root providers")
                srv_n = ctx.servers.start(f"n{n}-neutron")
                make_roots(srv_n, hosts)
                progress(f"N={n}: Neutron cold")
                runs[("neutron", "cold")] = run_neutron(srv_n, files, "cold")
                progress(f"N={n}: checking: sample trees equal, minbw's plan against Neutron's result empty")
                sampled = check_same_trees(srv_m, srv_n, hosts, ctx.seed, f"N={n} after both cold runs")
                check_minbw_plan_empty(srv_n, files)
                progress(f"N={n}: Neutron warm")
                runs[("neutron", "warm")] = run_neutron(srv_n, files, "warm")
                check_same_trees(srv_m, srv_n, hosts, ctx.seed + 1, f"N={n} after Neutron's warm run")
                ctx.servers.stop(srv_n)
            elif peer == "raw":
                srv_r = ctx.servers.start(f"n{n}-raw")
                if dumped:
                    progress(f"N={n}: the raw peer's server: loading the roots' database ({roots_dump.name})")
                    restore(srv_r, roots_dump)
                else:
                    progress(f"N={n}: the raw peer's server: creating {n} root providers")
                    make_roots(srv_r, hosts)
                progress(f"N={n}: raw: minbw's cold writes replayed, {DEFAULT_WORKERS} trees at once")
                runs[("raw", "cold")] = run_raw(srv_r, record, DEFAULT_WORKERS)
                sampled = check_same_trees(srv_m, srv_r, hosts, ctx.seed, f"N={n} after minbw's and the raw cold runs")
                ctx.servers.stop(srv_r)

            for (system, phase), r in runs.items():
                runs_table.rows.append(r.row(n))
            mc, mw = runs[("minbw", "cold")], runs[("minbw", "warm")]
            # the sync's peak: the cold run's in this process (an upper bound: the bench's own data is in it), and
            # a warm `minbw provider sync` in a process of its own (this process's warm peaks still hold the cold
            # run's plan)
            peak = max(runs[("minbw", "cold")].extra["peak_rss_mib"],
                       runs[("minbw", "warm (CLI process)")].extra["peak_rss_mib"],
                       runs[("minbw", "warm (CLI process, files unchanged)")].extra["peak_rss_mib"])
            if peer == "neutron":
                nc, nw = runs[("neutron", "cold")], runs[("neutron", "warm")]
                ratios = {"n": n, "cold_calls_ratio": mc.calls / nc.calls, "warm_calls_ratio": mw.calls / nw.calls,
                          "cold_speedup": nc.seconds / mc.seconds, "warm_speedup": nw.seconds / mw.seconds,
                          "warm_cpu_ratio": (nw.client_cpu + nw.server_cpu) / (mw.client_cpu + mw.server_cpu),
                          "warm_writes": mw.writes, "warm_calls": mw.calls}
                if nocache:
                    mwn = runs[("minbw", "warm (no cache)")]
                    ratios.update(warm_nocache_speedup=nw.seconds / mwn.seconds, warm_nocache_calls=mwn.calls / n)
                section.targets += [
                    Target("cold calls/host minbw ÷ Neutron", f"N={n}", ratios["cold_calls_ratio"], "<=",
                           round(COLD_CALLS_MAX_RATIO, 3)),
                    Target("warm writes (minbw)", f"N={n}", mw.writes, "==", 0),
                    Target("warm speed-up Neutron ÷ minbw", f"N={n}", ratios["warm_speedup"], ">=",
                           WARM_SPEEDUP_MIN, "×"),
                    Target("cold speed-up Neutron ÷ minbw", f"N={n}", ratios["cold_speedup"], ">=",
                           COLD_SPEEDUP_MIN, "×"),
                ]
                if ratios["warm_speedup"] < WARM_SPEEDUP_MIN and ctx.diagnose == "auto":
                    diag_needed = True
            else:
                ratios = {"n": n, "warm_writes": mw.writes, "warm_calls": mw.calls, "warm_s": mw.seconds,
                          "cold_writes_per_s": mc.writes / mc.seconds, "peak_rss_mib": peak}
                section.targets.append(Target("warm writes (minbw)", f"N={n}", mw.writes, "==", 0))
                if peer == "raw":
                    rc = runs[("raw", "cold")]
                    if rc.writes != mc.writes:
                        raise BenchError(f"N={n}: the raw peer sent {rc.writes} writes, minbw {mc.writes}")
                    ratios.update(raw_writes_per_s=rc.writes / rc.seconds,
                                  cold_throughput_ratio=rc.seconds / mc.seconds)
                    section.targets += [
                        Target("cold throughput minbw ÷ the same writes raw", f"N={n}",
                               round(ratios["cold_throughput_ratio"], 3), ">=", RAW_THROUGHPUT_MIN),
                        Target("warm wall (minbw, cache on)", f"N={n}", round(mw.seconds, 2), "<=", WARM_WALL_MAX_S,
                               " s"),
                        Target("peak RSS of the process running minbw's sync", f"N={n}", round(peak, 1), "<=",
                               PEAK_RSS_MAX_MIB, " MiB"),
                    ]
            ratio_table.rows.append(ratios)
            per_size[n] = {"runs": {f"{s}_{p}": {**r.row(n), "kinds": r.kinds} for (s, p), r in runs.items()},
                           "ratios": ratios, "sampled_hosts_compared": sampled}
            if n == largest:
                kinds_tbl = kinds_table(n, runs)
                kept_server = srv_m
            else:
                ctx.servers.stop(srv_m)
            progress(f"N={n}: done: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                                   for k, v in ratios.items()))

        section.tables = [runs_table, ratio_table] + ([kinds_tbl] if kinds_tbl else [])
        section.data["sizes"] = per_size
        section.notes.append({
            "neutron": "Correctness checked in the run (not counted): after both cold runs and after Neutron's warm "
                       f"run, the trees of {SAMPLE} sampled hosts are equal on both servers; minbw's plan against "
                       "Neutron's result is empty for every host; minbw's warm run plans and writes nothing.",
            "raw": f"Correctness checked in the run (not counted): after both cold runs the trees of {SAMPLE} sampled "
                   "hosts are equal on both servers; every replayed write got minbw's status; minbw's warm run "
                   "plans and writes nothing and trusts its cache for every provider.",
            "none": "No peer: minbw's warm run plans and writes nothing and trusts its cache for every provider."}[peer])
        section.notes.append("RSS: this (bench) process's, which runs minbw's sync in its threads: before each minbw run "
                             "(after a garbage collection), and its peak during the run (VmHWM, reset before the run "
                             "through /proc/self/clear_refs); the bench's own data (the agent files' list, the "
                             "HTTP hook's list of calls) is in it too. The row `warm (CLI process)` is `minbw provider "
                             "sync --cache FILE --agent-config FILE...` with every agent file after one option, in a "
                             "process of its own (Python's start and imports counted), its default table output: its "
                             "CPU and peak RSS (VmHWM at its exit) are that process's, its calls and writes from its "
                             "summary line, its waiting on the server not measured (0); it parses the files and keeps their "
                             "desired state beside the cache. The row `warm (CLI process, files unchanged)` is the same "
                             "command again: the files are not parsed. The peak "
                             "target takes the largest of the cold run's peak here and those processes'.")
        if diag_needed and kept_server is not None and peer == "neutron":
            from bench import sync_diag
            progress(f"warm speed-up below {WARM_SPEEDUP_MIN:g}×: measuring where minbw's warm time goes (N={largest})")
            diag = sync_diag.diagnose(kept_server, {h: files_all[h] for h in (host_name(i) for i in range(1, largest + 1))},
                                      per_size[largest])
            section.tables += diag.tables
            section.notes += diag.notes
            section.data["warm_diagnosis"] = diag.data
    finally:
        if kept_server is not None:
            ctx.servers.stop(kept_server)
    return section
