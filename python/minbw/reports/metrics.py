"""The exporter's metrics (``minbw exporter``, docs/exporter.md), built from what the reports found. Pure: the use
case reads Placement, runs the reports and serves these families to Prometheus.

Names follow Prometheus' conventions: ``minbw_`` first, base units last (``_bits_per_second``: Placement's kbps
times 1000; ``_packets_per_second``: kpps times 1000; ``_seconds``; ``_timestamp_seconds`` for times, so an age is
``time() - metric``), ``_ratio`` for ratios, ``_total`` only on counters; one metric per quantity (total, reserved,
used are separate metrics, so a ``sum`` over any label is meaningful), labels for the dimensions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minbw.model.providers import stocks_of
from minbw.neutron import naming
from minbw.reports.enforcement import ENFORCED, MISSING, ORPHAN, PLACEMENT_ONLY, WRONG_RATE
from minbw.reports.capacity.request import is_network_trait, network_label

if TYPE_CHECKING:
    from minbw.reports.capacity.report import CapacityReport

PREFIX = "minbw_"
VNIC_PREFIX = "CUSTOM_VNIC_TYPE_"
# class → (metric stem, unit suffix, direction label)
CLASSES = {
    naming.BW_EGRESS: ("bandwidth", "bits_per_second", "egress"),
    naming.BW_INGRESS: ("bandwidth", "bits_per_second", "ingress"),
    naming.PPS_EGRESS: ("packet_rate", "packets_per_second", "egress"),
    naming.PPS_INGRESS: ("packet_rate", "packets_per_second", "ingress"),
    naming.PPS_ANY: ("packet_rate", "packets_per_second", "any"),
}
AUDIT_KINDS = ("leaked-allocation", "stale-binding", "over-capacity", "double-allocation", "over-allocation")
REPORTS = ("providers", "headroom", "audit", "drift", "cache_check")
# a host's exporter (``minbw exporter --enforcement-host``): its enforcement checks' verdicts, every one present
ENFORCEMENT_VERDICTS = (ENFORCED, MISSING, WRONG_RATE, PLACEMENT_ONLY, ORPHAN)


@dataclass(frozen=True)
class Family:
    """One metric: ``samples`` are ``(labels, value)`` with labels as sorted ``(name, value)`` pairs."""

    name: str
    type: str  # "gauge" | "counter"
    help: str
    samples: tuple[tuple[tuple[tuple[str, str], ...], float], ...] = ()

    def value(self, **labels: str) -> float | None:
        """The value of the sample with exactly these labels (None: no such sample)."""
        want = tuple(sorted(labels.items()))
        return next((v for k, v in self.samples if k == want), None)


@dataclass
class _Builder:
    families: dict[str, Family] = field(default_factory=dict)
    _samples: dict[str, dict] = field(default_factory=dict)

    def declare(self, name: str, help_: str, type_: str = "gauge") -> None:
        """Declare the family ``minbw_``-prefixed ``name`` once (a later declaration of it is ignored); returns None."""
        if PREFIX + name not in self.families:
            self.families[PREFIX + name] = Family(PREFIX + name, type_, help_)
            self._samples[PREFIX + name] = {}

    def add(self, name: str, value: float, add: bool = False, **labels: str) -> None:
        """Set (``add``: add to) the declared family's sample with these labels (values made str); returns None. A
        family not declared is a KeyError."""
        key = tuple(sorted((k, str(v)) for k, v in labels.items()))
        samples = self._samples[PREFIX + name]
        samples[key] = samples.get(key, 0) + value if add else value

    def build(self) -> list[Family]:
        """The declared families with their samples sorted by labels, in declaration order: a list of Family."""
        return [
            Family(f.name, f.type, f.help, tuple(sorted(self._samples[n].items()))) for n, f in self.families.items()
        ]


def provider_labels(traits: Iterable[str]) -> tuple[str, str]:
    """``(physnet, vnic_types)`` of a provider: its networks (``physnet0``, ``tunnel``) and vnic types, each
    comma-joined in order."""
    traits = sorted(traits)
    physnet = ",".join(network_label(t) for t in traits if is_network_trait(t))
    vnics = ",".join(t.removeprefix(VNIC_PREFIX).lower().replace("_", "-") for t in traits if t.startswith(VNIC_PREFIX))
    return physnet, vnics


def _scale(rc: str) -> int:
    return 1000  # kbps → bits per second, kpps → packets per second


def _declare_providers(b: _Builder) -> None:
    for stem, unit, what in (
        ("bandwidth", "bits_per_second", "bandwidth"),
        ("packet_rate", "packets_per_second", "packet rate"),
    ):
        b.declare(f"{stem}_inventory_{unit}", f"A provider's {what} inventory (Placement's total)")
        b.declare(f"{stem}_reserved_{unit}", f"A provider's reserved {what} (kept back from allocations)")
        b.declare(f"{stem}_used_{unit}", f"A provider's {what} allocated to consumers")
        b.declare(
            f"{stem}_allocation_ratio", f"A provider's {what} allocation ratio (capacity = (total - reserved) x ratio)"
        )
        b.declare(f"vnic_type_{stem}_inventory_{unit}", f"The {what} inventory of the providers serving a vnic type")
        b.declare(f"vnic_type_{stem}_reserved_{unit}", f"The reserved {what} of the providers serving a vnic type")
        b.declare(f"vnic_type_{stem}_used_{unit}", f"The {what} allocated on the providers serving a vnic type")


def _labels(**labels: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, str(v)) for k, v in labels.items()))


# The per-provider samples are most of the exporter's memory (docs/benchmarks.md, "The exporter at 10,000 hosts"):
# their metric names are these constants, their label pairs and keys of few values (direction, physnet, vnic types,
# the sums' keys) and their totals are shared (:func:`_shared`); the exporter keeps of a provider only its part
# (:func:`provider_part`), and the per vnic type sums are not kept per provider but derived from it (:func:`_sums_of`).
_OWN_NAMES = {
    rc: tuple(PREFIX + f"{stem}_{part}_{unit}" for part in ("inventory", "reserved", "used"))
    + (PREFIX + f"{stem}_allocation_ratio",)
    for rc, (stem, unit, _) in CLASSES.items()
}
_SUM_OF = {
    own: PREFIX + f"vnic_type_{stem}_{part}_{unit}"
    for rc, (stem, unit, _) in CLASSES.items()
    for own, part in zip(_OWN_NAMES[rc], ("inventory", "reserved", "used"))
}
_SHARED: dict = {}
_SHARED_MAX = 1 << 16


def _shared(value):
    """``value`` (a label pair, a sums key, an int), the same object for equal values: shared by every sample
    that holds it (bounded: forgotten, not grown, past :data:`_SHARED_MAX`)."""
    kept = _SHARED.get(value)
    if kept is None:
        if len(_SHARED) >= _SHARED_MAX:
            _SHARED.clear()
        kept = _SHARED[value] = value
    return kept


def _int(value):
    return _shared((int, value))[1] if type(value) is int else value


# What the exporter keeps of a provider between collections (:class:`ProviderFamilies`): its labels' values and
# numbers only, ``(classes, host, provider, physnet, vnic_types, values)``, ``values`` 4 per class in ``classes``
# (total, reserved, used, allocation ratio, Placement's units × 1000 but the ratio); the classes tuple, the physnet
# and vnic types shared, the host and the provider's name the objects the reader holds. Its lines are rendered from
# it at each publication (:mod:`minbw.exporter.exposition`), its samples made only where a caller asks for them.
OWN_FAMILIES = frozenset(name for names in _OWN_NAMES.values() for name in names)
_COLUMNS: dict = {}


def provider_part(d, host: str | None) -> tuple:
    """A provider's own samples as the exporter keeps them (see :data:`OWN_FAMILIES`): a tuple."""
    physnet, vnics = provider_labels(d.traits)
    classes: list[str] = []
    values: list = []
    for rc, s in stocks_of(d.provider.uuid, d.inventories, d.usages).items():
        if rc not in CLASSES:
            continue
        classes.append(rc)
        values += (_int(s.total * _scale(rc)), _int(s.reserved * _scale(rc)), s.used * _scale(rc), s.allocation_ratio)
    return (
        _shared(tuple(classes)),
        str(host or ""),
        str(d.provider.name),
        _shared(physnet),
        _shared(vnics),
        tuple(values),
    )


