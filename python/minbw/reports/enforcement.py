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
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from decimal import ROUND_HALF_UP, Decimal

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
    speed_kbps: int | None  # None: the driver reports none
    inventory_kbps: int | None  # Placement's total (before the allocation ratio)
    enforced_kbps: int  # the sum of the minimums programmed on it
    errors: tuple[str, ...]

    def to_dict(self) -> dict:
        return asdict(self)


def nic_check(nic: str, speed_mbps: int | None, inventory_kbps: int | None, enforced_kbps: int) -> NicCheck:
    """A NIC's guarantees against its link: an inventory or enforced minimums above the link's speed are errors
    (Placement then admits guarantees the wire cannot give)."""
    speed = speed_mbps * 1000 if speed_mbps else None
    errors = []
    if speed is not None and inventory_kbps is not None and inventory_kbps > speed:
        errors.append(f"Placement's inventory ({inventory_kbps} kbps) is above the link's speed ({speed} kbps)")
    if speed is not None and enforced_kbps > speed:
        errors.append(f"the minimums programmed ({enforced_kbps} kbps) are above the link's speed ({speed} kbps)")
    return NicCheck(nic, speed, inventory_kbps, enforced_kbps, tuple(errors))
