"""Neutron's SR-IOV agent QoS driver, run for real up to the netlink call: what it would write as a VF's
``min_tx_rate`` (neutron 29.0.0).

``QosSRIOVAgentDriver`` (``neutron/plugins/ml2/drivers/mech_sriov/agent/extension_drivers/qos_driver.py``) with
its eswitch manager replaced by a recorder, to see which rules reach ``set_device_min_tx_rate`` (kbps); and
``EmbSwitch.set_device_rate`` (``eswitch_manager.py``) with the PCI wrapper replaced by a recorder, to see the
Mbps it hands to ``set_vf_rate`` (pyroute2's ``IFLA_VF_RATE``). No VF can be made on these machines.
"""
from __future__ import annotations

import uuid
import warnings
from unittest import mock

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from neutron.objects.qos import policy, rule
    from neutron.plugins.ml2.drivers.mech_sriov.agent import eswitch_manager
    from neutron.plugins.ml2.drivers.mech_sriov.agent.extension_drivers import qos_driver

PCI_SLOT = "0000:05:00.1"


def min_tx_rate_mbps(min_kbps: int) -> int:
    """The Mbps ``set_device_rate`` gives the VF for a minimum of ``min_kbps``."""
    switch = eswitch_manager.EmbSwitch.__new__(eswitch_manager.EmbSwitch)  # its PF and VFs are not read
    switch.pci_slot_map = {PCI_SLOT: 0}
    switch.pci_dev_wrapper = mock.Mock()
    switch._get_vfs = lambda: {0: {"max_tx_rate": 0, "min_tx_rate": 0}}
    switch.set_device_rate(PCI_SLOT, {eswitch_manager.IP_LINK_CAPABILITY_MIN_TX_RATE: min_kbps})
    return switch.pci_dev_wrapper.set_vf_rate.call_args.args[1][eswitch_manager.IP_LINK_CAPABILITY_MIN_TX_RATE]


def min_tx_rate_calls(rules: list[tuple[str, int]]) -> list[int]:
    """The kbps handed to ``set_device_min_tx_rate``, in order, when a port's policy holds minimum bandwidth rules
    ``[(direction, min_kbps), ...]`` (in that order)."""
    policy_id = str(uuid.uuid4())
    driver = qos_driver.QosSRIOVAgentDriver()
    driver.eswitch_mgr = mock.Mock()
    driver.eswitch_mgr.device_exists.return_value = True
    qos = policy.QosPolicy(id=policy_id, rules=[
        rule.QosMinimumBandwidthRule(id=str(uuid.uuid4()), qos_policy_id=policy_id, min_kbps=kbps, direction=d)
        for d, kbps in rules])
    driver.create({"port_id": str(uuid.uuid4()), "device": "fa:16:3e:00:00:01", "profile": {"pci_slot": PCI_SLOT},
                   "qos_policy_id": policy_id, "device_owner": "compute:nova"}, qos)
    return [c.args[2] for c in driver.eswitch_mgr.set_device_min_tx_rate.call_args_list]
