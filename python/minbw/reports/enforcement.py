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

One host, side by side (``minbw enforcement show``), each minimum rule of the ports bound there beside Placement's
reservation and what the backend programmed, the orphans, and each NIC against its link:

- :func:`ovs_host`: the Open vSwitch agent's queue (OVSDB) and the kernel's HTB class (tc);
- :func:`ovn_host`: ML2/OVN's ``options:qos_min_rate`` (northbound), the NICs ovn-controller shapes (the
  interfaces of the mapped bridges marked ``external_ids:ovn-egress-iface=true``) and on each the kernel's HTB class
  of the port's southbound ``qdisc_queue_id``;
- :func:`sriov_host`: the SR-IOV agent's ``min_tx_rate`` of the port's VF (netlink), the VF found by the port's
  ``binding:profile.pci_slot`` as the agent finds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from types import MappingProxyType
from typing import Any

from minbw.errors import InvalidInput
from minbw.model.providers import stocks_of
from minbw.neutron.naming import BW_CLASSES, BW_EGRESS, BW_INGRESS, PPS_CLASSES
from minbw.neutron.qos import MIN_PPS, RULE_UNITS, QosRule

OVS, SRIOV, OVN = "openvswitch", "sriov", "ovn"
UNIT = {OVS: "bit/s", OVN: "bit/s", SRIOV: "Mbps"}
ENFORCED, MISSING, WRONG_RATE, ORPHAN, PLACEMENT_ONLY = "enforced", "missing", "wrong rate", "orphan", "placement-only"
OVN_KBPS_BUG = (
    "qos_min_rate holds the kbps number, 1,000 times too little: ML2/OVN wrote kbps where OVN reads "
    "bit/s, Neutron 21.0.0 to 25.x (fixed in 26.0.0)"
)


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
        """The verdict as a JSON-ready dict of its fields."""
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
        return (
            "the SR-IOV agent writes an ingress minimum as the VF's transmit minimum (min_tx_rate): no ingress "
            "enforcement exists"
        )
    if rule.backend in (OVS, OVN) and rule.direction == "ingress":
        return f"{'the OVS agent' if rule.backend == OVS else 'ML2/OVN'} enforces egress minimums only"
    if rule.backend in (OVS, OVN) and rule.physical_network is None:
        return "a minimum is enforced on flat and VLAN networks only (no physical network: no queue)"
    return None


def verdict(rule: Rule, programmed: int | None) -> Verdict:
    """The rule against what the backend programmed (``programmed`` in its unit; None: nothing), a Verdict:
    placement-only when upstream enforces nothing, else missing, enforced or wrong rate (with the factor and why)."""
    why = unenforced(rule)
    if why:
        return Verdict(rule.port, rule.backend, PLACEMENT_ONLY, why=why)
    expected, unit = programmed_rate(rule.backend, rule.min_kbps), UNIT[rule.backend]
    if programmed is None:
        return Verdict(
            rule.port,
            rule.backend,
            MISSING,
            expected,
            None,
            unit,
            why=f"{rule.min_kbps} kbps asked, nothing programmed",
        )
    if programmed == expected:
        return Verdict(rule.port, rule.backend, ENFORCED, expected, programmed, unit)
    factor = programmed / expected if expected else None
    why = (
        OVN_KBPS_BUG
        if rule.backend == OVN and programmed * 1000 == expected
        else f"{rule.min_kbps} kbps asked: {expected} {unit} expected, {programmed} {unit} programmed"
    )
    return Verdict(rule.port, rule.backend, WRONG_RATE, expected, programmed, unit, factor, why)


@dataclass(frozen=True)
class NicCheck:
    nic: str | None  # None: a bridge with no NIC ovn-controller shapes (ML2/OVN)
    speed_kbps: int | None  # None: the driver reports none (or the link was not read)
    inventory_kbps: int | None  # what Placement admits on it, egress: (total - reserved) x allocation_ratio
    enforced_kbps: int  # the sum of the minimums programmed on it
    errors: tuple[str, ...]
    bridge: str | None = None
    provider: str | None = None  # the bridge's provider's name (None: Placement has none)
    ingress_inventory_kbps: int | None = None
    physical_network: str | None = None  # the SR-IOV agent's PFs: the physical network it maps the PF to

    def to_dict(self) -> dict:
        """The NIC check as a JSON-ready dict of its fields."""
        return asdict(self)


def nic_check(
    nic: str,
    speed_mbps: int | None,
    inventory_kbps: int | None,
    enforced_kbps: int,
    *,
    bridge: str | None = None,
    provider: str | None = None,
    ingress_inventory_kbps: int | None = None,
    physical_network: str | None = None,
) -> NicCheck:
    """A NIC's guarantees against its link: an inventory (either direction) or enforced minimums above the link's
    speed are errors (Placement then admits guarantees the wire cannot give)."""
    speed = speed_mbps * 1000 if speed_mbps else None
    errors = []
    for direction, inventory in (("", inventory_kbps), ("ingress ", ingress_inventory_kbps)):
        if speed is not None and inventory is not None and inventory > speed:
            errors.append(
                f"Placement's {direction}inventory ({inventory} kbps) is above the link's speed ({speed} kbps)"
            )
    if speed is not None and enforced_kbps > speed:
        errors.append(f"the minimums programmed ({enforced_kbps} kbps) are above the link's speed ({speed} kbps)")
    return NicCheck(
        nic,
        speed,
        inventory_kbps,
        enforced_kbps,
        tuple(errors),
        bridge,
        provider,
        ingress_inventory_kbps,
        physical_network,
    )


