"""Provider sync: observe Placement, plan (pure, :mod:`minbw.plan`), apply with the fewest calls.

Generations come from the previous response, never from a GET before each PUT.
A ``placement.concurrent_update`` is retried (jittered, bounded) only for providers
whose generation the caller did not pin. Independent host trees are written in parallel on a bounded
pool of ``workers`` threads, parents before children inside each tree.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from minbw.errors import ConcurrentUpdate, InvalidInput, MinbwError, PartialApply
from minbw.placement.client import Placement
from minbw.model.providers import Provider
from minbw.cache import synced
from minbw.cache.providers import DEFAULT_CACHE_CHECK_INTERVAL, DEFAULT_CACHE_MAX_AGE, ProviderCache
from minbw.readers.placement import Reader
from minbw.plan.providers import (
    Kept,
    Observed,
    Op,
    Plan,
    make_absent_plan,
    make_plan,
    make_warm_plan,
    owned_agents,
    warm_refusal,
)
from minbw.model.providers import DesiredState, freeze_inventories, skipped_line
from minbw.model.synced import Synced, Unchanged, state_scope
from minbw.nova.compute_root import NovaComputes

# With this many hypervisors or more, one listing of all providers is cheaper than
# two look-ups (by name, then the tree) per hypervisor.
LIST_ALL_FROM = 3
# progress(step, done, total) after each provider read and each write; the caller decides what to show
Progress = Callable[[str, int, int], None]

DEFAULT_WORKERS = 4  # host trees written (and providers read) at once
MAX_WORKERS = 32


def _quiet(step: str, done: int, total: int) -> None:
    pass


def check_workers(workers, option: str = "workers") -> int:
    """``workers``, when a whole number from 1 to MAX_WORKERS. Raises InvalidInput naming ``option`` otherwise."""
    if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= MAX_WORKERS:
        raise InvalidInput(
            f"{option}: expected a whole number from 1 to {MAX_WORKERS} (host trees written at "
            f"once; default {DEFAULT_WORKERS}), got {workers!r}"
        )
    return workers


def check_max_age(seconds, option: str = "cache_max_age") -> float:
    """``seconds`` as a float (0: every provider re-read). Raises InvalidInput naming ``option`` when negative or not
    a number."""
    return _seconds(
        seconds, option, f"0 re-reads every provider, as without the cache; default {DEFAULT_CACHE_MAX_AGE}"
    )


def check_check_interval(seconds, option: str = "cache_check_interval") -> float:
    """``seconds`` as a float (0: the safety check at every sync). Raises InvalidInput naming ``option`` when
    negative or not a number."""
    return _seconds(seconds, option, f"0 runs the safety check at every sync; default {DEFAULT_CACHE_CHECK_INTERVAL}")


def _seconds(seconds, option: str, meaning: str) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise InvalidInput(f"{option}: expected seconds >= 0 ({meaning}), got {seconds!r}")
    return float(seconds)


# the providers a sync looks at, by UUID, and the roots of its hypervisors, by name
Listed = tuple[Mapping[str, Provider], Mapping[str, Provider]]


def listing(api: Placement, desired: DesiredState) -> Listed:
    """What a sync lists of Placement: ``(providers by UUID, roots by hypervisor name)``. From 3 hypervisors on (or a
    kind swept whole), one listing of every provider; else each hypervisor's root by name, then its tree. Lets
    Placement's errors through (PlacementError)."""
    hyps = desired.looked_up
    providers: dict[str, Provider] = {}
    roots: dict[str, Provider] = {}
    if len(hyps) >= LIST_ALL_FROM or desired.sweep_kinds:  # a kind swept whole: its agents are found by listing
        everything = api.list_providers()
        providers = {p.uuid: p for p in everything}
        by_name = {p.name: p for p in everything}
        roots = {h: by_name[h] for h in hyps if h in by_name}
    else:
        for hyp in hyps:
            found = api.list_providers(name=hyp)
            if found:
                roots[hyp] = found[0]
                providers.update({p.uuid: p for p in api.list_providers(in_tree=found[0].uuid)})
    return providers, roots


