"""The provider cache: the traits and inventories a sync read or wrote, by provider, one JSON file per Placement
endpoint, trusted while a provider's generation, name and parent are unchanged and confirmed by the safety check
(:mod:`minbw.cache.check`); and the record of the last sync beside it. ``provider sync`` writes it; the reports
and the exporter read it (:class:`minbw.readers.placement.Reader`)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from minbw.cache import check
from minbw.cache.files import write_whole
from minbw.model.providers import Provider, ProviderDetail
from minbw.placement.client import Placement

DEFAULT_CACHE_MAX_AGE = 86400  # seconds an entry is trusted without a full re-read (the periodic full check)
# seconds an entry confirmed (read, written or by the safety check) is trusted by its generation alone: the sync's
# default; a cache made without ``check_interval`` checks at every use
DEFAULT_CACHE_CHECK_INTERVAL = 3600


def default_cache_path(endpoint: str, env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/minbw/providers-HASH.json`` (``~/.cache`` without it), one file per Placement endpoint
    (``env``: os.environ unless given)."""
    env = os.environ if env is None else env
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "minbw" / f"providers-{hashlib.sha256(endpoint.encode()).hexdigest()[:16]}.json"


class ProviderCache:
    """Traits and inventories a previous sync read or wrote, by provider, kept per Placement endpoint in
    one JSON file. An entry is a candidate while the provider's generation, name and parent are unchanged
    (Placement bumps the generation on every trait and inventory change, and of every provider that a
    ``PUT``/``POST`` of allocations allocates on) and it was last read or written less than ``max_age`` seconds
    ago (the periodic full check); :func:`verified` trusts the candidates confirmed less than ``check_interval``
    seconds ago (read, written, or by a safety check) and those that pass the safety check of
    :mod:`minbw.cache.check` now; the others are re-read. An entry's ``used`` is never served as a provider's
    usage: ``DELETE /allocations/{consumer}``, and a write that moves a consumer's allocations off a provider,
    free usage without moving that provider's generation (docs/placement-generations.md), so a usage read at a
    generation is an upper bound of the usage at that generation, which only the safety check uses (a provider
    with more room than its entry says is re-read). Saving merges into what other syncs saved
    meanwhile (under a lock file), so syncs of different hosts sharing the file lose nothing."""

    VERSION = 2

    def __init__(
        self,
        path: str | os.PathLike,
        endpoint: str,
        *,
        max_age: float = DEFAULT_CACHE_MAX_AGE,
        check_interval: float = 0,
        clock: Callable[[], float] = time.time,
        twin_of: ProviderCache | None = None,
    ):
        self.path = Path(path)
        self.endpoint = endpoint
        self.max_age = max_age
        self.check_interval = check_interval
        self.clock = clock
        self._seen: tuple | None = None  # the file as last loaded or saved (inode, size, mtime)
        if twin_of is None:
            self.entries: dict[str, dict] = self._load()
        else:  # :meth:`twin`
            self.entries, self._seen = dict(twin_of.entries), twin_of._seen
        self._changed: dict[str, dict | None] = {}
        # recent: trusted without a check, confirmed less than check_interval ago
        self.stats = {"candidates": 0, "checks": 0, "trusted": 0, "reread": 0, "recent": 0}
        self.trusted: set[str] = set()

    def _load(self) -> dict[str, dict]:
        """The file's entries (none when it cannot be read, or is of another version or endpoint), each made compact
        as it is decoded (:func:`_shrink`): at no time are the entries held as the file spells them (at 10,000 hosts,
        60,000 entries: 1.25 KiB each so, about 0.6 KiB compact)."""
        ints: dict[int, int] = {}
        strings: dict[str, str] = {}

        def entry(d: dict) -> dict:
            return _shrink(d, ints, strings) if "generation" in d and "inventories" in d else d

        try:
            with open(self.path, "rb") as f:
                self._seen = _identity(os.fstat(f.fileno()))
                data = json.loads(f.read(), object_hook=entry)
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("version") != self.VERSION or data.get("endpoint") != self.endpoint:
            return {}
        entries = data.get("providers") or {}
        if isinstance(entries, dict):  # a parent's UUID the string of its own entry's key where it has one
            keys = {u: u for u in entries if isinstance(u, str)}
            for e in entries.values():
                if isinstance(e, dict) and isinstance(parent := e.get("parent"), str) and parent in keys:
                    e["parent"] = keys[parent]
        return entries

    def twin(self) -> ProviderCache:
        """Another cache of the same file, endpoint and options, for another thread (the exporter's slow reports
        beside its collection), with its own counts, trust and changes, holding this cache's entry objects as they
        are now instead of a copy of the file's (at 10,000 hosts, 60,000 entries: about 35 MiB). Sharing them is
        safe because no entry is changed in place other than where the change is true for every holder: an entry
        is replaced whole (:meth:`put`, :meth:`save`), and changed only in its confirmation time (:meth:`confirm`:
        the safety check confirmed it against Placement) and in its name and parent made equal strings
        (:meth:`trust`), each one item's assignment."""
        return ProviderCache(
            self.path,
            self.endpoint,
            max_age=self.max_age,
            check_interval=self.check_interval,
            clock=self.clock,
            twin_of=self,
        )

    def candidate(self, prov: Provider, *, traits: bool = True) -> dict | None:
        """The entry of ``prov`` if it may be trusted (``traits``: only one that holds its traits)."""
        e = self.entries.get(prov.uuid)
        if (
            e
            and (e.get("generation"), e.get("name"), e.get("parent")) == (prov.generation, prov.name, prov.parent_uuid)
            and self.clock() - e.get("checked", 0) <= self.max_age
            and (not traits or e.get("traits") is not None)
        ):
            return e
        return None

    def entry(self, uuid: str) -> dict | None:
        """The entry of ``uuid`` whatever its generation and age, or None when the cache has none (not to be
        changed: :meth:`put` and the methods below change entries)."""
        return self.entries.get(uuid)

    def __contains__(self, uuid: object) -> bool:
        """Whether the cache has an entry of ``uuid``."""
        return uuid in self.entries

    def size(self) -> int:
        """How many entries the cache has, an int."""
        return len(self.entries)

    def holding(self, classes: Iterable[str]) -> set[str]:
        """UUIDs of the entries with an inventory of one of ``classes`` (whatever their generation), a set."""
        classes = frozenset(classes)
        return {u for u, e in self.entries.items() if not classes.isdisjoint(e["inventories"])}

    def trust(
        self, api: Placement, providers: Iterable[Provider], *, traits: bool = True, verify: bool = True
    ) -> dict[str, dict]:
        """The cache-trust protocol's first half for ``providers`` (as just listed): their candidates
        (:meth:`candidate`; ``traits``: only entries that hold traits), of those the ones :func:`verified` trusts
        (``verify`` False: every candidate, no safety check), counted in :attr:`stats` (the others are to be
        re-read) and remembered for :meth:`trusted_entry`. Returns uuid → entry of the trusted ones, in the
        order of ``providers``; their names and parents become the listing's strings (equal values). Lets
        Placement's errors of the safety check through (PlacementError)."""
        providers = list(providers)
        candidates = {p.uuid: e for p in providers if (e := self.candidate(p, traits=traits)) is not None}
        self.trusted = verified(api, self, candidates) if verify and candidates else set(candidates)
        self.stats["candidates"] += len(candidates)
        self.stats["trusted"] += len(self.trusted)
        self.stats["reread"] += len(candidates) - len(self.trusted)
        out = {}
        for p in providers:
            if p.uuid in self.trusted:
                e = out[p.uuid] = candidates[p.uuid]
                for k, v in (("name", p.name), ("parent", p.parent_uuid)):  # one copy of each string, the listing's
                    if k in e and e[k] is not v and e[k] == v:
                        e[k] = v
        return out

    def trusted_entry(self, uuid: str) -> dict | None:
        """The entry of ``uuid`` if the last :meth:`trust` trusted it, else None."""
        return self.entries.get(uuid) if uuid in self.trusted else None

    def provider_read(self, detail: ProviderDetail, *, traits: bool = True, usages: bool = True) -> None:
        """Record a provider read in full (the protocol's second half, after the re-read), when nothing moved
        between its listing and its reads (else nothing: what was read may mix two generations). ``traits`` /
        ``usages`` False: they were not read (an entry without them). Returns None."""
        if detail.unmoved:
            p = detail.provider
            self.put(
                p.uuid,
                p.generation,
                p.name,
                p.parent_uuid,
                detail.traits if traits else None,
                detail.inventories,
                used=dict(detail.usages or {}) if usages else None,
            )

    def allocations_read(self, uuid: str, generation: int | None, allocations: Mapping[str, Mapping[str, int]]) -> None:
        """``allocations`` (consumer → resources) of ``uuid`` read at ``generation``: its entry at that generation
        that knows no usage gets their sum as its usage (for the safety check), its read and confirmation times
        kept. Returns None."""
        entry = self.entries.get(uuid)
        if entry is None or entry.get("generation") != generation or entry.get("used") is not None:
            return
        used: dict[str, int] = {}
        for res in allocations.values():
            for rc, n in res.items():
                used[rc] = used.get(rc, 0) + n
        self.put(
            uuid,
            entry["generation"],  # the generation read (== generation, above): an int
            entry["name"],
            entry["parent"],
            entry["traits"],
            entry["inventories"],
            used=used,
            checked=entry.get("checked"),
            verified=self.confirmed_at(entry),
        )

    def written(
        self, uuid: str, generation: int, name: str, parent: str | None, traits, inventories, *, created: bool
    ) -> None:
        """Record what a sync wrote of a provider, at the generation its write returned: ``created`` by it, no
        usage yet (every allocation moves the generation); trusted by the last :meth:`trust`, its entry's usage and
        its read and confirmation times kept; else read now. Returns None."""
        old = self.trusted_entry(uuid)
        self.put(
            uuid,
            generation,
            name,
            parent,
            traits,
            inventories,
            used={} if created else (old or {}).get("used"),
            checked=old["checked"] if old else None,
            verified=self.confirmed_at(old) if old else None,
        )

    def summary(self) -> str:
        """This cache's counts since it was made, as one clause of the sync's summary line: ``cache: 6000 of 6000
        cached providers trusted after 18 checks, 0 re-read``."""
        st = self.stats
        recent = (
            f" ({st['recent']} confirmed less than {self.check_interval:g} s ago: no check due)" if st["recent"] else ""
        )
        return (
            f"cache: {st['trusted']} of {st['candidates']} cached providers trusted after "
            f"{st['checks']} checks{recent}, {st['reread']} re-read"
        )

    @staticmethod
    def confirmed_at(entry: Mapping) -> float | None:
        """When ``entry`` was last confirmed (read, written or by the safety check); a cache written before
        ``verified`` existed: when it was last read in full."""
        return entry.get("verified", entry.get("checked"))

    def due(self, entry: Mapping) -> bool:
        """Whether ``entry`` needs the safety check: confirmed ``check_interval`` seconds ago or longer."""
        return self.clock() - (self.confirmed_at(entry) or 0) >= self.check_interval

    def confirm(self, uuids) -> None:
        """The safety check confirmed these entries now."""
        now = self.clock()
        for u in uuids:
            e = self.entries[u]
            e["verified"] = now
            self._changed[u] = e

    def put(
        self,
        uuid: str,
        generation: int,
        name: str,
        parent: str | None,
        traits,
        inventories,
        *,
        used: Mapping[str, int] | None = None,
        checked: float | None = None,
        verified: float | None = None,
    ) -> None:
        """Record what was read of a provider at ``generation``; ``traits`` None: not read (a reader that needs
        none, the audit's, caches the inventories alone; the traits an entry at the same generation holds stay).
        ``checked`` / ``verified``: when it was last read in full / confirmed (default: now)."""
        old = self.entries.get(uuid)
        if traits is None and old is not None and old.get("generation") == generation:
            traits = old.get("traits")
        self.entries[uuid] = self._changed[uuid] = _shrink(
            {
                "generation": generation,
                "name": name,
                "parent": parent,
                "traits": None if traits is None else sorted(traits),
                "inventories": {rc: dict(i) for rc, i in inventories.items()},
                "used": dict(used) if used is not None else None,
                "checked": self.clock() if checked is None else checked,
                "verified": self.clock() if verified is None else verified,
            },
            _INTS,
        )

    def drop(self, uuid: str) -> None:
        """Forget the entry of ``uuid`` (nothing when there is none); ``save`` removes it from the file too. Returns
        None."""
        self.entries.pop(uuid, None)
        self._changed[uuid] = None

    def save(self) -> None:
        """Write this cache's changes, merged into what the file holds now; without changes, only take in what
        other syncs saved since (nothing is read when the file did not change). Raises the OSError when the file cannot
        be written (the file as it was): the exporter reports its cache check failed."""
        if not self._changed:
            if self._seen is not None and self._seen == _stat_identity(self.path):
                return
            self.entries = self._merged(self._load())
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self._seen is not None and self._seen == _stat_identity(self.path):
                merged = dict(self.entries)  # the file as this cache last loaded or saved it: not read again
            else:
                merged = self._merged(self._load())
            merged.update({u: e for u, e in self._changed.items() if e is not None})
            for u in [u for u, e in self._changed.items() if e is None]:
                merged.pop(u, None)
            written: list[tuple] = []  # the new file's identity, taken from its open temporary file

            def write(f: IO[Any]) -> None:
                json.dump({"version": self.VERSION, "endpoint": self.endpoint, "providers": merged}, f)
                f.flush()
                written.append(_identity(os.fstat(f.fileno())))

            write_whole(self.path, ".minbw-cache-", write, strict=True)
        self.entries, self._changed, self._seen = merged, {}, written[0]

    def _merged(self, saved: Mapping[str, dict]) -> dict[str, dict]:
        """``saved`` (the file's entries), an entry equal to this cache's being this cache's same object (the
        copy read back let go)."""
        return {u: e if (mine := self.entries.get(u)) is None or mine != e else mine for u, e in saved.items()}


