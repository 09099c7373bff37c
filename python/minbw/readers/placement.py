"""Reading Placement for the reports at the floor: one listing of every provider, then only the providers a
report needs (the bandwidth providers; for a capacity count, those with room for the request), each read once,
in parallel on a bounded pool, and not at all while the provider cache (:mod:`minbw.cache`, shared with the
sync) holds it at the generation the listing shows.

The bandwidth providers are found without reading anything: Neutron's agent and device providers by the names and
uuid5 UUIDs Neutron gives them (:func:`neutron_providers`), the providers the cache knows to hold a bandwidth or
packet-rate inventory, and (``listings``) those that ``GET /resource_providers?resources=CLASS:1`` returns for
each of those classes (any other provider with room). A provider that none of these names — not Neutron's, never
read, and full — is not seen until it has room again or is read once (docs/benchmarks.md, "Reports").
"""

from __future__ import annotations

import functools
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, overload

from minbw.model.providers import Provider, ProviderDetail, freeze_inventories
from minbw.neutron import naming
from minbw.placement.client import Placement
from minbw.cache.providers import ProviderCache

READERS = 4  # providers read at once
Progress = Callable[[str, int, int], None]


# ---------------------------------------------------------------- which providers


def neutron_providers(providers: Iterable[Provider]) -> set[str]:
    """UUIDs of Neutron's agent and device providers in a listing: a name ``HOST:AGENT TYPE`` or ``HOST:AGENT
    TYPE:DEVICE`` whose UUID is the uuid5 Neutron derives from it (neutron-lib's placement utils). No read."""
    return {p.uuid for p in providers if _is_neutrons(p.uuid, p.name)}


@functools.lru_cache(maxsize=1 << 18)  # the exporter lists the same providers each cycle (70,000 at 10,000 hosts)
def _is_neutrons(uuid: str, name: str) -> bool:
    for kind in naming.AGENT_KINDS.values():
        suffix = ":" + kind.agent_type
        if name.endswith(suffix) and uuid == naming.agent_rp_uuid(kind, name[: -len(suffix)]):
            return True
        if suffix + ":" in name:
            host, device = name.split(suffix + ":", 1)
            if uuid == naming.device_rp_uuid(kind, host, device):
                return True
    return False


def holds_bandwidth(inventories: Mapping) -> bool:
    """Whether ``inventories`` (keyed by resource class) has a guaranteed bandwidth or packet-rate class."""
    return any(rc in naming.GUARANTEED_CLASSES for rc in inventories)


@dataclass(frozen=True)
class Reading:
    """What a report read: ``providers`` every provider (the one listing), ``details`` those read or trusted
    from the cache (traits, inventories, usages), ``allocations`` provider → consumer → resources (when asked),
    ``stats`` the counts (listed, selected, trusted, read, allocation reads, checks, calls)."""

    providers: Mapping[str, Provider]
    details: Mapping[str, ProviderDetail]
    allocations: Mapping[str, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)
    stats: Mapping[str, int] = field(default_factory=dict)

    def names(self) -> dict[str, str]:
        """provider UUID → its name, for every listed provider."""
        return {u: p.name for u, p in self.providers.items()}

    def hosts(self) -> dict[str, str | None]:
        """provider → its host (its root's name)."""
        names = self.names()
        return {u: names.get(p.root_uuid) for u, p in self.providers.items()}

    def bandwidth(self) -> list[ProviderDetail]:
        """The details of the providers that hold a bandwidth or packet-rate inventory, a list."""
        return [d for d in self.details.values() if holds_bandwidth(d.inventories)]