def part_columns(classes: tuple, name: str) -> tuple[tuple[str, int], ...]:
    """``(direction, index in the part's values)`` of each sample of the family ``name`` a provider of these
    ``classes`` has, in its order."""
    key = (classes, name)
    kept = _COLUMNS.get(key)
    if kept is None:
        kept = _COLUMNS[key] = tuple(
            (CLASSES[rc][2], 4 * i + _OWN_NAMES[rc].index(name))
            for i, rc in enumerate(classes)
            if name in _OWN_NAMES[rc]
        )
    return kept


def part_families(parts: Iterable[tuple]) -> set[str]:
    """The names of the families the providers of ``parts`` have samples in."""
    return {name for classes in {part[0] for part in parts} for rc in classes for name in _OWN_NAMES[rc]}


def part_samples(part: tuple) -> tuple:
    """A provider's own samples from its part: its total, reserved, used and allocation ratio per class, each
    ``(metric, labels, value)``, labels as sorted pairs."""
    classes, host, name, physnet, vnics, values = part
    host_pair, provider_pair = ("host", host), ("provider", name)
    physnet_pair, vnics_pair = _shared(("physnet", physnet)), _shared(("vnic_types", vnics))
    own = []
    for i, rc in enumerate(classes):
        labels = (_shared(("direction", CLASSES[rc][2])), host_pair, physnet_pair, provider_pair, vnics_pair)
        own += [(metric, labels, values[4 * i + k]) for k, metric in enumerate(_OWN_NAMES[rc])]
    return tuple(own)


