"""Issue 2: provider sync for N hosts, minbw vs Neutron's own algorithm, against the same Placement.

Per size N and per system, a fresh embedded Placement (``minbw placement serve``) gets the N
compute-node root providers first (as nova-compute creates them; not counted), then:

- cold: the agents' providers do not exist yet;
- warm: the same run again, everything already in place.

minbw: every host's two agent ini files → one ``desired_state`` → one ``sync()`` as ``minbw provider sync``
runs it by default: the provider cache on (its safety check included) and ``DEFAULT_WORKERS`` host trees
written at once. Its warm run is also measured without the cache (``--no-cache``), for comparison.
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
import uuid as uuidlib
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import (BenchError, Column, Context, HttpCounter, Section, Table, Target, cpu_seconds, loadavg,
                          progress)

OVS_INI = """\
[DEFAULT]
host = {host}

[ovs]
bridge_mappings = physnet0:br-phys0,physnet1:br-phys1
resource_provider_bandwidths = br-phys0:10000000:10000000,br-phys1:10000000:10000000
"""
SRIOV_INI = """\
[DEFAULT]
host = {host}

[sriov_nic]
physical_device_mappings = physnet0:ens1f0,physnet1:ens1f1
resource_provider_bandwidths = ens1f0:25000000:25000000,ens1f1:25000000:25000000
"""
AGENT_FILES = (("openvswitch_agent.ini", OVS_INI), ("sriov_agent.ini", SRIOV_INI))
# what nova-compute puts on a compute node's root provider
ROOT_INVENTORIES = {"VCPU": {"total": 64, "allocation_ratio": 4.0}, "MEMORY_MB": {"total": 262144},
                    "DISK_GB": {"total": 2000}}
SAMPLE = 10   # hosts whose trees are compared between the two servers

COLD_CALLS_MAX_RATIO = 1 / 3
WARM_SPEEDUP_MIN = 10.0
COLD_SPEEDUP_MIN = 3.0


def host_name(i: int) -> str:
    return f"compute-{i:04d}"


def root_uuid(host: str) -> str:
    """As tests' make_root: a stable UUID, so both servers' trees have the same parents."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, host))


def write_agent_files(directory: Path, n: int) -> dict[str, list[Path]]:
    """host → its agents' ini files (OVS with two bridges, SR-IOV with two PFs), written to disk."""
    files: dict[str, list[Path]] = {}
    for i in range(1, n + 1):
        host = host_name(i)
        d = directory / host
        d.mkdir(parents=True, exist_ok=True)
        files[host] = []
        for name, template in AGENT_FILES:
            path = d / name
            path.write_text(template.format(host=host))
            files[host].append(path)
    return files


def make_roots(server, hosts: list[str]) -> None:
    from minbw.placement.client import Placement
    from minbw.model.providers import NOVA_ROOT_TRAITS, freeze_inventories
    api = Placement(server.connect())
    invs = freeze_inventories(ROOT_INVENTORIES)
    for host in hosts:  # as nova-compute makes its compute node: inventories, COMPUTE_NODE and OWNER_NOVA
        prov = api.create_provider(root_uuid(host), host, None)
        generation = api.set_inventories(prov.uuid, invs, prov.generation)
        api.set_provider_traits(prov.uuid, NOVA_ROOT_TRAITS, generation)


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
    """Wall clock, client CPU and server CPU around one run."""

    def __init__(self, server):
        self.pid = server.proc.pid

    def __enter__(self):
        self.t, self.c, self.s = time.perf_counter(), cpu_seconds(), cpu_seconds(self.pid)
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t
        self.client_cpu = cpu_seconds() - self.c
        self.server_cpu = cpu_seconds(self.pid) - self.s


# ---------------------------------------------------------------- the two systems

