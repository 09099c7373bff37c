"""Requests, candidates, mapping, claims and the no-valid-host diagnosis against the real Placement."""
from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from minbw.ops import claims
from minbw.ops import sync
from minbw.neutron.agentconf import load_agent_ini
from minbw.errors import ConcurrentUpdate, MicroversionUnsupported
from minbw.placement.mapping import mapping_from_candidate, solve
from minbw.placement.client import RetryPolicy
from minbw.neutron.provider_tree import desired_state
from minbw.model.requests import ServerRequest
from minbw.placement.query import build_query
from minbw.neutron.port_request import Segment, build_port_request
from minbw.neutron.qos import QosRule
from tests.support.claimers import warm_pool
from tests.support.compute_roots import compute_root
from tests.support import cli_forks

FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}


def host(api, name, ovs="", sriov="", vcpu=8):
    """A compute node root (as nova-compute makes it) and its agents' providers (our sync)."""
    inv = {"MEMORY_MB": {"total": 16384}, "DISK_GB": {"total": 100}}
    if vcpu:
        inv["VCPU"] = {"total": vcpu}
    root = compute_root(api, name, inv)
    texts = [t for t in (ovs and "[ovs]\n" + ovs, sriov and "[sriov_nic]\n" + sriov) if t]
    sync.sync_providers(api, desired_state([load_agent_ini(t, source="agent.ini", host=name) for t in texts]))
    return root


def bw_port(physnets=("physnet0",), kbps=1000, vnic="normal", pps=None, port_id=None):
    port_id = port_id or str(uuid.uuid4())
    rules = [QosRule(str(uuid.uuid4()), "minimum_bandwidth", "egress", kbps),
             QosRule(str(uuid.uuid4()), "minimum_bandwidth", "ingress", kbps)]
    if pps:
        rules.append(QosRule(str(uuid.uuid4()), "minimum_packet_rate", "any", pps))
    return rules, [Segment("vlan", p) for p in physnets], vnic, port_id


def port_request(physnets=("physnet0",), kbps=1000, vnic="normal", pps=None, any_traits=False):
    rules, segs, vnic, pid = bw_port(physnets, kbps, vnic, pps)
    return build_port_request(pid, rules, segs, vnic, any_traits=any_traits)


SEED_OVS = "bridge_mappings = public:br-ex,physnet0:br-test\nresource_provider_bandwidths = br-test:1500:1500,br-ex::1\n"
SEED_SRIOV = "physical_device_mappings = physnet0:ens5\nresource_provider_bandwidths = ens5:100000:100000\n"
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"


def names(api):
    return {p.uuid: p.name for p in api.list_providers()}


def usage(api, rp):
    return api.provider_usages(rp)


