"""Every host of a listing, counted: per host, per physnet and in total, with each provider's bandwidth and packet
rate (used, free). Pure: the use case reads the providers."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ...model.providers import stocks_of
from ...neutron import naming
from ...reports.capacity.request import TUNNEL_TRAIT, CapacityRequest, is_network_trait, network_label
from ...reports.capacity.solver import Fit, Limit, Tree, fit as fit_on

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
NETWORK_CLASSES = (naming.BW_EGRESS, naming.BW_INGRESS, naming.PPS_ANY, naming.PPS_EGRESS, naming.PPS_INGRESS)


@dataclass(frozen=True)
class NetworkFit:
    physnet: str
    traits: tuple[str, ...]
    fit: Fit

    def to_dict(self) -> dict:
        return {"physnet": self.physnet, "traits": list(self.traits), **self.fit.to_dict()}


@dataclass(frozen=True)
class HostCapacity:
    uuid: str
    name: str
    fit: Fit
    physnets: tuple[NetworkFit, ...]

    def to_dict(self) -> dict:
        return {"host": self.name, "uuid": self.uuid, **self.fit.to_dict(),
                "physnets": [n.to_dict() for n in self.physnets]}


@dataclass(frozen=True)
class CapacityReport:
    request: CapacityRequest
    hosts: tuple[HostCapacity, ...]
    providers: tuple[Mapping, ...]
    notes: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return sum(h.fit.fits for h in self.hosts)

    def physnet_totals(self) -> list[dict]:
        totals: dict[str, dict] = {}
        for h in self.hosts:
            for n in h.physnets:
                t = totals.setdefault(n.physnet, {"physnet": n.physnet, "traits": list(n.traits), "fits": 0,
                                                  "first_fit": 0, "hosts": 0})
                t["fits"] += n.fit.fits
                t["first_fit"] += n.fit.first_fit
                t["hosts"] += 1 if n.fit.fits else 0
        return [totals[k] for k in sorted(totals)]

    def to_dict(self) -> dict:
        return {"request": self.request.to_dict(), "hosts": [h.to_dict() for h in self.hosts],
                "physnets": self.physnet_totals(), "total": self.total,
                "total_first_fit": sum(h.fit.first_fit for h in self.hosts), "notes": list(self.notes),
                "providers": [dict(p) for p in self.providers]}


# ---------------------------------------------------------------- hosts

def trees(details: Iterable) -> tuple[list[Tree], list[str]]:
    details = list(details)
    by_root: dict[str, list] = {}
    for d in details:
        by_root.setdefault(d.provider.root_uuid, []).append(d)
    trees, notes = [], []
    for root, members in by_root.items():
        top = next((d for d in members if d.provider.uuid == root), None)
        if top is None:
            continue  # a tree read without its root (cannot happen with a whole listing)
        if SHARING_TRAIT in top.traits:
            notes.append(f"{top.provider.name} shares its inventory via aggregates: sharing providers are not "
                         f"counted here")
            continue
        names = {d.provider.uuid: d.provider.name for d in members}
        order = tuple([root] + sorted((d.provider.uuid for d in members if d.provider.uuid != root),
                                      key=lambda u: names[u]))
        stocks = {(d.provider.uuid, rc): s for d in members
                  for rc, s in stocks_of(d.provider.uuid, d.inventories, d.usages).items()}
        trees.append(Tree(root, names, {d.provider.uuid: d.provider.parent_uuid for d in members},
                           {d.provider.uuid: frozenset(d.traits) for d in members}, stocks, order))
    if any(not getattr(d, "unmoved", True) for d in details):
        notes.append("some providers changed while they were read: run again for a consistent count")
    return sorted(trees, key=lambda t: t.names[t.root]), notes


def host_networks(tree: Tree) -> tuple[str, ...]:
    return tuple(sorted({t for rp in tree.order for t in tree.traits[rp] if is_network_trait(t)}))


def _host(request: CapacityRequest, tree: Tree) -> HostCapacity:
    name = tree.names[tree.root]
    if request.open_groups:
        networks = host_networks(tree)
        rows = tuple(NetworkFit(request.label(t), (t,), fit_on(request.for_network((t,)), tree, request.port_names))
                     for t in networks)
        if not networks:
            fit = Fit(0, 0, True, 0, (Limit(reason=f"no provider of {name} has a physnet or tunnel trait "
                                                   f"(CUSTOM_PHYSNET_*, {TUNNEL_TRAIT})"),))
        elif len(networks) == 1:
            fit = rows[0].fit
        else:
            fit = fit_on(request.for_network(networks), tree, request.port_names)
        return HostCapacity(tree.root, name, fit, rows)
    fit = fit_on(request.server, tree, request.port_names)
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
            out.append({"host": tree.names[tree.root], "provider": tree.names[rp], "uuid": rp, "resource_class": rc,
                        "total": s.total, "reserved": s.reserved, "allocation_ratio": s.allocation_ratio,
                        "capacity": s.capacity, "used": s.used, "free": s.free,
                        "physnets": [network_label(t) for t in sorted(tree.traits[rp]) if is_network_trait(t)]})
    return out


def capacity(details: Iterable, request: CapacityRequest) -> CapacityReport:
    """How many more servers shaped as ``request`` fit on each host (root provider) of ``details``,
    per physnet and in total (the module docstring gives the rule)."""
    host_trees, notes = trees(details)
    hosts = tuple(_host(request, t) for t in host_trees)
    providers = tuple(row for t in host_trees for row in network_usage(t))
    return CapacityReport(request, hosts, providers, tuple(notes))
