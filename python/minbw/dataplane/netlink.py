"""The kernel's view of a host's links through pyroute2 (netlink and ethtool; nothing is written): a link's tc
qdiscs and HTB classes, its speed, and a PF's VFs with their rates.

- tc: where Open vSwitch applies a ``linux-htb`` QoS row, queue N is the HTB class ``1:(N+1)`` under ``1:fffe``
  (``lib/netdev-linux.c``), its rate ``max(min-rate / 8, MTU)`` bytes/s. The kernel keeps HTB rates in bytes/s
  (``TCA_HTB_PARMS``, or ``TCA_HTB_RATE64``/``CEIL64`` above 2^32−1); they are given here in bit/s.
- speed: ethtool's link modes through ``pyroute2.ethtool`` (netlink, or the ioctl where the kernel has no ethtool
  netlink), in Mb/s; None where the driver reports none (virtual NICs, TAP devices).
- VFs: ``IFLA_VFINFO_LIST`` of the PF (``get_links(..., ext_mask=1)``, as Neutron's SR-IOV agent reads them):
  per VF its MAC and ``IFLA_VF_RATE`` ``min_tx_rate``/``max_tx_rate`` in Mbps (what the agent writes: kbps
  rounded to whole Mbps, docs/enforcement.md).

``netns`` names a network namespace (``ip netns``); None is the reader's own.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass

from minbw.errors import DataPlaneUnreadable, MissingDependency

ROOT = 0xFFFFFFFF


@dataclass(frozen=True)
class Qdisc:
    handle: str  # "1:"
    parent: str  # "root" or "MAJOR:MINOR"
    kind: str  # "htb", "fq_codel", "noqueue", ...


@dataclass(frozen=True)
class HtbClass:
    classid: str  # "1:2"
    parent: str
    rate: int  # bit/s
    ceil: int  # bit/s


@dataclass(frozen=True)
class LinkTc:
    link: str
    qdiscs: tuple[Qdisc, ...]
    classes: tuple[HtbClass, ...]  # HTB classes only


@dataclass(frozen=True)
class Vf:
    index: int
    mac: str | None
    min_tx_rate: int | None  # Mbps; 0: none; None: the NIC reports no IFLA_VF_RATE
    max_tx_rate: int | None


def handle(value: int) -> str:
    """tc's MAJOR:MINOR spelling of a handle (hexadecimal; the minor left out when 0, as tc prints qdiscs)."""
    if value == ROOT:
        return "root"
    major, minor = value >> 16, value & 0xFFFF
    return f"{major:x}:{minor:x}" if minor else f"{major:x}:"


def tc(link: str, netns: str | None = None) -> LinkTc:
    """``link``'s qdiscs and HTB classes."""
    with _iproute(netns) as ipr:
        index = _index(ipr, link, netns)
        return LinkTc(link, qdiscs_of(ipr.get_qdiscs(index), index), htb_classes_of(ipr.get_classes(index), index))


def qdiscs_of(messages: Iterable, index: int) -> tuple[Qdisc, ...]:
    """The qdiscs of link ``index`` among pyroute2's tc ``messages`` (``get_qdiscs``), in their order, handles as tc
    spells them."""
    return tuple(
        Qdisc(handle(m["handle"]), handle(m["parent"]), m.get_attr("TCA_KIND")) for m in messages if m["index"] == index
    )


def htb_classes_of(messages: Iterable, index: int) -> tuple[HtbClass, ...]:
    """The HTB classes of link ``index`` among pyroute2's tc ``messages`` (``get_classes``), by handle; rate and ceil in
    bit/s, from ``TCA_HTB_RATE64``/``CEIL64`` where set, else ``TCA_HTB_PARMS``."""
    out = []
    for m in sorted(messages, key=lambda m: m["handle"]):
        if m["index"] != index or m.get_attr("TCA_KIND") != "htb":
            continue
        options = m.get_attr("TCA_OPTIONS")
        parms = options.get_attr("TCA_HTB_PARMS")
        rate = options.get_attr("TCA_HTB_RATE64") or parms["rate"]
        ceil = options.get_attr("TCA_HTB_CEIL64") or parms["ceil"]
        out.append(HtbClass(handle(m["handle"]), handle(m["parent"]), rate * 8, ceil * 8))
    return tuple(out)


def speed(link: str, netns: str | None = None) -> int | None:
    """``link``'s speed in Mb/s, None when its driver reports none."""
    with _iproute(netns) as ipr:
        _index(ipr, link, netns)
    from pyroute2.ethtool import Ethtool
    from pyroute2.ethtool.ioctl import NotSupportedError

    with _inside(netns), Ethtool() as ethtool:
        try:
            return ethtool.get_link_mode(link).speed
        except NotSupportedError:
            return None


def vfs(pf: str, netns: str | None = None) -> tuple[Vf, ...]:
    """The VFs of the PF ``pf`` with their rates (none: not a PF, or no VF made)."""
    with _iproute(netns) as ipr:
        index = _index(ipr, pf, netns)
        return vfs_of(ipr.get_links(index, ext_mask=1)[0])


def vfs_of(link) -> tuple[Vf, ...]:
    """The VFs in an RTM_NEWLINK message (an ``ifinfmsg``) of a PF, in VF order."""
    infos = link.get_attr("IFLA_VFINFO_LIST")
    out: list[Vf] = []
    for info in infos.get_attrs("IFLA_VF_INFO") if infos else ():
        mac = info.get_attr("IFLA_VF_MAC") or {}
        rate = info.get_attr("IFLA_VF_RATE")
        index = mac.get("vf", rate["vf"] if rate else len(out))
        out.append(
            Vf(index, mac.get("mac"), rate["min_tx_rate"] if rate else None, rate["max_tx_rate"] if rate else None)
        )
    return tuple(sorted(out, key=lambda v: v.index))


def _where(link: str, netns: str | None) -> str:
    return f"link {link}" + (f" in network namespace {netns}" if netns else "")


def _index(ipr, link: str, netns: str | None) -> int:
    found = ipr.link_lookup(ifname=link)
    if not found:
        raise DataPlaneUnreadable("no such link", _where(link, netns))
    return found[0]


@contextmanager
def _iproute(netns: str | None):
    try:
        from pyroute2 import IPRoute
        from pyroute2 import netns as namespaces
    except ImportError:
        raise MissingDependency(
            "reading netlink needs pyroute2, which is not installed. Fix: pip install pyroute2 "
            "(from a minbw checkout: pip install './python[dataplane]')."
        ) from None
    if netns is not None and netns not in namespaces.listnetns():
        raise DataPlaneUnreadable("no such network namespace", f"network namespace {netns}")
    # flags=0: never create the namespace (pyroute2's default would)
    with IPRoute(netns=netns, flags=0) if netns else IPRoute() as ipr:
        yield ipr


@contextmanager
def _inside(netns: str | None):
    """This thread in ``netns`` meanwhile (ethtool has no namespace argument)."""
    if netns is None:
        yield
        return
    from pyroute2 import netns as namespaces

    saved = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        namespaces.setns(netns, flags=0)
        yield
    finally:
        namespaces.setns(saved)
        os.close(saved)
