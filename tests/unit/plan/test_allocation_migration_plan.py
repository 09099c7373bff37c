"""Unit tables for plan/allocation_migration.py: the move's POST body (both consumers, their generations), which
candidate it takes, the bindings on the target, the refusals, revert and confirm, and the per-target
reading of the no-valid-host diagnosis."""
from __future__ import annotations

from dataclasses import replace

import pytest

from minbw.errors import InvalidInput, MoveRefused, ObjectNotFound
from minbw.model.claims import CandidateSet
from minbw.model.providers import Provider
from minbw.model.requests import PortRequest, RequestGroup, ServerRequest
from minbw.ops.allocation_migration import on_target
from minbw.reports.diagnosis import TOGETHER, Diagnosis
from minbw.plan.allocation_migration import (MIGRATION_TYPE, ConsumerState, check_uuids, consumer_view, plan_confirm, plan_move,
                              plan_revert, resolve_host, target_request)

H1, H2, H3 = ("11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222",
              "33333333-3333-4333-8333-333333333333")
BR1, BR2, BR2B = ("b1b1b1b1-0000-4000-8000-000000000001", "b2b2b2b2-0000-4000-8000-000000000002",
                  "b2b2b2b2-0000-4000-8000-00000000000b")
VM = "71cb7e04-3d5a-40f9-a99f-07f0d0831741"
MIG = "5b2c3e38-0d3e-4b8a-9a59-4c1f8e0b7e21"
BW = {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}
FLAVOR = {"VCPU": 1, "MEMORY_MB": 256}
PHYSNET = "CUSTOM_PHYSNET_PHYSNET0"

PROVIDERS = {p.uuid: p for p in (
    Provider(H1, "h1", 1, None, H1), Provider(BR1, "h1:Open vSwitch agent:br-a", 1, H1, H1),
    Provider(H2, "h2", 1, None, H2), Provider(BR2, "h2:Open vSwitch agent:br-a", 1, H2, H2),
    Provider(BR2B, "h2:Open vSwitch agent:br-b", 1, H2, H2), Provider(H3, "h3", 1, None, H3))}


def port(pid="port-a", gid="g0", legacy=False):
    return PortRequest(pid, (RequestGroup(gid, BW, (PHYSNET,)),), () if legacy else (gid,), legacy=legacy)


REQ = ServerRequest(extra_resources=FLAVOR, ports=(port(),))


def allocs(host, bridge, flavor=FLAVOR):
    return {host: {"resources": dict(flavor)}, bridge: {"resources": dict(BW)}}


ON_H1 = ConsumerState(VM, allocs(H1, BR1), 3, "p", "u")
NEW = ConsumerState(MIG)


def summaries(host, *devices):
    out = {host: {"resources": {}, "traits": [], "parent_provider_uuid": None, "root_provider_uuid": host}}
    for d in devices:
        out[d] = {"resources": {}, "traits": [PHYSNET], "parent_provider_uuid": host, "root_provider_uuid": host}
    return out


def candidate(host, bridge, mappings=True, gids=("g0",)):
    ar = {"allocations": allocs(host, bridge)}
    if mappings:
        ar["mappings"] = {"": [host], **{g: [bridge] for g in gids}}
    return ar


def cands(*ars, summaries_=None):
    return CandidateSet(tuple(ars), summaries_ or {**summaries(H2, BR2, BR2B), **summaries(H3)}, {"in_tree": H2},
                        "1.34")


def test_the_move_is_one_post_for_both_consumers_at_their_generations():
    plan = plan_move(ON_H1, NEW, REQ, cands(candidate(H2, BR2)), H2, PROVIDERS)
    (op,) = plan.ops
    assert op.body == {
        MIG: {"allocations": allocs(H1, BR1), "consumer_generation": None, "project_id": "p", "user_id": "u"},
        VM: {"allocations": allocs(H2, BR2), "consumer_generation": 3, "project_id": "p", "user_id": "u"}}
    assert list(op.body) == [MIG, VM]
    assert (op.source, op.target, op.binding_profiles) == (H1, H2, {"port-a": {"g0": BR2}})
    assert op.held == allocs(H1, BR1) and op.mapping == {"": [H2], "g0": [BR2]}
    assert plan.diff() == {
        "before": {"consumer": {"uuid": VM, "host": "h1", "host_uuid": H1,
                                "providers": {"h1": FLAVOR, "h1:Open vSwitch agent:br-a": BW}},
                   "migration": {"uuid": MIG, "host": None, "host_uuid": None, "providers": {}}},
        "after": {"consumer": {"uuid": VM, "host": "h2", "host_uuid": H2,
                               "providers": {"h2": FLAVOR, "h2:Open vSwitch agent:br-a": BW}},
                  "migration": {"uuid": MIG, "host": "h1", "host_uuid": H1,
                                "providers": {"h1": FLAVOR, "h1:Open vSwitch agent:br-a": BW}}}}
    assert plan.changed and not plan.done and plan.to_dict()["ops"][0]["post_allocations"] == op.body


