"""Allocation candidates, claims and frees against Placement.

One ``GET /allocation_candidates`` for the whole server; one atomic
``PUT /allocations/{consumer}`` per attempt, in the order :func:`minbw.plan.allocations.plan_claim`
gives (the same plan check mode shows). Conflicts are told apart by their code and by the
consumer's state, never by message text:

* capacity (``placement.undefined_code`` 409): try the next candidate on the same
  host, then the next host (Nova's alternates);
* provider generation (``placement.concurrent_update`` while the consumer still has
  no allocations): retry the same candidate with jittered backoff, bounded;
* consumer generation (``placement.concurrent_update`` and the consumer now has
  allocations): fail, naming the consumer — someone else claimed for it.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

from ..errors import ConcurrentUpdate, ConsumerConflict, NoValidHost, PlacementError, UndefinedCode
from ..model import microversions as mv
from ..model.claims import CandidateSet, Claim
from ..model.requests import ServerRequest
from ..placement.client import Placement
from ..placement.mapping import binding_allocations, solve
from ..placement.query import build_query
from ..plan.allocations import ClaimOp, ClaimPlan, claim_op, plan_claim
from ..reports.diagnose import diagnose, summary


def get_candidates(api: Placement, req: ServerRequest) -> CandidateSet:
    params, version = build_query(req, api.max_version(), pinned=api.pin_limits())
    try:
        body = api.allocation_candidates(params, version)
    except PlacementError as e:
        # Placement answers 400 for a trait it has never heard of; no provider can have it,
        # so that is "no candidates" (and the diagnosis names the trait), not a bad query.
        unknown = _unknown_traits(api, req) if e.status == 400 else set()
        lighter = req.without_forbidden(unknown)
        if unknown and not unknown & _required_traits(req) and lighter != req:
            # only forbidden ones (a separation trait not created yet): forbidding them excludes nothing
            return get_candidates(api, lighter)
        if unknown:
            return CandidateSet((), {}, params, version)
        raise
    return CandidateSet(tuple(body["allocation_requests"]), body["provider_summaries"], params, version)


def _required_traits(req: ServerRequest) -> set[str]:
    return {t for g in req.request_groups() for t in (*g.required, *(x for a in g.required_any for x in a))
            } | set(req.root_required)


def _unknown_traits(api: Placement, req: ServerRequest) -> set[str]:
    wanted = _required_traits(req) | {t for g in req.request_groups() for t in g.forbidden} | set(req.root_forbidden)
    return wanted - api.existing_traits(wanted)


def named(api: Placement, claim: Claim) -> Claim:
    """The claim with its host's name (one GET, kept off the claim path itself)."""
    if claim.host_name is not None:
        return claim
    return dataclasses.replace(claim, host_name=api.get_provider(claim.host).name)


def plan(api: Placement, consumer: str, req: ServerRequest, *, max_hosts: int = 3,
         candidates: CandidateSet | None = None, diagnose_on_failure: bool = True) -> ClaimPlan:
    """The claim :func:`claim` would make (check mode): raises NoValidHost when there is none."""
    cands = candidates or get_candidates(api, req)
    claim_plan = plan_claim(consumer, cands, req, max_hosts)
    if not cands.allocation_requests:
        raise no_valid_host(api, req, with_diagnosis=diagnose_on_failure)
    if not claim_plan.ops:
        raise no_valid_host(api, req, [a.skipped() for a in claim_plan.attempts], with_diagnosis=diagnose_on_failure,
                            why="no candidate has a single group-to-provider mapping")
    return claim_plan


def claim(api: Placement, consumer: str, req: ServerRequest, *, project_id: str, user_id: str,
          consumer_type: str | None = None, max_hosts: int = 3, retries: int = 4,
          candidates: CandidateSet | None = None, diagnose_on_failure: bool = True,
          sleep: Callable[[float], None] = time.sleep) -> Claim:
    """Claim everything ``req`` asks for, for a new consumer, in one atomic PUT per attempt."""
    if consumer_type:
        api.require(mv.CONSUMER_TYPES, "consumer_type")
    claim_plan = plan(api, consumer, req, max_hosts=max_hosts, candidates=candidates,
                      diagnose_on_failure=diagnose_on_failure)
    attempts: list[dict] = []
    for attempt in claim_plan.attempts:
        if not attempt.usable:
            attempts.append(attempt.skipped())
            continue
        op = claim_op(consumer, attempt, req)
        outcome = put_claim_op(api, op, project_id=project_id, user_id=user_id, consumer_type=consumer_type,
                               retries=retries, sleep=sleep)
        attempts.append({"host": op.host, "outcome": outcome})
        if outcome == "claimed":
            return Claim(consumer=consumer, host=op.host, host_name=None, allocations=op.allocations,
                         mapping=op.mapping, binding_profiles=op.binding_profiles, attempts=tuple(attempts),
                         mapping_source=op.mapping_source)
    hosts = len({a.host for a in claim_plan.attempts})
    raise no_valid_host(api, req, attempts, with_diagnosis=diagnose_on_failure,
                        why=f"every candidate was taken by others before we could claim it "
                            f"({len(attempts)} attempts on {hosts} host(s))")


