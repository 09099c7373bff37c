"""minbw.dataplane.pci against Neutron's SR-IOV agent's own scan (neutron 29.0.0,
``PciOsWrapper.scan_vf_devices``), on a sysfs tree laid out as the kernel lays out a PF's (no VF can be made on
these machines: the documented exception, a directory of the test's own standing for /sys)."""
from __future__ import annotations

import os
import warnings

import pytest

from minbw.dataplane import pci
from minbw.errors import DataPlaneUnreadable

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from neutron.plugins.ml2.drivers.mech_sriov.agent.eswitch_manager import PciOsWrapper


def sysfs(root, pf: str, vfs: dict[int, str]) -> str:
    """``root``/class/net/PF/device as the kernel has it: virtfnN -> ../ADDRESS, and files that are no VF."""
    device = root / "class" / "net" / pf / "device"
    device.mkdir(parents=True)
    (device / "sriov_numvfs").write_text(f"{len(vfs)}\n")
    (device / "virtfn_not_a_link").write_text("")
    for index, address in vfs.items():
        os.symlink(f"../{address}", device / f"virtfn{index}")
    return str(root)


def test_the_vfs_pci_addresses_as_the_agent_reads_them(tmp_path, monkeypatch):
    vfs = {0: "0000:05:00.1", 1: "0000:05:00.2", 10: "0000:05:01.3"}
    root = sysfs(tmp_path, "ens5", vfs)
    monkeypatch.setattr(PciOsWrapper, "DEVICE_PATH", f"{root}/class/net/%s/device")
    assert pci.vf_slots("ens5", root) == dict(PciOsWrapper.scan_vf_devices("ens5")) == {
        address: index for index, address in vfs.items()}


def test_a_device_that_is_not_there_is_one_line(tmp_path):
    with pytest.raises(DataPlaneUnreadable) as error:
        pci.vf_slots("ens9", str(tmp_path))
    assert str(error.value) == (f"PF ens9 ({tmp_path}/class/net/ens9/device): no such PCI network device (the "
                                f"agent's device_mappings name it)")
