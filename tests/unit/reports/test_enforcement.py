"""minbw.reports.enforcement: the verdicts as a table, and the units against upstream's own code (the SR-IOV
agent's set_device_rate, run by tests/support/oracle/neutron_sriov_qos.py; ML2/OVN 29.0.0's _ovn_lsp_rule;
neutron-lib's SI_BASE, which ovs_lib._update_queue multiplies by)."""
from __future__ import annotations

import warnings

import pytest
from neutron_lib import constants

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
    (e.Rule("p1", e.OVN, 1000, physical_network=PHYS), 1000, e.WRONG_RATE, 0.001, "Neutron before 26.0.0"),
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


def test_orphans_are_what_no_rule_asks_for():
    rules = [e.Rule("a", e.OVS, 1000, physical_network=PHYS), e.Rule("b", e.SRIOV, 3000, direction="ingress")]
    found = e.compare(rules, {e.OVS: {"a": 1_000_000, "gone": 2_000_000}, e.SRIOV: {"b": 3, "old": 5}})
    assert [(v.backend, v.port, v.verdict) for v in found] == [
        (e.OVS, "a", e.ENFORCED), (e.SRIOV, "b", e.PLACEMENT_ONLY), (e.OVS, "gone", e.ORPHAN),
        (e.SRIOV, "old", e.ORPHAN)]
    assert found[2].to_dict() == {"port": "gone", "backend": e.OVS, "verdict": e.ORPHAN, "expected": None,
                                  "programmed": 2_000_000, "unit": "bit/s", "factor": None,
                                  "why": "programmed for no port with a minimum rule"}


def test_a_nic_whose_inventory_or_guarantees_exceed_its_link():
    assert e.nic_check("eth1", 10_000, 10_000_000, 4_000_000).errors == ()
    check = e.nic_check("eth1", 10_000, 25_000_000, 12_000_000)
    assert check.errors == ("Placement's inventory (25000000 kbps) is above the link's speed (10000000 kbps)",
                            "the minimums programmed (12000000 kbps) are above the link's speed (10000000 kbps)")
    assert e.nic_check("tap0", None, 25_000_000, 0).errors == ()  # no speed reported: nothing to say
