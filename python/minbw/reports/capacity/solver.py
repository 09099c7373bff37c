"""One host: every way Placement could place one server there, and how many servers fit (an integer optimum, by the
bounds or a MIP solved by HiGHS: mip.py, and the first-fit count Placement's claims may stop at). Pure."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import AbstractSet
from dataclasses import dataclass
from types import MappingProxyType

from minbw.model.providers import Stock
from minbw.model.requests import RequestGroup, ServerRequest
from minbw.reports.capacity.mip import Row, maximise
from minbw.reports.capacity.request import is_network_trait

MAX_COMBINATIONS = 20000  # ways to place one server considered per host
MAX_ORDERS_ALL = 6  # up to this many ways, first_fit tries every order (6! = 720)
SOLVE_TIME_LIMIT = 10.0  # seconds the MIP may take per host (or pool of hosts)


# ---------------------------------------------------------------- results


@dataclass(frozen=True)
class Limit:
    """What stops the next server: ``resource_class`` on ``providers`` (names) together, ``needs`` per server,
    ``free`` there now, ``copies`` = free // needs as far as that resource goes; or, with no way to place a
    server at all, ``reason``."""

    resource_class: str | None = None
    providers: tuple[str, ...] = ()
    needs: int | None = None
    free: int | None = None
    copies: int | None = None
    reason: str = ""

    def to_dict(self) -> dict:
        """The limit as a JSON-ready dict of its fields."""
        return {
            "resource_class": self.resource_class,
            "providers": list(self.providers),
            "needs": self.needs,
            "free": self.free,
            "copies": self.copies,
            "reason": self.reason,
        }

    def describe(self, short=lambda name: name) -> str:
        """The limit in words: the reason, else ``CLASS on PROVIDERS (FREE free, NEEDS per server)`` with ``short``
        applied to each provider name."""
        if self.reason:
            return self.reason
        where = "+".join(short(p) for p in self.providers)
        return f"{self.resource_class} on {where} ({self.free} free, {self.needs} per server)"


@dataclass(frozen=True)
class Fit:
    fits: int
    first_fit: int
    exact: bool
    ways: int
    limited_by: tuple[Limit, ...] = ()
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """The fit as a JSON-ready dict of its fields (limited_by as dicts)."""
        return {
            "fits": self.fits,
            "first_fit": self.first_fit,
            "exact": self.exact,
            "ways": self.ways,
            "limited_by": [lim.to_dict() for lim in self.limited_by],
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------- one server: the ways to place it


@dataclass(frozen=True)
class Tree:
    root: str
    names: Mapping[str, str]
    parents: Mapping[str, str | None]
    traits: Mapping[str, frozenset[str]]
    stocks: Mapping[tuple[str, str], Stock]
    order: tuple[str, ...]  # providers, root first then by name (then the sharing providers it draws from)
    shared: frozenset[str] = frozenset()  # sharing providers outside the tree that serve it (by aggregate)

    def ancestors(self, rp: str | None) -> set[str]:
        """``rp`` and its ancestors in the tree, a set of uuids (a parent cycle stops the walk)."""
        out: set[str] = set()
        while rp is not None and rp not in out:
            out.add(rp)
            rp = self.parents.get(rp)
        return out


@dataclass(frozen=True)
class Way:
    """One way to place one server: ``places`` (group, class, provider, amount), the summed ``use`` ((provider,
    class) → amount, sorted) and ``groups``: each request group's providers ((group id, provider) pairs, a group of
    traits only included: Placement's ``mappings``)."""

    places: tuple[tuple[str, str, str, int], ...]
    use: tuple[tuple[tuple[str, str], int], ...]
    groups: tuple[tuple[str, str], ...] = ()

    def mappings(self) -> dict[str, tuple[str, ...]]:
        """Placement's ``mappings`` of this way: request group suffix ("" the flavor's) → provider uuids."""
        out: dict[str, list[str]] = {}
        for gid, rp in self.groups or tuple((gid, rp) for gid, _rc, rp, _amount in self.places):
            if rp not in out.setdefault(gid, []):
                out[gid].append(rp)
        return {gid: tuple(rps) for gid, rps in out.items()}


def _traits_text(g: RequestGroup) -> str:
    parts = [", ".join(g.required)] if g.required else []
    parts += [f"one of {', '.join(a)}" for a in g.required_any]
    parts += [f"none of {', '.join(g.forbidden)}"] if g.forbidden else []
    return "; ".join(parts)


