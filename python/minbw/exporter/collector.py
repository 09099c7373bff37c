"""The exporter's collection: one cycle reads what the metrics need and leaves an immutable :class:`Collection`
that every scrape until the next serves as it is.

A cycle lists every provider once; reads the traits and inventories of the bandwidth providers whose generation
moved (the others from the provider cache: a trait or inventory change moves a provider's generation); reads the
usage of EVERY bandwidth provider, ``workers`` at once (a ``DELETE /allocations/{consumer}``, as Nova frees a
deleted server, moves no generation: docs/placement-generations.md); and counts the headroom again for the trees
whose details changed. On every ``check_interval`` it first runs the cache's safety check, the listings that find
bandwidth providers not made by Neutron, and the sharing providers, and decides again whether every
nova-compute reports ``OWNER_NOVA`` (the ``owner_nova`` it is given): the headroom
follows a fleet's upgrade to Nova 34 within one ``check_interval``.

A :class:`Collector` is owned by one thread (the collection loop, :mod:`minbw.exporter.loops`): its reader, its
provider cache and its memos are used by nobody else. The slow reports' results come in as an immutable
:class:`SlowResults`; the collection goes out as an immutable :class:`Collection`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from minbw.exporter.memory import limit_arenas
from minbw.model.providers import ProviderDetail
from minbw.placement.client import Placement
from minbw.reports import metrics
from minbw.reports.capacity.report import count_capacity
from minbw.readers.providers import sharing_providers
from minbw.cache.providers import ProviderCache, read_sync_record
from minbw.readers.placement import Reader, read_bandwidth

_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True)
class SlowResults:
    """The slow reports' last results (None: not run, or failed: their families carry no sample) and each
    report's status ``{ok, seconds, last_success[, error]}``."""

    findings: tuple | None = None
    audit_kinds: tuple[str, ...] = metrics.AUDIT_KINDS
    drift_rows: tuple | None = None
    status: Mapping[str, Mapping] = field(default_factory=dict)


@dataclass(frozen=True)
class Collection:
    """What one collection cycle found: the families and each provider's own samples (``parts``: what the
    exposition renders the providers' families from, :class:`metrics.ProviderFamilies`), when it ended
    (``finished``), whether it succeeded, and its cost (``stats``)."""

    families: tuple[metrics.Family, ...]
    parts: tuple[tuple, ...] = ()
    finished: float = 0.0
    ok: bool = False
    stats: Mapping[str, float] = field(default_factory=dict)


