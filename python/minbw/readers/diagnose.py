"""Why there is no valid host: per request group, in Placement's own terms.

For each group alone: can any provider serve it? If not, which required trait no
provider has, or the largest free capacity of the resource class that ran out (and
the inventory rule that refuses it). If every group fits alone, which hosts each
fits on, and whether the groups together exceed what a host has free.
"""

from __future__ import annotations

from minbw.model.providers import stocks_of
from minbw.model.requests import RequestGroup, ServerRequest
from minbw.placement.client import Placement
from minbw.placement.query import single_group_query
from minbw.reports.diagnosis import TOGETHER, Diagnosis


def _label(req: ServerRequest, gid: str) -> str:
    if not gid:
        return "flavor"
    for port in req.ports:
        for g in port.groups:
            if g.id == gid:
                kinds = sorted({"bandwidth" if "BW" in rc else "packet rate" for rc, _amount in g.resources}) or [
                    "traits"
                ]
                return f"port {port.port_id} {'/'.join(kinds)} group {gid}"
    return f"group {gid}"


def _trait_problems(api: Placement, g: RequestGroup) -> list[str]:
    problems = []
    wanted = set(g.required) | {t for alts in g.required_any for t in alts}
    known = api.existing_traits(wanted) if wanted else set()
    for t in sorted(set(g.required) - known):
        problems.append(f"trait {t} does not exist in Placement: no provider can have it")
    for t in sorted(set(g.required) & known):
        if not api.list_providers(required=t):
            problems.append(f"no provider has trait {t}")
    for alts in g.required_any:
        if not any(t in known and api.list_providers(required=t) for t in alts):
            problems.append(f"no provider has any of {', '.join(alts)}")
    if not problems and len(g.required) > 1 and not api.list_providers(required=",".join(g.required)):
        problems.append(f"no single provider has all of {', '.join(sorted(g.required))}")
    return problems


MAX_PROVIDERS_READ = 50


def _full_holders(api: Placement, g: RequestGroup, rc: str) -> dict[str, dict]:
    """Capacity and usage of the providers with the group's traits and ``rc`` inventory, read one by one
    (bounded): the ones allocation candidates leave out because nothing is free on them."""
    provs = api.list_providers(required=",".join(g.required)) if g.required else api.list_providers()
    out = {}
    for d in api.provider_details(provs[:MAX_PROVIDERS_READ], usages=True):
        if rc not in d.inventories or g.trait_problem(d.traits):
            continue
        stock = stocks_of(d.provider.uuid, d.inventories, d.usages)[rc]
        out[d.provider.uuid] = {"capacity": stock.capacity, "used": stock.used}
    return out


def _capacity_problems(api: Placement, g: RequestGroup, names: dict) -> list[str]:
    problems = []
    for rc, amount in g.resources:
        summaries = api.allocation_candidates(*single_group_query(g, {rc: 1}))["provider_summaries"]
        # summaries cover whole trees: keep the providers that have the class and the group's traits
        holders = {
            rp: s["resources"][rc]
            for rp, s in summaries.items()
            if rc in s.get("resources", {}) and not g.trait_problem(set(s.get("traits", ())))
        }
        if not holders:
            holders = _full_holders(api, g, rc)  # candidates only show providers with some room left
        if not holders:
            traits = f" with {', '.join(g.required)}" if g.required else ""
            problems.append(f"no provider{traits} has {rc} inventory")
            continue
        rp, best = max(holders.items(), key=lambda kv: kv[1]["capacity"] - kv[1]["used"])
        free = best["capacity"] - best["used"]
        where = f"{names.get(rp, rp)} (capacity {best['capacity']}, used {best['used']})"
        if free < amount:
            problems.append(f"{rc}: needs {amount}, the largest free amount is {free} on {where}")
            continue
        inv = api.get_inventories(rp)[0].get(rc, {})
        if amount > inv.get("max_unit", amount):
            problems.append(f"{rc}: needs {amount}, more than max_unit {inv['max_unit']} of {where}")
        elif amount < inv.get("min_unit", 1):
            problems.append(f"{rc}: needs {amount}, less than min_unit {inv['min_unit']} of {where}")
        elif amount % inv.get("step_size", 1):
            problems.append(f"{rc}: needs {amount}, not a multiple of step_size {inv['step_size']} of {where}")
    return problems


def _entry(
    req: ServerRequest, g: RequestGroup, problems: list[str], fits_alone: bool | None, hosts: list[str]
) -> Diagnosis:
    return Diagnosis(
        g.id,
        _label(req, g.id),
        tuple(problems),
        fits_alone,
        tuple(hosts),
        resources=dict(g.resources),
        required=tuple(g.required),
        required_any=tuple(tuple(a) for a in g.required_any),
    )


