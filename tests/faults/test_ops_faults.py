"""The other writers under faults: moves (one ``POST /allocations`` for two consumers: move, confirm,
revert), host separation (traits on compute roots) and routed segments' providers, against the real
Placement behind the fault-injecting proxy. The end state is read from Placement directly; what a
failed run reports as written and not written is compared with what Placement holds."""
from __future__ import annotations

import uuid as uuidlib

import pytest

from minbw.errors import PartialApply, PlacementUnavailable
from minbw.neutron.segments import RoutedSegment
from minbw.ops import allocation_migration, segments as seg_ops, separation as sep_ops
from minbw.plan import separation as sp
from minbw.plan.segments import plan_segments
from tests.faults.conftest import SLOW
from tests.support.faults.proxy import Rule
from tests.functional.test_allocation_migration_placement import ONE_SERVER, TWICE, allocations, boot, bridge, host, \
    server_request, totals

ALLOCATIONS = r"^/allocations(\?|$)"
FAULTS = ["reset_before", "reset_after", "503", "409", "slow_after"]


@pytest.fixture
def moved_setup(placement):
    h1, h2 = host(placement, "h1"), host(placement, "h2")
    req = server_request()
    server = boot(placement, req, h1)
    return req, server.consumer, h1, h2, allocations(placement, server.consumer)


# ---------------------------------------------------------------- moves: POST /allocations


@pytest.mark.parametrize("fault", FAULTS)
def test_move_then_confirm_under_faults(placement, proxied, moved_setup, fault):
    """The first try of each POST faults; the move lands once, the confirm frees the source once: no
    double claim, nothing lost — a lost answer is found applied when re-read, a 409 is planned again."""
    req, consumer, h1, h2, source = moved_setup
    proxied.proxy.add(Rule("POST", ALLOCATIONS, fault, delay=SLOW))
    api = proxied.api()
    moved = allocation_migration.move(api, consumer, req, "h2")
    assert moved.changed
    assert allocations(placement, moved.migration) == source
    assert allocations(placement, consumer) == {h2: {"DISK_GB": 1, "MEMORY_MB": 256, "VCPU": 1},
                                                bridge(placement, "h2"): {k: 1000 for k in ONE_SERVER if "NET" in k}}
    assert totals(placement) == TWICE
    proxied.proxy.clear()
    proxied.proxy.add(Rule("POST", ALLOCATIONS, fault, delay=SLOW))
    confirmed = allocation_migration.confirm(api, moved.migration)
    assert confirmed.changed and allocations(placement, moved.migration) == {}
    assert totals(placement) == ONE_SERVER
    if fault in ("reset_after", "slow_after"):
        assert api.converged >= 2  # Placement applied both; the client re-read and found them
    assert not allocation_migration.confirm(api, moved.migration).changed


@pytest.mark.parametrize("fault", FAULTS)
def test_revert_under_faults(placement, proxied, moved_setup, fault):
    req, consumer, h1, h2, source = moved_setup
    moved = allocation_migration.move(placement, consumer, req, "h2")
    proxied.proxy.add(Rule("POST", ALLOCATIONS, fault, delay=SLOW))
    reverted = allocation_migration.revert(proxied.api(), consumer, moved.migration, req)
    assert reverted.changed
    assert allocations(placement, consumer) == source and allocations(placement, moved.migration) == {}
    assert totals(placement) == ONE_SERVER


def test_move_with_placement_unavailable_writes_nothing_and_says_so(placement, proxied, moved_setup):
    req, consumer, h1, h2, source = moved_setup
    proxied.proxy.add(Rule("POST", ALLOCATIONS, "503", nth=None))
    migration = str(uuidlib.uuid4())
    with pytest.raises(PlacementUnavailable) as err:
        allocation_migration.move(proxied.api(), consumer, req, "h2", migration)
    assert err.value.method == "POST" and err.value.status == 503 and err.value.maybe_applied
    assert "may or may not have been applied" in str(err.value)
    # what Placement holds: the server still on h1, no migration record, nothing on h2
    assert allocations(placement, consumer) == source and allocations(placement, migration) == {}
    assert totals(placement) == ONE_SERVER
    proxied.proxy.clear()
    assert allocation_migration.move(proxied.api(), consumer, req, "h2", migration).changed  # the same move, once it answers
    assert totals(placement) == TWICE


def test_move_answer_lost_for_every_try_is_read_back(placement, proxied, moved_setup):
    """Placement applies the first POST and every answer is lost: the retries meet Placement's real 409
    (the consumers' generations moved on), the re-read finds the move made — one move, not an error."""
    req, consumer, h1, h2, source = moved_setup
    proxied.proxy.add(Rule("POST", ALLOCATIONS, "reset_after", nth=None))
    api = proxied.api()
    moved = allocation_migration.move(api, consumer, req, "h2")
    assert moved.changed and api.converged == 1
    assert [x.status for x in proxied.proxy.log if x.method == "POST"][0] == 204  # applied by Placement
    assert allocations(placement, moved.migration) == source and totals(placement) == TWICE


# ---------------------------------------------------------------- host separation: traits on roots


@pytest.fixture
def roots(placement):
    placement.request("delete", f"/traits/{sp.DEFAULT_TRAIT}", "1.6", ok=(204, 404))
    return {name: host(placement, name) for name in ("s1", "s2", "s3")}


