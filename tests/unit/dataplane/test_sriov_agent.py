"""What the SR-IOV agent writes as a VF's ``min_tx_rate`` (neutron 29.0.0, tests/support/oracle/neutron_sriov_qos.py):
the VF rates minbw.dataplane.netlink reads, as docs/enforcement.md states them."""
from __future__ import annotations

from tests.support.oracle import neutron_sriov_qos as agent


def test_kbps_become_whole_mbps_rounded_half_up_and_at_least_one():
    assert {kbps: agent.min_tx_rate_mbps(kbps) for kbps in (1, 999, 1000, 1499, 1500, 2499, 2500, 10_000_000)} == {
        1: 1, 999: 1, 1000: 1, 1499: 1, 1500: 2, 2499: 2, 2500: 3, 10_000_000: 10_000}


def test_an_ingress_minimum_is_written_as_the_vfs_transmit_minimum_too():
    assert agent.min_tx_rate_calls([("ingress", 3000)]) == [3000]
    # both directions: the VF keeps the one applied last (the policy's rule order)
    assert agent.min_tx_rate_calls([("egress", 1500), ("ingress", 3000)]) == [1500, 3000]
    assert agent.min_tx_rate_calls([("ingress", 3000), ("egress", 1500)]) == [3000, 1500]
