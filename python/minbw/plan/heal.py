"""Healing a server's QoS ports (seed 004's "upgrade support"; what ``nova-manage placement
heal_allocations`` does, deterministic where it gives up). Pure: :mod:`minbw.ops.heal` reads and writes.

For each request group of each port of the server:

* ``ok``: the port's ``binding:profile.allocation`` names a provider that holds the group's resources
  for the server;
* ``binding``: the server's allocation holds the group on exactly one provider, but the binding
  allocation is missing or names another: write the binding;
* ``allocation``: the binding names a provider that lacks the group's resources for the server: add
  them there (if it has the traits and the room);
* ``both``: neither: choose a provider in the server's compute tree, add the resources, write the binding.

Where several providers fit, the choice follows what Nova's own scheduling implies: a provider whose
physnet is the port's ``binding:profile.physical_network`` (SR-IOV), else the one device of the
port's physnet (OVS: one bridge per physnet), else the one with most room, then by name; the
``chosen_by`` of each group says which rule decided.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from minbw.model.claims import resources_by_provider
from minbw.model.providers import Stock, stocks_of
from minbw.model.requests import RequestGroup
from minbw.neutron import naming
from minbw.plan import base
from minbw.reports.guarantee import PortState

OK, BINDING, ALLOCATION, BOTH = "ok", "binding", "allocation", "both"


@dataclass(frozen=True)
class GroupHeal:
    port: str
    group: str
    status: str  # ok | binding | allocation | both | unhealable
    provider: str | None = None
    chosen_by: str = ""
    why: str = ""

    def to_dict(self) -> dict:
        """A JSON-ready dict: port, group, status, provider, ``chosen_by`` and ``why``."""
        return {
            "port": self.port,
            "group": self.group,
            "status": self.status,
            "provider": self.provider,
            "chosen_by": self.chosen_by,
            "why": self.why,
        }


@dataclass(frozen=True)
class HealOp(base.Op):
    """``put_allocations`` (``allocations``: the server's whole new allocation) or ``update_binding``
    (``port`` gets ``binding``: its binding:profile.allocation)."""

    consumer: str = ""
    allocations: Mapping[str, Mapping] = field(default_factory=dict)
    port: str = ""
    binding: object = None

    def to_dict(self) -> dict:
        """A JSON-ready dict: action, consumer and allocations for ``put_allocations``; action, port and binding
        otherwise."""
        if self.action == "put_allocations":
            return {
                "action": self.action,
                "consumer": self.consumer,
                "allocations": {rp: dict(a) for rp, a in self.allocations.items()},
            }
        return {"action": self.action, "port": self.port, "binding": self.binding}


@dataclass(frozen=True)
class HealPlan(base.Plan):
    server: str = ""
    groups: tuple[GroupHeal, ...] = ()
    generation: int | None = None

    @property
    def healable(self) -> bool:
        """Whether every group can be healed (none ``unhealable``)."""
        return all(g.status != "unhealable" for g in self.groups)

    def to_dict(self) -> dict:
        """The plan's dict plus server, ``healable`` and the groups' dicts."""
        return {
            **super().to_dict(),
            "server": self.server,
            "healable": self.healable,
            "groups": [g.to_dict() for g in self.groups],
        }


@dataclass(frozen=True)
class ServerHeal:
    """One server's heal: its ``plan`` (None when it could not be planned), whether it was ``healed`` (with
    ``writes`` made), the ``error`` that left it unhealed and, when a write failed, what was ``rolled_back``."""

    server: str
    name: str
    plan: HealPlan | None = None
    healed: bool = False
    error: str | None = None
    writes: int | None = None  # set when the writes were made
    rolled_back: tuple[str, ...] | None = None  # set when a write failed and the others were undone

    @property
    def needs_writes(self) -> bool:
        """Whether the server's plan has writes to make."""
        return self.plan is not None and bool(self.plan.ops)

    def to_dict(self) -> dict:
        """A JSON-ready dict: server, name, the plan's dict and diff (when planned), healed, writes (when
        made), error, rolled_back (when a write failed)."""
        out: dict = {"server": self.server, "name": self.name}
        if self.plan is not None:
            out.update(plan=self.plan.to_dict(), diff=self.plan.diff())
        out["healed"] = self.healed
        if self.writes is not None:
            out["writes"] = self.writes
        out["error"] = self.error
        if self.rolled_back is not None:
            out["rolled_back"] = list(self.rolled_back)
        return out


def _bound_to(port: PortState, group: RequestGroup) -> str | None:
    alloc = dict(port.binding_profile).get("allocation")
    if isinstance(alloc, str):  # the legacy format: one provider for the port's one group
        return alloc
    return (alloc or {}).get(group.id)


def _fits(group: RequestGroup, stocks: Mapping[str, Stock], adding: Mapping[str, int]) -> str:
    """Why ``group`` cannot be added to a provider with ``stocks`` ("" when it fits)."""
    for rc, amount in group.resources:
        stock = stocks.get(rc)
        if stock is None:
            return f"no {rc} inventory"
        refused = stock.refuses(amount)
        if refused:
            return refused
        if stock.free - adding.get(rc, 0) < amount:
            return f"{rc}: {stock.free - adding.get(rc, 0)} free, needs {amount}"
    return ""