def _identity(st: os.stat_result) -> tuple:
    return st.st_ino, st.st_size, st.st_mtime_ns


def _stat_identity(path: Path) -> tuple | None:
    try:
        return _identity(path.stat())
    except OSError:
        return None


_INTS: dict[int, int] = {}  # :func:`_shrink`'s numbers for :meth:`ProviderCache.put` (bounded)
# :func:`_shrink`'s traits, inventories and usages, one object per distinct value, shared by every entry of every
# cache in the process that holds that value (bounded: cleared when it grows past :data:`_SHARED_MOST`). At 10,000
# hosts the 60,000 entries hold 3 distinct inventories and 6 distinct trait sets: one dict of 2 classes' 6 fields
# each per entry was about 0.6 KiB of an entry's 1.25 KiB (tracemalloc; docs/benchmarks.md).
_SHARED: dict[tuple, Any] = {}
_SHARED_MOST = 1 << 16


def _shared(key: tuple, value):
    """The object kept for ``key`` (a value equal to ``value``, of the same types), else ``value``, kept. Never to be
    changed in place: an entry's traits, inventories and usage are replaced whole (:meth:`ProviderCache.put`)."""
    try:
        kept = _SHARED.get(key)
    except TypeError:  # not hashable (a cache file written by hand): kept apart
        return value
    if kept is None:
        if len(_SHARED) >= _SHARED_MOST:
            _SHARED.clear()
        kept = _SHARED[key] = value
    return kept


