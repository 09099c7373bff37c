"""Section ``drain``: the drain planner (minbw.plan.drain, pure: no Placement) at N servers x N hosts (the largest
of ``--sizes``; standalone: ``python bench/drain_bench.py [SERVERS] [HOSTS]``, default 1,000 x 1,000).

The workload, generated (seeded): N destination hosts as Placement reports them (a compute root with VCPU 64,
MEMORY_MB 256 GiB, DISK_GB 2000; an OVS bridge on physnet0 of 10 Gbps and an SR-IOV PF on physnet1 of 25 Gbps, each
way), each inventory 60-90 % used; N servers of three flavors (2, 4, 8 VCPUs) and four port shapes (one port of
1 Gbps on physnet0, one of 2 Gbps on physnet1, one on each of 500 Mbps, two on physnet0 of 1 Gbps and 500 Mbps),
a fifth of them kept by Nova's filters to half the hosts (an availability zone), one in twenty in anti-affinity
groups of three. Timed: the greedy path (``method=auto``: greedy places all, no solver), the forced exact path
(``method=exact``: the MIP over each server's candidate hosts), and a tight case (the hosts 85-97 % used, where
greedy strands servers and auto solves). Each plan is checked: nothing overcommitted, every move on its roots.
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Column, Section, Table, progress  # noqa: E402

E, I = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
PN0, PN1 = "CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_PHYSNET_PHYSNET1"
NORMAL, DIRECT = "CUSTOM_VNIC_TYPE_NORMAL", "CUSTOM_VNIC_TYPE_DIRECT"
FLAVORS = ((2, 4096, 20), (4, 8192, 40), (8, 16384, 80))
PORT_SHAPES = (((1_000_000, PN0, NORMAL),), ((2_000_000, PN1, DIRECT),),
               ((500_000, PN0, NORMAL), (500_000, PN1, DIRECT)), ((1_000_000, PN0, NORMAL), (500_000, PN0, NORMAL)))


def workload(servers: int, hosts: int, seed: int = 45, used=(0.6, 0.9)):
    """The destination trees and the servers (see the module docstring)."""
    from minbw.model.providers import Provider, ProviderDetail
    from minbw.model.requests import PortRequest, RequestGroup, ServerRequest
    from minbw.plan.drain import DrainServer
    from minbw.reports.capacity.report import trees

    rng = random.Random(seed)
    details = []

    def provider(uuid, name, parent, root, traits, inventories):
        usage = {rc: int(total * rng.uniform(*used)) for rc, total in inventories.items()}
        details.append(ProviderDetail(Provider(uuid, name, 1, parent, root), frozenset(traits),
                                      {rc: {"total": t} for rc, t in inventories.items()}, usage, True))

    for h in range(hosts):
        root = f"00000000-0000-4000-8000-{h:012d}"
        provider(root, f"compute{h:04d}", None, root, ("COMPUTE_NODE",),
                 {"VCPU": 64, "MEMORY_MB": 262144, "DISK_GB": 2000})
        provider(f"10000000-0000-4000-8000-{h:012d}", f"compute{h:04d}:br-phys0", root, root, (PN0, NORMAL),
                 {E: 10_000_000, I: 10_000_000})
        provider(f"20000000-0000-4000-8000-{h:012d}", f"compute{h:04d}:ens1f0", root, root, (PN1, DIRECT),
                 {E: 25_000_000, I: 25_000_000})
    dest, _notes = trees(details)
    zone = frozenset(t.root for t in dest[: hosts // 2])
    out = []
    for s in range(servers):
        vcpus, ram, disk = rng.choice(FLAVORS)
        ports = tuple(PortRequest(f"port-{s}-{j}", (RequestGroup(f"g-{s}-{j}", ((E, kbps), (I, kbps)), (pn, vnic)),))
                      for j, (kbps, pn, vnic) in enumerate(rng.choice(PORT_SHAPES)))
        group = f"group-{s // 3}" if s % 20 < 3 else None
        out.append(DrainServer(f"server-{s}", f"vm{s:04d}", rng.choice(("ACTIVE",) * 4 + ("SHUTOFF",)),
                               ServerRequest(vcpus=vcpus, memory_mb=ram, disk_gb=disk, ports=ports),
                               roots=zone if rng.random() < 0.2 else None, anti_affinity=group))
    return dest, out


def check(plan, dest, servers) -> None:
    """Nothing overcommitted, every move on its roots (raises AssertionError)."""
    free = {k: s.free for t in dest for k, s in t.stocks.items()}
    by_id = {s.id: s for s in servers}
    for m in plan.moves:
        roots = by_id[m.server_id].roots
        assert roots is None or m.root in roots, m
        for rp, res in m.allocations.items():
            for rc, a in res.items():
                free[(rp, rc)] -= a
    over = {k: v for k, v in free.items() if v < 0}
    assert not over, over


def measure(servers: int, hosts: int) -> list[dict]:
    """One row per path: servers, hosts, placed, greedy's count, method, optimal, seconds, the MIP's size."""
    from minbw.plan import drain
    from minbw.plan.drain import plan_drain

    rows = []
    for case, used, method in (("greedy path", (0.6, 0.9), "auto"), ("forced exact", (0.6, 0.9), "exact"),
                               ("tight: auto", (0.85, 0.97), "auto")):
        dest, built = workload(servers, hosts, used=used)
        sizes = {}
        original = drain.maximise

        def counting(costs, upper, rows_, **kw):
            sizes.update(columns=len(costs), rows=len(rows_), nonzeros=sum(len(r.cols) for r in rows_))
            t = time.perf_counter()
            out = original(costs, upper, rows_, **kw)
            sizes.update(solver_s=time.perf_counter() - t, solver_status=out.status)
            return out

        drain.maximise = counting
        try:
            t = time.perf_counter()
            plan = plan_drain("source", built, dest, method=method)
            seconds = time.perf_counter() - t
        finally:
            drain.maximise = original
        check(plan, dest, built)
        row = {"case": case, "servers": servers, "hosts": hosts, "placed": len(plan.moves),
               "greedy": plan.greedy_moves, "method": plan.method, "optimal": plan.optimal, "s": seconds,
               **sizes, "notes": list(plan.notes)}
        progress(f"drain: {case}: {row}")
        rows.append(row)
    return rows


def run(ctx) -> Section:
    n = max(ctx.sizes) if ctx.sizes else 1000
    rows = measure(n, n)
    table = Table(f"drain plan, {n} servers x {n} hosts (pure, no Placement)", [
        Column("case", "case"), Column("placed", "placed"), Column("greedy", "greedy placed"),
        Column("method", "answer"), Column("optimal", "optimal"), Column("s", "seconds", "{:.2f}"),
        Column("solver_s", "in HiGHS", "{:.2f}"),
        Column("columns", "MIP columns"), Column("rows", "MIP rows"), Column("nonzeros", "nonzeros")], rows)
    notes = sorted({n for r in rows for n in r["notes"]})
    return Section("drain", "Drain plan (issue 45)", [table], notes=notes, data={"rows": rows})


if __name__ == "__main__":
    servers = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    hosts = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    for r in measure(servers, hosts):
        print(r)