def diagnose(api: Placement, req: ServerRequest) -> list[Diagnosis]:
    """One Diagnosis per request group (and one for the combination when each group fits alone), in the request's
    group order. Lets PlacementError through."""
    providers = api.list_providers()  # one listing gives both the names and the roots
    names = {p.uuid: p.name for p in providers}
    roots = {p.uuid: p.root_uuid for p in providers}
    out: list[Diagnosis] = []
    fits: dict[str, dict[str, set[str]]] = {}  # group → host → providers that could serve it there
    for g in req.request_groups():
        if not g.resources:
            out.append(_entry(req, g, ["no resources (only traits): not checked alone"], None, []))
            continue
        # traits first: Placement refuses (400) a query naming a trait it does not know
        problems = _trait_problems(api, g)
        found = []
        if not problems:
            found = api.allocation_candidates(*single_group_query(g))["allocation_requests"]
        hosts: dict[str, set[str]] = {}
        for ar in found:
            for rp in ar["allocations"]:
                hosts.setdefault(roots.get(rp, rp), set()).add(rp)
        fits[g.id] = hosts
        if not found and not problems:
            problems = _capacity_problems(api, g, names) or [
                "no provider can serve it (checked traits and capacity: the constraints combine)"
            ]
        out.append(_entry(req, g, problems, bool(found), sorted(names.get(h, h) for h in hosts)))
    checked = [e for e in out if e.fits_alone is not None]
    if checked and all(e.fits_alone for e in checked):
        out.append(_combined(api, req, fits, names))
    return out


def _ruled_out(api: Placement, req: ServerRequest, root: str) -> str:
    """The request-wide filters that rule the host of root provider ``root`` out ("" when none does): its root
    traits against ``root_required``, its aggregates against ``member_of`` (two reads, only when asked)."""
    why = []
    if req.root_required or req.root_forbidden:
        traits = api.get_provider_traits(root)[0]
        why += [f"root_required={t}" for t in req.root_required if t not in traits]
        why += [f"root_required=!{t}" for t in req.root_forbidden if t in traits]
    if req.member_of or req.forbidden_member_of:
        aggregates = api.get_provider_aggregates(root)[0]
        why += [f"member_of=in:{','.join(m)}" for m in req.member_of if not set(m) & aggregates]
        if set(req.forbidden_member_of) & aggregates:
            why.append(f"member_of=!in:{','.join(req.forbidden_member_of)}")
    return " ".join(why)


def _combined(api: Placement, req: ServerRequest, fits: dict, names: dict) -> Diagnosis:
    common = set.intersection(*(set(h) for h in fits.values())) if fits else set()
    if not common:
        return Diagnosis(
            "*",
            "all groups together",
            (
                "no single host can serve every group: "
                + "; ".join(
                    f"{_label(req, gid)} fits on {', '.join(sorted(names.get(h, h) for h in hosts))}"
                    for gid, hosts in fits.items()
                ),
            ),
            False,
            (),
            kind=TOGETHER,
        )
    problems = []
    groups = {g.id: g for g in req.request_groups()}
    policy = req.effective_group_policy()
    for i, host in enumerate(sorted(common)):
        demand: dict[str, int] = {}
        for gid in fits:
            for rc, amount in groups[gid].resources:
                demand[rc] = demand.get(rc, 0) + amount
        numbered = [fits[gid][host] for gid in fits if gid]
        shared = set.intersection(*numbered) if numbered else set()
        need = ", ".join(f"{rc}={n}" for rc, n in sorted(demand.items()))
        detail = f"on {names.get(host, host)} the groups need {need} together"
        filters = _ruled_out(api, req, host) if i < MAX_PROVIDERS_READ else ""
        if filters:
            detail += (
                f", and the request-wide filters {filters} rule it out (Nova's request filters, a reserved host: "
                f"see host separation)"
            )
        elif (
            policy == "isolate"
            and len([gid for gid in fits if gid]) > 1
            and shared
            and all(len(fits[gid][host]) == 1 for gid in fits if gid)
        ):
            detail += (
                ", but group_policy=isolate forbids the numbered groups from sharing "
                f"{names.get(next(iter(shared)), '')}"
            )
        else:
            detail += (
                ": more than the providers that could serve them have free at once, or same_subtree rules them out"
            )
        problems.append(detail)
    return Diagnosis(
        "*",
        "all groups together",
        tuple(problems),
        False,
        tuple(sorted(names.get(h, h) for h in common)),
        kind=TOGETHER,
    )