def run_minbw(server, files: dict[str, list[Path]], phase: str,
              cache_file: Path | None = None) -> tuple[Run, object, object, object]:
    from minbw.ops import sync as s
    from minbw.neutron.agentconf import load_agent_ini
    from minbw.placement.client import Placement
    from minbw.neutron.provider_tree import desired_state

    conn = server.connect()
    conn.placement.get("/", microversion="1.0")    # load the client's code paths; not counted
    counter = HttpCounter(conn.session.session)
    api = Placement(conn)                            # fresh: discovers the server's version, as a CLI run does

    def every_500(step, done, total):
        if done % 500 == 0:
            progress(f"minbw {phase}: {step} {done}/{total}")

    with _Meter(server) as m:
        t = time.perf_counter()
        configs = [load_agent_ini(p.read_text(), source=str(p)) for host in files for p in files[host]]
        desired = desired_state(configs)
        parse_s = time.perf_counter() - t
        cache = s.ProviderCache(cache_file, api.endpoint()) if cache_file else None
        plan, result = s.sync(api, desired, progress=every_500, cache=cache)
    counter.detach()
    summary = s.summary(desired, plan, result, seconds=m.seconds, calls=api.calls, cache=cache)
    progress(f"minbw {phase}: {summary}")
    if api.calls != counter.total:
        raise BenchError(f"minbw {phase}: the client counted {api.calls} calls, the HTTP hook {counter.total}")
    if result is not None and result.writes != counter.writes:
        raise BenchError(f"minbw {phase}: {result.writes} writes applied but {counter.writes} write calls seen")
    run_ = Run("minbw", phase, len(files), m.seconds, counter.total, counter.gets, counter.writes,
               counter.http_seconds, m.client_cpu, m.server_cpu, loadavg(), counter.kinds(),
               {"parse_desired_s": parse_s, "summary": summary})
    return run_, plan, result, cache


