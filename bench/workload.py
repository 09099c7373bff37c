"""The fleet the benchmarks build through Placement's API, shared by the sections and the scripts that build it
ahead (bench/exporter_scale_build.py): each host's agent files (an OVS agent with two bridges, an SR-IOV agent with
two PFs), its compute node root as nova-compute makes it, minbw's own sync of the agents' providers, the QoS
consumers (VCPU 1 on the root, 1000 kbps each way on the first bridge), and Placement's database dumped and loaded
(the production-style Placement's MariaDB). Nothing here measures: the sections time what they call."""
from __future__ import annotations

import gzip
import shutil
import subprocess
import threading
import time
import uuid as uuidlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import BenchError, loadavg, progress

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
ROOT_THREADS_ABOVE = 1000    # above this many hosts make_roots makes the (uncounted) roots 8 hosts at once
ROOT_THREADS = 8
SYNC_WORKERS = 16
HOSTS_PER_POST = 10
CONSUMER_THREADS = 4
CONSUMERS_PER_HOST = 10
EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"


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


def make_root(api, host: str) -> None:
    """``host``'s compute node as nova-compute makes it: the provider, its inventories, COMPUTE_NODE and OWNER_NOVA."""
    from minbw.model.providers import NOVA_ROOT_TRAITS, freeze_inventories
    prov = api.create_provider(root_uuid(host), host, None)
    generation = api.set_inventories(prov.uuid, freeze_inventories(ROOT_INVENTORIES), prov.generation)
    api.set_provider_traits(prov.uuid, NOVA_ROOT_TRAITS, generation)


def make_roots(server, hosts: list[str]) -> None:
    """make_root for each host, one after the other; above ROOT_THREADS_ABOVE hosts :func:`make_roots_at_once`."""
    if len(hosts) > ROOT_THREADS_ABOVE:  # the same calls, 8 hosts at once (not measured)
        make_roots_at_once(server, hosts)
        return
    from minbw.placement.client import Placement
    api = Placement(server.connect())
    for host in hosts:
        make_root(api, host)


