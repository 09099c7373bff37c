"""Faults on the Galera Placement (tests/support/galera/galera.sh), in both modes: a Galera node killed (SIGKILL)
during a cold ``minbw provider sync`` of 100 hosts, then rejoining; one of the two Placement API processes (uWSGI)
killed during a claim storm, HAProxy moving its clients to the other. The node killed during a claim storm is
test_galera.py's (it is also the reduced form's fault).

Opt-in as test_galera.py, and only with MINBW_GALERA=1 (the full set; ``make galera``): one cluster per mode for
this module."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from minbw.neutron import naming
from tests.galera.test_galera import (api, claims_after, free_claims, galera, no_orphans, pool,  # noqa: F401
                                      restart_and_rejoin, said, storm_with_a_fault, wait_until)
from tests.prodplacement.test_prod_placement import no_overcommit
from tests.support.compute_roots import compute_root

pytestmark = pytest.mark.skipif(os.environ.get("MINBW_GALERA") != "1",
                                reason="faults on the Galera Placement: `make galera` runs these (MINBW_GALERA=1)")

HOSTS = 100
OVS_KBPS, SRIOV_KBPS = 10_000_000, 25_000_000


def agent_files(tmp_path, names):
    """Each host's two agent ini files, as its agents read them ([DEFAULT] host, the OVS bridge and the SR-IOV
    PF with their bandwidths): the ``--agent-config`` arguments of one sync of them all."""
    args = []
    for name in names:
        ovs, sriov = tmp_path / f"{name}-openvswitch_agent.ini", tmp_path / f"{name}-sriov_agent.ini"
        ovs.write_text(f"[DEFAULT]\nhost = {name}\n[ovs]\nbridge_mappings = physnet0:br-phys0\n"
                       f"resource_provider_bandwidths = br-phys0:{OVS_KBPS}:{OVS_KBPS}\n")
        sriov.write_text(f"[DEFAULT]\nhost = {name}\n[sriov_nic]\nphysical_device_mappings = physnet1:ens1f0\n"
                         f"resource_provider_bandwidths = ens1f0:{SRIOV_KBPS}:{SRIOV_KBPS}\n")
        args += ["--agent-config", str(ovs), "--agent-config", str(sriov)]
    return args


def sql_overcommit(galera, node) -> str:
    """Every inventory whose allocations exceed its capacity, ((total - reserved) * allocation_ratio), read on
    one node in one query (a sync of 100 hosts has 500 providers: reading their usages through the API is long)."""
    return galera.sql(node, "SELECT i.resource_provider_id, i.resource_class_id, COALESCE(SUM(a.used), 0) AS used, "
                            "(i.total - i.reserved) * i.allocation_ratio AS cap FROM placement.inventories i "
                            "LEFT JOIN placement.allocations a ON a.resource_provider_id = i.resource_provider_id "
                            "AND a.resource_class_id = i.resource_class_id GROUP BY i.id HAVING used > cap").strip()


def failure_lines(stderr: str) -> list[str]:
    """What a run reported as failed: its ``minbw: error:`` and ``minbw: skipped:`` lines. Every line of stderr
    is minbw's own (``minbw: ...``: progress, warnings, failures), so no failure spans lines (no traceback)."""
    lines = stderr.strip().splitlines()
    assert all(line.startswith("minbw: ") for line in lines), stderr[-3000:]
    return [line for line in lines if line.startswith(("minbw: error: ", "minbw: skipped: "))]


def check_providers(api, names):
    """Every host's tree exactly once: provider names unique, and each agent's and device's provider under
    Neutron's uuid5 UUID (a second provider of a name would be a duplicate)."""
    providers = api.list_providers()
    by_name = Counter(p.name for p in providers)
    assert [n for n, k in by_name.items() if k > 1] == []
    uuid_of = {p.name: p.uuid for p in providers}
    ovs, sriov = naming.AGENT_KINDS[naming.OVS], naming.AGENT_KINDS[naming.SRIOV]
    for h in names:
        want = {naming.agent_rp_name(ovs, h): naming.agent_rp_uuid(ovs, h),
                naming.device_rp_name(ovs, h, "br-phys0"): naming.device_rp_uuid(ovs, h, "br-phys0"),
                naming.agent_rp_name(sriov, h): naming.agent_rp_uuid(sriov, h),
                naming.device_rp_name(sriov, h, "ens1f0"): naming.device_rp_uuid(sriov, h, "ens1f0")}
        assert {n: uuid_of.get(n) for n in want} == want, h
    assert len(providers) == len(names) * 5
    return len(providers)