def _sums_of(part: tuple) -> Iterable[tuple]:
    """What a provider adds to the per vnic type sums, from its part: each of its total, reserved and used to its
    vnic types' (on its physnet, in its direction)."""
    classes, _, _, physnet, vnics, values = part
    for i, rc in enumerate(classes):
        direction = CLASSES[rc][2]
        for k, metric in enumerate(_OWN_NAMES[rc][:3]):
            to = _SUM_OF[metric]
            for vnic in filter(None, vnics.split(",")):
                yield (
                    to,
                    _shared(
                        (_shared(("direction", direction)), _shared(("physnet", physnet)), _shared(("vnic_type", vnic)))
                    ),
                    values[4 * i + k],
                )


def provider_samples(d, host: str | None) -> tuple[tuple, tuple]:
    """One provider's samples, ``(own, sums)``: ``own`` its total, reserved, used and allocation ratio per class,
    ``sums`` what it adds to the per vnic type sums; each ``(metric, labels, value)``, labels as sorted pairs."""
    part = provider_part(d, host)
    return part_samples(part), tuple(_sums_of(part))


def _put(b: _Builder, own: Iterable, sums: Iterable) -> None:
    for name, key, value in own:
        b._samples[name][key] = value
    for name, key, value in sums:
        b._samples[name][key] = b._samples[name].get(key, 0) + value


def providers(b: _Builder, details: Iterable, hosts: Mapping[str, str | None]) -> None:
    """Total, reserved, used and allocation ratio per provider and class, and summed per vnic type."""
    _declare_providers(b)
    for d in details:
        _put(b, *provider_samples(d, hosts.get(d.provider.uuid)))