# ------------------------------------------------------------------ one host, side by side: what every backend shares

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
    pci_slot: str | None = None  # binding:profile.pci_slot: the VF Nova gave an SR-IOV port


@dataclass(frozen=True)
class BridgeProvider:
    """A physical bridge's or PF's provider in Placement (Neutron's ``<hypervisor>:<agent type>:<device>``)."""

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
    return tuple(
        Nic(i.name, b, p.qos)
        for b in sorted(set(bridges))
        for p in switch.bridge(b).ports
        for i in p.interfaces
        if i.type == ""
    )


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
        """The check (a rule or an orphan) as a JSON-ready dict of its fields."""
        return asdict(self)


@dataclass(frozen=True)
class HostReport:
    host: str
    checks: tuple[Check, ...]
    nics: tuple[NicCheck, ...]
    not_checked: tuple[str, ...] = ()  # bound ports of a backend this check does not read, one line each
    backend: str = OVS

    @property
    def findings(self) -> list[Check]:
        """The checks whose verdict is a finding (missing, wrong rate, orphan), in order."""
        return [c for c in self.checks if c.verdict in FINDINGS]

    @property
    def ok(self) -> bool:
        """Whether the host is clean: no finding and no NIC error."""
        return not self.findings and not any(n.errors for n in self.nics)

    def counts(self) -> dict[str, int]:
        """How many checks have each verdict: a dict enforced, missing, wrong rate, placement-only, orphan → count."""
        verdicts = [c.verdict for c in self.checks]
        return {v: verdicts.count(v) for v in (ENFORCED, MISSING, WRONG_RATE, PLACEMENT_ONLY, ORPHAN)}

    def to_dict(self) -> dict:
        """The host's report as a JSON-ready dict: host, backend, ok, counts, checks, nics, not_checked."""
        return {
            "host": self.host,
            "backend": self.backend,
            "ok": self.ok,
            "counts": self.counts(),
            "checks": [c.to_dict() for c in self.checks],
            "nics": [n.to_dict() for n in self.nics],
            "not_checked": list(self.not_checked),
        }


def ovs_host(
    host: str,
    ports: Sequence[BoundPort],
    allocations: Mapping[str, Mapping[str, Mapping[str, int]]],
    plane: OvsPlane,
    names: Mapping[str, str] = MappingProxyType({}),
    not_checked: Iterable[str] = (),
    bound: Iterable[str] | None = None,
) -> HostReport:
    """Each minimum rule of the ports bound to ``host`` on the Open vSwitch agent's data plane: what Neutron's rule
    asks, what Placement reserved (``allocations``: consumer -> provider -> class -> amount, the provider among
    those of the port's ``binding:profile.allocation``; ``names``: provider uuid -> name), the Queue whose
    ``external_ids:port`` is the port in the QoS row of each NIC of the port's physical bridge, and the NIC's HTB
    class ``1:(queue + 1)``; then the orphans (agent's Queue rows for no bound port's egress minimum, agent's QoS
    rows on no port); then per NIC its speed, Placement's inventory and the sum of the minimums enforced on it.
    ``bound``: every port bound to the host (default: ``ports``, those with minimum rules)."""
    found = nics(plane.switch, plane.bridges.values())
    names = {**names, **{p.uuid: p.name for p in plane.providers.values()}}
    checks = [
        _rule_check(host, port, rule, ports, allocations, plane, found, names) for port in ports for rule in port.rules
    ]
    queued = {c.subject for c in checks if c.verdict != PLACEMENT_ONLY}  # the ports the agent gives a queue
    checks += _orphans(host, set(bound if bound is not None else (p.id for p in ports)), queued, plane, found)
    return HostReport(host, tuple(checks), tuple(_nic_checks(plane, found, checks)), tuple(not_checked))


def _rule_dict(port: BoundPort, rule: QosRule, backend: str = OVS) -> tuple[Rule, dict]:
    r = Rule(port.id, backend, rule.value, rule.direction, rule.type == MIN_PPS, port.vnic_type, port.physical_network)
    return r, {
        "type": rule.type,
        "direction": rule.direction,
        "value": rule.value,
        "unit": RULE_UNITS[rule.type],
        "expected": programmed_rate(backend, rule.value),
        "expected_unit": UNIT[backend],
        "policy": port.policy,
        "policy_of": port.policy_of,
    }


def _sides(
    port: BoundPort, rule: QosRule, backend: str, ports: Sequence[BoundPort], allocations, names: Mapping[str, str]
) -> tuple[Rule, dict, dict, tuple[str, ...]]:
    """A rule's check so far: the Rule, what it asks, the Check's fields every verdict has (the rule, Placement's
    side) and Placement's notes."""
    r, asks = _rule_dict(port, rule, backend)
    reserved, notes = _reserved(port, rule, ports, allocations, names)
    return (
        r,
        asks,
        {
            "kind": "rule",
            "subject": port.id,
            "backend": backend,
            "server": port.server,
            "rule": asks,
            "reserved": reserved,
        },
        notes,
    )


