"""OVN's northbound database as ML2/OVN leaves a port's minimum bandwidth: the ``Logical_Switch_Port`` rows
(named after the Neutron port ids) with their ``options:qos_min_rate``, ``qos_max_rate`` and ``qos_burst``.

OVN reads these in bit/s (ovn-nb(5)). Neutron writes them on egress rules of flat/VLAN networks only
(``neutron/plugins/ml2/drivers/ovn/mech_driver/ovsdb/extensions/qos.py``): from 21.0.0 to 25.x ``qos_min_rate``
is min_kbps itself (1,000 times too little), from 26.0.0 min_kbps × 1000 (``_ovn_lsp_rule``; docs/enforcement.md).

What ovn-controller makes of it: before 23.06 it runs tc itself on the NICs marked ``ovn-egress-iface`` (the
port's southbound ``qdisc_queue_id`` N as HTB class ``1:(N+1)``) and leaves only a ``linux-noop`` QoS row in OVSDB;
from 23.06 it writes QoS and Queue rows (``ovn_qos``, ``ovn_port``) that ovs-vswitchd applies. :func:`queues` reads
N from the southbound ``Port_Binding`` rows (``options:qdisc_queue_id``, as northd allocates it); the class itself is
the kernel's (:mod:`minbw.dataplane.netlink`). Debian 12's ovn-host 23.03.1 takes the path before 23.06 (seen live:
the class comes with a change of the port's row and goes at ovn-controller's next full recompute; docs/enforcement.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minbw.dataplane import ovsdb
from minbw.dataplane.ovs import frozen, rate

SCHEMA = "OVN_Northbound"
SB_SCHEMA = "OVN_Southbound"
SB_TABLES = {"Port_Binding": ("logical_port", "options")}
TABLES = {"Logical_Switch": ("name", "ports"), "Logical_Switch_Port": ("name", "type", "options", "external_ids")}


@dataclass(frozen=True)
class LogicalSwitchPort:
    name: str  # the Neutron port id
    switch: str | None  # its Logical_Switch's name (neutron-<network id>)
    type: str  # "" for a VM's port, "localnet", "router", ...
    options: Mapping[str, str]
    external_ids: Mapping[str, str]

    @property
    def qos_min_rate(self) -> int | None:
        """``options:qos_min_rate`` as OVN reads it: bit/s."""
        return rate(self.options, "qos_min_rate")

    @property
    def qos_max_rate(self) -> int | None:
        """``options:qos_max_rate`` as OVN reads it: bit/s; None when absent or not a whole number."""
        return rate(self.options, "qos_max_rate")

    @property
    def qos_burst(self) -> int | None:
        """``options:qos_burst`` as a whole number; None when absent or not a whole number."""
        return rate(self.options, "qos_burst")


@dataclass(frozen=True)
class Northbound:
    remote: str
    ports: tuple[LogicalSwitchPort, ...]

    def port(self, name: str) -> LogicalSwitchPort | None:
        """The logical switch port named ``name`` (a Neutron port id), None when it was not read."""
        return next((p for p in self.ports if p.name == name), None)


def read(
    remote: str, ports: Iterable[str] | None = None, timeout: float = ovsdb.TIMEOUT, ssl: ovsdb.Ssl | None = None
) -> Northbound:
    """The northbound database at ``remote`` (``tcp:HOST:6641``, ``ssl:...``, ``unix:...``): every logical
    switch port with its switch, or those named in ``ports`` (the ones absent are left out: a port may not be in OVN
    yet). With ``ports`` the server sends those rows only (conditional monitoring on ``name``), and the switches are
    not read (``switch`` None): a host's ports, whatever the size of the cloud."""
    wanted = sorted(set(ports)) if ports is not None else None
    tables = TABLES if wanted is None else {"Logical_Switch_Port": TABLES["Logical_Switch_Port"]}
    conditions = None if wanted is None else {"Logical_Switch_Port": [["name", "==", n] for n in wanted]}

    def take(tables) -> Northbound:
        switch_of = (
            {str(p.uuid): s.name for s in tables["Logical_Switch"].rows.values() for p in s.ports}
            if "Logical_Switch" in tables
            else {}
        )
        rows = [
            LogicalSwitchPort(r.name, switch_of.get(str(u)), r.type, frozen(r.options), frozen(r.external_ids))
            for u, r in tables["Logical_Switch_Port"].rows.items()
            if wanted is None or r.name in wanted
        ]
        return Northbound(remote, tuple(sorted(rows, key=lambda p: p.name)))

    return ovsdb.read(remote, SCHEMA, tables, take, timeout, ssl, conditions)


@dataclass(frozen=True)
class Southbound:
    remote: str
    queues: Mapping[str, int]  # logical port (the Neutron port id) -> its qdisc_queue_id (ports without one: absent)

    def queue(self, port: str) -> int | None:
        """``port``'s ``qdisc_queue_id``, None when its ``Port_Binding`` has none or was not read."""
        return self.queues.get(port)


def queues(
    remote: str, ports: Iterable[str], timeout: float = ovsdb.TIMEOUT, ssl: ovsdb.Ssl | None = None
) -> Southbound:
    """The ``options:qdisc_queue_id`` northd gave each of ``ports`` in its southbound ``Port_Binding`` at ``remote``
    (``tcp:HOST:6642``, ...; a chassis finds it in its Open vSwitch database's ``external_ids:ovn-remote``). The
    server sends those ports' rows only (conditional monitoring on ``logical_port``)."""
    wanted = sorted(set(ports))

    def take(tables) -> Southbound:
        found = {
            r.logical_port: rate(r.options, "qdisc_queue_id")
            for r in tables["Port_Binding"].rows.values()
            if r.logical_port in wanted
        }
        return Southbound(remote, frozen({p: q for p, q in found.items() if q is not None}))

    return ovsdb.read(
        remote, SB_SCHEMA, SB_TABLES, take, timeout, ssl, {"Port_Binding": [["logical_port", "==", p] for p in wanted]}
    )
