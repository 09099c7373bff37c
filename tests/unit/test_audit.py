"""The audit's verdicts (plan/audit.py) on tables of allocations, servers, migrations and ports."""
from __future__ import annotations

import pytest

from minbw.model.requests import PortRequest, RequestGroup
from minbw.plan.audit import LEAK, OVER, STALE_BINDING, PortBinding, audit, trimmed

EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
BR, PF = "br-test-uuid", "pf-uuid"
VM, GONE, MIG = "vm", "gone-server", "migration"
REQ = PortRequest("p1", (RequestGroup("g1", {EGR: 1000, IGR: 1000}, ("CUSTOM_PHYSNET_PHYSNET0",)),), ("g1",))
HELD = {EGR: 1000, IGR: 1000}


def port(device=VM, allocation=None, request=REQ, pid="p1"):
    return PortBinding(pid, device, request, {"g1": BR} if allocation is None else allocation)


@pytest.mark.parametrize("case, allocations, servers, migrations, ports, ignore, kinds", [
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
    ("server holds more than its ports request", {BR: {VM: {EGR: 3000, IGR: 1000}}}, [VM], [], [port()], [],
     [(OVER, VM)]),
    ("server with bandwidth and no QoS port", {BR: {VM: HELD}}, [VM], [], [], [], [(OVER, VM)]),
])
def test_audit(case, allocations, servers, migrations, ports, ignore, kinds):
    plan = audit(allocations, servers, migrations, ports, {BR: "devstack0:Open vSwitch agent:br-test"}, ignore)
    assert [(f.kind, f.subject) for f in plan.findings] == kinds, case
    assert plan.ok is (not kinds)
    # every leak and stale binding comes with its fix; over-allocation is reported only
    assert [(op.action, op.subject) for op in plan.ops] == [
        ({LEAK: "trim_consumer", STALE_BINDING: "clear_binding"}[k], s) for k, s in kinds if k != OVER]


def test_leak_detail_names_provider_and_amounts():
    plan = audit({BR: {GONE: {EGR: 5, "VCPU": 1}}}, [], [], [], {BR: "devstack0:Open vSwitch agent:br-test"})
    assert plan.findings[0].detail == (f"consumer {GONE} is neither a live server nor an in-progress migration but "
                                       f"holds devstack0:Open vSwitch agent:br-test ({BR}): {EGR}=5")
    assert plan.ops[0].classes == (EGR,)


def test_trimmed_keeps_everything_but_the_bandwidth():
    body = {"allocations": {"root": {"resources": {"VCPU": 1}}, BR: {"resources": HELD}},
            "consumer_generation": 4, "project_id": "p", "user_id": "u"}
    assert trimmed(body, [EGR, IGR]) == {"allocations": {"root": {"resources": {"VCPU": 1}}},
                                         "consumer_generation": 4, "project_id": "p", "user_id": "u"}
    assert trimmed({"allocations": {BR: {"resources": HELD}}, "consumer_generation": 1, "project_id": "p",
                    "user_id": "u"}, [EGR, IGR])["allocations"] == {}
