"""Routed networks: minbw.neutron.segments against Neutron's own segments plugin and ML2 mechanism drivers,
and the segment planner's tables."""
import ipaddress
import warnings

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from minbw.errors import NoValidHost
from minbw.model.providers import Provider
from minbw.neutron.segments import (IPV4_ADDRESS, hosts_of_segment, ipv4_inventory, port_member_of,
                                    routed_segments, subnet_total_reserved, host_not_in_segments)
from minbw.placement.query import build_query
from minbw.model.requests import ServerRequest
from minbw.plan.segments import ObservedSegments, plan_segments

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
    plan, warnings_ = plan_segments(_routed(), ObservedSegments({}, {}, {}, {"devstack0": _rp(ROOT0, "devstack0")}))
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
    plan, warnings_ = plan_segments(segs, observed)
    assert plan.ops == () and warnings_ == []
    # a root that left the aggregate joins Neutron's (Nova's) aggregate again; its other aggregates stay
    observed = ObservedSegments(observed.providers, inv, {**observed.aggregates, ROOT1: frozenset({"other"})},
                                observed.roots)
    plan, _ = plan_segments(segs, observed)
    assert [op.to_dict() for op in plan.ops] == [{"action": "add_root_to_aggregate", "uuid": ROOT1,
                                                  "name": "devstack1", "aggregates": [AGG1], "host": "devstack1"}]
