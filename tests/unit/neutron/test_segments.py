"""Routed networks: minbw.neutron.segments against Neutron's own segments plugin and ML2 mechanism drivers,
and the segment planner's tables."""
import ipaddress
import warnings

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from minbw.errors import NoValidHost
from minbw.model.providers import Provider
from minbw.neutron.segments import (IPV4_ADDRESS, counted_by_neutron, hosts_of_segment, ipv4_inventory,
                                    ipv4_subnet_ids, port_member_of, routed_segments, subnet_total_reserved,
                                    host_not_in_segments)
from minbw.placement.query import build_query
from minbw.model.requests import ServerRequest
from minbw.plan.segments import ObservedSegments, plan_segments, steady_recounts

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from neutron.plugins.ml2.drivers.mech_sriov.mech_driver.mech_driver import SriovNicSwitchMechanismDriver
    from neutron.plugins.ml2.drivers.openvswitch.mech_driver.mech_openvswitch import OpenvswitchMechanismDriver
    from neutron.services.segments.plugin import NovaSegmentNotifier

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MECH = {"Open vSwitch agent": OpenvswitchMechanismDriver(), "NIC Switch agent": SriovNicSwitchMechanismDriver()}


@st.composite
def subnets(draw):
    net = ipaddress.ip_network(f"10.{draw(st.integers(0, 255))}.0.0/{draw(st.integers(16, 30))}")
    # net.hosts() (prefix 16-30), without listing up to 65,534 addresses per example
    first, count = net.network_address + 1, net.num_addresses - 2
    pools = []
    if count and draw(st.booleans()):
        a = draw(st.integers(0, count - 1))
        b = draw(st.integers(a, count - 1))
        pools.append({"start": str(first + a), "end": str(first + b)})
    return {"allocation_pools": pools, "gateway_ip": str(first) if count and draw(st.booleans()) else None,
            "enable_dhcp": draw(st.booleans()), "ip_version": 4}


@FAST
@given(subnets())
def test_subnet_inventory_is_neutrons(subnet):
    assert subnet_total_reserved(subnet) == NovaSegmentNotifier._calculate_inventory_total_and_reserved(None, subnet)


@FAST
@given(st.lists(subnets(), min_size=1, max_size=3))
def test_segment_inventory_sums_its_subnets_as_neutron_updates_it(subs):
    # Neutron creates the inventory with the first subnet, then adds each later one's total and reserved
    total = reserved = 0
    for s in subs:
        t, r = NovaSegmentNotifier._calculate_inventory_total_and_reserved(None, s)
        total, reserved = total + t, reserved + r
    inv = ipv4_inventory(subs)
    assert (inv is None) == (total == 0)
    if inv:
        assert inv[IPV4_ADDRESS]["total"] == total and inv[IPV4_ADDRESS]["reserved"] == reserved
        assert inv[IPV4_ADDRESS]["max_unit"] == 1


PHYSNETS = ("rack0", "rack1", "physnet0")


@st.composite
def agents(draw):
    kind = draw(st.sampled_from(sorted(MECH)))
    nets = draw(st.lists(st.sampled_from(PHYSNETS), unique=True, max_size=3))
    if kind == "Open vSwitch agent":
        conf = {"bridge_mappings": {n: f"br-{n}" for n in nets},
                "tunnel_types": draw(st.lists(st.sampled_from(["vxlan", "geneve", "gre"]), unique=True, max_size=2))}
    else:
        conf = {"device_mappings": {n: [f"ens-{n}"] for n in nets}}
    return {"host": draw(st.sampled_from(["h0", "h1", "h2"])), "agent_type": kind, "configurations": conf}


@st.composite
def segments(draw):
    nt = draw(st.sampled_from(["vlan", "flat", "vxlan", "geneve"]))
    physnet = draw(st.sampled_from(PHYSNETS)) if nt in ("vlan", "flat") else None
    return {"id": "s", "network_id": "n", "network_type": nt, "physical_network": physnet,
            "segmentation_id": 5 if nt != "flat" else None}