def _placement_only(base: dict, asks: dict, why: str, notes: tuple[str, ...], **more) -> Check:
    return Check(
        verdict=PLACEMENT_ONLY,
        why=why,
        notes=notes,
        **{**base, "rule": {**asks, "expected": None, "expected_unit": None}},
        **more,
    )


def _reserved(
    port: BoundPort,
    rule: QosRule,
    ports: Sequence[BoundPort],
    allocations: Mapping[str, Mapping[str, Mapping[str, int]]],
    names: Mapping[str, str],
) -> tuple[dict | None, tuple[str, ...]]:
    """What the port's server holds, of the rule's class, on the providers of its binding allocation (with the
    other ports of the server bound to the same provider for the same class: the amount is theirs together)."""
    rc = (PPS_CLASSES if rule.type == MIN_PPS else BW_CLASSES)[rule.direction]
    if not port.allocation:
        return None, (
            "no binding:profile.allocation: Placement reserved nothing for it (minbw audit, minbw server heal)",
        )
    held = allocations.get(port.server or "", {})
    for rp in dict.fromkeys(port.allocation.values()):
        amount = held.get(rp, {}).get(rc)
        if not amount:
            continue
        shared = tuple(
            p.id
            for p in ports
            if p.id != port.id
            and p.server == port.server
            and rp in p.allocation.values()
            and any(r.key == rule.key for r in p.rules)
        )
        reserved = {"provider": rp, "name": names.get(rp), "class": rc, "amount": amount, "shared_by": list(shared)}
        asked = rule.value + sum(r.value for p in ports if p.id in shared for r in p.rules if r.key == rule.key)
        note = (
            ()
            if amount == asked
            else (
                f"Placement holds {amount} {RULE_UNITS[rule.type]} of {rc} for it"
                f"{' and the ports sharing the provider' if shared else ''}, "
                f"{asked} asked (minbw audit)",
            )
        )
        return reserved, note
    return None, (
        f"its server {port.server} holds no {rc} on the provider(s) of its binding:profile.allocation "
        f"({', '.join(names.get(rp, rp) for rp in dict.fromkeys(port.allocation.values()))}): minbw audit",
    )


def _rule_check(
    host: str,
    port: BoundPort,
    rule: QosRule,
    ports: Sequence[BoundPort],
    allocations,
    plane: OvsPlane,
    found: Sequence[Nic],
    names: Mapping[str, str],
) -> Check:
    r, asks, base, notes = _sides(port, rule, OVS, ports, allocations, names)
    why = unenforced(r)
    if why:
        return _placement_only(base, asks, why, notes)
    bridge = plane.bridges.get(port.physical_network or "")
    if bridge is None:
        return Check(
            verdict=MISSING,
            notes=notes,
            **base,
            why=f"the agent on {host} maps no bridge to physical network {port.physical_network} "
            f"(bridge_mappings: {_mappings(plane.bridges)})",
        )
    mine = [n for n in found if n.bridge == bridge]
    if not mine:
        return Check(
            verdict=MISSING,
            notes=notes,
            **base,
            why=f"bridge {bridge} has no NIC (no port with an interface of type \"\")",
        )
    programmed = tuple(_queue_on(n, port.id) for n in mine)
    kernel = tuple(_class_on(plane, p) for p in programmed if p["queue"] is not None and p["nic"] in plane.kernel)
    notes += _plugged(plane, port.id, programmed)
    verdicts = {p["nic"]: verdict(r, p["min_rate"]) for p in programmed}
    missing = [nic for nic, v in verdicts.items() if v.verdict == MISSING]
    wrong = [(nic, v) for nic, v in verdicts.items() if v.verdict == WRONG_RATE]
    checked = dict(verdict=MISSING, programmed=programmed, kernel=kernel, notes=notes, **base)
    if missing:
        return Check(
            why=f"{rule.value} kbps asked: "
            + "; ".join(_why_no_queue(plane, n, port.id) for n in mine if n.name in missing),
            **checked,
        )
    if wrong:
        nic, v = wrong[0]
        return Check(**{**checked, "verdict": WRONG_RATE}, factor=v.factor, why=f"{v.why} (queue on {nic})")
    return _kernel_verdict(
        checked,
        htb_rate(programmed_rate(OVS, rule.value)),
        lambda k: (
            f"queue {_queue_of(programmed, k['nic'])} is in OVSDB, but {k['nic']} has no HTB class {k['class']}: "
            f"ovs-vswitchd has not applied it"
        ),
    )


def _kernel_verdict(checked: dict, rate: int, absent: Callable[[dict], str]) -> Check:
    """The verdict of a rule its backend programmed right, from the kernel's classes (``checked["kernel"]``):
    enforced when each is there at ``rate`` (bit/s); missing, with ``absent(class)``, when one is not there."""
    for k in checked["kernel"]:
        if k["rate"] is None:
            return Check(**checked, why=absent(k))
        if k["rate"] != rate:
            return Check(
                **{**checked, "verdict": WRONG_RATE},
                factor=k["rate"] / rate,
                why=f"the kernel's HTB class {k['class']} on {k['nic']} has {k['rate']} bit/s, {rate} bit/s expected",
            )
    return Check(**{**checked, "verdict": ENFORCED})


