"""minbw.dataplane.netlink's parsers on netlink messages built and decoded by pyroute2's own message classes
(``ifinfmsg``, ``tcmsg``): the documented exception for what these machines cannot produce (no SR-IOV NIC, no
netdevsim: no VF can be made here), and for HTB rates above 2^32-1 bytes/s. The tc reading of a real TAP is in
tests/functional/test_dataplane_ovs.py."""
from __future__ import annotations

from pyroute2.netlink.rtnl import RTM_NEWLINK, RTM_NEWQDISC, RTM_NEWTCLASS
from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg
from pyroute2.netlink.rtnl.tcmsg import tcmsg

from minbw.dataplane import netlink
from tests.support.dataplane.netlink_messages import decoded, pf, vf


def test_a_pfs_vfs_with_their_rates_in_mbps():
    ens5 = pf(4, "ens5", [
        vf(1, "fa:16:3e:00:00:02", {"min_tx_rate": 0, "max_tx_rate": 0}),
        # what the SR-IOV agent writes for a 1,500 kbps minimum: round half up to whole Mbps
        vf(0, "fa:16:3e:00:00:01", {"min_tx_rate": 2, "max_tx_rate": 10}),
        vf(2, "fa:16:3e:00:00:03", None)])  # a NIC without IFLA_VF_RATE (Neutron reads None)
    assert netlink.vfs_of(ens5) == (netlink.Vf(0, "fa:16:3e:00:00:01", 2, 10),
                                  netlink.Vf(1, "fa:16:3e:00:00:02", 0, 0),
                                  netlink.Vf(2, "fa:16:3e:00:00:03", None, None))


def test_a_link_without_vfs():
    assert netlink.vfs_of(decoded(ifinfmsg, RTM_NEWLINK, {"index": 2}, [("IFLA_IFNAME", "eth0")])) == ()


def htb(index: int, handle: int, parent: int, rate: int, ceil: int, **wide) -> tcmsg:
    options = [("TCA_HTB_PARMS", {"rate": rate, "ceil": ceil, "buffer": 1, "cbuffer": 1, "quantum": 1, "level": 0,
                                  "prio": 0})] + list(wide.items())
    return decoded(tcmsg, RTM_NEWTCLASS, {"index": index, "handle": handle, "parent": parent},
                   [("TCA_KIND", "htb"), ("TCA_OPTIONS", {"attrs": options})])


def test_htb_classes_in_bit_per_second_in_class_order():
    classes = [htb(3, 0x10007, 0x1FFFE, 250_000, 2 ** 32 - 1),
               # above 2^32-1 bytes/s the kernel adds the 64-bit rate (40 Gbit/s: 5e9 bytes/s)
               htb(3, 0x10002, 0x1FFFE, 2 ** 32 - 1, 2 ** 32 - 1, TCA_HTB_RATE64=5_000_000_000,
                   TCA_HTB_CEIL64=6_000_000_000),
               htb(3, 0x1FFFE, netlink.ROOT, 2 ** 32 - 1, 2 ** 32 - 1),
               htb(9, 0x10002, 0x1FFFE, 1, 1)]  # another link's
    assert netlink.htb_classes_of(classes, 3) == (
        netlink.HtbClass("1:2", "1:fffe", 40_000_000_000, 48_000_000_000),
        netlink.HtbClass("1:7", "1:fffe", 2_000_000, 34_359_738_360),
        netlink.HtbClass("1:fffe", "root", 34_359_738_360, 34_359_738_360))


def test_qdiscs_and_handles_as_tc_spells_them():
    qdiscs = [decoded(tcmsg, RTM_NEWQDISC, {"index": 3, "handle": 0x10000, "parent": netlink.ROOT},
                      [("TCA_KIND", "htb")]),
              decoded(tcmsg, RTM_NEWQDISC, {"index": 3, "handle": 0x80010000, "parent": 0x10002},
                      [("TCA_KIND", "fq_codel")])]
    assert netlink.qdiscs_of(qdiscs, 3) == (netlink.Qdisc("1:", "root", "htb"),
                                            netlink.Qdisc("8001:", "1:2", "fq_codel"))
    assert [netlink.handle(h) for h in (0, 0x10000, 0x1FFFE, netlink.ROOT)] == ["0:", "1:", "1:fffe", "root"]