@FAST
@given(segments(), st.lists(agents(), max_size=5))
def test_hosts_of_a_segment_are_the_ones_neutron_maps(segment, agent_list):
    if not segment["physical_network"]:
        assert hosts_of_segment(segment, agent_list) == ()
        return
    # services/segments/db.py: hosts of agents whose driver's check_segment_for_agent accepts the segment
    expected = sorted({a["host"] for a in agent_list if MECH[a["agent_type"]].check_segment_for_agent(segment, a)})
    assert list(hosts_of_segment(segment, agent_list)) == expected


NET, SEG0, SEG1 = "11111111-0000-4000-8000-000000000000", "aaaaaaaa-0000-4000-8000-000000000000", \
    "bbbbbbbb-0000-4000-8000-000000000000"
AGG0, AGG1 = "a0000000-0000-4000-8000-000000000000", "a1000000-0000-4000-8000-000000000000"
AGENTS = [{"host": "devstack0", "agent_type": "Open vSwitch agent", "configurations": {"bridge_mappings": {"rack0": "br"}}},
          {"host": "devstack1", "agent_type": "Open vSwitch agent", "configurations": {"bridge_mappings": {"rack1": "br"}}}]
SEGS = [{"id": SEG0, "network_id": NET, "network_type": "vlan", "physical_network": "rack0", "name": "seg0"},
        {"id": SEG1, "network_id": NET, "network_type": "vlan", "physical_network": "rack1", "name": "seg1"}]
SUBNETS = [{"id": "sub0", "segment_id": SEG0, "ip_version": 4, "gateway_ip": "10.1.0.1", "enable_dhcp": False,
            "allocation_pools": [{"start": "10.1.0.2", "end": "10.1.0.4"}]},
           {"id": "sub1", "segment_id": SEG1, "ip_version": 4, "gateway_ip": "10.2.0.1", "enable_dhcp": False,
            "allocation_pools": [{"start": "10.2.0.2", "end": "10.2.0.4"}]}]


def _routed(used0=0, used1=0):
    avail = {"sub0": {"total_ips": 3, "used_ips": used0}, "sub1": {"total_ips": 3, "used_ips": used1}}
    return routed_segments(SEGS, SUBNETS, AGENTS, avail)


def test_routed_segments_predict_provider_hosts_and_free_addresses():
    s0, s1 = _routed(used0=1)
    assert s0.hosts == ("devstack0",) and s1.hosts == ("devstack1",)
    assert s0.provider_name == f"Neutron segment id {SEG0}"
    assert s0.inventory[IPV4_ADDRESS]["total"] == 4 and s0.inventory[IPV4_ADDRESS]["reserved"] == 1
    assert (s0.free_ips, s1.free_ips) == (2, 3)


def test_a_port_without_address_may_use_every_segment_with_addresses_left():
    segs = _routed()
    choice = port_member_of({"id": "p", "network_id": NET, "fixed_ips": []}, segs, {"sub0": SEG0, "sub1": SEG1},
                            {SEG0: {AGG0}, SEG1: {AGG1}})
    assert choice.aggregates == (AGG0, AGG1) and choice.excluded == ()
    # the request carries it as one member_of=in:A,B, which Placement's own parser accepts (test_query)
    params, _ = build_query(ServerRequest(vcpus=1, member_of=(choice.aggregates,)), "1.39")
    assert params["member_of"] == f"in:{AGG0},{AGG1}"


def test_an_exhausted_segment_is_left_out_and_said_why():
    segs = _routed(used0=3)
    choice = port_member_of({"id": "p", "network_id": NET, "fixed_ips": []}, segs, {"sub0": SEG0, "sub1": SEG1},
                            {SEG0: {AGG0}, SEG1: {AGG1}})
    assert choice.aggregates == (AGG1,)
    assert choice.excluded == ((SEG0, "segment seg0 (rack0): no host in its aggregate has free IPv4 addresses "
                                      "(its subnets sub0 are exhausted)"),)
    assert host_not_in_segments("devstack0", choice, segs) == "host devstack0 is not in segment seg1 (rack1)"
    assert host_not_in_segments("devstack1", choice, segs) == ""


def test_every_segment_exhausted_is_a_clear_error():
    segs = _routed(used0=3, used1=3)
    with pytest.raises(NoValidHost, match=r"no segment of its network can take it: segment seg0 \(rack0\): no host "
                                           r"in its aggregate has free IPv4 addresses .*segment seg1 .*Fix: add"):
        port_member_of({"id": "p", "network_id": NET, "fixed_ips": []}, segs, {"sub0": SEG0, "sub1": SEG1},
                       {SEG0: {AGG0}, SEG1: {AGG1}})


