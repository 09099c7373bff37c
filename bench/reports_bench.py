"""Section ``reports``: the reports' Placement reads and the exporter's scrapes at N hosts (the largest of
``--sizes``) with 10 QoS consumers per host, beside the way they read before (every provider's details, then each
provider's allocations) and a generic exporter's way (every provider's inventories and usages per scrape).

The workload: N hosts as the sync section builds them (a compute root with VCPU/MEMORY_MB/DISK_GB, an OVS agent
with two bridges and an SR-IOV agent with two PFs: 7 providers per host, 4 of them bandwidth providers), then 10
consumers per host, each holding VCPU 1 on the root and 1000 kbps each way on the host's first bridge (one PUT
/allocations each, 8 at a time). Measured per report: calls, client wall seconds, seconds waiting on Placement,
peak Python memory (tracemalloc) — cold (no cache) and warm (the provider cache the cold run filled; nothing moved
in between). The floor beside them: one allocation read per bandwidth provider.

The audit, drift and heal use cases also read Nova and Neutron, which a Placement-only server lacks: their rows
measure the Placement side only (the readers they call), and say so.
"""
from __future__ import annotations

import time
import tracemalloc
import uuid as uuidlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import BenchError, Column, Context, HttpCounter, Section, Table, Target, loadavg, progress
from bench.sync_bench import host_name, make_roots, root_uuid, run_minbw, write_agent_files

CONSUMERS_PER_HOST = 10
EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"


def _consumers(server, hosts: list[str]) -> int:
    from minbw.neutron import naming
    from minbw.placement.client import Placement
    api = Placement(server.connect())
    kind = naming.AGENT_KINDS[naming.OVS]

    def claim(host):  # one host's consumers in turn: two claims on one provider at once would conflict
        bridge = naming.device_rp_uuid(kind, host, "br-phys0")
        for j in range(CONSUMERS_PER_HOST):
            consumer = str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f"{host}-consumer-{j}"))
            api.put_allocations(consumer, {"allocations": {root_uuid(host): {"resources": {"VCPU": 1}},
                                                           bridge: {"resources": {EGR: 1000, IGR: 1000}}},
                                           "project_id": "bench", "user_id": "bench", "consumer_generation": None})
    with ThreadPoolExecutor(8) as pool:
        for i, _ in enumerate(pool.map(claim, hosts), 1):
            if i % 200 == 0:
                progress(f"reports: consumers of {i}/{len(hosts)} hosts")
    return len(hosts) * CONSUMERS_PER_HOST


class _Measure:
    """Calls (the HTTP hook), wall and waiting seconds, and peak Python memory of one run of ``fn``."""

    def __init__(self, server):
        self.server = server

    def __call__(self, name: str, fn, cache_file: Path | None = None, trace: bool = True, **extra):
        """``trace`` False: without tracemalloc (no peak memory), whose hooks slow every allocation down (parsing
        a listing of 7,000 providers takes 6 times as long under it): the seconds of a process as it runs."""
        from minbw.placement.client import Placement
        from minbw.reports.reader import ProviderCache, Reader
        conn = self.server.connect()
        api = Placement(conn)
        api.max_version()  # discovered once, as a long-running client does; not counted
        counter = HttpCounter(conn.session.session)
        before = api.calls
        reader = Reader(api, ProviderCache(cache_file, api.endpoint()) if cache_file else None)
        if trace:
            tracemalloc.start()
        t = time.perf_counter()
        out = fn(api, reader)
        seconds = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1] if trace else None
        if trace:
            tracemalloc.stop()
        counter.detach()
        if api.calls - before != counter.total:
            raise BenchError(f"{name}: the client counted {api.calls - before} calls, the HTTP hook {counter.total}")
        row = {"report": name, "calls": counter.total, "s": seconds, "waiting_s": counter.http_seconds,
               "peak_mib": peak / 2**20 if trace else None, "load": loadavg(), "kinds": counter.kinds(),
               "traced": trace, **extra}
        progress(f"reports: {name}: {counter.total} calls, {seconds:.2f} s" +
                 (f", peak {peak / 2**20:.1f} MiB" if trace else ", not traced"))
        return row, out


