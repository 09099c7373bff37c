"""minbw.reports.enforcement: the verdicts as a table, and the units against upstream's own code (the SR-IOV
agent's set_device_rate, run by tests/support/oracle/neutron_sriov_qos.py; ML2/OVN 29.0.0's _ovn_lsp_rule;
neutron-lib's SI_BASE, which ovs_lib._update_queue multiplies by)."""
from __future__ import annotations

import warnings

import pytest
from neutron_lib import constants

from minbw.dataplane import netlink, ovn, ovs
from minbw.neutron.qos import QosRule
from minbw.reports import enforcement as e
from tests.support.oracle import neutron_sriov_qos

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from neutron.plugins.ml2.drivers.ovn.mech_driver.ovsdb.extensions.qos import OVNClientQosExtension

KBPS = (0, 1, 11, 12, 999, 1000, 1001, 1499, 1500, 2499, 2500, 4321, 999_999, 1_000_000, 2_147_484, 40_000_000)


@pytest.mark.parametrize("kbps", KBPS)
def test_the_units_are_upstreams(kbps):
    assert e.programmed_rate(e.SRIOV, kbps) == neutron_sriov_qos.min_tx_rate_mbps(kbps)
    assert e.programmed_rate(e.OVS, kbps) == kbps * constants.SI_BASE
    ovn = OVNClientQosExtension._ovn_lsp_rule({"minimum_bandwidth": {"min_kbps": kbps}})["qos_min_rate"]
    assert e.programmed_rate(e.OVN, kbps) == int(ovn)


def test_the_htb_class_rate_is_at_least_one_mtu():
    # seen on ovs-vswitchd 3.1.0: 4321 kbps -> class rate 4321000 bit/s; queue 0 at 12000 (tests/functional)
    assert [e.htb_rate(e.programmed_rate(e.OVS, k)) for k in (4321, 12, 11, 1)] == [4_321_000, 12_000, 12_000, 12_000]
    assert e.htb_rate(12_000, mtu=9000) == 72_000


PHYS = "physnet0"
ROWS = [
    # rule, programmed, verdict, factor, why (a part of it)
    (e.Rule("p1", e.OVS, 1000, physical_network=PHYS), 1_000_000, e.ENFORCED, None, ""),
    (e.Rule("p1", e.OVS, 1000, physical_network=PHYS), None, e.MISSING, None, "1000 kbps asked, nothing programmed"),
    (e.Rule("p1", e.OVS, 1000, physical_network=PHYS), 2_000_000, e.WRONG_RATE, 2.0, "2000000 bit/s programmed"),
    (e.Rule("p1", e.OVN, 1000, physical_network=PHYS), 1_000_000, e.ENFORCED, None, ""),
    (e.Rule("p1", e.OVN, 1000, physical_network=PHYS), 1000, e.WRONG_RATE, 0.001,
     "the kbps number, 1,000 times too little: ML2/OVN wrote kbps where OVN reads bit/s, Neutron 21.0.0 to 25.x "
     "(fixed in 26.0.0)"),
    (e.Rule("p1", e.OVN, 1000, physical_network=PHYS), 500_000, e.WRONG_RATE, 0.5, "1000000 bit/s expected"),
    (e.Rule("p1", e.SRIOV, 1500, vnic_type="direct"), 2, e.ENFORCED, None, ""),
    (e.Rule("p1", e.SRIOV, 1500, vnic_type="direct"), 1, e.WRONG_RATE, 0.5, "2 Mbps expected"),
    (e.Rule("p1", e.OVS, 1000, direction="ingress", physical_network=PHYS), None, e.PLACEMENT_ONLY, None,
     "egress minimums only"),
    (e.Rule("p1", e.OVN, 1000, direction="ingress", physical_network=PHYS), None, e.PLACEMENT_ONLY, None,
     "ML2/OVN enforces egress"),
    (e.Rule("p1", e.OVS, 1000), None, e.PLACEMENT_ONLY, None, "flat and VLAN networks only"),
    (e.Rule("p1", e.OVS, 100, packet_rate=True, physical_network=PHYS), None, e.PLACEMENT_ONLY, None,
     "minimum packet rate"),
    (e.Rule("p1", e.SRIOV, 1000, vnic_type="direct-physical"), None, e.PLACEMENT_ONLY, None, "direct-physical"),
    (e.Rule("p1", e.SRIOV, 3000, direction="ingress", vnic_type="direct"), 3, e.PLACEMENT_ONLY, None,
     "transmit minimum"),
]


