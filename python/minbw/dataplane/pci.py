"""A PF's VFs by PCI address, read from sysfs as Neutron's SR-IOV agent reads them (nothing is written).

The agent writes a port's VF rates through the VF index of the port's ``binding:profile.pci_slot``, which it takes
from the links ``/sys/class/net/PF/device/virtfnN`` -> ``../PCI_ADDRESS`` (``PciOsWrapper.scan_vf_devices``,
neutron 29.0.0 ``neutron/plugins/ml2/drivers/mech_sriov/agent/eswitch_manager.py``); minbw finds the VF the same
way, then its rates through netlink (:func:`minbw.dataplane.netlink.vfs`). The PF is looked up in this process's
sysfs, where the agent (on the host) looks it up.
"""

from __future__ import annotations

import os
import re

from minbw.errors import DataPlaneUnreadable

SYSFS = "/sys"
VIRTFN = re.compile(r"^virtfn(?P<vf_index>\d+)")  # the agent's VIRTFN_FORMAT


def vf_slots(pf: str, sysfs: str = SYSFS) -> dict[str, int]:
    """The VFs of the PF ``pf``: PCI address -> VF index (none: not a PF, or no VF made)."""
    device = os.path.join(sysfs, "class", "net", pf, "device")
    if not os.path.isdir(device):
        raise DataPlaneUnreadable(
            "no such PCI network device (the agent's device_mappings name it)", f"PF {pf} ({device})"
        )
    out = {}
    for name in sorted(os.listdir(device)):
        m = VIRTFN.match(name)
        path = os.path.join(device, name)
        if m and os.path.islink(path):
            out[os.path.basename(os.readlink(path))] = int(m.group("vf_index"))
    return out