def put_claim_op(api: Placement, op: ClaimOp, *, project_id: str, user_id: str, consumer_type: str | None = None,
                 retries: int = 4, sleep=time.sleep) -> str:
    """Claim ``op``'s allocations for its (new) consumer: "claimed", "capacity" or "provider-conflict"."""
    body = {"allocations": op.allocations, "project_id": project_id, "user_id": user_id, "consumer_generation": None}
    if consumer_type:
        body["consumer_type"] = consumer_type
    return put_new_consumer(api, op.consumer, body, retries, sleep)


def put_new_consumer(api: Placement, consumer: str, body: dict, retries: int, sleep) -> str:
    for attempt in range(retries + 1):
        try:
            api.put_allocations(consumer, body)
            return "claimed"
        except UndefinedCode as e:
            if e.status == 409:
                return "capacity"  # someone took it since the candidates were listed
            raise
        except ConcurrentUpdate:
            current = api.get_allocations(consumer)
            if current.get("allocations"):
                raise ConsumerConflict(
                    f"consumer {consumer} already has allocations (consumer generation "
                    f"{current.get('consumer_generation')}): another claim for it won; free it first or use "
                    f"another consumer UUID") from None
            if attempt == retries:
                return "provider-conflict"
            sleep(api.retry.pause(attempt + 1, conflict=True))
    return "provider-conflict"


def no_valid_host(api: Placement, req: ServerRequest, attempts: list[dict] | None = None, *,
                  with_diagnosis: bool = True, why: str = "Placement returned no allocation candidates") -> NoValidHost:
    """The NoValidHost for ``req``, with the per-group diagnosis (unless ``with_diagnosis`` is off)."""
    diagnosis = diagnose(api, req) if with_diagnosis else []
    text = f"No valid host: {why}."
    if diagnosis:
        text += " " + summary(diagnosis)
    return NoValidHost(text, diagnosis, attempts or [])



def existing_claim(api: Placement, consumer: str, req: ServerRequest) -> Claim | None:
    """The consumer's current allocations, mapped to ``req``'s groups by the local solver; None if it has none.

    Raises MappingError when they do not satisfy ``req`` (or satisfy it in several ways).
    """
    allocs = api.get_allocations(consumer).get("allocations") or {}
    return mapped_claim(api, consumer, allocs, req) if allocs else None


def mapped_claim(api: Placement, consumer: str, allocs, req: ServerRequest, *, host: str | None = None,
                 host_name: str | None = None, attempts: tuple = ()) -> Claim:
    """The claim ``allocs`` (``{rp: {"resources": ...}}``, made or about to be) are for ``req``, mapped by
    the local solver (existing allocations carry no mappings); ``host`` defaults to their root provider.

    Raises MappingError unless exactly one mapping fits.
    """
    summaries = provider_summaries(api, allocs)
    result = solve({"allocations": allocs}, summaries, req)
    groups = result.group_providers()
    if host is None:
        host = summaries[next(iter(allocs))]["root_provider_uuid"]
        host_name = summaries[host]["name"]
    return Claim(consumer=consumer, host=host, host_name=host_name,
                 allocations={rp: {"resources": dict(a["resources"])} for rp, a in allocs.items()},
                 mapping=result.solutions[0], binding_profiles=binding_allocations(req.ports, groups),
                 attempts=attempts, mapping_source=result.source)


def free(api: Placement, consumer: str, retries: int = 3) -> bool:
    """Remove all of a consumer's allocations safely (PUT {} at its generation). False when it had none."""
    for _ in range(retries + 1):
        current = api.get_allocations(consumer)
        if not current.get("allocations"):
            return False
        body = {"allocations": {}, "consumer_generation": current["consumer_generation"],
                "project_id": current["project_id"], "user_id": current["user_id"]}
        try:
            api.put_allocations(consumer, body)
            return True
        except ConcurrentUpdate:
            continue  # the consumer changed between our read and write: read again
    raise ConsumerConflict(f"consumer {consumer} kept changing while freeing it ({retries + 1} tries)")


def provider_summaries(api: Placement, rps) -> dict[str, dict]:
    """Summaries in Placement's candidate shape for the whole trees of ``rps`` (traits, parents)."""
    out: dict[str, dict] = {}
    for rp in rps:
        if rp in out:
            continue
        tree = api.list_providers(in_tree=api.get_provider(rp).root_uuid)
        for d in api.provider_details(tree, inventories=False):
            p = d.provider
            out[p.uuid] = {"resources": {}, "traits": sorted(d.traits), "parent_provider_uuid": p.parent_uuid,
                           "root_provider_uuid": p.root_uuid, "name": p.name}
    return out
