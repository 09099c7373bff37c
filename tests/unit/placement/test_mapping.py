"""Group -> provider mapping on hand-made provider trees, in Placement's JSON shapes."""
import itertools
import uuid

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from minbw.neutron import naming
from minbw.placement.mapping import AMBIGUOUS, NO_SOLUTION, PLACEMENT, SOLVER, UNIQUE, binding_allocation, binding_allocations, mapping_from_candidate, same_subtree_holds, solve
from minbw.errors import MappingError, RequestError
from minbw.model.requests import PortRequest, ServerRequest
from minbw.neutron.port_request import Segment, build_port_request
from minbw.neutron.qos import MIN_BW, MIN_PPS, QosRule

OVS = naming.AGENT_KINDS[naming.OVS]
SRIOV = naming.AGENT_KINDS[naming.SRIOV]
HOST = "devstack0"
ROOT = str(uuid.uuid5(uuid.NAMESPACE_DNS, HOST))
OVS_AGENT = naming.agent_rp_uuid(OVS, HOST)
BR_TEST = naming.device_rp_uuid(OVS, HOST, "br-test")
BR_EX = naming.device_rp_uuid(OVS, HOST, "br-ex")
SRIOV_AGENT = naming.agent_rp_uuid(SRIOV, HOST)
ENS5 = naming.device_rp_uuid(SRIOV, HOST, "ens5")
ENS6 = naming.device_rp_uuid(SRIOV, HOST, "ens6")
EGR, IGR, PPS_ANY = naming.BW_EGRESS, naming.BW_INGRESS, naming.PPS_ANY
PN0 = naming.physnet_trait("physnet0")
OVS_VNICS = [naming.vnic_type_trait(v) for v in OVS.vnic_types]
SRIOV_VNICS = [naming.vnic_type_trait(v) for v in SRIOV.vnic_types]

PORT_A = "9f9d8e59-2b7c-4e4f-8a0e-6c1f7a3b5d21"
PORT_B = "1d2c3b4a-5e6f-4a7b-8c9d-0e1f2a3b4c5d"


def rule(t, d, v):
    return QosRule(str(uuid.uuid5(uuid.NAMESPACE_OID, f"{t}{d}{v}")), t, d, v)


def provider(parent, traits=(), **inv):
    return {"resources": {rc: {"capacity": cap, "used": 0} for rc, cap in inv.items()},
            "traits": list(traits), "parent_provider_uuid": parent, "root_provider_uuid": ROOT}


def seed_003(pps_on_agent=False):
    """Seed 003's compute node (provider_summaries as Placement returns them at >= 1.29)."""
    agent_inv = {PPS_ANY: 1000} if pps_on_agent else {}
    return {
        ROOT: provider(None, VCPU=4, MEMORY_MB=2048, DISK_GB=20),
        OVS_AGENT: provider(ROOT, OVS_VNICS, **agent_inv),
        BR_TEST: provider(OVS_AGENT, [PN0, *OVS_VNICS], **{EGR: 1500, IGR: 1500}),
        BR_EX: provider(OVS_AGENT, [naming.physnet_trait("public"), *OVS_VNICS], **{IGR: 1}),
        SRIOV_AGENT: provider(ROOT, SRIOV_VNICS),
        ENS5: provider(SRIOV_AGENT, [PN0, *SRIOV_VNICS], **{EGR: 100000, IGR: 100000}),
        ENS6: provider(SRIOV_AGENT, [PN0, *SRIOV_VNICS], **{EGR: 100000, IGR: 100000}),
    }


def alloc(**by_rp):
    return {"allocations": {rp: {"resources": res} for rp, res in by_rp.items()}}


FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}


def server(*ports, policy=None):
    return ServerRequest(vcpus=1, memory_mb=256, disk_gb=1, ports=tuple(ports), group_policy=policy)


def sriov_port(port_id, kbps):
    return build_port_request(port_id, [rule(MIN_BW, "egress", kbps)], [Segment("vlan", "physnet0")],
                              "direct", "sriov")


# --- seed 003 ---------------------------------------------------------------------------------

def test_seed_003_vm0_lands_on_br_test():
    port = build_port_request(PORT_A, [rule(MIN_BW, "egress", 1000), rule(MIN_BW, "ingress", 1000)],
                              [Segment("vlan", "physnet0")], "normal", "openvswitch")
    cand = alloc(**{ROOT: FLAVOR, BR_TEST: {EGR: 1000, IGR: 1000}})
    result = solve(cand, seed_003(), server(port))
    gid = port.groups[0].id
    assert (result.status, result.source) == (UNIQUE, SOLVER)
    assert result.mapping == {gid: [BR_TEST], "": [ROOT]}
    assert result.group_providers() == {gid: BR_TEST}
    assert binding_allocations([port, None], result.group_providers()) == {PORT_A: {gid: BR_TEST}}
    legacy = PortRequest.from_neutron(port.to_legacy(), PORT_A)
    legacy_result = solve(cand, seed_003(), server(legacy))
    assert binding_allocation(legacy, legacy_result.group_providers()) == BR_TEST