class ProviderFamilies:
    """The provider families of a long-running exporter. A provider's part (:func:`provider_part`) is built again
    only when its detail or its host changed (a provider that did not move keeps its detail: the reader builds it
    again only when its listing or cache entry changed); the per vnic type sums are summed again from the parts
    when a provider's part changed, came or went, otherwise the last families are returned as they were (the same
    objects).

    The families of the providers' own samples (:data:`OWN_FAMILIES`) come without samples: those are ``parts``
    (each provider's part, in the details' order), which the exposition renders line by line
    (:mod:`minbw.exporter.exposition`); no sample of them is made."""

    def __init__(self):
        self._of: dict[str, tuple] = {}  # provider → (detail, host, part)
        self._families: list[Family] | None = None
        self._b = _Builder()
        _declare_providers(self._b)
        self._sums = {n for n in self._b.families if n.startswith(PREFIX + "vnic_type_")}
        self.built = 0  # providers whose parts were built, all told (tests, benchmarks)

    def families(self, details: Iterable, hosts: Mapping[str, str | None]) -> list[Family]:
        """The provider families for ``details`` (``hosts``: provider uuid → host name), a list of Family: only the
        changed providers' parts rebuilt, the last list itself when nothing changed, came or went."""
        seen, changed = {}, False
        for d in details:
            u, host = d.provider.uuid, hosts.get(d.provider.uuid) or ""
            kept = self._of.get(u)
            if kept is None or kept[1] != host or (kept[0] is not d and kept[0] != d):
                kept, changed = (d, host, provider_part(d, host)), True
                self.built += 1
            elif kept[0] is not d:  # an equal detail: the one the reader holds now kept (the old one let go)
                kept = (d, host, kept[2])
            seen[u] = kept
        gone = len(seen) != len(self._of) or any(u not in seen for u in self._of)
        self._of = seen
        if self._families is not None and not changed and not gone:
            return self._families
        samples = self._b._samples
        for name in self._sums:
            samples[name].clear()
        for _, _, part in seen.values():
            _put(self._b, (), _sums_of(part))
        self._families = [
            Family(f.name, f.type, f.help, tuple(sorted(samples[n].items())) if n in self._sums else ())
            for n, f in self._b.families.items()
        ]
        return self._families

    @property
    def parts(self) -> tuple[tuple, ...]:
        """Each provider's part (as the last :meth:`families` built them), in the details' order."""
        return tuple(kept[2] for kept in self._of.values())


def headroom(b: _Builder, sizes: Iterable[tuple[str, str, CapacityReport]]) -> None:
    """``sizes``: ``(name, vnic_type, CapacityReport)`` per configured port size."""
    b.declare(
        "headroom_ports",
        "How many more ports of a configured size fit on a host's physnet (the arithmetic of minbw capacity show)",
    )
    b.declare(
        "physnet_headroom_ports",
        "How many more ports of a configured size fit on a physnet in all (hosts "
        "drawing from the same sharing providers counted once)",
    )
    b.declare("cloud_headroom_ports", "How many more ports of a configured size fit in the whole cloud")
    for name, vnic, report in sizes:
        for h in report.hosts:
            for n in h.physnets:
                b.add("headroom_ports", n.fit.fits, size=name, vnic_type=vnic, host=h.name, physnet=n.physnet)
        for t in report.physnet_totals():
            b.add("physnet_headroom_ports", t["fits"], size=name, vnic_type=vnic, physnet=t["physnet"])
        b.add("cloud_headroom_ports", report.total, size=name, vnic_type=vnic)


def drift(b: _Builder, rows: Iterable, hosts_by_name: Mapping[str, str]) -> None:
    """Providers whose ini files, agents' reports and Placement differ, counted per host."""
    b.declare("drift_providers", "Providers compared by the drift report (ini files, agents' reports, Placement)")
    b.declare("drift_findings", "Providers on a host whose ini files, agents' reports and Placement differ")
    rows = list(rows)
    b.add("drift_providers", len(rows))
    for r in rows:
        host = r.name.split(":", 1)[0] if ":" in r.name else hosts_by_name.get(r.name, "")
        b.add("drift_findings", 0 if r.agree else 1, add=True, host=host)


