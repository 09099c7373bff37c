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

Every accepted claim is verified (:mod:`minbw.ops.verify`): when a provider it gave resources to is over
capacity afterwards (Placement's server-side retry overcommits under concurrency,
docs/placement-overcommit.md), the claim is undone at the consumer generation it left and tried again
after a jittered back-off, bounded, then on the next candidate; attempts that run out raise
:class:`minbw.errors.OvercommitUndone` (a NoValidHost).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Sequence

from minbw.errors import (
    ConcurrentUpdate,
    ConsumerConflict,
    NoValidHost,
    OvercommitUndone,
    PartialApply,
    PlacementError,
    UndefinedCode,
    WrittenUnverified,
    written_claim,
)
from minbw.model import microversions
from minbw.model.claims import CandidateSet, Claim, Tried
from minbw.model.requests import ServerRequest
from minbw.ops import verify
from minbw.placement.client import Placement, holds
from minbw.placement.mapping import binding_allocations, solve
from minbw.placement.query import build_query
from minbw.plan.allocations import ClaimOp, ClaimPlan, claim_op, plan_claim
from minbw.reports.verify import capacities_from_summaries
from minbw.readers.diagnose import diagnose
from minbw.reports.diagnosis import summary


def get_candidates(api: Placement, req: ServerRequest) -> CandidateSet:
    """The allocation candidates for ``req`` (a CandidateSet, empty when it names a trait Placement does not know).
    Raises RequestError or MicroversionUnsupported when the query cannot be built; lets PlacementError through."""
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
    return {t for g in req.request_groups() for t in (*g.required, *(x for a in g.required_any for x in a))} | set(
        req.root_required
    )


def _unknown_traits(api: Placement, req: ServerRequest) -> set[str]:
    wanted = _required_traits(req) | {t for g in req.request_groups() for t in g.forbidden} | set(req.root_forbidden)
    return wanted - api.existing_traits(wanted)


def with_host_name(api: Placement, claim: Claim) -> Claim:
    """The claim with its host's name (one GET, kept off the claim path itself)."""
    if claim.host_name is not None:
        return claim
    return dataclasses.replace(claim, host_name=api.get_provider(claim.host).name)


def planned_claim(
    api: Placement,
    consumer: str,
    req: ServerRequest,
    *,
    max_hosts: int = 3,
    candidates: CandidateSet | None = None,
    diagnose_on_failure: bool = True,
) -> ClaimPlan:
    """The claim :func:`claim` would make (check mode): raises NoValidHost when there is none."""
    cands = candidates or get_candidates(api, req)
    claim_plan = plan_claim(consumer, cands, req, max_hosts)
    if not cands.allocation_requests:
        raise no_valid_host(api, req, with_diagnosis=diagnose_on_failure)
    if not claim_plan.ops:
        raise no_valid_host(
            api,
            req,
            [a.skipped() for a in claim_plan.attempts],
            with_diagnosis=diagnose_on_failure,
            why="no candidate has a single group-to-provider mapping",
        )
    return claim_plan