@dataclass(frozen=True)
class Warm:
    """A warm sync's look at the listing: ``plan`` (no writes) when nothing changed since the last complete sync
    (``unchanged`` says why that is sure), else None and ``why`` not; ``listed`` the listing made (None: none made,
    the record alone said no), for the full path to use."""

    plan: Plan | None
    why: str
    unchanged: Unchanged | None = None
    listed: Listed | None = None


def warm(
    api: Placement,
    desired: DesiredState,
    fingerprint: str,
    cache_path: str | os.PathLike,
    *,
    check_interval: float,
    max_age: float,
    clock: Callable[[], float] = time.time,
) -> Warm:
    """The warm sync as the listing: the record of the last complete sync beside the cache at ``cache_path``, and
    when its fingerprint is ``fingerprint`` and no check is due, the listing compared with it
    (:func:`make_warm_plan`); the provider cache itself is not loaded. A :class:`Warm`. Lets Placement's errors
    through (PlacementError)."""
    last = synced.load(synced.record_path(cache_path, state_scope(desired)))
    if last is None:
        return Warm(None, "no record of a complete last sync")
    now = clock()
    refused = warm_refusal(last, fingerprint, now=now, check_interval=check_interval, max_age=max_age)
    if refused:  # the listing cannot change that: none made
        return Warm(None, refused)
    listed = listing(api, desired)
    plan, why = make_warm_plan(
        desired,
        last,
        fingerprint,
        listed[0],
        listed[1],
        now=now,
        check_interval=check_interval,
        max_age=max_age,
    )
    if plan is None:
        return Warm(None, why, listed=listed)
    return Warm(plan, why, Unchanged(len(plan.providers), fingerprint, last.at, check_interval), listed)


def observe(
    api: Placement,
    desired: DesiredState,
    progress: Progress = _quiet,
    *,
    allocations_of_all: bool = False,
    cache: ProviderCache | None = None,
    workers: int = DEFAULT_WORKERS,
    roots_too: bool = False,
    listed: Listed | None = None,
) -> Observed:
    """What Placement holds of ``desired``'s providers (``roots_too``: and the compute roots' traits and
    inventories, to correct the roots' inventories); ``listed``: :func:`listing`'s answer, made already."""
    seen, roots = listed if listed is not None else listing(api, desired)
    providers = dict(seen)  # those deleted since their listing are taken out below
    wanted = {p.uuid for p in desired.providers}
    agents = owned_agents(desired, providers.values())
    # an absent plan also removes the swept agents themselves
    stale = [
        p.uuid
        for p in providers.values()
        if (p.parent_uuid in agents or (allocations_of_all and p.uuid in agents)) and p.uuid not in wanted
    ]
    present = [u for u in wanted if u in providers] + stale
    if roots_too:
        present += [r.uuid for r in roots.values() if r.uuid not in present]
    # the reports' reader: the cache where it holds a provider at its listed generation, else a read (cached)
    reader = Reader(api, cache, workers=workers, progress=progress)
    present_providers = [providers[u] for u in present]
    trusted = reader.cached(present_providers, usages=False)
    to_read = [p for p in present_providers if p.uuid not in trusted]
    traits = {u: d.traits for u, d in trusted.items()}
    inventories = {u: d.inventories for u, d in trusted.items()}  # frozen already
    for u, d in reader.read_afresh(to_read, usages=False).items():
        traits[u], inventories[u] = d.traits, freeze_inventories(d.inventories)
    # deleted since the listing: absent (the plan makes it again if desired)
    gone = {p.uuid for p in to_read} - set(traits)
    for u in gone:
        providers.pop(u, None)
    present, stale = [u for u in present if u not in gone], [u for u in stale if u not in gone]
    allocations = {u: api.provider_allocations(u) for u in (present if allocations_of_all else stale)}
    return Observed(
        providers=providers,
        roots=roots,
        traits=traits,
        inventories=inventories,
        existing_traits=frozenset(api.existing_traits(desired.traits)),
        allocations=allocations,
        max_version=api.max_version(),
    )