def _mappings(bridges: Mapping[str, str]) -> str:
    return ", ".join(f"{p}:{b}" for p, b in sorted(bridges.items())) or "none"


def _queue_on(nic: Nic, port: str) -> dict:
    """The queue of ``port`` in the QoS row on ``nic`` (queue, min_rate None: none)."""
    qos = nic.qos
    for number, queue in qos.queues.items() if qos is not None else ():
        if queue.external_ids.get("port") == port:
            return {
                "nic": nic.name,
                "qos": qos.uuid,
                "queue": number,
                "queue_uuid": queue.uuid,
                "min_rate": queue.min_rate,
            }
    return {
        "nic": nic.name,
        "qos": qos.uuid if qos is not None else None,
        "queue": None,
        "queue_uuid": None,
        "min_rate": None,
    }


def _queue_of(programmed: Sequence[dict], nic: str) -> int | None:
    return next(p["queue"] for p in programmed if p["nic"] == nic)


def _class_on(plane: OvsPlane | OvnPlane, programmed: dict) -> dict:
    """The HTB class of a queue on its NIC (queue N: class 1:(N+1), tc's hexadecimal)."""
    classid = f"1:{programmed['queue'] + 1:x}"
    seen = plane.kernel[programmed["nic"]]
    rate = next((c.rate for c in seen.classes if c.classid == classid), None)
    return {"nic": programmed["nic"], "class": classid, "rate": rate}


def _why_no_queue(plane: OvsPlane, nic: Nic, port: str) -> str:
    """Why ``nic`` holds no queue for ``port``: no QoS row on it, or one without the port's queue; and where the
    port's Queue rows are, if anywhere (a QoS row detached from the NICs, e.g.)."""
    said = (
        f"{nic.name} has no QoS row (its port's qos column is empty)"
        if nic.qos is None
        else f"the QoS row on {nic.name} ({nic.qos.uuid}) has no queue for it"
    )
    queues = [q for q in plane.switch.queues if q.external_ids.get("port") == port]
    for q in queues:
        holders = [s for s in plane.switch.qos if any(v.uuid == q.uuid for v in s.queues.values())]
        where = ", ".join(f"{s.uuid} on {', '.join(s.ports) or 'no port'}" for s in holders) or "no QoS row"
        said += f"; its Queue row {q.uuid} (min-rate {q.min_rate}) is in {where}"
    return said if queues else said + "; no Queue row names it"


def _ofports(switch, integration_bridge: str, port: str) -> list[int | None] | None:
    """The port's ofports on the integration bridge (its interfaces whose ``external_ids:iface-id`` is the port,
    as os-vif plugs it); None: that bridge was not read."""
    try:
        bridge = switch.bridge(integration_bridge)
    except InvalidInput:
        return None
    return [i.ofport for p in bridge.ports for i in p.interfaces if i.iface_id == port]


def _not_plugged(integration_bridge: str) -> str:
    return f"the port is not plugged on {integration_bridge} (no interface with external_ids:iface-id = the port)"


def _plugged(plane: OvsPlane, port: str, programmed: Sequence[dict]) -> tuple[str, ...]:
    """A note when the port is not on the integration bridge, or its queue number is not its ofport there (the
    agent's flows send its packets to the queue numbered by its ofport)."""
    ofports = _ofports(plane.switch, plane.integration_bridge, port)
    if ofports is None:
        return ()
    if not ofports:
        return (_not_plugged(plane.integration_bridge),)
    return tuple(
        f"queue {p['queue']} on {p['nic']}, but the port's ofport on {plane.integration_bridge} is "
        f"{ofports[0]}: the agent's flows pick queue {ofports[0]}"
        for p in programmed
        if p["queue"] is not None and p["queue"] != ofports[0]
    )


def _orphans(host: str, bound: set[str], queued: set[str], plane: OvsPlane, found: Sequence[Nic]) -> list[Check]:
    """The agent's Queue rows for no bound port's enforced minimum (``queued``: the ports that should have one),
    and its QoS rows on no port."""
    out = []
    for q in plane.switch.queues:
        port = q.external_ids.get("port")
        if q.external_ids.get("type") != AGENT_ROWS or port in queued:
            continue
        programmed = tuple(
            {"nic": n.name, "qos": n.qos.uuid, "queue": k, "queue_uuid": q.uuid, "min_rate": q.min_rate}
            for n in found
            if n.qos is not None
            for k, v in n.qos.queues.items()
            if v.uuid == q.uuid
        )
        kernel = tuple(_class_on(plane, p) for p in programmed if p["nic"] in plane.kernel)
        why = (
            f"port {port} is bound to {host} but has no egress minimum the agent enforces"
            if port in bound
            else f"port {port} is not bound to {host} (deleted, or moved away) and its queue stayed"
        )
        reach = (
            f"; it reaches {', '.join(p['nic'] for p in programmed)}"
            if programmed
            else "; it is in no QoS row on a NIC"
        )
        out.append(Check("queue", port or q.uuid, OVS, ORPHAN, why + reach, programmed=programmed, kernel=kernel))
    for s in plane.switch.qos:
        if s.external_ids.get("_type") != AGENT_ROWS or s.ports:
            continue
        held = ", ".join(f"{k}={v.external_ids.get('port')}" for k, v in s.queues.items()) or "none"
        out.append(
            Check(
                "qos",
                s.uuid,
                OVS,
                ORPHAN,
                f"a minimum bandwidth QoS row on no port (queues: {held}): left by an earlier agent run "
                f"(each start of the agent draws a new QoS id: neutron >= 21.0.0), or detached from the "
                f"NICs",
            )
        )
    return out