def claim(
    api: Placement,
    consumer: str,
    req: ServerRequest,
    *,
    project_id: str,
    user_id: str,
    consumer_type: str | None = None,
    max_hosts: int = 3,
    retries: int = 4,
    candidates: CandidateSet | None = None,
    diagnose_on_failure: bool = True,
    sleep: Callable[[float], None] = time.sleep,
    verify_writes: bool = True,
    candidates_current: bool = False,
) -> Claim:
    """Claim everything ``req`` asks for, for a new consumer, in one atomic PUT per attempt, each verified
    (``verify_writes=False`` only measures what the verification costs: bench/overcommit_bench.py): one PUT, then
    the usages of the providers it raised, read at once, against the capacities of the candidates' summaries when
    the candidates were fetched here or are ``candidates_current`` (fetched by the caller just before, as ``minbw
    allocation create`` does), else against the providers' inventories, read too (a caller's older candidates may
    predate an inventory decrease, which would hide an excess). Returns the
    Claim made (its ``attempts``: every Tried). Raises MicroversionUnsupported for a consumer_type Placement cannot
    take, NoValidHost (OvercommitUndone when some attempts were accepted over capacity and undone) with the per-group
    diagnosis and the attempts when nothing could be claimed, ConsumerConflict when the consumer holds allocations,
    WrittenUnverified (a PartialApply) when a claim was written but could not be verified, PartialApply when one
    written over capacity could not be undone."""
    if consumer_type:
        api.require(microversions.CONSUMER_TYPES, "consumer_type")
    claim_plan = planned_claim(
        api, consumer, req, max_hosts=max_hosts, candidates=candidates, diagnose_on_failure=diagnose_on_failure
    )
    attempts: list[Tried] = []
    # the candidates' capacities only when fetched just now: a caller's older ones may predate an inventory change
    planned = claim_plan.candidates
    summaries = (
        planned.provider_summaries if planned is not None and (candidates is None or candidates_current) else None
    )
    for attempt in claim_plan.attempts:
        if not attempt.usable:
            attempts.append(attempt.skipped())
            continue
        op = claim_op(consumer, attempt, req)
        capacities = None if summaries is None else capacities_of(summaries, op.allocations)
        outcome = put_claim_op(
            api,
            op,
            project_id=project_id,
            user_id=user_id,
            consumer_type=consumer_type,
            retries=retries,
            sleep=sleep,
            log=attempts,
            verify_writes=verify_writes,
            capacities=capacities,
        )
        attempts.append(Tried(op.host, outcome))
        if outcome == "claimed":
            return Claim(
                consumer=consumer,
                host=op.host,
                host_name=None,
                allocations=op.allocations,
                mapping=op.mapping,
                binding_profiles=op.binding_profiles,
                attempts=tuple(attempts),
                mapping_source=op.mapping_source,
            )
    hosts = len({a.host for a in claim_plan.attempts})
    raise overcommit_error(
        no_valid_host(
            api,
            req,
            attempts,
            with_diagnosis=diagnose_on_failure,
            why=f"every candidate was taken by others before we could claim it "
            f"({len(attempts)} attempts on {hosts} host(s))" + undone_note(attempts),
        )
    )


def capacities_of(summaries, allocations) -> dict[str, dict[str, float]]:
    """``{rp: {rc: capacity}}`` from the candidates' provider ``summaries`` for the providers of ``allocations``
    only (a claim's verification weighs those: not the 1,000 hosts' summaries per claim)."""
    return capacities_from_summaries({rp: summaries[rp] for rp in allocations if rp in summaries})


UNDONE = "over-capacity-undone"  # an attempt's outcome: Placement accepted it over capacity, minbw undid it


def undone_note(attempts: Sequence[Tried]) -> str:
    """What a NoValidHost's reason adds when some attempts were accepted over capacity and undone: a sentence's
    tail, "" when none was."""
    undone = sum(a.outcome == UNDONE for a in attempts)
    return (
        f"; {undone} of them Placement accepted over capacity (its server-side retry under concurrent "
        f"claims: docs/placement-overcommit.md) and minbw undid"
        if undone
        else ""
    )


def overcommit_error(err: NoValidHost) -> NoValidHost:
    """``err`` as OvercommitUndone when some of its attempts (Tried each) were accepted over capacity and undone
    (``excess``: what the last of them found over capacity), else ``err`` itself."""
    undone = [a for a in err.attempts if isinstance(a, Tried) and a.outcome == UNDONE]
    if not undone:
        return err
    return OvercommitUndone(str(err), err.diagnosis, err.attempts, excess=tuple(undone[-1].excess or ()))


