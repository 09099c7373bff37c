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

from minbw.model.providers import stocks_of
from minbw.neutron import naming
from minbw.reports.enforcement import ENFORCED, MISSING, ORPHAN, PLACEMENT_ONLY, WRONG_RATE
from minbw.reports.capacity.request import is_network_trait, network_label

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


# The per-provider samples are most of the exporter's memory (39 MiB of 94 at 1,000 hosts, docs/benchmarks.md): their
# metric names are these constants, their label pairs and keys of few values (direction, physnet, vnic types, the sums'
# keys) and their totals are shared (:func:`_shared`), a provider's host and provider pairs are made once, and the
# per vnic type sums are not kept per provider but derived from its own samples (:func:`_sums_of`).
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


def _own_samples(d, host: str | None) -> tuple:
    """A provider's own samples: its total, reserved, used and allocation ratio per class, each ``(metric, labels,
    value)``, labels as sorted pairs."""
    physnet, vnics = provider_labels(d.traits)
    host_pair, provider_pair = ("host", str(host or "")), ("provider", str(d.provider.name))
    physnet_pair, vnics_pair = _shared(("physnet", physnet)), _shared(("vnic_types", vnics))
    own = []
    for rc, s in stocks_of(d.provider.uuid, d.inventories, d.usages).items():
        if rc not in CLASSES:
            continue
        direction = CLASSES[rc][2]
        labels = (_shared(("direction", direction)), host_pair, physnet_pair, provider_pair, vnics_pair)
        inventory, reserved, used, ratio = _OWN_NAMES[rc]
        own += [
            (inventory, labels, _int(s.total * _scale(rc))),
            (reserved, labels, _int(s.reserved * _scale(rc))),
            (used, labels, s.used * _scale(rc)),
            (ratio, labels, s.allocation_ratio),
        ]
    return tuple(own)


def _sums_of(own: Iterable) -> Iterable[tuple]:
    """What a provider adds to the per vnic type sums, from its own samples: each of its total, reserved and used
    to its vnic types' (on its physnet, in its direction)."""
    for name, labels, value in own:
        to = _SUM_OF.get(name)
        if to is None:
            continue
        direction, _, physnet, _, vnics = (v for _, v in labels)
        for vnic in filter(None, vnics.split(",")):
            yield (
                to,
                _shared(
                    (_shared(("direction", direction)), _shared(("physnet", physnet)), _shared(("vnic_type", vnic)))
                ),
                value,
            )


def provider_samples(d, host: str | None) -> tuple[tuple, tuple]:
    """One provider's samples, ``(own, sums)``: ``own`` its total, reserved, used and allocation ratio per class,
    ``sums`` what it adds to the per vnic type sums; each ``(metric, labels, value)``, labels as sorted pairs."""
    own = _own_samples(d, host)
    return own, tuple(_sums_of(own))


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
    """The provider families of a long-running exporter. A provider's samples are built again only when its
    detail or its host changed (a provider that did not move keeps its detail: the reader builds it again only
    when its listing or cache entry changed), and only its samples are replaced in the families; when no
    provider's samples changed, came or went, the last families are returned as they were (the same objects).
    Their samples are in the providers' order (each provider's in label order), not sorted across providers.

    ``parts`` holds each provider's own samples apart (provider → its ``own`` samples) so that an exposition can
    keep what it rendered of each provider (:mod:`minbw.exporter.exposition`)."""

    def __init__(self):
        self._of: dict[str, tuple] = {}  # provider → (detail, host, own); its sums derived from own
        self._families: list[Family] | None = None
        self._b = _Builder()
        _declare_providers(self._b)
        self._sums = {n for n in self._b.families if n.startswith(PREFIX + "vnic_type_")}
        self.built = 0  # providers whose samples were built, all told (tests, benchmarks)

    def families(self, details: Iterable, hosts: Mapping[str, str | None]) -> list[Family]:
        """The provider families for ``details`` (``hosts``: provider uuid → host name), a list of Family: only the
        changed providers' samples rebuilt, the last list itself when nothing changed, came or went."""
        seen, changed = {}, []
        for d in details:
            u, host = d.provider.uuid, hosts.get(d.provider.uuid) or ""
            kept = self._of.get(u)
            if kept is None or kept[1] != host or (kept[0] is not d and kept[0] != d):
                changed.append((kept, kept := (d, host, _own_samples(d, host))))
                self.built += 1
            elif kept[0] is not d:  # an equal detail: the one the reader holds now kept (the old one let go)
                kept = (d, host, kept[2])
            seen[u] = kept
        gone = [self._of[u] for u in self._of.keys() - seen.keys()]
        self._of = seen
        if self._families is not None and not changed and not gone:
            return self._families
        samples = self._b._samples
        for old in gone + [old for old, _ in changed if old is not None]:
            for name, key, _ in old[2]:
                samples[name].pop(key, None)
        for _, new in changed:
            for name, key, value in new[2]:
                samples[name][key] = value
        for name in self._sums:
            samples[name].clear()
        for _, _, own in seen.values():
            _put(self._b, (), _sums_of(own))
        self._families = [
            Family(
                f.name,
                f.type,
                f.help,
                tuple(sorted(samples[n].items())) if n in self._sums else tuple(samples[n].items()),
            )
            for n, f in self._b.families.items()
        ]
        return self._families

    @property
    def parts(self) -> dict[str, tuple]:
        """provider → its own samples (as the last :meth:`families` built them), in the details' order."""
        return {u: kept[2] for u, kept in self._of.items()}


def headroom(b: _Builder, sizes: Iterable[tuple[str, str, object]]) -> None:
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
    sizes: Iterable[tuple[str, str, object]] = (),
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
    provider families of the providers that did not move."""
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