# ---------------------------------------------------------------- how they read before (for comparison)

def old_audit_read(api, reader):
    """The audit's reader before: every provider's traits and inventories, then each provider with an
    inventory's allocations."""
    providers = api.list_providers()
    allocations = {}
    for d in api.provider_details(providers):
        if d.inventories:
            allocations[d.provider.uuid] = api.provider_allocations(d.provider.uuid)
    return allocations


def old_details_read(api, reader):
    """capacity's and the exporter's way before (a generic exporter's too): every provider's traits,
    inventories and usages."""
    return list(api.provider_details(api.list_providers(), usages=True))


def generic_exporter_scrape(api, reader):
    """openstack-exporter's Placement collector: the providers, then each one's inventories and usages."""
    out = []
    for p in api.list_providers():
        out.append((api.get_inventories(p.uuid), api.provider_usages(p.uuid)))
    return out


# ---------------------------------------------------------------- the reports now

def audit_read(api, reader):
    from minbw.ops.audit import read_placement
    return read_placement(reader)


def drift_read(desired_uuids):
    def read(api, reader):
        from minbw.reports.providers import placement_snapshots
        return placement_snapshots(reader, desired_uuids)
    return read


def capacity_read(api, reader):
    from minbw.reports.capacity.request import capacity_request
    from minbw.usecases.capacity import capacity_report
    from minbw.usecases.exporter import PortSize
    req = capacity_request({"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1},
                           qos_ports=(PortSize.parse("p=min_bw:egress:1000,min_bw:ingress:1000").port,))
    return capacity_report(reader, req)


def heal_read(consumers_by_host):
    """heal --dry-run's Placement side (minbw.ops.heal without Nova and Neutron): the trees of the servers' hosts
    through the reports' reader (one listing; the provider cache where it holds them), then each server's
    allocations and its host's tree, in the order heal plans them."""
    def read(api, reader):
        from minbw.ops.heal import Trees
        trees = Trees(reader)
        trees.prefetch(consumers_by_host)
        for host, consumers in consumers_by_host.items():
            for c in consumers:
                api.get_allocations(c)
                trees.of(host)
        reader.save()
        return len(consumers_by_host)
    return read


def guarantee_read(host, consumer):
    """server_bandwidth_info's Placement side for one server (ops.servers.verify without Nova and Neutron): its
    claim mapped by the solver (its allocations, its tree, the allocated providers' traits), then the names in
    its host's tree and each allocated provider's usages and allocations."""
    def read(api, reader):
        from minbw.model.requests import ServerRequest
        from minbw.neutron.port_request import QosPort
        from minbw.ops import claims
        port = QosPort.parse("min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0", "bench").request(
            str(uuidlib.uuid4()))
        claim = claims.existing_claim(api, consumer, ServerRequest(extra_resources={"VCPU": 1}, ports=(port,)))
        allocs = claim.allocations
        api.provider_names(in_tree=root_uuid(host))
        for rp in allocs:
            api.provider_usages(rp)
            api.provider_allocations(rp)
    return read


def exporter_scrape(cache_file, restarted: bool = False):
    """A scrape of ``minbw exporter`` as it serves Prometheus: the same exporter from one scrape to the next (its
    provider cache and last headroom in memory). ``restarted``: a new exporter for each scrape (the service just
    started, its cache file warm)."""
    kept = {}

    def scrape(api, reader):
        from minbw.usecases.cloud import Cloud
        from minbw.usecases.exporter import Exporter, ExporterRequest, PortSize
        exp = None if restarted else kept.get("exporter")
        if exp is None:
            req = ExporterRequest(port_sizes=(PortSize.parse("small=min_bw:egress:1000,min_bw:ingress:1000"),),
                                  cache=str(cache_file), neutron=False, audit=False)
            exp = kept["exporter"] = Exporter(Cloud(lambda: api.conn), req)
        exp.collector.api = api  # this measurement's client (its calls are counted)
        exp.collector.reader.api = api
        exp.collect()
        return exp.exposition(openmetrics=True)  # the body Prometheus gets (it asks for OpenMetrics)
    scrape.exporter = lambda: kept["exporter"]
    return scrape


def claim_on(server, host: str, n: int) -> None:
    """One more consumer on ``host`` (VCPU 1 on its root, 1000 kbps each way on its first bridge): the root's and
    the bridge's generations move, as after a server's boot there."""
    from minbw.neutron import naming
    from minbw.placement.client import Placement
    bridge = naming.device_rp_uuid(naming.AGENT_KINDS[naming.OVS], host, "br-phys0")
    Placement(server.connect()).put_allocations(
        str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f"{host}-moved-{n}")),
        {"allocations": {root_uuid(host): {"resources": {"VCPU": 1}},
                         bridge: {"resources": {EGR: 1000, IGR: 1000}}},
         "project_id": "bench", "user_id": "bench", "consumer_generation": None})