# --- two QoS ports, isolate vs none -----------------------------------------------------------

def test_two_ports_on_one_pf_fit_none_but_not_isolate():
    a, b = sriov_port(PORT_A, 1000), sriov_port(PORT_B, 2000)
    cand = alloc(**{ROOT: FLAVOR, ENS5: {EGR: 3000}})
    none = solve(cand, seed_003(), server(a, b))  # Nova's default policy: none
    assert none.status == UNIQUE
    assert none.group_providers() == {a.groups[0].id: ENS5, b.groups[0].id: ENS5}
    isolate = solve(cand, seed_003(), server(a, b, policy="isolate"))
    assert isolate.status == NO_SOLUTION and "isolate" in isolate.reason


def test_two_ports_split_over_two_pfs_by_amount():
    a, b = sriov_port(PORT_A, 1000), sriov_port(PORT_B, 2000)
    cand = alloc(**{ROOT: FLAVOR, ENS5: {EGR: 2000}, ENS6: {EGR: 1000}})
    for policy in ("none", "isolate"):
        result = solve(cand, seed_003(), server(a, b, policy=policy))
        assert result.group_providers() == {a.groups[0].id: ENS6, b.groups[0].id: ENS5}


def test_ambiguity_is_reported_not_guessed():
    a, b = sriov_port(PORT_A, 1000), sriov_port(PORT_B, 1000)
    cand = alloc(**{ROOT: FLAVOR, ENS5: {EGR: 1000}, ENS6: {EGR: 1000}})
    result = solve(cand, seed_003(), server(a, b, policy="isolate"))
    ga, gb = a.groups[0].id, b.groups[0].id
    assert result.status == AMBIGUOUS
    assert sorted((s[ga][0], s[gb][0]) for s in result.solutions) == sorted([(ENS5, ENS6),
                                                                            (ENS6, ENS5)])
    assert result.mapping is None
    with pytest.raises(MappingError, match="refusing to guess"):
        result.group_providers()
    # Placement's mappings settle it
    placed = dict(cand, mappings={ga: [ENS6], gb: [ENS5], "": [ROOT]})
    chosen = mapping_from_candidate(placed, seed_003(), server(a, b, policy="isolate"))
    assert (chosen.status, chosen.source) == (UNIQUE, PLACEMENT)
    assert chosen.group_providers() == {ga: ENS6, gb: ENS5}


# --- SR-IOV: two PFs on one physnet -----------------------------------------------------------

def test_sriov_two_pfs_one_physnet():
    port = sriov_port(PORT_A, 5000)
    for pf in (ENS5, ENS6):
        result = solve(alloc(**{ROOT: FLAVOR, pf: {EGR: 5000}}), seed_003(), server(port))
        assert result.group_providers() == {port.groups[0].id: pf}
    # a normal (OVS) port can not be on a PF: the vnic trait is missing
    ovs_port = build_port_request(PORT_A, [rule(MIN_BW, "egress", 5000)],
                                  [Segment("vlan", "physnet0")], "normal")
    result = solve(alloc(**{ROOT: FLAVOR, ENS5: {EGR: 5000}}), seed_003(), server(ovs_port))
    assert result.status == NO_SOLUTION
    assert "lacks trait(s) CUSTOM_VNIC_TYPE_NORMAL" in result.reason


# --- packet rate on the agent RP, same_subtree ------------------------------------------------

def pps_port(port_id):
    return build_port_request(port_id, [rule(MIN_BW, "egress", 1000), rule(MIN_PPS, "any", 10)],
                              [Segment("vlan", "physnet0")], "normal", "openvswitch")


def test_packet_rate_on_agent_with_same_subtree():
    port = pps_port(PORT_A)
    bw, pps = port.groups
    cand = alloc(**{ROOT: FLAVOR, BR_TEST: {EGR: 1000}, OVS_AGENT: {PPS_ANY: 10}})
    result = solve(cand, seed_003(pps_on_agent=True), server(port))
    assert result.mapping == {bw.id: [BR_TEST], pps.id: [OVS_AGENT], "": [ROOT]}
    assert binding_allocation(port, result.group_providers()) == {bw.id: BR_TEST, pps.id: OVS_AGENT}