class Reader:
    """Reads providers for the reports: ``cache`` (a :class:`ProviderCache`, or None) trusted for providers
    whose generation did not move, after its safety check unless ``verify`` is off (the exporter runs the check
    on its slow interval); ``workers`` reads at once; ``progress(step, done, total)`` after each read."""

    def __init__(
        self,
        api: Placement,
        cache: ProviderCache | None = None,
        *,
        workers: int = READERS,
        progress: Progress | None = None,
        verify: bool = True,
    ):
        self.api = api
        self.cache = cache
        self.workers = max(1, workers)
        self.progress = progress
        self.verify = verify
        self.read = 0  # providers read so far (not trusted from the cache)
        self.usages_read = 0  # usages read of providers whose traits and inventories the cache held
        self.gone: set[str] = set()  # providers the last read found deleted since their listing (left out)
        # (uuid, usages, traits) → (listed provider, cache entry, usages, detail): a detail built from the cache is
        # built again only when the provider's listing, its cache entry or its usage changed (the exporter's reader
        # lives long)
        self._built: dict[tuple[str, bool, bool], tuple[Provider, dict, Mapping | None, ProviderDetail]] = {}
        # uuid → the provider as last listed: a listing's providers that did not change are these same objects,
        # their parents' and roots' UUIDs the providers' own strings (one copy of each, not one per listing kept)
        self._listed: dict[str, Provider] = {}
        # equal inventories and traits of the details built from the cache: one object each
        self._frozen: dict = {}

    def listing(self, **filters: str) -> list[Provider]:
        """The providers ``GET /resource_providers`` lists with ``filters``, the unchanged ones as the objects listed
        before (without filters, those gone are forgotten). Lets Placement's errors through (PlacementError)."""
        listed, out = self._listed, []
        providers = self.api.list_providers(**filters)
        here = {p.uuid: p.uuid for p in providers}

        @overload
        def same(u: str) -> str: ...

        @overload
        def same(u: None) -> None: ...

        def same(u: str | None) -> str | None:  # the one string of a provider's UUID
            if u is None:
                return None
            kept = listed.get(u)
            return kept.uuid if kept is not None else here.get(u, u)

        for p in providers:
            kept = listed.get(p.uuid)
            if (
                kept is None
                or kept != p
                or kept.root_uuid is not same(kept.root_uuid)
                or (kept.parent_uuid is not None and kept.parent_uuid is not same(kept.parent_uuid))
            ):
                kept = listed[p.uuid] = Provider(
                    same(p.uuid),
                    kept.name if kept is not None and kept.name == p.name else p.name,
                    p.generation,
                    same(p.parent_uuid),
                    same(p.root_uuid),
                )
            out.append(kept)
        if not filters:  # every provider: those gone are forgotten
            self._listed = {p.uuid: p for p in out}
        return out

    def _share(self, key, value):
        """``value`` (frozen inventories, a frozenset of traits), or the equal one kept under ``key``."""
        kept = self._frozen.get(key)
        if kept is None:
            kept = self._frozen[key] = value
        return kept

    def with_room(self, classes: Iterable[str] = naming.GUARANTEED_CLASSES) -> dict[str, set[str]]:
        """class → the providers that can take one more unit of it now (one ``?resources=CLASS:1`` listing
        each): they hold an inventory of it and are not full, let alone over capacity."""
        return {rc: {p.uuid for p in self.listing(resources=f"{rc}:1")} for rc in sorted(classes)}

    def bandwidth_scope(self, providers: Iterable[Provider], *, listings: bool = True) -> set[str]:
        """The providers that hold (or may hold) bandwidth or packet rate (the module docstring says how)."""
        providers = list(providers)
        known = {p.uuid for p in providers}
        scope = neutron_providers(providers)
        if self.cache is not None:
            scope |= self.cache.holding(naming.GUARANTEED_CLASSES)
        if listings:
            scope |= set().union(*self.with_room().values())
        return scope & known

    def cached(
        self, providers: Iterable[Provider], *, usages: bool = True, traits: bool = True
    ) -> dict[str, ProviderDetail]:
        """The details of ``providers`` whose traits (when asked) and inventories the cache holds at their listed
        generation, after its safety check unless ``verify`` is off. Their usage (when asked) is read now, one
        read per provider with an inventory, ``workers`` at once: a generation does not move when allocations
        are deleted, so no usage is served from the cache."""
        cache = self.cache
        self.gone = set()  # of these providers, those deleted since their listing (this call's)
        if cache is None:
            return {}
        providers = list(providers)
        trusted = cache.trust(self.api, providers, traits=traits, verify=self.verify)
        fresh: dict[str, dict[str, int]] = {}
        if usages:
            need = [u for u, e in trusted.items() if e["inventories"]]
            fresh = self.api.usages_of(need, readers=self.workers, missing_ok=True) if need else {}
            self.usages_read += len(need)
            self.gone |= set(need) - set(fresh)  # deleted since the listing: not there any more
        out = {}
        for p in providers:
            if p.uuid in trusted and p.uuid not in self.gone:
                e = trusted[p.uuid]
                used = fresh.get(p.uuid, {}) if usages else None
                key = (p.uuid, usages, traits)
                built = self._built.get(key)
                if built is None or built[0] != p or built[1] != e or built[2] != used:
                    inventories = freeze_inventories(e["inventories"])
                    inventories = self._share(
                        tuple((rc, tuple(inv.items())) for rc, inv in inventories.items()), inventories
                    )
                    has = frozenset(e["traits"] or ())
                    if used:  # its classes' names the interned ones, not this answer's copies
                        used = {sys.intern(rc): n for rc, n in used.items()}
                    detail = ProviderDetail(p, self._share(has, has), inventories, used, True)
                    built = (p, e, used, detail)
                    if usages:  # (the safety check's details, without usages, are not kept: it drops them)
                        self._built[key] = built
                elif built[1] is not e:  # the same entry saved and loaded again: the old one let go
                    built = self._built[key] = (p, e, built[2], built[3])
                out[p.uuid] = built[3]
        if len(self._built) > 2 * cache.size() + 1000:  # providers deleted since: forget them
            self._built = {k: v for k, v in self._built.items() if k[0] in cache}
        if len(self._frozen) > cache.size() + 1000:
            self._frozen = {}
        return out

    def details(
        self, providers: Iterable[Provider], *, usages: bool = True, traits: bool = True
    ) -> dict[str, ProviderDetail]:
        """Traits, inventories (and usages) of ``providers``: from the cache where it holds them at the listed
        generation (their usage read now, when asked), else read (up to 3 calls each, ``workers`` at once) and cached.
        ``traits`` False: a caller that needs none (the audit) does not read them (nor cache them)."""
        providers = list(providers)
        out = self.cached(providers, usages=usages, traits=traits)
        out.update(
            self.read_afresh(
                [p for p in providers if p.uuid not in out and p.uuid not in self.gone], usages=usages, traits=traits
            )
        )
        return out

    def read_afresh(
        self, providers: Iterable[Provider], *, usages: bool = True, traits: bool = True
    ) -> dict[str, ProviderDetail]:
        """Traits (when asked), inventories (and usages) of ``providers`` read, whatever the cache holds (up to 3
        calls each, ``workers`` at once), and cached (:meth:`ProviderCache.provider_read`). Returns uuid → detail;
        a provider deleted since its listing is left out. Lets Placement's other errors through (PlacementError)."""
        to_read = list(providers)
        self.read += len(to_read)
        out = {}
        for i, d in enumerate(
            self.api.provider_details(to_read, usages=usages, readers=self.workers, traits=traits, missing_ok=True), 1
        ):
            out[d.provider.uuid] = d
            if self.cache is not None:
                self.cache.provider_read(d, traits=traits, usages=usages)
            if self.progress:
                self.progress("providers read", i, len(to_read))
        return out

    def allocations(self, uuids: Iterable[str]) -> dict[str, dict[str, dict[str, int]]]:
        """provider → consumer → resources, one read per provider, ``workers`` at once. A cached provider whose
        allocations are read at its cached generation gets its usage from them (for the cache's safety check)."""
        uuids = list(uuids)

        def read(u: str) -> tuple[str, dict, int | None]:
            body = self.api.provider_allocations(u, with_generation=True)
            return (
                u,
                {c: dict(a["resources"]) for c, a in body["allocations"].items()},
                body.get("resource_provider_generation"),
            )

        out = {}
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            for i, (u, allocs, generation) in enumerate(pool.map(read, uuids), 1):
                out[u] = allocs
                if self.cache is not None:
                    self.cache.allocations_read(u, generation, allocs)
                if self.progress:
                    self.progress("allocations read", i, len(uuids))
        return out

    def save(self) -> None:
        """Save the cache's changes (nothing without a cache). Returns None."""
        if self.cache is not None:
            self.cache.save()