@pytest.mark.parametrize("rule, programmed, verdict, factor, why", ROWS)
def test_verdicts(rule, programmed, verdict, factor, why):
    v = e.verdict(rule, programmed)
    assert (v.verdict, v.factor) == (verdict, factor)
    assert why in v.why


def test_a_nic_whose_inventory_or_guarantees_exceed_its_link():
    assert e.nic_check("eth1", 10_000, 10_000_000, 4_000_000).errors == ()
    check = e.nic_check("eth1", 10_000, 25_000_000, 12_000_000)
    assert check.errors == ("Placement's inventory (25000000 kbps) is above the link's speed (10000000 kbps)",
                            "the minimums programmed (12000000 kbps) are above the link's speed (10000000 kbps)")
    assert e.nic_check("tap0", None, 25_000_000, 0).errors == ()  # no speed reported: nothing to say


# ------------------------------------------------------------------ one host, side by side: the join as a table

A, B = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
GONE = "dddddddd-dddd-4ddd-8ddd-dddddddddddd"
SERVER, RP, AGENT_RP = "5e5e5e5e-0000-4000-8000-000000000001", "f9c9ce07-679d-5d72-ac5f-31720811629a", "a6e7"
QOS1, QOS2 = "11111111-0000-4000-8000-000000000001", "22222222-0000-4000-8000-000000000002"
EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"


def queue(port: str, min_rate: int, num: int, uuid: str | None = None) -> ovs.Queue:
    return ovs.Queue(uuid or f"q-{port[:4]}", {"min-rate": str(min_rate), "max-rate": "34359738367"},
                     {"port": port, "type": "minimum_bandwidth", "queue-num": str(num)})


def qos(uuid: str, queues: dict, ports=("t0",)) -> ovs.QoS:
    return ovs.QoS(uuid, "linux-htb", {}, {"id": uuid, "_type": "minimum_bandwidth"}, queues, tuple(ports))


def switch(attached: ovs.QoS | None, *others: ovs.QoS, plugged=((A, 5), (B, 6))) -> ovs.Switch:
    """br-int with the VMs' ports, br-phy with the NIC t0 (its qos: ``attached``) and its patch port."""
    vms = tuple(ovs.Port(f"vm-{p[:4]}", (ovs.Interface(f"vm-{p[:4]}", "internal", n, {"iface-id": p}),), None, {})
                for p, n in plugged)
    nic = ovs.Port("t0", (ovs.Interface("t0", "", 1, {}),), attached, {})
    patch = ovs.Port("phy-br-int", (ovs.Interface("phy-br-int", "patch", 2, {}),), None, {})
    rows = [q for q in (attached, *others) if q is not None]
    queues = {v.uuid: v for q in rows for v in q.queues.values()}
    bridges = (ovs.Bridge("br-int", "netdev", vms), ovs.Bridge("br-phy", "netdev", (nic, patch)))
    return ovs.Switch("unix:db.sock", bridges, tuple(rows), tuple(queues.values()))


def tc(*classes: tuple[str, int]) -> netlink.LinkTc:
    return netlink.LinkTc("t0", (netlink.Qdisc("1:", "root", "htb"),),
                          tuple(netlink.HtbClass(c, "1:fffe", r, 34_359_738_360) for c, r in classes))


def port(pid=A, rules=(("minimum_bandwidth", "egress", 1000),), physnet=PHYS, allocation=True, server=SERVER):
    return e.BoundPort(pid, server, "normal", physnet,
                       tuple(QosRule(f"r{i}", t, d, v) for i, (t, d, v) in enumerate(rules)), "pol", "network",
                       allocation={"g": RP} if allocation else {})


def host(ports, sw, kernel=tc(("1:1", 12_000), ("1:6", 1_000_000)), held=None, speed=10_000,
         inventory=(10_000_000, 10_000_000)):
    provider = e.BridgeProvider(RP, "devstack0:Open vSwitch agent:br-phy",
                                {EGR: {"total": inventory[0]}, IGR: {"total": inventory[1]}})
    plane = e.OvsPlane(sw, {PHYS: "br-phy"}, {"t0": kernel} if kernel else {}, {"t0": speed}, {"br-phy": provider})
    held = {SERVER: {RP: {EGR: 1000}}} if held is None else held
    return e.ovs_host("devstack0", ports, held, plane, {AGENT_RP: "devstack0:Open vSwitch agent"})