def test_same_subtree_violated_across_agents():
    """A second agent with packet rate: bandwidth under one agent and pps on the other is refused."""
    other_agent = str(uuid.uuid4())
    tree = seed_003(pps_on_agent=True)
    tree[other_agent] = provider(ROOT, OVS_VNICS, **{PPS_ANY: 1000})
    port = pps_port(PORT_A)
    cand = alloc(**{ROOT: FLAVOR, BR_TEST: {EGR: 1000}, other_agent: {PPS_ANY: 10}})
    result = solve(cand, tree, server(port))
    assert result.status == NO_SOLUTION and "same_subtree" in result.reason
    # without same_subtree (groups given by hand) the same allocation maps
    result = solve(cand, tree, server(port).request_groups(), same_subtree=())
    assert result.status == UNIQUE


def test_isolate_cannot_put_two_packet_rate_groups_on_one_agent():
    a, b = pps_port(PORT_A), pps_port(PORT_B)
    cand = alloc(**{ROOT: FLAVOR, BR_TEST: {EGR: 2000}, OVS_AGENT: {PPS_ANY: 20}})
    assert solve(cand, seed_003(True), server(a, b, policy="none")).status == UNIQUE
    result = solve(cand, seed_003(True), server(a, b, policy="isolate"))
    assert result.status == NO_SOLUTION and "isolate" in result.reason


def test_same_subtree_definition():
    tree = seed_003()
    assert same_subtree_holds([BR_TEST, OVS_AGENT], tree)      # the agent is an ancestor
    assert same_subtree_holds([BR_TEST, BR_EX, OVS_AGENT], tree)
    assert not same_subtree_holds([BR_TEST, BR_EX], tree)      # siblings: root not among them
    assert not same_subtree_holds([BR_TEST, ENS5], tree)
    assert same_subtree_holds([BR_TEST, ROOT], tree) and same_subtree_holds([ENS5], tree)


# --- flavor (unsuffixed) group ----------------------------------------------------------------

def test_flavor_and_port_share_a_class_on_one_provider():
    port = sriov_port(PORT_A, 1000)
    sr = ServerRequest(vcpus=1, extra_resources={EGR: 500}, ports=(port,))
    result = solve(alloc(**{ROOT: {"VCPU": 1}, ENS5: {EGR: 1500}}), seed_003(), sr)
    assert result.mapping == {port.groups[0].id: [ENS5], "": sorted([ROOT, ENS5])}
    # the flavor takes one class from ONE provider: split over two PFs does not fit
    result = solve(alloc(**{ROOT: {"VCPU": 1}, ENS5: {EGR: 1250}, ENS6: {EGR: 250}}),
                   seed_003(), sr)
    assert result.status == NO_SOLUTION and "add up" in result.reason


def test_flavor_traits_are_collective():
    port = sriov_port(PORT_A, 1000)
    sr = ServerRequest(vcpus=1, required=("CUSTOM_GOLD",), ports=(port,))
    cand = alloc(**{ROOT: {"VCPU": 1}, ENS5: {EGR: 1000}})
    assert solve(cand, seed_003(), sr).status == NO_SOLUTION
    tree = seed_003()
    tree[ROOT]["traits"] = ["CUSTOM_GOLD"]
    assert solve(cand, tree, sr).status == UNIQUE
    forbid = ServerRequest(vcpus=1, forbidden=("CUSTOM_GOLD",), ports=(port,))
    assert solve(cand, tree, forbid).status == NO_SOLUTION


def test_leftover_allocation_means_no_mapping():
    port = sriov_port(PORT_A, 1000)
    result = solve(alloc(**{ROOT: FLAVOR, ENS5: {EGR: 1200}}), seed_003(), server(port))
    assert result.status == NO_SOLUTION and "add up" in result.reason


def test_any_traits_group():
    port = build_port_request(PORT_A, [rule(MIN_BW, "egress", 1000)],
                              [Segment("vlan", "physnet9"), Segment("vlan", "physnet0")],
                              "direct", any_traits=True)
    result = solve(alloc(**{ROOT: FLAVOR, ENS6: {EGR: 1000}}), seed_003(), server(port))
    assert result.group_providers() == {port.groups[0].id: ENS6}
    first_only = build_port_request(PORT_A, [rule(MIN_BW, "egress", 1000)],
                                    [Segment("vlan", "physnet9"), Segment("vlan", "physnet0")],
                                    "direct")
    result = solve(alloc(**{ROOT: FLAVOR, ENS6: {EGR: 1000}}), seed_003(), server(first_only))
    assert result.status == NO_SOLUTION and "CUSTOM_PHYSNET_PHYSNET9" in result.reason


# --- mapping_from_candidate, inputs -----------------------------------------------------------