def _nic_checks(plane: OvsPlane, found: Sequence[Nic], checks: Sequence[Check]) -> list[NicCheck]:
    out = []
    for n in found:
        enforced = sum(
            c.rule["value"]
            for c in checks
            if c.kind == "rule"
            and c.rule is not None
            and c.verdict == ENFORCED
            and any(p["nic"] == n.name for p in c.programmed)
        )
        egress, more = _admits(plane.providers.get(n.bridge))
        out.append(nic_check(n.name, plane.speeds.get(n.name), egress, enforced, bridge=n.bridge, **more))
    return out


def _admits(provider: BridgeProvider | None) -> tuple[int | None, dict]:
    """What Placement admits on a device's provider, egress, and the ingress and the provider's name as
    :func:`nic_check`'s keywords: ``(total - reserved) x allocation_ratio`` of each class (None: no inventory)."""
    stocks = stocks_of(provider.uuid, provider.inventories, None) if provider and provider.inventories else {}
    capacity = {rc: s.capacity for rc, s in stocks.items()}
    return capacity.get(BW_EGRESS), {
        "provider": provider.name if provider and provider.inventories is not None else None,
        "ingress_inventory_kbps": capacity.get(BW_INGRESS),
    }


# ------------------------------------------------------------------ one host of ML2/OVN

EGRESS_IFACE = "ovn-egress-iface"  # the Interface external_ids key ovn-controller shapes on (controller/binding.c)
OVN_INT_MAX = 2**31 - 1  # OVN before 23.06 reads qos_min_rate with smap_get_int: a larger value reads as 0
OVN_RECOMPUTE_BUG = (
    "ovn-controller's full recompute (its start, ovn-appctl recompute) removes the ports' classes "
    "from a localnet bridge's egress NIC until the port's row changes: OVN 22.06 to 23.03, the tc "
    "path (gone in 23.06)"
)


@dataclass(frozen=True)
class OvnPlane:
    """One read of an ML2/OVN host, and what it is read against: its Open vSwitch database (``switch``, a
    :class:`minbw.dataplane.ovs.Switch` with the bridges of ``ovn-bridge-mappings`` and the integration bridge) and
    the northbound ``Logical_Switch_Port`` rows of the ports bound there (``northbound``, a
    :class:`minbw.dataplane.ovn.Northbound`); the speed of each NIC ovn-controller shapes, each bridge's provider;
    ``kernel``: each such NIC's :class:`minbw.dataplane.netlink.LinkTc` (a NIC left out: its tc was not read) and
    ``queues``: port -> the ``qdisc_queue_id`` of its southbound ``Port_Binding`` (ovn-controller's queue N, class
    ``1:(N+1)``)."""

    switch: Any
    northbound: Any
    bridges: Mapping[str, str]  # physical network -> bridge (the chassis's ovn-bridge-mappings)
    speeds: Mapping[str, int | None] = field(default_factory=dict)  # NIC -> Mb/s
    providers: Mapping[str, BridgeProvider] = field(default_factory=dict)  # bridge -> its provider
    integration_bridge: str = "br-int"
    kernel: Mapping[str, Any] = field(default_factory=dict)
    queues: Mapping[str, int] = field(default_factory=dict)


def egress_nics(switch, bridges: Iterable[str]) -> tuple[Nic, ...]:
    """The NICs ovn-controller shapes: the interfaces of the mapped bridges marked
    ``external_ids:ovn-egress-iface=true`` (``add_localnet_egress_interface_mappings``, ``smap_get_bool``: "true"
    in any case)."""
    return tuple(
        Nic(i.name, b, p.qos)
        for b in sorted(set(bridges))
        for p in switch.bridge(b).ports
        for i in p.interfaces
        if i.external_ids.get(EGRESS_IFACE, "").lower() == "true"
    )