def test_a_legacy_port_gets_one_provider_uuid_on_the_target():
    req = ServerRequest(extra_resources=FLAVOR, ports=(port("port-l", "port-l", legacy=True),))
    (op,) = plan_move(ON_H1, NEW, req, cands(candidate(H2, BR2, gids=("port-l",))), H2, PROVIDERS).ops
    assert op.binding_profiles == {"port-l": BR2}


def test_consumer_types_are_sent_when_known_the_migration_as_nova_types_it():
    typed = ConsumerState(VM, allocs(H1, BR1), 3, "p", "u", "INSTANCE")
    (op,) = plan_move(typed, NEW, REQ, cands(candidate(H2, BR2)), H2, PROVIDERS).ops
    assert (op.body[VM]["consumer_type"], op.body[MIG]["consumer_type"]) == ("INSTANCE", MIGRATION_TYPE)
    (op,) = plan_move(ON_H1, NEW, REQ, cands(candidate(H2, BR2)), H2, PROVIDERS).ops
    assert "consumer_type" not in op.body[VM] and "consumer_type" not in op.body[MIG]


def test_an_ambiguous_candidate_is_skipped_as_claims_skip_it():
    """Two ports, two bridges, no Placement mappings: the first candidate maps two ways; the second,
    with mappings, is taken — the same rule (claim_order) as a claim."""
    two = ServerRequest(extra_resources=FLAVOR, ports=(port("port-a", "g0"), port("port-b", "g1")))
    ambiguous = {"allocations": {H2: {"resources": FLAVOR}, BR2: {"resources": BW}, BR2B: {"resources": BW}}}
    clear = {"allocations": {H2: {"resources": FLAVOR}, BR2: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 2000}}},
             "mappings": {"": [H2], "g0": [BR2], "g1": [BR2]}}
    plan = plan_move(ON_H1, NEW, two, cands(ambiguous, clear), H2, PROVIDERS)
    assert [a.usable for a in plan.attempts] == [False, True]
    assert plan.ops[0].binding_profiles == {"port-a": {"g0": BR2}, "port-b": {"g1": BR2}}
    assert plan.to_dict()["skipped"][0]["outcome"] == "skipped"
    only = plan_move(ON_H1, NEW, two, cands(ambiguous), H2, PROVIDERS)
    assert only.no_candidate and only.ops == () and only.before == only.after


@pytest.mark.parametrize("case, candidates", [
    ("none at all", cands()),
    ("only another host's", cands(candidate(H3, BR2))),
])
def test_no_candidate_on_the_target_is_a_plan_without_ops(case, candidates):
    plan = plan_move(ON_H1, NEW, REQ, candidates, H2, PROVIDERS)
    assert plan.no_candidate and not plan.changed and plan.attempts == (), case


def test_already_moved_is_done_without_ops():
    moved = ConsumerState(VM, allocs(H2, BR2), 4, "p", "u")
    holding = ConsumerState(MIG, allocs(H1, BR1), 1, "p", "u")
    plan = plan_move(moved, holding, REQ, cands(), H2, PROVIDERS)
    assert plan.done and not plan.changed and plan.before == plan.after
    assert plan.after["consumer"]["host"] == "h2" and plan.after["migration"]["host"] == "h1"


@pytest.mark.parametrize("consumer, migration, target, reason, match", [
    (ConsumerState(VM), NEW, H2, "no-allocations", f"consumer {VM} has no allocations: nothing to move."),
    (ConsumerState(VM), ConsumerState(MIG, allocs(H1, BR1), 1, "p", "u"), H2, "no-allocations",
     "holds allocations on h1 \\(revert gives them back\\)"),
    (ON_H1, NEW, H1, "same-host", "is already on h1 .*: the target is its current host"),
    (ON_H1, ConsumerState(MIG, allocs(H3, H3), 1, "p", "u"), H2, "in-progress",
     f"migration {MIG} already holds allocations on h3: a move is in progress. Confirm it"),
    (ConsumerState(VM, allocs(H2, BR2), 4, "p", "u"), ConsumerState(MIG, allocs(H2, BR2B), 1, "p", "u"), H2,
     "in-progress", "a move is in progress"),
    (ConsumerState(VM, {H1: {"resources": FLAVOR}, BR2: {"resources": BW}}, 1, "p", "u"), NEW, H3, "several-hosts",
     "allocations in 2 provider trees \\(h1, h2\\)"),
])
def test_refusals(consumer, migration, target, reason, match):
    with pytest.raises(MoveRefused, match=match) as err:
        plan_move(consumer, migration, REQ, cands(candidate(H2, BR2)), target, PROVIDERS)
    assert err.value.reason == reason and err.value.to_dict()["reason"] == reason


