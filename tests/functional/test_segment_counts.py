"""Routed segments' IPV4_ADDRESS counts: minbw's prediction against Neutron's segments plugin, run for real.

Neutron keeps ``total`` and ``reserved`` by deltas (tests/support/oracle/neutron_segments.py runs its notifier's
handlers with neutron-lib's Placement client against the real embedded Placement). For generated
histories of subnets and ports of every device owner, the count Neutron leaves in Placement is the one
minbw predicts from the final subnets and ports, and minbw's plan then reports nothing. Then the exact
sequences after which Neutron's count is not that: each is reported with its cause, and after a recount
Neutron's next deltas land right.
"""
from __future__ import annotations

import ipaddress
import itertools
import uuid as uuidlib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from neutron_lib import constants as n_const

from minbw.errors import NotFound, ProviderNotFound
from minbw.neutron.segments import IPV4_ADDRESS, routed_segments
from minbw.ops import segments as seg_ops
from minbw.plan.segments import plan_segments
from tests.support.oracle.neutron_segments import NeutronSegments

# every device owner neutron-lib names (its prefixes as the services fill them in), and some of other services
OWNERS = sorted({v for k, v in vars(n_const).items() if k.startswith("DEVICE_OWNER") and isinstance(v, str)}
                | {"compute:nova", "compute:az-2", "baremetal:none", "manila:share", "neutron:LOADBALANCERV2",
                   "Octavia", "trunk:subport"})
NET = "5e9b0b9e-0000-4000-8000-000000000000"


def in_neutrons_order(fixed_ips: list[dict]) -> list[dict]:
    """A port's fixed IPs as Neutron lists them (``models_v2.Port.fixed_ips``: by address, then subnet)."""
    return sorted(fixed_ips, key=lambda ip: (ip["ip_address"], ip["subnet_id"]))


class Network:
    """A routed network's segments, subnets and ports, told to Neutron's notifier as they change."""

    def __init__(self, neutron: NeutronSegments, segments: int = 2):
        self.neutron = neutron
        self.segments = [{"id": str(uuidlib.uuid4()), "network_id": NET, "network_type": "vlan",
                          "physical_network": f"rack{i}", "name": f"rack{i}"} for i in range(segments)]
        self.subnets: dict[str, dict] = {}
        self.ports: dict[str, dict] = {}
        self._cidrs = itertools.count(1)
        self._hosts: dict[str, itertools.count] = {}

    def add_subnet(self, seg: int, *, dhcp=False, gateway=True, pool=20, version=4, segment=True) -> dict:
        n = next(self._cidrs)
        net = ipaddress.ip_network(f"10.{n}.0.0/24" if version == 4 else f"fd00:{n}::/64")
        hosts = net.hosts()
        gw = str(next(hosts))
        start = next(hosts)
        subnet = {"id": str(uuidlib.uuid4()), "network_id": NET, "segment_id": self.segments[seg]["id"] if segment
                  else None, "ip_version": version, "cidr": str(net), "gateway_ip": gw if gateway else None,
                  "enable_dhcp": dhcp, "allocation_pools": [{"start": str(start), "end": str(start + pool - 1)}]}
        self.subnets[subnet["id"]] = subnet
        self._hosts[subnet["id"]] = itertools.count(int(start))
        self.neutron.subnet_created(dict(subnet))
        return subnet

    def subnets_of(self, seg: int, version: int = 4) -> list[dict]:
        return [s for s in self.subnets.values() if s["segment_id"] == self.segments[seg]["id"]
                and s["ip_version"] == version]

    def addresses(self, subnets: list[dict], n: int) -> list[dict]:
        """``n`` new addresses, round robin over ``subnets``, in Neutron's order (by address, then subnet)."""
        picked = itertools.islice(itertools.cycle(subnets), n)
        return in_neutrons_order([{"subnet_id": s["id"], "ip_address": self._next_address(s)} for s in picked])

    def _next_address(self, subnet: dict) -> str:
        return str(ipaddress.ip_address(next(self._hosts[subnet["id"]])))

    def create_port(self, owner: str, fixed_ips: list[dict], deferred: bool = False) -> dict:
        port = {"id": str(uuidlib.uuid4()), "name": None, "network_id": NET, "device_owner": owner,
                "fixed_ips": fixed_ips, "ip_allocation": "deferred" if deferred else "immediate"}
        self.ports[port["id"]] = port
        self.neutron.port_created(dict(port))
        return port

    def update_port(self, port_id: str, **changes) -> dict:
        before = self.ports[port_id]
        after = {**before, **changes}
        self.ports[port_id] = after
        self.neutron.port_updated(dict(before), dict(after))
        return after

    def delete_port(self, port_id: str) -> None:
        self.neutron.port_deleted(dict(self.ports.pop(port_id)))

    def update_subnet(self, subnet_id: str, **changes) -> None:
        before = self.subnets[subnet_id]
        self.subnets[subnet_id] = {**before, **changes}
        self.neutron.subnet_updated(dict(before), dict(self.subnets[subnet_id]))

    def delete_subnet(self, subnet_id: str) -> None:
        self.neutron.subnet_deleted(dict(self.subnets.pop(subnet_id)))

    def predicted(self):
        return routed_segments(self.segments, list(self.subnets.values()), [], None, list(self.ports.values()))

    def counts(self, api) -> dict[str, tuple[int, int] | None]:
        out = {}
        for s in self.segments:
            try:
                inv = api.get_inventories(s["id"])[0].get(IPV4_ADDRESS)
            except (ProviderNotFound, NotFound):
                inv = None
            out[s["id"]] = None if inv is None else (inv["total"], inv["reserved"])
        return out

    def predicted_counts(self) -> dict[str, tuple[int, int] | None]:
        return {s.id: None if s.inventory is None else (s.inventory[IPV4_ADDRESS]["total"],
                                                        s.inventory[IPV4_ADDRESS]["reserved"])
                for s in self.predicted()}

    def plan(self, api, recount=False):
        segs = self.predicted()
        return plan_segments(segs, seg_ops.observe(api, segs), recount=recount)

    def remove(self, api) -> None:
        for s in self.segments:
            try:
                api.delete_provider(s["id"])
            except (ProviderNotFound, NotFound):
                pass