@dataclass
class ApplyResult:
    writes: int = 0
    retries: int = 0
    found_applied: int = 0  # of ``writes``: found already made when re-read (a lost answer, a concurrent sync)
    applied: list[Op] = field(default_factory=list)
    kept: tuple[Kept, ...] = ()
    generations: dict[str, int] = field(default_factory=dict)
    # host trees whose writes failed while the others were made: {tree (root name), error, code, pending ops}
    failed: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The result as JSON values: the counts, the writes applied and providers kept (as dicts), the generations,
        and the failed host trees with their pending writes as dicts."""
        return {
            "writes": self.writes,
            "retries": self.retries,
            "found_applied": self.found_applied,
            "applied": [op.to_dict() for op in self.applied],
            "kept": [k.to_dict() for k in self.kept],
            "generations": dict(self.generations),
            "failed": [{**f, "pending": [op.to_dict() for op in f["pending"]]} for f in self.failed],
        }

    def failures(self) -> list[str]:
        """One line per host tree whose writes failed: which, why, what is left."""
        return [
            skipped_line(
                f"host tree {f['tree']}",
                f["tree"],
                f"{f['error']} — {len(f['pending'])} of its writes not made (the first: {f['pending'][0]})",
                "run the sync again: it resumes from what is in Placement",
            )
            for f in self.failed
        ]


def tree_of(plan: Plan, observed: Observed) -> Callable[[Op], str]:
    """The root provider whose tree an op writes in (its parents as the plan leaves them)."""

    def key(op: Op) -> str:
        u, seen = op.uuid or op.name, set()
        while u in plan.after and u not in seen:
            seen.add(u)
            parent = plan.after.source(u)[1]
            if not parent:
                return u
            u = parent
        prov = observed.providers.get(u)
        return prov.root_uuid if prov else u

    return key


class _Applier:
    def __init__(self, api: Placement, generations: dict[str, int], pinned: set[str], retries: int, progress: Progress):
        self.api = api
        self.gens = generations
        self.pinned = pinned
        self.max_retries = retries
        self.progress = progress
        self.total = 0
        self.result = ApplyResult()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.failed: dict[str, tuple[MinbwError, list[Op]]] = {}  # tree → what stopped it, its writes not made

    def _with_retry(self, op: Op, write: Callable[[int], int], refresh: Callable[[], int]) -> None:
        attempt = 0
        if op.uuid is None:
            raise AssertionError("a provider's write")
        while True:
            try:
                self.gens[op.uuid] = write(self.gens[op.uuid])
                break
            except ConcurrentUpdate:
                attempt += 1
                if op.uuid in self.pinned or attempt > self.max_retries:
                    raise
                with self._lock:
                    self.result.retries += 1
                time.sleep(self.api.retry.pause(attempt, conflict=True))  # jitter: let the other writer finish
                self.gens[op.uuid] = refresh()
        self._done(op)

    def _done(self, op: Op) -> None:
        with self._lock:  # one tree per thread: results and progress are shared
            self.result.writes += 1
            self.result.applied.append(op)
            self.progress("writes done", self.result.writes, self.total)

    def run(self, ops: Sequence[Op], tree: Callable[[Op], str], workers: int) -> None:
        """Apply ``ops``: the trait creations first, then each host tree's (by ``tree``) in order, ``workers`` trees
        at once. Returns None; a tree whose write raises a minbw error is recorded in ``failed`` and the others go
        on. A trait creation's minbw error, and any other error, is raised."""
        self.total = len(ops)
        for op in ops:  # traits first: every tree's set_traits may need them
            if op.action == "create_trait":
                self._one(op)
        trees: dict[str, list[Op]] = {}
        for op in ops:
            if op.action != "create_trait":
                trees.setdefault(tree(op), []).append(op)  # plan order kept: parents before children
        if workers <= 1 or len(trees) <= 1:
            for key, tree_ops in trees.items():
                self._tree(key, tree_ops)
            return
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self._tree, key, tree_ops) for key, tree_ops in trees.items()]
        errors = [f.exception() for f in futures if f.exception() is not None]
        if errors:  # not Placement's answer (a bug, an interrupt): the others stopped before their next tree
            raise errors[0]  # type: ignore[misc]  # f.exception() is not None, filtered above

    def _tree(self, key: str, ops: Sequence[Op]) -> None:
        """One host tree's writes in order; Placement refusing one (a provider deleted meanwhile, a conflict
        past its retries, ...) stops this tree only: the others go on."""
        if self._stop.is_set():
            return
        done = 0
        try:
            for op in ops:
                self._one(op)
                done += 1
        except MinbwError as e:
            with self._lock:
                self.failed[key] = (e, list(ops[done:]))
        except BaseException:
            self._stop.set()
            raise

    def _one(self, op: Op) -> None:
        api = self.api
        if op.action == "create_trait":
            api.create_trait(op.name)
            self._done(op)
            return
        if op.uuid is None:
            raise AssertionError("every other write names its provider")
        uuid = op.uuid  # the retries' lambdas' (a str)
        if op.action in ("create_root", "create_provider"):
            prov = api.create_provider(op.uuid, op.name, op.parent_uuid)
            self.gens[op.uuid] = prov.generation
            self._done(op)
            if op.action == "create_root" and op.inventories:
                self.gens[op.uuid] = api.set_inventories(op.uuid, op.inventories, prov.generation)
        elif op.action == "update_provider":
            prov = api.update_provider(op.uuid, op.name, op.parent_uuid, reparent=True)
            self.gens[op.uuid] = prov.generation
            self._done(op)
        elif op.action == "set_traits":
            self._with_retry(
                op,
                lambda g: api.set_provider_traits(uuid, op.traits, g),
                lambda: api.get_provider_traits(uuid)[1],
            )
        elif op.action == "set_inventories":
            self._with_retry(
                op, lambda g: api.set_inventories(uuid, op.inventories, g), lambda: api.get_inventories(uuid)[1]
            )
        elif op.action == "delete_provider":
            api.delete_provider(op.uuid)
            self._done(op)


