"""Provider sync: observe Placement, plan (pure, :mod:`minbw.plan`), apply with the fewest calls.

Generations come from the previous response, never from a GET before each PUT.
A ``placement.concurrent_update`` is retried (jittered, bounded) only for providers
whose generation the caller did not pin.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from minbw.errors import ConcurrentUpdate, MinbwError, PartialApply
from minbw.placement.client import Placement
from minbw.model.providers import Provider
from minbw.plan.providers import Kept, Observed, Op, Plan, make_absent_plan, make_plan
from minbw.model.providers import DesiredState, freeze_inventories

# With this many hypervisors or more, one listing of all providers is cheaper than
# two look-ups (by name, then the tree) per hypervisor.
LIST_ALL_FROM = 3
# progress(step, done, total) after each provider read and each write; the caller decides what to show
Progress = Callable[[str, int, int], None]


def _quiet(step: str, done: int, total: int) -> None:
    pass


class ProviderCache:
    """Traits and inventories a previous sync read or wrote, by provider, trusted only while the
    provider's generation, name and parent are unchanged (Placement bumps the generation on every
    trait, inventory or allocation change). Opt-in: a provider deleted and re-created by someone
    else at the very same generation with other content would go unnoticed until the cache is
    dropped. Kept per Placement endpoint in one JSON file."""

    VERSION = 1

    def __init__(self, path: str | os.PathLike, endpoint: str):
        self.path = Path(path)
        self.endpoint = endpoint
        self.entries: dict[str, dict] = {}
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            data = {}
        if data.get("version") == self.VERSION and data.get("endpoint") == endpoint:
            self.entries = data.get("providers", {})
        self.hits = 0

    def get(self, prov: Provider) -> tuple[frozenset[str], Mapping] | None:
        e = self.entries.get(prov.uuid)
        if e and (e["generation"], e["name"], e["parent"]) == (prov.generation, prov.name, prov.parent_uuid):
            self.hits += 1
            return frozenset(e["traits"]), freeze_inventories(e["inventories"])
        return None

    def put(self, uuid: str, generation: int, name: str, parent: str | None, traits, inventories) -> None:
        self.entries[uuid] = {"generation": generation, "name": name, "parent": parent,
                              "traits": sorted(traits), "inventories": {rc: dict(i) for rc, i in inventories.items()}}

    def drop(self, uuid: str) -> None:
        self.entries.pop(uuid, None)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".minbw-cache-")
        with os.fdopen(fd, "w") as f:
            json.dump({"version": self.VERSION, "endpoint": self.endpoint, "providers": self.entries}, f)
        os.replace(tmp, self.path)


def observe(api: Placement, desired: DesiredState, progress: Progress = _quiet, *,
            allocations_of_all: bool = False, cache: ProviderCache | None = None) -> Observed:
    hyps = desired.hypervisors
    providers: dict[str, Provider] = {}
    roots: dict[str, Provider] = {}
    if len(hyps) >= LIST_ALL_FROM:
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
    wanted = {p.uuid for p in desired.providers}
    agents = {p.uuid for p in desired.providers if p.role == "agent"}
    stale = [p.uuid for p in providers.values() if p.parent_uuid in agents and p.uuid not in wanted]
    present = [u for u in wanted if u in providers] + stale
    traits: dict[str, frozenset[str]] = {}
    inventories: dict[str, Mapping] = {}
    to_read = []
    for u in present:
        hit = cache.get(providers[u]) if cache else None
        if hit:
            traits[u], inventories[u] = hit
        else:
            to_read.append(u)

    for i, d in enumerate(api.provider_details(providers[u] for u in to_read), 1):
        p = d.provider
        traits[p.uuid], inventories[p.uuid] = d.traits, freeze_inventories(d.inventories)
        if cache and d.unmoved:  # nothing moved between the listing and the reads
            cache.put(p.uuid, p.generation, p.name, p.parent_uuid, d.traits, inventories[p.uuid])
        progress("providers read", i, len(to_read))
    allocations = {u: api.provider_allocations(u) for u in (present if allocations_of_all else stale)}
    return Observed(providers=providers, roots=roots, traits=traits, inventories=inventories,
                    existing_traits=frozenset(api.existing_traits(desired.traits)),
                    allocations=allocations, max_version=api.max_version())


@dataclass
class ApplyResult:
    writes: int = 0
    retries: int = 0
    found_applied: int = 0  # of ``writes``: found already made when re-read (a lost answer, a concurrent sync)
    applied: list[Op] = field(default_factory=list)
    kept: tuple[Kept, ...] = ()
    generations: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"writes": self.writes, "retries": self.retries, "found_applied": self.found_applied,
                "applied": [op.to_dict() for op in self.applied], "kept": [k.to_dict() for k in self.kept],
                "generations": dict(self.generations)}


class _Applier:
    def __init__(self, api: Placement, generations: dict[str, int], pinned: set[str], retries: int,
                 progress: Progress):
        self.api = api
        self.gens = generations
        self.pinned = pinned
        self.max_retries = retries
        self.progress = progress
        self.total = 0
        self.result = ApplyResult()

    def _with_retry(self, op: Op, write: Callable[[int], int], refresh: Callable[[], int]) -> None:
        attempt = 0
        while True:
            try:
                self.gens[op.uuid] = write(self.gens[op.uuid])
                break
            except ConcurrentUpdate:
                attempt += 1
                if op.uuid in self.pinned or attempt > self.max_retries:
                    raise
                self.result.retries += 1
                time.sleep(self.api.retry.pause(attempt, conflict=True))  # jitter: let the other writer finish
                self.gens[op.uuid] = refresh()
        self._done(op)

    def _done(self, op: Op) -> None:
        self.result.writes += 1
        self.result.applied.append(op)
        self.progress("writes done", self.result.writes, self.total)

    def run(self, ops: Sequence[Op]) -> None:
        api = self.api
        self.total = len(ops)
        for op in ops:
            if op.action == "create_trait":
                api.create_trait(op.name)
                self._done(op)
            elif op.action in ("create_root", "create_provider"):
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
                self._with_retry(op, lambda g, op=op: api.set_provider_traits(op.uuid, op.traits, g),
                                 lambda op=op: api.get_provider_traits(op.uuid)[1])
            elif op.action == "set_inventories":
                self._single_inventory(op)
            elif op.action == "delete_provider":
                api.delete_provider(op.uuid)
                self._done(op)

    def _single_inventory(self, op: Op) -> None:
        self._with_retry(op, lambda g: self.api.set_inventories(op.uuid, op.inventories, g),
                         lambda: self.api.get_inventories(op.uuid)[1])


def apply(api: Placement, plan: Plan, observed: Observed, *, pinned: Mapping[str, int] | None = None,
          retries: int = 10, progress: Progress = _quiet) -> ApplyResult:
    """Run the plan's writes in order. ``pinned`` generations are used as given and never retried."""
    gens = {u: p.generation for u, p in observed.providers.items()}
    gens.update(pinned or {})
    applier = _Applier(api, gens, set(pinned or {}), retries, progress)
    found_before = api.converged
    try:
        applier.run(plan.ops)
    except MinbwError as e:
        applier.result.found_applied = api.converged - found_before
        # never leave a half-applied state unreported
        done = applier.result.applied
        raise PartialApply(e, done, len(plan.ops), applier.result,
                           pending=[op for op in plan.ops if op not in done]) from e
    applier.result.found_applied = api.converged - found_before
    applier.result.kept = plan.kept
    applier.result.generations = {u: g for u, g in gens.items() if u in plan.after}
    return applier.result