def test_seed_003_scenario(placement):
    host(placement, "devstack0", SEED_OVS, SEED_SRIOV)
    vm0 = claims.claim(placement, str(uuid.uuid4()), ServerRequest(extra_resources=FLAVOR, ports=(port_request(),)),
                       project_id="p", user_id="u")
    assert vm0.host_name is None and claims.with_host_name(placement, vm0).host_name == "devstack0"
    assert vm0.allocations[BR_TEST]["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}
    (port, profile), = vm0.binding_profiles.items()
    assert list(profile.values()) == [BR_TEST]
    assert usage(placement, BR_TEST) == {"NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}
    with pytest.raises(claims.NoValidHost) as err:
        claims.claim(placement, str(uuid.uuid4()), ServerRequest(extra_resources=FLAVOR, ports=(port_request(),)),
                     project_id="p", user_id="u")
    assert "NET_BW_EGR_KILOBIT_PER_SEC: needs 1000, the largest free amount is 500 on " \
           "devstack0:Open vSwitch agent:br-test (capacity 1500, used 1000)" in str(err.value)
    flavor_entry, port_entry = err.value.diagnosis
    assert flavor_entry.fits_alone is True and port_entry.fits_alone is False
    assert claims.free_allocations(placement, vm0.consumer) is True
    assert claims.free_allocations(placement, vm0.consumer) is False
    assert usage(placement, BR_TEST) == {"NET_BW_EGR_KILOBIT_PER_SEC": 0, "NET_BW_IGR_KILOBIT_PER_SEC": 0}


def test_the_diagnosis_asks_a_ports_group_alone_as_one_provider(placement):
    """A normal port asking 2000 kbps where its bridge has 1500 and an SR-IOV device of the same host and physnet
    has 100000: no candidate, and the diagnosis says the port's group does not fit, naming the bridge's room (the
    device's bandwidth does not count for a normal port)."""
    host(placement, "devstack0", SEED_OVS + "resource_provider_packet_processing_without_direction = :1000\n",
         SEED_SRIOV)
    with pytest.raises(claims.NoValidHost) as err:
        claims.claim(placement, str(uuid.uuid4()), ServerRequest(extra_resources=FLAVOR, ports=(port_request(kbps=2000),)),
                     project_id="p", user_id="u")
    flavor_entry, port_entry = err.value.diagnosis
    assert flavor_entry.fits_alone is True and port_entry.fits_alone is False, err.value.diagnosis
    assert "NET_BW_EGR_KILOBIT_PER_SEC: needs 2000, the largest free amount is 1500 on " \
           "devstack0:Open vSwitch agent:br-test (capacity 1500, used 0)" in str(err.value)


def test_legacy_port_request_gets_a_single_uuid_binding(placement):
    host(placement, "devstack0", SEED_OVS)
    pid = "99a97b12-6364-4d10-8d8e-c3dab4161691"
    req = ServerRequest.from_options(FLAVOR, port_requests=[{"port_id": pid, "resource_request": {
        "required": ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"],
        "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}}}])
    vm0 = claims.claim(placement, str(uuid.uuid4()), req, project_id="p", user_id="u")
    assert vm0.binding_profiles == {pid: BR_TEST}  # seed 003's binding:profile {"allocation": "f9c9ce07-..."}


def two_bridges(api, a=3000, b=1500):
    return host(api, "h1", f"bridge_mappings = physnet0:br-a,physnet1:br-b\n"
                           f"resource_provider_bandwidths = br-a:{a}:{a},br-b:{b}:{b}\n"
                           f"resource_provider_hypervisors = br-b:h1\n")


def test_two_qos_ports_group_policy_none_and_isolate(placement):
    host(placement, "h1", "bridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:3000:3000\n",
         "physical_device_mappings = physnet0:ens5\nresource_provider_bandwidths = ens5:3000:3000\n")
    p1, p2 = port_request(vnic="direct"), port_request(vnic="direct")
    n = names(placement)

    def placements(policy):
        req = ServerRequest(extra_resources=FLAVOR, ports=(p1, p2), group_policy=policy)
        cands = claims.get_candidates(placement, req)
        out = set()
        for ar in cands.allocation_requests:
            m = mapping_from_candidate(ar, cands.provider_summaries, req).group_providers()
            out.add((n[m[p1.groups[0].id]].split(":")[-1], n[m[p2.groups[0].id]].split(":")[-1]))
        return out
    # direct ports: OVS (switchdev) and SR-IOV both advertise direct
    assert placements("none") == {("br-a", "br-a"), ("br-a", "ens5"), ("ens5", "br-a"), ("ens5", "ens5")}
    assert placements("isolate") == {("br-a", "ens5"), ("ens5", "br-a")}
    # without group_policy Placement refuses several numbered groups; we default to none, as Nova
    assert build_query(ServerRequest(extra_resources=FLAVOR, ports=(p1, p2)), "1.39")[0]["group_policy"] == "none"


def test_sriov_two_pfs_on_one_physnet(placement):
    host(placement, "h1", sriov="physical_device_mappings = physnet0:ens5,physnet0:ens6\n"
                                "resource_provider_bandwidths = ens5:10000:10000,ens6:10000:10000\n")
    req = ServerRequest(extra_resources=FLAVOR, ports=(port_request(vnic="direct", kbps=6000),))
    cands = claims.get_candidates(placement, req)
    n = names(placement)
    pfs = sorted(n[mapping_from_candidate(ar, cands.provider_summaries, req).group_providers()[
        req.ports[0].groups[0].id]] for ar in cands.allocation_requests)
    assert pfs == ["h1:NIC Switch agent:ens5", "h1:NIC Switch agent:ens6"]
    first = claims.claim(placement, str(uuid.uuid4()), req, project_id="p", user_id="u")
    second = claims.claim(placement, str(uuid.uuid4()), ServerRequest(extra_resources=FLAVOR, ports=(
        port_request(vnic="direct", kbps=6000),)), project_id="p", user_id="u")
    # 6000 + 6000 > 10000: the second lands on the other PF, and its binding says which
    pf1, = first.binding_profiles[first.binding_profiles and next(iter(first.binding_profiles))].values()
    pf2, = second.binding_profiles[next(iter(second.binding_profiles))].values()
    assert {n[pf1], n[pf2]} == {"h1:NIC Switch agent:ens5", "h1:NIC Switch agent:ens6"}


def test_packet_rate_on_the_agent_provider_with_same_subtree(placement):
    host(placement, "h1", "bridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:3000:3000\n"
                          "resource_provider_packet_processing_without_direction = :1000\n")
    pr = port_request(pps=100)
    assert len(pr.groups) == 2 and len(pr.same_subtree) == 2
    req = ServerRequest(extra_resources=FLAVOR, ports=(pr,))
    params, mv = build_query(req, "1.39")
    assert mv == "1.36" and "same_subtree" in params
    claim = claims.claim(placement, str(uuid.uuid4()), req, project_id="p", user_id="u")
    n = names(placement)
    by_group = {g.id: n[claim.mapping[g.id][0]] for g in pr.groups}
    assert sorted(by_group.values()) == ["h1:Open vSwitch agent", "h1:Open vSwitch agent:br-a"]
    assert usage(placement, claim.mapping[pr.groups[1].id][0]) == {"NET_PACKET_RATE_KILOPACKET_PER_SEC": 100}


def test_multi_segment_any_traits_and_the_neutron_fallback(placement):
    two_bridges(placement)
    n = names(placement)
    for any_traits, expected in ((False, {"br-a"}), (True, {"br-a", "br-b"})):
        pr = port_request(physnets=("physnet0", "physnet1"), any_traits=any_traits)
        assert pr.mode == ("any-traits" if any_traits else "neutron")
        req = ServerRequest(extra_resources=FLAVOR, ports=(pr,))
        cands = claims.get_candidates(placement, req)
        assert cands.microversion == ("1.39" if any_traits else "1.36")  # Nova's microversion, or any-traits
        got = {n[mapping_from_candidate(ar, cands.provider_summaries, req).group_providers()[
            pr.groups[0].id]].split(":")[-1] for ar in cands.allocation_requests}
        assert got == expected


def test_microversion_negotiation_refuses_a_weaker_query():
    pr = port_request(physnets=("physnet0", "physnet1"), any_traits=True)
    with pytest.raises(MicroversionUnsupported, match="needs 1.39"):
        build_query(ServerRequest(extra_resources=FLAVOR, ports=(pr,)), "1.38")


@pytest.mark.parametrize("case", ["unknown-trait", "no-provider-has-trait", "capacity", "max_unit", "split-hosts"])
def test_diagnosis_for_each_kind_of_failure(placement, case):
    if case == "max_unit":
        host(placement, "h1", "bridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:5000:5000\n"
                              "resource_provider_inventory_defaults = max_unit:500\n")
    elif case == "split-hosts":
        host(placement, "h1", "bridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:5000:5000\n", vcpu=0)
        host(placement, "h2", "bridge_mappings = physnet1:br-b\nresource_provider_bandwidths = br-b:5000:5000\n")
    else:
        host(placement, "h1", SEED_OVS)
    physnet = {"unknown-trait": "nowhere", "no-provider-has-trait": "physnet1"}.get(case, "physnet0")
    if case == "no-provider-has-trait":
        placement.create_trait("CUSTOM_PHYSNET_PHYSNET1")
    flavor = dict(FLAVOR) if case != "split-hosts" else {"VCPU": 1}
    with pytest.raises(claims.NoValidHost) as err:
        claims.claim(placement, str(uuid.uuid4()), ServerRequest(extra_resources=flavor, ports=(
            port_request(physnets=(physnet,), kbps=2000),)), project_id="p", user_id="u")
    text = str(err.value)
    expected = {
        "unknown-trait": "trait CUSTOM_PHYSNET_NOWHERE does not exist in Placement",
        "no-provider-has-trait": "no provider has trait CUSTOM_PHYSNET_PHYSNET1",
        "capacity": "NET_BW_EGR_KILOBIT_PER_SEC: needs 2000, the largest free amount is 1500",
        "max_unit": "NET_BW_EGR_KILOBIT_PER_SEC: needs 2000, more than max_unit 500 of h1:Open vSwitch agent:br-a",
        "split-hosts": "flavor fits on h2; port",
    }[case]
    assert expected in text, text


def test_capacity_conflict_moves_to_the_next_host(placement):
    for h in ("h1", "h2"):
        host(placement, h, "bridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:1500:1500\n")
    req = ServerRequest(extra_resources=FLAVOR, ports=(port_request(),))
    stale = claims.get_candidates(placement, req)
    assert len(stale.by_host()) == 2
    first_host = stale.by_host()[0][0]
    # someone else takes the first host's bandwidth after we listed candidates
    other = claims.claim(placement, str(uuid.uuid4()), ServerRequest(extra_resources=FLAVOR, ports=(port_request(),),
                                                                     in_tree=first_host), project_id="p", user_id="u")
    assert other.host == first_host
    mine = claims.claim(placement, str(uuid.uuid4()), req, project_id="p", user_id="u", candidates=stale)
    assert mine.host != first_host
    assert [a.outcome for a in mine.attempts] == ["capacity", "claimed"]


def test_consumer_conflict_fails_clearly(placement):
    host(placement, "h1", SEED_OVS)
    consumer = str(uuid.uuid4())
    req = ServerRequest(extra_resources=FLAVOR, ports=(port_request(kbps=100),))
    claims.claim(placement, consumer, req, project_id="p", user_id="u")
    with pytest.raises(claims.ConsumerConflict, match=f"consumer {consumer} already has allocations"):
        claims.claim(placement, consumer, req, project_id="p", user_id="u")


def test_existing_claim_is_mapped_by_the_solver(placement):
    host(placement, "devstack0", SEED_OVS, SEED_SRIOV)
    req = ServerRequest(extra_resources=FLAVOR, ports=(port_request(),))
    made = claims.claim(placement, str(uuid.uuid4()), req, project_id="p", user_id="u")
    again = claims.existing_claim(placement, made.consumer, req)
    assert again.mapping_source == "solver" and again.binding_profiles == made.binding_profiles
    assert claims.existing_claim(placement, str(uuid.uuid4()), req) is None


def test_provider_generation_conflicts_are_retried_then_reported():
    """Placement retries provider generation conflicts itself, so a client rarely sees one: a stand-in
    API raises it (the one fault a real server cannot be made to produce on demand)."""
    class Flaky:
        retry = RetryPolicy()

        def __init__(self, failures):
            self.failures = failures
            self.puts = 0

        def put_allocations(self, consumer, body):
            self.puts += 1
            if self.puts <= self.failures:
                raise ConcurrentUpdate("generation conflict", status=409)

        def get_allocations(self, consumer):
            return {"allocations": {}, "consumer_generation": None}
    sleeps = []
    ok = Flaky(2)
    assert claims.put_new_consumer(ok, "c", {}, retries=4, sleep=sleeps.append) == "claimed"
    assert ok.puts == 3 and len(sleeps) == 2
    assert claims.put_new_consumer(Flaky(99), "c", {}, retries=4, sleep=sleeps.append) == "provider-conflict"


def _claimer(args):
    clouds_yaml, consumers, kbps = args
    import openstack.config
    from openstack import connection
    from minbw.placement.client import Placement
    cfg = openstack.config.OpenStackConfig(config_files=[clouds_yaml])
    api = Placement(connection.Connection(config=cfg.get_one(cloud="minbw-local")))
    out = []
    for c in consumers:
        rules, segs, vnic, pid = bw_port(kbps=kbps, port_id=c)
        req = ServerRequest(extra_resources={"VCPU": 1}, ports=(build_port_request(pid, rules, segs, vnic),))
        try:
            claim = claims.claim(api, c, req, project_id="p", user_id="u")
            out.append((c, "claimed", claim.host))
        except claims.NoValidHost as e:
            out.append((c, "no-valid-host", str(e)))
    return out


def test_eight_processes_claiming_for_96_consumers(placement, placement_server):
    """Shared bandwidth, real contention: usage never exceeds capacity, every success holds its
    allocation, every failure is explained. 8 processes claim 12 times each for 96 consumers where 40 fit (it
    was 200 where 80 fit: the same contention and the same exhaustion, at half the CPU)."""
    capacity = 5000
    for h in ("h1", "h2", "h3", "h4"):
        host(placement, h, f"bridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:{capacity}:{capacity}\n",
             vcpu=200)
    consumers = [str(uuid.uuid4()) for _ in range(96)]
    chunks = [(str(placement_server.clouds_yaml), consumers[i::8], 500) for i in range(8)]
    with warm_pool(8, _claimer) as pool:  # forked from a process that imported this module (tests/support/claimers.py)
        results = [r for chunk in pool.map(_claimer, chunks) for r in chunk]
    claimed = [r for r in results if r[1] == "claimed"]
    failed = [r for r in results if r[1] == "no-valid-host"]
    assert len(results) == 96 and len(claimed) == 4 * capacity // 500 == 40
    bridges = [p for p in placement.list_providers() if p.name.endswith(":br-a")]
    for rp in bridges:
        assert placement.provider_usages(rp.uuid)["NET_BW_EGR_KILOBIT_PER_SEC"] <= capacity
    for c, _, h in claimed:
        allocs = placement.get_allocations(c)["allocations"]
        assert sum(a["resources"].get("NET_BW_EGR_KILOBIT_PER_SEC", 0) for a in allocs.values()) == 500
    for c, _, why in failed:
        assert "No valid host" in why and ("largest free amount is" in why or "taken by others" in why), why
        assert not placement.get_allocations(c)["allocations"]


# ---------------------------------------------------------------- solver vs Placement's own mappings

trees = st.lists(st.fixed_dictionaries({
    "ovs": st.lists(st.tuples(st.sampled_from(["physnet0", "physnet1"]), st.sampled_from([0, 1000, 3000])),
                    max_size=2),
    "sriov": st.lists(st.tuples(st.sampled_from(["physnet0", "physnet1"]), st.sampled_from([1000, 3000])),
                      max_size=2),
    "pps": st.sampled_from([None, 500]),
}), min_size=1, max_size=2)
port_specs = st.lists(st.fixed_dictionaries({
    "physnets": st.sampled_from([("physnet0",), ("physnet1",), ("physnet0", "physnet1")]),
    "kbps": st.sampled_from([500, 1000, 2000]),
    "vnic": st.sampled_from(["normal", "direct"]),
    "pps": st.sampled_from([None, 100]),
    "any": st.booleans(),
}), min_size=1, max_size=2)


def _host_ini(i, spec):
    bridges = [(p, f"br-{j}", bw) for j, (p, bw) in enumerate(spec["ovs"])]
    bridges = list({p: (p, b, bw) for p, b, bw in bridges}.values())  # one bridge per physnet
    ovs = ""
    if bridges:
        ovs = "bridge_mappings = " + ",".join(f"{p}:{b}" for p, b, _ in bridges) + "\n"
        ovs += "resource_provider_bandwidths = " + ",".join(f"{b}:{bw}:{bw}" for _, b, bw in bridges) + "\n"
        if spec["pps"]:
            ovs += f"resource_provider_packet_processing_without_direction = :{spec['pps']}\n"
    sriov = ""
    if spec["sriov"]:
        pfs = [(p, f"ens{j}", bw) for j, (p, bw) in enumerate(spec["sriov"])]
        sriov = "physical_device_mappings = " + ",".join(f"{p}:{d}" for p, d, _ in pfs) + "\n"
        sriov += "resource_provider_bandwidths = " + ",".join(f"{d}:{bw}:{bw}" for _, d, bw in pfs) + "\n"
    return ovs, sriov


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trees, port_specs, st.sampled_from(["none", "isolate"]))
def test_solver_agrees_with_placements_mappings(placement, hosts, ports, policy):
    from tests.conftest import wipe
    wipe(placement)
    for i, spec in enumerate(hosts):
        host(placement, f"gen{i}", *_host_ini(i, spec))
    prs = []
    for p in ports:
        if p["pps"] and p["vnic"] != "normal":
            continue  # SR-IOV cannot serve packet-rate rules: build_port_request refuses, tested elsewhere
        prs.append(port_request(p["physnets"], p["kbps"], p["vnic"], p["pps"], p["any"]))
    req = ServerRequest(extra_resources={"VCPU": 1}, ports=tuple(prs), group_policy=policy if len(
        [g for pr in prs for g in pr.groups]) > 1 else None)
    try:
        cands = claims.get_candidates(placement, req)
    except MicroversionUnsupported:
        return
    for ar in cands.allocation_requests:
        theirs = {k: sorted(v) for k, v in ar["mappings"].items()}
        ours = solve(ar, cands.provider_summaries, req)
        assert theirs in [dict(s) for s in ours.solutions], (theirs, ours.describe())
        if ours.status == "unique":
            assert ours.solutions[0] == theirs


def test_post_allocations_moves_a_claim_between_consumers_atomically(placement):
    """POST /allocations: a migration record takes over a server's allocations in one call (moves)."""
    host(placement, "devstack0", SEED_OVS)
    req = ServerRequest(extra_resources=FLAVOR, ports=(port_request(),))
    server = claims.claim(placement, str(uuid.uuid4()), req, project_id="p", user_id="u")
    migration = str(uuid.uuid4())
    current = placement.get_allocations(server.consumer)
    placement.post_allocations({
        migration: {"allocations": current["allocations"], "project_id": "p", "user_id": "u",
                    "consumer_generation": None},
        server.consumer: {"allocations": {}, "project_id": "p", "user_id": "u",
                          "consumer_generation": current["consumer_generation"]}})
    assert placement.get_allocations(server.consumer)["allocations"] == {}
    assert placement.get_allocations(migration)["allocations"][BR_TEST]["resources"] == {
        "NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}


def test_cli_claim_and_free_json(placement, placement_server, tmp_path):
    import json
    import sys
    host(placement, "devstack0", SEED_OVS)
    port = tmp_path / "port.json"

    def run(*a):
        return cli_forks.run([sys.executable, "-m", "minbw.cli", *a], capture_output=True, text=True,
                              env=placement_server.env(), timeout=120)
    made = run("request", "show", "--port-id", "99a97b12-6364-4d10-8d8e-c3dab4161691", "--qos-port", "min_bw:egress:1000,min_bw:ingress:1000")
    assert made.returncode == 0, made.stderr
    port.write_text(made.stdout)
    args = ["--project-id", "p", "--user-id", "u", "--resource", "VCPU=1", "--resource", "MEMORY_MB=256", "--resource", "DISK_GB=1",
            "--port-request", f"99a97b12-6364-4d10-8d8e-c3dab4161691={port}", "--json"]
    ok = run("allocation", "create", "--consumer", "71cb7e04-3d5a-40f9-a99f-07f0d0831741", *args)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["host_name"] == "devstack0"
    no = run("allocation", "create", "--consumer", "0d4b5cf1-6a3c-4a4e-9a52-3b0c1e7f7a11", *args)
    assert no.returncode == 4  # no valid host: not an error (1)
    out = json.loads(no.stdout)
    assert out["claimed"] is False and out["diagnosis"][1]["fits_alone"] is False
    assert "largest free amount is 500" in no.stderr
    cands = run("candidate", "list", *args[4:])
    assert cands.returncode == 4 and json.loads(cands.stdout)["allocation_requests"] == []
    freed = run("allocation", "delete", "--consumer", "71cb7e04-3d5a-40f9-a99f-07f0d0831741", "--json")
    assert json.loads(freed.stdout) == {"changed": True, "consumer": "71cb7e04-3d5a-40f9-a99f-07f0d0831741"}
    bad = run("allocation", "create", "--consumer", "5f0e9cd4-3a55-4f43-9d8a-0c8f4c7b1c11", "--project-id", "p", "--user-id", "u", "--resource", "VCPU")
    assert bad.returncode == 2 and "--resource: expected CLASS=AMOUNT, e.g. VCPU=1" in bad.stderr  # a usage error