def test_a_port_with_an_address_stays_in_its_subnets_segment_even_when_that_is_full():
    segs = _routed(used0=3)
    choice = port_member_of({"id": "p", "network_id": NET, "fixed_ips": [{"subnet_id": "sub0"}]}, segs,
                            {"sub0": SEG0, "sub1": SEG1}, {SEG0: {AGG0}, SEG1: {AGG1}})
    assert choice.candidates == (SEG0,) and choice.aggregates == (AGG0,)


def test_a_segment_nobody_reported_is_left_out():
    segs = _routed()
    choice = port_member_of({"id": "p", "network_id": NET, "fixed_ips": []}, segs, {}, {SEG1: {AGG1}})
    assert choice.aggregates == (AGG1,)
    assert "Placement has no provider with an aggregate for it" in choice.excluded[0][1]


def _rp(uuid, name):
    return Provider(uuid=uuid, name=name, generation=1, parent_uuid=None, root_uuid=uuid)


ROOT0, ROOT1 = "c0000000-0000-4000-8000-000000000000", "c1000000-0000-4000-8000-000000000000"


def test_plan_creates_missing_segment_providers_and_joins_the_hosts():
    plan, warnings_, _ = plan_segments(_routed(), ObservedSegments({}, {}, {}, {"devstack0": _rp(ROOT0, "devstack0")}))
    assert [str(op) for op in plan.ops] == [
        f"create provider Neutron segment id {SEG0} ({SEG0})",
        f"set inventories of Neutron segment id {SEG0}: IPV4_ADDRESS total=4 reserved=1",
        f"put Neutron segment id {SEG0} in aggregate {SEG0}",
        f"add compute node devstack0 (devstack0) to aggregate {SEG0}",
        f"create provider Neutron segment id {SEG1} ({SEG1})",
        f"set inventories of Neutron segment id {SEG1}: IPV4_ADDRESS total=4 reserved=1",
        f"put Neutron segment id {SEG1} in aggregate {SEG1}"]
    assert warnings_ == ["segment seg1 (rack1): host devstack1 has no compute node provider in Placement; it joins "
                         "the segment's aggregate once nova-compute reports it (run the sync again)"]


def test_plan_keeps_neutrons_aggregate_and_is_empty_when_in_sync():
    segs = _routed()
    inv = {s.id: dict(s.inventory) for s in segs}
    observed = ObservedSegments({SEG0: _rp(SEG0, "x"), SEG1: _rp(SEG1, "y")}, inv,
                                {SEG0: frozenset({AGG0}), SEG1: frozenset({AGG1}), ROOT0: frozenset({AGG0}),
                                 ROOT1: frozenset({AGG1, "other"})},
                                {"devstack0": _rp(ROOT0, "devstack0"), "devstack1": _rp(ROOT1, "devstack1")})
    plan, warnings_, differences = plan_segments(segs, observed)
    assert plan.ops == () and warnings_ == [] and differences == ()
    # a root that left the aggregate joins Neutron's (Nova's) aggregate again; its other aggregates stay
    observed = ObservedSegments(observed.providers, inv, {**observed.aggregates, ROOT1: frozenset({"other"})},
                                observed.roots)
    plan = plan_segments(segs, observed).plan
    assert [op.to_dict() for op in plan.ops] == [{"action": "add_root_to_aggregate", "uuid": ROOT1,
                                                  "name": "devstack1", "aggregates": [AGG1], "host": "devstack1"}]


OWNER_TEXT = st.one_of(st.sampled_from(["", "compute:nova", "compute:", "network:dhcp", "network:dhcp2", "Network:dhcp",
                                        "network:router_interface", "baremetal:none", "compute"]), st.text(max_size=20))