def ovn_host(
    host: str,
    ports: Sequence[BoundPort],
    allocations: Mapping[str, Mapping[str, Mapping[str, int]]],
    plane: OvnPlane,
    names: Mapping[str, str] = MappingProxyType({}),
    not_checked: Iterable[str] = (),
    bound: Iterable[str] | None = None,
) -> HostReport:
    """Each minimum rule of the ports bound to ``host`` on ML2/OVN: what Neutron's rule asks, what Placement
    reserved, the port's ``Logical_Switch_Port`` ``options:qos_min_rate`` (bit/s, min_kbps x 1000 as Neutron
    >= 26.0.0 writes it; the kbps number itself is Neutron < 26.0.0's bug), whether ovn-controller has a NIC to
    shape it on (an interface of the port's bridge marked ``ovn-egress-iface``) and, where the kernel was read, the
    HTB class ``1:(N+1)`` of the port's ``qdisc_queue_id`` N on each such NIC at ``htb_rate``; then the orphans (the
    ``qos_min_rate`` of a port bound there that has no egress minimum ML2/OVN writes); then per NIC ovn-controller
    shapes its speed, Placement's inventory and the minimums enforced, and each bridge Placement admits egress
    bandwidth on without such a NIC. ``bound``: every port bound to the host (default: ``ports``)."""
    found = egress_nics(plane.switch, plane.bridges.values())
    names = {**names, **{p.uuid: p.name for p in plane.providers.values()}}
    checks = [
        _ovn_rule_check(host, port, rule, ports, allocations, plane, found, names)
        for port in ports
        for rule in port.rules
    ]
    written = {c.subject for c in checks if c.verdict != PLACEMENT_ONLY}  # the ports Neutron writes a minimum for
    bound = set(bound if bound is not None else (p.id for p in ports))
    checks += [
        Check(
            "lsp",
            lsp.name,
            OVN,
            ORPHAN,
            programmed=(_lsp(lsp),),
            why=f"its Logical_Switch_Port holds options:qos_min_rate {lsp.qos_min_rate} bit/s, but the port "
            f"has no egress minimum ML2/OVN writes (on a flat or VLAN network): ovn-controller gives it "
            f"a queue no rule asks for",
        )
        for lsp in plane.northbound.ports
        if lsp.qos_min_rate is not None and lsp.name in bound and lsp.name not in written
    ]
    bridge_of = {p.id: plane.bridges.get(p.physical_network or "") for p in ports}
    return HostReport(
        host, tuple(checks), tuple(_ovn_nic_checks(plane, found, checks, bridge_of)), tuple(not_checked), OVN
    )


def _lsp(lsp) -> dict:
    return {
        "lsp": lsp.name,
        "qos_min_rate": lsp.qos_min_rate,
        "qos_max_rate": lsp.qos_max_rate,
        "qos_burst": lsp.qos_burst,
    }


def _ovn_rule_check(
    host: str,
    port: BoundPort,
    rule: QosRule,
    ports: Sequence[BoundPort],
    allocations,
    plane: OvnPlane,
    found: Sequence[Nic],
    names: Mapping[str, str],
) -> Check:
    r, asks, base, notes = _sides(port, rule, OVN, ports, allocations, names)
    why = unenforced(r)
    if why:
        return _placement_only(base, asks, why, notes)
    lsp = plane.northbound.port(port.id)
    ofports = _ofports(plane.switch, plane.integration_bridge, port.id)
    notes += (_not_plugged(plane.integration_bridge),) if ofports == [] else ()  # ovn-controller binds it once plugged
    expected = programmed_rate(OVN, rule.value)
    if expected > OVN_INT_MAX:
        notes += (
            f"OVN before 23.06 reads a qos_min_rate above {OVN_INT_MAX} bit/s as 0 (no queue): an "
            f"ovn-controller older than 23.06 does not enforce it",
        )
    bridge = plane.bridges.get(port.physical_network or "")
    mine = [n for n in found if n.bridge == bridge and n.name in plane.kernel]  # the egress NICs whose tc was read
    queue = plane.queues.get(port.id)
    kernel = tuple(_class_on(plane, {"nic": n.name, "queue": queue}) for n in mine) if queue is not None else ()
    checked = dict(verdict=MISSING, programmed=(_lsp(lsp),) if lsp else (), kernel=kernel, notes=notes, **base)
    if lsp is None:
        return Check(
            why=f"{rule.value} kbps asked: the northbound database has no Logical_Switch_Port for the port "
            f"(Neutron's and OVN's databases differ: neutron-ovn-db-sync-util)",
            **checked,
        )
    v = verdict(r, lsp.qos_min_rate)
    if v.verdict == MISSING:
        return Check(why=f"{rule.value} kbps asked: its Logical_Switch_Port has no options:qos_min_rate", **checked)
    if v.verdict == WRONG_RATE:
        return Check(**{**checked, "verdict": WRONG_RATE}, factor=v.factor, why=v.why)
    if bridge is None:
        return Check(
            why=f"the chassis maps no bridge to physical network {port.physical_network} "
            f"(ovn-bridge-mappings: {_mappings(plane.bridges)}): ovn-controller has no NIC to shape it on",
            **checked,
        )
    if not [n for n in found if n.bridge == bridge]:
        return Check(
            why=f"its Logical_Switch_Port asks {expected} bit/s, but no interface of {bridge} is marked "
            f"external_ids:{EGRESS_IFACE}=true: ovn-controller shapes no NIC for it",
            **checked,
        )
    return _ovn_kernel_check(mine, queue, expected, ofports, checked)