def _group_label(req: ServerRequest, gid: str, port_names: Mapping[str, str]) -> str:
    if not gid:
        return "the flavor"
    for port in req.ports:
        for g in port.groups:
            if g.id == gid:
                kind = (
                    "/".join(sorted({"bandwidth" if "_BW_" in rc else "packet rate" for rc, _amount in g.resources}))
                    or "traits"
                )
                return f"{port_names.get(port.port_id or '') or f'port {port.port_id}'} {kind}"
    return f"group {gid}"


def _numbered_options(g: RequestGroup, tree: Tree) -> tuple[list[tuple], str]:
    """Each provider that can serve numbered group ``g`` alone, as its places; or why none can."""
    options, near = [], []
    wanted = set(g.required) | {t for a in g.required_any for t in a}
    for rp in tree.order:
        problem = g.trait_problem(tree.traits[rp])
        if problem:
            have = wanted & tree.traits[rp]
            if have:
                # the nearest misses first: those on the port's network, then those with most of its traits
                near.append(((any(map(is_network_trait, have)), len(have)), f"{tree.names[rp]} {problem}"))
            continue
        unfit = []
        for rc, amount in g.resources:
            stock = tree.stocks.get((rp, rc))
            if stock is None:
                unfit.append(f"has no {rc} inventory")
            elif stock.refuses(amount):
                unfit.append(f"{rc}: {stock.refuses(amount)}")
        if unfit:
            near.append(((True, len(wanted) + 1), f"{tree.names[rp]} {'; '.join(unfit)}"))
        else:
            options.append(tuple((g.id, rc, rp, amount) for rc, amount in g.resources) or ((g.id, "", rp, 0),))
    if options:
        return options, ""
    why = (
        f"no provider of {tree.names[tree.root]} has {_traits_text(g)}"
        if g.required or g.required_any
        else f"no provider of {tree.names[tree.root]} can take {', '.join(f'{rc}={a}' for rc, a in g.resources)}"
    )
    top = max((rank for rank, _text in near), default=None)
    nearest = [text for rank, text in near if rank == top][:4]
    return [], why + (f" ({'; '.join(nearest)})" if nearest else "")


def _unsuffixed_options(g: RequestGroup, tree: Tree) -> tuple[list[tuple], str]:
    """Each combination of providers (one per class) that can serve the flavor's group, as its places."""
    per_class, problems = [], []
    for rc, amount in g.resources:
        holders = []
        for rp in tree.order:
            stock = tree.stocks.get((rp, rc))
            if stock is None or set(g.forbidden) & tree.traits[rp]:
                continue
            if stock.refuses(amount):
                problems.append(f"{rc} of {tree.names[rp]}: {stock.refuses(amount)}")
                continue
            holders.append((g.id, rc, rp, amount))
        if not holders:
            return [], (
                f"no provider of {tree.names[tree.root]} can take {rc}={amount}"
                + (f" ({'; '.join(problems)})" if problems else "")
            )
        per_class.append(holders)
    if not per_class:
        # traits only (a flavor with required traits and no resources): some provider must have them
        ok = any(not g.trait_problem(tree.traits[rp]) for rp in tree.order)
        return ([()], "") if ok else ([], f"no provider of {tree.names[tree.root]} has {_traits_text(g)}")
    options = []
    for combo in itertools.product(*per_class):
        # Placement: the providers that serve the group's classes must have its traits between them
        if not g.trait_problem(set().union(*(tree.traits[rp] for _gid, _rc, rp, _amount in combo))):
            options.append(combo)
        if len(options) >= MAX_COMBINATIONS:
            break
    if not options:
        return [], f"the providers of {tree.names[tree.root]} holding the flavor's resources lack {_traits_text(g)}"
    return options, ""


def _same_subtree_ok(rps: set[str], tree: Tree) -> bool:
    # placement.objects.allocation_candidate._check_same_subtree: one of them is an ancestor of all
    if len(rps) <= 1:
        return True
    common = set.intersection(*(tree.ancestors(rp) for rp in rps))
    return bool(common & rps)