ENFORCED_A = qos(QOS1, {5: queue(A, 1_000_000, 5)})
DETACHED = qos(QOS1, {5: queue(A, 1_000_000, 5)}, ports=())
HOSTS = [
    # ports, switch, kernel, verdicts (subject, verdict, factor), a part of the first check's why
    pytest.param([port()], switch(ENFORCED_A), tc(("1:1", 12_000), ("1:6", 1_000_000)),
                 [(A, e.ENFORCED, None)], "", id="enforced"),
    pytest.param([port()], switch(qos(QOS1, {5: queue(A, 2_000_000, 5)})), tc(("1:6", 2_000_000)),
                 [(A, e.WRONG_RATE, 2.0)], "1000000 bit/s expected, 2000000 bit/s programmed (queue on t0)",
                 id="wrong min-rate"),
    pytest.param([port()], switch(None), tc(), [(A, e.MISSING, None)],
                 "t0 has no QoS row (its port's qos column is empty); no Queue row names it", id="no QoS on the NIC"),
    pytest.param([port()], switch(qos(QOS1, {})), tc(), [(A, e.MISSING, None)],
                 f"the QoS row on t0 ({QOS1}) has no queue for it; no Queue row names it", id="queue destroyed"),
    pytest.param([port()], switch(None, DETACHED), tc(), [(A, e.MISSING, None), (QOS1, e.ORPHAN, None)],
                 f"its Queue row q-aaaa (min-rate 1000000) is in {QOS1} on no port", id="QoS detached"),
    pytest.param([port()], switch(ENFORCED_A), tc(("1:1", 12_000)), [(A, e.MISSING, None)],
                 "queue 5 is in OVSDB, but t0 has no HTB class 1:6: ovs-vswitchd has not applied it",
                 id="not in the kernel"),
    pytest.param([port()], switch(ENFORCED_A), tc(("1:6", 500_000)), [(A, e.WRONG_RATE, 0.5)],
                 "the kernel's HTB class 1:6 on t0 has 500000 bit/s, 1000000 bit/s expected", id="kernel rate"),
    pytest.param([port()], switch(ENFORCED_A), None, [(A, e.ENFORCED, None)], "", id="kernel not read"),
    pytest.param([port(rules=(("minimum_bandwidth", "ingress", 1000), ("minimum_packet_rate", "any", 100)))],
                 switch(None), tc(), [(A, e.PLACEMENT_ONLY, None), (A, e.PLACEMENT_ONLY, None)],
                 "egress minimums only", id="ingress and packet rate"),
    pytest.param([port(physnet=None)], switch(None), tc(), [(A, e.PLACEMENT_ONLY, None)],
                 "flat and VLAN networks only", id="tunnelled"),
    pytest.param([port(physnet="physnet9")], switch(None), tc(), [(A, e.MISSING, None)],
                 "the agent on devstack0 maps no bridge to physical network physnet9 (bridge_mappings: "
                 "physnet0:br-phy)", id="physnet without a bridge"),
    pytest.param([port()], switch(qos(QOS2, {5: queue(A, 1_000_000, 5), 7: queue(GONE, 2_000_000, 7)}), DETACHED),
                 tc(("1:6", 1_000_000), ("1:8", 2_000_000)),
                 [(A, e.ENFORCED, None), (GONE, e.ORPHAN, None), (QOS1, e.ORPHAN, None)], "",
                 id="restart and deleted port"),
    pytest.param([port(rules=(("minimum_bandwidth", "ingress", 1000),))], switch(ENFORCED_A), tc(("1:6", 1_000_000)),
                 [(A, e.PLACEMENT_ONLY, None), (A, e.ORPHAN, None)], "egress minimums only",
                 id="queue for a port with no egress minimum"),
]


@pytest.mark.parametrize("ports, sw, kernel, verdicts, why", HOSTS)
def test_a_hosts_rules_side_by_side(ports, sw, kernel, verdicts, why):
    report = host(ports, sw, kernel)
    assert [(c.subject, c.verdict, c.factor) for c in report.checks] == verdicts
    assert why in report.checks[0].why
    assert report.ok == all(v not in e.FINDINGS for _, v, _ in verdicts)


