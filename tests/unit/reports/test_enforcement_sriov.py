"""The SR-IOV agent's host, whole (minbw.reports.enforcement.sriov_host): the ports bound there with their rules and
VFs, Placement's allocations, and the PFs' VFs as netlink gives them (messages built and decoded by pyroute2's own
``ifinfmsg``, read by minbw.dataplane.netlink's parser: no VF can be made on these machines) holding what the SR-IOV
agent writes, computed by the agent's own code (neutron 29.0.0, tests/support/oracle/neutron_sriov_qos.py): its
rounding to whole Mbps, an ingress minimum written over the egress one, direct-physical ports left alone."""
from __future__ import annotations

from minbw.dataplane import netlink
from minbw.neutron.qos import QosRule
from minbw.reports import enforcement as e
from tests.support.dataplane.netlink_messages import pf, vf
from tests.support.oracle import neutron_sriov_qos as agent

HOST = "compute1"
ENS5, ENS6 = "ens5", "ens6"
RP5, RP6 = "5a5a5a5a-0000-5000-8000-000000000005", "6a6a6a6a-0000-5000-8000-000000000006"
EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
SERVER = "5e5e5e5e-0000-4000-8000-000000000001"
P = {name: f"{n:08x}-0000-4000-8000-{n:012x}" for n, name in enumerate("ABCDEFG", 10)}
SLOTS = {ENS5: {f"0000:05:00.{i + 1}": i for i in range(6)}, ENS6: {"0000:06:00.1": 0}}


def bound(name: str, rules, slot: str | None, vnic_type: str = "direct", physnet: str = "physnet0"):
    return e.BoundPort(P[name], SERVER, vnic_type, physnet,
                       tuple(QosRule(f"r{i}", "minimum_bandwidth", d, kbps) for i, (d, kbps) in enumerate(rules)),
                       "pol", "port", {"g": RP5 if physnet == "physnet0" else RP6}, slot)


def rate(mbps: int | None) -> dict | None:
    return None if mbps is None else {"min_tx_rate": mbps, "max_tx_rate": 0}


# each port's rules, in its policy's order, and what the agent's own driver writes for them (the last rule written)
A_RULES = [("egress", 1500)]
B_RULES = [("egress", 1000), ("ingress", 3000)]
G_RULES = [("egress", 1400)]
WRITTEN = {name: agent.min_tx_rate_mbps(agent.min_tx_rate_calls(rules)[-1])
           for name, rules in (("A", A_RULES), ("B", B_RULES), ("G", G_RULES))}

PORTS = [
    bound("A", A_RULES, "0000:05:00.1"),  # VF 0: enforced, rounded 1500 kbps -> 2 Mbps
    bound("B", B_RULES, "0000:05:00.2"),  # VF 1: its ingress minimum written over the egress one
    bound("C", [("egress", 1000)], None, "direct-physical"),  # a whole PF: nothing enforces it
    bound("D", [("egress", 999)], "0000:05:00.3", "macvtap"),  # VF 2: holds no rate
    bound("F", [("egress", 2000)], "0000:05:00.6"),  # VF 5: its NIC reports no IFLA_VF_RATE
    bound("G", G_RULES, "0000:06:00.1", physnet="physnet1"),  # ens6's VF 0: enforced, 1400 kbps -> 1 Mbps
]
MAC = "fa:16:3e:00:00:0{}"


def plane(vf2_rate: int = 0) -> e.SriovPlane:
    ens5 = pf(4, ENS5, [vf(0, MAC.format(0), rate(WRITTEN["A"])), vf(1, MAC.format(1), rate(WRITTEN["B"])),
                        vf(2, MAC.format(2), rate(vf2_rate)),
                        vf(3, MAC.format(3), rate(5)),  # a rate left for no port
                        vf(4, MAC.format(4), rate(2)),  # E's VF: E has no minimum rule any more
                        vf(5, MAC.format(5), None)])
    ens6 = pf(5, ENS6, [vf(0, MAC.format(6), rate(WRITTEN["G"]))])
    providers = {ENS5: e.BridgeProvider(RP5, f"{HOST}:NIC Switch agent:{ENS5}", {EGR: {"total": 10_000_000},
                                                                                   IGR: {"total": 10_000_000}}),
                 ENS6: e.BridgeProvider(RP6, f"{HOST}:NIC Switch agent:{ENS6}", {EGR: {"total": 40_000_000}})}
    return e.SriovPlane({"physnet0": (ENS5,), "physnet1": (ENS6,)},
                        {ENS5: netlink.vfs_of(ens5), ENS6: netlink.vfs_of(ens6)}, SLOTS,
                        {ENS5: 25_000, ENS6: 25_000}, providers)


def report(vf2_rate: int = 0) -> e.HostReport:
    held = {SERVER: {RP5: {EGR: 1500 + 1000 + 1000 + 999 + 2000, IGR: 3000}, RP6: {EGR: 1400}}}
    bound_ = {p.id: p.pci_slot for p in PORTS} | {P["E"]: "0000:05:00.5"}
    return e.sriov_host(HOST, PORTS, held, plane(vf2_rate), bound=bound_)