def test_a_node_killed_during_a_cold_sync_of_100_hosts(api, galera, tmp_path):
    """``minbw provider sync`` of 100 hosts' agent files (OVS and SR-IOV: 400 providers to create) on a Placement
    holding only their compute nodes; once about a fifth of the providers are there, kill -9 of a Galera node
    (single-writer: node 1, the writer; multi-writer: node 2). Whatever the run reported as failed is one line
    naming the cause; the next run converges (then a full re-read plans 0 writes), no provider is duplicated,
    every one has Neutron's UUID, none is over capacity; the node rejoins."""
    victim = 1 if galera.mode == "single-writer" else 2
    watcher = 3
    names = [f"cold-{i:03d}" for i in range(HOSTS)]
    with ThreadPoolExecutor(8) as ex:   # the compute nodes, as nova-compute makes them
        list(ex.map(lambda n: compute_root(api, n, {"VCPU": {"total": 64}, "MEMORY_MB": {"total": 262144},
                                                    "DISK_GB": {"total": 1000}}), names))
    args = agent_files(tmp_path, names)
    cache = tmp_path / "cache.json"

    def sync(*extra, timeout=900):
        return subprocess.run([sys.executable, "-m", "minbw.cli", "provider", "sync", *args, *extra, "--json"],
                              capture_output=True, text=True, env=galera.env(), timeout=timeout)

    def providers_now():
        return int(galera.sql(watcher, "SELECT COUNT(*) FROM placement.resource_providers").strip())

    logs0 = galera.log_counts()
    t0 = time.time()
    run = subprocess.Popen([sys.executable, "-m", "minbw.cli", "provider", "sync", *args, "--cache", str(cache),
                            "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=galera.env())
    at_kill = wait_until("a fifth of the providers created", lambda: (n := providers_now()) >= HOSTS + 80 and n,
                         timeout=600)
    galera.kill_node(victim)
    t_kill = time.time() - t0
    out, err = run.communicate(timeout=900)
    first_s = time.time() - t0
    first_lines = failure_lines(err)
    first = json.loads(out) if out.strip() else {}
    assert run.returncode in (0, 1, 3), (run.returncode, err[-3000:])
    if run.returncode:
        assert first_lines, err[-3000:]   # a run that did not finish says why
    for line in first_lines:
        assert len(line) > 40, line       # the cause named, not a bare "failed"
    for n in (1, 2, 3):
        if n != victim:
            wait_until(f"node {n}: a primary cluster of 2",
                       lambda n=n: galera.wsrep(n)["wsrep_cluster_size"] == "2"
                       and galera.wsrep(n)["wsrep_cluster_status"] == "Primary", 60)
    # the next run (its cache as the killed run left it) converges; a full re-read then plans nothing
    second = sync("--cache", str(cache))
    assert second.returncode == 0 and not failure_lines(second.stderr), second.stderr[-3000:]
    second_doc = json.loads(second.stdout)
    check = sync("--no-cache", "--dry-run")
    assert check.returncode == 0, check.stderr[-3000:]
    assert json.loads(check.stdout)["writes"] == 0, check.stdout[-3000:]
    count = check_providers(api, names)
    assert sql_overcommit(galera, watcher) == ""
    logs = {k: v - logs0[k] for k, v in galera.log_counts().items()}
    # the node rejoins with what it missed
    rejoin, how = restart_and_rejoin(galera, victim)
    assert sql_overcommit(galera, victim) == ""
    counts = {n: galera.sql(n, "SELECT COUNT(*) FROM placement.resource_providers").strip() for n in (1, 2, 3)}
    assert set(counts.values()) == {str(count)}, counts
    orphans = no_orphans(galera, "after the rejoin")
    print(f"\n{galera.describe()}: cold sync of {HOSTS} hosts ({HOSTS * 4} providers to create), node {victim} "
          f"killed {t_kill:.1f} s in with {at_kill - HOSTS} created: exit {run.returncode} after {first_s:.0f} s, "
          f"{first.get('summary', '(no JSON)')!r}; its failure lines: {first_lines}; the next run: exit "
          f"{second.returncode}, {second_doc.get('summary')!r}; a full re-read then planned 0 writes; {count} "
          f"providers, names unique, Neutron's UUIDs, 0 over capacity; Placement's logs: {logs}; node {victim} "
          f"rejoined by {how} in {rejoin:.0f} s, every node {count} providers; {orphans}")


def test_an_api_process_killed_mid_storm(api, galera, tmp_path, pool, monkeypatch):
    """kill -9 of Placement API process 1 (its uWSGI master and workers) 1 s into 32 claims by 8 claimers:
    HAProxy moves the clients to process 2 (a refused connection is redispatched at once; the process is marked
    DOWN after 5 failed checks); every accepted claim holds exactly its bandwidth, every failed one is one line
    naming its cause and its consumer is read back, none over capacity, claims after the kill succeed; the process
    started again is back in HAProxy."""
    logs0 = galera.log_counts()
    got, results, t_kill, args = storm_with_a_fault(galera, api, tmp_path, pool, lambda: galera.kill_api(1), "api")
    assert no_overcommit(api) == []
    wait_until("HAProxy marks API process 1 DOWN",
               lambda: galera.haproxy_servers()[("placement_api", "api1")]["status"].startswith("DOWN"), 60)
    served2 = int(galera.haproxy_servers()[("placement_api", "api2")]["stot"])
    after = claims_after(galera, args, monkeypatch)
    assert int(galera.haproxy_servers()[("placement_api", "api2")]["stot"]) > served2   # process 2 answered them
    logs = {k: v - logs0[k] for k, v in galera.log_counts().items()}
    galera.start_api(1)
    assert galera.haproxy_servers()[("placement_api", "api1")]["status"] == "UP"
    orphans = no_orphans(galera, "after the restart")
    free_claims(api, results, after)
    orphans += "; " + no_orphans(galera, "once the claims were freed")
    print(f"\n{galera.describe()}: API process 1 killed {t_kill:.1f} s into {said(got, results)}; {len(after)} "
          f"claims after the kill succeeded (API process 2); Placement's logs: {logs}; {orphans}")
