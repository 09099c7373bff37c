"""Is a port's guarantee enforced? What a minimum bandwidth rule asks, against what a host's data plane holds for
the port, with upstream's units (docs/enforcement.md); and a NIC's guarantees and inventory against its speed.
Pure: the caller reads the data plane (minbw.dataplane) and gives each port's programmed minimum in the backend's
own unit:

- Open vSwitch agent: the Queue's ``other_config:min-rate``, bit/s (min_kbps × 1000, ``ovs_lib._update_queue``);
  in the kernel the HTB class holds ``max(min-rate / 8, MTU)`` bytes/s (:func:`htb_rate`);
- ML2/OVN: ``Logical_Switch_Port`` ``options:qos_min_rate``, bit/s (min_kbps × 1000 from Neutron 26.0.0; the kbps
  themselves before, 1,000 times too little);
- SR-IOV agent: the VF's ``min_tx_rate``, whole Mbps (``EmbSwitch.set_device_rate``: 1 below 1,000 kbps, else
  kbps / 1000 rounded half up).

Verdicts: ``enforced``; ``missing`` (nothing programmed); ``wrong rate`` (with the factor programmed / expected);
``orphan`` (programmed for a port no rule asks for); ``placement-only`` (no enforcement exists upstream: ingress on
OVS and OVN, tunnelled networks, minimum packet rate everywhere, SR-IOV ``direct-physical`` ports, and an ingress
minimum on SR-IOV, which the agent writes as the VF's transmit minimum).

One host of the Open vSwitch agent, side by side (:func:`ovs_host`, ``minbw enforcement show``): each minimum rule
of the ports bound there beside Placement's reservation, the agent's queue (OVSDB) and the kernel's HTB class (tc),
the orphans among the agent's rows, and each NIC against its link.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from types import MappingProxyType
from typing import Any

from ..errors import InvalidInput
from ..model.providers import stocks_of
from ..neutron.naming import BW_CLASSES, BW_EGRESS, BW_INGRESS, PPS_CLASSES
from ..neutron.qos import MIN_PPS, RULE_UNITS, QosRule

OVS, SRIOV, OVN = "openvswitch", "sriov", "ovn"
UNIT = {OVS: "bit/s", OVN: "bit/s", SRIOV: "Mbps"}
ENFORCED, MISSING, WRONG_RATE, ORPHAN, PLACEMENT_ONLY = "enforced", "missing", "wrong rate", "orphan", "placement-only"
OVN_KBPS_BUG = "ML2/OVN wrote kbps where OVN reads bit/s: Neutron before 26.0.0 (fixed in 26.0.0)"


@dataclass(frozen=True)
class Rule:
    """A bound port's minimum rule, as Neutron holds it."""

    port: str
    backend: str  # OVS, SRIOV or OVN
    min_kbps: int  # kpps for a packet rate rule
    direction: str = "egress"
    packet_rate: bool = False
    vnic_type: str = "normal"
    physical_network: str | None = None  # None: a tunnelled network (on SR-IOV: not looked at)


@dataclass(frozen=True)
class Verdict:
    port: str
    backend: str
    verdict: str
    expected: int | None = None  # in ``unit``
    programmed: int | None = None
    unit: str | None = None
    factor: float | None = None  # programmed / expected, for a wrong rate
    why: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def programmed_rate(backend: str, min_kbps: int) -> int:
    """What upstream programs for a minimum of ``min_kbps``, in the backend's unit (``UNIT``)."""
    if backend == SRIOV:
        return 1 if 0 < min_kbps < 1000 else int((Decimal(min_kbps) / 1000).quantize(Decimal(1), ROUND_HALF_UP))
    return min_kbps * 1000