def ways_on_tree(
    req: ServerRequest,
    tree: Tree,
    port_names: Mapping[str, str],
    root_reasons: Mapping[str, str] = MappingProxyType({}),
) -> tuple[list[Way], dict, list[Limit], bool]:
    """The distinct ways to place one server on the tree; every provider each item (a group's class)
    can use in some way; the reasons when there are none (``root_reasons``: root trait → why the request has it,
    e.g. the Nova request filter that added it); whether the enumeration was cut at MAX_COMBINATIONS."""
    root_traits = tree.traits[tree.root]
    missing = [t for t in req.root_required if t not in root_traits]
    bad = [t for t in req.root_forbidden if t in root_traits]
    if missing or bad:
        said = [f"lacks {t}" for t in missing] + [f"has {t}" for t in bad]
        why_asked = [root_reasons[t] for t in (*missing, *bad) if t in root_reasons]
        return (
            [],
            {},
            [
                Limit(
                    reason=f"the root {tree.names[tree.root]} {', '.join(said)}"
                    + (f" ({'; '.join(why_asked)})" if why_asked else "")
                )
            ],
            False,
        )
    groups = req.request_groups()
    options, reasons = [], []
    for g in groups:
        found, why = (_unsuffixed_options if not g.id else _numbered_options)(g, tree)
        options.append(found)
        if why:
            reasons.append(Limit(reason=f"{_group_label(req, g.id, port_names)}: {why}"))
    if reasons:
        return [], {}, reasons, False
    isolate = req.effective_group_policy() == "isolate"
    subtrees = req.same_subtrees()
    seen: dict[tuple, Way] = {}
    pools: dict[tuple[str, str, int], set] = {}  # (group, class, amount) -> inventories, over every way
    cut = False
    for n, combo in enumerate(itertools.product(*options)):
        if n >= MAX_COMBINATIONS:
            cut = True
            break
        providers: dict[str, set[str]] = {}
        for places in combo:
            for gid, _rc, rp, _amount in places:
                providers.setdefault(gid, set()).add(rp)
        if isolate:
            numbered = [next(iter(providers[g.id])) for g in groups if g.id]
            if len(set(numbered)) != len(numbered):
                continue
        if not all(
            _same_subtree_ok(set().union(*(providers.get(gid, set()) for gid in ids)), tree) for ids in subtrees
        ):
            continue
        use: dict[tuple[str, str], int] = {}
        places = tuple(p for places in combo for p in places if p[1])
        for _gid, rc, rp, amount in places:
            use[(rp, rc)] = use.get((rp, rc), 0) + amount
        # groups sharing a provider: Placement sums them and checks the sum against max_unit
        if any(amount > tree.stocks[key].max_unit for key, amount in use.items()):
            continue
        key = tuple(sorted(use.items()))
        seen.setdefault(key, Way(places, key, tuple((gid, rp) for c in combo for gid, _rc, rp, _amount in c)))
        for gid, rc, rp, amount in places:
            pools.setdefault((gid, rc, amount), set()).add((rp, rc))
    ways = list(seen.values())
    if not ways:
        return (
            [],
            {},
            [
                Limit(
                    reason="no way to place all the groups together on one host: "
                    + (
                        "group_policy=isolate, same_subtree or max_unit of shared providers rule out every combination"
                        if isolate or subtrees
                        else "max_unit of shared providers rules out every combination"
                    )
                )
            ],
            cut,
        )
    return ways, pools, [], cut


# ---------------------------------------------------------------- many servers: the packing


