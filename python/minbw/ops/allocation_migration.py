"""Moving a consumer's allocations to another host, confirming and reverting the move.

Each operation reads both consumers (``GET /allocations`` of the consumer and of the migration
record), asks :mod:`minbw.plan.allocation_migration` for the plan — the same plan check mode shows — and applies
it in ONE ``POST /allocations``: Placement writes every consumer of it or none, so a failure never
leaves half a move. Conflicts are told apart by their code, never by message text:

* ``placement.concurrent_update``: a consumer's generation moved between our read and our write
  (someone changed its allocations): read both again and plan again, bounded, with jittered
  backoff; then :class:`ConsumerConflict` naming the consumer that kept changing;
* capacity (``placement.undefined_code`` 409) on the target: try the target's next candidate, then
  :class:`NoValidHost` with the per-group diagnosis.

A move Placement accepted is verified like a claim (:mod:`minbw.ops.verify`): a target provider over capacity
afterwards undoes it in one POST (the consumer gets its source allocations back from the migration record,
at both generations) and the move is tried again after a jittered back-off, bounded; then
:class:`minbw.errors.OvercommitUndone`.
"""

from __future__ import annotations

import random
import time
import uuid as uuidlib
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from minbw.errors import ConcurrentUpdate, ConsumerConflict, NoValidHost, UndefinedCode
from minbw.model.claims import CandidateSet, Claim, Tried
from minbw.model.requests import ServerRequest
from minbw.ops import claims, verify
from minbw.placement.client import Placement
from minbw.plan import base
from minbw.reports.verify import capacities_from_summaries
from minbw.readers.diagnose import diagnose
from minbw.reports.diagnosis import GROUP, Diagnosis
from minbw.plan.allocation_migration import (
    ConsumerState,
    MovePlan,
    check_uuid,
    check_uuids,
    move_op,
    plan_confirm,
    plan_move,
    plan_revert,
    resolve_host,
    target_request,
)


@dataclass(frozen=True)
class MoveResult:
    """What a move, confirm or revert did. ``written`` is the exact ``POST /allocations`` body
    Placement accepted (None: nothing was written: no change, or check mode); ``plan`` is the plan
    that was applied (check mode: the one the real run applies first)."""

    action: str  # move | confirm | revert
    changed: bool
    migration: str
    plan: base.Plan
    consumer: str | None = None
    claim: Claim | None = None  # move: the consumer on the target; revert: back on the source
    written: Mapping[str, Mapping] | None = None
    attempts: tuple[Tried, ...] = ()
    check: bool = False
    reason: str | None = None  # unchanged because the move was already made: why, and the sentence
    message: str | None = None

    @property
    def binding_profiles(self) -> dict:
        """``{port id: binding:profile.allocation}`` for where the consumer now is (or would be)."""
        return dict(self.claim.binding_profiles) if self.claim else {}

    def diff(self) -> dict:
        """The plan's diff: the allocations before and after (Ansible's diff shape)."""
        return self.plan.diff()

    def to_dict(self) -> dict:
        """The result as JSON values: the action, changed, check, the consumer and migration, the claim, the binding
        profiles, the body written, the attempts, the plan with its before and after (reason and msg when unchanged)."""
        return {
            "action": self.action,
            "changed": self.changed,
            "check": self.check,
            "consumer": self.consumer,
            "migration": self.migration,
            "claim": self.claim.to_dict() if self.claim else None,
            "binding_profiles": self.binding_profiles,
            "written": {c: dict(b) for c, b in self.written.items()} if self.written else None,
            "attempts": [a.to_dict() for a in self.attempts],
            "plan": self.plan.to_dict(),
            "before": self.plan.before,
            "after": self.plan.after,
            **({"reason": self.reason, "msg": self.message} if self.reason else {}),
        }


def _read(api: Placement, consumer: str) -> ConsumerState:
    return ConsumerState.from_api(consumer, api.get_allocations(consumer))


def _backoff(attempt: int) -> float:
    return random.uniform(0, 0.02 * (2**attempt))


def _providers(api: Placement) -> dict:
    # one listing: every host's name and every provider's root (which host a consumer is on)
    return {p.uuid: p for p in api.list_providers()}


def _conflict(api: Placement, used: list[ConsumerState], what: str, tries: int) -> ConsumerConflict:
    """Name the consumer(s) whose generation moved since our last read."""
    roles = ("consumer", "migration") if len(used) == 2 else ("migration",)
    moved = [
        f"{role} {s.uuid}"
        for role, s in zip(roles, used)
        if api.get_allocations(s.uuid).get("consumer_generation") != s.generation
    ]
    who = " and ".join(moved or [f"{role} {s.uuid}" for role, s in zip(roles, used)])
    return ConsumerConflict(
        f"{who} kept changing while {what}: {tries} consumer generation conflicts in a "
        f"row, nothing was written. Run it again once the other writer is done."
    )


