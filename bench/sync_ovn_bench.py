"""Issue 20: provider sync of ML2/OVN chassis for N hosts, minbw vs Neutron's OVN placement extension, against
the same Placement, with the targets of the OVS/SR-IOV sync (bench/sync_bench.py).

Workload: N chassis, each with two bridges on two physnets (10 Gbit/s both ways each) in its
``ovn-cms-options`` and its host as the hypervisor: 3 providers per host (the agent provider and 2 bridges).
Both systems read the same southbound ``Chassis`` table, saved as ``ovn-sbctl --format=json list Chassis``
prints it; timing covers reading and parsing it.

- minbw: the file → ``minbw.ops.ovn_chassis.desired`` (every chassis: complete) → one ``sync()`` as ``minbw provider
  sync --ovn-chassis FILE`` runs it by default (the provider cache on, 4 workers). Warm again with the
  cache, and without it.
- Neutron: what its OVN extension does for each chassis when neutron-server's API worker starts (the
  Chassis row's create event, ``ChassisBandwidthConfigEvent.run``): ``name2uuid()`` (a listing of every
  provider), ``build_placement_state`` and ``deferred_sync()`` executed call by call with neutron-lib's
  ``PlacementAPIClient`` (tests/support/oracle/neutron_ovn.py). Cold: no agent providers yet; warm: the same again
  (the next neutron-server restart).

Checked inside the run (not counted; a failure raises BenchError): the trees of sampled hosts are equal
on both servers, minbw's plan against Neutron's result is empty, minbw's warm runs write nothing and the
default one trusts its cache for every provider.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

from bench.common import BenchError, Context, HttpCounter, Section, Table, Target, loadavg, progress
from bench.sync_bench import (COLD_CALLS_MAX_RATIO, COLD_SPEEDUP_MIN, RATIO_COLUMNS, RUN_COLUMNS, SAMPLE,
                              WARM_SPEEDUP_MIN, Run, _Meter, host_name, host_tree, make_roots, sample_hosts)

PROVIDERS_PER_HOST = 3


def chassis_table(n: int) -> dict:
    """The southbound Chassis table of N chassis, as ``ovn-sbctl --format=json --columns=name,hostname,
    other_config list Chassis`` prints it."""
    data = []
    for i in range(1, n + 1):
        host = host_name(i)
        cms = ("resource_provider_bandwidths=br-phys0:10000000:10000000;br-phys1:10000000:10000000,"
               f"resource_provider_hypervisors=br-phys0:{host};br-phys1:{host}")
        data.append([f"chassis-{i:04d}", host, ["map", [["ovn-bridge-mappings", "physnet0:br-phys0,physnet1:br-phys1"],
                                                        ["ovn-cms-options", cms]]]])
    return {"headings": ["name", "hostname", "other_config"], "data": data}


def run_minbw(server, path: Path, phase: str, cache_file: Path | None = None):
    from minbw.ops import ovn_chassis
    from minbw.ops.sync import ProviderCache, summary, sync_providers
    from minbw.placement.client import Placement

    conn = server.connect()
    conn.placement.get("/", microversion="1.0")  # load the client's code paths; not counted
    counter = HttpCounter(conn.session.session)
    api = Placement(conn)
    with _Meter(server) as m:
        chassis, complete = ovn_chassis.read_chassis_file(str(path))
        desired = ovn_chassis.desired(chassis=chassis, complete=complete)
        cache = ProviderCache(cache_file, api.endpoint()) if cache_file else None
        plan, result = sync_providers(api, desired, cache=cache)
    counter.detach()
    line = summary(desired, plan, result, seconds=m.seconds, calls=api.calls, cache=cache)
    progress(f"minbw {phase}: {line}")
    if api.calls != counter.total:
        raise BenchError(f"minbw {phase}: the client counted {api.calls} calls, the HTTP hook {counter.total}")
    run_ = Run("minbw", phase, len(chassis), m.seconds, counter.total, counter.gets, counter.writes,
               counter.http_seconds, m.client_cpu, m.server_cpu, loadavg(), counter.kinds(), {"summary": line})
    return run_, plan, result, cache


def run_neutron(server, path: Path, phase: str) -> Run:
    from tests.support.oracle import neutron_ovn, neutron_sync

    client = neutron_sync.neutron_client(server.url)
    client.list_resource_providers(name="warm-up")  # load the client's code paths; not counted
    counter = HttpCounter(client._client.session)
    table = json.loads(path.read_text())
    n = len(table["data"])
    every = max(10, n // 10)
    with _Meter(server) as m:
        for i, (name, hostname, other_config) in enumerate(table["data"], 1):
            # ChassisBandwidthConfigEvent.run: name2uuid() lists every provider, then the state's calls
            name2uuid = {rp["name"]: rp["uuid"] for rp in client.list_resource_providers()["resource_providers"]}
            for call in neutron_ovn.deferred(dict(other_config[1]), name2uuid, client=client):
                call.execute()
            if i % every == 0 and i < n:
                progress(f"neutron {phase}: {i}/{n} chassis, {counter.total} calls")
    counter.detach()
    return Run("neutron", phase, n, m.seconds, counter.total, counter.gets, counter.writes, counter.http_seconds,
               m.client_cpu, m.server_cpu, loadavg(), counter.kinds())


def check_same_trees(minbw_server, neutron_server, hosts, seed: int, when: str) -> int:
    from minbw.placement.client import Placement
    a, b = Placement(minbw_server.connect()), Placement(neutron_server.connect())
    checked = sample_hosts(hosts, seed)
    for host in checked:
        ours, theirs = host_tree(a, host), host_tree(b, host)
        if ours != theirs or len(ours) != PROVIDERS_PER_HOST:
            raise BenchError(f"{when}: {host}'s providers differ: minbw {ours} / Neutron {theirs}")
    return len(checked)


def run(ctx: Context) -> Section:
    warnings.filterwarnings("ignore")
    section = Section("sync_ovn", "ML2/OVN provider sync: minbw vs Neutron's OVN placement extension "
                                  "(per host: a chassis with 2 bridges)")
    runs_table = Table("Runs (per host unless said)", RUN_COLUMNS)
    ratio_table = Table("Ratios", RATIO_COLUMNS)
    per_size: dict[int, dict] = {}
    for n in ctx.sizes:
        hosts = [host_name(i) for i in range(1, n + 1)]
        path = ctx.state_dir / f"ovn-chassis-{n}.json"
        path.write_text(json.dumps(chassis_table(n)))
        runs: dict[tuple[str, str], Run] = {}
        progress(f"OVN N={n}: starting Placement for minbw, creating {n} root providers")
        srv_m = ctx.servers.start(f"ovn-n{n}-minbw")
        try:
            make_roots(srv_m, hosts)
            cache_file = ctx.state_dir / f"ovn-n{n}-cache.json"
            runs[("minbw", "cold")], plan, result, _ = run_minbw(srv_m, path, "cold", cache_file)
            if not plan.ops or result is None:
                raise BenchError(f"OVN N={n}: minbw's cold run planned nothing")
            runs[("minbw", "warm")], plan, result, cache = run_minbw(srv_m, path, "warm", cache_file)
            if plan.ops or runs[("minbw", "warm")].writes:
                raise BenchError(f"OVN N={n}: minbw's warm run is not a no-op: {[str(op) for op in plan.ops[:5]]}")
            if cache.stats["trusted"] != PROVIDERS_PER_HOST * n or cache.stats["reread"]:
                raise BenchError(f"OVN N={n}: minbw's warm run did not trust its cache: {cache.stats}")
            runs[("minbw", "warm (no cache)")], plan, _, _ = run_minbw(srv_m, path, "warm (no cache)")
            if plan.ops or runs[("minbw", "warm (no cache)")].writes:
                raise BenchError(f"OVN N={n}: minbw's warm run without the cache is not a no-op")

            progress(f"OVN N={n}: starting Placement for Neutron, creating {n} root providers")
            srv_n = ctx.servers.start(f"ovn-n{n}-neutron")
            try:
                make_roots(srv_n, hosts)
                runs[("neutron", "cold")] = run_neutron(srv_n, path, "cold")
                sampled = check_same_trees(srv_m, srv_n, hosts, ctx.seed, f"OVN N={n} after both cold runs")
                from minbw.ops import ovn_chassis
                from minbw.ops.sync import sync_providers
                from minbw.placement.client import Placement
                chassis, complete = ovn_chassis.read_chassis_file(str(path))
                plan, _ = sync_providers(Placement(srv_n.connect()), ovn_chassis.desired(chassis=chassis, complete=complete),
                                 check=True)
                if plan.ops or plan.kept:
                    raise BenchError(f"OVN N={n}: minbw would change Neutron's result: "
                                     f"{[str(op) for op in plan.ops[:5]]}")
                runs[("neutron", "warm")] = run_neutron(srv_n, path, "warm")
                check_same_trees(srv_m, srv_n, hosts, ctx.seed + 1, f"OVN N={n} after Neutron's warm run")
            finally:
                ctx.servers.stop(srv_n)
        finally:
            ctx.servers.stop(srv_m)
        for r in runs.values():
            runs_table.rows.append(r.row(n))
        mc, mw, mwn, nc, nw = (runs[k] for k in (("minbw", "cold"), ("minbw", "warm"), ("minbw", "warm (no cache)"),
                                                  ("neutron", "cold"), ("neutron", "warm")))
        ratios = {"n": n, "cold_calls_ratio": mc.calls / nc.calls, "warm_calls_ratio": mw.calls / nw.calls,
                  "cold_speedup": nc.seconds / mc.seconds, "warm_speedup": nw.seconds / mw.seconds,
                  "warm_cpu_ratio": (nw.client_cpu + nw.server_cpu) / (mw.client_cpu + mw.server_cpu),
                  "warm_writes": mw.writes, "warm_calls": mw.calls,
                  "warm_nocache_speedup": nw.seconds / mwn.seconds, "warm_nocache_calls": mwn.calls / n}
        ratio_table.rows.append(ratios)
        section.targets += [
            Target("OVN cold calls/host minbw ÷ Neutron", f"N={n}", ratios["cold_calls_ratio"], "<=",
                   round(COLD_CALLS_MAX_RATIO, 3)),
            Target("OVN warm writes (minbw)", f"N={n}", mw.writes, "==", 0),
            Target("OVN warm speed-up Neutron ÷ minbw", f"N={n}", ratios["warm_speedup"], ">=", WARM_SPEEDUP_MIN, "×"),
            Target("OVN cold speed-up Neutron ÷ minbw", f"N={n}", ratios["cold_speedup"], ">=", COLD_SPEEDUP_MIN, "×"),
        ]
        per_size[n] = {"runs": {f"{s}_{p}": {**r.row(n), "kinds": r.kinds} for (s, p), r in runs.items()},
                       "ratios": ratios, "sampled_hosts_compared": sampled}
        progress(f"OVN N={n}: done (warm speed-up {ratios['warm_speedup']:.1f}×, "
                 f"cold calls ratio {ratios['cold_calls_ratio']:.3f})")
    section.tables = [runs_table, ratio_table]
    section.data["sizes"] = per_size
    section.notes.append(
        "Correctness checked in the run (not counted): after both cold runs and after Neutron's warm run, the trees "
        f"of {SAMPLE} sampled hosts are equal on both servers; minbw's plan against Neutron's result is empty; "
        "minbw's warm runs plan and write nothing, the default one trusting its cache for every provider.")
    return section