def apply(
    api: Placement,
    plan: Plan,
    observed: Observed,
    *,
    pinned: Mapping[str, int] | None = None,
    retries: int = 10,
    progress: Progress = _quiet,
    workers: int = 1,
) -> ApplyResult:
    """Run the plan's writes: custom traits first, then each host tree's writes in plan order, up to
    ``workers`` trees at once. ``pinned`` generations are used as given and never retried."""
    gens = {u: p.generation for u, p in observed.providers.items()}
    gens.update(pinned or {})
    applier = _Applier(api, gens, set(pinned or {}), retries, progress)
    found_before = api.converged
    trees = tree_of(plan, observed)
    try:
        applier.run(plan.ops, trees, workers)
        if applier.failed and len(applier.failed) == len({trees(op) for op in plan.ops if op.action != "create_trait"}):
            raise next(iter(applier.failed.values()))[0]  # every tree failed: nothing could be done
    except MinbwError as e:
        applier.result.found_applied = api.converged - found_before
        # never leave a half-applied state unreported
        done = applier.result.applied
        made = {id(op) for op in done}  # the plan's own op objects: no equality scan of every pair
        raise PartialApply(
            e, done, len(plan.ops), applier.result, pending=[op for op in plan.ops if id(op) not in made]
        ) from e
    names = {u: plan.after.source(u)[0] for u in plan.after} | {u: p.name for u, p in observed.providers.items()}
    applier.result.failed = [
        {"tree": names.get(key, key), "error": str(e), "code": getattr(e, "code", None), "pending": pending}
        for key, (e, pending) in applier.failed.items()
    ]
    applier.result.found_applied = api.converged - found_before
    applier.result.kept = plan.kept
    pending = {op.uuid for f in applier.result.failed for op in f["pending"]}
    applier.result.generations = {u: g for u, g in gens.items() if u in plan.after and u not in pending}
    return applier.result