def _claim_on(
    api: Placement,
    consumer: str,
    allocations: Mapping[str, Mapping],
    req: ServerRequest,
    host: str,
    host_name: str | None,
    attempts: tuple[Tried, ...] = (),
) -> Claim:
    """The claim ``allocations`` make for ``req`` on ``host``; raises MappingError when they do not
    satisfy ``req`` in exactly one way."""
    return claims.mapped_claim(api, consumer, allocations, req, host=host, host_name=host_name, attempts=attempts)


def on_target(diagnosis: Sequence[Diagnosis], name: str) -> list[str]:
    """The diagnosis (made over the whole cloud) told for one host, a line each: a group that fits nowhere with its
    problems, a group that fits alone elsewhere only, or every group fitting alone there but not together."""
    groups = [e for e in diagnosis if e.kind == GROUP and e.fits_alone is not None]
    out = [e.line for e in groups if not e.fits_alone]
    out += [
        f"{e.label} fits alone on {', '.join(e.hosts)}, not on {name}"
        for e in groups
        if e.fits_alone and name not in e.hosts
    ]
    if groups and not out:
        out.append(
            f"every group fits alone on {name} but not all together: more than its providers have free at "
            f"once, or group_policy / same_subtree rule the combination out"
        )
    return out


def _no_valid_host(
    api: Placement,
    req: ServerRequest,
    plan: MovePlan,
    name: str,
    attempts: list[Tried],
    diagnose_on_failure: bool,
    why: str = "",
) -> NoValidHost:
    """NoValidHost with the per-group diagnosis of claims' no_valid_host, its summary told for the target
    (the whole cloud's view would name hosts the move is not going to)."""
    where = f"target host {name} ({plan.target})"
    if not why:
        why = (
            f"{where} has no allocation candidate for this request"
            if not plan.attempts
            else f"no candidate on {where} has a single group-to-provider mapping"
        )
    diagnosis = diagnose(api, req) if diagnose_on_failure else []
    text = f"No valid host: {why}."
    if diagnosis:
        text += f" On {name}: " + " | ".join(on_target(diagnosis, name)) + "."
    return NoValidHost(text, diagnosis, attempts)


def move(
    api: Placement,
    consumer: str,
    req: ServerRequest,
    target_host: str,
    migration: str | None = None,
    *,
    retries: int = 4,
    check: bool = False,
    candidates: CandidateSet | None = None,
    diagnose_on_failure: bool = True,
    sleep: Callable[[float], None] = time.sleep,
) -> MoveResult:
    """Move ``consumer``'s allocations to ``target_host`` (a compute node's name or root provider UUID)
    in one ``POST /allocations``; its source allocations go to ``migration`` (a new UUID when None, given
    back in the result) until :func:`confirm` or :func:`revert`. ``check``: the plan, nothing written. Returns a
    MoveResult (its ``attempts``: every Tried). Raises InvalidInput for bad UUIDs, ObjectNotFound or InvalidInput
    for a target that is not a host, NoValidHost (OvercommitUndone when every move was accepted over capacity and
    undone) with the per-group diagnosis, ConsumerConflict when the consumers' generations keep moving."""
    migration = migration or str(uuidlib.uuid4())
    check_uuids(consumer, migration)
    providers = _providers(api)
    target = resolve_host(providers, target_host)
    name = providers[target].name
    treq = target_request(req, target)
    cands = candidates if candidates is not None else claims.get_candidates(api, treq)
    log: list[Tried] = []
    conflicts = overcommits = 0
    # the candidates' capacities only when fetched just now: a caller's may predate an inventory change
    capacities = capacities_from_summaries(cands.provider_summaries) if candidates is None else None
    start = 0  # where in the target's candidates the next round starts (capacity refusals stay refused)
    while True:
        cur, mig = _read(api, consumer), _read(api, migration)
        plan = plan_move(cur, mig, treq, cands, target, providers)
        if plan.done:
            return MoveResult(
                "move",
                False,
                migration,
                plan,
                consumer,
                check=check,
                claim=_claim_on(api, consumer, cur.allocations, req, target, name),
            )
        if plan.no_candidate:
            raise _no_valid_host(api, req, plan, name, [a.skipped() for a in plan.attempts], diagnose_on_failure)
        if check:
            op = plan.ops[0]
            return MoveResult(
                "move",
                True,
                migration,
                plan,
                consumer,
                check=True,
                claim=Claim(
                    consumer,
                    target,
                    name,
                    op.allocations,
                    op.mapping,
                    op.binding_profiles,
                    mapping_source=op.mapping_source,
                ),
            )
        for i in range(start, len(plan.attempts)):
            attempt = plan.attempts[i]
            if not attempt.usable:
                log.append(attempt.skipped())
                continue
            op = move_op(cur, mig, attempt, treq, plan.source)
            try:
                api.post_allocations(op.body)
            except UndefinedCode as e:
                if e.status != 409:
                    raise
                log.append(Tried(target, "capacity"))  # taken since the candidates were listed
                continue
            except ConcurrentUpdate:
                log.append(Tried(target, "generation-conflict"))
                if conflicts == retries:
                    raise _conflict(api, [cur, mig], f"moving it to {name}", conflicts + 1) from None
                sleep(_backoff(conflicts))
                conflicts += 1
                start = i
                break  # read both consumers again and plan again
            excess = verify.check(api, op.allocations, cur.allocations, capacities)
            if excess:  # Placement accepted it over capacity: give the consumer its source back, then again
                verify.undo_post(api, op.body, {cur.uuid: cur.allocations, mig.uuid: mig.allocations})
                log.append(Tried(target, claims.UNDONE, excess=tuple(e.to_dict() for e in excess)))
                if overcommits == retries:
                    raise claims.overcommit_error(
                        _no_valid_host(
                            api,
                            req,
                            plan,
                            name,
                            log,
                            diagnose_on_failure,
                            why=f"every move onto target host {name} ({target}) was accepted by Placement over "
                            f"capacity ({overcommits + 1} times: its server-side retry under concurrent claims, "
                            f"docs/placement-overcommit.md) and undone by minbw; the consumer is back on its "
                            f"source",
                        )
                    )
                overcommits += 1
                sleep(api.retry.pause(overcommits, overcommit=True))
                start = i
                break  # read both consumers again and plan again
            log.append(Tried(target, "moved"))
            return MoveResult(
                "move",
                True,
                migration,
                plan,
                consumer,
                written=op.body,
                attempts=tuple(log),
                claim=Claim(
                    consumer,
                    target,
                    name,
                    op.allocations,
                    op.mapping,
                    op.binding_profiles,
                    attempts=tuple(log),
                    mapping_source=op.mapping_source,
                ),
            )
        else:
            raise claims.overcommit_error(
                _no_valid_host(
                    api,
                    req,
                    plan,
                    name,
                    log,
                    diagnose_on_failure,
                    why=f"every candidate on target host {name} ({target}) was taken by others before we could move "
                    f"onto it ({len(log)} attempts)" + claims.undone_note(log),
                )
            )


