"""The audit's verdicts (plan/audit.py) on tables of allocations, servers, migrations, ports and inventories."""
from __future__ import annotations

import pytest

from minbw.model.requests import PortRequest, RequestGroup, flavor_amounts
from minbw.plan.audit import (DOUBLE, LEAK, NO_AGE, OVER, OVER_CAPACITY, STALE_BINDING, FixResult, Migration,
                              PortBinding, Server, judge_audit, trimmed)

EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
PPS = "NET_PACKET_RATE_KILOPACKET_PER_SEC"
BR, PF = "br-test-uuid", "pf-uuid"
VM, GONE, MIG = "vm", "gone-server", "migration"
REQ = PortRequest("p1", (RequestGroup("g1", {EGR: 1000, IGR: 1000}, ("CUSTOM_PHYSNET_PHYSNET0",)),), ("g1",))
HELD = {EGR: 1000, IGR: 1000}
NAMES = {BR: "devstack0:Open vSwitch agent:br-test"}


def port(device=VM, allocation=None, request=REQ, pid="p1"):
    return PortBinding(pid, device, request, {"g1": BR} if allocation is None else allocation)


def servers(*ids, **kw):
    return [Server(i, **kw) for i in ids]


def migrations(*uuids, status="migrating"):
    return [Migration(u, server=VM, status=status) for u in uuids]


@pytest.mark.parametrize("case, allocations, live, moving, ports, ignore, kinds", [
    ("clean", {BR: {VM: HELD}}, [VM], [], [port()], [], []),
    ("a deleted server's bandwidth", {BR: {VM: HELD, GONE: {EGR: 5}}}, [VM], [], [port()], [], [(LEAK, GONE)]),
    ("a migration in progress holds the source", {BR: {VM: HELD, MIG: HELD}}, [VM], [MIG], [port()], [], []),
    ("a finished migration left its allocation", {BR: {VM: HELD, MIG: HELD}}, [VM], [], [port()], [],
     [(LEAK, MIG)]),
    ("someone else's claim, ignored", {BR: {VM: HELD, "script": HELD}}, [VM], [], [port()], ["script"], []),
    ("VCPU alone is not the audit's business", {"root": {GONE: {"VCPU": 1}}, BR: {VM: HELD}}, [VM], [], [port()],
     [], []),
    ("binding names a provider holding nothing for the server", {BR: {VM: HELD}, PF: {}}, [VM], [],
     [port(allocation={"g1": PF})], [], [(STALE_BINDING, "p1")]),
    ("binding on a port with no server", {BR: {VM: HELD}}, [VM], [], [port(), port(device=None, pid="p2")], [],
     [(STALE_BINDING, "p2")]),
    ("legacy single-uuid binding that holds", {BR: {VM: HELD}}, [VM], [], [port(allocation=BR)], [], []),
    ("server holds more than its bound group on that provider", {BR: {VM: {EGR: 3000, IGR: 1000}}}, [VM], [],
     [port()], [], [(DOUBLE, VM)]),
    ("nova-manage's second copy on the same provider", {BR: {VM: {EGR: 2000, IGR: 2000}}}, [VM], [], [port()], [],
     [(DOUBLE, VM)]),
    ("server with bandwidth and no QoS port", {BR: {VM: HELD}}, [VM], [], [], [], [(OVER, VM)]),
    ("a second copy on another provider no binding names", {BR: {VM: HELD}, PF: {VM: HELD}}, [VM], [], [port()],
     [], [(OVER, VM)]),
    ("the binding cleared, the allocation intact: heal's business, no excess", {BR: {VM: HELD}}, [VM], [],
     [port(allocation={})], [], []),
    ("bandwidth the flavor requests is no excess", {BR: {VM: {EGR: 1500, IGR: 1000}}}, [Server(VM, flavor={EGR: 500})],
     [], [port()], [], []),
    ("a server moving: its allocation on the target, the binding still on the source its migration holds",
     {PF: {VM: HELD}, BR: {MIG: HELD}}, [VM], [MIG], [port()], [], []),
    ("the migration finished, the binding left on the source", {PF: {VM: HELD}, BR: {}}, [VM], [], [port()], [],
     [(STALE_BINDING, "p1")]),
])
def test_audit(case, allocations, live, moving, ports, ignore, kinds):
    live = [s if isinstance(s, Server) else Server(s) for s in live]
    plan = judge_audit(allocations, live, migrations(*moving), ports, NAMES, ignore)
    assert [(f.kind, f.subject) for f in plan.findings] == kinds, case
    assert plan.ok is (not kinds)
    # every leak and stale binding comes with its fix; the excess of a server is reported only
    fixes = {LEAK: "trim_consumer", STALE_BINDING: "clear_binding"}
    assert [(op.action, op.subject) for op in plan.ops] == [(fixes[k], s) for k, s in kinds if k in fixes]