@pytest.fixture
def neutron(placement_server, placement):
    return NeutronSegments(placement_server.url)


@pytest.fixture
def network(neutron, placement):
    """``network(segments=2, neutron=None)``: a Network told to ``neutron``; its providers removed afterwards."""
    made = []

    def make(segments: int = 2, neutron_: NeutronSegments | None = None) -> Network:
        made.append(Network(neutron_ or neutron, segments))
        return made[-1]
    yield make
    for net in made:
        net.remove(placement)


OPS = st.one_of(
    st.tuples(st.just("create"), st.sampled_from(OWNERS), st.integers(0, 1), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("owner"), st.integers(0, 50), st.sampled_from(OWNERS)),
    st.tuples(st.just("ips"), st.integers(0, 50), st.integers(1, 3)),
    st.tuples(st.just("delete"), st.integers(0, 50)),
    st.tuples(st.just("subnet"), st.integers(0, 1), st.booleans()),
    st.tuples(st.just("dhcp"), st.integers(0, 50)),
    st.tuples(st.just("drop_subnet"), st.integers(0, 50)),
)


def run(net: Network, op: tuple) -> None:
    """One change of ``op``'s kind, on what is there (a pick by index modulo; nothing when there is none)."""
    kind, *a = op
    ports = sorted(net.ports)
    v4 = sorted(s["id"] for s in net.subnets.values() if s["ip_version"] == 4)
    if kind == "create":
        owner, seg, n, v6 = a
        ips = net.addresses(net.subnets_of(seg), n)
        if v6 and net.subnets_of(seg, 6):
            ips = in_neutrons_order(ips + net.addresses(net.subnets_of(seg, 6), 1))
        net.create_port(owner, ips)
    elif kind in ("owner", "ips", "delete") and ports:
        pid = ports[a[0] % len(ports)]
        if kind == "owner":
            net.update_port(pid, device_owner=a[1])
        elif kind == "ips":  # new IPv4 addresses on the same segment, the other ones kept
            port = net.ports[pid]
            seg_id = net.subnets[next(ip["subnet_id"] for ip in port["fixed_ips"]
                                      if net.subnets[ip["subnet_id"]]["ip_version"] == 4)]["segment_id"]
            seg = next(i for i, s in enumerate(net.segments) if s["id"] == seg_id)
            keep = [ip for ip in port["fixed_ips"] if net.subnets[ip["subnet_id"]]["ip_version"] == 6]
            net.update_port(pid, fixed_ips=in_neutrons_order(keep + net.addresses(net.subnets_of(seg), a[1])))
        else:
            net.delete_port(pid)
    elif kind == "subnet":
        net.add_subnet(a[0], dhcp=a[1])
    elif kind == "dhcp" and v4:
        sid = v4[a[0] % len(v4)]
        net.update_subnet(sid, enable_dhcp=not net.subnets[sid]["enable_dhcp"])
    elif kind == "drop_subnet" and v4:  # one with no address in use, never a segment's last
        sid = v4[a[0] % len(v4)]
        used = {ip["subnet_id"] for p in net.ports.values() for ip in p["fixed_ips"]}
        seg_id = net.subnets[sid]["segment_id"]
        if sid not in used and sum(s["segment_id"] == seg_id for s in net.subnets.values() if s["ip_version"] == 4) > 1:
            net.delete_subnet(sid)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=12), st.booleans(), st.booleans())