@FAST
@given(OWNER_TEXT, st.lists(st.tuples(st.booleans(), st.sampled_from(["sa", "sb", "s6"])), max_size=4))
def test_the_ports_neutron_counts_and_their_addresses_are_neutrons(owner, ips):
    fixed = [{"subnet_id": sub, "ip_address": "10.0.0.5" if v4 else "fd00::5"} for v4, sub in ips]
    port = {"device_owner": owner, "fixed_ips": fixed}
    assert counted_by_neutron(port) == NovaSegmentNotifier._does_port_require_nova_inventory_update(None, port)
    assert ipv4_subnet_ids(port) == NovaSegmentNotifier._get_ipv4_subnet_ids(None, port)


def _port(pid, owner, *subnets, deferred=False):
    return {"id": pid, "name": None, "device_owner": owner, "ip_allocation": "deferred" if deferred else "immediate",
            "fixed_ips": [{"subnet_id": s, "ip_address": f"10.9.0.{i + 2}"} for i, s in enumerate(subnets)]}


PORTS = [_port("p-router", "network:router_interface", "sub0"), _port("p-plain", "", "sub0", "sub0"),
         _port("p-vm", "compute:nova", "sub0"), _port("p-dhcp", "network:dhcp", "sub1"),
         _port("p-late", "", "sub1", deferred=True)]


def test_reserved_counts_every_address_of_the_ports_neutron_counts():
    s0, s1 = routed_segments(SEGS, SUBNETS, AGENTS, None, PORTS)
    assert [(p.id, p.addresses) for p in s0.ports] == [("p-plain", 2), ("p-router", 1)]
    assert s0.inventory[IPV4_ADDRESS]["reserved"] == 1 + 3 and s1.inventory[IPV4_ADDRESS]["reserved"] == 1 + 1
    assert s1.ports[0].deferred and s0.to_dict()["reserved_ports"][0] == {
        "id": "p-plain", "name": None, "device_owner": "", "addresses": 2, "deferred": False}


def _observed_with(segs, **counts):
    """Both segment providers in Placement with Neutron's inventory, ``counts`` (segment id → {field: value})
    replacing some of its numbers; generation 7."""
    inv = {s.id: {IPV4_ADDRESS: {**s.inventory[IPV4_ADDRESS], **counts.get(s.id, {})}} for s in segs}
    return ObservedSegments({SEG0: _rp(SEG0, "x"), SEG1: _rp(SEG1, "y")}, inv,
                            {SEG0: frozenset({AGG0}), SEG1: frozenset({AGG1}), ROOT0: frozenset({AGG0}),
                             ROOT1: frozenset({AGG1})},
                            {"devstack0": _rp(ROOT0, "devstack0"), "devstack1": _rp(ROOT1, "devstack1")},
                            {SEG0: 7, SEG1: 7})


def test_a_count_that_differs_is_reported_with_its_causes_and_written_only_by_a_recount():
    segs = routed_segments(SEGS, SUBNETS, AGENTS, None, PORTS)
    observed = _observed_with(segs, **{SEG0: {"reserved": 1}, SEG1: {"reserved": 1}})
    plan, _, diffs = plan_segments(segs, observed)
    assert plan.ops == ()
    d0, d1 = diffs
    assert (d0.segment, d0.field, d0.placement, d0.neutron) == (SEG0, "reserved", 1, 4)
    assert str(d0).startswith("segment seg0 (rack0): IPV4_ADDRESS reserved is 1 in Placement, 4 by Neutron's count")
    assert "which leaves -2, 3 fewer than the subnets reserve (Placement refuses a count below 0" in str(d0)
    assert "ip_allocation deferred): p-late" in str(d1) and "ip_allocation deferred" not in str(d0)
    assert plan.after[SEG0]["inventories"][IPV4_ADDRESS]["reserved"] == 1  # the sync leaves it
    plan, _, _ = plan_segments(segs, observed, recount=True)
    assert [op.to_dict() for op in plan.ops][0] == {
        "action": "recount", "uuid": SEG0, "name": f"Neutron segment id {SEG0}", "generation": 7,
        "from": {"total": 4, "reserved": 1}, "inventories": {IPV4_ADDRESS: segs[0].inventory[IPV4_ADDRESS]}}
    assert [str(op) for op in plan.ops] == [f"recount IPV4_ADDRESS of Neutron segment id {SEG0}: reserved 1 -> 4",
                                            f"recount IPV4_ADDRESS of Neutron segment id {SEG1}: reserved 1 -> 2"]


