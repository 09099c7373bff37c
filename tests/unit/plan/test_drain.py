"""The drain planner (minbw.plan.drain, pure): hand cases, and hypothesis against an independent check of every
plan (no (provider, class) overcommitted, every server on its roots, one per anti-affinity group and host) and
against greedy-by-size."""
from __future__ import annotations

import pytest

from minbw.errors import InvalidInput
from minbw.model.providers import Provider, ProviderDetail
from minbw.model.requests import PortRequest, RequestGroup, ServerRequest
from minbw.plan.drain import CANDIDATE_TREES, DrainServer, plan_drain
from minbw.reports.capacity.report import trees

E, I = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
PN0, PN1 = "CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_PHYSNET_PHYSNET1"
NORMAL = "CUSTOM_VNIC_TYPE_NORMAL"
ROOT_INV = {"VCPU": 16, "MEMORY_MB": 32768, "DISK_GB": 500}


def rp(uuid, name, parent=None, root=None, traits=(), inv=None, used=None):
    return ProviderDetail(Provider(uuid, name, 1, parent, root or uuid), frozenset(traits),
                          {rc: {"total": v} for rc, v in (inv or {}).items()}, dict(used or {}), True)


def host(n, *bridges, root_inv=None, root_used=None, root_traits=()):
    """Host ``n`` (root ``h<n>``, named ``host<n>``) with bridges: (physnet trait, egress total, egress used)."""
    out = [rp(f"h{n}", f"host{n}", inv=root_inv or ROOT_INV, used=root_used, traits=root_traits)]
    for b, (physnet, total, used) in enumerate(bridges):
        out.append(rp(f"b{n}{b}", f"host{n}:br{b}", parent=f"h{n}", root=f"h{n}", traits=(physnet, NORMAL),
                      inv={E: total}, used={E: used} if used else None))
    return out


def destinations(*hosts):
    found, _notes = trees([d for h in hosts for d in h])
    return found


def port(pid, egress, physnet=PN0):
    return PortRequest(pid, (RequestGroup(f"{pid}-g", ((E, egress),), (physnet, NORMAL)),))


def server(i, *ports, status="ACTIVE", vcpus=1, ram=512, roots=None, group=None):
    return DrainServer(f"s{i}", f"vm{i}", status, ServerRequest(vcpus=vcpus, memory_mb=ram, ports=tuple(ports)),
                       roots=roots, anti_affinity=group, port_names={p.port_id: f"port-{p.port_id}" for p in ports})


def where(plan):
    return {m.server_name: m.host for m in plan.moves}


# ---------------------------------------------------------------- hand cases

def test_one_server_goes_where_it_fits_with_its_allocation_and_mappings():
    plan = plan_drain("src", [server(1, port("p1", 300), status="SHUTOFF")],
                      destinations(host(1, (PN0, 1000, 900)), host(2, (PN0, 1000, 0))))
    assert plan.complete and plan.method == "greedy" and plan.greedy_moves == 1 and plan.optimal
    [move] = plan.moves
    assert (move.server_id, move.kind, move.host, move.root) == ("s1", "cold", "host2", "h2")
    assert {rp: dict(r) for rp, r in move.allocations.items()} == {"h2": {"VCPU": 1, "MEMORY_MB": 512},
                                                                  "b20": {E: 300}}
    assert dict(move.mappings) == {"": ("h2",), "p1-g": ("b20",)}
    assert plan.to_dict()["moves"][0]["mappings"] == {"": ["h2"], "p1-g": ["b20"]}


def test_stuck_for_bandwidth_names_the_class_the_provider_and_how_much_short():
    plan = plan_drain("src", [server(1, port("p1", 500))],
                      destinations(host(1, (PN0, 1000, 800)), host(2, (PN0, 1000, 600))))
    assert not plan.complete and plan.moves == () and plan.method == "exact"
    [stuck] = plan.stuck
    assert stuck.server_name == "vm1"
    assert "nearest host2: NET_BW_EGR_KILOBIT_PER_SEC on host2:br0 (400 free, 500 needed, 100 short)" in stuck.reason
    assert (stuck.limits[0].resource_class, stuck.limits[0].providers, stuck.limits[0].free,
            stuck.limits[0].needs) == (E, ("host2:br0",), 400, 500)


def test_stuck_for_traits_says_which_port_and_what_it_lacks():
    plan = plan_drain("src", [server(1, port("p1", 100, physnet=PN1))],
                      destinations(host(1, (PN0, 1000, 0)), host(2, (PN0, 1000, 0))))
    [stuck] = plan.stuck
    assert stuck.reason.startswith("no way to place it on any of the 2 host(s) allowed: port-p1 bandwidth: "
                                   "no provider of host1 has CUSTOM_PHYSNET_PHYSNET1")
    assert "(and 1 other reason(s))" in stuck.reason  # host2 says the same of itself