def _ovn_kernel_check(mine: Sequence[Nic], queue: int | None, expected: int, ofports, checked: dict) -> Check:
    """The verdict of a rule whose northbound row is right, from the kernel's side: the HTB class ``1:(N+1)`` of
    the port's southbound ``qdisc_queue_id`` N on each egress NIC read, at ``htb_rate(expected)`` (no NIC read:
    ``--no-kernel``, the row alone says enforced)."""
    if not mine:
        return Check(**{**checked, "verdict": ENFORCED})
    unbound = "ovn-controller has not bound the port (not plugged), so no NIC shapes it"
    if queue is None:
        return Check(
            why=f"its Logical_Switch_Port asks {expected} bit/s, but its southbound Port_Binding has no "
            f"options:qdisc_queue_id: " + (unbound if ofports == [] else "northd has given it no queue"),
            **checked,
        )
    return _kernel_verdict(
        checked,
        htb_rate(expected),
        lambda k: (
            f"its Logical_Switch_Port asks {expected} bit/s and its queue is {queue} (qdisc_queue_id), "
            f"but {k['nic']} has "
            f"no HTB class {k['class']}: " + (unbound if ofports == [] else OVN_RECOMPUTE_BUG)
        ),
    )


def _ovn_nic_checks(
    plane: OvnPlane, found: Sequence[Nic], checks: Sequence[Check], bridge_of: Mapping[str, str | None]
) -> list[NicCheck]:
    enforced: dict[str | None, int] = {}
    for c in checks:
        if c.kind == "rule" and c.rule is not None and c.verdict == ENFORCED:
            enforced[bridge_of[c.subject]] = enforced.get(bridge_of[c.subject], 0) + c.rule["value"]
    out = []
    for n in found:
        egress, more = _admits(plane.providers.get(n.bridge))
        out.append(
            nic_check(n.name, plane.speeds.get(n.name), egress, enforced.get(n.bridge, 0), bridge=n.bridge, **more)
        )
    for bridge in sorted(set(plane.bridges.values()) - {n.bridge for n in found}):
        egress, more = _admits(plane.providers.get(bridge))
        if egress:
            out.append(
                NicCheck(
                    None,
                    None,
                    egress,
                    0,
                    (
                        f"no interface of {bridge} is marked external_ids:{EGRESS_IFACE}=true: "
                        f"Placement admits {egress} kbps "
                        f"egress there, which ovn-controller enforces on no NIC",
                    ),
                    bridge,
                    more["provider"],
                    more["ingress_inventory_kbps"],
                )
            )
    return out


# ------------------------------------------------------------------ one host of the SR-IOV agent


@dataclass(frozen=True)
class SriovPlane:
    """One read of an SR-IOV agent's host: per PF of its ``device_mappings`` its VFs with their rates
    (:class:`minbw.dataplane.netlink.Vf`, netlink), the PCI address of each VF (sysfs, as the agent maps a port's
    ``pci_slot`` to a VF), its speed and its provider."""

    devices: Mapping[str, tuple[str, ...]]  # physical network -> its PFs (the agent's device_mappings)
    vfs: Mapping[str, tuple[Any, ...]]  # PF -> its VFs
    slots: Mapping[str, Mapping[str, int]]  # PF -> VF PCI address -> VF index
    speeds: Mapping[str, int | None] = field(default_factory=dict)  # PF -> Mb/s
    providers: Mapping[str, BridgeProvider] = field(default_factory=dict)  # PF -> its provider


def sriov_host(
    host: str,
    ports: Sequence[BoundPort],
    allocations: Mapping[str, Mapping[str, Mapping[str, int]]],
    plane: SriovPlane,
    names: Mapping[str, str] = MappingProxyType({}),
    not_checked: Iterable[str] = (),
    bound: Mapping[str, str | None] | None = None,
) -> HostReport:
    """Each minimum rule of the ports bound to ``host`` on the SR-IOV agent: what Neutron's rule asks, what
    Placement reserved, and the ``min_tx_rate`` (whole Mbps, as the agent rounds) of the VF at the port's
    ``binding:profile.pci_slot``; then the orphans (a VF with a ``min_tx_rate`` that no bound port's rule accounts
    for); then per PF its speed, Placement's inventory and the sum of the enforced VF minimums. ``bound``: every
    port bound to the host -> its ``pci_slot`` (default: ``ports``')."""
    names = {**names, **{p.uuid: p.name for p in plane.providers.values()}}
    checks = [_sriov_rule_check(port, rule, ports, allocations, plane, names) for port in ports for rule in port.rules]
    bound = dict(bound if bound is not None else {p.id: p.pci_slot for p in ports})
    rated = {
        p.pci_slot for p in ports if p.vnic_type != "direct-physical" and any(r.type != MIN_PPS for r in p.rules)
    }  # the VFs the agent writes a min_tx_rate on
    on_slot = {slot: port for port, slot in bound.items() if slot}
    for pf in sorted(plane.vfs):
        slot_of = {index: slot for slot, index in plane.slots.get(pf, {}).items()}
        for vf in plane.vfs[pf]:
            slot = slot_of.get(vf.index)
            if not vf.min_tx_rate or (slot is not None and slot in rated):
                continue
            holder = on_slot.get(slot or "")
            why = (
                f"port {holder}, bound to {host} on this VF, has no minimum rule the agent writes"
                if holder
                else f"no port bound to {host} uses this VF (its port deleted or moved, and the rate stayed)"
            )
            checks.append(
                Check(
                    "vf",
                    slot or f"{pf} VF {vf.index}",
                    SRIOV,
                    ORPHAN,
                    programmed=(_vf(pf, vf, slot),),
                    why=f"VF {vf.index} of {pf} holds min_tx_rate {vf.min_tx_rate} Mbps: {why}",
                )
            )
    return HostReport(host, tuple(checks), tuple(_sriov_nic_checks(plane, checks)), tuple(not_checked), SRIOV)