def put_claim_op(
    api: Placement,
    op: ClaimOp,
    *,
    project_id: str,
    user_id: str,
    consumer_type: str | None = None,
    retries: int = 4,
    sleep=time.sleep,
    log: list[Tried] | None = None,
    verify_writes: bool = True,
    capacities=None,
) -> str:
    """Claim ``op``'s allocations for its (new) consumer, verified: "claimed", "capacity", "provider-conflict",
    or "overcommitted" (Placement accepted it over capacity ``retries + 1`` times; each was undone).

    ``log`` gets one entry per undone write (host, what was over capacity); ``capacities``: ``{rp: {rc:
    capacity}}`` from the candidates' summaries (minbw.ops.verify.check), else the inventories are read."""
    body = {"allocations": op.allocations, "project_id": project_id, "user_id": user_id, "consumer_generation": None}
    if consumer_type:
        body["consumer_type"] = consumer_type
    for n in range(1, retries + 2):
        outcome = put_new_consumer(api, op.consumer, body, retries, sleep)
        if outcome != "claimed" or not verify_writes:
            return outcome
        try:
            excess = verify.check(api, op.allocations, capacities=capacities)
        except PlacementError as e:  # the claim is written; say so first, then why it could not be verified
            raise WrittenUnverified(e, op, consumer=op.consumer, host=op.host) from e
        if not excess:
            return "claimed"
        try:
            verify.undo_put(api, op.consumer, op.allocations, project_id=project_id, user_id=user_id)
        except PlacementError as e:
            raise PartialApply(
                e,
                [op],
                1,
                lead=f"{written_claim(op.consumer, op.host)}, accepted by Placement over capacity "
                f"({'; '.join(map(str, excess))})",
                then=f"undoing it failed: free it (minbw allocation delete --consumer {op.consumer})",
            ) from e
        if log is not None:
            log.append(Tried(op.host, UNDONE, excess=tuple(e.to_dict() for e in excess)))
        if n <= retries:
            sleep(api.retry.pause(n, overcommit=True))
    return "overcommitted"


def put_new_consumer(api: Placement, consumer: str, body: dict, retries: int, sleep) -> str:
    """PUT ``body`` for a consumer expected to hold nothing, retrying provider conflicts (then once at consumer
    generation 0): "claimed", "capacity" (a 409 over capacity) or "provider-conflict". Raises ConsumerConflict when
    another claim for the consumer won; lets other PlacementErrors through."""
    for attempt in range(retries + 1):
        try:
            api.put_allocations(consumer, body)
            return "claimed"
        except UndefinedCode as e:
            if e.status == 409:
                return "capacity"  # someone took it since the candidates were listed
            raise
        except ConcurrentUpdate as e:
            current = api.get_allocations(consumer)
            if current.get("allocations"):
                if e.after_lost_answer and holds(current, body):
                    # this call's own write, whose answer was lost, landed after the client's re-read (a worker
                    # that answered late): the consumer holds exactly this claim, so it is claimed (then verified)
                    return "claimed"
                raise ConsumerConflict(
                    f"consumer {consumer} already has allocations (consumer generation "
                    f"{current.get('consumer_generation')}): another claim for it won; free it first or use "
                    f"another consumer UUID"
                ) from None
            if attempt == retries:
                return _adopt_empty_consumer(api, consumer, body)
            sleep(api.retry.pause(attempt + 1, conflict=True))
    return "provider-conflict"


def _adopt_empty_consumer(api: Placement, consumer: str, body: dict) -> str:
    """Every new-consumer PUT was refused as a concurrent update while the consumer showed no allocations: either
    the providers' generations kept moving ("provider-conflict"), or Placement holds the consumer without
    allocations — a row an interrupted write left (Placement creates it, at generation 0, in a transaction of its
    own before it writes the allocations, and deletes it when they fail, in another whose failure it only logs: a
    database lost for both, or a process killed in between, keeps it: tests/support/prodplacement/
    repro_empty_consumer.py), which refuses a PUT at consumer generation null for good, and which no call of
    Placement's removes short of writing allocations for it and freeing them. One PUT at generation 0 claims such a
    consumer; a conflict again leaves the outcome a provider conflict."""
    try:
        api.put_allocations(consumer, {**body, "consumer_generation": 0})
    except ConcurrentUpdate:
        return "provider-conflict"
    except UndefinedCode as e:
        if e.status == 409:
            return "capacity"
        raise
    return "claimed"