def _typed(value) -> tuple:
    """A key for ``value`` (a number, or a mapping of names to numbers) that tells 1, 1.0 and True apart."""
    if isinstance(value, dict):
        return tuple((k, type(v), _typed(v) if isinstance(v, dict) else v) for k, v in value.items())
    return (type(value), value)


def _shrink(entry: dict, ints: dict[int, int], strings: dict[str, str] | None = None) -> dict:
    """``entry`` (a cache entry) with its traits and resource classes interned, its integers shared through
    ``ints``, its traits, inventories and usage each one object per distinct value (:func:`_shared`), and its parent
    one string per distinct value through ``strings`` (when given): equal values, fewer objects. Returned."""
    # pylint: disable=unidiomatic-typecheck  # exact types, as json.load makes them: a bool is an int, not shared with 1
    if len(ints) > 1 << 16:
        ints.clear()
    traits = entry.get("traits")
    if traits:
        interned = [sys.intern(t) if type(t) is str else t for t in traits]
        entry["traits"] = _shared(("traits", *map(_typed, interned)), interned)
    for field_ in ("inventories", "used"):
        value = entry.get(field_)
        if isinstance(value, dict):
            value = {
                (sys.intern(rc) if type(rc) is str else rc): (
                    {
                        (sys.intern(k) if type(k) is str else k): ints.setdefault(v, v) if type(v) is int else v
                        for k, v in inv.items()
                    }
                    if isinstance(inv, dict)
                    else ints.setdefault(inv, inv)
                    if type(inv) is int
                    else inv
                )
                for rc, inv in value.items()
            }
            entry[field_] = _shared((field_, _typed(value)), value)
    parent = entry.get("parent")
    if strings is not None and type(parent) is str:
        entry["parent"] = strings.setdefault(parent, parent)
    return entry


