"""Every host of a listing, counted: per host, per physnet and in total, with each provider's bandwidth and packet
rate (used, free). Pure: the use case reads the providers."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from minbw.model.providers import SHARING_TRAIT, stocks_of
from minbw.neutron import naming
from minbw.reports.capacity.request import TUNNEL_TRAIT, CapacityRequest, is_network_trait, network_label
from minbw.reports.capacity.solver import Fit, Limit, Tree, fit_on_tree, fit_together

NETWORK_CLASSES = (naming.BW_EGRESS, naming.BW_INGRESS, naming.PPS_ANY, naming.PPS_EGRESS, naming.PPS_INGRESS)


@dataclass(frozen=True)
class NetworkFit:
    physnet: str
    traits: tuple[str, ...]
    fit: Fit

    def to_dict(self) -> dict:
        """The physnet's count as a JSON-ready dict: physnet, traits and the fit's keys."""
        return {"physnet": self.physnet, "traits": list(self.traits), **self.fit.to_dict()}


@dataclass(frozen=True)
class HostCapacity:
    uuid: str
    name: str
    fit: Fit
    physnets: tuple[NetworkFit, ...]

    def to_dict(self) -> dict:
        """The host's count as a JSON-ready dict: host (name), uuid, the fit's keys and ``physnets``."""
        return {
            "host": self.name,
            "uuid": self.uuid,
            **self.fit.to_dict(),
            "physnets": [n.to_dict() for n in self.physnets],
        }


@dataclass(frozen=True)
class Pool:
    """Hosts that draw from the same sharing providers (``MISC_SHARES_VIA_AGGREGATE``), counted together: each
    host's own ``fits`` counts the whole shared inventory, so theirs do not add up; ``fit`` is how many fit on
    them together, and each physnet's likewise (``physnets``: label → fit)."""

    hosts: tuple[str, ...]  # root uuids
    providers: tuple[str, ...]  # the sharing providers' names
    fit: Fit
    physnets: Mapping[str, Fit]

    def to_dict(self, names: Mapping[str, str]) -> dict:
        """The pool as a JSON-ready dict: its hosts by name (``names``: root uuid → name), sharing_providers, the fit's
        keys and ``physnets`` by label."""
        return {
            "hosts": [names.get(h, h) for h in self.hosts],
            "sharing_providers": list(self.providers),
            **self.fit.to_dict(),
            "physnets": {k: f.to_dict() for k, f in sorted(self.physnets.items())},
        }


@dataclass(frozen=True)
class CapacityReport:
    """The count of ``request`` on ``hosts``; ``trees``: the trees of the hosts counted, whose providers' rows
    (:attr:`providers`) are made from them when asked (a long-running exporter keeps the trees, not the rows)."""

    request: CapacityRequest
    hosts: tuple[HostCapacity, ...]
    trees: tuple[Tree, ...]
    notes: tuple[str, ...] = ()
    pools: tuple[Pool, ...] = ()

    @property
    def providers(self) -> tuple[dict, ...]:
        """Bandwidth and packet rate of each provider of the hosts counted (:func:`network_usage`), each provider
        and class once (a sharing provider serves several trees)."""
        seen: set[tuple[str, str]] = set()
        out = []
        for t in self.trees:
            for row in network_usage(t):
                if (row["uuid"], row["resource_class"]) not in seen:
                    seen.add((row["uuid"], row["resource_class"]))
                    out.append(row)
        return tuple(out)

    def _pooled(self) -> dict[str, Pool]:
        return {h: p for p in self.pools for h in p.hosts}

    @property
    def total(self) -> int:
        """How many servers fit on all the hosts: each host's own count, a pool's hosts counted once together."""
        pooled = self._pooled()
        return sum(h.fit.fits for h in self.hosts if h.uuid not in pooled) + sum(p.fit.fits for p in self.pools)

    @property
    def total_first_fit(self) -> int:
        """How many servers first fit fills all the hosts with, a pool's hosts counted once together."""
        pooled = self._pooled()
        return sum(h.fit.first_fit for h in self.hosts if h.uuid not in pooled) + sum(
            p.fit.first_fit for p in self.pools
        )

    def physnet_totals(self) -> list[dict]:
        """Per physnet, sorted by name: a dict of physnet, traits, fits and first_fit (pools counted once) and hosts
        (how many fit one)."""
        pooled = self._pooled()
        totals: dict[str, dict] = {}
        for h in self.hosts:
            for n in h.physnets:
                t = totals.setdefault(
                    n.physnet, {"physnet": n.physnet, "traits": list(n.traits), "fits": 0, "first_fit": 0, "hosts": 0}
                )
                t["hosts"] += 1 if n.fit.fits else 0
                if h.uuid not in pooled:
                    t["fits"] += n.fit.fits
                    t["first_fit"] += n.fit.first_fit
        for p in self.pools:
            for label, f in p.physnets.items():
                if label in totals:
                    totals[label]["fits"] += f.fits
                    totals[label]["first_fit"] += f.first_fit
        return [totals[k] for k in sorted(totals)]

    def to_dict(self) -> dict:
        """The report as a JSON-ready dict: request, hosts, physnets, total, total_first_fit, notes, pools,
        providers."""
        names = {h.uuid: h.name for h in self.hosts}
        return {
            "request": self.request.to_dict(),
            "hosts": [h.to_dict() for h in self.hosts],
            "physnets": self.physnet_totals(),
            "total": self.total,
            "total_first_fit": self.total_first_fit,
            "notes": list(self.notes),
            "pools": [p.to_dict(names) for p in self.pools],
            "providers": [dict(p) for p in self.providers],
        }


