"""The heal planner (plan/heal.py) on tables: what is missing, where it goes, and why there."""
from __future__ import annotations

import pytest

from minbw.model.requests import PortRequest, RequestGroup
from minbw.reports.guarantee import PortState
from minbw.plan.heal import ALLOCATION, BINDING, BOTH, OK, ServerHeal, plan_heal

EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
ROOT, BR, PF1, PF2 = "root", "br-test", "pf-ens1", "pf-ens2"
PHYS0, PHYS1 = "CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_PHYSNET_PHYSNET1"
BW = {EGR: 1000, IGR: 1000}


def inv(total, **kw):
    return {"total": total, **kw}


def provider(name, traits, inventories=None, usages=None):
    return {"name": name, "traits": traits, "inventories": inventories or {}, "usages": usages or {}}


TREE = {
    ROOT: provider("devstack0", [], {"VCPU": inv(8)}, {"VCPU": 1}),
    BR: provider("devstack0:Open vSwitch agent:br-test", [PHYS0, "CUSTOM_VNIC_TYPE_NORMAL"],
                 {EGR: inv(1500), IGR: inv(1500)}),
    PF1: provider("devstack0:NIC Switch agent:ens1", [PHYS0, "CUSTOM_VNIC_TYPE_DIRECT"], {EGR: inv(10000), IGR: inv(10000)}),
    PF2: provider("devstack0:NIC Switch agent:ens2", [PHYS1, "CUSTOM_VNIC_TYPE_DIRECT"], {EGR: inv(10000), IGR: inv(10000)}),
}


def port(pid, vnic="NORMAL", physnet=PHYS0, binding=None, profile=None):
    group = RequestGroup(f"g-{pid}", BW, (physnet, f"CUSTOM_VNIC_TYPE_{vnic}"))
    prof = dict(profile or {})
    if binding is not None:
        prof["allocation"] = binding
    return PortState(pid, pid, prof, "devstack0", PortRequest(pid, (group,), (group.id,)), "neutron")


def current(extra=None):
    allocs = {ROOT: {"resources": {"VCPU": 1}}}
    for rp, res in (extra or {}).items():
        allocs[rp] = {"resources": res}
    return {"allocations": allocs, "consumer_generation": 3, "project_id": "p", "user_id": "u"}


@pytest.mark.parametrize("case, alloc, ports, statuses, providers", [
    ("healthy", {BR: BW}, [port("p1", binding={"g-p1": BR})], [OK], [BR]),
    ("binding lost (allocation there)", {BR: BW}, [port("p1")], [BINDING], [BR]),
    ("allocation lost (binding there)", {}, [port("p1", binding={"g-p1": BR})], [ALLOCATION], [BR]),
    ("both lost, OVS: the bridge of the physnet", {}, [port("p1")], [BOTH], [BR]),
    ("both lost, SR-IOV: the PF of the port's physical_network", {},
     [port("p1", "DIRECT", physnet=PHYS1, profile={"physical_network": "physnet1"})], [BOTH], [PF2]),
    ("legacy single-uuid binding, allocation lost", {}, [port("p1", binding=BR)], [ALLOCATION], [BR]),
])
def test_heal_table(case, alloc, ports, statuses, providers):
    plan = plan_heal({"id": "vm"}, current(alloc), ports, TREE)
    assert [g.status for g in plan.groups] == statuses, case
    assert [g.provider for g in plan.groups] == providers, case
    if statuses == [OK]:
        assert plan.ops == ()


def test_both_lost_writes_allocation_then_binding():
    plan = plan_heal({"id": "vm"}, current(), [port("p1")], TREE)
    assert [op.action for op in plan.ops] == ["put_allocations", "update_binding"]
    assert plan.ops[0].allocations == {ROOT: {"resources": {"VCPU": 1}}, BR: {"resources": BW}}
    assert plan.ops[1].binding == {"g-p1": BR}
    assert plan.after["bindings"] == {"p1": {"g-p1": BR}} and plan.generation == 3


def test_legacy_binding_stays_legacy():
    plan = plan_heal({"id": "vm"}, current({BR: BW}), [port("p1", binding="elsewhere")], TREE)
    assert [(g.status, g.provider) for g in plan.groups] == [(BINDING, BR)]
    assert plan.ops[0].binding == BR


def test_two_ports_share_what_is_free():
    """Two lost ports on physnet0 (normal): br-test has room for one, the second cannot be healed."""
    plan = plan_heal({"id": "vm"}, current(), [port("p1"), port("p2")], TREE)
    assert [g.status for g in plan.groups] == [BOTH, "unhealable"]
    assert "1500" not in plan.groups[1].why and "500 free, needs 1000" in plan.groups[1].why
    assert plan.ops == () and not plan.healable  # all or nothing: a half heal would be reported as healed


def test_several_fit_and_nothing_points_at_one():
    tree = {**TREE, "pf-ens3": provider("devstack0:NIC Switch agent:ens3", [PHYS0, "CUSTOM_VNIC_TYPE_DIRECT"],
                                        {EGR: inv(10000), IGR: inv(10000)}, {EGR: 5000})}
    plan = plan_heal({"id": "vm"}, current(), [port("p1", "DIRECT")], tree)
    g = plan.groups[0]
    assert (g.status, g.provider) == (BOTH, PF1) and "most room" in g.chosen_by  # ens3 has less room


def test_capacity_rules_are_honoured():
    tree = {**TREE, BR: provider(TREE[BR]["name"], TREE[BR]["traits"], {EGR: inv(1500, step_size=300),
                                                                       IGR: inv(1500)})}
    plan = plan_heal({"id": "vm"}, current(), [port("p1")], tree)
    assert plan.groups[0].status == "unhealable" and "step_size 300" in plan.groups[0].why


def test_server_heal_dicts_are_the_shapes_heal_returned():
    """Each outcome's dict, keys in the order heal's JSON and the module's ``servers`` have always had."""
    plan = plan_heal({"id": "vm"}, current(), [port("p1")], TREE)
    planned = {"plan": plan.to_dict(), "diff": plan.diff()}
    shapes = [
        (ServerHeal("vm", "n", error="no hypervisor"), {"server": "vm", "name": "n", "healed": False,
                                                       "error": "no hypervisor"}),
        (ServerHeal("vm", "n", plan), {"server": "vm", "name": "n", **planned, "healed": False, "error": None}),
        (ServerHeal("vm", "n", plan, healed=True, writes=2),
         {"server": "vm", "name": "n", **planned, "healed": True, "writes": 2, "error": None}),
        (ServerHeal("vm", "n", plan, error="refused", rolled_back=("put_allocations vm",)),
         {"server": "vm", "name": "n", **planned, "healed": False, "error": "refused",
          "rolled_back": ["put_allocations vm"]}),
    ]
    for heal, expected in shapes:
        assert heal.to_dict() == expected
        assert list(heal.to_dict()) == list(expected)
    assert ServerHeal("vm", "n", plan).needs_writes and not ServerHeal("vm", "n").needs_writes