def test_an_enforced_rule_shows_each_side():
    (check,) = host([port()], switch(ENFORCED_A)).checks
    assert check.to_dict() == {
        "kind": "rule", "subject": A, "backend": e.OVS, "verdict": e.ENFORCED, "why": "", "factor": None,
        "server": SERVER,
        "rule": {"type": "minimum_bandwidth", "direction": "egress", "value": 1000, "unit": "kbps",
                 "expected": 1_000_000, "expected_unit": "bit/s", "policy": "pol", "policy_of": "network"},
        "reserved": {"provider": RP, "name": "devstack0:Open vSwitch agent:br-phy", "class": EGR, "amount": 1000,
                     "shared_by": []},
        "programmed": ({"nic": "t0", "qos": QOS1, "queue": 5, "queue_uuid": "q-aaaa", "min_rate": 1_000_000},),
        "kernel": ({"nic": "t0", "class": "1:6", "rate": 1_000_000},), "notes": ()}


def test_orphans_say_where_they_come_from():
    report = host([port()], switch(qos(QOS2, {5: queue(A, 1_000_000, 5), 7: queue(GONE, 2_000_000, 7)}), DETACHED),
                  tc(("1:6", 1_000_000), ("1:8", 2_000_000)))
    gone, left = report.checks[1:]
    assert gone.why == f"port {GONE} is not bound to devstack0 (deleted, or moved away) and its queue stayed; it " \
                       f"reaches t0"
    assert (gone.programmed[0]["min_rate"], gone.kernel) == (2_000_000, ({"nic": "t0", "class": "1:8",
                                                                          "rate": 2_000_000},))
    assert (left.kind, left.subject) == ("qos", QOS1)
    assert left.why.startswith(f"a minimum bandwidth QoS row on no port (queues: 5={A}): left by an earlier agent run")
    assert report.counts() == {e.ENFORCED: 1, e.MISSING: 0, e.WRONG_RATE: 0, e.PLACEMENT_ONLY: 0, e.ORPHAN: 2}


def test_placements_side_notes_what_it_does_not_hold():
    shared = [port(), port(B, server=SERVER)]
    report = host(shared, switch(qos(QOS1, {5: queue(A, 1_000_000, 5), 6: queue(B, 1_000_000, 6, "q-b")})),
                  tc(("1:6", 1_000_000), ("1:7", 1_000_000)), held={SERVER: {RP: {EGR: 2000}}})
    assert [(c.verdict, c.reserved["amount"], c.reserved["shared_by"], c.notes) for c in report.checks] == [
        (e.ENFORCED, 2000, [B], ()), (e.ENFORCED, 2000, [A], ())]
    (check,) = host([port(allocation=False)], switch(ENFORCED_A)).checks
    assert check.reserved is None and "no binding:profile.allocation" in check.notes[0]
    (check,) = host([port()], switch(ENFORCED_A), held={SERVER: {RP: {EGR: 500}}}).checks
    assert check.notes == (f"Placement holds 500 kbps of {EGR} for it, 1000 asked (minbw audit)",)
    (check,) = host([port()], switch(ENFORCED_A), held={}).checks
    assert check.reserved is None and check.notes == (
        f"its server {SERVER} holds no {EGR} on the provider(s) of its binding:profile.allocation "
        f"(devstack0:Open vSwitch agent:br-phy): minbw audit",)


def test_a_queue_not_at_the_ports_ofport_is_noted():
    (check,) = host([port()], switch(ENFORCED_A, plugged=((A, 9),))).checks
    assert check.notes == ("queue 5 on t0, but the port's ofport on br-int is 9: the agent's flows pick queue 9",)
    (check,) = host([port()], switch(ENFORCED_A, plugged=())).checks
    assert check.notes == ("the port is not plugged on br-int (no interface with external_ids:iface-id = the port)",)


def test_each_nic_against_its_link():
    report = host([port()], switch(ENFORCED_A), inventory=(25_000_000, 10_000_000))
    (nic,) = report.nics
    assert (nic.nic, nic.bridge, nic.speed_kbps, nic.inventory_kbps, nic.enforced_kbps, nic.provider) == (
        "t0", "br-phy", 10_000_000, 25_000_000, 1000, "devstack0:Open vSwitch agent:br-phy")
    assert nic.errors == ("Placement's inventory (25000000 kbps) is above the link's speed (10000000 kbps)",)
    assert not report.ok and not report.findings
    (nic,) = host([port()], switch(ENFORCED_A), inventory=(1500, 20_000_000)).nics
    assert nic.errors == ("Placement's ingress inventory (20000000 kbps) is above the link's speed (10000000 kbps)",)


