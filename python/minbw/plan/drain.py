"""The plan to drain a host: every server on it placed at once on the other hosts, so that no destination is
overcommitted by the moves together (issue 45). Pure: the caller reads the servers (their whole request as Nova
asks for it on a move, the hosts Nova's prefilters and filters allow) and the destination trees.

Each server has the ways Placement could place it on each tree it may go to
(:func:`minbw.reports.capacity.solver.ways_on_tree`: traits, isolate, same_subtree, units, sharing providers).

* **Greedy** (the fast path): the servers by size, largest first (size: the sum over its resource classes of
  its amount over what is free of that class on all destinations together), each on the first way, over the trees
  in the order given, that still fits and keeps its server group's anti-affinity. When it places every server that
  is the plan, without a solver.
* **Exact** otherwise: a MIP solved by HiGHS (:mod:`minbw.reports.capacity.mip`): a binary ``y[s, w]`` per server
  and way on a tree it may use, ``sum_w y[s, w] <= 1`` per server, per (provider, class) the summed use ``<=``
  free, per server group and tree at most one member; maximise the number of servers placed, then (tie-break,
  deterministic) spread: each server where it takes the smallest share of what is free. With more than
  ``CANDIDATE_TREES`` trees a server may use, it is offered only the ``CANDIDATE_TREES`` with most room for it
  (and the one greedy chose): the plan then says the count is the best over those. Greedy's answer is the
  solver's starting point, so exact never places fewer.

Size: greedy checks each server against the trees in order (a per-class upper bound first, then its ways) until one
fits, O(servers x trees) at worst; the ways are enumerated once per server shape (flavor and ports' QoS, ids aside)
and tree. The MIP has one column per server and way on its candidate trees (at most servers x (CANDIDATE_TREES + 1)
x ways), one row per server with two or more, per inventory that the columns together could overfill, and per
server group and tree; HiGHS solves it by branch and cut within ``time_limit`` (bench/drain_bench.py: 1,000 servers x
1,000 hosts).

The moves come largest server first: since destinations only gain consumption during a drain (the source's
allocations go to the migration consumer and are freed after), a jointly feasible assignment stays feasible in any
order; largest first moves the hardest servers while their room is certain, should an executor replan midway."""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from minbw.errors import InvalidInput
from minbw.model.requests import ServerRequest
from minbw.nova.moves import move_kind
from minbw.reports.capacity.mip import TIME_LIMIT, Row, maximise
from minbw.reports.capacity.solver import Limit, Tree, Way, ways_on_tree

LIVE, COLD = "live", "cold"
GREEDY, EXACT = "greedy", "exact"
METHODS = ("auto", GREEDY, EXACT)
CANDIDATE_TREES = 16  # trees offered per server to the exact solve when it may use more
NO_WAY = "no way to place it on"  # a stuck server's reason when traits, units or root traits rule out every host
TIE_WEIGHT = 0.4  # the spread tie-break's share of one server in the objective, over all servers together


@dataclass(frozen=True)
class DrainServer:
    """A server on the host drained: Nova's ``status`` (ACTIVE: live migration, else cold), its whole
    ``request`` on a move (flavor + every port's groups), the root providers Nova's prefilters and filters allow
    (``roots``; None: every tree given), its anti-affinity server group, its ports' names (id → name)."""

    id: str
    name: str
    status: str
    request: ServerRequest
    roots: frozenset[str] | None = None
    anti_affinity: str | None = None
    port_names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if self.roots is not None:
            object.__setattr__(self, "roots", frozenset(self.roots))
        object.__setattr__(self, "port_names", MappingProxyType(dict(self.port_names)))

    @property
    def kind(self) -> str:
        """How Nova moves it (:func:`minbw.nova.moves.move_kind`): ``live`` when ACTIVE or PAUSED, else ``cold``."""
        return move_kind(self.status.upper()) or COLD


@dataclass(frozen=True)
class Move:
    """One server's destination: the host (root provider name = Nova's hypervisor hostname) and its uuid, what
    Placement will hold for it (provider uuid → class → amount) and which providers serve which request group."""

    server_id: str
    server_name: str
    kind: str
    host: str
    root: str
    allocations: Mapping[str, Mapping[str, int]]
    mappings: Mapping[str, tuple[str, ...]]

    def to_dict(self) -> dict[str, Any]:
        """The move as a JSON-ready dict of its fields (mappings as lists)."""
        return {
            "server_id": self.server_id,
            "server_name": self.server_name,
            "kind": self.kind,
            "host": self.host,
            "root": self.root,
            "allocations": {rp: dict(res) for rp, res in self.allocations.items()},
            "mappings": {gid: list(rps) for gid, rps in self.mappings.items()},
        }


