"""``minbw enforcement show``'s table cells for each backend's report (minbw.cli.enforcement.rows, nic_rows): the
Open vSwitch agent's are run against the mini-cloud (tests/e2e/test_enforcement_cloud.py), ML2/OVN's too
(tests/e2e/test_enforcement_ovn_cloud.py); the SR-IOV agent's, which no machine here can produce, here."""
from __future__ import annotations

from minbw.cli.enforcement import PF_COLUMNS, nic_rows, rows
from minbw.dataplane.netlink import Vf
from minbw.neutron.qos import QosRule
from minbw.reports import enforcement as e

PORT, GONE = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
RP = "5a5a5a5a-0000-5000-8000-000000000005"
SERVER = "5e5e5e5e-0000-4000-8000-000000000001"


def test_an_sriov_hosts_rows():
    port = e.BoundPort(PORT, SERVER, "direct", "physnet0", (QosRule("r", "minimum_bandwidth", "egress", 1500),),
                       "pol", "port", {"g": RP}, "0000:05:00.1")
    plane = e.SriovPlane({"physnet0": ("ens5",)}, {"ens5": (Vf(0, "fa:16:3e:00:00:01", 2, 0),
                                                            Vf(1, "fa:16:3e:00:00:02", 5, 0),
                                                            Vf(2, "fa:16:3e:00:00:03", None, None))},
                         {"ens5": {"0000:05:00.1": 0, "0000:05:00.2": 1, "0000:05:00.3": 2}}, {"ens5": 25_000},
                         {"ens5": e.BridgeProvider(RP, "c1:NIC Switch agent:ens5",
                                                   {"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 10_000}})})
    report = e.sriov_host("c1", [port], {SERVER: {RP: {"NET_BW_EGR_KILOBIT_PER_SEC": 1500}}}, plane).to_dict()
    assert rows(report) == (
        (PORT, "egress 1500 kbps", "1500 kbps on ens5", "2 Mbps, VF 0 of ens5", "-", "enforced",
         "the agent writes whole Mbps: 1500 kbps became 2 Mbps, so the VF guarantees 2000 kbps"),
        ("VF 0000:05:00.2", "-", "-", "5 Mbps, VF 1 of ens5", "-", "orphan",
         "VF 1 of ens5 holds min_tx_rate 5 Mbps: no port bound to c1 uses this VF (its port deleted or moved, and "
         "the rate stayed)"))
    assert PF_COLUMNS[1] == "physnet" and nic_rows(report) == (
        ("ens5", "physnet0", "25000000 kbps", "10000 kbps egress, no ingress", "2000 kbps", "-"),)


def test_an_ovn_bridge_with_no_nic_to_shape_and_an_lsp_left():
    from minbw.dataplane import ovn, ovs
    sw = ovs.Switch("unix:db.sock", (ovs.Bridge("br-int", "netdev", ()), ovs.Bridge("br-test", "netdev", ())), (), ())
    nb = ovn.Northbound("tcp:nb", (ovn.LogicalSwitchPort(GONE, None, "", {"qos_min_rate": "1000"}, {}),))
    provider = e.BridgeProvider(RP, "c1:OVN Controller agent:br-test", {"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 1500}})
    report = e.ovn_host("c1", [], {}, e.OvnPlane(sw, nb, {"physnet0": "br-test"}, {}, {"br-test": provider}),
                        bound=[GONE]).to_dict()
    assert rows(report)[0][:6] == (GONE, "-", "-", "1000 bit/s, qos_min_rate", "-", "orphan")
    assert nic_rows(report) == (("-", "br-test", "-", "1500 kbps egress, no ingress", "0 kbps",
                                 "no interface of br-test is marked external_ids:ovn-egress-iface=true: Placement "
                                 "admits 1500 kbps egress there, which ovn-controller enforces on no NIC"),)