class Collector:
    """Collection cycles over one Placement (``api``: a client of its own, so that its call counts are the
    collection's), counting the headroom of ``sizes_for(owner_nova())`` (``(PortSize, CapacityRequest)`` pairs
    for Nova's query when every nova-compute reports ``OWNER_NOVA`` or not; ``owner_nova`` is asked at each safety
    check).

    ``cache`` (a :class:`ProviderCache` or None) holds traits and inventories between cycles; ``workers``
    providers are read at once; ``check_interval`` seconds between the cache's safety checks. Built before its
    reader's threads start, it limits the process's malloc arenas (:func:`minbw.exporter.memory.limit_arenas`)."""

    def __init__(
        self,
        api: Placement,
        sizes_for: Callable[[bool], list],
        owner_nova: Callable[[], bool],
        *,
        cache: ProviderCache | None = None,
        workers: int = 4,
        check_interval: float = 300.0,
        clock: Callable[[], float] = time.time,
        say: Callable[[str], None] | None = None,
    ):
        limit_arenas()  # before the reader's threads start (an arena a thread already has stays)
        self.api = api
        self.sizes_for = sizes_for
        self.decide_owner_nova = owner_nova
        self.owner_nova: bool | None = None  # undecided until a safety check succeeds
        self.sizes: list = []
        self.cache = cache
        self.check_interval = check_interval
        self.clock = clock
        self.say = say
        # the safety check runs on the slow interval (:meth:`check`); a cycle trusts the generations for traits
        # and inventories only
        self.reader = Reader(api, cache, workers=workers, verify=False)
        self.root_traits: frozenset[str] = frozenset()  # what Nova's request filters ask of a compute node
        self.shared: Mapping[str, frozenset[str]] = _EMPTY
        self.status: dict[str, dict] = {}
        self.provider_families = metrics.ProviderFamilies()  # the provider families of providers that did not move
        self._headroom: tuple[tuple, list] | None = None  # (what it was counted from, the headroom per size)
        self._counted: dict[str, dict] = {}  # size → the hosts counted (capacity's memo: only trees that moved)
        self._checked: float | None = None  # when the last safety check ran

    def _use_sizes(self, owner_nova: bool) -> None:
        """Count the headroom for Nova's query as it is when every nova-compute reports OWNER_NOVA or not."""
        if owner_nova == self.owner_nova:
            return
        self.owner_nova = owner_nova
        self.sizes = list(self.sizes_for(owner_nova))
        self.root_traits = frozenset(
            t for _, req in self.sizes for t in (*req.server.root_required, *req.server.root_forbidden)
        )
        self._headroom, self._counted = None, {}

    # ------------------------------------------------------------ one cycle
    def collect(self, slow: SlowResults = SlowResults()) -> Collection:
        """One cycle (the safety check first when it is due): the families and how it went."""
        if self._checked is None or self.clock() - self._checked >= self.check_interval or self.owner_nova is None:
            self.check()  # due, or the last one could not tell which query Nova sends
        started, calls, read, usages = time.perf_counter(), self.api.calls, self.reader.read, self.reader.usages_read
        status = {**slow.status, **self.status}
        try:
            reading = read_bandwidth(self.reader, listings=False)
            sizes = self._headroom_of(reading)
            self.status["providers"] = {
                "ok": True,
                "seconds": time.perf_counter() - started,
                "last_success": self.clock(),
            }
        except Exception as e:  # noqa: BLE001 - served as a failed collection (minbw_report_success 0)
            self._say(f"reading the providers failed: {type(e).__name__}: {e}")
            self.status["providers"] = {
                "ok": False,
                "seconds": time.perf_counter() - started,
                "error": str(e),
                "last_success": (self.status.get("providers") or {}).get("last_success"),
            }
            status["providers"] = self.status["providers"]
            stats = {"seconds": time.perf_counter() - started, "calls": self.api.calls - calls}
            return Collection(
                tuple(metrics.families(status=status, stats=stats, calls_total=self.api.calls)),
                finished=self.clock(),
                ok=False,
                stats=stats,
            )
        status["providers"] = self.status["providers"]
        stats = {
            "seconds": time.perf_counter() - started,
            "calls": self.api.calls - calls,
            "read": self.reader.read - read,
            "usages_read": self.reader.usages_read - usages,
            "listed": reading.stats["listed"],
            "bandwidth": reading.stats["bandwidth"],
        }
        sync_record = read_sync_record(self.cache.path) if self.cache is not None else None
        families = metrics.families(
            details=reading.bandwidth(),
            hosts=reading.hosts(),
            sizes=sizes,
            drift_rows=slow.drift_rows,
            findings=slow.findings,
            audit_kinds=slow.audit_kinds,
            status=status,
            sync_record=sync_record,
            stats=stats,
            calls_total=self.api.calls,
            provider_families=self.provider_families,
        )
        return Collection(tuple(families), self.provider_families.parts, self.clock(), True, stats)

    def _headroom_of(self, reading) -> list:
        """(size, vnic type, capacity) per port size: counted again only when a provider's listing, traits,
        inventories or usage changed, or the sharing providers did; otherwise the last cycle's."""
        key = (frozenset(reading.providers.values()), dict(reading.details), frozenset(self.shared.items()))
        if self._headroom is None or self._headroom[0] != key:
            details = self._capacity_details(reading)
            self._headroom = (
                key,
                [
                    (
                        s.name,
                        s.vnic_type,
                        count_capacity(details, req, self.shared, memo=self._counted.setdefault(s.name, {})),
                    )
                    for s, req in self.sizes
                ],
            )
        else:  # the same: this cycle's providers and details kept, the last ones let go
            self._headroom = (key, self._headroom[1])
        return self._headroom[1]

    def _capacity_details(self, reading) -> list[ProviderDetail]:
        """The bandwidth providers, the sharing providers, and every other provider of their trees standing in
        with nothing to offer (the trees need their roots), a root with the root traits the sizes ask about
        (Nova's request filters: one ``?required=TRAIT`` listing per trait)."""
        shared = [reading.providers[u] for u in self.shared if u in reading.providers]
        details = dict(reading.details)
        details.update(self.reader.details([p for p in shared if p.uuid not in details]))
        trees = {d.provider.root_uuid for d in details.values()}
        having = {t: {p.uuid for p in self.reader.listing(required=t)} for t in sorted(self.root_traits)}
        sets: dict[frozenset, frozenset] = {}  # the few sets of root traits: one object each
        return list(details.values()) + [
            ProviderDetail(
                p,
                sets.setdefault(has := frozenset(t for t, roots in having.items() if u in roots), has),
                _EMPTY,
                _EMPTY,
                True,
            )
            for u, p in reading.providers.items()
            if u not in details and p.root_uuid in trees
        ]

    # ------------------------------------------------------------ the safety check
    def check(self) -> None:
        """The cache's safety check, the ``?resources=CLASS:1`` listings that find bandwidth providers not made by
        Neutron (read, and so in the scope of the next cycles), the sharing providers, and whether every
        nova-compute reports OWNER_NOVA; the cache saved."""
        self._checked = self.clock()
        started = time.perf_counter()
        before = self.status.get("cache_check") or {}
        try:
            self._use_sizes(self.decide_owner_nova())
            self.reader.verify = True
            providers = self.reader.listing()
            scope = self.reader.bandwidth_scope(providers, listings=True)
            self.reader.details([p for p in providers if p.uuid in scope], usages=False)  # the cycle reads usage
            self.shared = MappingProxyType(sharing_providers(self.api))
            if self.cache is not None:
                self.cache.save()
            self.status["cache_check"] = {
                "ok": True,
                "seconds": time.perf_counter() - started,
                "last_success": self.clock(),
            }
        except Exception as e:  # noqa: BLE001 - a report that fails is served as failed; the exporter goes on
            self.status["cache_check"] = {
                "ok": False,
                "seconds": time.perf_counter() - started,
                "error": str(e),
                "last_success": before.get("last_success"),
            }
            self._say(f"the cache_check report failed: {type(e).__name__}: {e}")
        finally:
            self.reader.verify = False

    def _say(self, line: str) -> None:
        if self.say:
            self.say(line)