# ---------------------------------------------------------------- hosts


def trees(
    details: Iterable, shared: Mapping[str, Iterable[str]] | None = None, memo: dict | None = None
) -> tuple[list[Tree], list[str]]:
    """The provider trees of ``details``, each with the sharing providers that serve it: ``shared`` maps a
    sharing provider (trait ``MISC_SHARES_VIA_AGGREGATE``) to the roots of the trees that have a provider in
    one of its aggregates (Placement's ``anchors_for_sharing_providers``); its own tree counts it anyway.
    ``memo`` (a dict kept between calls): a tree whose providers' details are the same as last time is not
    built again (the same :class:`Tree` object)."""
    details = list(details)
    by_uuid = {d.provider.uuid: d for d in details}
    by_root: dict[str, list] = {}
    for d in details:
        by_root.setdefault(d.provider.root_uuid, []).append(d)
    serves: dict[str, list] = {}
    for s, roots in (shared or {}).items():
        if s in by_uuid and SHARING_TRAIT in by_uuid[s].traits:
            for root in set(roots) - {by_uuid[s].provider.root_uuid}:
                serves.setdefault(root, []).append(by_uuid[s])
    trees, notes = [], []
    built = memo.setdefault("trees", {}) if memo is not None else {}
    kept = {}
    for root, members in by_root.items():
        top = next((d for d in members if d.provider.uuid == root), None)
        if top is None:
            continue  # a tree read without its root (cannot happen with a whole listing)
        outside = sorted(serves.get(root, ()), key=lambda d: d.provider.name)
        key = (tuple(members), tuple(outside))
        if root in built and built[root][0] == key:
            kept[root] = built[root]
            trees.append(built[root][1])
            continue
        names = {d.provider.uuid: d.provider.name for d in members + outside}
        order = tuple(
            [root]
            + sorted((d.provider.uuid for d in members if d.provider.uuid != root), key=lambda u: names[u])
            + [d.provider.uuid for d in outside]
        )
        stocks = {
            (d.provider.uuid, rc): s
            for d in members + outside
            for rc, s in stocks_of(d.provider.uuid, d.inventories, d.usages).items()
        }
        tree = Tree(
            root,
            names,
            {d.provider.uuid: d.provider.parent_uuid for d in members + outside},
            {d.provider.uuid: frozenset(d.traits) for d in members + outside},
            stocks,
            order,
            frozenset(d.provider.uuid for d in outside),
        )
        kept[root] = (key, tree)
        trees.append(tree)
    if memo is not None:
        memo["trees"] = kept  # the trees gone are forgotten
    if any(not getattr(d, "unmoved", True) for d in details):
        notes.append("some providers changed while they were read: run again for a consistent count")
    return sorted(trees, key=lambda t: t.names[t.root]), notes


def is_sharing_root(tree: Tree) -> bool:
    """Whether the tree's root is itself a sharing provider (trait ``MISC_SHARES_VIA_AGGREGATE``)."""
    return SHARING_TRAIT in tree.traits[tree.root]


def pools_of(host_trees: Iterable[Tree]) -> list[list[Tree]]:
    """The trees linked by the sharing providers they draw from (each tree's own providers included), in
    groups of two or more: the hosts whose counts share an inventory."""
    host_trees = list(host_trees)
    owner: dict[str, int] = {}
    parent = list(range(len(host_trees)))

    def find(i):
        """The index of the tree that stands for ``i``'s pool (union-find, paths halved on the way)."""
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, t in enumerate(host_trees):
        for rp in t.order:
            if rp in owner:
                parent[find(i)] = find(owner[rp])
            else:
                owner[rp] = i
    groups: dict[int, list[Tree]] = {}
    for i, t in enumerate(host_trees):
        groups.setdefault(find(i), []).append(t)
    return [g for g in groups.values() if len(g) > 1]


def host_networks(tree: Tree) -> tuple[str, ...]:
    """The network traits (physnets, tunnel) of the tree's providers, sorted."""
    return tuple(sorted({t for rp in tree.order for t in tree.traits[rp] if is_network_trait(t)}))


def _host(request: CapacityRequest, tree: Tree) -> HostCapacity:
    """The host counted; 0 everywhere on a host Nova's request filters keep out by its aggregates, with why."""
    host = _counted(request, tree)
    out = request.excluded_roots.get(tree.root)
    if out is None:
        return host
    zero = Fit(0, 0, True, 0, (Limit(reason=f"the root {host.name} {out}"),))
    return HostCapacity(host.uuid, host.name, zero, tuple(dataclasses.replace(n, fit=zero) for n in host.physnets))