def test_roots_keep_a_server_off_the_hosts_nova_filters_out():
    dest = destinations(host(1, (PN0, 10000, 0)), host(2, (PN0, 1000, 0)))
    plan = plan_drain("src", [server(1, port("p1", 100), roots={"h2"})], dest)
    assert where(plan) == {"vm1": "host2"}
    plan = plan_drain("src", [server(1, port("p1", 100), roots={"elsewhere"})], dest)
    assert plan.stuck[0].reason == "Nova's prefilters and filters allow none of the 2 destination hosts"


def test_anti_affinity_puts_a_groups_members_on_distinct_hosts():
    dest = destinations(host(1, (PN0, 10000, 0)), host(2, (PN0, 10000, 0)))
    plan = plan_drain("src", [server(i, port(f"p{i}", 100), group="g") for i in (1, 2)], dest)
    assert sorted(where(plan).values()) == ["host1", "host2"]
    plan = plan_drain("src", [server(i, port(f"p{i}", 100), group="g") for i in (1, 2, 3)], dest)
    assert len(plan.moves) == 2
    assert plan.stuck[0].reason.startswith("anti-affinity: the hosts with room (host1, host2) take another server "
                                           "of group g")
    # without the group all three fit on host1
    plan = plan_drain("src", [server(i, port(f"p{i}", 100)) for i in (1, 2, 3)], dest)
    assert set(where(plan).values()) == {"host1"}


def test_greedy_by_size_fails_and_exact_places_all():
    # greedy, largest first, each on the first host that fits: vm1 (400) on host1 (500: 100 left), vm2 and vm3
    # (300 each) on host2 (700: 100 left), vm4 (200) nowhere. Exact: 400+300 on host2, 300+200 on host1.
    dest = destinations(host(1, (PN0, 500, 0)), host(2, (PN0, 700, 0)))
    servers = [server(1, port("p1", 400)), server(2, port("p2", 300)), server(3, port("p3", 300)),
               server(4, port("p4", 200))]
    plan = plan_drain("src", servers, dest)
    assert plan.complete and plan.method == "exact" and plan.greedy_moves == 3 and plan.optimal
    assert where(plan) == {"vm1": "host2", "vm2": "host1", "vm3": "host2", "vm4": "host1"}
    # the moves come largest first
    assert [m.server_name for m in plan.moves] == ["vm1", "vm2", "vm3", "vm4"]
    greedy = plan_drain("src", servers, dest, method="greedy")
    assert (greedy.method, len(greedy.moves), greedy.optimal) == ("greedy", 3, False)
    assert greedy.stuck[0].server_name == "vm4"


def test_the_fast_path_calls_no_solver_and_exact_can_be_forced(monkeypatch):
    import minbw.plan.drain as drain

    def no_solver(*args, **kwargs):
        raise AssertionError("the solver was called")

    dest = destinations(host(1, (PN0, 1000, 0)))
    monkeypatch.setattr(drain, "maximise", no_solver)
    plan = plan_drain("src", [server(1, port("p1", 100))], dest)
    assert plan.method == "greedy"
    with pytest.raises(AssertionError, match="the solver was called"):
        plan_drain("src", [server(1, port("p1", 100))], dest, method="exact")


@pytest.mark.parametrize("call, message", [
    (lambda d: plan_drain("host1", [], d), "the source host host1 is among the destinations"),
    (lambda d: plan_drain("src", [server(1), server(1)], d), "servers ['s1'] are given more than once"),
    (lambda d: plan_drain("src", [], d, method="best"), "method must be one of auto, greedy, exact"),
    (lambda d: plan_drain("src", [], d + d), "a destination tree is given twice"),
])
def test_bad_input_is_refused_with_what_to_fix(call, message):
    with pytest.raises(InvalidInput, match=message.replace("[", r"\[").replace("]", r"\]")):
        call(destinations(host(1, (PN0, 1000, 0))))


def test_many_hosts_offer_each_server_the_roomiest_and_say_so():
    n = CANDIDATE_TREES + 4
    dest = destinations(*(host(i, (PN0, 1000, 1000 - 100 * (i % 5 + 1))) for i in range(n)))
    plan = plan_drain("src", [server(i, port(f"p{i}", 100)) for i in range(3)], dest, method="exact")
    assert plan.complete and plan.optimal and plan.notes == ()  # all placed: nothing can be better
    # one server per host fits (150 free each): some stay, and the count is over the hosts offered only
    dest = destinations(*(host(i, (PN0, 1000, 850)) for i in range(n)))
    plan = plan_drain("src", [server(i, port(f"p{i}", 100)) for i in range(n + 2)], dest)
    assert (len(plan.moves), len(plan.stuck), plan.method, plan.optimal) == (n, 2, "exact", False)
    assert any(f"offered only the {CANDIDATE_TREES} hosts with most room" in note for note in plan.notes)
