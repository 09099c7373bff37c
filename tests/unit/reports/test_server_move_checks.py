"""Unit table for the pure checks of a server's guarantee across Nova's moves (minbw.reports.server_move).

Two hosts shaped as the mini-cloud's (compute root + br-test on physnet0 under the OVS agent); each row is one
step of a move as Nova leaves it (allocations of the server and of the migration consumer, the port's binding)
and the exact sentences expected.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from minbw.errors import InvalidInput
from minbw.model.claims import Claim
from minbw.model.requests import PortRequest, ServerRequest
from minbw.placement.mapping import binding_allocations, solve
from minbw.reports.guarantee import PortState
from minbw.plan.server_move import plan_action
from minbw.reports.server_move import (EVACUATED, FAILED, MOVING, SETTLED, SHELVED_OFFLOADED, VERIFY_RESIZE,
                                       ComputeService, Migration, MoveFacts, MoveState, MoveWait, ProviderState,
                                       check_move, current_migration, phase_of)

SID = "5d0f3bd2-0000-4000-8000-000000000001"
MIG = "7b1e6d3a-0000-4000-8000-000000000002"
PORT = "9a8c7b6d-0000-4000-8000-000000000003"
GROUP = "ca606832-4ede-526c-95b4-ad8f06653023"
H0, BR0 = "ab57e476-0000-4000-8000-0000000000a0", "f9c9ce07-679d-5d72-ac5f-31720811629a"
H1, BR1 = "003acbf6-0000-4000-8000-0000000000b0", "2c881222-ff6e-5230-8402-1c79507d78b3"
AG0, AG1 = "89ca1421-5117-5348-acab-6d0e2054239c", "e3f7c6a1-0000-4000-8000-0000000000b1"
BW_RC = ("NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC")
TRAITS = frozenset({"CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"})
FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}
BW = {rc: 1000 for rc in BW_RC}
REQ = PortRequest.from_neutron({"request_groups": [{"id": GROUP, "required": sorted(TRAITS), "resources": BW}],
                                "same_subtree": [GROUP]}, PORT)
REQUEST = ServerRequest.from_flavor({"vcpus": 1, "ram": 256, "disk": 1}, ports=[REQ])


def host_providers(consumers0: dict, consumers1: dict, br_capacity: int = 1500) -> dict:
    """Both hosts' providers with the given consumers (consumer -> rp -> resources), usages summed."""
    out = {}
    for root, agent, br, name, consumers in ((H0, AG0, BR0, "devstack0", consumers0),
                                             (H1, AG1, BR1, "devstack1", consumers1)):
        for rp, pname, parent, traits, cap in (
                (root, name, None, frozenset(), {"VCPU": 1000, "MEMORY_MB": 800000, "DISK_GB": 600000}),
                (agent, f"{name}:Open vSwitch agent", root, frozenset({"CUSTOM_VNIC_TYPE_NORMAL"}), {}),
                (br, f"{name}:Open vSwitch agent:br-test", agent, TRAITS, {rc: br_capacity for rc in BW_RC})):
            held = {c: dict(a[rp]) for c, a in consumers.items() if rp in a}
            usages = {rc: sum(h.get(rc, 0) for h in held.values()) for rc in cap}
            out[rp] = ProviderState(rp, pname, root, parent, traits, cap, usages, held)
    return out


def on(host: int, flavor=FLAVOR, bw=BW) -> dict:
    root, br = (H0, BR0) if host == 0 else (H1, BR1)
    return {root: dict(flavor), br: dict(bw)}


def claim_of(allocs: dict, providers: dict, request=REQUEST) -> Claim | None:
    """What minbw.ops.claims.existing_claim reads from Placement, from the same data."""
    if not allocs:
        return None
    summaries = {rp: p.summary() for rp, p in providers.items()}
    result = solve({rp: {"resources": r} for rp, r in allocs.items()}, summaries, request)
    groups = result.group_providers()
    root = providers[next(iter(allocs))].root_uuid
    return Claim(SID, root, providers[root].name, {rp: {"resources": r} for rp, r in allocs.items()},
                 result.solutions[0], binding_allocations(request.ports, groups), mapping_source="solver")


