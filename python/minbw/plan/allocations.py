"""Claims and frees as plans: which candidate a claim takes, in which order it tries the others,
and what a free removes. Pure: :mod:`minbw.ops.claims` reads the candidates and applies.

Check mode and the real claim use the same :func:`plan_claim`: the prediction is the first
attempt the real run makes, and the real run goes on down the same list only when Placement
refuses an attempt (someone took the capacity meanwhile).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from minbw.model.claims import CandidateSet, Tried
from minbw.model.requests import ServerRequest
from minbw.placement.mapping import MappingResult, binding_allocations, mapping_from_candidate
from minbw.plan import base


@dataclass(frozen=True)
class Attempt:
    """One candidate as a claim would try it: its host (root provider) and group→provider mapping."""

    host: str
    allocation_request: Mapping[str, Any]
    mapping: MappingResult

    @property
    def usable(self) -> bool:
        """Only a candidate with exactly one group→provider mapping can be claimed: the ports'
        binding allocations must name the providers that really serve their groups."""
        return self.mapping.unique

    def skipped(self) -> Tried:
        """What a report says of an attempt that is not tried (a Tried): its host, outcome ``skipped`` and why (the
        mapping's description)."""
        return Tried(self.host, "skipped", self.mapping.describe())


def claim_order(cands: CandidateSet, req: ServerRequest, max_hosts: int) -> tuple[Attempt, ...]:
    """Every candidate a claim tries, in order: the first ``max_hosts`` hosts in Placement's order
    (Nova's alternates), each host's candidates in Placement's order, each with its mapping."""
    return tuple(
        Attempt(host, ar, mapping_from_candidate(ar, cands.provider_summaries, req))
        for host, host_cands in cands.by_host()[:max_hosts]
        for ar in host_cands
    )


@dataclass(frozen=True)
class ClaimOp(base.Op):
    """Put a new consumer's allocations: ``allocations`` ({rp: {"resources": ...}}) on ``host``."""

    consumer: str = ""
    host: str = ""
    allocations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    mapping: Mapping[str, list[str]] = field(default_factory=dict)
    mapping_source: str = ""
    binding_profiles: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the claim: action, consumer, host, allocations, mapping and its source, binding
        profiles."""
        return {
            "action": self.action,
            "consumer": self.consumer,
            "host": self.host,
            "allocations": {rp: dict(a) for rp, a in self.allocations.items()},
            "mapping": {k: list(v) for k, v in self.mapping.items()},
            "mapping_source": self.mapping_source,
            "binding_profiles": dict(self.binding_profiles),
        }


def claim_op(consumer: str, attempt: Attempt, req: ServerRequest) -> ClaimOp:
    """The claim of ``attempt`` for ``consumer``: the candidate's allocations, its mapping and the ports'
    ``binding:profile.allocation`` values. Raises MappingError when the attempt's mapping is not unique, RequestError
    when it leaves one of a port's groups unmapped."""
    allocations = {
        rp: {"resources": dict(a["resources"])} for rp, a in attempt.allocation_request["allocations"].items()
    }
    return ClaimOp(
        "claim",
        consumer=consumer,
        host=attempt.host,
        allocations=allocations,
        mapping=attempt.mapping.solutions[0],
        mapping_source=attempt.mapping.source,
        binding_profiles=binding_allocations(req.ports, attempt.mapping.group_providers()),
    )


@dataclass(frozen=True)
class ClaimPlan(base.Plan[ClaimOp]):
    """``ops`` holds the claim of the first usable attempt (none when there is no usable one);
    ``attempts`` the whole order the real run follows."""

    attempts: tuple[Attempt, ...] = ()
    candidates: CandidateSet | None = None

    def to_dict(self) -> dict[str, Any]:
        """The plan's dict plus ``attempts`` (how many) and ``skipped`` (the unusable attempts, as
        :meth:`Attempt.skipped`)."""
        return {
            **super().to_dict(),
            "attempts": len(self.attempts),
            "skipped": [a.skipped().to_dict() for a in self.attempts if not a.usable],
        }


def plan_claim(consumer: str, cands: CandidateSet, req: ServerRequest, max_hosts: int) -> ClaimPlan:
    """The claim plan of ``consumer``: its ops the claim of the first usable attempt of :func:`claim_order` (none when
    no attempt is usable), ``attempts`` the whole order. Raises RequestError when a usable mapping leaves a port's group
    unmapped."""
    attempts = claim_order(cands, req, max_hosts)
    first = next((a for a in attempts if a.usable), None)
    if first is None:
        return ClaimPlan((), before={"claimed": False}, after={"claimed": False}, attempts=attempts, candidates=cands)
    op = claim_op(consumer, first, req)
    return ClaimPlan(
        (op,), before={"claimed": False}, after={"claimed": True, "host": op.host}, attempts=attempts, candidates=cands
    )


def plan_free(consumer: str, current: Mapping[str, Any]) -> base.Plan[base.Op]:
    """Remove every allocation of ``consumer`` (``current``: its GET /allocations body)."""
    had = bool(current.get("allocations"))
    ops = (base.Op("free"),) if had else ()
    return base.Plan(ops, before={"claimed": had}, after={"claimed": False})


def totals(allocations: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """``{class: amount}`` summed over the providers of Placement's ``{rp: {"resources": {...}}}``."""
    out: dict[str, int] = {}
    for alloc in allocations.values():
        for rc, n in alloc.get("resources", {}).items():
            out[rc] = out.get(rc, 0) + n
    return out


def asked_totals(req: ServerRequest) -> dict[str, int]:
    """``{class: amount}`` a server request asks for in all (flavor and every port group)."""
    out: dict[str, int] = {}
    for g in req.request_groups():
        for rc, n in g.resources:
            out[rc] = out.get(rc, 0) + n
    return out


def holding_difference(consumer: str, held: Mapping[str, Mapping[str, Any]], req: ServerRequest, why: str) -> str:
    """Why ``consumer``'s allocations ``held`` are not the claim ``req`` asks for (``why``: the mapping's
    own reason), and what to do."""
    have, want = totals(held), asked_totals(req)
    diff = [
        f"{rc} {have.get(rc, 0)} held, {want.get(rc, 0)} asked"
        for rc in sorted(set(have) | set(want))
        if have.get(rc, 0) != want.get(rc, 0)
    ]
    what = "; ".join(diff) if diff else f"the same amounts, on providers that do not serve the request's groups ({why})"
    return (
        f"consumer {consumer} already holds allocations that are not this claim: {what}. Fix: free it first "
        f"(minbw allocation delete --consumer {consumer}; the allocation module's state: absent), or claim for another "
        f"consumer UUID"
    )