def verified(api: Placement, cache: ProviderCache, candidates: Mapping[str, dict]) -> set[str]:
    """The candidates trusted: those confirmed less than the cache's ``check_interval`` ago, and of the others
    those the safety check confirms now (none when re-reading them costs fewer calls than the check)."""
    due = {u: e for u, e in candidates.items() if cache.due(e)}
    recent = set(candidates) - set(due)
    cache.stats["recent"] += len(recent)
    listings = check.listings(due.values())
    if not due or len(listings) >= 2 * len(due):  # two reads per provider are cheaper than the check
        return recent
    disagreeing: set[str] = set()
    for li in listings:  # one answer at a time, and of it only the candidates (up to 50 MB of JSON each)
        listed = {p.uuid for p in api.list_providers(**li.filters()) if p.uuid in due}
        disagreeing |= check.disagreeing(due, {li: listed})
    cache.stats["checks"] += len(listings)
    confirmed = set(due) - disagreeing
    cache.confirm(confirmed)
    return recent | confirmed


def sync_record_path(cache_path: str | os.PathLike) -> Path:
    """Where the last sync against a cache's Placement is recorded: beside the cache file."""
    path = Path(cache_path)
    return path.with_name(
        path.name.replace("providers-", "sync-", 1) if path.name.startswith("providers-") else path.name + ".sync"
    )


def record_sync(
    cache_path: str | os.PathLike, ok: bool, writes: int = 0, clock: Callable[[], float] = time.time
) -> None:
    """Record a sync's end (the exporter's ``minbw_sync_*`` metrics read it): when, whether it succeeded, its writes,
    and when one last succeeded. Raises the OSError when the record cannot be written (the record as it was)."""
    path = sync_record_path(cache_path)
    now = clock()
    before = read_sync_record(cache_path) or {}
    record = {"time": now, "ok": ok, "writes": writes, "last_success": now if ok else before.get("last_success")}
    write_whole(path, ".minbw-sync-", lambda f: json.dump(record, f), strict=True)


def read_sync_record(cache_path: str | os.PathLike) -> dict | None:
    """The record of the last sync (``time``, ``ok``, ``writes``, ``last_success``), or None when there is none or it
    cannot be read."""
    try:
        record = json.loads(sync_record_path(cache_path).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and "time" in record else None