def _copies(use, rem) -> int:
    return min(rem[k] // a for k, a in use) if use else 0


def _first_fit(ways: Sequence[Way], order: Sequence[int], cap: Mapping) -> tuple[int, ...]:
    """Copies of each way when each server takes the first way (in ``order``) that still fits: the same
    as taking as many copies of each way in turn (a way that stops fitting never fits again: usage
    only grows)."""
    rem = dict(cap)
    counts = [0] * len(ways)
    for j in order:
        n = counts[j] = _copies(ways[j].use, rem)
        for k, a in ways[j].use:
            rem[k] -= n * a
    return tuple(counts)


def _orders(k: int) -> Iterable[tuple[int, ...]]:
    if k <= MAX_ORDERS_ALL:
        return itertools.permutations(range(k))
    base = list(range(k))
    rot = [tuple(base[i:] + base[:i]) for i in range(k)]
    return rot + [tuple(reversed(r)) for r in rot]


def _bounds(
    pools: Mapping[tuple[str, str, int], AbstractSet[tuple[str, str]]], rem: Mapping, isolate: bool
) -> list[tuple[int, str, frozenset[tuple[str, str]], int]]:
    """Upper bounds on how many more servers fit, as ``(bound, class, inventories, needs)``, from where
    each item (a group's class and amount) can go (``pools``) and what is left (``rem``):

    * per item: every server puts it on one of its providers: at most ``sum(rem // amount)``;
    * per class and amount, for the ``m`` items of a server that share them: ``sum(rem // amount) // m``
      over their providers (each copy takes a whole ``amount`` wherever it lands); under
      ``group_policy=isolate`` a provider also takes at most one of them per server, so the largest ``N``
      with ``sum(min(rem // amount, N)) >= m * N``;
    * per class: every server needs the sum of its items of that class: ``sum(rem) // need``.
    """
    out: list[tuple[int, str, frozenset[tuple[str, str]], int]] = []
    keys: AbstractSet[tuple[str, str]]
    by_size: dict[tuple[str, int], list] = {}
    by_class: dict[str, list] = {}
    for (gid, rc, amount), keys in pools.items():
        out.append((sum(rem[k] // amount for k in keys), rc, frozenset(keys), amount))
        by_size.setdefault((rc, amount), []).append((gid, keys))
        by_class.setdefault(rc, []).append((amount, keys))
    for (rc, amount), members in by_size.items():
        if len(members) < 2:
            continue
        keys = frozenset().union(*(k for _member, k in members))
        m = len(members)
        copies = [rem[k] // amount for k in keys]
        bound = sum(copies) // m
        if isolate and all(gid for gid, _keys in members):
            low, high = 0, bound  # sum(min(c, N)) - m * N only falls once N passes the largest c
            while low < high:
                mid = (low + high + 1) // 2
                low, high = (mid, high) if sum(min(c, mid) for c in copies) >= m * mid else (low, mid - 1)
            bound = low
        out.append((bound, rc, keys, m * amount))
    for rc, members in by_class.items():
        keys = frozenset().union(*(k for _member, k in members))
        need = sum(a for a, _keys in members)
        out.append((sum(rem[k] for k in keys) // need, rc, keys, need))
    return out


@dataclass(frozen=True)
class _Packing:
    fits: int
    first_fit: int
    exact: bool
    upper: int
    counts: tuple[int, ...]  # copies of each way in the best packing found


def _pools(ways: Sequence[Way]) -> dict[tuple[str, str, int], set[tuple[str, str]]]:
    """Where each item (a group's class and amount) can go over ``ways``: item → inventories."""
    pools: dict[tuple[str, str, int], set[tuple[str, str]]] = {}
    for w in ways:
        for gid, rc, rp, amount in w.places:
            pools.setdefault((gid, rc, amount), set()).add((rp, rc))
    return pools


def _pack(ways: Sequence[Way], cap: Mapping, isolate: bool = False) -> _Packing:
    """The most servers the ways can place, the fewest any first-fit order places, whether the count is proven
    optimal, its upper bound. When the best first-fit order reaches the bounds (:func:`_bounds`) that is the
    answer; else a MIP (:func:`minbw.reports.capacity.mip.maximise`: integer copies of each way, every inventory's
    summed use within what is free) started from that packing. Raises MissingDependency when the MIP is needed and
    highspy is not installed."""
    fills = [_first_fit(ways, order, cap) for order in _orders(len(ways))]
    best_counts = max(fills, key=sum)
    best, worst = sum(best_counts), min(sum(f) for f in fills)
    upper = min(b for b, *_rest in _bounds(_pools(ways), cap, isolate))
    if best >= upper or len(ways) == 1:
        return _Packing(best, worst, True, upper, best_counts)
    per_key: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for j, w in enumerate(ways):
        for k, a in w.use:
            per_key.setdefault(k, []).append((j, a))
    rows = [
        Row(tuple(j for j, _a in used), tuple(float(a) for _j, a in used), float(max(cap[k], 0)))
        for k, used in sorted(per_key.items())
    ]
    result = maximise(
        [1.0] * len(ways),
        [float(max(_copies(w.use, cap), 0)) for w in ways],
        rows,
        start=best_counts,
        time_limit=SOLVE_TIME_LIMIT,
        abs_gap=0.5,  # a count: a gap below 1 proves it
    )
    if sum(result.values) > best:
        best, best_counts = sum(result.values), result.values
    upper = min(upper, max(best, math.floor(result.bound + 1e-6)))
    return _Packing(best, worst, result.optimal or best >= upper, upper, best_counts)


def fit_on_tree(
    req: ServerRequest,
    tree: Tree,
    port_names: Mapping[str, str] = MappingProxyType({}),
    root_reasons: Mapping[str, str] = MappingProxyType({}),
) -> Fit:
    """How many servers of ``req`` fit on the tree alone: fit_together with one pair, a Fit."""
    return fit_together(((req, tree),), port_names, root_reasons)


def merged(trees: Sequence[Tree]) -> Tree:
    """Several trees as one, for naming what runs out when they are counted together (sharing providers
    once)."""
    if len(trees) == 1:
        return trees[0]
    order = tuple(dict.fromkeys(rp for t in trees for rp in t.order))
    return Tree(
        trees[0].root,
        {k: v for t in trees for k, v in t.names.items()},
        {k: v for t in trees for k, v in t.parents.items()},
        {k: v for t in trees for k, v in t.traits.items()},
        {k: v for t in trees for k, v in t.stocks.items()},
        order,
        frozenset().union(*(t.shared for t in trees)),
    )


def fit_together(
    pairs: Sequence[tuple[ServerRequest, Tree]],
    port_names: Mapping[str, str] = MappingProxyType({}),
    root_reasons: Mapping[str, str] = MappingProxyType({}),
) -> Fit:
    """How many servers fit on the trees together, each tree with its own shape of the server (a port left
    open takes that host's networks): the ways of every tree packed against the same free amounts, so a
    sharing provider that serves several trees counts once. One pair: the host alone."""
    all_ways: list[Way] = []
    pools: dict[tuple[str, str, int], set] = {}
    reasons: list[Limit] = []
    cut = False
    for req, tree in pairs:
        ways, found, why, c = ways_on_tree(req, tree, port_names, root_reasons)
        all_ways += ways
        for item, keys in found.items():
            pools.setdefault(item, set()).update(keys)
        reasons += why
        cut = cut or c
    if not all_ways:
        return Fit(0, 0, not cut, 0, tuple(reasons))
    tree = merged([t for _req, t in pairs])
    cap = {key: tree.stocks[key].free for w in all_ways for key, _amount in w.use}
    isolate = pairs[0][0].effective_group_policy() == "isolate"
    packing = _pack(all_ways, cap, isolate)
    fits, first_fit, exact, upper = packing.fits, packing.first_fit, packing.exact, packing.upper
    notes = []
    if cut:
        notes.append(
            f"only the first {MAX_COMBINATIONS} combinations of providers were considered: the count is a lower bound"
        )
    if not exact:
        notes.append(
            f"the solver stopped at its time limit ({SOLVE_TIME_LIMIT:g} s): {fits} is the best found, "
            f"at most {upper} fit"
        )
    if first_fit < fits:
        notes.append(
            f"the {len(all_ways)} ways to place a server compete for the same providers: {fits} fit when "
            f"each server lands where it leaves room for the next, but Placement picks each claim's "
            f"candidate, and claims can stop at {first_fit} (first fit in the worst order)"
        )
    return Fit(
        fits, first_fit, exact, len(all_ways), _limits(all_ways, pools, cap, packing, tree, isolate), tuple(notes)
    )


def _limits(
    ways: Sequence[Way], pools: Mapping, cap: Mapping, packing: _Packing, tree: Tree, isolate: bool
) -> tuple[Limit, ...]:
    """The resources whose bound (:func:`_bounds`) is the count, each item over every provider it can use
    in any way (the search keeps one way per distinct usage, whose providers alone would name too few)."""
    bounds = _bounds(pools, cap, isolate)
    tight, seen = [], set()
    for b, rc, keys, needs in bounds:
        if b != packing.fits or (rc, keys) in seen:
            continue
        seen.add((rc, keys))
        rps = sorted((rp for rp, _rc in keys), key=tree.order.index)
        tight.append(Limit(rc, tuple(tree.names[rp] for rp in rps), needs, sum(cap[k] for k in keys), b))
    if tight:
        # several give out at the same count: the one with the least left over first
        # a tight limit has its free, copies and needs (all three given above)
        def left_over(lim: Limit) -> tuple[int, str | None]:
            return (lim.free - lim.copies * lim.needs, lim.resource_class)  # type: ignore[operator]

        return tuple(sorted(tight, key=left_over))
    # No single resource explains the count: the ways interfere. Name what is too short for each way
    # once the best packing is made.
    rem = dict(cap)
    for w, n in zip(ways, packing.counts):
        for k, a in w.use:
            rem[k] -= n * a
    short = sorted({k for w in ways for k, a in w.use if rem[k] < a}, key=lambda k: (tree.order.index(k[0]), k[1]))
    left = ", ".join(f"{rc} of {tree.names[rp]} ({rem[(rp, rc)]} left)" for rp, rc in short)
    return (Limit(reason=f"the ways to place a server compete: after {packing.fits}, none has room: {left}"),)