def facts(*, status="ACTIVE", task=None, host=0, server_allocs=None, mig_allocs=None, migration=None,
          binding_host="devstack0", binding=None, providers=None, last_action=None, request=REQUEST, claim="auto"):
    server_allocs = on(host) if server_allocs is None else server_allocs
    allocations = {SID: server_allocs}
    if migration is not None:
        allocations[migration.uuid] = mig_allocs or {}
    if providers is None:
        split = [{}, {}]
        for consumer, allocs in allocations.items():
            for rp, res in allocs.items():
                split[0 if rp in (H0, BR0) else 1].setdefault(consumer, {})[rp] = res
        providers = host_providers(*split)
    binding = {GROUP: BR0 if host == 0 else BR1} if binding is None else binding
    port = PortState(PORT, "p0", {"allocation": binding} if binding else {}, binding_host, REQ, "neutron")
    name = None if host is None else f"devstack{host}"
    server = {"id": SID, "name": "vm", "status": status, "task_state": task, "compute_host": name,
              "hypervisor_hostname": name}
    try:
        got = claim_of(server_allocs, providers, request) if claim == "auto" else claim
        error = None
    except Exception as e:  # noqa: BLE001 - the MappingError text, as move_facts records it
        got, error = None, str(e)
    return MoveFacts(server=server, request=request, ports=(port,), allocations=allocations, providers=providers,
                     hosts={"devstack0": H0, "devstack1": H1}, migration=migration, claim=got, claim_error=error,
                     last_action=last_action)


def mig(status, kind="migration", source=0, dest=1):
    return Migration(MIG, status, kind, f"devstack{source}", f"devstack{dest}", f"devstack{source}",
                     f"devstack{dest}")


@pytest.mark.parametrize("status,task,migration,phase", [
    ("ACTIVE", None, None, SETTLED),
    ("SHUTOFF", None, mig("completed", "evacuation"), SETTLED),
    ("VERIFY_RESIZE", None, mig("finished"), VERIFY_RESIZE),
    ("VERIFY_RESIZE", "resize_reverting", mig("finished"), MOVING),
    ("RESIZE", "resize_migrating", mig("migrating"), MOVING),
    ("ACTIVE", None, mig("confirmed"), SETTLED),
    ("ACTIVE", None, mig("reverted"), SETTLED),
    ("ACTIVE", None, mig("error"), SETTLED),
    ("MIGRATING", "migrating", mig("running", "live-migration"), MOVING),
    ("SHUTOFF", None, mig("done", "evacuation"), EVACUATED),
    ("SHELVED_OFFLOADED", None, None, SHELVED_OFFLOADED),
    ("ERROR", None, mig("error"), FAILED),
])
def test_phase_of(status, task, migration, phase):
    assert phase_of({"status": status, "task_state": task}, migration) == phase


@pytest.mark.parametrize("kind,action,current", [
    ("migration", "confirmResize", True), ("resize", "revertResize", True), ("live-migration", "live-migration", True),
    ("evacuation", "evacuate", True), ("evacuation", "unshelve", False), ("migration", "create", False),
    ("migration", None, True)])
def test_a_migration_record_is_current_until_a_later_move(kind, action, current):
    record = mig("confirmed", kind)
    assert (current_migration(record, action) is record) is current


def test_settled_server_holds_its_guarantee():
    verdict = check_move(facts())
    assert verdict.phase == SETTLED and verdict.problems == () and verdict.ok
    assert {p.consumer: p.groups for p in verdict.parts} == {SID: {GROUP: BR0}}


def test_verify_resize_source_held_by_the_migration_target_by_the_server():
    f = facts(status="VERIFY_RESIZE", host=1, migration=mig("finished"), mig_allocs=on(0), binding_host="devstack1")
    verdict = check_move(f)
    assert verdict.phase == VERIFY_RESIZE and verdict.problems == ()
    assert {p.consumer: p.groups for p in verdict.parts} == {SID: {GROUP: BR1}, MIG: {GROUP: BR0}}