def run_neutron(server, files: dict[str, list[Path]], phase: str) -> Run:
    from tests.support.oracle import neutron_sync as oracle

    client = oracle.neutron_client(server.url)
    client.list_resource_providers(name="warm-up")  # load the client's code paths; not counted
    counter = HttpCounter(client._client.session)
    n = len(files)
    every = max(10, n // 10)
    with _Meter(server) as m:
        for i, (host, paths) in enumerate(files.items(), 1):
            for path in paths:
                oracle.neutron_sync(client, *oracle.agent_from_ini(path.read_text(), host))
            if i % every == 0 and i < n:
                progress(f"neutron {phase}: {i}/{n} hosts, {counter.total} calls")
    counter.detach()
    return Run("neutron", phase, n, m.seconds, counter.total, counter.gets, counter.writes,
               counter.http_seconds, m.client_cpu, m.server_cpu, loadavg(), counter.kinds())


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
    from minbw.ops import sync as s
    from minbw.neutron.agentconf import load_agent_ini
    from minbw.placement.client import Placement
    from minbw.neutron.provider_tree import desired_state
    configs = [load_agent_ini(p.read_text(), source=str(p)) for host in files for p in files[host]]
    plan, _ = s.sync(Placement(neutron_server.connect()), desired_state(configs), check=True)
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
    order = [("minbw", "cold"), ("minbw", "warm"), ("minbw", "warm (no cache)"), ("neutron", "cold"),
             ("neutron", "warm")]
    kinds: list[str] = []
    for key in order:
        kinds += [k for k in runs[key].kinds if k not in kinds]

    def per_host(r, k):
        return r.kinds.get(k, {}).get("calls", 0) / n
    rows = [{"kind": k, **{f"{s}_{p}": per_host(runs[(s, p)], k) for s, p in order}} for k in kinds]
    rows.append({"kind": "total", **{f"{s}_{p}": runs[(s, p)].calls / n for s, p in order}})
    return Table(f"Calls per host by kind (N={n})",
                 [Column("kind", "call")] + [Column(f"{s}_{p}", f"{s} {p}", "{:.3g}") for s, p in order], rows)


def run(ctx: Context) -> Section:
    warnings.filterwarnings("ignore")
    sizes = ctx.sizes
    files_all = write_agent_files(ctx.state_dir / "agents", max(sizes))
    section = Section("sync", "Provider sync: minbw vs Neutron's placement sync "
                              "(per host: OVS agent with 2 bridges + SR-IOV agent with 2 PFs)")
    runs_table = Table("Runs (per host unless said)", RUN_COLUMNS)
    ratio_table = Table("Ratios", RATIO_COLUMNS)
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
            make_roots(srv_m, hosts)
            if "placement_max_microversion" not in section.data:
                from minbw.placement.client import Placement
                section.data["placement_max_microversion"] = "%d.%d" % Placement(srv_m.connect()).max_version()
                section.notes.append(f"Placement serves microversions up to {section.data['placement_max_microversion']}.")
            progress(f"N={n}: minbw cold")
            cache_file = ctx.state_dir / f"n{n}-cache.json"  # the default: the cache on, filled by the cold run
            runs[("minbw", "cold")], plan, result, _ = run_minbw(srv_m, files, "cold", cache_file)
            if not plan.ops or result is None:
                raise BenchError(f"N={n}: minbw's cold run planned nothing")
            progress(f"N={n}: minbw warm (default: cache and its safety check)")
            runs[("minbw", "warm")], plan, result, cache = run_minbw(srv_m, files, "warm", cache_file)
            if plan.ops or result is not None or runs[("minbw", "warm")].writes:
                raise BenchError(f"N={n}: minbw's warm run is not a no-op: {len(plan.ops)} planned, "
                                 f"{runs[('minbw', 'warm')].writes} write calls; e.g. "
                                 + "; ".join(str(op) for op in plan.ops[:5]))
            if cache.stats["trusted"] != 6 * n or cache.stats["reread"]:
                raise BenchError(f"N={n}: minbw's warm run did not trust its cache: {cache.stats}")
            progress(f"N={n}: minbw warm without the cache (--no-cache)")
            runs[("minbw", "warm (no cache)")], plan, result, _ = run_minbw(srv_m, files, "warm (no cache)")
            if plan.ops or result is not None or runs[("minbw", "warm (no cache)")].writes:
                raise BenchError(f"N={n}: minbw's warm run without the cache is not a no-op")

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

            for (system, phase), r in runs.items():
                runs_table.rows.append(r.row(n))
            mc, mw, nc, nw = (runs[k] for k in (("minbw", "cold"), ("minbw", "warm"),
                                                 ("neutron", "cold"), ("neutron", "warm")))
            mwn = runs[("minbw", "warm (no cache)")]
            ratios = {"n": n, "cold_calls_ratio": mc.calls / nc.calls, "warm_calls_ratio": mw.calls / nw.calls,
                      "cold_speedup": nc.seconds / mc.seconds, "warm_speedup": nw.seconds / mw.seconds,
                      "warm_cpu_ratio": (nw.client_cpu + nw.server_cpu) / (mw.client_cpu + mw.server_cpu),
                      "warm_writes": mw.writes, "warm_calls": mw.calls,
                      "warm_nocache_speedup": nw.seconds / mwn.seconds,
                      "warm_nocache_calls": mwn.calls / n}
            ratio_table.rows.append(ratios)
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
            per_size[n] = {"runs": {f"{s}_{p}": {**r.row(n), "kinds": r.kinds} for (s, p), r in runs.items()},
                           "ratios": ratios, "sampled_hosts_compared": sampled}
            if n == largest:
                kinds_tbl = kinds_table(n, runs)
                kept_server = srv_m
            else:
                ctx.servers.stop(srv_m)
            progress(f"N={n}: done (warm speed-up {ratios['warm_speedup']:.1f}×, "
                     f"cold calls ratio {ratios['cold_calls_ratio']:.3f})")

        section.tables = [runs_table, ratio_table] + ([kinds_tbl] if kinds_tbl else [])
        section.data["sizes"] = per_size
        section.notes.append(
            "Correctness checked in the run (not counted): after both cold runs and after Neutron's warm run, "
            f"the trees of {SAMPLE} sampled hosts are equal on both servers; minbw's plan against Neutron's "
            "result is empty for every host; minbw's warm run plans and writes nothing.")
        if diag_needed and kept_server is not None:
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