def _vf(pf: str, vf, slot: str | None) -> dict:
    return {
        "nic": pf,
        "vf": vf.index,
        "pci_slot": slot,
        "mac": vf.mac,
        "min_tx_rate": vf.min_tx_rate,
        "max_tx_rate": vf.max_tx_rate,
    }


def _vf_at(plane: SriovPlane, slot: str) -> tuple[str, Any] | None:
    """The PF and the VF (None: netlink lists no such VF) at PCI address ``slot``; None: no PF holds it."""
    for pf in sorted(plane.slots):
        index = plane.slots[pf].get(slot)
        if index is not None:
            return pf, next((v for v in plane.vfs.get(pf, ()) if v.index == index), None)
    return None


def _sriov_rule_check(
    port: BoundPort, rule: QosRule, ports: Sequence[BoundPort], allocations, plane: SriovPlane, names: Mapping[str, str]
) -> Check:
    r, asks, base, notes = _sides(port, rule, SRIOV, ports, allocations, names)
    at = _vf_at(plane, port.pci_slot) if port.pci_slot else None
    programmed = (_vf(at[0], at[1], port.pci_slot),) if at and at[1] is not None else ()
    why = unenforced(r)
    if why:
        return _placement_only(base, asks, why, notes, programmed=programmed)
    checked = dict(verdict=MISSING, programmed=programmed, notes=notes, **base)
    expected = programmed_rate(SRIOV, rule.value)
    if not port.pci_slot:
        return Check(
            why=f"{rule.value} kbps asked: the port has no binding:profile.pci_slot (no VF given to it)", **checked
        )
    if at is None:
        pfs = ", ".join(sorted(plane.slots)) or "none"
        return Check(
            why=f"{rule.value} kbps asked: its pci_slot {port.pci_slot} is a VF of none of the agent's PFs ({pfs})",
            **checked,
        )
    pf, vf = at
    if vf is None:
        return Check(
            why=f"{rule.value} kbps asked: {pf} lists no VF {plane.slots[pf][port.pci_slot]} (the VF of "
            f"pci_slot {port.pci_slot}) in netlink",
            **checked,
        )
    where = f"VF {vf.index} ({port.pci_slot}) of {pf}"
    if vf.min_tx_rate is None:
        return Check(
            why=f"{rule.value} kbps asked: {pf} reports no IFLA_VF_RATE for {where}: its driver takes no "
            f"min_tx_rate (the agent only logs an error)",
            **checked,
        )
    v = verdict(r, vf.min_tx_rate or None)
    if v.verdict == MISSING:
        return Check(why=f"{rule.value} kbps asked ({expected} Mbps): {where} holds no min_tx_rate (0)", **checked)
    if v.verdict == WRONG_RATE:
        over = [
            o
            for o in port.rules
            if o.type != MIN_PPS and o.direction != rule.direction and programmed_rate(SRIOV, o.value) == vf.min_tx_rate
        ]
        why = (
            f"{rule.value} kbps asked ({expected} Mbps); {where} holds {vf.min_tx_rate} Mbps, the {over[0].direction} "
            f"minimum of {over[0].value} kbps: the SR-IOV agent writes every minimum rule as the VF's min_tx_rate, "
            f"and the last in the policy's order stays"
            if over
            else f"{v.why} ({where})"
        )
        return Check(**{**checked, "verdict": WRONG_RATE}, factor=v.factor, why=why)
    if expected * 1000 != rule.value:
        notes += (
            f"the agent writes whole Mbps: {rule.value} kbps became {expected} Mbps, so the VF guarantees "
            f"{expected * 1000} kbps",
        )
    return Check(**{**checked, "verdict": ENFORCED, "notes": notes})


def _sriov_nic_checks(plane: SriovPlane, checks: Sequence[Check]) -> list[NicCheck]:
    enforced: dict[str, dict[int, int]] = {}  # PF -> VF -> its min_tx_rate (Mbps), a VF counted once
    for c in checks:
        if c.kind == "rule" and c.verdict == ENFORCED:
            for p in c.programmed:
                enforced.setdefault(p["nic"], {})[p["vf"]] = p["min_tx_rate"]
    out = []
    for physnet, pfs in sorted(plane.devices.items()):
        for pf in pfs:
            egress, more = _admits(plane.providers.get(pf))
            out.append(
                nic_check(
                    pf,
                    plane.speeds.get(pf),
                    egress,
                    sum(enforced.get(pf, {}).values()) * 1000,
                    physical_network=physnet,
                    **more,
                )
            )
    return out