# ------------------------------------------------------------------ one host of ML2/OVN

OVN_RP = "0c0de0e5-0000-5000-8000-000000000001"


def lsp(name: str, options: dict) -> ovn.LogicalSwitchPort:
    return ovn.LogicalSwitchPort(name, None, "", options, {})


def neutron29(kbps: int) -> dict:
    """The options Neutron 29 writes for an egress minimum of ``kbps`` (its own ``_ovn_lsp_rule``)."""
    rule = OVNClientQosExtension._ovn_lsp_rule({"minimum_bandwidth": {"min_kbps": kbps}})
    return {k: v for k, v in rule.items() if v is not None}


def chassis(egress: str | None = "true", plugged=((A, 5), (B, 6))) -> ovs.Switch:
    """An ML2/OVN compute's Open vSwitch database: br-int with the VMs' ports, br-test with its NIC eth1 (marked
    ``ovn-egress-iface`` with ``egress``, None: not marked)."""
    vms = tuple(ovs.Port(f"tap{p[:4]}", (ovs.Interface(f"tap{p[:4]}", "", n, {"iface-id": p}),), None, {})
                for p, n in plugged)
    nic = ovs.Port("eth1", (ovs.Interface("eth1", "", 1, {} if egress is None else {"ovn-egress-iface": egress}),),
                   None, {})
    return ovs.Switch("unix:db.sock", (ovs.Bridge("br-int", "netdev", vms), ovs.Bridge("br-test", "netdev", (nic,))),
                      (), (), {"ovn-bridge-mappings": f"{PHYS}:br-test"})


def ovn_host(ports, rows, sw=None, bound=None, inventory=(1500, 1500), kernel=None, queues=None):
    """``kernel``: eth1's tc as read (None: not read, --no-kernel); ``queues``: port -> southbound qdisc_queue_id."""
    provider = e.BridgeProvider(OVN_RP, "devstack0:OVN Controller agent:br-test",
                                {rc: {"total": n} for rc, n in zip((EGR, IGR), inventory) if n is not None})
    plane = e.OvnPlane(sw or chassis(), ovn.Northbound("tcp:127.0.0.1:6641", tuple(rows)), {PHYS: "br-test"},
                       {"eth1": 10_000}, {"br-test": provider}, kernel={"eth1": kernel} if kernel else {},
                       queues=queues or {})
    held = {SERVER: {OVN_RP: {EGR: 1000}}}
    ports = [e.BoundPort(**{**p.__dict__, "allocation": {"g": OVN_RP}}) for p in ports]
    return e.ovn_host("devstack0", ports, held, plane, bound=bound)


OVN_HOSTS = [
    # ports, LSP rows, switch, verdicts, a part of the first check's why
    pytest.param([port()], [lsp(A, neutron29(1000))], None, [(A, e.ENFORCED, None)], "", id="neutron 29"),
    pytest.param([port()], [lsp(A, {"qos_min_rate": "1000"})], None, [(A, e.WRONG_RATE, 0.001)], e.OVN_KBPS_BUG,
                 id="neutron 21.0.0-25.x"),
    pytest.param([port()], [lsp(A, {"qos_min_rate": "2000000"})], None, [(A, e.WRONG_RATE, 2.0)],
                 "1000000 bit/s expected, 2000000 bit/s programmed", id="another rate"),
    pytest.param([port()], [lsp(A, {})], None, [(A, e.MISSING, None)],
                 "1000 kbps asked: its Logical_Switch_Port has no options:qos_min_rate", id="no option"),
    pytest.param([port()], [], None, [(A, e.MISSING, None)],
                 "the northbound database has no Logical_Switch_Port for the port", id="no LSP"),
    pytest.param([port()], [lsp(A, neutron29(1000))], chassis(egress=None), [(A, e.MISSING, None)],
                 "its Logical_Switch_Port asks 1000000 bit/s, but no interface of br-test is marked "
                 "external_ids:ovn-egress-iface=true: ovn-controller shapes no NIC for it", id="no egress NIC"),
    pytest.param([port()], [lsp(A, neutron29(1000))], chassis(egress="TRUE"), [(A, e.ENFORCED, None)], "",
                 id="smap_get_bool's true"),
    pytest.param([port(physnet="physnet9")], [lsp(A, neutron29(1000))], None, [(A, e.MISSING, None)],
                 "the chassis maps no bridge to physical network physnet9 (ovn-bridge-mappings: physnet0:br-test)",
                 id="physnet without a bridge"),
    pytest.param([port(rules=(("minimum_bandwidth", "ingress", 1000), ("minimum_packet_rate", "any", 100)))], [],
                 None, [(A, e.PLACEMENT_ONLY, None), (A, e.PLACEMENT_ONLY, None)], "ML2/OVN enforces egress minimums "
                 "only", id="ingress and packet rate"),
    pytest.param([port(physnet=None)], [], None, [(A, e.PLACEMENT_ONLY, None)], "flat and VLAN networks only",
                 id="tunnelled"),
    pytest.param([port(rules=(("minimum_bandwidth", "ingress", 1000),))], [lsp(A, neutron29(1000))], None,
                 [(A, e.PLACEMENT_ONLY, None), (A, e.ORPHAN, None)], "egress minimums only",
                 id="qos_min_rate left on a port with no egress minimum"),
]


