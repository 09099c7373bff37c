"""Which provider serves which request group of one allocation candidate.

Placement says so in ``mappings`` (microversion 1.34+). For older servers, and for
allocations that already exist (healing, verifying a server), an exact local solver
enumerates every assignment consistent with the allocation and Placement's rules, and
reports ambiguity instead of guessing (Nova's pre-1.34 brute force took the first match).
Inputs are Placement's own JSON: one ``allocation_requests`` item and ``provider_summaries``.
Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minbw.errors import MappingError, RequestError
from minbw.model.claims import resources_by_provider
from minbw.model.requests import PortRequest, RequestGroup, ServerRequest

UNIQUE = "unique"
AMBIGUOUS = "ambiguous"
NO_SOLUTION = "none"
SOLVER = "solver"
PLACEMENT = "placement"


@dataclass(frozen=True)
class MappingResult:
    """``solutions`` use Placement's ``mappings`` format: ``{suffix: [rp_uuid, ...]}``."""

    status: str
    solutions: tuple[dict[str, list[str]], ...] = ()
    reason: str = ""
    source: str = SOLVER
    truncated: bool = False

    @property
    def unique(self) -> bool:
        """Whether exactly one mapping fits (status ``unique``)."""
        return self.status == UNIQUE

    @property
    def mapping(self) -> dict[str, list[str]] | None:
        """The one mapping (``{suffix: [rp_uuid, ...]}``) when it is unique, else None."""
        return self.solutions[0] if self.unique else None

    def group_providers(self) -> dict[str, str]:
        """``{group_id: rp_uuid}`` for the numbered groups of the unique mapping."""
        if not self.unique:
            raise MappingError(self)
        return {gid: rps[0] for gid, rps in self.solutions[0].items() if gid}

    def describe(self) -> str:
        """One line for reports: the unique mapping and its source, the ambiguous ones (refused), or why none fits."""
        if self.status == UNIQUE:
            return f"unique mapping (from {self.source}): {self.solutions[0]}"
        if self.status == AMBIGUOUS:
            more = " (and more)" if self.truncated else ""
            return (
                f"{len(self.solutions)}{more} group-to-provider mappings fit this allocation; "
                f"refusing to guess: {list(self.solutions)}"
            )
        return f"no group-to-provider mapping fits this allocation: {self.reason}"


def _request_parts(request, same_subtree, group_policy):
    if isinstance(request, ServerRequest):
        return request.request_groups(), request.same_subtrees(), request.effective_group_policy()
    groups = tuple(request.values()) if isinstance(request, Mapping) else tuple(request)
    return groups, tuple(tuple(s) for s in same_subtree), group_policy


def _allocations(allocation_request: Mapping) -> dict[str, dict[str, int]]:
    # Accept one allocation_requests item ({"allocations": ..., "mappings": ...}) or its allocations.
    return resources_by_provider(allocation_request.get("allocations", allocation_request))


def _ancestors(rp: str, summaries: Mapping) -> set[str]:
    chain = [rp]
    while True:
        parent = (summaries.get(chain[-1]) or {}).get("parent_provider_uuid")
        if not parent or parent in chain:
            return set(chain)
        chain.append(parent)


def same_subtree_holds(rps: Iterable[str], summaries: Mapping) -> bool:
    """Placement's ``_check_same_subtree``: one of the providers is an ancestor (or self) of all."""
    rps = set(rps)
    if len(rps) <= 1:
        return True
    common = set.intersection(*(_ancestors(rp, summaries) for rp in rps))
    return bool(common & rps)


def _candidates(group: RequestGroup, allocs, summaries, roots) -> tuple[list[str], list[str]]:
    """Providers that could serve ``group`` alone, and why each other one cannot."""
    ok, why = [], []
    pool = (
        allocs if group.resources else [rp for rp, s in summaries.items() if s.get("root_provider_uuid", rp) in roots]
    )
    for rp in sorted(pool):
        problem = group.trait_problem(set((summaries.get(rp) or {}).get("traits", ())))
        if not problem and group.resources:
            for rc, amount in group.resources:
                have = allocs[rp].get(rc, 0)
                if have < amount:
                    problem = f"allocates {have} {rc}, the group needs {amount}"
                    break
        if problem:
            why.append(f"{rp} {problem}")
        else:
            ok.append(rp)
    return ok, why