PARTS = ("reports", "heal", "exporter")


def run(ctx: Context, parts: tuple[str, ...] = PARTS) -> Section:
    """The reports (``reports``: audit, drift, capacity, server_bandwidth_info and the reads before), heal
    --dry-run (``heal``) and the exporter's scrapes (``exporter``) on one workload; ``parts`` which."""
    n = max(ctx.sizes)
    state = ctx.state_dir / "reports"
    state.mkdir(parents=True, exist_ok=True)
    server = ctx.servers.start("reports")
    hosts = [host_name(i) for i in range(1, n + 1)]
    progress(f"reports: {n} hosts: roots, then minbw's sync")
    make_roots(server, hosts)
    files = write_agent_files(state / "agents", n)
    _, plan, _, _ = run_minbw(server, files, "reports build")
    desired = {op.uuid for op in plan.ops if op.uuid}
    consumers = _consumers(server, hosts)
    by_host = {h: [str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f"{h}-consumer-{j}")) for j in range(CONSUMERS_PER_HOST)]
               for h in hosts}
    measure = _Measure(server)
    bandwidth = 4 * n
    rows = []
    cache = state / "cache.json"
    reports = "reports" in parts
    for name, fn in (("audit (Placement side)", audit_read), ("drift (Placement side)", drift_read(desired)),
                     ("capacity", capacity_read)) if reports else ():
        row, _ = measure(name, fn)
        rows.append({**row, "run": "no cache"})
        cache.unlink(missing_ok=True)
        row, _ = measure(name, fn, cache)
        rows.append({**row, "run": "cold (fills the cache)"})
        row, _ = measure(name, fn, cache)
        rows.append({**row, "run": "warm (cache)"})
    if "heal" in parts:  # without a cache it reads what a cold run reads: cold, then warm
        cache.unlink(missing_ok=True)
        row, _ = measure("heal --dry-run (Placement side)", heal_read(by_host), cache)
        rows.append({**row, "run": "cold (fills the cache)"})
        row, _ = measure("heal --dry-run (Placement side)", heal_read(by_host), cache)
        rows.append({**row, "run": "warm (cache)"})
    if reports:
        row, _ = measure("server_bandwidth_info (Placement side, one server)",
                         guarantee_read(hosts[0], by_host[hosts[0]][0]))
        rows.append({**row, "run": "one server"})
    for name, fn in (("audit before (every provider's details, then allocations)", old_audit_read),
                     ("capacity before (every provider's details and usages)", old_details_read)) if reports else ():
        row, _ = measure(name, fn)
        rows.append({**row, "run": "before"})
    scrapes = []
    if "exporter" in parts:
        # a cold scrape fills the cache, then warm scrapes (nothing moved), then scrapes after a claim on one host
        # (its root and first bridge moved), then a restarted exporter's and a generic exporter's
        cache.unlink(missing_ok=True)
        serving = exporter_scrape(cache)
        for i in range(4):
            row, _ = measure("exporter scrape", serving, cache)
            scrapes.append({**row, "run": "cold" if i == 0 else f"warm {i}"})
            if i == 0:  # what the exporter's slow reports do on their interval (scrapes do not write the file)
                serving.exporter().collector.cache.save()
        for i in range(1, 4):
            claim_on(server, hosts[i * (n // 4)], i)
            row, _ = measure("exporter scrape, one host moved (a claim on its root and bridge)", serving, cache)
            scrapes.append({**row, "run": f"moved {i}"})
        # the same, as the exporter runs: without tracemalloc
        for i in range(1, 4):
            row, _ = measure("exporter scrape, not traced", serving, cache, trace=False)
            scrapes.append({**row, "run": f"warm {i}, not traced"})
        for i in range(4, 7):
            claim_on(server, hosts[(i - 3) * (n // 4) + 1], i)
            row, _ = measure("exporter scrape, one host moved, not traced", serving, cache, trace=False)
            scrapes.append({**row, "run": f"moved {i - 3}, not traced"})
        row, _ = measure("exporter scrape, restarted (a new exporter, its cache file warm)",
                         exporter_scrape(cache, restarted=True), cache)
        scrapes.append({**row, "run": "restarted"})
        row, _ = measure("generic exporter scrape (every provider's inventories and usages)", generic_exporter_scrape)
        scrapes.append({**row, "run": "every provider"})
    providers = 7 * n
    tables = []
    if rows:
        tables.append(Table(
            f"Reports at {n} hosts ({providers} providers, {bandwidth} bandwidth providers, {consumers} QoS "
            f"consumers); floor: {bandwidth} allocation reads (one per bandwidth provider)",
            [Column("report", "report"), Column("run", "run"), Column("calls", "calls"), Column("s", "s", "{:.2f}"),
             Column("waiting_s", "waiting s", "{:.2f}"), Column("peak_mib", "peak MiB", "{:.1f}"),
             Column("load", "load")], rows))
    if scrapes:
        tables.append(Table(f"Exporter scrapes at {n} hosts (the OpenMetrics body Prometheus gets)",
                            [Column("report", "scrape"), Column("run", "run"), Column("calls", "calls"),
                             Column("s", "client s", "{:.3f}"), Column("waiting_s", "waiting s", "{:.3f}"),
                             Column("peak_mib", "peak MiB", "{:.1f}")], scrapes))
    targets = []
    if scrapes:
        def worst(kind, key, traced):
            return max(r[key] for r in scrapes if r["run"].startswith(kind) and r["traced"] == traced)
        for kind, label in (("warm", "exporter warm scrape"), ("moved", "exporter scrape after one host moved")):
            targets += [Target(f"{label}: calls", f"N={n}", worst(kind, "calls", True), "<=", 5),
                        Target(f"{label}: seconds", f"N={n}", worst(kind, "s", True), "<=", 1.0, " s"),
                        Target(f"{label}: seconds, not traced", f"N={n}", worst(kind, "s", False), "<=", 1.0, " s")]
    if "heal" in parts:
        warm_heal = next(r for r in rows if r["report"].startswith("heal") and r["run"] == "warm (cache)")
        # floor: one allocation read per server (its allocations and consumer generation), the listing, and one
        # usage read per provider with an inventory in the trees (n roots and the bandwidth providers): a
        # generation does not move when allocations are deleted, so no usage is taken from the cache
        targets.append(Target("heal --dry-run warm: calls ÷ (servers + 1 + usages)", f"N={n}",
                              round(warm_heal["calls"] / (consumers + 1 + n + bandwidth), 3), "<=", 1.01))
    if reports:
        targets.append(Target("audit warm: calls ÷ floor", f"N={n}",
                              round(next(r["calls"] for r in rows if r["report"].startswith("audit (") and
                                         r["run"] == "warm (cache)") / bandwidth, 3), "<=", 1.05))
    ctx.servers.stop(server)
    name = "reports" if reports else "_".join(parts)
    title = {"reports": "Reports and exporter scrapes at scale", "exporter": "Exporter scrapes at scale",
             "heal": "heal --dry-run at scale"}.get(name, "Exporter scrapes and heal --dry-run at scale")
    return Section(name, title, tables, targets,
                   notes=["audit, drift and heal need Nova and Neutron: their rows are the Placement side only "
                          "(the readers the use cases call), measured on a Placement-only server"] if rows else [],
                   data={"rows": rows, "scrapes": scrapes, "hosts": n, "consumers": consumers})