@pytest.mark.parametrize("ports, rows, sw, verdicts, why", OVN_HOSTS)
def test_an_ovn_hosts_rules_side_by_side(ports, rows, sw, verdicts, why):
    report = ovn_host(ports, rows, sw)
    assert report.backend == e.OVN
    assert [(c.subject, c.verdict, c.factor) for c in report.checks] == verdicts
    assert why in report.checks[0].why
    assert report.ok == all(v not in e.FINDINGS for _, v, _ in verdicts)


def test_an_enforced_ovn_rule_shows_each_side():
    report = ovn_host([port()], [lsp(A, neutron29(1000))])
    (check,) = report.checks
    assert check.to_dict() == {
        "kind": "rule", "subject": A, "backend": e.OVN, "verdict": e.ENFORCED, "why": "", "factor": None,
        "server": SERVER,
        "rule": {"type": "minimum_bandwidth", "direction": "egress", "value": 1000, "unit": "kbps",
                 "expected": 1_000_000, "expected_unit": "bit/s", "policy": "pol", "policy_of": "network"},
        "reserved": {"provider": OVN_RP, "name": "devstack0:OVN Controller agent:br-test", "class": EGR,
                     "amount": 1000, "shared_by": []},
        "programmed": ({"lsp": A, "qos_min_rate": 1_000_000, "qos_max_rate": None, "qos_burst": None},),
        "kernel": (), "notes": ()}
    assert [n.to_dict() for n in report.nics] == [{
        "nic": "eth1", "speed_kbps": 10_000_000, "inventory_kbps": 1500, "enforced_kbps": 1000, "errors": (),
        "bridge": "br-test", "provider": "devstack0:OVN Controller agent:br-test", "ingress_inventory_kbps": 1500,
        "physical_network": None}]
    assert report.to_dict()["backend"] == "ovn"


# the port's queue is 1 (qdisc_queue_id), so its class is 1:2; htb_rate(1,000,000 bit/s) is the class's rate
OVN_KERNEL = [
    # eth1's classes, the ports' queues, switch; the verdict, its factor and a part of its why; the kernel column
    pytest.param(tc(("1:2", 1_000_000)), {A: 1}, None, e.ENFORCED, None, "",
                 ({"nic": "eth1", "class": "1:2", "rate": 1_000_000},), id="the class at the rate asked"),
    pytest.param(tc(), {A: 1}, None, e.MISSING, None,
                 "its Logical_Switch_Port asks 1000000 bit/s and its queue is 1 (qdisc_queue_id), but eth1 has no "
                 "HTB class 1:2: " + e.OVN_RECOMPUTE_BUG, ({"nic": "eth1", "class": "1:2", "rate": None},),
                 id="the class gone after a full recompute"),
    pytest.param(tc(("1:2", 1_000_000)), {A: 16}, None, e.MISSING, None, "no HTB class 1:11",
                 ({"nic": "eth1", "class": "1:11", "rate": None},), id="another queue's class (tc's hexadecimal)"),
    pytest.param(tc(("1:2", 12_000)), {A: 1}, None, e.WRONG_RATE, 0.012,
                 "the kernel's HTB class 1:2 on eth1 has 12000 bit/s, 1000000 bit/s expected",
                 ({"nic": "eth1", "class": "1:2", "rate": 12_000},), id="the class at another rate"),
    pytest.param(tc(("1:2", 1_000_000)), {}, None, e.MISSING, None,
                 "its southbound Port_Binding has no options:qdisc_queue_id: northd has given it no queue", (),
                 id="no queue"),
    pytest.param(tc(), {}, chassis(plugged=()), e.MISSING, None,
                 "no options:qdisc_queue_id: ovn-controller has not bound the port (not plugged)", (), id="not plugged"),
    pytest.param(tc(), {A: 1}, chassis(plugged=()), e.MISSING, None,
                 "no HTB class 1:2: ovn-controller has not bound the port (not plugged), so no NIC shapes it",
                 ({"nic": "eth1", "class": "1:2", "rate": None},), id="a queue but not plugged"),
    pytest.param(None, {A: 1}, None, e.ENFORCED, None, "", (), id="the kernel not read (--no-kernel)"),
]