def _choose(port: PortState, group: RequestGroup, fits: list[str], tree: Mapping[str, Mapping]) -> tuple[str, str]:
    if len(fits) == 1:
        return fits[0], "the only provider that fits"
    physnet = dict(port.binding_profile).get("physical_network")
    if physnet:
        trait = naming.physnet_trait(physnet)
        same = [rp for rp in fits if trait in tree[rp]["traits"]]
        if len(same) == 1:
            return same[0], f"the only one on the port's physical_network {physnet}"
        fits = same or fits
    most = max(min(s.free for s in tree[rp]["stocks"].values()) for rp in fits)
    best = sorted((tree[rp]["name"], rp) for rp in fits if min(s.free for s in tree[rp]["stocks"].values()) == most)
    return best[0][1], f"{len(fits)} providers fit; the one with most room, then by name (Nova's choice is unknown)"


def plan_heal(server: Mapping, current: Mapping, ports: list[PortState], tree: Mapping[str, Mapping]) -> HealPlan:
    """``server``: ``id``; ``current``: its GET /allocations body; ``tree``: rp → ``{name, traits,
    inventories, usages}`` for the server's compute tree (ProviderDetail-like dicts)."""
    allocs = resources_by_provider(current.get("allocations"))
    stocks = {rp: stocks_of(rp, info.get("inventories"), info.get("usages")) for rp, info in tree.items()}
    tree = {rp: {**info, "traits": set(info.get("traits", ())), "stocks": stocks[rp]} for rp, info in tree.items()}
    unexplained = {
        rp: {rc: n for rc, n in res.items() if rc in naming.GUARANTEED_CLASSES} for rp, res in allocs.items()
    }
    adding: dict[str, dict[str, int]] = {}
    results: list[GroupHeal] = []
    todo: list[tuple[PortState, RequestGroup]] = []

    def take(rp, group):  # the group's resources on rp count as explained
        for rc, n in group.resources:
            unexplained[rp][rc] -= n

    def holds(rp, group):
        return rp in unexplained and all(unexplained[rp].get(rc, 0) >= n for rc, n in group.resources)

    for port in ports:
        for group in port.request.groups if port.request else ():
            bound = _bound_to(port, group)
            if bound and holds(bound, group):
                take(bound, group)
                results.append(GroupHeal(port.id, group.id, OK, bound))
            else:
                todo.append((port, group))
    for port, group in todo:
        bound = _bound_to(port, group)
        held = [
            rp
            for rp in sorted(unexplained)
            if holds(rp, group) and not group.trait_problem(tree.get(rp, {}).get("traits", set()))
        ]
        if held and (len(held) == 1 or bound not in tree):
            take(held[0], group)
            results.append(
                GroupHeal(
                    port.id,
                    group.id,
                    BINDING,
                    held[0],
                    "the server's allocation holds it there" if len(held) == 1 else "first of several holding it",
                )
            )
            continue
        candidates = [bound] if bound in tree else sorted(tree)
        fits, why = [], []
        for rp in candidates:
            problem = group.trait_problem(tree[rp]["traits"]) or _fits(group, tree[rp]["stocks"], adding.get(rp, {}))
            (why.append(f"{tree[rp]['name']}: {problem}") if problem else fits.append(rp))
        if not fits:
            where = "the provider its binding names" if bound in tree else "the server's compute tree"
            results.append(
                GroupHeal(
                    port.id,
                    group.id,
                    "unhealable",
                    why=f"no provider in {where} can take "
                    f"{dict(group.resources)} with {list(group.required)}: " + "; ".join(why),
                )
            )
            continue
        rp, chosen_by = (bound, "the provider its binding names") if bound in tree else _choose(port, group, fits, tree)
        for rc, n in group.resources:
            adding.setdefault(rp, {}).setdefault(rc, 0)
            adding[rp][rc] += n
        results.append(GroupHeal(port.id, group.id, ALLOCATION if bound in tree else BOTH, rp, chosen_by))
    return _plan(server, current, ports, results, allocs, adding)


def _plan(server, current, ports, results, allocs, adding) -> HealPlan:
    ops: list[HealOp] = []
    healable = all(r.status != "unhealable" for r in results)
    after_allocs = {rp: dict(res) for rp, res in allocs.items()}
    for rp, res in adding.items():
        for rc, n in res.items():
            after_allocs.setdefault(rp, {}).setdefault(rc, 0)
            after_allocs[rp][rc] += n
    if healable and adding:
        ops.append(
            HealOp(
                "put_allocations",
                consumer=server["id"],
                allocations={rp: {"resources": res} for rp, res in after_allocs.items()},
            )
        )
    by_port = {p.id: p for p in ports}
    bindings = {}
    for r in results:
        if r.provider:
            bindings.setdefault(r.port, {})[r.group] = r.provider
    if healable:
        for pid, groups in sorted(bindings.items()):
            port = by_port[pid]
            want = (
                next(iter(groups.values())) if isinstance(dict(port.binding_profile).get("allocation"), str) else groups
            )
            if dict(port.binding_profile).get("allocation") != want:
                ops.append(HealOp("update_binding", port=pid, binding=want))
    before = {"allocations": allocs, "bindings": {p.id: dict(p.binding_profile).get("allocation") for p in ports}}
    after = {
        "allocations": after_allocs if healable else allocs,
        "bindings": {**before["bindings"], **{op.port: op.binding for op in ops if op.port}},
    }
    return HealPlan(
        tuple(ops),
        before=before,
        after=after,
        server=server["id"],
        groups=tuple(results),
        generation=current.get("consumer_generation"),
    )