def audit(b: _Builder, findings: Iterable, kinds: Iterable[str] = AUDIT_KINDS) -> None:
    """The findings counted by kind, each kind the audit checked present (0 when none)."""
    b.declare(
        "audit_findings",
        "The audit's findings by kind (leaked-allocation, stale-binding, over-capacity, "
        "double-allocation, over-allocation)",
    )
    for kind in kinds:
        b.add("audit_findings", 0, kind=kind)
    for f in findings:
        b.add("audit_findings", 1, add=True, kind=f.kind)


def reports(b: _Builder, status: Mapping[str, Mapping]) -> None:
    """``status``: report → ``{ok, seconds, last_success}`` (the slow reports run on their own interval)."""
    b.declare("report_success", "Whether a report's last run succeeded (1) or failed (0)")
    b.declare("report_duration_seconds", "How long a report's last run took")
    b.declare("report_last_success_timestamp_seconds", "When a report last succeeded (Unix time)")
    for name, st in sorted(status.items()):
        b.add("report_success", 1 if st.get("ok") else 0, report=name)
        b.add("report_duration_seconds", st.get("seconds") or 0.0, report=name)
        if st.get("last_success") is not None:
            b.add("report_last_success_timestamp_seconds", st["last_success"], report=name)


def sync(b: _Builder, record: Mapping | None) -> None:
    """The last provider sync run against this Placement with this cache directory (its record)."""
    b.declare("sync_last_run_timestamp_seconds", "When the last provider sync ran (Unix time)")
    b.declare("sync_last_success_timestamp_seconds", "When a provider sync last succeeded (Unix time)")
    b.declare("sync_last_run_success", "Whether the last provider sync succeeded (1) or failed (0)")
    b.declare("sync_last_run_writes", "Writes the last provider sync made")
    if not record:
        return
    b.add("sync_last_run_timestamp_seconds", record["time"])
    b.add("sync_last_run_success", 1 if record.get("ok") else 0)
    b.add("sync_last_run_writes", record.get("writes") or 0)
    if record.get("last_success") is not None:
        b.add("sync_last_success_timestamp_seconds", record["last_success"])


def collection(b: _Builder, stats: Mapping[str, float], calls_total: int) -> None:
    """The last collection's cost (a scrape serves the last collection; its age is the scrape's own family)."""
    b.declare("collection_duration_seconds", "How long the last collection took (reading Placement included)")
    b.declare("collection_placement_calls", "Placement calls the last collection made")
    b.declare(
        "collection_providers_read",
        "Providers whose traits and inventories the last collection read (those whose generation moved)",
    )
    b.declare(
        "collection_usages_read",
        "Usages the last collection read of providers whose traits and inventories "
        "the cache held (every bandwidth provider's usage is read each collection)",
    )
    b.declare("providers", "Resource providers in Placement (the collection's one listing)")
    b.declare("bandwidth_providers", "Providers holding bandwidth or packet rate")
    b.declare("placement_calls", "Placement calls made by the exporter's collections since it started", "counter")
    b.add("collection_duration_seconds", stats.get("seconds", 0.0))
    b.add("collection_placement_calls", stats.get("calls", 0))
    b.add("collection_providers_read", stats.get("read", 0))
    b.add("collection_usages_read", stats.get("usages_read", 0))
    b.add("providers", stats.get("listed", 0))
    b.add("bandwidth_providers", stats.get("bandwidth", 0))
    b.add("placement_calls", calls_total)