@pytest.mark.parametrize("kernel, queues, sw, verdict, factor, why, classes", OVN_KERNEL)
def test_an_ovn_rule_against_the_kernels_class(kernel, queues, sw, verdict, factor, why, classes):
    report = ovn_host([port()], [lsp(A, neutron29(1000))], sw, kernel=kernel, queues=queues)
    (check,) = report.checks
    assert (check.verdict, check.factor, check.kernel) == (verdict, factor, classes)
    assert why in check.why
    assert report.nics[0].enforced_kbps == (1000 if verdict == e.ENFORCED else 0)


def test_the_kbps_of_neutron_before_26_shows_its_class_beside_it():
    (check,) = ovn_host([port()], [lsp(A, {"qos_min_rate": "1000"})], kernel=tc(("1:2", e.htb_rate(1000))),
                        queues={A: 1}).checks
    assert (check.verdict, check.why, check.kernel) == (
        e.WRONG_RATE, e.OVN_KBPS_BUG, ({"nic": "eth1", "class": "1:2", "rate": 12_000},))


def test_ovn_notes_what_ovn_controller_needs():
    (check,) = ovn_host([port()], [lsp(A, neutron29(1000))], chassis(plugged=())).checks
    assert check.notes == ("the port is not plugged on br-int (no interface with external_ids:iface-id = the port)",)
    big = 2_147_484  # kbps: the first whose bit/s OVN < 23.06 reads as 0
    (check,) = ovn_host([port(rules=(("minimum_bandwidth", "egress", big),))], [lsp(A, neutron29(big))]).checks
    assert check.verdict == e.ENFORCED and check.notes[-1] == (
        "OVN before 23.06 reads a qos_min_rate above 2147483647 bit/s as 0 (no queue): an ovn-controller older than "
        "23.06 does not enforce it")
    assert not [n for n in ovn_host([port(rules=(("minimum_bandwidth", "egress", big - 1),))],
                                    [lsp(A, neutron29(big - 1))]).checks[0].notes if "23.06" in n]


def test_ovn_orphans_and_bridges_without_an_egress_nic():
    # B is bound with no minimum rule (its policy changed), its LSP keeps a qos_min_rate
    report = ovn_host([port()], [lsp(A, neutron29(1000)), lsp(B, neutron29(500))], bound=[A, B])
    assert [(c.kind, c.subject, c.verdict) for c in report.checks] == [("rule", A, e.ENFORCED), ("lsp", B, e.ORPHAN)]
    assert report.checks[1].why == ("its Logical_Switch_Port holds options:qos_min_rate 500000 bit/s, but the port has "
                                    "no egress minimum ML2/OVN writes (on a flat or VLAN network): ovn-controller "
                                    "gives it a queue no rule asks for")
    report = ovn_host([port()], [lsp(A, neutron29(1000))], chassis(egress=None))
    assert [(n.nic, n.bridge, n.inventory_kbps, n.errors) for n in report.nics] == [(None, "br-test", 1500, (
        "no interface of br-test is marked external_ids:ovn-egress-iface=true: Placement admits 1500 kbps egress "
        "there, which ovn-controller enforces on no NIC",))]
    assert ovn_host([], [], chassis(egress=None), inventory=(None, 1500)).nics == ()  # no egress admitted: nothing