def test_the_count_neutron_keeps_is_the_one_minbw_predicts(neutron, placement, ops, dhcp0, gateway1):
    net = Network(neutron)
    try:
        net.add_subnet(0, dhcp=dhcp0, pool=60)  # room for every address the ops may give (Placement
        net.add_subnet(1, gateway=gateway1, pool=60)  # refuses a reserved above the total)
        net.add_subnet(0, version=6)
        for op in ops:
            run(net, op)
        assert neutron.errors == []
        assert net.counts(placement) == net.predicted_counts()
        plan, _, differences = net.plan(placement)
        assert differences == () and not [op for op in plan.ops if "inventor" in op.action]
    finally:
        net.remove(placement)


def test_every_device_owner_but_compute_and_dhcp_is_counted_per_address(network, neutron, placement):
    net = network(1)
    sub, sub2 = net.add_subnet(0, pool=len(OWNERS)), net.add_subnet(0, pool=len(OWNERS))
    for owner in OWNERS:
        net.create_port(owner, net.addresses([sub, sub2], 2))
    counted = {p.device_owner for p in net.predicted()[0].ports}
    assert counted == {o for o in OWNERS if not o.startswith("compute:") and o != "network:dhcp"}
    # the subnets' gateways, and two per counted port: Neutron's count
    assert net.counts(placement)[net.segments[0]["id"]] == (2 * (len(OWNERS) + 1), 2 + 2 * len(counted))
    assert net.counts(placement) == net.predicted_counts() and neutron.errors == []


def test_a_port_on_two_segments_is_counted_where_its_first_address_is(network, placement):
    net = network()
    s0, s1 = net.add_subnet(0), net.add_subnet(1)
    net.create_port("network:distributed", net.addresses([s0, s1], 2))  # OVN's metadata port may span segments
    assert net.counts(placement) == net.predicted_counts() == {net.segments[0]["id"]: (21, 3),
                                                              net.segments[1]["id"]: (21, 1)}


def _difference(net, api, field="reserved"):
    (only,) = [d for d in net.plan(api).differences if d.field == field]
    return only


def test_an_address_given_when_a_deferred_port_is_bound_is_not_counted_then_a_recount_lets_deltas_land(
        network, neutron, placement):
    net = network()
    s0 = net.add_subnet(0)
    net.add_subnet(1)
    seg0 = net.segments[0]["id"]
    # made without an address (routed network, no host yet), bound by a caller that is not Nova (owner "")
    port = net.create_port("", [], deferred=True)
    net.update_port(port["id"], fixed_ips=net.addresses([s0], 1))
    assert net.counts(placement)[seg0] == (21, 1) and net.predicted_counts()[seg0] == (21, 2)
    diff = _difference(net, placement)
    assert (diff.placement, diff.neutron) == (1, 2)
    assert f"(ip_allocation deferred): {port['id']}" in str(diff)
    assert "which leaves 0, 1 fewer than the subnets reserve" in str(diff)
    # recounted: the port's delete lands on the gateway's reservation again
    plan = net.plan(placement, recount=True).plan
    assert [op.action for op in plan.ops] == ["recount"]
    seg_ops.apply(placement, plan)
    assert net.counts(placement)[seg0] == (21, 2)
    net.delete_port(port["id"])
    assert net.counts(placement) == net.predicted_counts() and neutron.errors == []


def test_a_deferred_port_bound_by_nova_and_released_is_counted(network, neutron, placement):
    net = network()
    s0 = net.add_subnet(0)
    net.add_subnet(1)
    port = net.create_port("", [], deferred=True)
    net.update_port(port["id"], fixed_ips=net.addresses([s0], 1), device_owner="compute:nova")
    net.update_port(port["id"], device_owner="")  # the server is gone, the port stays
    assert net.counts(placement) == net.predicted_counts()
    net.delete_port(port["id"])
    assert net.counts(placement) == net.predicted_counts() and neutron.errors == []


def test_a_port_whose_address_moves_to_another_segment_stays_booked_on_the_first(network, placement):
    net = network()
    s0, s1 = net.add_subnet(0), net.add_subnet(1)
    port = net.create_port("", net.addresses([s0], 1))
    net.update_port(port["id"], fixed_ips=net.addresses([s1], 1))
    seg0, seg1 = (s["id"] for s in net.segments)
    assert net.counts(placement) == {seg0: (21, 2), seg1: (21, 1)}
    assert net.predicted_counts() == {seg0: (21, 1), seg1: (21, 2)}
    diffs = {d.segment: d for d in net.plan(placement).differences}
    assert "moved to a subnet of another segment" in str(diffs[seg0])
    assert "1 addresses stay reserved that no port holds" in str(diffs[seg0])