class EnforcementCollector:
    """A host's exporter's collection (``minbw exporter --enforcement-host``): one cycle runs ``check`` (the host's
    enforcement checks, returning a :class:`minbw.reports.enforcement.HostReport`: one read of the host's data
    plane, and the Neutron and Placement calls of ``minbw enforcement show``) and leaves its families; a check that
    fails is served as failed (``minbw_report_success{report="enforcement"}`` 0, no enforcement samples) and said."""

    def __init__(
        self,
        check: Callable[[], object],
        *,
        clock: Callable[[], float] = time.time,
        say: Callable[[str], None] | None = None,
    ):
        self.check = check
        self.clock = clock
        self.say = say
        self.status: dict[str, dict] = {}

    def collect(self, slow: SlowResults | None = None) -> Collection:
        started = time.perf_counter()
        before = self.status.get("enforcement") or {}
        report = None
        try:
            report = self.check()
            self.status["enforcement"] = {
                "ok": True,
                "seconds": time.perf_counter() - started,
                "last_success": self.clock(),
            }
        except Exception as e:  # noqa: BLE001 - served as a failed check; the exporter goes on
            self.status["enforcement"] = {
                "ok": False,
                "seconds": time.perf_counter() - started,
                "error": str(e),
                "last_success": before.get("last_success"),
            }
            if self.say:
                self.say(f"the enforcement check failed: {type(e).__name__}: {e}")
        stats = {"seconds": time.perf_counter() - started}
        return Collection(
            tuple(metrics.enforcement_families(report, self.status)),
            finished=self.clock(),
            ok=report is not None,
            stats=stats,
        )
