"""Provider sync: observe Placement, plan (pure, :mod:`minbw.plan`), apply with the fewest calls.

Generations come from the previous response, never from a GET before each PUT.
A ``placement.concurrent_update`` is retried (jittered, bounded) only for providers
whose generation the caller did not pin.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from minbw.errors import ConcurrentUpdate, MinbwError
from minbw.placement import Placement, Provider
from minbw.plan import Kept, Observed, Op, Plan, make_absent_plan, make_plan
from minbw.providers import DesiredState, freeze_inventories

# With this many hypervisors or more, one listing of all providers is cheaper than
# two look-ups (by name, then the tree) per hypervisor.
LIST_ALL_FROM = 3
Progress = Callable[[str], None]


def _quiet(msg: str) -> None:
    pass


def observe(api: Placement, desired: DesiredState, progress: Progress = _quiet, *,
            allocations_of_all: bool = False) -> Observed:
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
    for i, u in enumerate(present, 1):
        t, _ = api.get_provider_traits(u)
        inv, _ = api.get_inventories(u)
        traits[u] = frozenset(t)
        inventories[u] = freeze_inventories(inv)
        if i % 500 == 0:
            progress(f"read {i}/{len(present)} providers")
    allocations = {u: api.provider_allocations(u) for u in (present if allocations_of_all else stale)}
    return Observed(providers=providers, roots=roots, traits=traits, inventories=inventories,
                    existing_traits=frozenset(api.existing_traits(desired.traits)),
                    allocations=allocations, max_version=api.max_version())


@dataclass
class ApplyResult:
    writes: int = 0
    retries: int = 0
    applied: list[Op] = field(default_factory=list)
    kept: tuple[Kept, ...] = ()
    generations: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"writes": self.writes, "retries": self.retries, "applied": [op.to_dict() for op in self.applied],
                "kept": [k.to_dict() for k in self.kept], "generations": dict(self.generations)}


class _Applier:
    def __init__(self, api: Placement, generations: dict[str, int], pinned: set[str], retries: int,
                 progress: Progress):
        self.api = api
        self.gens = generations
        self.pinned = pinned
        self.max_retries = retries
        self.progress = progress
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
                time.sleep(random.uniform(0, 0.05 * attempt))  # jitter: let the other writer finish
                self.gens[op.uuid] = refresh()
        self._done(op)

    def _done(self, op: Op) -> None:
        self.result.writes += 1
        self.result.applied.append(op)
        if self.result.writes % 500 == 0:
            self.progress(f"{self.result.writes} writes done")

    def run(self, ops: Iterable[Op]) -> None:
        api = self.api
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
    try:
        applier.run(plan.ops)
    except MinbwError as e:
        # never leave a half-applied state unreported
        done = applier.result.writes
        e.args = (f"{e.args[0] if e.args else e} — after {done} of {len(plan.ops)} planned writes "
                  f"succeeded (the last: {applier.result.applied[-1] if done else 'none'}); running the "
                  f"sync again resumes from what is in Placement",)
        e.partial = applier.result  # type: ignore[attr-defined]
        raise
    applier.result.kept = plan.kept
    applier.result.generations = {u: g for u, g in gens.items() if u in plan.after}
    return applier.result


def sync(api: Placement, desired: DesiredState, *, check: bool = False, create_root: bool = False,
         root_inventories: Mapping[str, Mapping] | None = None, absent: bool = False,
         progress: Progress = _quiet) -> tuple[Plan, ApplyResult | None]:
    """Make Placement match ``desired`` (or, ``absent``, remove those providers where nothing is allocated)."""
    observed = observe(api, desired, progress, allocations_of_all=absent)
    if absent:
        plan = make_absent_plan(desired, observed)
    else:
        plan = make_plan(desired, observed, create_root=create_root, root_inventories=root_inventories)
    if check or not plan.ops:
        return plan, None
    return plan, apply(api, plan, observed, progress=progress)