def test_too_many_reserved_and_a_total_off_are_explained():
    segs = routed_segments(SEGS, SUBNETS, AGENTS, None, [])
    plan, _, (high, total) = plan_segments(segs, _observed_with(segs, **{SEG0: {"reserved": 3},
                                                                         SEG1: {"total": 8}}))
    assert plan.ops == ()
    assert "moved to a subnet of another segment" in str(high) and "2 addresses stay reserved" in str(high)
    assert total.field == "total" and "Placement offers +4 addresses" in str(total)


def test_fields_neutron_never_changes_are_set_with_the_counts_left_as_they_are():
    segs = routed_segments(SEGS, SUBNETS, AGENTS, None, PORTS)
    observed = _observed_with(segs, **{SEG0: {"max_unit": 4, "reserved": 2}})
    plan, _, diffs = plan_segments(segs, observed)
    assert [op.to_dict() for op in plan.ops] == [{
        "action": "set_inventory_fields", "uuid": SEG0, "name": f"Neutron segment id {SEG0}",
        "inventories": {IPV4_ADDRESS: {"min_unit": 1, "max_unit": 1, "step_size": 1, "allocation_ratio": 1.0}}}]
    assert [d.field for d in diffs] == ["reserved"]


def test_a_new_provider_gets_the_count_with_its_ports():
    segs = routed_segments(SEGS, SUBNETS, AGENTS, None, PORTS)
    plan, _, diffs = plan_segments(segs, ObservedSegments({}, {}, {}, {}))
    assert diffs == ()
    assert [str(op) for op in plan.ops if op.action == "set_inventories"] == [
        f"set inventories of Neutron segment id {SEG0}: IPV4_ADDRESS total=4 reserved=4",
        f"set inventories of Neutron segment id {SEG1}: IPV4_ADDRESS total=4 reserved=2"]


def test_a_recount_is_kept_only_when_the_quiet_window_saw_the_same_count_at_the_same_generation():
    segs = routed_segments(SEGS, SUBNETS, AGENTS, None, PORTS)
    first = plan_segments(segs, _observed_with(segs, **{SEG0: {"reserved": 1}, SEG1: {"reserved": 1}}), recount=True)
    moved = _observed_with(segs, **{SEG0: {"reserved": 1}, SEG1: {"reserved": 3}})  # a delta of Neutron's came
    moved = ObservedSegments(moved.providers, moved.inventories, moved.aggregates, moved.roots, {SEG0: 7, SEG1: 8})
    second = plan_segments(segs, moved, recount=True)
    kept = steady_recounts(first, second, segs)
    assert [op.uuid for op in kept.plan.ops] == [SEG0]
    assert kept.warnings == ["segment seg1 (rack1): not recounted: its count or its ports changed during the quiet "
                             "window (Neutron may have a delta on its way); run the recount again"]
    assert steady_recounts(first, first, segs).plan.ops == first.plan.ops


@FAST
@given(segments(), st.lists(st.tuples(st.sampled_from(["h0", "h1"]), st.sampled_from(
    ["OVN Controller agent", "OVN Controller Gateway agent"]), st.lists(st.sampled_from(PHYSNETS), unique=True,
                                                                         max_size=3), st.sampled_from(["", ",", " x"])),
    max_size=4))
def test_hosts_of_a_segment_on_ovn_are_the_ones_the_ovn_driver_maps(segment, chassis):
    """ML2/OVN maps a host to the flat/vlan segments whose physnet its chassis's ovn-bridge-mappings name
    (OVNMechanismDriver.update_segment_host_mapping, from ChassisEvent: parse_mappings(split(',')))."""
    from neutron_lib.utils import helpers
    agent_list = [{"host": h, "agent_type": t, "configurations": {
        "chassis_name": h, "bridge-mappings": ",".join(f"{n}:br-{n}" for n in nets) + tail}} for h, t, nets, tail in chassis]
    expected = set()
    for a in agent_list:
        try:
            physnets = set(helpers.parse_mappings(a["configurations"]["bridge-mappings"].split(",")))
        except ValueError:
            continue
        if segment["network_type"] in ("flat", "vlan") and segment["physical_network"] in physnets:
            expected.add(a["host"])
    assert set(hosts_of_segment(segment, agent_list)) == expected