def remember(cache: ProviderCache, plan: Plan, result: ApplyResult) -> None:
    """What the sync left in Placement, at the generations its own writes returned. A provider this sync
    created has no usage yet (every allocation moves the generation); one it trusted keeps its entry's."""
    created = {op.uuid for op in result.applied if op.action in ("create_root", "create_provider")}
    for op in result.applied:
        if op.action == "delete_provider" and op.uuid is not None:  # a deletion names its provider
            cache.drop(op.uuid)
    for uuid, gen in result.generations.items():
        if uuid not in plan.after:
            continue
        name, parent, traits, inventories = plan.after.source(uuid)
        cache.written(uuid, gen, name, parent, traits, inventories or {}, created=uuid in created)


def sync_providers(
    api: Placement,
    desired: DesiredState,
    *,
    check: bool = False,
    create_root: bool = False,
    root_inventories: Mapping[str, Mapping] | None = None,
    absent: bool = False,
    progress: Progress = _quiet,
    cache: ProviderCache | None = None,
    workers: int = DEFAULT_WORKERS,
    nova: Callable[[], NovaComputes | None] | None = None,
    ignore_nova_compute: bool = False,
    fingerprint: str | None = None,
    listed: Listed | None = None,
) -> tuple[Plan, ApplyResult | None]:
    """Make Placement match ``desired`` (or, ``absent``, remove those providers where nothing is allocated).

    With a ``cache``, providers whose generation did not move since the last sync and that pass the
    cache's safety check are not read again. ``workers``: providers read and host trees written at once.
    ``nova``: reads what Nova knows of its computes (None where the cloud has no Nova), called only with
    ``create_root`` or ``root_inventories`` (:func:`make_plan`: a root's UUID, a refusal, a root not Nova's named).
    ``fingerprint`` (with a ``cache``, not in check mode, nor ``absent``, ``create_root`` or ``root_inventories``):
    of the desired state and options, kept with what a complete sync left (:func:`record`) for the next one's
    :func:`warm`, in place of the one before (a sync that writes moves the generations a record holds: an older one
    of another desired state is refused by its listing). ``listed``: :func:`listing`'s answer, made already
    (by :func:`warm`). Returns (plan, the apply's result: None when nothing was written); raises PartialApply when
    writes failed, and Placement's and the plan's errors.
    """
    workers = check_workers(workers)
    observed = observe(
        api,
        desired,
        progress,
        allocations_of_all=absent,
        cache=cache,
        workers=workers,
        roots_too=bool(root_inventories) and not absent,
        listed=listed,
    )
    if cache and fingerprint and not check:  # what Placement holds is this sync's to say now
        synced.forget(synced.record_path(cache.path, state_scope(desired)))
    if absent:
        plan = make_absent_plan(desired, observed)
    else:
        computes = nova() if nova is not None and (create_root or root_inventories) else None
        plan = make_plan(
            desired,
            observed,
            create_root=create_root,
            root_inventories=root_inventories,
            nova=computes,
            ignore_nova_compute=ignore_nova_compute,
        )
    warmable = fingerprint is not None and not (absent or create_root or root_inventories)
    if check or not plan.ops:
        if cache and not check:
            cache.save()
            if warmable:
                record(cache, desired, plan, observed, None, fingerprint or "")
        return plan, None
    try:
        result = apply(api, plan, observed, progress=progress, workers=workers)
    except MinbwError:
        if cache:  # what was written is uncertain: forget the providers the plan touches
            for op in plan.ops:
                cache.drop(op.uuid or "")
            cache.save()
        raise
    if cache:
        remember(cache, plan, result)
        for f in result.failed:  # a tree whose writes failed: what Placement holds there is not the plan's
            for op in f["pending"]:
                cache.drop(op.uuid or "")
        cache.save()
        if warmable:
            record(cache, desired, plan, observed, result, fingerprint or "")
    return plan, result