def enforcement(b: _Builder, report) -> None:
    """A host's enforcement checks (a :class:`minbw.reports.enforcement.HostReport`; None: the check failed, its
    families carry no sample): the checks counted per verdict (each verdict present, 0 when none), and per NIC its
    link's speed, what Placement admits on its provider in each direction, the sum of the minimums enforced on it
    and its errors (an inventory or a sum above the link)."""
    b.declare(
        "enforcement_checks",
        "A host's enforcement checks by verdict (enforced, missing, wrong rate, "
        "placement-only, orphan; minbw enforcement show)",
    )
    b.declare("enforcement_nic_speed_bits_per_second", "A NIC's link speed (ethtool)")
    b.declare(
        "enforcement_nic_admitted_bits_per_second",
        "What Placement admits on a NIC's provider: (total - reserved) x allocation_ratio",
    )
    b.declare("enforcement_nic_enforced_bits_per_second", "The sum of the minimums the data plane enforces on a NIC")
    b.declare(
        "enforcement_nic_errors",
        "A NIC's errors: Placement's inventory or the minimums enforced above the link's speed",
    )
    if report is None:
        return
    counts = report.counts()
    for verdict in ENFORCEMENT_VERDICTS:
        b.add("enforcement_checks", counts.get(verdict, 0), host=report.host, backend=report.backend, verdict=verdict)
    for n in report.nics:
        nic = dict(host=report.host, nic=n.nic or "", bridge=n.bridge or "")  # nic "": a bridge without one (OVN)
        if n.speed_kbps is not None:
            b.add("enforcement_nic_speed_bits_per_second", n.speed_kbps * 1000, **nic)
        for direction, kbps in (("egress", n.inventory_kbps), ("ingress", n.ingress_inventory_kbps)):
            if kbps is not None:
                b.add("enforcement_nic_admitted_bits_per_second", kbps * 1000, direction=direction, **nic)
        b.add("enforcement_nic_enforced_bits_per_second", n.enforced_kbps * 1000, **nic)
        b.add("enforcement_nic_errors", len(n.errors), **nic)


def enforcement_families(report, status: Mapping[str, Mapping]) -> list[Family]:
    """A host's exporter's families: its enforcement checks (:func:`enforcement`) and the check's status
    (:func:`reports`: ``minbw_report_success{report="enforcement"}``)."""
    b = _Builder()
    enforcement(b, report)
    reports(b, status)
    return b.build()


def families(
    *,
    details: Iterable = (),
    hosts: Mapping[str, str | None] | None = None,
    sizes: Iterable[tuple[str, str, CapacityReport]] = (),
    drift_rows: Iterable | None = None,
    findings: Iterable | None = None,
    audit_kinds: Iterable[str] = AUDIT_KINDS,
    status: Mapping[str, Mapping] | None = None,
    sync_record: Mapping | None = None,
    stats: Mapping[str, float] | None = None,
    calls_total: int = 0,
    provider_families: ProviderFamilies | None = None,
) -> list[Family]:
    """Every family, from what the last collection and the last slow reports found (None: that report has not
    run, or failed: its families carry no sample). ``provider_families``: the exporter's, which keeps the
    parts of the providers that did not move; the families of the providers' own samples then come without samples
    (:class:`ProviderFamilies`: they are its ``parts``)."""
    b = _Builder()
    if provider_families is None:
        providers(b, details, hosts or {})
        kept = []
    else:
        kept = provider_families.families(details, hosts or {})
    headroom(b, sizes)
    host_names = {name: name for name in (hosts or {}).values() if name}
    if drift_rows is not None:
        drift(b, drift_rows, host_names)
    else:
        b.declare("drift_providers", "Providers compared by the drift report (ini files, agents' reports, Placement)")
        b.declare("drift_findings", "Providers on a host whose ini files, agents' reports and Placement differ")
    if findings is not None:
        audit(b, findings, audit_kinds)
    else:
        b.declare("audit_findings", "The audit's findings by kind")
    reports(b, status or {})
    sync(b, sync_record)
    collection(b, stats or {}, calls_total)
    return kept + b.build()