def test_leak_detail_names_provider_and_amounts():
    plan = judge_audit({BR: {GONE: {EGR: 5, "VCPU": 1}}}, [], [], [], NAMES)
    assert plan.findings[0].detail == (f"consumer {GONE} is neither a live server nor an in-progress migration but "
                                       f"holds devstack0:Open vSwitch agent:br-test ({BR}): {EGR}=5")
    assert plan.ops[0].classes == (EGR,)


def test_double_allocation_names_server_port_group_provider_and_extra():
    plan = judge_audit({BR: {VM: {EGR: 2000, IGR: 2000}}}, [Server(VM, name="vm0")], [], [port()], NAMES)
    (f,) = plan.findings
    assert (f.kind, f.subject, f.fix) == (DOUBLE, VM, None)
    d = f.to_dict()
    assert (d["provider"], d["extra"], d["keep"], d["ambiguous"]) == (BR, HELD, HELD, False)
    assert d["bound"] == [{"port": "p1", "group": "g1", "resources": HELD}]
    assert f.detail.startswith(f"server vm0 ({VM}) holds {EGR}=2000, {IGR}=2000 on {NAMES[BR]} ({BR}), where the "
                               f"binding allocation of port p1 group g1 requests {EGR}=1000, {IGR}=1000: "
                               f"{EGR}=1000, {IGR}=1000 extra (twice the request: what `nova-manage placement "
                               "heal_allocations` leaves")
    assert f"remove {EGR}=1000, {IGR}=1000 from the server's allocation on {BR} (keep {EGR}=1000, {IGR}=1000)" \
        in f.detail and "audit again" in f.detail


REQ2 = PortRequest("p2", (RequestGroup("g2", {EGR: 1000, IGR: 1000}, ("CUSTOM_PHYSNET_PHYSNET0",)),), ("g2",))


@pytest.mark.parametrize("case, held, ports, flavor, extra, twice, ambiguous", [
    ("three times the request", {BR: {EGR: 3000, IGR: 1000}}, [port()], {}, {BR: {EGR: 2000}}, False, False),
    ("two QoS ports bound to one provider, one copy too many", {BR: {EGR: 3000, IGR: 3000}},
     [port(), port(pid="p2", request=REQ2, allocation={"g2": BR})], {}, {BR: HELD}, False, False),
    ("the flavor's bandwidth absorbs part of the excess", {BR: {EGR: 2500, IGR: 2000}}, [port()], {EGR: 500},
     {BR: HELD}, False, True),
    ("a copy on each of two providers, one bound: the other is extra", {BR: HELD, PF: HELD}, [port()], {},
     {PF: HELD}, False, False),
    ("a second port unbound: the bound provider is the guess", {BR: {EGR: 2000, IGR: 2000}, PF: HELD},
     [port(), port(pid="p2", request=REQ2, allocation={})], {}, {BR: HELD}, True, True),
    ("packet rate on a provider whose bound group asks only bandwidth: no copy of it", {BR: {**HELD, PPS: 10}},
     [port()], {}, {BR: {PPS: 10}}, False, False),
])
def test_excess_is_placed_where_the_copy_is(case, held, ports, flavor, extra, twice, ambiguous):
    allocations = {rp: {VM: res} for rp, res in held.items()}
    plan = judge_audit(allocations, [Server(VM, flavor=flavor)], [], ports, NAMES)
    found = [f.to_dict() for f in plan.findings]
    assert {f["provider"]: f["extra"] for f in found} == extra, case
    assert {(f["kind"], f["provider"]) for f in found} == {
        (DOUBLE if rp == BR and PPS not in more else OVER, rp) for rp, more in extra.items()}
    assert [f["ambiguous"] for f in found] == [ambiguous] * len(found)
    assert ["twice the request" in f["detail"] for f in found] == [twice] * len(found)
    assert all(f["fix"] is None and "reported only" in f["detail"] for f in found)