def test_verify_resize_with_the_binding_still_on_the_source():
    f = facts(status="VERIFY_RESIZE", host=1, migration=mig("finished"), mig_allocs=on(0), binding_host="devstack0",
              binding={GROUP: BR0})
    assert check_move(f).problems == (
        f"port p0 ({PORT}) is bound to host 'devstack0', the server is on 'devstack1'",
        f"port p0 ({PORT}): binding:profile.allocation is {{'{GROUP}': '{BR0}'}}, but the server's allocation maps "
        f"its request group(s) to {{'{GROUP}': '{BR1}'}}")


def test_verify_resize_when_the_migration_consumer_lost_the_bandwidth():
    f = facts(status="VERIFY_RESIZE", host=1, migration=mig("finished"), mig_allocs={H0: FLAVOR},
              binding_host="devstack1")
    problems = check_move(f).problems
    assert len(problems) == 1
    assert problems[0].startswith(f"migration {MIG} (migration, finished) on devstack0: its allocation does not serve "
                                  f"the ports' request groups: no group-to-provider mapping fits this allocation: no "
                                  f"provider in the allocation can serve group {GROUP} alone")


def test_verify_resize_when_the_server_still_holds_the_source():
    # the server consumer holds both hosts and the migration nothing: Nova's pre-Queens way, not the rule
    f = facts(status="VERIFY_RESIZE", host=1, server_allocs={**on(0), **on(1)}, migration=mig("finished"),
              binding_host="devstack1")
    problems = check_move(f).problems
    assert f"server {SID} holds allocations on devstack0, expected devstack1" in problems
    assert f"migration {MIG} (migration, finished) holds no allocations in VERIFY_RESIZE (the source's belong to it)" \
        in problems
    assert any(p.startswith("the server's allocations in Placement do not satisfy its request") for p in problems)


def test_confirm_frees_the_source():
    assert check_move(facts(host=1, migration=mig("confirmed"), binding_host="devstack1")).problems == ()
    left = check_move(facts(host=1, migration=mig("confirmed"), mig_allocs=on(0), binding_host="devstack1"))
    assert left.problems == (
        f"migration {MIG} (migration, confirmed) still holds allocations after the move: {on(0)}",
        f"group {GROUP}: its bandwidth is counted on 2 providers after the move "
        f"(devstack1:Open vSwitch agent:br-test ({BR1}) for {SID}, "
        f"devstack0:Open vSwitch agent:br-test ({BR0}) for {MIG})")


def test_revert_restores_the_source():
    assert check_move(facts(host=0, migration=mig("reverted"))).problems == ()
    # exactly what the migration consumer held
    assert check_move(facts(host=0, migration=mig("reverted")), expect_allocations=on(0)).problems == ()
    wrong = check_move(facts(host=0, migration=mig("reverted")), expect_allocations=on(0, flavor={"VCPU": 2}))
    assert wrong.problems == (f"server {SID} holds {on(0)}, expected {on(0, flavor={'VCPU': 2})}",)
    # a "revert" that left the server on the target
    stuck = check_move(facts(host=1, migration=mig("reverted"), binding_host="devstack1"))
    assert stuck.problems == (
        f"server {SID} holds allocations on devstack1, expected devstack0",
        f"server {SID} runs on 'devstack1', but migration {MIG} (migration, reverted) puts it on 'devstack0'")


def test_settled_server_counted_on_both_hosts():
    f = facts(host=1, server_allocs={**on(0), **on(1)}, migration=mig("completed", "live-migration"),
              binding_host="devstack1")
    problems = check_move(f).problems
    assert f"server {SID} holds allocations on 2 hosts (devstack0, devstack1): counted more than once" in problems
    assert f"server {SID} holds allocations on devstack0, expected devstack1" in problems


def test_capacity_and_usage_must_add_up():
    providers = host_providers({SID: on(0)}, {})
    over = replace(providers[BR0], capacity={rc: 900 for rc in BW_RC})
    lost = replace(providers[H0], usages={"VCPU": 2, "MEMORY_MB": 256, "DISK_GB": 1})
    f = facts(providers={**providers, BR0: over, H0: lost})
    assert check_move(f).problems == (
        f"devstack0 ({H0}): usage of VCPU is 2, but its consumers hold 1 ({{'{SID}': 1}})",
        f"devstack0:Open vSwitch agent:br-test ({BR0}): usage 1000 of NET_BW_EGR_KILOBIT_PER_SEC exceeds its "
        f"capacity 900",
        f"devstack0:Open vSwitch agent:br-test ({BR0}): usage 1000 of NET_BW_IGR_KILOBIT_PER_SEC exceeds its "
        f"capacity 900")


