"""Netlink messages as the kernel would send them, built with pyroute2's own message classes (``ifinfmsg``,
``tcmsg``): encoded by pyroute2, then decoded from their bytes. The documented exception for what these machines
cannot produce (no SR-IOV NIC, no netdevsim: no VF can be made here), used by the parsers' tests
(tests/unit/dataplane/test_netlink.py) and the SR-IOV report's (tests/unit/reports/test_enforcement_sriov.py)."""
from __future__ import annotations

from pyroute2.netlink.rtnl import RTM_NEWLINK
from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg


def decoded(cls, kind: int, fields: dict, attrs: list):
    """A message of class ``cls`` and type ``kind``: encoded by pyroute2, then decoded from its bytes."""
    msg = cls()
    msg["header"]["type"] = kind
    for k, v in fields.items():
        msg[k] = v
    msg["attrs"] = attrs
    msg.encode()
    out = cls(bytes(msg.data[:msg["header"]["length"]]))
    out.decode()
    return out


def vf(index: int, mac: str, rate: dict | None) -> tuple:
    """A PF's ``IFLA_VF_INFO`` for VF ``index``; ``rate`` its ``IFLA_VF_RATE`` (None: a NIC without it)."""
    attrs = [("IFLA_VF_MAC", {"vf": index, "mac": mac}), ("IFLA_VF_TX_RATE", {"vf": index, "rate": 0})]
    if rate is not None:
        attrs.append(("IFLA_VF_RATE", {"vf": index, **rate}))
    return ("IFLA_VF_INFO", {"attrs": attrs})


def pf(index: int, name: str, vfs: list[tuple]) -> ifinfmsg:
    """The RTM_NEWLINK of PF ``name`` with the VFs ``vfs`` (:func:`vf`), as ``get_links(..., ext_mask=1)`` gets it."""
    return decoded(ifinfmsg, RTM_NEWLINK, {"index": index}, [
        ("IFLA_IFNAME", name), ("IFLA_NUM_VF", len(vfs)), ("IFLA_VFINFO_LIST", {"attrs": vfs})])