def no_valid_host(
    api: Placement,
    req: ServerRequest,
    attempts: Sequence[Tried] | None = None,
    *,
    with_diagnosis: bool = True,
    why: str = "Placement returned no allocation candidates",
) -> NoValidHost:
    """The NoValidHost for ``req`` (returned, not raised), with the per-group diagnosis (unless ``with_diagnosis``
    is off: reports.diagnosis.Diagnosis each) and ``attempts``. Lets PlacementError through (the diagnosis reads)."""
    diagnosis = diagnose(api, req) if with_diagnosis else []
    text = f"No valid host: {why}."
    if diagnosis:
        text += " " + summary(diagnosis)
    return NoValidHost(text, diagnosis, list(attempts or ()))


def existing_claim(api: Placement, consumer: str, req: ServerRequest) -> Claim | None:
    """The consumer's current allocations, mapped to ``req``'s groups by the local solver; None if it has none.

    Raises MappingError when they do not satisfy ``req`` (or satisfy it in several ways).
    """
    allocs = api.get_allocations(consumer).get("allocations") or {}
    return mapped_claim(api, consumer, allocs, req) if allocs else None


def mapped_claim(
    api: Placement,
    consumer: str,
    allocs,
    req: ServerRequest,
    *,
    host: str | None = None,
    host_name: str | None = None,
    attempts: tuple[Tried, ...] = (),
) -> Claim:
    """The claim ``allocs`` (``{rp: {"resources": ...}}``, made or about to be) are for ``req``, mapped by
    the local solver (existing allocations carry no mappings); ``host`` defaults to their root provider.

    Raises MappingError unless exactly one mapping fits.
    """
    summaries = provider_summaries(api, allocs, every_trait=any(not g.resources for g in req.request_groups()))
    result = solve({"allocations": allocs}, summaries, req)
    groups = result.group_providers()
    if host is None:
        host = summaries[next(iter(allocs))]["root_provider_uuid"]
        host_name = summaries[host]["name"]
    return Claim(
        consumer=consumer,
        host=host,
        host_name=host_name,
        allocations={rp: {"resources": dict(a["resources"])} for rp, a in allocs.items()},
        mapping=result.solutions[0],
        binding_profiles=binding_allocations(req.ports, groups),
        attempts=attempts,
        mapping_source=result.source,
    )


def free_allocations(api: Placement, consumer: str, retries: int = 3) -> bool:
    """Remove all of a consumer's allocations safely (PUT {} at its generation). False when it had none."""
    for _attempt in range(retries + 1):
        current = api.get_allocations(consumer)
        if not current.get("allocations"):
            return False
        body = {
            "allocations": {},
            "consumer_generation": current["consumer_generation"],
            "project_id": current["project_id"],
            "user_id": current["user_id"],
        }
        try:
            api.put_allocations(consumer, body)
            return True
        except ConcurrentUpdate:
            continue  # the consumer changed between our read and write: read again
    raise ConsumerConflict(f"consumer {consumer} kept changing while freeing it ({retries + 1} tries)")


def provider_summaries(api: Placement, rps, every_trait: bool = False) -> dict[str, dict]:
    """Summaries in Placement's candidate shape for the whole trees of ``rps`` (parents, names; the traits of
    ``rps``, which are all the solver weighs, or with ``every_trait`` — a request group of traits alone, which
    any provider of the tree may serve — of every provider of the trees)."""
    out: dict[str, dict] = {}
    rps = set(rps)
    for rp in sorted(rps):
        if rp in out:
            continue
        tree = api.list_providers(in_tree=api.get_provider(rp).root_uuid)
        for p in tree:
            out[p.uuid] = {
                "resources": {},
                "traits": [],
                "parent_provider_uuid": p.parent_uuid,
                "root_provider_uuid": p.root_uuid,
                "name": p.name,
            }
        for d in api.provider_details([p for p in tree if every_trait or p.uuid in rps], inventories=False):
            out[d.provider.uuid]["traits"] = sorted(d.traits)
    return out