# --------------------------------------------------------------------------- over capacity
INV = {EGR: {"total": 1500, "reserved": 0, "allocation_ratio": 1.0}, IGR: {"total": 1500}}
OLD, NEW = "2026-01-01T10:00:00Z", "2026-03-01T10:00:00Z"


def over_capacity(allocations, live=(), moves=(), inventories=None):
    plan = judge_audit({BR: allocations}, live, moves, [], NAMES, inventories={BR: inventories or INV},
                 hosts={BR: "devstack0"})
    return [f for f in plan.findings if f.kind == OVER_CAPACITY]


@pytest.mark.parametrize("case, inventory, used, over", [
    ("at capacity is not over", {"total": 2000}, 2000, None),
    ("total below usage", {"total": 1500}, 2000, (1500, 500)),
    ("reserved raised under the allocations", {"total": 2000, "reserved": 1}, 2000, (1999, 1)),
    ("allocation ratio lowered", {"total": 4000, "allocation_ratio": 0.4}, 2000, (1600, 400)),
    ("ratio rounds down as Placement's capacity", {"total": 3, "allocation_ratio": 0.5}, 2, (1, 1)),
])
def test_capacity_is_placements(case, inventory, used, over):
    found = over_capacity({"a": {EGR: used // 2}, "b": {EGR: used - used // 2}}, inventories={EGR: inventory})
    got = (found[0].to_dict()["classes"][EGR]["capacity"], found[0].to_dict()["classes"][EGR]["over"]) \
        if found else None
    assert got == over, case


def test_over_capacity_lists_consumers_youngest_first_and_moves_the_youngest_until_it_fits():
    live = [Server("old", name="vm-old", created_at=OLD), Server("new", name="vm-new", created_at=NEW)]
    (f,) = over_capacity({"old": HELD, "new": HELD, "claim": {EGR: 200}}, live)
    d = f.to_dict()
    assert (f.subject, f.fix, d["host"]) == (BR, None, "devstack0")
    assert [c["consumer"] for c in d["consumers"]] == ["new", "old", "claim"]
    assert [c["since"] for c in d["consumers"]] == ["2026-03-01T10:00:00+00:00", "2026-01-01T10:00:00+00:00", None]
    assert d["consumers"][2]["basis"] == NO_AGE and d["consumers"][2]["type"] == "consumer"
    assert d["classes"] == {EGR: {"used": 2200, "capacity": 1500, "total": 1500, "reserved": 0,
                                  "allocation_ratio": 1.0, "over": 700},
                            IGR: {"used": 2000, "capacity": 1500, "total": 1500, "reserved": 0,
                                  "allocation_ratio": 1.0, "over": 500}}
    assert d["move"] == ["new"]  # 1000 of each class freed covers 700 and 500
    assert "To get back within capacity: move (migrate) or delete server vm-new new —" in f.detail
    assert f"server vm-new new (created {NEW}): {EGR}=1000, {IGR}=1000; server vm-old old" in f.detail


def test_a_migration_that_brought_the_server_counts_not_its_creation():
    live = [Server("a", created_at="2026-01-01T00:00:00Z"), Server("b", created_at="2026-02-01T00:00:00Z")]
    moves = [Migration("m1", "a", "confirmed", "devstack0", "2026-04-01T00:00:00.000000", "resize"),
             Migration("m2", "b", "reverted", "devstack0", "2026-05-01T00:00:00.000000"),   # it went back
             Migration("m3", "b", "confirmed", "devstack9", "2026-06-01T00:00:00.000000")]  # to another host
    (f,) = over_capacity({"a": HELD, "b": HELD}, live, moves)
    d = f.to_dict()
    assert [c["consumer"] for c in d["consumers"]] == ["a", "b"]
    assert d["consumers"][0]["basis"] == "resize m1 to devstack0 started 2026-04-01T00:00:00.000000"
    assert d["move"] == ["a"]


def test_an_in_progress_migration_holds_the_servers_old_allocation():
    live = [Server("a", created_at="2026-01-01T00:00:00Z"), Server("b", created_at="2026-02-01T00:00:00Z")]
    moves = [Migration("mig", "a", "migrating", "devstack9", "2026-06-01T00:00:00")]
    (f,) = over_capacity({"mig": HELD, "b": HELD}, live, moves)
    d = f.to_dict()
    assert [(c["consumer"], c["type"]) for c in d["consumers"]] == [("b", "server"), ("mig", "migration")]
    assert d["consumers"][1]["since"] == "2026-01-01T00:00:00+00:00"
    assert d["consumers"][1]["todo"] == "finish migration mig of server a (confirm or revert it)"


def test_consumers_without_age_are_moved_only_when_the_dated_ones_do_not_suffice():
    (f,) = over_capacity({"x": {EGR: 1000}, "y": {EGR: 1000}, "vm": {EGR: 100}},
                         [Server("vm", created_at=NEW)], inventories={EGR: {"total": 500}})
    d = f.to_dict()
    assert d["move"] == ["vm", "x", "y"]  # 2100 used, 500 fit: vm frees 100, then x 1000 is not enough yet
    assert "`minbw allocation delete` if it is a claim of minbw's" in f.detail


def test_any_class_is_checked_not_only_bandwidth():
    plan = judge_audit({"root": {"vm": {"VCPU": 4}, "vm2": {"VCPU": 8}}}, [Server("vm"), Server("vm2")], [], [], {},
                 inventories={"root": {"VCPU": {"total": 8, "allocation_ratio": 1.0}}})
    assert [(f.kind, f.subject) for f in plan.findings] == [(OVER_CAPACITY, "root")]
    assert plan.findings[0].to_dict()["classes"]["VCPU"]["over"] == 4


def test_left_counts_findings_not_fixed():
    plan = judge_audit({BR: {GONE: HELD, VM: {EGR: 2000, IGR: 2000}}}, [Server(VM)], [], [port()], NAMES)
    assert [f.kind for f in plan.findings] == [LEAK, DOUBLE]
    assert plan.left([FixResult(plan.findings[0].fix, True)]) == 1 and plan.left([]) == 2
    assert plan.left([FixResult(plan.findings[0].fix, False, "refused")]) == 2


def test_fix_result_dict_is_the_op_with_done_and_error():
    plan = judge_audit({BR: {GONE: HELD}}, [], [], [], NAMES)
    op = plan.findings[0].fix
    assert list(FixResult(op, True).to_dict().items()) == [*op.to_dict().items(), ("done", True), ("error", None)]
    assert FixResult(op, False, "E: x").to_dict() == {**op.to_dict(), "done": False, "error": "E: x"}


def test_flavor_amounts_sum_every_group():
    assert flavor_amounts({"resources:VCPU": "2", f"resources1:{EGR}": "100", f"resources_x:{EGR}": "50",
                           "trait:CUSTOM_A": "required", "resources:DISK_GB": "0", "resources:MEMORY_MB": "x",
                           "hw:cpu_policy": "dedicated"}) == {"VCPU": 2, EGR: 150}
    assert flavor_amounts(None) == {}


def test_trimmed_keeps_everything_but_the_bandwidth():
    body = {"allocations": {"root": {"resources": {"VCPU": 1}}, BR: {"resources": HELD}},
            "consumer_generation": 4, "project_id": "p", "user_id": "u"}
    assert trimmed(body, [EGR, IGR]) == {"allocations": {"root": {"resources": {"VCPU": 1}}},
                                         "consumer_generation": 4, "project_id": "p", "user_id": "u"}
    assert trimmed({"allocations": {BR: {"resources": HELD}}, "consumer_generation": 1, "project_id": "p",
                    "user_id": "u"}, [EGR, IGR])["allocations"] == {}