def separate(api, hosts, *, exclusive=False):
    sep = sp.Separation("avoid")
    observed = sep_ops.observe_hosts(api, sep, hosts)
    plan = sp.combine(sep, sp.plan_hosts(sep, hosts, observed, exclusive=exclusive), sp.plan_flavors(sep, (), (), {}))
    done = sep_ops.apply(api, None, plan, observed) if plan.ops else []
    return plan, done


def marked(placement, roots):
    return {name for name, rp in roots.items() if sp.DEFAULT_TRAIT in placement.get_provider_traits(rp)[0]}


def test_separation_unavailable_part_way_names_what_was_and_was_not_written(placement, proxied, roots):
    proxied.proxy.add(Rule("PUT", r"/resource_providers/[^/]+/traits$", "503", nth=None))
    with pytest.raises(PartialApply) as err:
        separate(proxied.api(), ["s1", "s2"])
    e = err.value
    assert isinstance(e.cause, PlacementUnavailable)
    assert [op.action for op in e.applied] == ["create_trait"]
    assert [(op.action, op.host) for op in e.pending] == [("reserve", "s1"), ("reserve", "s2")]
    d = e.to_dict()
    assert d["writes_done"] == 1 and len(d["not_applied"]) == 2 and "not written" in d["msg"]
    # Placement holds exactly what was reported: the trait, no host marked
    assert placement.existing_traits([sp.DEFAULT_TRAIT]) and marked(placement, roots) == set()
    proxied.proxy.clear()
    plan, _ = separate(proxied.api(), ["s1", "s2"])
    assert [(op.action, op.host) for op in plan.ops] == [("reserve", "s1"), ("reserve", "s2")]  # the rest only
    assert marked(placement, roots) == {"s1", "s2"}
    placement.counter.reset()
    assert separate(placement, ["s1", "s2"])[0].ops == () and placement.counter.writes == 0


@pytest.mark.parametrize("fault", FAULTS)
def test_separation_exclusive_under_faults(placement, proxied, roots, fault):
    separate(placement, ["s1", "s2"])
    proxied.proxy.add(Rule("PUT", r"/resource_providers/[^/]+/traits$", fault, nth=(1, 2), delay=SLOW))
    plan, done = separate(proxied.api(), ["s3"], exclusive=True)
    assert {(op.action, op.host) for op in done} == {("reserve", "s3"), ("release", "s1"), ("release", "s2")}
    assert marked(placement, roots) == {"s3"}
    assert separate(placement, ["s3"], exclusive=True)[0].ops == ()


# ---------------------------------------------------------------- routed segments' providers


def routed(n: int, hosts: tuple[str, ...]) -> tuple[RoutedSegment, ...]:
    inv = {"IPV4_ADDRESS": {"total": 6, "reserved": 2, "min_unit": 1, "max_unit": 1, "step_size": 1,
                            "allocation_ratio": 1.0}}
    net = str(uuidlib.uuid4())
    return tuple(RoutedSegment(str(uuidlib.uuid4()), net, f"rack{i}", "vlan", f"rack{i}", (str(uuidlib.uuid4()),),
                               inv, (hosts[i % len(hosts)],)) for i in range(n))


def sync_segments(api, segs):
    plan = plan_segments(segs, seg_ops.observe(api, segs)).plan
    return plan, (seg_ops.apply(api, plan) if plan.ops else [])


def test_segments_unavailable_part_way_then_resumed(placement, proxied):
    for name in ("r0", "r1"):
        host(placement, name, ovs_kbps=0)
    segs = routed(2, ("r0", "r1"))
    proxied.proxy.add(Rule("PUT", r"/resource_providers/[^/]+/inventories$", "503", nth=None))
    with pytest.raises(PartialApply) as err:
        sync_segments(proxied.api(), segs)
    e = err.value
    assert [op.action for op in e.applied] == ["create_provider"] and e.pending[0].action == "set_inventories"
    assert len(e.applied) + len(e.pending) == e.planned and "segment sync again" in str(e)
    # Placement holds what was reported: the first segment's provider, without its inventory
    assert placement.get_inventories(segs[0].id)[0] == {}
    plan = plan_segments(segs, seg_ops.observe(placement, segs)).plan
    assert sorted(map(repr, plan.ops)) == sorted(map(repr, e.pending))
    proxied.proxy.clear()
    sync_segments(proxied.api(), segs)
    placement.counter.reset()
    assert sync_segments(placement, segs)[0].ops == () and placement.counter.writes == 0


@pytest.mark.parametrize("fault", FAULTS)
def test_segments_under_faults(placement, proxied, fault):
    for name in ("q0", "q1"):
        host(placement, name, ovs_kbps=0)
    segs = routed(2, ("q0", "q1"))
    # every request to the providers may fault, but Placement answers 409 only to writes
    proxied.proxy.add(Rule("PUT" if fault == "409" else "*", r"^/resource_providers", fault, nth=(2, 5, 9), delay=SLOW))
    plan, done = sync_segments(proxied.api(), segs)
    assert len(done) == len(plan.ops) > 0
    for s in segs:
        assert placement.get_inventories(s.id)[0]["IPV4_ADDRESS"]["total"] == 6
    assert sync_segments(placement, segs)[0].ops == ()