def consumer_uuid(host: str, j: int) -> str:
    """The reports section's consumers (bench/reports_bench.py)."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, f"{host}-consumer-{j}"))


def make_roots_at_once(server, hosts: list[str], threads: int = ROOT_THREADS) -> dict:
    """make_root for each host, ``threads`` hosts at once: the row of the build's table."""
    from minbw.placement.client import Placement
    api = Placement(server.connect())
    t = time.perf_counter()
    step = max(1000, len(hosts) // 10)
    with ThreadPoolExecutor(threads) as pool:
        for i, _ in enumerate(pool.map(lambda host: make_root(api, host), hosts), 1):
            if i % step == 0:
                progress(f"exporter_scale: roots {i}/{len(hosts)}")
    return {"step": "roots (nova-compute's calls)", "how": f"{threads} hosts at once", "calls": api.calls,
            "s": time.perf_counter() - t, "load": loadavg()}


def sync_agents(server, files: dict, cache_file: Path, workers: int = SYNC_WORKERS) -> dict:
    """minbw's own sync of every host's agent files, ``workers`` host trees at once, filling ``cache_file``."""
    from minbw.neutron.agentconf import load_agent_ini
    from minbw.neutron.provider_tree import desired_state
    from minbw.ops.sync import summary, sync_providers
    from minbw.placement.client import Placement
    from minbw.cache.providers import ProviderCache
    api = Placement(server.connect())
    t = time.perf_counter()
    desired = desired_state([load_agent_ini(p.read_text(), source=str(p)) for h in files for p in files[h]])
    cache = ProviderCache(cache_file, api.endpoint())

    def every(step, done, total):
        if done % 10000 == 0:
            progress(f"exporter_scale: sync {step} {done}/{total}")
    plan, result = sync_providers(api, desired, progress=every, cache=cache, workers=workers)
    seconds = time.perf_counter() - t
    line = summary(desired, plan, result, seconds=seconds, calls=api.calls, cache=cache)
    progress(f"exporter_scale: sync: {line}")
    if result is None or result.writes != api.writes:
        raise BenchError(f"exporter_scale: the sync wrote {api.writes} times, its result says "
                         f"{result.writes if result else None}")
    return {"step": "agents' providers (minbw's sync)", "how": f"workers {workers}, cache on", "calls": api.calls,
            "s": seconds, "load": loadavg(), "summary": line}


CONFLICT_RETRIES = 5  # tries of one bulk POST /allocations answered 409 placement.concurrent_update


def post_consumers(server, hosts: list[str], per_post: int = HOSTS_PER_POST, threads: int = CONSUMER_THREADS) -> dict:
    """The consumers of every host by bulk ``POST /allocations``, ``per_post`` hosts' consumers per request."""
    from minbw.errors import ConcurrentUpdate
    from minbw.neutron import naming
    from minbw.placement.client import Placement
    api = Placement(server.connect())
    kind = naming.AGENT_KINDS[naming.OVS]
    groups = [hosts[i:i + per_post] for i in range(0, len(hosts), per_post)]

    def post(group):
        bodies = {}
        for host in group:
            bridge = naming.device_rp_uuid(kind, host, "br-phys0")
            for j in range(CONSUMERS_PER_HOST):
                bodies[consumer_uuid(host, j)] = {
                    "allocations": {root_uuid(host): {"resources": {"VCPU": 1}},
                                    bridge: {"resources": {EGR: 1000, IGR: 1000}}},
                    "project_id": "bench", "user_id": "bench", "consumer_generation": None}
        for attempt in range(1, CONFLICT_RETRIES + 1):  # as nova-compute's report client retries a 409
            try:
                api.post_allocations(bodies)
                return
            except ConcurrentUpdate:
                if attempt == CONFLICT_RETRIES:
                    raise
                with lock:
                    conflicts[0] += 1
                time.sleep(0.1 * attempt)
    lock, conflicts = threading.Lock(), [0]
    t = time.perf_counter()
    step = max(1, len(groups) // 10)
    with ThreadPoolExecutor(threads) as pool:
        for i, _ in enumerate(pool.map(post, groups), 1):
            if i % step == 0:
                progress(f"exporter_scale: consumers of {min(i * per_post, len(hosts))}/{len(hosts)} hosts")
    return {"step": f"{len(hosts) * CONSUMERS_PER_HOST} consumers (bulk POST /allocations)",
            "how": f"{per_post * CONSUMERS_PER_HOST} consumers per request, {threads} requests at once; "
                   f"{conflicts[0]} answers 409 placement.concurrent_update, retried",
            "calls": api.calls, "s": time.perf_counter() - t, "load": loadavg()}


def check_workload(server, n: int) -> dict:
    """Through the API: 7 providers per host, and the bench project's usage of every consumer."""
    from minbw.placement.client import Placement
    api = Placement(server.connect())
    providers = api.list_providers()
    usages = api.request("get", "/usages?project_id=bench", "1.9")["usages"]
    consumers = n * CONSUMERS_PER_HOST
    want = {"VCPU": consumers, EGR: consumers * 1000, IGR: consumers * 1000}
    if len(providers) != 7 * n or {k: usages.get(k) for k in want} != want:
        raise BenchError(f"exporter_scale: the workload: {len(providers)} providers (want {7 * n}), bench's usage "
                         f"{usages} (want {want})")
    out = {"providers": len(providers), "usages": usages}
    progress(f"exporter_scale: checked: {len(providers)} providers, project bench's usage {usages}")
    return out


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


def mysql_socket(server) -> Path:
    return Path(server.state_dir) / "run" / "mysql.sock"


def dump(server, path: Path) -> None:
    """Placement's database, as ``mariadb-dump`` writes it, gzipped into ``path``."""
    with gzip.open(path, "wb", compresslevel=1) as out:
        proc = subprocess.Popen(["mariadb-dump", f"--socket={mysql_socket(server)}", "-uroot", "--single-transaction",
                                 "--quick", "placement"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        shutil.copyfileobj(proc.stdout, out, 1 << 20)
        err = proc.stderr.read().decode()
        if proc.wait() != 0:
            raise BenchError(f"mariadb-dump failed: {err}")


def restore(server, path: Path) -> float:
    """Load the dump at ``path`` into ``server``'s (fresh) Placement database; its seconds."""
    t = time.perf_counter()
    proc = subprocess.Popen(["mariadb", f"--socket={mysql_socket(server)}", "-uroot", "placement"],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    with gzip.open(path, "rb") as f:
        shutil.copyfileobj(f, proc.stdin, 1 << 20)
    proc.stdin.close()
    err = proc.stderr.read().decode()
    if proc.wait() != 0:
        raise BenchError(f"loading {path} failed: {err}")
    _reload(server)
    return time.perf_counter() - t


def _reload(server) -> None:
    """uWSGI's graceful reload (SIGHUP to its master), so that no worker keeps a trait or resource class id it
    cached from the database before the load; then wait until Placement answers again."""
    import os
    import signal
    import urllib.request
    master = int((Path(server.state_dir) / "run" / "placement.pid").read_text())
    os.kill(master, signal.SIGHUP)
    time.sleep(2)
    for _ in range(300):
        try:
            with urllib.request.urlopen(server.url + "/", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise BenchError("Placement did not answer after its reload")
