"""minbw on the production-style Placement: uWSGI with 4 worker processes on MariaDB (noauth2), and behind
a real Keystone whose tokens expire during the run. Started by the session fixtures ``prod_placement`` and
``prod_placement_keystone`` (tests/conftest.py, tests/prodplacement/prodplacement.sh)."""
from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import time
import traceback
import uuid

import pytest

from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.ops import claims, sync
from minbw.placement.client import Placement
from tests.conftest import KEYSTONE_TOKEN_SECONDS, CallCounter, wipe

FLAVOR = ["--resource", "VCPU=1", "--resource", "MEMORY_MB=256", "--resource", "DISK_GB=1"]
KBPS = 1000
PORT_ID = "99a97b12-6364-4d10-8d8e-c3dab4161691"


def _api(server):
    conn = server.connect()
    api = Placement(conn)
    api.counter = CallCounter(conn)
    return api


@pytest.fixture
def prod(prod_placement):
    api = _api(prod_placement)
    wipe(api)
    api.counter.reset()
    return api


def make_hosts(api, names, ovs_kbps, sriov_kbps=None, vcpu=1000):
    """Compute-node roots (as nova-compute makes them) and their agents' providers by minbw's sync."""
    for name in names:
        root = str(uuid.uuid5(uuid.NAMESPACE_DNS, name))
        api.create_provider(root, name, None)
        api.set_inventories(root, {"VCPU": {"total": vcpu}, "MEMORY_MB": {"total": 1_000_000},
                                   "DISK_GB": {"total": 10_000}}, 0)
    _, result = sync.sync(api, desired_state(agent_configs(names, ovs_kbps, sriov_kbps)))
    return result


def agent_configs(names, ovs_kbps, sriov_kbps=None):
    out = []
    for name in names:
        out.append(load_agent_ini(f"[ovs]\nbridge_mappings = physnet0:br-phys0\n"
                                  f"resource_provider_bandwidths = br-phys0:{ovs_kbps}:{ovs_kbps}\n",
                                  source=f"{name}/openvswitch_agent.ini", host=name))
        if sriov_kbps:
            out.append(load_agent_ini(f"[sriov_nic]\nphysical_device_mappings = physnet1:ens1f0\n"
                                      f"resource_provider_bandwidths = ens1f0:{sriov_kbps}:{sriov_kbps}\n",
                                      source=f"{name}/sriov_agent.ini", host=name))
    return out


def request_json(tmp_path):
    from minbw.cli.shell import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["request", "--port-id", PORT_ID, "--qos-port", f"min_bw:egress:{KBPS},min_bw:ingress:{KBPS}"]) == 0
    path = tmp_path / "port.json"
    path.write_text(out.getvalue())
    return path


def no_overcommit(api) -> list[str]:
    """Every provider's usage against its capacity, ((total - reserved) * allocation_ratio): the excesses."""
    bad = []
    for p in api.list_providers():
        invs, _ = api.get_inventories(p.uuid)
        usages = api.provider_usages(p.uuid)
        for rc, used in usages.items():
            inv = invs[rc]
            cap = (inv["total"] - inv.get("reserved", 0)) * inv.get("allocation_ratio", 1.0)
            if used > cap:
                bad.append(f"{p.name} {rc}: used {used} > capacity {cap}")
    return bad


# ---------------------------------------------------------------- sync and claim on the multi-worker Placement

def test_sync_and_claim_on_multiworker_mariadb(prod, prod_placement, tmp_path, monkeypatch):
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(prod_placement.clouds_yaml))
    names = [f"prod-{i:02d}" for i in range(12)]
    cold = make_hosts(prod, names, 10_000_000, 25_000_000)
    assert cold.writes > 0
    prod.counter.reset()
    plan, warm = sync.sync(prod, desired_state(agent_configs(names, 10_000_000, 25_000_000)))
    assert prod.counter.writes == 0 and not plan.ops and warm is None
    assert len(prod.list_providers()) == 12 * 5   # root, OVS agent + bridge, SR-IOV agent + PF per host

    from minbw.cli.shell import main
    port = request_json(tmp_path)
    consumer = str(uuid.uuid4())
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["--os-cloud", prod_placement.cloud, "claim", "--consumer", consumer, "--project-id", "p",
                   "--user-id", "u", *FLAVOR, "--port-request", f"{PORT_ID}={port}", "--json"])
    assert rc == 0, err.getvalue()
    got = json.loads(out.getvalue())
    assert got["claimed"] is True and got["host_name"] in names
    allocs = prod.get_allocations(consumer)["allocations"]
    assert sum(a["resources"].get("NET_BW_EGR_KILOBIT_PER_SEC", 0) for a in allocs.values()) == KBPS
    assert claims.free(prod, consumer) and not prod.get_allocations(consumer)["allocations"]
    # really several worker processes on MariaDB answered (uWSGI's request log names the worker's pid)
    assert len(prod_placement.worker_pids()) == 4
    assert len(prod_placement.serving_pids() & set(prod_placement.worker_pids())) >= 2
    assert "mysql+pymysql://" in (prod_placement.state_dir / "etc/placement/placement.conf").read_text()


# ---------------------------------------------------------------- concurrent claimers, more demand than bandwidth

def _cli_claimer(job):
    """One claimer process: ``minbw claim`` (the CLI's main, in-process) for each consumer, all claimers
    starting at the same instant. Returns (consumer, exit code, stdout, stderr)."""
    clouds_yaml, cloud, consumers, start_at, args = job
    import os
    import warnings
    warnings.filterwarnings("ignore")
    os.environ["OS_CLIENT_CONFIG_FILE"] = clouds_yaml
    from minbw.cli.shell import main
    time.sleep(max(0.0, start_at - time.time()))
    out = []
    for c in consumers:
        o, e = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
                rc = main(["--os-cloud", cloud, "claim", "--consumer", c, *args, "--json"])
        except BaseException:  # a traceback reaching the user: the test reports it
            rc, e = "traceback", io.StringIO(traceback.format_exc())
        out.append((c, rc, o.getvalue(), e.getvalue()))
    return out


