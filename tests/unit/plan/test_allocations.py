"""Unit tables for plan/allocations.py: the claim's choice among allocation candidates (as check mode predicts
it) and the free plan."""
from __future__ import annotations

from minbw.model.claims import CandidateSet
from minbw.model.requests import PortRequest, RequestGroup, ServerRequest
from minbw.plan.allocations import plan_claim, plan_free

H1, H2 = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"


def summaries(host, devices):
    out = {host: {"resources": {}, "traits": [], "parent_provider_uuid": None, "root_provider_uuid": host}}
    for d in devices:
        out[d] = {"resources": {}, "traits": ["CUSTOM_PHYSNET_PHYSNET0"], "parent_provider_uuid": host,
                  "root_provider_uuid": host}
    return out


def two_ports():
    ports = tuple(PortRequest(pid, (RequestGroup(f"g{i}", {"NET_BW_EGR_KILOBIT_PER_SEC": 1000},
                                                 ("CUSTOM_PHYSNET_PHYSNET0",)),), (f"g{i}",))
                  for i, pid in enumerate(("port-a", "port-b")))
    return ServerRequest(vcpus=1, ports=ports)


def test_check_mode_skips_an_ambiguous_first_candidate_as_the_claim_does():
    """Host 1's candidate (no Placement mappings) fits two ways: the plan, and so check mode, take host 2."""
    d1, d2 = "d1aaaaaa-0000-4000-8000-000000000001", "d1aaaaaa-0000-4000-8000-000000000002"
    d3 = "d3aaaaaa-0000-4000-8000-000000000003"
    ambiguous = {"allocations": {H1: {"resources": {"VCPU": 1}}, d1: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}},
                                 d2: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}}}
    clear = {"allocations": {H2: {"resources": {"VCPU": 1}}, d3: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 2000}}}}
    cands = CandidateSet((ambiguous, clear), {**summaries(H1, [d1, d2]), **summaries(H2, [d3])}, {}, "1.33")
    plan = plan_claim("vm", cands, two_ports(), max_hosts=3)
    assert [(a.host, a.usable) for a in plan.attempts] == [(H1, False), (H2, True)]
    op = plan.ops[0]
    assert (op.host, op.binding_profiles) == (H2, {"port-a": {"g0": d3}, "port-b": {"g1": d3}})
    assert plan.after == {"claimed": True, "host": H2} and plan.to_dict()["skipped"][0]["host"] == H1
    # max_hosts bounds the alternates: with one host there is nothing to claim
    assert plan_claim("vm", cands, two_ports(), max_hosts=1).ops == ()


def test_free_plan():
    assert plan_free("vm", {"allocations": {}}).ops == ()
    plan = plan_free("vm", {"allocations": {H1: {"resources": {"VCPU": 1}}}})
    assert [op.action for op in plan.ops] == ["free"] and plan.diff() == {"before": {"claimed": True},
                                                                         "after": {"claimed": False}}