def test_evacuated_server_holds_both_hosts_until_the_source_cleans_up():
    f = facts(status="SHUTOFF", host=1, server_allocs={**on(0), **on(1)}, migration=mig("done", "evacuation"),
              binding_host="devstack1", claim=None)
    verdict = check_move(f)
    assert verdict.phase == EVACUATED and verdict.problems == ()
    assert verdict.notes == (
        f"server {SID} still holds {on(0)} on devstack0: Nova releases an evacuated server's source allocation when "
        f"nova-compute on devstack0 starts again (migration {MIG} (evacuation, done))",)
    # the ports must already name the target
    stale = replace(f, ports=(replace(f.ports[0], binding_profile={"allocation": {GROUP: BR0}}),))
    assert check_move(stale).problems == (
        f"port p0 ({PORT}): binding:profile.allocation is {{'{GROUP}': '{BR0}'}}, expected {{'{GROUP}': '{BR1}'}} "
        f"(the providers on devstack1)",)
    # after the clean-up: settled on the target
    done = facts(status="SHUTOFF", host=1, migration=mig("completed", "evacuation"), binding_host="devstack1")
    assert check_move(done).problems == ()


def test_shelved_offloaded_holds_nothing():
    f = facts(status="SHELVED_OFFLOADED", host=None, server_allocs={}, binding_host=None, binding={}, claim=None)
    assert check_move(f).problems == ()
    stale = facts(status="SHELVED_OFFLOADED", host=None, server_allocs={}, binding_host=None, claim=None)
    assert check_move(stale).problems == (
        f"port p0 ({PORT}): binding:profile.allocation is still {{'{GROUP}': '{BR1}'}} while the server is offloaded",)


def test_an_older_migration_record_does_not_say_where_an_unshelved_server_belongs():
    f = facts(host=0, migration=mig("completed", "evacuation"), last_action="unshelve")
    verdict = check_move(f)
    assert verdict.problems == ()
    assert verdict.notes == (f"migration {MIG} (evacuation, completed) predates the server's last unshelve: the "
                             f"server's place is not judged against it",)
    # without the action, the record is taken as current: the server should be on devstack1
    assert f"server {SID} holds allocations on devstack0, expected devstack1" in check_move(
        replace(f, last_action=None)).problems


def test_a_move_in_progress_is_only_checked_for_capacity():
    f = facts(status="MIGRATING", task="migrating", host=0, server_allocs=on(1), migration=mig("running", "live-migration"),
              mig_allocs=on(0), claim=None)
    verdict = check_move(f)
    assert verdict.phase == MOVING and verdict.problems == ()


def test_a_server_in_error_is_a_problem():
    f = facts(status="ERROR", migration=mig("error"))
    assert check_move(f).problems[0] == f"server {SID} is ERROR"


# ---------------------------------------------------------------- the Nova action plan (check mode = real run)
def view(status="ACTIVE", host="devstack0", flavor="e2e-tiny", task=None):
    return {"id": SID, "name": "vm", "status": status, "task_state": task, "compute_host": host, "flavor": flavor}