def _counted(request: CapacityRequest, tree: Tree) -> HostCapacity:
    name = tree.names[tree.root]
    if request.open_groups:
        networks = host_networks(tree)
        rows = tuple(
            NetworkFit(
                request.label(t),
                (t,),
                fit_on_tree(request.for_network((t,)), tree, request.port_names, request.root_reasons),
            )
            for t in networks
        )
        if not networks:
            fit = Fit(
                0,
                0,
                True,
                0,
                (
                    Limit(
                        reason=f"no provider of {name} has a physnet or tunnel trait (CUSTOM_PHYSNET_*, {TUNNEL_TRAIT})"
                    ),
                ),
            )
        elif len(networks) == 1:
            fit = rows[0].fit
        else:
            fit = fit_on_tree(request.for_network(networks), tree, request.port_names, request.root_reasons)
        return HostCapacity(tree.root, name, fit, rows)
    fit = fit_on_tree(request.server, tree, request.port_names, request.root_reasons)
    fixed = request.fixed_networks()
    rows = (NetworkFit("+".join(request.label(t) for t in fixed), fixed, fit),) if fixed else ()
    return HostCapacity(tree.root, name, fit, rows)


def network_usage(tree: Tree) -> list[dict]:
    """Bandwidth and packet rate of each provider of the tree: capacity, used, free (for tables, pictures)."""
    out = []
    for rp in tree.order:
        for rc in NETWORK_CLASSES:
            s = tree.stocks.get((rp, rc))
            if s is None:
                continue
            out.append(
                {
                    "host": tree.names[tree.root],
                    "provider": tree.names[rp],
                    "uuid": rp,
                    "resource_class": rc,
                    "total": s.total,
                    "reserved": s.reserved,
                    "allocation_ratio": s.allocation_ratio,
                    "capacity": s.capacity,
                    "used": s.used,
                    "free": s.free,
                    "physnets": [network_label(t) for t in sorted(tree.traits[rp]) if is_network_trait(t)],
                }
            )
    return out


def _pool(request: CapacityRequest, group: Sequence[Tree], rows: Mapping[str, HostCapacity]) -> Pool:
    """The hosts of ``group`` counted together: the server as each host counts it, and per physnet row."""
    names = request.port_names
    pairs = []
    group = [t for t in group if t.root not in request.excluded_roots]
    for t in group:
        if request.open_groups:
            networks = host_networks(t)
            if networks:
                pairs.append((request.for_network(networks), t))
        else:
            pairs.append((request.server, t))
    together = fit_together(pairs, names, request.root_reasons) if pairs else Fit(0, 0, True, 0)
    physnets = {}
    for label in sorted({n.physnet for t in group for n in rows[t.root].physnets}):
        members = [(t, n) for t in group for n in rows[t.root].physnets if n.physnet == label]
        physnets[label] = fit_together(
            [(request.for_network(n.traits) if request.open_groups else request.server, t) for t, n in members],
            names,
            request.root_reasons,
        )
    sharing = sorted({t.names[rp] for t in group for rp in t.shared})
    return Pool(tuple(t.root for t in group), tuple(sharing), together, physnets)


def count_capacity(
    details: Iterable,
    request: CapacityRequest,
    shared: Mapping[str, Iterable[str]] | None = None,
    memo: dict | None = None,
) -> CapacityReport:
    """How many more servers shaped as ``request`` fit on each host (root provider) of ``details``,
    per physnet and in total (the module docstring gives the rule). ``shared``: the sharing providers and
    the roots they serve (:func:`trees`). ``memo``: a dict kept between counts of the same ``request`` (a
    long-running exporter's): a host whose tree did not change is not counted again."""
    host_trees, notes = trees(details, shared, memo)
    counted_before = memo.get("hosts", {}) if memo is not None else {}
    counted_now, rows = {}, {}
    for t in host_trees:
        kept = counted_before.get(t.root)
        if kept is None or kept[0] is not t:
            kept = (t, _host(request, t))
        counted_now[t.root] = kept
        rows[t.root] = kept[1]
    if memo is not None:
        memo["hosts"] = counted_now  # the hosts gone are forgotten
    counted = []
    for t in host_trees:
        if is_sharing_root(t) and not rows[t.root].fit.fits:
            served = sorted(o.names[o.root] for o in host_trees if t.root in o.shared)
            notes.append(
                f"{t.names[t.root]} shares its inventory via aggregates"
                + (
                    f": counted with the hosts it serves ({', '.join(served)})"
                    if served
                    else " with no host (it is in no aggregate with one)"
                )
                + "; it holds no server of this shape by itself"
            )
            continue
        counted.append(t)
    pools = tuple(_pool(request, g, rows) for g in pools_of(counted))
    hosts = tuple(rows[t.root] for t in counted)
    for p in pools:
        hosts_named = ", ".join(rows[h].name for h in p.hosts)
        notes.append(
            f"{hosts_named} draw from the same sharing provider(s) {', '.join(p.providers)}: each host's "
            f"count assumes the shared inventory is all its own; together {p.fit.fits} fit (the total "
            f"counts them once)"
        )
    return CapacityReport(request, hosts, tuple(counted), tuple(notes), pools)