@pytest.mark.parametrize("claimers", [8, 16, 32])
def test_concurrent_claimers_never_overcommit(prod, prod_placement, tmp_path, claimers):
    per_claimer = 3
    demand = claimers * per_claimer
    fits = demand // 2                       # bandwidth for half of the claims, spread over 2 hosts
    per_host = fits // 2
    make_hosts(prod, ["busy-0", "busy-1"], per_host * KBPS)
    port = request_json(tmp_path)
    args = ["--project-id", "p", "--user-id", "u", *FLAVOR, "--port-request", f"{PORT_ID}={port}"]
    consumers = [str(uuid.uuid4()) for _ in range(demand)]
    start_at = time.time() + 8               # every process imported and waiting: then all at once
    jobs = [(str(prod_placement.clouds_yaml), prod_placement.cloud, consumers[i::claimers], start_at, args)
            for i in range(claimers)]
    with multiprocessing.get_context("spawn").Pool(claimers) as pool:
        results = [r for chunk in pool.map(_cli_claimer, jobs) for r in chunk]
    assert len(results) == demand
    tracebacks = [r for r in results if r[1] == "traceback" or "Traceback" in r[3]]
    assert not tracebacks, tracebacks[0]
    claimed = [r for r in results if r[1] == 0]
    failed = [r for r in results if r[1] != 0]

    # 0 overcommit: Placement's usages never above inventory, and they are exactly the successful claims
    assert no_overcommit(prod) == []
    bridges = [p for p in prod.list_providers() if p.name.endswith(":br-phys0")]
    used = sum(prod.provider_usages(b.uuid).get("NET_BW_EGR_KILOBIT_PER_SEC", 0) for b in bridges)
    assert used == len(claimed) * KBPS <= fits * KBPS
    for c, _, out, _ in claimed:
        assert json.loads(out)["claimed"] is True
        allocs = prod.get_allocations(c)["allocations"]
        assert sum(a["resources"].get("NET_BW_EGR_KILOBIT_PER_SEC", 0) for a in allocs.values()) == KBPS
    # every failure explained: exit 4 (no valid host), the reason on stderr, nothing allocated
    assert len(failed) >= demand - fits
    for c, rc, out, err in failed:
        assert rc == 4, (rc, err)
        assert err.startswith("minbw: No valid host: "), err
        assert ("largest free amount is" in err or "taken by others" in err), err
        assert json.loads(out)["claimed"] is False
        assert not prod.get_allocations(c)["allocations"]
    # the bandwidth was not left idle by conflicts: at most a few claims lost to exhausted retries
    assert len(claimed) >= fits - claimers // 8, (len(claimed), fits)


# ---------------------------------------------------------------- Keystone tokens expiring during a run

def test_token_expiring_during_a_long_run_reauthenticates(prod_placement_keystone):
    """Keystone's tokens live KEYSTONE_TOKEN_SECONDS; a sync and a loop of claims that outlast the first token
    finish, each request authenticated: keystoneauth fetches a new token whenever the one it holds expires
    within 120 s (MIN_TOKEN_LIFE_SECONDS), so with tokens this short every request gets a fresh one."""
    server = prod_placement_keystone
    conn = server.connect()
    api = Placement(conn)
    counter = CallCounter(conn)
    wipe(api)
    issued0 = server.tokens_issued()
    t0 = time.time()
    first_token_expires = conn.session.auth.get_auth_ref(conn.session).expires.timestamp()
    assert first_token_expires - t0 <= KEYSTONE_TOKEN_SECONDS + 2
    result = make_hosts(api, ["ks-0", "ks-1"], 10_000_000)
    assert result.writes
    from minbw.model.requests import ServerRequest
    from minbw.neutron.port_request import QosRule, Segment, build_port_request
    req = ServerRequest(extra_resources={"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}, ports=(build_port_request(
        PORT_ID, [QosRule(str(uuid.uuid4()), "minimum_bandwidth", "egress", KBPS)], [Segment("vlan", "physnet0")],
        "normal"),))
    done = 0
    while (time.time() < first_token_expires + 5 or done < 3) and done < 500:
        claims.claim(api, str(uuid.uuid4()), req, project_id="p", user_id="u")
        done += 1
    elapsed = time.time() - t0
    assert time.time() > first_token_expires + 5, "the run did not outlast its first token"
    bridges = [p for p in api.list_providers() if p.name.endswith(":br-phys0")]
    assert sum(api.provider_usages(b.uuid).get("NET_BW_EGR_KILOBIT_PER_SEC", 0) for b in bridges) == done * KBPS
    auth_calls = [c for c in counter.calls if c[0] == "POST" and c[1].endswith("/auth/tokens")]
    issued = server.tokens_issued() - issued0
    placement_calls = [c for c in counter.calls if "/auth/tokens" not in c[1] and not c[1].startswith("/v3")]
    # several tokens were needed and issued by Keystone (not one token used past its expiry)
    assert len(auth_calls) >= 2 and issued >= len(auth_calls), (len(auth_calls), issued)
    assert issued >= elapsed // KEYSTONE_TOKEN_SECONDS
    assert done >= 1 and placement_calls, counter.calls[:5]
    print(f"\n{elapsed:.0f} s, {len(placement_calls)} Placement requests, {len(auth_calls)} token requests by the "
          f"client, {issued} tokens issued by Keystone (Placement's keystonemiddleware included)")