@pytest.mark.parametrize("consumer, migration, match", [
    ("vm0", MIG, "consumer: 'vm0' is not a UUID"),
    (VM, "m", "migration: 'm' is not a UUID"),
    (VM, VM.upper(), "is the consumer itself"),
])
def test_uuids_are_checked(consumer, migration, match):
    with pytest.raises(InvalidInput, match=match):
        check_uuids(consumer, migration)


def test_revert_gives_the_source_back_and_empties_the_migration():
    on_h2 = ConsumerState(VM, allocs(H2, BR2), 4, "p", "u")
    holding = ConsumerState(MIG, allocs(H1, BR1), 1, "p", "u")
    plan = plan_revert(on_h2, holding, PROVIDERS)
    (op,) = plan.ops
    assert op.body == {
        VM: {"allocations": allocs(H1, BR1), "consumer_generation": 4, "project_id": "p", "user_id": "u"},
        MIG: {"allocations": {}, "consumer_generation": 1, "project_id": "p", "user_id": "u"}}
    assert (op.action, op.source, op.allocations) == ("revert", H1, allocs(H1, BR1))
    assert plan.after["consumer"]["host"] == "h1" and plan.after["migration"]["providers"] == {}
    assert plan_revert(on_h2, NEW, PROVIDERS).ops == ()  # nothing held: reverted or confirmed already


@pytest.mark.parametrize("consumer, reason", [
    (ConsumerState(VM, allocs(H2, BR2), 4, "other", "u"), "mismatch"),
    (ConsumerState(VM), "no-allocations"),
])
def test_revert_refuses_a_consumer_that_is_not_the_moved_one(consumer, reason):
    with pytest.raises(MoveRefused) as err:
        plan_revert(consumer, ConsumerState(MIG, allocs(H1, BR1), 1, "p", "u"), PROVIDERS)
    assert err.value.reason == reason


def test_confirm_empties_the_migration_at_its_generation():
    plan = plan_confirm(ConsumerState(MIG, allocs(H1, BR1), 2, "p", "u"), PROVIDERS)
    assert plan.ops[0].body == {MIG: {"allocations": {}, "consumer_generation": 2, "project_id": "p", "user_id": "u"}}
    assert plan.diff()["after"] == {"migration": {"uuid": MIG, "host": None, "host_uuid": None, "providers": {}}}
    assert plan_confirm(NEW, PROVIDERS).ops == ()
    with pytest.raises(InvalidInput, match="migration: 'x' is not a UUID"):
        plan_confirm(ConsumerState("x"), PROVIDERS)


@pytest.mark.parametrize("given, expected", [("h2", H2), (H2, H2)])
def test_the_target_host_by_name_or_uuid(given, expected):
    assert resolve_host(PROVIDERS, given) == expected


@pytest.mark.parametrize("given, error, match", [
    ("h9", ObjectNotFound, "target_host: no resource provider is named 'h9'"),
    ("h2:Open vSwitch agent:br-a", InvalidInput, "is not a host but a provider inside one. Fix: name its root "
                                                 "provider 'h2'"),
])
def test_a_target_that_is_not_a_host_is_refused(given, error, match):
    with pytest.raises(error, match=match):
        resolve_host(PROVIDERS, given)


def test_the_target_query_is_restricted_to_the_target_tree():
    assert target_request(REQ, H2).in_tree == H2
    assert target_request(ServerRequest(extra_resources=FLAVOR, in_tree=H2), H2).in_tree == H2
    with pytest.raises(InvalidInput, match="in_tree: .* is not the target host"):
        target_request(ServerRequest(extra_resources=FLAVOR, in_tree=H1), H2)


def test_consumer_view_names_host_and_providers():
    assert consumer_view(VM, allocs(H1, BR1), PROVIDERS) == {
        "uuid": VM, "host": "h1", "host_uuid": H1, "providers": {"h1": FLAVOR, "h1:Open vSwitch agent:br-a": BW}}


DIAG = [
    Diagnosis("", "flavor", (), True, ("h1", "h2")),
    Diagnosis("g0", "port port-a bandwidth group g0", (), True, ("h1",)),
    Diagnosis("*", "all groups together", ("on h1 the groups need ...",), False, ("h1",), kind=TOGETHER),
]


@pytest.mark.parametrize("diagnosis, name, expected", [
    (DIAG, "h2", ["port port-a bandwidth group g0 fits alone on h1, not on h2"]),
    ([DIAG[0], replace(DIAG[1], fits_alone=False, hosts=(), problems=("NET_BW_EGR_KILOBIT_PER_SEC: needs 1000",))],
     "h2", ["port port-a bandwidth group g0: NET_BW_EGR_KILOBIT_PER_SEC: needs 1000"]),
    ([DIAG[0], replace(DIAG[1], hosts=("h1", "h2")), DIAG[2]], "h2",
     ["every group fits alone on h2 but not all together: more than its providers have free at once, or "
      "group_policy / same_subtree rule the combination out"]),
])
def test_the_diagnosis_told_for_the_target(diagnosis, name, expected):
    assert on_target(diagnosis, name) == expected