def remember(cache: ProviderCache, plan: Plan, result: ApplyResult) -> None:
    """What the sync left in Placement, at the generations its own writes returned."""
    for op in result.applied:
        if op.action == "delete_provider":
            cache.drop(op.uuid)
    for uuid, gen in result.generations.items():
        after = plan.after.get(uuid)
        if after is not None:
            cache.put(uuid, gen, after["name"], after["parent_provider_uuid"], after["traits"], after["inventories"])


def sync(api: Placement, desired: DesiredState, *, check: bool = False, create_root: bool = False,
         root_inventories: Mapping[str, Mapping] | None = None, absent: bool = False,
         progress: Progress = _quiet, cache: ProviderCache | None = None) -> tuple[Plan, ApplyResult | None]:
    """Make Placement match ``desired`` (or, ``absent``, remove those providers where nothing is allocated).

    With a ``cache``, providers whose generation did not move since the last sync are not read again.
    """
    observed = observe(api, desired, progress, allocations_of_all=absent, cache=cache)
    if absent:
        plan = make_absent_plan(desired, observed)
    else:
        plan = make_plan(desired, observed, create_root=create_root, root_inventories=root_inventories)
    if check or not plan.ops:
        if cache and not check:
            cache.save()
        return plan, None
    try:
        result = apply(api, plan, observed, progress=progress)
    except MinbwError:
        if cache:  # what was written is uncertain: forget the providers the plan touches
            for op in plan.ops:
                cache.drop(op.uuid or "")
            cache.save()
        raise
    if cache:
        remember(cache, plan, result)
        cache.save()
    return plan, result