@dataclass(frozen=True)
class Stuck:
    """A server that cannot move: why in one line, and the resources that stop it."""

    server_id: str
    server_name: str
    reason: str
    limits: tuple[Limit, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The stuck server as a JSON-ready dict (limits as dicts)."""
        return {
            "server_id": self.server_id,
            "server_name": self.server_name,
            "reason": self.reason,
            "limits": [lim.to_dict() for lim in self.limits],
        }


@dataclass(frozen=True)
class DrainPlan:
    """Where each server of ``source`` goes (``moves``, in an order where every step is feasible) and the ones that
    cannot (``stuck``); which answer it is (``method``), how many greedy-by-size placed; ``optimal``: no plan
    places more servers (False: the solver stopped early or was offered some hosts only: ``notes`` say)."""

    source: str
    moves: tuple[Move, ...]
    stuck: tuple[Stuck, ...]
    method: str
    greedy_moves: int
    optimal: bool = True
    notes: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether every server is placed."""
        return not self.stuck

    def to_dict(self) -> dict[str, Any]:
        """The plan as a JSON-ready dict: source, complete, method, optimal, greedy_moves, moves, stuck, notes."""
        return {
            "source": self.source,
            "complete": self.complete,
            "method": self.method,
            "optimal": self.optimal,
            "greedy_moves": self.greedy_moves,
            "moves": [m.to_dict() for m in self.moves],
            "stuck": [s.to_dict() for s in self.stuck],
            "notes": list(self.notes),
        }


def waves(moves: Sequence[Move], parallel: int = 1, *, cold: bool = False) -> tuple[tuple[Move, ...], ...]:
    """The plan's moves in the order they are made, ``parallel`` at a time at most: consecutive slices of the plan's
    order (largest server first; a jointly feasible plan stays feasible in any order, destinations only gain during
    a drain). ``cold``: every move a cold migration. Raises InvalidInput for a bound below 1."""
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise InvalidInput(
            f"parallel: the number of moves in flight at once must be a whole number of 1 or more, got {parallel!r}. "
            f"Fix: give --parallel 1 (one move at a time, the default) or more."
        )
    ordered = [dataclasses.replace(m, kind=COLD) if cold else m for m in moves]
    return tuple(tuple(ordered[i : i + parallel]) for i in range(0, len(ordered), parallel))


# ---------------------------------------------------------------- the instance


Key = tuple[str, str]  # (provider uuid, resource class)


class _Instance:
    """The servers, the trees each may use, their ways and what is free. Servers of one shape (the same request
    but for their ports' and groups' ids) share their ways on a tree: computed once, when first asked."""

    def __init__(self, servers: Sequence[DrainServer], trees: Sequence[Tree]):
        self.servers = servers
        self.trees = trees
        self.free: dict[Key, int] = {}
        self.tree_keys: list[dict[str, list[Key]]] = []  # per tree: class -> its inventories
        self.trees_of: dict[str, list[int]] = {}  # provider -> the trees that draw from it
        for i, t in enumerate(trees):
            by_class: dict[str, list[Key]] = {}
            for (rp, rc), stock in sorted(t.stocks.items(), key=lambda item: (t.order.index(item[0][0]), item[0])):
                self.free.setdefault((rp, rc), stock.free)
                by_class.setdefault(rc, []).append((rp, rc))
            for rp in t.order:
                self.trees_of.setdefault(rp, []).append(i)
            self.tree_keys.append(by_class)
        self.demand = [_demand(s.request) for s in servers]
        total: dict[str, int] = {}
        for (_rp, rc), amount in self.free.items():
            total[rc] = total.get(rc, 0) + max(amount, 0)
        self.size = [sum(a / max(total.get(rc, 0), 1) for rc, a in d.items()) for d in self.demand]
        by_root = {t.root: i for i, t in enumerate(trees)}
        self.allowed = [
            list(range(len(trees))) if s.roots is None else sorted(by_root[r] for r in s.roots if r in by_root)
            for s in servers
        ]
        self.shapes = [_shape(s.request) for s in servers]
        # each distinct shape and each distinct set of roots by a number (the caches' keys hash fast)
        numbers: dict[object, int] = {}
        self.shape_no = [numbers.setdefault(("shape", shape), len(numbers)) for shape, _ids in self.shapes]
        self.roots_no = [numbers.setdefault(("roots", s.roots), len(numbers)) for s in servers]
        self.demand_items = [tuple(d.items()) for d in self.demand]
        self._ways: dict[tuple[int, int], tuple[list[Way], list[Limit]]] = {}

    def ways(self, s: int, t: int) -> list[Way]:
        """Server ``s``'s ways on tree ``t`` (its shape's: group ids ``#port.group``, :meth:`real_mappings`)."""
        return self._found(s, t)[0]

    def has_no_way(self, s: int, t: int) -> bool:
        """Whether server ``s`` has no way at all on tree ``t``."""
        return not self._found(s, t)[0]

    def why_not(self, s: int, t: int) -> list[Limit]:
        """Why server ``s`` has no way on tree ``t`` (traits, units, root traits), its ports named."""
        server = self.servers[s]
        return ways_on_tree(server.request, self.trees[t], server.port_names)[2]

    def real_mappings(self, s: int, way: Way) -> dict[str, tuple[str, ...]]:
        """``way``'s mappings with server ``s``'s own group ids."""
        ids = self.shapes[s][1]
        return {ids.get(gid, gid): rps for gid, rps in way.mappings().items()}

    def _found(self, s: int, t: int) -> tuple[list[Way], list[Limit]]:
        key = (self.shape_no[s], t)
        got = self._ways.get(key)
        if got is None:
            ways, _pools, why, _cut = ways_on_tree(self.shapes[s][0], self.trees[t], {})
            got = self._ways[key] = (ways, why)
        return got


class _Room:
    """What is left: per inventory, and per tree and class (summed, for a quick upper bound on what fits)."""

    def __init__(self, inst: _Instance, rem: Mapping[Key, int] | None = None):
        self.inst = inst
        self.rem = dict(inst.free if rem is None else rem)
        self.by_tree = [
            {rc: sum(max(self.rem[k], 0) for k in keys) for rc, keys in tk.items()} for tk in inst.tree_keys
        ]

    def copies(self, s: int, t: int) -> float:
        """An upper bound on how many servers like ``s`` fit on tree ``t`` (0: none), class by class."""
        here = self.by_tree[t]
        copies = float("inf")
        for rc, a in self.inst.demand_items[s]:
            n = here.get(rc, 0) / a
            if n < copies:
                copies = n
        return copies

    def fits(self, way: Way) -> bool:
        """Whether ``way`` fits in what is left."""
        return all(self.rem[k] >= a for k, a in way.use)

    def take(self, way: Way) -> None:
        """Take ``way``'s amounts (it fits)."""
        for (rp, rc), a in way.use:
            self.rem[(rp, rc)] -= a
            for t in self.inst.trees_of.get(rp, ()):
                self.by_tree[t][rc] -= a


def _shape(req: ServerRequest) -> tuple[ServerRequest, dict[str, str]]:
    """``req`` with its ports' ids ``#i`` and their groups' ``#i.j`` (servers of one flavor and ports' QoS are one
    shape), and those group ids → the real ones."""
    ids: dict[str, str] = {}
    ports = []
    for i, port in enumerate(req.ports):
        renamed = {g.id: f"#{i}.{j}" for j, g in enumerate(port.groups)}
        ids.update({new: old for old, new in renamed.items()})
        ports.append(
            dataclasses.replace(
                port,
                port_id=f"#{i}",
                groups=tuple(dataclasses.replace(g, id=renamed[g.id]) for g in port.groups),
                same_subtree=tuple(renamed.get(gid, gid) for gid in port.same_subtree),
            )
        )
    return dataclasses.replace(req, ports=tuple(ports)), ids


def _demand(req: ServerRequest) -> dict[str, int]:
    out: dict[str, int] = {}
    for g in req.request_groups():
        for rc, amount in g.resources:
            out[rc] = out.get(rc, 0) + amount
    return out


# ---------------------------------------------------------------- greedy and exact


def _order(inst: _Instance) -> list[int]:
    """The servers largest first (then by name and id: deterministic)."""
    return sorted(range(len(inst.servers)), key=lambda s: (-inst.size[s], inst.servers[s].name, inst.servers[s].id))


def _greedy(inst: _Instance) -> dict[int, tuple[int, Way]]:
    """Greedy by size: server → (tree, way)."""
    room = _Room(inst)
    taken: set[tuple[str, int]] = set()  # (server group, tree)
    placed: dict[int, tuple[int, Way]] = {}
    nowhere: set[tuple[int, int]] = set()  # (shape, roots) that found no room: room only shrinks, nor will they
    for s in _order(inst):
        group = inst.servers[s].anti_affinity
        if (inst.shape_no[s], inst.roots_no[s]) in nowhere:
            continue
        for t in inst.allowed[s]:
            if group is not None and (group, t) in taken:
                continue
            if room.copies(s, t) < 1:
                continue
            way = next((w for w in inst.ways(s, t) if room.fits(w)), None)
            if way is None:
                continue
            placed[s] = (t, way)
            room.take(way)
            if group is not None:
                taken.add((group, t))
            break
        else:
            if group is None:
                nowhere.add((inst.shape_no[s], inst.roots_no[s]))
    return placed


def _candidates(inst: _Instance, room: _Room, s: int, greedy: Mapping[int, tuple[int, Way]]) -> tuple[list[int], bool]:
    """The trees offered to server ``s`` in the exact solve (``room``: what is free before any move), and whether
    some it may use were left out."""
    allowed = inst.allowed[s]
    if len(allowed) <= CANDIDATE_TREES:
        return allowed, False
    copies = {t: room.copies(s, t) for t in allowed}
    roomy = [t for t in allowed if copies[t] >= 1]
    best = heapq.nsmallest(CANDIDATE_TREES, roomy, key=lambda t: (-copies[t], t))
    if s in greedy and greedy[s][0] not in best:
        best.append(greedy[s][0])
    return sorted(best), len(roomy) > len(best)


def _exact(
    inst: _Instance, greedy: Mapping[int, tuple[int, Way]], time_limit: float
) -> tuple[dict[int, tuple[int, Way]], bool, list[str]]:
    """The MIP: server → (tree, way), whether no plan places more, notes."""
    options: list[tuple[int, int, Way]] = []
    restricted = 0
    room = _Room(inst)
    for s in range(len(inst.servers)):
        trees, cut = _candidates(inst, room, s, greedy)
        restricted += cut
        for t in trees:
            options += [(s, t, w) for w in inst.ways(s, t)]
    per_server: dict[int, list[int]] = {}
    per_key: dict[Key, list[int]] = {}
    per_group: dict[tuple[str, int], list[int]] = {}
    costs = []
    n = max(len(inst.servers), 1)
    for j, (s, t, w) in enumerate(options):
        per_server.setdefault(s, []).append(j)
        for k, _a in w.use:
            per_key.setdefault(k, []).append(j)
        group = inst.servers[s].anti_affinity
        if group is not None:
            per_group.setdefault((group, t), []).append(j)
        share = sum(a / max(inst.free[k], a, 1) for k, a in w.use) / max(len(w.use), 1)
        costs.append(1.0 - TIE_WEIGHT * share / n)
    rows = [Row(tuple(js), (1.0,) * len(js), 1.0) for js in per_server.values() if len(js) > 1]
    for k, js in per_key.items():
        amounts = [dict(options[j][2].use)[k] for j in js]
        if sum(amounts) > inst.free[k]:  # a row that can bind (an overcommitted inventory: none of them)
            rows.append(Row(tuple(js), tuple(float(a) for a in amounts), float(max(inst.free[k], 0))))
    for js in per_group.values():
        if len({options[j][0] for j in js}) > 1:
            rows.append(Row(tuple(js), (1.0,) * len(js), 1.0))
    index = {(s, t, w.use): j for j, (s, t, w) in enumerate(options)}
    start = [0] * len(options)
    for s, (t, w) in greedy.items():
        start[index[(s, t, w.use)]] = 1
    # the tie-break takes less than TIE_WEIGHT < 0.5 of one server: a gap of 0.1 proves the count
    result = maximise(costs, [1.0] * len(options), rows, start=start, time_limit=time_limit, abs_gap=0.1)
    placed = {options[j][0]: (options[j][1], options[j][2]) for j, v in enumerate(result.values) if v}
    count_proven = result.bound < len(placed) + 1 - TIE_WEIGHT
    notes = []
    # a plan's objective is its count less its tie-break (< TIE_WEIGHT): no plan places more than bound + TIE_WEIGHT
    most = (
        f", no plan places more than {int(result.bound + TIE_WEIGHT)}"
        if math.isfinite(result.bound)
        else ", with no bound proven on how many more could be"
    )
    if result.time_limit_hit:
        notes.append(
            f"the solver stopped at its time limit ({time_limit:g} s): {len(placed)} servers placed"
            + ("" if count_proven else most)
        )
    elif not count_proven:
        notes.append(f"the solver stopped with {result.status}: {len(placed)} servers placed{most}")
    complete = len(placed) == len(inst.servers)
    if restricted and not complete:
        notes.append(
            f"{restricted} servers were offered only the {CANDIDATE_TREES} hosts with most room for them (and the one "
            "greedy chose): the count is the best over those hosts, not proven over every host"
        )
    return placed, complete or (count_proven and not restricted), notes


# ---------------------------------------------------------------- the stuck ones


def _stuck(inst: _Instance, s: int, rem: Mapping[Key, int], taken: set[tuple[str, int]]) -> Stuck:
    """Why server ``s`` stays: no host allowed; no way on any (traits, units, root traits: capacity's wording);
    its server group's anti-affinity; or too little left once the others are placed (the nearest way, what it is
    short of); ``taken``: (server group, tree) pairs the placed servers hold."""
    server = inst.servers[s]
    allowed = inst.allowed[s]
    if not allowed:
        why = (
            "no other host to move to"
            if not inst.trees
            else f"Nova's prefilters and filters allow none of the {len(inst.trees)} destination hosts"
        )
        return Stuck(server.id, server.name, why, (Limit(reason=why),))
    no_way: list[int] = []
    short: list[tuple[tuple[int, float, str], str, Limit]] = []
    held: list[str] = []
    left: list[str] = []
    for t in allowed:
        tree = inst.trees[t]
        host = tree.names[tree.root]
        ways = inst.ways(s, t)
        if not ways:
            no_way.append(t)
            continue
        for w in ways:
            lacking = [(k, a) for k, a in w.use if rem[k] < a]
            if not lacking:
                (held if (server.anti_affinity, t) in taken else left).append(host)
                break
            gap = sum((a - max(rem[k], 0)) / a for k, a in lacking)
            (rp, rc), a = max(lacking, key=lambda ka: ((ka[1] - max(rem[ka[0]], 0)) / ka[1], ka[0]))
            free = max(rem[(rp, rc)], 0)
            text = (
                f"{host}: {rc} on {tree.names[rp]} ({free} free, {a} needed, {a - free} short"
                + (f"; {len(lacking) - 1} more class(es) short" if len(lacking) > 1 else "")
                + ")"
            )
            short.append(((len(lacking), gap, host), text, Limit(rc, (tree.names[rp],), a, free, 0)))
    if left:
        why = (
            f"room is left on {', '.join(sorted(left)[:3])}{', ...' if len(left) > 3 else ''} but the plan did not "
            "use it (see the notes: the solver stopped early, or greedy only)"
        )
        return Stuck(server.id, server.name, why, (Limit(reason=why),))
    if held:
        why = (
            f"anti-affinity: the hosts with room ({', '.join(sorted(held)[:3])}"
            f"{', ...' if len(held) > 3 else ''}) take another server of group {server.anti_affinity}"
        )
        return Stuck(server.id, server.name, why, (Limit(reason=why),))
    if short:
        short.sort(key=lambda x: x[0])
        hosts = len({x[0][2] for x in short})
        why = f"no room left on the {hosts} host(s) it could use once the others are placed; nearest {short[0][1]}"
        return Stuck(server.id, server.name, why, tuple(x[2] for x in short[:3]))
    # the reasons of the first host in words (its ports named); the other hosts' may differ
    reasons = inst.why_not(s, no_way[0])
    why = f"{NO_WAY} any of the {len(allowed)} host(s) allowed: {reasons[0].describe()}" + (
        f" (the same or another reason on the {len(no_way) - 1} other(s))" if len(no_way) > 1 else ""
    )
    return Stuck(server.id, server.name, why, tuple(reasons[:5]))


# ---------------------------------------------------------------- the plan


def _check(source: str, servers: Sequence[DrainServer], trees: Sequence[Tree], method: str, time_limit: float) -> None:
    if not time_limit > 0:
        raise InvalidInput(f"drain plan: time_limit must be a positive number of seconds, got {time_limit!r}.")
    if method not in METHODS:
        raise InvalidInput(f"drain plan: method must be one of {', '.join(METHODS)}, got {method!r}.")
    ids = [s.id for s in servers]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise InvalidInput(f"drain plan: servers {twice} are given more than once. Fix: give each server once.")
    for t in trees:
        if source in (t.root, t.names.get(t.root)):
            raise InvalidInput(
                f"drain plan: the source host {source} is among the destinations. Fix: leave its tree out of the "
                "destinations (its allocations move to the migration consumer, they never help a destination)."
            )
    roots = [t.root for t in trees]
    if len(set(roots)) != len(roots):
        raise InvalidInput("drain plan: a destination tree is given twice. Fix: give each host's tree once.")


def plan_drain(
    source: str,
    servers: Sequence[DrainServer],
    trees: Sequence[Tree],
    *,
    method: str = "auto",
    time_limit: float = TIME_LIMIT,
) -> DrainPlan:
    """The plan to drain ``source``: every server in ``servers`` placed on the ``trees`` (the destination hosts,
    their ``free`` what is free now) together. ``method``: ``auto`` (greedy when it places all, else exact),
    ``greedy`` or ``exact`` (the solver even when greedy places all); ``time_limit``: seconds the solver may take.
    Returns a :class:`DrainPlan`: the moves, largest server first, and the stuck servers with why. Raises
    InvalidInput when a server is given twice, a tree twice, the source is among the trees, the method is unknown
    or the time limit not positive; MissingDependency when the exact solve is needed and highspy is not
    installed."""
    _check(source, servers, trees, method, time_limit)
    inst = _Instance(servers, trees)
    greedy = _greedy(inst)
    placed, optimal = greedy, True
    notes: list[str] = []
    used = GREEDY
    if method == EXACT or (method == "auto" and len(greedy) < len(servers)):
        placed, optimal, notes = _exact(inst, greedy, time_limit)
        used = EXACT
        if len(placed) < len(greedy):  # cannot happen: greedy is the start; kept as the floor
            placed = greedy
    elif method == GREEDY and len(greedy) < len(servers):
        optimal = False
        notes = ["greedy only: a joint solve may place more"]
    room = _Room(inst)
    taken: set[tuple[str, int]] = set()
    moves = []
    for s in _order(inst):
        if s not in placed:
            continue
        t, way = placed[s]
        room.take(way)
        server, tree = servers[s], trees[t]
        if server.anti_affinity is not None:
            taken.add((server.anti_affinity, t))
        allocations: dict[str, dict[str, int]] = {}
        for (rp, rc), a in way.use:
            allocations.setdefault(rp, {})[rc] = a
        moves.append(
            Move(
                server.id,
                server.name,
                server.kind,
                tree.names[tree.root],
                tree.root,
                MappingProxyType({rp: MappingProxyType(res) for rp, res in allocations.items()}),
                MappingProxyType(inst.real_mappings(s, way)),
            )
        )
    said: dict[tuple[int, int], Stuck] = {}  # (shape, roots) -> why, for the servers alike (no group: no names)

    def why_stuck(s: int) -> Stuck:
        """Why ``s`` stays, said once per shape and roots (a reason naming ports: per server)."""
        key = (inst.shape_no[s], inst.roots_no[s])
        if servers[s].anti_affinity is None and key in said:
            return dataclasses.replace(said[key], server_id=servers[s].id, server_name=servers[s].name)
        found = _stuck(inst, s, room.rem, taken)
        if servers[s].anti_affinity is None and not found.reason.startswith(NO_WAY):
            said[key] = found
        return found

    stuck = tuple(why_stuck(s) for s in _order(inst) if s not in placed)
    return DrainPlan(source, tuple(moves), stuck, used, len(greedy), optimal, tuple(notes))