@pytest.mark.parametrize("server,migration,action,kwargs,op", [
    (view(), None, "migrate", {}, {"action": "migrate", "server": SID, "host": None, "flavor": None,
                                   "force_down": None}),
    (view(), None, "migrate", {"host": "devstack1"}, {"action": "migrate", "server": SID, "host": "devstack1",
                                                      "flavor": None, "force_down": None}),
    (view(), None, "migrate", {"host": "devstack0"}, None),                       # already there
    (view(), None, "resize", {"flavor": "e2e-small"}, {"action": "resize", "server": SID, "host": None,
                                                       "flavor": "e2e-small", "force_down": None}),
    (view(), None, "resize", {"flavor": "e2e-tiny"}, None),                       # already of that flavor
    (view("VERIFY_RESIZE"), mig("finished"), "confirm", {}, {"action": "confirm", "server": SID, "host": None,
                                                             "flavor": None, "force_down": None}),
    (view(host="devstack1"), mig("confirmed"), "confirm", {}, None),             # already confirmed
    (view(), mig("reverted"), "revert", {}, None),
    (view(), None, "live_migrate", {"host": "devstack1"}, {"action": "live_migrate", "server": SID,
                                                           "host": "devstack1", "flavor": None, "force_down": None}),
    (view(), None, "evacuate", {"host": "devstack1", "force_down_source": True},
     {"action": "evacuate", "server": SID, "host": "devstack1", "flavor": None, "force_down": "devstack0"}),
    (view("SHELVED_OFFLOADED", host=None), None, "shelve", {}, None),
    (view("SHELVED_OFFLOADED", host=None), None, "unshelve", {}, {"action": "unshelve", "server": SID, "host": None,
                                                                  "flavor": None, "force_down": None}),
    (view(), None, "unshelve", {}, None),
    (view(), None, "start", {}, None),
])
def test_plan_action(server, migration, action, kwargs, op):
    plan = plan_action(server, migration, action, **kwargs)
    assert [o.to_dict() for o in plan.ops] == ([op] if op else [])
    assert plan.changed is bool(op)


@pytest.mark.parametrize("server,action,kwargs,message", [
    (view(), "confirm", {}, f"server vm ({SID}) is ACTIVE; Nova accepts confirm only from VERIFY_RESIZE."),
    (view("SHUTOFF"), "live_migrate", {}, f"server vm ({SID}) is SHUTOFF; Nova accepts live_migrate only from "
                                          f"ACTIVE/PAUSED."),
    (view(), "resize", {}, "flavor is required to resize. Fix: name the flavor to resize the server to."),
    (view("RESIZE", task="resize_prep"), "confirm", {}, f"server vm ({SID}) is busy (RESIZE, task resize_prep). "
                                                        f"Fix: wait until its task is over, then confirm."),
    (view(), "teleport", {}, "action 'teleport': expected one of migrate, resize, confirm, revert, live_migrate, "
                             "evacuate, shelve, unshelve, start."),
])
def test_plan_action_refuses_with_the_fix(server, action, kwargs, message):
    with pytest.raises(InvalidInput) as e:
        plan_action(server, None, action, **kwargs)
    assert str(e.value) == message


def test_move_state_dict_is_the_one_server_move_info_returns():
    f = facts(status="VERIFY_RESIZE", host=1, migration=mig("finished"), mig_allocs=on(0), binding_host="devstack1")
    state = MoveState(f, check_move(f))
    got = state.to_dict()
    assert list(got) == ["ok", "problems", "notes", "phase", "server", "migration", "last_action", "consumers",
                         "allocations", "binding_allocations", "binding_hosts", "groups", "hosts", "providers"]
    assert state.ok and got["ok"] and got["phase"] == VERIFY_RESIZE and got["problems"] == []
    assert got["consumers"] == {"server": SID, "migration": MIG} and got["migration"] == f.migration.to_dict()
    assert got["groups"] == {SID: {GROUP: {"provider": BR1, "provider_name": "devstack1:Open vSwitch agent:br-test"}},
                             MIG: {GROUP: {"provider": BR0, "provider_name": "devstack0:Open vSwitch agent:br-test"}}}
    assert got["binding_allocations"] == {PORT: {GROUP: BR1}} and got["binding_hosts"] == {PORT: "devstack1"}


def test_what_a_wait_saw_and_a_compute_service_as_dicts():
    record = mig("confirmed")
    assert MoveWait({"id": SID, "status": "ACTIVE"}, record).to_dict() == {
        "server": {"id": SID, "status": "ACTIVE"}, "migration": record.to_dict()}
    assert MoveWait({"id": SID}).to_dict() == {"server": {"id": SID}, "migration": None}
    assert list(ComputeService("devstack0", True, "down", "enabled").to_dict().items()) == [
        ("host", "devstack0"), ("forced_down", True), ("state", "down"), ("status", "enabled")]