def _settle(
    api: Placement,
    consumers: tuple[str, ...],
    make_plan: Callable[..., base.Plan],
    what: str,
    *,
    retries: int,
    check: bool,
    sleep,
) -> tuple[base.Plan, Mapping | None, list[ConsumerState]]:
    """Read, plan and POST until Placement takes it or there is nothing to do (confirm, revert)."""
    for attempt in range(retries + 1):
        states = [_read(api, c) for c in consumers]
        plan = make_plan(*states)
        if check or not plan.ops:
            return plan, None, states
        body = plan.ops[0].body
        try:
            api.post_allocations(body)
            return plan, body, states
        except ConcurrentUpdate:
            if attempt == retries:
                raise _conflict(api, states, what, retries + 1) from None
            sleep(_backoff(attempt))
    raise AssertionError("unreachable")


def confirm(
    api: Placement,
    migration: str,
    *,
    retries: int = 4,
    check: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> MoveResult:
    """Confirm a move: the migration record's allocations (the source) are released. Nothing to do
    when it holds none (confirmed or reverted already)."""
    check_uuid("migration", migration)
    providers = _providers(api)
    plan, written, _states = _settle(
        api,
        (migration,),
        lambda mig: plan_confirm(mig, providers),
        "confirming the move",
        retries=retries,
        check=check,
        sleep=sleep,
    )
    return MoveResult("confirm", plan.changed, migration, plan, written=written, check=check)


def revert(
    api: Placement,
    consumer: str,
    migration: str,
    req: ServerRequest | None = None,
    *,
    retries: int = 4,
    check: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> MoveResult:
    """Revert a move: ``consumer`` gets back what ``migration`` holds (its source allocations) and the
    migration record is emptied, in one POST (the target is released). With ``req``, the result's claim
    maps the source again (the ports' old ``binding:profile.allocation``). Nothing to do when the
    migration holds nothing."""
    check_uuids(consumer, migration)
    providers = _providers(api)
    plan, written, _states = _settle(
        api,
        (consumer, migration),
        lambda cur, mig: plan_revert(cur, mig, providers),
        "reverting the move",
        retries=retries,
        check=check,
        sleep=sleep,
    )
    claim = None
    if plan.ops and req is not None:
        op = plan.ops[0]
        claim = _claim_on(
            api, consumer, op.allocations, req, op.source, providers[op.source].name if op.source in providers else None
        )
    return MoveResult("revert", plan.changed, migration, plan, consumer, claim=claim, written=written, check=check)