def test_what_the_agent_writes_is_enforced_with_its_rounding():
    assert WRITTEN == {"A": 2, "B": 3, "G": 1}  # the agent's own driver
    checks = {(c.subject, c.rule["direction"] if c.rule else None): c for c in report().checks}
    a = checks[P["A"], "egress"]
    assert (a.verdict, a.rule["expected"], a.rule["expected_unit"]) == (e.ENFORCED, 2, "Mbps")
    assert a.programmed == ({"nic": ENS5, "vf": 0, "pci_slot": "0000:05:00.1", "mac": MAC.format(0),
                             "min_tx_rate": 2, "max_tx_rate": 0},)
    assert a.notes == ("the agent writes whole Mbps: 1500 kbps became 2 Mbps, so the VF guarantees 2000 kbps",)
    g = checks[P["G"], "egress"]
    assert (g.verdict, g.notes) == (e.ENFORCED, (
        "the agent writes whole Mbps: 1400 kbps became 1 Mbps, so the VF guarantees 1000 kbps",))


def test_each_verdict_of_an_sriov_host():
    r = report()
    assert r.backend == e.SRIOV and r.to_dict()["backend"] == "sriov"
    assert [(c.kind, c.subject, c.verdict, c.factor) for c in r.checks] == [
        ("rule", P["A"], e.ENFORCED, None),
        ("rule", P["B"], e.WRONG_RATE, 3.0), ("rule", P["B"], e.PLACEMENT_ONLY, None),
        ("rule", P["C"], e.PLACEMENT_ONLY, None),
        ("rule", P["D"], e.MISSING, None),
        ("rule", P["F"], e.MISSING, None),
        ("rule", P["G"], e.ENFORCED, None),
        ("vf", "0000:05:00.4", e.ORPHAN, None), ("vf", "0000:05:00.5", e.ORPHAN, None)]
    why = {(c.subject, c.rule["direction"] if c.rule else None): c.why for c in r.checks}
    assert why[P["B"], "egress"] == (
        "1000 kbps asked (1 Mbps); VF 1 (0000:05:00.2) of ens5 holds 3 Mbps, the ingress minimum of 3000 kbps: the "
        "SR-IOV agent writes every minimum rule as the VF's min_tx_rate, and the last in the policy's order stays")
    assert why[P["B"], "ingress"].startswith("the SR-IOV agent writes an ingress minimum as the VF's transmit minimum")
    assert why[P["C"], "egress"] == "direct-physical ports get nothing: the SR-IOV agent does not handle them"
    assert why[P["D"], "egress"] == "999 kbps asked (1 Mbps): VF 2 (0000:05:00.3) of ens5 holds no min_tx_rate (0)"
    assert why[P["F"], "egress"] == ("2000 kbps asked: ens5 reports no IFLA_VF_RATE for VF 5 (0000:05:00.6) of ens5: "
                                     "its driver takes no min_tx_rate (the agent only logs an error)")
    assert why["0000:05:00.4", None] == (f"VF 3 of ens5 holds min_tx_rate 5 Mbps: no port bound to {HOST} uses this "
                                         f"VF (its port deleted or moved, and the rate stayed)")
    assert why["0000:05:00.5", None] == (f"VF 4 of ens5 holds min_tx_rate 2 Mbps: port {P['E']}, bound to {HOST} on "
                                         f"this VF, has no minimum rule the agent writes")
    assert r.counts() == {e.ENFORCED: 2, e.MISSING: 2, e.WRONG_RATE: 1, e.PLACEMENT_ONLY: 2, e.ORPHAN: 2}
    assert not r.ok
    # D's VF at a rate the agent would not write for 999 kbps: the factor against its 1 Mbps
    d = next(c for c in report(vf2_rate=4).checks if c.subject == P["D"])
    assert (d.verdict, d.factor, d.why) == (e.WRONG_RATE, 4.0, "999 kbps asked: 1 Mbps expected, 4 Mbps programmed "
                                                               "(VF 2 (0000:05:00.3) of ens5)")


def test_each_pf_against_its_link():
    nics = {n.nic: n for n in report().nics}
    assert [(n.nic, n.physical_network, n.bridge, n.speed_kbps, n.inventory_kbps, n.enforced_kbps, n.errors)
            for n in nics.values()] == [
        (ENS5, "physnet0", None, 25_000_000, 10_000_000, 2000, ()),  # A's VF: 2 Mbps (B's is at a wrong rate)
        (ENS6, "physnet1", None, 25_000_000, 40_000_000, 1000, (
            "Placement's inventory (40000000 kbps) is above the link's speed (25000000 kbps)",))]
    assert nics[ENS5].provider == f"{HOST}:NIC Switch agent:{ENS5}"


def test_a_port_without_a_vf_it_can_be_found_by():
    r = e.sriov_host(HOST, [bound("A", A_RULES, None), bound("B", A_RULES, "0000:09:00.1")], {}, plane())
    assert [(c.verdict, c.why) for c in r.checks[:2]] == [
        (e.MISSING, "1500 kbps asked: the port has no binding:profile.pci_slot (no VF given to it)"),
        (e.MISSING, "1500 kbps asked: its pci_slot 0000:09:00.1 is a VF of none of the agent's PFs (ens5, ens6)")]