def read_bandwidth(
    reader: Reader, *, allocations: bool = False, listings: bool = True, providers: list[Provider] | None = None
) -> Reading:
    """Every provider listed once; the bandwidth providers' traits, inventories and usages (the cache where it
    can). With ``allocations`` (the audit): their allocations instead, the floor, one allocation read per
    bandwidth provider, and no other read of a provider the listings or the cache already tell about
    (:func:`_read_allocations`)."""
    calls = reader.api.calls
    providers = reader.listing() if providers is None else providers
    by_uuid = {p.uuid: p for p in providers}
    if allocations:
        details, allocs, scope = _read_allocations(reader, by_uuid, listings)
        bandwidth = list(allocs)
    else:
        scope = reader.bandwidth_scope(providers, listings=listings)
        details = reader.details((by_uuid[u] for u in sorted(scope)))
        bandwidth = [u for u, d in details.items() if holds_bandwidth(d.inventories)]
        allocs = {}
    return Reading(
        by_uuid,
        details,
        allocs,
        {
            "listed": len(providers),
            "selected": len(scope),
            "bandwidth": len(bandwidth),
            "allocation_reads": len(allocs),
            "calls": reader.api.calls - calls,
        },
    )


def _read_allocations(
    reader: Reader, by_uuid: Mapping[str, Provider], listings: bool
) -> tuple[dict[str, ProviderDetail], dict[str, dict[str, dict[str, int]]], set[str]]:
    """The audit's read: ``(details, allocations, scope)``. A provider in a ``?resources=CLASS:1`` listing of a
    bandwidth or packet-rate class holds that class and has room in it; one the cache holds at its generation
    is known. The others of the scope (Neutron's providers that are full, over capacity, or hold nothing: its
    agents) have their inventories read (no traits: the audit needs none). Then one allocation read per
    bandwidth provider, and the inventories of those the listings do not clear: a provider holding allocations
    of a class whose with-room listing lacks it may be over capacity; the others cannot be, and the capacity
    check needs no inventory of theirs."""
    with_room = reader.with_room() if listings else {}
    listed = set().union(*with_room.values()) & set(by_uuid)
    scope = reader.bandwidth_scope(by_uuid.values(), listings=False) | listed
    details = reader.cached([by_uuid[u] for u in sorted(scope)], usages=False, traits=False)
    details.update(
        reader.details([by_uuid[u] for u in sorted(scope - listed - set(details))], usages=False, traits=False)
    )
    bandwidth = sorted(u for u in scope if u in listed or (u in details and holds_bandwidth(details[u].inventories)))
    allocs = reader.allocations(bandwidth)
    suspects = [
        by_uuid[u]
        for u in bandwidth
        if u not in details and any(u not in with_room.get(rc, ()) for res in allocs[u].values() for rc in res)
    ]
    details.update(reader.details(suspects, usages=False, traits=False))
    return details, allocs, scope