def test_ports_made_before_their_subnet_joined_the_segment_are_not_counted(network, placement):
    net = network(1)
    sub = net.add_subnet(0, segment=False)  # a plain network's subnet: no provider
    net.create_port("network:router_interface", net.addresses([sub], 1))
    net.update_subnet(sub["id"], segment_id=net.segments[0]["id"])  # migrated to a routed network
    seg = net.segments[0]["id"]
    assert net.counts(placement)[seg] == (21, 1) and net.predicted_counts()[seg] == (21, 2)
    assert "before its subnet was put on the segment" in str(_difference(net, placement))


def test_an_absolute_write_of_the_subnets_count_makes_neutrons_deletes_go_below_zero(network, neutron, placement):
    """The issue's sequence at the level of Neutron's code: three plain ports and a router interface, the
    count then written as the subnets' alone (what minbw's sync used to do), two ports deleted."""
    net = network()
    s0 = net.add_subnet(0)
    net.add_subnet(1)
    seg0 = net.segments[0]["id"]
    plain = [net.create_port("", net.addresses([s0], 1)) for _ in range(3)]
    net.create_port("network:router_interface", net.addresses([s0], 1))
    assert net.counts(placement)[seg0] == (21, 5) == net.predicted_counts()[seg0]
    assert net.plan(placement).differences == ()
    inv, gen = placement.get_inventories(seg0)
    placement.set_inventories(seg0, {IPV4_ADDRESS: {**inv[IPV4_ADDRESS], "reserved": 1}}, gen)
    assert "which leaves -3, 4 fewer than the subnets reserve (Placement refuses a count below 0" in str(
        _difference(net, placement))
    net.delete_port(plain[0]["id"])
    net.delete_port(plain[1]["id"])
    assert net.counts(placement)[seg0] == (21, 0)  # the second -1 refused: two ports hold addresses
    assert len(neutron.errors) == 1 and "minimum of 0" in str(neutron.errors[0])
    seg_ops.apply(placement, net.plan(placement, recount=True).plan)
    assert net.counts(placement)[seg0] == (21, 3) == net.predicted_counts()[seg0]
    net.delete_port(plain[2]["id"])
    assert net.counts(placement)[seg0] == (21, 2) == net.predicted_counts()[seg0]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_refused_delta_ends_neutrons_batch_and_the_events_after_it_are_lost(network, placement_server, placement):
    neutron = NeutronSegments(placement_server.url, batch_interval=1.0)  # Neutron's own BatchNotifier
    net = network(1, neutron)
    s0 = net.add_subnet(0)
    neutron.drain()
    seg = net.segments[0]["id"]
    a, b = (net.create_port("", net.addresses([s0], 1)) for _ in range(2))
    neutron.drain()
    inv, gen = placement.get_inventories(seg)
    placement.set_inventories(seg, {IPV4_ADDRESS: {**inv[IPV4_ADDRESS], "reserved": 1}}, gen)  # 3 -> 1
    net.delete_port(a["id"])   # 1 -> 0
    net.delete_port(b["id"])   # refused: 0 - 1
    net.create_port("network:router_interface", net.addresses([s0], 1))  # +1, in the same batch: lost
    neutron.drain()
    assert [type(e).__name__ for e in neutron.errors] == ["PlacementClientError"]
    assert net.counts(placement)[seg] == (21, 0) and net.predicted_counts()[seg] == (21, 2)


def test_neutrons_read_modify_write_overwrites_a_write_made_between_its_read_and_its_write(network, neutron,
                                                                                           placement):
    net = network(1)
    s0 = net.add_subnet(0)
    seg = net.segments[0]["id"]
    client = neutron.notifier.p_client
    read = client.get_inventory

    def read_then_another_writer(rp, rc):
        got = read(rp, rc)
        inv, gen = placement.get_inventories(rp)
        placement.set_inventories(rp, {IPV4_ADDRESS: {**inv[IPV4_ADDRESS], "reserved": 7}}, gen)
        return got

    client.get_inventory = read_then_another_writer
    net.create_port("", net.addresses([s0], 1))
    client.get_inventory = read
    # Neutron wrote what it read (1) plus its delta, at the generation it asked for just before: 7 is gone
    assert net.counts(placement)[seg] == (21, 2) and neutron.errors == []