def _flavor_providers(flavor: RequestGroup | None, left: dict, summaries) -> tuple[list[str], str]:
    """Placement takes each unsuffixed class from ONE provider: the leftover must be exactly that."""
    need = flavor.resource_dict if flavor else {}
    by_rc: dict[str, list[tuple[str, int]]] = {}
    for rp, res in left.items():
        for rc, amount in res.items():
            if amount:
                by_rc.setdefault(rc, []).append((rp, amount))
    providers = set()
    for rc in set(by_rc) | set(need):
        got = by_rc.get(rc, [])
        expected = [(got[0][0], need[rc])] if rc in need and got else []
        if got != expected or (rc in need and not got):
            return [], "amounts"
        providers.add(got[0][0])
    if flavor:
        traits_of = {rp: set((summaries.get(rp) or {}).get("traits", ())) for rp in providers}
        collective = set().union(*traits_of.values())
        if any(t & set(flavor.forbidden) for t in traits_of.values()) or RequestGroup(
            "", required=flavor.required, required_any=flavor.required_any
        ).trait_problem(collective):
            return [], "flavor traits"
    return sorted(providers), ""


def solve(
    allocation_request: Mapping,
    provider_summaries: Mapping,
    request: ServerRequest | Iterable[RequestGroup] | Mapping[str, RequestGroup],
    same_subtree: Iterable[Iterable[str]] = (),
    group_policy: str | None = None,
    *,
    max_solutions: int = 64,
) -> MappingResult:
    """Every mapping of ``request``'s groups to providers that yields exactly this allocation.

    A numbered group takes all its resources from one provider that has its required traits,
    none of its forbidden ones and one of each any-of set; the unsuffixed group takes each class
    from one provider and its traits collectively; amounts add up exactly; every
    ``same_subtree`` list has one provider that is an ancestor of the others; ``isolate`` means
    distinct providers for numbered groups. (member_of and root_required are not checked:
    summaries carry no aggregates, and the candidate already satisfied them.)
    """
    groups, subtrees, policy = _request_parts(request, same_subtree, group_policy)
    allocs = _allocations(allocation_request)
    summaries = provider_summaries
    unknown = sorted(rp for rp in allocs if rp not in summaries)
    if unknown:
        return MappingResult(
            NO_SOLUTION, reason=f"providers {unknown} are in the allocation but not in provider_summaries"
        )
    roots = {summaries[rp].get("root_provider_uuid", rp) for rp in allocs}
    flavor = next((g for g in groups if not g.id), None)
    numbered = [g for g in groups if g.id]
    cands = {}
    for g in numbered:
        cands[g.id], why = _candidates(g, allocs, summaries, roots)
        if not cands[g.id]:
            return MappingResult(
                NO_SOLUTION,
                reason=f"no provider in the allocation can serve group {g.id} alone: {'; '.join(why) or 'none'}",
            )
    # fewest choices first prunes the search early
    order = sorted(numbered, key=lambda g: (len(cands[g.id]), g.id))
    left = {rp: dict(res) for rp, res in allocs.items()}
    chosen: dict[str, str] = {}
    solutions: list[dict[str, list[str]]] = []
    rejected: Counter[str] = Counter()

    def walk(i: int) -> None:
        if len(solutions) > max_solutions:
            return
        if i == len(order):
            flavor_rps, why = _flavor_providers(flavor, left, summaries)
            if why:
                rejected[why] += 1
                return
            for ids in subtrees:
                if not same_subtree_holds((chosen[s] for s in ids if s in chosen), summaries):
                    rejected["same_subtree " + ",".join(ids)] += 1
                    return
            found = {gid: [rp] for gid, rp in sorted(chosen.items())}
            if flavor is not None:
                found[""] = flavor_rps
            solutions.append(found)
            return
        g = order[i]
        for rp in cands[g.id]:
            if policy == "isolate" and rp in chosen.values():
                rejected["isolate"] += 1
                continue
            if g.resources and any(left[rp].get(rc, 0) < a for rc, a in g.resources):
                rejected["amounts"] += 1
                continue
            for rc, a in g.resources:
                left[rp][rc] -= a
            chosen[g.id] = rp
            walk(i + 1)
            del chosen[g.id]
            for rc, a in g.resources:
                left[rp][rc] += a

    walk(0)
    truncated = len(solutions) > max_solutions
    solutions = solutions[:max_solutions]
    if len(solutions) == 1:
        return MappingResult(UNIQUE, tuple(solutions))
    if solutions:
        return MappingResult(AMBIGUOUS, tuple(solutions), truncated=truncated)
    explain = {
        "amounts": "the groups' amounts never add up exactly to the allocation",
        "flavor traits": "the providers left for the flavor's resources lack its traits",
        "isolate": "group_policy=isolate needs a distinct provider per numbered group",
    }
    reasons = [f"{explain.get(k, k + ' does not hold')} ({n} assignment(s))" for k, n in rejected.most_common()]
    return MappingResult(NO_SOLUTION, reason="; ".join(reasons) or "no assignment to try")