def htb_rate(min_rate: int, mtu: int = 1500) -> int:
    """The rate (bit/s) of the HTB class ovs-vswitchd makes for a queue's ``min-rate`` (bit/s): at least one MTU
    per second (``htb_parse_class_details__``, Open vSwitch's ``lib/netdev-linux.c``)."""
    return max(min_rate // 8, mtu) * 8


def unenforced(rule: Rule) -> str | None:
    """Why upstream enforces nothing for ``rule`` (None: it does)."""
    if rule.packet_rate:
        return "no backend enforces a minimum packet rate: Placement only"
    if rule.backend == SRIOV and rule.vnic_type == "direct-physical":
        return "direct-physical ports get nothing: the SR-IOV agent does not handle them"
    if rule.backend == SRIOV and rule.direction == "ingress":
        return "the SR-IOV agent writes an ingress minimum as the VF's transmit minimum (min_tx_rate): no ingress " \
               "enforcement exists"
    if rule.backend in (OVS, OVN) and rule.direction == "ingress":
        return f"{'the OVS agent' if rule.backend == OVS else 'ML2/OVN'} enforces egress minimums only"
    if rule.backend in (OVS, OVN) and rule.physical_network is None:
        return "a minimum is enforced on flat and VLAN networks only (no physical network: no queue)"
    return None


def verdict(rule: Rule, programmed: int | None) -> Verdict:
    why = unenforced(rule)
    if why:
        return Verdict(rule.port, rule.backend, PLACEMENT_ONLY, why=why)
    expected, unit = programmed_rate(rule.backend, rule.min_kbps), UNIT[rule.backend]
    if programmed is None:
        return Verdict(rule.port, rule.backend, MISSING, expected, None, unit,
                       why=f"{rule.min_kbps} kbps asked, nothing programmed")
    if programmed == expected:
        return Verdict(rule.port, rule.backend, ENFORCED, expected, programmed, unit)
    factor = programmed / expected if expected else None
    why = OVN_KBPS_BUG if rule.backend == OVN and programmed * 1000 == expected else \
        f"{rule.min_kbps} kbps asked: {expected} {unit} expected, {programmed} {unit} programmed"
    return Verdict(rule.port, rule.backend, WRONG_RATE, expected, programmed, unit, factor, why)


def compare(rules: Iterable[Rule], programmed: Mapping[str, Mapping[str, int]]) -> list[Verdict]:
    """A verdict per rule, then one per orphan: a value programmed for a port with no minimum rule.
    ``programmed``: backend → {port: programmed minimum}."""
    rules = list(rules)
    out = [verdict(r, programmed.get(r.backend, {}).get(r.port)) for r in rules]
    claimed = {(r.backend, r.port) for r in rules}
    for backend, ports in sorted(programmed.items()):
        out += [Verdict(port, backend, ORPHAN, programmed=value, unit=UNIT[backend],
                        why="programmed for no port with a minimum rule")
                for port, value in sorted(ports.items()) if (backend, port) not in claimed]
    return out


@dataclass(frozen=True)
class NicCheck:
    nic: str
    speed_kbps: int | None  # None: the driver reports none (or the link was not read)
    inventory_kbps: int | None  # what Placement admits on it, egress: (total - reserved) x allocation_ratio
    enforced_kbps: int  # the sum of the minimums programmed on it
    errors: tuple[str, ...]
    bridge: str | None = None
    provider: str | None = None  # the bridge's provider's name (None: Placement has none)
    ingress_inventory_kbps: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def nic_check(nic: str, speed_mbps: int | None, inventory_kbps: int | None, enforced_kbps: int, *,
              bridge: str | None = None, provider: str | None = None,
              ingress_inventory_kbps: int | None = None) -> NicCheck:
    """A NIC's guarantees against its link: an inventory (either direction) or enforced minimums above the link's
    speed are errors (Placement then admits guarantees the wire cannot give)."""
    speed = speed_mbps * 1000 if speed_mbps else None
    errors = []
    for direction, inventory in (("", inventory_kbps), ("ingress ", ingress_inventory_kbps)):
        if speed is not None and inventory is not None and inventory > speed:
            errors.append(f"Placement's {direction}inventory ({inventory} kbps) is above the link's speed "
                          f"({speed} kbps)")
    if speed is not None and enforced_kbps > speed:
        errors.append(f"the minimums programmed ({enforced_kbps} kbps) are above the link's speed ({speed} kbps)")
    return NicCheck(nic, speed, inventory_kbps, enforced_kbps, tuple(errors), bridge, provider,
                    ingress_inventory_kbps)


# ------------------------------------------------------------------ one host, side by side (the OVS agent)

AGENT_ROWS = "minimum_bandwidth"  # external_ids type (Queue) and _type (QoS) of the OVS agent's rows
FINDINGS = (MISSING, WRONG_RATE, ORPHAN)


@dataclass(frozen=True)
class BoundPort:
    """A port bound to the host (``binding:host_id``) whose QoS policy has minimum rules, as Neutron holds it."""

    id: str
    server: str | None  # device_id: the consumer of its allocation
    vnic_type: str
    physical_network: str | None  # its network's (None: a tunnelled network)
    rules: tuple[QosRule, ...]  # the policy's minimum rules
    policy: str | None = None
    policy_of: str = "port"  # whose policy it is: the port's, else its network's
    allocation: Mapping[str, str] = field(default_factory=dict)  # binding:profile.allocation: group -> provider


@dataclass(frozen=True)
class BridgeProvider:
    """A physical bridge's provider in Placement (Neutron's ``<hypervisor>:Open vSwitch agent:<bridge>``)."""

    uuid: str
    name: str
    inventories: Mapping[str, Mapping] | None  # class -> inventory as Placement gives it; None: no such provider


@dataclass(frozen=True)
class OvsPlane:
    """One read of a host's Open vSwitch data plane, and what it is read against. ``switch`` is a
    :class:`minbw.dataplane.ovs.Switch` and ``kernel`` maps a NIC to its :class:`minbw.dataplane.netlink.LinkTc`
    (this room reads nothing: the ops layer reads them); a NIC left out of ``kernel``: its tc was not read."""

    switch: Any
    bridges: Mapping[str, str]  # physical network -> bridge (the agent's bridge_mappings)
    kernel: Mapping[str, Any] = field(default_factory=dict)
    speeds: Mapping[str, int | None] = field(default_factory=dict)  # NIC -> Mb/s
    providers: Mapping[str, BridgeProvider] = field(default_factory=dict)  # bridge -> its provider
    integration_bridge: str = "br-int"


@dataclass(frozen=True)
class Nic:
    name: str  # the interface: the kernel's link
    bridge: str
    qos: Any  # the QoS row in its port's qos column (None: none)


def nics(switch, bridges: Iterable[str]) -> tuple[Nic, ...]:
    """The NICs of the physical bridges as the OVS agent finds them (``get_bridge_ports('')``: interfaces of type
    "", not the patch or internal ports)."""
    return tuple(Nic(i.name, b, p.qos) for b in sorted(set(bridges)) for p in switch.bridge(b).ports
                 for i in p.interfaces if i.type == "")


@dataclass(frozen=True)
class Check:
    """A bound port's minimum rule side by side (``kind`` "rule"), or an orphan: a Queue row (``kind`` "queue")
    or a QoS row (``kind`` "qos") of the agent's that no bound port's rule accounts for. ``programmed`` and
    ``kernel`` hold one entry per NIC: the queue's min-rate (bit/s) and its HTB class's rate (bit/s)."""

    kind: str
    subject: str  # the port id (rule, queue) or the QoS row's uuid
    backend: str
    verdict: str
    why: str = ""
    factor: float | None = None
    server: str | None = None
    rule: dict | None = None  # type, direction, value, unit; expected (what upstream programs) and its unit
    reserved: dict | None = None  # provider, name, class, amount, shared_by (None: Placement holds nothing)
    programmed: tuple[dict, ...] = ()  # nic, qos, queue, queue_uuid, min_rate
    kernel: tuple[dict, ...] = ()  # nic, class, rate (None: no such class)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class HostReport:
    host: str
    checks: tuple[Check, ...]
    nics: tuple[NicCheck, ...]
    not_checked: tuple[str, ...] = ()  # bound ports of a backend this check does not read, one line each

    @property
    def findings(self) -> list[Check]:
        return [c for c in self.checks if c.verdict in FINDINGS]

    @property
    def ok(self) -> bool:
        return not self.findings and not any(n.errors for n in self.nics)

    def counts(self) -> dict[str, int]:
        verdicts = [c.verdict for c in self.checks]
        return {v: verdicts.count(v) for v in (ENFORCED, MISSING, WRONG_RATE, PLACEMENT_ONLY, ORPHAN)}

    def to_dict(self) -> dict:
        return {"host": self.host, "ok": self.ok, "counts": self.counts(),
                "checks": [c.to_dict() for c in self.checks], "nics": [n.to_dict() for n in self.nics],
                "not_checked": list(self.not_checked)}


def ovs_host(host: str, ports: Sequence[BoundPort], allocations: Mapping[str, Mapping[str, Mapping[str, int]]],
             plane: OvsPlane, names: Mapping[str, str] = MappingProxyType({}),
             not_checked: Iterable[str] = ()) -> HostReport:
    """Each minimum rule of the ports bound to ``host`` on the Open vSwitch agent's data plane: what Neutron's rule
    asks, what Placement reserved (``allocations``: consumer -> provider -> class -> amount, the provider among
    those of the port's ``binding:profile.allocation``; ``names``: provider uuid -> name), the Queue whose
    ``external_ids:port`` is the port in the QoS row of each NIC of the port's physical bridge, and the NIC's HTB
    class ``1:(queue + 1)``; then the orphans (agent's Queue rows for no bound port's egress minimum, agent's QoS
    rows on no port); then per NIC its speed, Placement's inventory and the sum of the minimums enforced on it."""
    found = nics(plane.switch, plane.bridges.values())
    names = {**names, **{p.uuid: p.name for p in plane.providers.values()}}
    checks = [_rule_check(host, port, rule, ports, allocations, plane, found, names)
              for port in ports for rule in port.rules]
    queued = {c.subject for c in checks if c.verdict != PLACEMENT_ONLY}  # the ports the agent gives a queue
    checks += _orphans(host, {p.id for p in ports}, queued, plane, found)
    return HostReport(host, tuple(checks), tuple(_nic_checks(plane, found, checks)), tuple(not_checked))


def _rule_dict(port: BoundPort, rule: QosRule) -> tuple[Rule, dict]:
    r = Rule(port.id, OVS, rule.value, rule.direction, rule.type == MIN_PPS, port.vnic_type, port.physical_network)
    return r, {"type": rule.type, "direction": rule.direction, "value": rule.value, "unit": RULE_UNITS[rule.type],
               "expected": programmed_rate(OVS, rule.value), "expected_unit": UNIT[OVS], "policy": port.policy,
               "policy_of": port.policy_of}


def _reserved(port: BoundPort, rule: QosRule, ports: Sequence[BoundPort],
              allocations: Mapping[str, Mapping[str, Mapping[str, int]]],
              names: Mapping[str, str]) -> tuple[dict | None, tuple[str, ...]]:
    """What the port's server holds, of the rule's class, on the providers of its binding allocation (with the
    other ports of the server bound to the same provider for the same class: the amount is theirs together)."""
    rc = (PPS_CLASSES if rule.type == MIN_PPS else BW_CLASSES)[rule.direction]
    if not port.allocation:
        return None, ("no binding:profile.allocation: Placement reserved nothing for it (minbw audit, minbw server "
                      "heal)",)
    held = allocations.get(port.server or "", {})
    for rp in dict.fromkeys(port.allocation.values()):
        amount = held.get(rp, {}).get(rc)
        if not amount:
            continue
        shared = tuple(p.id for p in ports if p.id != port.id and p.server == port.server
                       and rp in p.allocation.values() and any(r.key == rule.key for r in p.rules))
        reserved = {"provider": rp, "name": names.get(rp), "class": rc, "amount": amount, "shared_by": list(shared)}
        asked = rule.value + sum(r.value for p in ports if p.id in shared for r in p.rules if r.key == rule.key)
        note = () if amount == asked else (f"Placement holds {amount} {RULE_UNITS[rule.type]} of {rc} for it"
                                           f"{' and the ports sharing the provider' if shared else ''}, "
                                           f"{asked} asked (minbw audit)",)
        return reserved, note
    return None, (f"its server {port.server} holds no {rc} on the provider(s) of its binding:profile.allocation "
                  f"({', '.join(names.get(rp, rp) for rp in dict.fromkeys(port.allocation.values()))}): minbw audit",)


def _rule_check(host: str, port: BoundPort, rule: QosRule, ports: Sequence[BoundPort], allocations, plane: OvsPlane,
                found: Sequence[Nic], names: Mapping[str, str]) -> Check:
    r, asks = _rule_dict(port, rule)
    reserved, notes = _reserved(port, rule, ports, allocations, names)
    base = {"kind": "rule", "subject": port.id, "backend": OVS, "server": port.server, "rule": asks,
            "reserved": reserved}
    why = unenforced(r)
    if why:
        return Check(verdict=PLACEMENT_ONLY, why=why, notes=notes,
                     **{**base, "rule": {**asks, "expected": None, "expected_unit": None}})
    bridge = plane.bridges.get(port.physical_network)
    if bridge is None:
        return Check(verdict=MISSING, notes=notes, **base,
                     why=f"the agent on {host} maps no bridge to physical network {port.physical_network} "
                         f"(bridge_mappings: {_mappings(plane.bridges)})")
    mine = [n for n in found if n.bridge == bridge]
    if not mine:
        return Check(verdict=MISSING, notes=notes, **base,
                     why=f"bridge {bridge} has no NIC (no port with an interface of type \"\")")
    programmed = tuple(_queue_on(n, port.id) for n in mine)
    kernel = tuple(_class_on(plane, p) for p in programmed if p["queue"] is not None and p["nic"] in plane.kernel)
    notes += _plugged(plane, port.id, programmed)
    verdicts = {p["nic"]: verdict(r, p["min_rate"]) for p in programmed}
    missing = [nic for nic, v in verdicts.items() if v.verdict == MISSING]
    wrong = [(nic, v) for nic, v in verdicts.items() if v.verdict == WRONG_RATE]
    checked = dict(verdict=MISSING, programmed=programmed, kernel=kernel, notes=notes, **base)
    if missing:
        return Check(why=f"{rule.value} kbps asked: " + "; ".join(_why_no_queue(plane, n, port.id) for n in mine
                                                                   if n.name in missing), **checked)
    if wrong:
        nic, v = wrong[0]
        return Check(**{**checked, "verdict": WRONG_RATE}, factor=v.factor, why=f"{v.why} (queue on {nic})")
    expected = htb_rate(programmed_rate(OVS, rule.value))
    for k in kernel:
        if k["rate"] is None:
            return Check(**checked, why=f"queue {_queue_of(programmed, k['nic'])} is in OVSDB, but {k['nic']} has "
                                        f"no HTB class {k['class']}: ovs-vswitchd has not applied it")
        if k["rate"] != expected:
            return Check(**{**checked, "verdict": WRONG_RATE}, factor=k["rate"] / expected,
                         why=f"the kernel's HTB class {k['class']} on {k['nic']} has {k['rate']} bit/s, {expected} "
                             f"bit/s expected")
    return Check(**{**checked, "verdict": ENFORCED})


def _mappings(bridges: Mapping[str, str]) -> str:
    return ", ".join(f"{p}:{b}" for p, b in sorted(bridges.items())) or "none"


def _queue_on(nic: Nic, port: str) -> dict:
    """The queue of ``port`` in the QoS row on ``nic`` (queue, min_rate None: none)."""
    qos = nic.qos
    for number, queue in (qos.queues.items() if qos is not None else ()):
        if queue.external_ids.get("port") == port:
            return {"nic": nic.name, "qos": qos.uuid, "queue": number, "queue_uuid": queue.uuid,
                    "min_rate": queue.min_rate}
    return {"nic": nic.name, "qos": qos.uuid if qos is not None else None, "queue": None, "queue_uuid": None,
            "min_rate": None}


def _queue_of(programmed: Sequence[dict], nic: str) -> int | None:
    return next(p["queue"] for p in programmed if p["nic"] == nic)


def _class_on(plane: OvsPlane, programmed: dict) -> dict:
    """The HTB class of a queue on its NIC (queue N: class 1:(N+1), tc's hexadecimal)."""
    classid = f"1:{programmed['queue'] + 1:x}"
    seen = plane.kernel[programmed["nic"]]
    rate = next((c.rate for c in seen.classes if c.classid == classid), None)
    return {"nic": programmed["nic"], "class": classid, "rate": rate}


def _why_no_queue(plane: OvsPlane, nic: Nic, port: str) -> str:
    """Why ``nic`` holds no queue for ``port``: no QoS row on it, or one without the port's queue; and where the
    port's Queue rows are, if anywhere (a QoS row detached from the NICs, e.g.)."""
    said = (f"{nic.name} has no QoS row (its port's qos column is empty)" if nic.qos is None
            else f"the QoS row on {nic.name} ({nic.qos.uuid}) has no queue for it")
    queues = [q for q in plane.switch.queues if q.external_ids.get("port") == port]
    for q in queues:
        holders = [s for s in plane.switch.qos if any(v.uuid == q.uuid for v in s.queues.values())]
        where = ", ".join(f"{s.uuid} on {', '.join(s.ports) or 'no port'}" for s in holders) or "no QoS row"
        said += f"; its Queue row {q.uuid} (min-rate {q.min_rate}) is in {where}"
    return said if queues else said + "; no Queue row names it"


def _plugged(plane: OvsPlane, port: str, programmed: Sequence[dict]) -> tuple[str, ...]:
    """A note when the port is not on the integration bridge, or its queue number is not its ofport there (the
    agent's flows send its packets to the queue numbered by its ofport)."""
    try:
        bridge = plane.switch.bridge(plane.integration_bridge)
    except InvalidInput:
        return ()
    ofports = [i.ofport for p in bridge.ports for i in p.interfaces if i.iface_id == port]
    if not ofports:
        return (f"the port is not plugged on {plane.integration_bridge} (no interface with external_ids:iface-id "
                f"= the port)",)
    return tuple(f"queue {p['queue']} on {p['nic']}, but the port's ofport on {plane.integration_bridge} is "
                 f"{ofports[0]}: the agent's flows pick queue {ofports[0]}" for p in programmed
                 if p["queue"] is not None and p["queue"] != ofports[0])


def _orphans(host: str, bound: set[str], queued: set[str], plane: OvsPlane, found: Sequence[Nic]) -> list[Check]:
    """The agent's Queue rows for no bound port's enforced minimum (``queued``: the ports that should have one),
    and its QoS rows on no port."""
    out = []
    for q in plane.switch.queues:
        port = q.external_ids.get("port")
        if q.external_ids.get("type") != AGENT_ROWS or port in queued:
            continue
        programmed = tuple({"nic": n.name, "qos": n.qos.uuid, "queue": k, "queue_uuid": q.uuid, "min_rate": q.min_rate}
                           for n in found if n.qos is not None for k, v in n.qos.queues.items() if v.uuid == q.uuid)
        kernel = tuple(_class_on(plane, p) for p in programmed if p["nic"] in plane.kernel)
        why = (f"port {port} is bound to {host} but has no egress minimum the agent enforces" if port in bound
               else f"port {port} is not bound to {host} (deleted, or moved away) and its queue stayed")
        reach = f"; it reaches {', '.join(p['nic'] for p in programmed)}" if programmed else \
            "; it is in no QoS row on a NIC"
        out.append(Check("queue", port or q.uuid, OVS, ORPHAN, why + reach, programmed=programmed, kernel=kernel))
    for s in plane.switch.qos:
        if s.external_ids.get("_type") != AGENT_ROWS or s.ports:
            continue
        held = ", ".join(f"{k}={v.external_ids.get('port')}" for k, v in s.queues.items()) or "none"
        out.append(Check("qos", s.uuid, OVS, ORPHAN,
                         f"a minimum bandwidth QoS row on no port (queues: {held}): left by an earlier agent run "
                         f"(each start of the agent draws a new QoS id: neutron >= 21.0.0), or detached from the "
                         f"NICs"))
    return out


def _nic_checks(plane: OvsPlane, found: Sequence[Nic], checks: Sequence[Check]) -> list[NicCheck]:
    out = []
    for n in found:
        enforced = sum(c.rule["value"] for c in checks if c.kind == "rule" and c.verdict == ENFORCED
                       and any(p["nic"] == n.name for p in c.programmed))
        provider = plane.providers.get(n.bridge)
        stocks = stocks_of(provider.uuid, provider.inventories, None) if provider and provider.inventories else {}
        capacity = {rc: s.capacity for rc, s in stocks.items()}
        out.append(nic_check(n.name, plane.speeds.get(n.name), capacity.get(BW_EGRESS), enforced, bridge=n.bridge,
                             provider=provider.name if provider and provider.inventories is not None else None,
                             ingress_inventory_kbps=capacity.get(BW_INGRESS)))
    return out
