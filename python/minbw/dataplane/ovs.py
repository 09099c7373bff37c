"""An Open vSwitch database as the OVS agent's QoS driver leaves it: per bridge its ports, each port's
interfaces and the QoS row in its ``qos`` column with that row's queues; and every QoS and Queue row, attached to
a port or not.

What the agent writes for a minimum bandwidth rule (neutron 29.0.0, ``neutron/agent/common/ovs_lib.py``,
docs/enforcement.md): a Queue with ``other_config:min-rate`` = min_kbps × 1000 (bit/s) and ``max-rate`` 2^35−1,
``external_ids`` ``port`` (the Neutron port), ``type=minimum_bandwidth``, ``queue-num`` (the VM port's br-int
ofport); a QoS ``type=linux-htb`` with ``external_ids`` ``id`` (drawn anew by each agent start) and
``_type=minimum_bandwidth``, whose ``queues`` map queue-num → Queue, in the ``qos`` column of the physical
bridges' NIC ports. A QoS row no port names is one a previous agent run left.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from minbw.dataplane import ovsdb
from minbw.errors import DataPlaneUnreadable

SCHEMA = "Open_vSwitch"
TABLES = {
    "Bridge": ("name", "datapath_type", "ports"),
    "Port": ("name", "interfaces", "qos", "external_ids"),
    "Interface": ("name", "type", "ofport", "external_ids"),
    "QoS": ("type", "other_config", "external_ids", "queues"),
    "Queue": ("other_config", "external_ids"),
    "Open_vSwitch": ("external_ids",),
}


def frozen(mapping: Mapping) -> Mapping:
    """A read-only copy of ``mapping`` with its keys sorted (a ``MappingProxyType``)."""
    return MappingProxyType(dict(sorted(mapping.items())))


def rate(config: Mapping[str, str], key: str) -> int | None:
    """An integer ``other_config``/``options`` value (bit/s), None when absent or not a whole number."""
    value = config.get(key)
    return int(value) if value is not None and value.strip().isdigit() else None


@dataclass(frozen=True)
class Queue:
    uuid: str
    other_config: Mapping[str, str]
    external_ids: Mapping[str, str]

    @property
    def min_rate(self) -> int | None:
        """``other_config:min-rate``, bit/s."""
        return rate(self.other_config, "min-rate")

    @property
    def max_rate(self) -> int | None:
        """``other_config:max-rate``, bit/s; None when absent or not a whole number."""
        return rate(self.other_config, "max-rate")


@dataclass(frozen=True)
class QoS:
    uuid: str
    type: str
    other_config: Mapping[str, str]
    external_ids: Mapping[str, str]
    queues: Mapping[int, Queue]  # queue number → Queue
    ports: tuple[str, ...]  # the ports whose qos column names this row (none: left behind)


@dataclass(frozen=True)
class Interface:
    name: str
    type: str
    ofport: int | None
    external_ids: Mapping[str, str]

    @property
    def iface_id(self) -> str | None:
        """The Neutron port plugged here (``external_ids:iface-id``, as os-vif sets it)."""
        return self.external_ids.get("iface-id")


@dataclass(frozen=True)
class Port:
    name: str
    interfaces: tuple[Interface, ...]
    qos: QoS | None
    external_ids: Mapping[str, str]


@dataclass(frozen=True)
class Bridge:
    name: str
    datapath_type: str
    ports: tuple[Port, ...]


@dataclass(frozen=True)
class Switch:
    """One Open vSwitch database: the bridges read, and every QoS and Queue row in it; ``external_ids`` is the
    root row's (where ovn-controller reads ``ovn-bridge-mappings``, ``ovn-cms-options``, ``ovn-bridge``)."""

    remote: str
    bridges: tuple[Bridge, ...]
    qos: tuple[QoS, ...]
    queues: tuple[Queue, ...]
    external_ids: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def bridge(self, name: str) -> Bridge:
        """The bridge named ``name``. Raises DataPlaneUnreadable when it is not among the bridges read."""
        for b in self.bridges:
            if b.name == name:
                return b
        raise DataPlaneUnreadable(
            f"no bridge {name!r} read (bridges: {', '.join(b.name for b in self.bridges)})", self.remote
        )


def read(
    remote: str, bridges: Iterable[str] | None = None, timeout: float = ovsdb.TIMEOUT, ssl: ovsdb.Ssl | None = None
) -> Switch:
    """The Open vSwitch database at ``remote`` (``unix:/run/openvswitch/db.sock``, ``tcp:HOST:6640``, ...): every
    bridge, or those named in ``bridges`` (one that does not exist: DataPlaneUnreadable)."""
    wanted = sorted(set(bridges)) if bridges is not None else None

    def take(tables) -> Switch:
        ports_of: dict[str, list[str]] = {}
        for row in tables["Port"].rows.values():
            for q in row.qos:
                ports_of.setdefault(str(q.uuid), []).append(row.name)
        queues = {str(u): _queue(r) for u, r in tables["Queue"].rows.items()}
        qos = {
            str(u): QoS(
                str(u),
                r.type,
                frozen(r.other_config),
                frozen(r.external_ids),
                frozen({n: queues[str(q.uuid)] for n, q in r.queues.items()}),
                tuple(sorted(ports_of.get(str(u), ()))),
            )
            for u, r in tables["QoS"].rows.items()
        }
        found = {r.name: r for r in tables["Bridge"].rows.values()}
        missing = sorted(set(wanted or ()) - set(found))
        if missing:
            raise DataPlaneUnreadable(
                f"no bridge {', '.join(map(repr, missing))} (bridges: {', '.join(sorted(found)) or 'none'})", remote
            )
        root = next(iter(tables["Open_vSwitch"].rows.values()), None)
        return Switch(
            remote,
            tuple(_bridge(found[n], qos) for n in (sorted(found) if wanted is None else wanted)),
            tuple(qos[u] for u in sorted(qos)),
            tuple(queues[u] for u in sorted(queues)),
            frozen(root.external_ids if root is not None else {}),
        )

    return ovsdb.read(remote, SCHEMA, TABLES, take, timeout, ssl)


def _queue(row) -> Queue:
    return Queue(str(row.uuid), frozen(row.other_config), frozen(row.external_ids))


def _bridge(row, qos: Mapping[str, QoS]) -> Bridge:
    ports = []
    for p in sorted(row.ports, key=lambda p: p.name):
        interfaces = tuple(
            Interface(i.name, i.type, ovsdb.optional(i.ofport), frozen(i.external_ids))
            for i in sorted(p.interfaces, key=lambda i: i.name)
        )
        attached = ovsdb.optional(p.qos)
        ports.append(Port(p.name, interfaces, qos[str(attached.uuid)] if attached else None, frozen(p.external_ids)))
    return Bridge(row.name, row.datapath_type, tuple(ports))