def record(
    cache: ProviderCache,
    desired: DesiredState,
    plan: Plan,
    observed: Observed,
    result: ApplyResult | None,
    fingerprint: str,
    clock: Callable[[], float] = time.time,
) -> Synced | None:
    """Keep what this sync left beside ``cache`` (saved) for the next one's :func:`warm`, when it is complete: no
    write failed, nothing kept for its allocations, every desired provider's generation known and its cache entry at
    that generation. Returns the record kept, or None (none kept)."""
    if plan.kept or (result is not None and result.failed):
        return None
    generations = {u: p.generation for u, p in observed.providers.items()}
    if result is not None:
        generations.update(result.generations)
    kept: dict[str, int] = {}
    verified = checked = clock()
    for spec in plan.providers:
        entry, generation = cache.entry(spec.uuid), generations.get(spec.uuid)
        if entry is None or generation is None or entry.get("generation") != generation:
            return None
        kept[spec.uuid] = generation
        verified = min(verified, ProviderCache.confirmed_at(entry) or 0)
        checked = min(checked, entry.get("checked", 0))
    last = Synced(
        fingerprint=fingerprint,
        at=clock(),
        roots={h: (observed.roots[h].uuid if h in observed.roots else None) for h in desired.hypervisors},
        generations=kept,
        agents=frozenset(owned_agents(desired, observed.providers.values())),
        verified=verified,
        checked=checked,
        warnings=plan.warnings,
        skipped=plan.skipped,
    )
    return last if synced.save(synced.record_path(cache.path, state_scope(desired)), last) else None


def summary(
    desired: DesiredState,
    plan: Plan,
    result: ApplyResult | None,
    *,
    seconds: float,
    calls: int,
    cache: ProviderCache | None = None,
    check: bool = False,
    unchanged: Unchanged | None = None,
) -> str:
    """One line: ``1000 hosts, 6000 providers: 0 created, 0 updated, 0 deleted (0 writes) in 12.3 s,
    23 calls (0.02/host); cache: 6000 of 6000 trusted after 18 checks, 0 re-read``."""
    ops = result.applied if result is not None else plan.ops
    by_uuid = collections.defaultdict(set)
    for op in ops:
        if op.uuid:
            by_uuid[op.uuid].add(op.action)
    roots = sum(1 for a in by_uuid.values() if "create_root" in a)
    created = sum(1 for a in by_uuid.values() if "create_provider" in a)
    deleted = sum(1 for a in by_uuid.values() if "delete_provider" in a)
    updated = len(by_uuid) - roots - created - deleted
    hosts = len(desired.hypervisors)
    verb = " planned" if check else ""
    line = (
        f"{hosts} host{'s' * (hosts != 1)}, {len(desired.providers)} providers: {created} created, "
        f"{updated} updated, {deleted} deleted"
        + (f", {roots} root{'s' * (roots != 1)} created" if roots else "")
        + f" ({len(ops)} writes{verb}) in {seconds:.1f} s, "
        f"{calls} calls ({calls / max(hosts, 1):.2f}/host)"
    )
    if unchanged is not None:  # the warm sync as the listing: the cache not loaded
        return line + "; " + str(unchanged)
    if cache is None:
        return line + "; no cache"
    return line + "; " + cache.summary()