def test_candidate_prefers_placement_and_can_verify():
    port = sriov_port(PORT_A, 1000)
    gid = port.groups[0].id
    cand = alloc(**{ROOT: FLAVOR, ENS5: {EGR: 1000}})
    solved = mapping_from_candidate(cand, seed_003(), server(port))
    assert solved.source == SOLVER and solved.group_providers() == {gid: ENS5}
    wrong = dict(cand, mappings={gid: [ENS6], "": [ROOT]})
    assert mapping_from_candidate(wrong, seed_003(), server(port)).group_providers() == {gid: ENS6}
    checked = mapping_from_candidate(wrong, seed_003(), server(port), verify=True)
    assert checked.status == NO_SOLUTION and "do not satisfy" in checked.reason
    right = dict(cand, mappings={gid: [ENS5], "": [ROOT]})
    assert mapping_from_candidate(right, seed_003(), server(port), verify=True).status == UNIQUE
    # openstacksdk's candidate carries its own (filtered) summaries
    sdk_like = dict(cand, mappings=None, provider_summaries={
        rp: s for rp, s in seed_003().items() if rp in cand["allocations"]})
    assert mapping_from_candidate(sdk_like, None, server(port)).group_providers() == {gid: ENS5}


def test_bad_inputs():
    port = sriov_port(PORT_A, 1000)
    result = solve(alloc(**{ROOT: FLAVOR, "nope": {EGR: 1000}}), seed_003(), server(port))
    assert result.status == NO_SOLUTION and "not in provider_summaries" in result.reason
    with pytest.raises(RequestError, match="no provider mapped"):
        binding_allocation(port, {})


# --- the solver against an independent brute force (Nova's pre-1.34 approach, all matches) ----

def brute_force(allocs, tree, groups, subtrees, policy):
    numbered = [g for g in groups if g.id]
    flavor = next((g for g in groups if not g.id), None)
    out = []
    for rps in itertools.product(sorted(allocs), repeat=len(numbered)):
        if policy == "isolate" and len(set(rps)) != len(rps):
            continue
        if any(not set(g.required) <= set(tree[rp]["traits"]) for g, rp in zip(numbered, rps)):
            continue
        total = {}
        for g, rp in zip(numbered, rps):
            for rc, a in g.resources:
                total[(rp, rc)] = total.get((rp, rc), 0) + a
        rest = {(rp, rc): a - total.get((rp, rc), 0)
                for rp, res in allocs.items() for rc, a in res.items()}
        if any(v < 0 for v in rest.values()) or any(k not in rest for k in total):
            continue
        left = {k: v for k, v in rest.items() if v}
        need = flavor.resource_dict if flavor else {}
        if sorted(rc for _, rc in left) != sorted(need) or any(need[rc] != v for (_, rc), v in left.items()):
            continue
        if not all(same_subtree_holds({rps[[g.id for g in numbered].index(s)] for s in ids}, tree)
                   for ids in subtrees):
            continue
        found = {g.id: [rp] for g, rp in zip(numbered, rps)}
        if flavor:
            found[""] = sorted({rp for rp, _ in left})
        out.append(found)
    return sorted(out, key=lambda m: sorted(m.items()))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_solver_agrees_with_brute_force(data):
    tree = seed_003(pps_on_agent=True)
    devices = [BR_TEST, ENS5, ENS6, OVS_AGENT]
    n_ports = data.draw(st.integers(1, 3))
    ports, allocs = [], {ROOT: dict(FLAVOR)}
    for i in range(n_ports):
        port_id = str(data.draw(st.uuids()))
        kbps = data.draw(st.sampled_from([1000, 2000]))
        vnic = data.draw(st.sampled_from(["normal", "direct"]))
        rules = [QosRule(f"r{i}", MIN_BW, "egress", kbps)]
        if data.draw(st.booleans()):
            rules.append(QosRule(f"p{i}", MIN_PPS, "any", 10))
        port = build_port_request(port_id, rules, [Segment("vlan", "physnet0")], vnic)
        ports.append(port)
        # plant an allocation: each group on some provider, mostly a fitting one
        for g in port.groups:
            fitting = ([OVS_AGENT] if g is not port.groups[0]
                       else [BR_TEST] if vnic == "normal" else [ENS5, ENS6])
            rp = data.draw(st.sampled_from(fitting * 3 + devices))
            for rc, a in g.resources:
                allocs.setdefault(rp, {})
                allocs[rp][rc] = allocs[rp].get(rc, 0) + a
    policy = data.draw(st.sampled_from(["none", "isolate"]))
    sr = ServerRequest(vcpus=1, memory_mb=256, disk_gb=1, ports=tuple(ports), group_policy=policy)
    result = solve({"allocations": {rp: {"resources": r} for rp, r in allocs.items()}}, tree, sr)
    expected = brute_force(allocs, tree, sr.request_groups(), sr.same_subtrees(), policy)
    assert sorted(result.solutions, key=lambda m: sorted(m.items())) == expected
    assert result.status == {0: NO_SOLUTION, 1: UNIQUE}.get(len(expected), AMBIGUOUS)