def mapping_from_candidate(
    candidate: Mapping,
    provider_summaries: Mapping | None,
    request: ServerRequest | Iterable[RequestGroup] | Mapping[str, RequestGroup],
    same_subtree: Iterable[Iterable[str]] = (),
    group_policy: str | None = None,
    *,
    verify: bool = False,
) -> MappingResult:
    """Placement's ``mappings`` when the candidate has them (1.34+), else the local solver.

    ``provider_summaries`` None takes the candidate's own (openstacksdk's AllocationCandidate
    carries them). ``verify`` also runs the solver and flags a Placement mapping it cannot
    reproduce.
    """
    groups, subtrees, policy = _request_parts(request, same_subtree, group_policy)
    summaries = provider_summaries if provider_summaries is not None else (candidate.get("provider_summaries") or {})
    given = candidate.get("mappings")
    numbered = [g.id for g in groups if g.id]
    if given and all(len(given.get(gid) or ()) == 1 for gid in numbered):
        norm = {k: sorted(v) for k, v in sorted(given.items())}
        if verify:
            solved = solve(candidate, summaries, groups, subtrees, policy)
            if norm not in solved.solutions:
                return MappingResult(
                    NO_SOLUTION,
                    solved.solutions,
                    source=PLACEMENT,
                    reason=f"Placement's mappings {norm} do not satisfy the request "
                    f"by the local solver ({solved.describe()})",
                )
        return MappingResult(UNIQUE, (norm,), source=PLACEMENT)
    return solve(candidate, summaries, groups, subtrees, policy)


def binding_allocation(port: PortRequest, group_providers: Mapping[str, str]) -> dict[str, str] | str:
    """The port's ``binding:profile.allocation``: ``{group_id: rp}``, or one rp for the legacy format."""
    missing = [g.id for g in port.groups if g.id not in group_providers]
    if missing:
        raise RequestError(
            f"port {port.port_id}: no provider mapped for request group(s) {missing}. "
            f"Fix: map the candidate with the same request the query was built from."
        )
    if port.legacy:
        return group_providers[port.groups[0].id]
    return {g.id: group_providers[g.id] for g in port.groups}


def binding_allocations(
    ports: Iterable[PortRequest | None], group_providers: Mapping[str, str]
) -> dict[str, dict[str, str] | str]:
    """``{port_id: binding:profile.allocation}`` for every port that has a request and an id (a port given by its
    extended resource_request alone has no port to write it to: the mapping names its groups' providers)."""
    return {p.port_id: binding_allocation(p, group_providers) for p in ports if p and p.groups and p.port_id}