def read_for_capacity(
    reader: Reader,
    providers: list[Provider],
    items: Iterable[tuple[str, int]],
    *,
    everything: bool = False,
    shared: Iterable[str] = (),
) -> list[ProviderDetail]:
    """What a capacity count needs of ``providers``: those that can take one more of some ``(class, amount)``
    item of the request now (one ``?resources=CLASS:AMOUNT`` listing per item: any other would hold no server),
    the bandwidth providers (for the usage table), the sharing providers and the roots of their trees (their
    traits), read or from the cache; the rest stand in their trees with nothing to offer. ``everything``
    (a request group of traits alone): every provider."""
    by_uuid = {p.uuid: p for p in providers}
    if everything:
        selected = set(by_uuid)
    else:
        selected = reader.bandwidth_scope(providers, listings=False) | (set(shared) & set(by_uuid))
        for rc, amount in sorted(set(items)):
            selected |= {p.uuid for p in reader.listing(resources=f"{rc}:{amount}")} & set(by_uuid)
        selected |= {by_uuid[u].root_uuid for u in selected if by_uuid[u].root_uuid in by_uuid}
    details = reader.details(by_uuid[u] for u in sorted(selected))
    return [details.get(u) or ProviderDetail(p, frozenset(), {}, {}, True) for u, p in by_uuid.items()]


def roots_over_capacity(
    reader: Reader, providers: Iterable[Provider], skip: Iterable[str] = ()
) -> dict[str, ProviderDetail]:
    """The root providers (compute nodes) that may be over capacity, read with their usages. Their classes come
    from the cache (whatever its generation: an inventory is not over capacity before it holds allocations),
    else from one inventories read per root (cached with its traits); then one ``?resources=CLASS:1`` listing
    per class: a root missing from the listing of a class it holds (full, or over) is read."""
    skip = set(skip)
    roots = [p for p in providers if p.parent_uuid is None and p.uuid not in skip]
    classes_of = {
        p.uuid: set(e["inventories"])
        for p in roots
        if (e := (reader.cache.entry(p.uuid) if reader.cache else None)) is not None
    }
    unknown = [p for p in roots if p.uuid not in classes_of]
    saved, reader.verify = reader.verify, False
    try:
        for u, d in reader.details(unknown, usages=False, traits=False).items():
            classes_of[u] = set(d.inventories)
        with_room = {
            rc: {p.uuid for p in reader.listing(resources=f"{rc}:1")}
            for rc in sorted(set().union(*classes_of.values()) if classes_of else ())
        }
        suspects = [p for p in roots if any(p.uuid not in with_room[rc] for rc in classes_of.get(p.uuid, ()))]
        return reader.read_afresh(suspects)  # their usage moved with every claim: read whatever the cache holds
    finally:
        reader.verify = saved
