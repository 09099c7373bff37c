"""Moving a consumer's allocations to another host, Nova's way, for consumers Nova does not own
(bare metal, containers, scripts). Pure: :mod:`minbw.ops.allocation_migration` reads and applies.

Nova's cold migration (``nova.conductor.tasks.migrate``, ``nova.scheduler.utils.move_allocations``):
the consumer's source allocations go to a *migration consumer* (its own UUID), the consumer gets
its allocations on the target; here both in ONE ``POST /allocations``, at the consumer's current
generation and the migration's (``None``: a new consumer), so Placement applies both or neither.

* confirm: the migration consumer's allocations are emptied (the source is released);
* revert: one POST gives the consumer its source allocations back and empties the migration
  consumer (at both generations).

Until confirm or revert, both hosts hold the consumer's resources (the source for the way back);
afterwards only one does. The target allocations come from the candidates of a query restricted
to the target host's tree (``in_tree``), tried in :func:`minbw.plan.allocations.claim_order` —
the same rule claims use to skip a candidate without a single group-to-provider mapping — and the
ports' ``binding:profile.allocation`` values are recomputed from the target's mapping.
"""

from __future__ import annotations

import dataclasses
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any, Mapping

from minbw.errors import InvalidInput, MoveRefused, ObjectNotFound
from minbw.model.claims import CandidateSet
from minbw.model.providers import Provider
from minbw.model.requests import ServerRequest
from minbw.plan import base
from minbw.plan.allocations import Attempt, claim_op, claim_order

# Nova's consumer type for a migration record (Placement 1.38); sent only when types are known.
MIGRATION_TYPE = "MIGRATION"


def _allocations(allocs: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """``{rp: {"resources": {...}}}`` without Placement's per-provider ``generation``."""
    return {rp: {"resources": dict(a.get("resources", {}))} for rp, a in (allocs or {}).items()}


@dataclass(frozen=True)
class ConsumerState:
    """A consumer as ``GET /allocations/{uuid}`` shows it; a consumer without allocations has no
    generation (Placement deletes consumers that hold nothing), so a write to it is a creation."""

    uuid: str
    allocations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    generation: int | None = None
    project_id: str | None = None
    user_id: str | None = None
    consumer_type: str | None = None

    @classmethod
    def from_api(cls, consumer: str, body: Mapping[str, Any]) -> ConsumerState:
        """The consumer ``consumer`` from its ``GET /allocations`` body (allocations without the per-provider
        generations)."""
        return cls(
            consumer,
            _allocations(body.get("allocations")),
            body.get("consumer_generation"),
            body.get("project_id"),
            body.get("user_id"),
            body.get("consumer_type"),
        )


def check_uuid(option: str, value: str) -> str:
    """Placement keys consumers by UUID: refuse anything else before a request is made."""
    try:
        return str(uuidlib.UUID(str(value)))
    except ValueError:
        raise InvalidInput(
            f"{option}: {value!r} is not a UUID; Placement names consumers by UUID. "
            f"Fix: pass the consumer's UUID (a new one for a migration, e.g. from uuidgen)."
        ) from None


def check_uuids(consumer: str, migration: str) -> None:
    """Both UUIDs, and two of them: the migration record is a consumer of its own."""
    if check_uuid("consumer", consumer) == check_uuid("migration", migration):
        raise InvalidInput(
            f"migration: {migration} is the consumer itself; the migration record holds the source "
            f"allocations as a consumer of its own. Fix: use a new UUID for the migration."
        )


def resolve_host(providers: Mapping[str, Provider], name_or_uuid: str, option: str = "target_host") -> str:
    """The root provider (compute node) named ``name_or_uuid``, or with that UUID."""
    found = providers.get(name_or_uuid) or next((p for p in providers.values() if p.name == name_or_uuid), None)
    if found is None:
        raise ObjectNotFound(
            f"{option}: no resource provider is named {name_or_uuid!r} or has that UUID in "
            f"Placement. Fix: name a compute node as 'openstack resource provider list' shows "
            f"it (a root provider), or give its UUID."
        )
    if found.parent_uuid:
        root = providers.get(found.root_uuid)
        raise InvalidInput(
            f"{option}: {found.name} ({found.uuid}) is not a host but a provider inside one. "
            f"Fix: name its root provider {root.name if root else found.root_uuid!r}."
        )
    return found.uuid


def target_request(req: ServerRequest, target: str) -> ServerRequest:
    """``req`` restricted to the target host's tree: the query that lists the target's candidates."""
    if req.in_tree and req.in_tree != target:
        raise InvalidInput(
            f"in_tree: {req.in_tree} is not the target host {target}; a move takes its "
            f"candidates from the target host's tree. Fix: leave in_tree out."
        )
    return dataclasses.replace(req, in_tree=target)


def _root(rp: str, providers: Mapping[str, Provider]) -> str:
    p = providers.get(rp)
    return p.root_uuid if p else rp


def host_of(state: ConsumerState, providers: Mapping[str, Provider]) -> str | None:
    """The root provider of the consumer's allocations (None: it has none)."""
    roots = sorted({_root(rp, providers) for rp in state.allocations})
    if len(roots) > 1:
        names = ", ".join(providers[r].name if r in providers else r for r in roots)
        raise MoveRefused(
            f"consumer {state.uuid} has allocations in {len(roots)} provider trees ({names}); "
            f"moving allocations that span hosts or sharing providers is not supported.",
            reason="several-hosts",
            consumer=state.uuid,
        )
    return roots[0] if roots else None


def _name(rp: str | None, providers: Mapping[str, Provider]) -> str | None:
    if rp is None:
        return None
    return providers[rp].name if rp in providers else rp


def consumer_view(
    consumer: str, allocations: Mapping[str, Mapping[str, Any]], providers: Mapping[str, Provider]
) -> dict[str, Any]:
    """What diff mode shows of one consumer: its host and, by provider name, what it holds there."""
    host = host_of(ConsumerState(consumer, allocations), providers)
    return {
        "uuid": consumer,
        "host": _name(host, providers),
        "host_uuid": host,
        "providers": dict(sorted((_name(rp, providers), dict(a["resources"])) for rp, a in allocations.items())),
    }


def _types_known(*types: str | None) -> bool:
    # At microversion 1.38 every consumer of a POST needs its type; below it none may carry one
    # (and Placement keeps an existing consumer's type). So all or nothing.
    return all(t is not None for t in types)


def _part(
    state: ConsumerState, allocations: Mapping[str, Mapping[str, Any]], owner: ConsumerState, consumer_type: str | None
) -> dict[str, Any]:
    """One consumer's entry in a POST /allocations body, at its current generation. A consumer that
    holds nothing yet (a new migration record) takes the project and user of ``owner``, as Nova does."""
    body = {
        "allocations": _allocations(allocations),
        "consumer_generation": state.generation,
        "project_id": state.project_id or owner.project_id,
        "user_id": state.user_id or owner.user_id,
    }
    if consumer_type is not None:
        body["consumer_type"] = consumer_type
    return body


@dataclass(frozen=True)
class PostOp(base.Op):
    """One ``POST /allocations``: ``body`` maps each consumer to its new allocations (atomic)."""

    consumer: str | None = None
    migration: str = ""
    body: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: action, consumer, migration and ``post_allocations`` (the body, by consumer)."""
        return {
            "action": self.action,
            "consumer": self.consumer,
            "migration": self.migration,
            "post_allocations": {c: dict(b) for c, b in self.body.items()},
        }


@dataclass(frozen=True)
class MoveOp(PostOp):
    """The move: the migration takes ``held`` (the consumer's allocations on ``source``), the
    consumer takes ``allocations`` on ``target``; ``binding_profiles`` are the ports' new values."""

    source: str = ""
    target: str = ""
    allocations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    held: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    mapping: Mapping[str, list[str]] = field(default_factory=dict)
    mapping_source: str = ""
    binding_profiles: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The post's dict plus source, target, the consumer's new allocations, ``held_by_migration``, mapping and its
        source, binding profiles."""
        return {
            **super().to_dict(),
            "source": self.source,
            "target": self.target,
            "allocations": {rp: dict(a) for rp, a in self.allocations.items()},
            "held_by_migration": {rp: dict(a) for rp, a in self.held.items()},
            "mapping": {k: list(v) for k, v in self.mapping.items()},
            "mapping_source": self.mapping_source,
            "binding_profiles": dict(self.binding_profiles),
        }


@dataclass(frozen=True)
class RevertOp(PostOp):
    """The way back: the consumer gets ``allocations`` (what the migration held, on ``source``) again."""

    source: str = ""
    allocations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The post's dict plus source and the allocations the consumer gets back."""
        return {
            **super().to_dict(),
            "source": self.source,
            "allocations": {rp: dict(a) for rp, a in self.allocations.items()},
        }


def move_op(
    consumer: ConsumerState, migration: ConsumerState, attempt: Attempt, req: ServerRequest, source: str
) -> MoveOp:
    """The POST that moves ``consumer`` onto ``attempt``'s candidate (its mapping must be unique)."""
    claim = claim_op(consumer.uuid, attempt, req)  # the same allocations, mapping and bindings a claim makes
    typed = _types_known(consumer.consumer_type)
    body = {
        migration.uuid: _part(
            migration, consumer.allocations, consumer, (migration.consumer_type or MIGRATION_TYPE) if typed else None
        ),
        consumer.uuid: _part(consumer, claim.allocations, consumer, consumer.consumer_type),
    }
    return MoveOp(
        "move",
        consumer=consumer.uuid,
        migration=migration.uuid,
        body=body,
        source=source,
        target=attempt.host,
        allocations=claim.allocations,
        held=_allocations(consumer.allocations),
        mapping=claim.mapping,
        mapping_source=claim.mapping_source,
        binding_profiles=claim.binding_profiles,
    )


@dataclass(frozen=True)
class MovePlan(base.Plan[MoveOp]):
    """``ops``: the move onto the first usable candidate (the real run's first attempt). No ops and
    ``done``: already moved (the consumer is on the target, the migration holds the source); no ops
    and not ``done``: no usable candidate on the target (``attempts`` say why)."""

    attempts: tuple[Attempt, ...] = ()
    source: str = ""
    target: str = ""
    done: bool = False

    @property
    def no_candidate(self) -> bool:
        """Whether the target had no usable candidate: no ops and not already moved."""
        return not self.ops and not self.done

    def to_dict(self) -> dict[str, Any]:
        """The plan's dict plus source, target, ``done``, ``attempts`` (how many) and ``skipped`` (the unusable
        attempts)."""
        return {
            **super().to_dict(),
            "source": self.source,
            "target": self.target,
            "done": self.done,
            "attempts": len(self.attempts),
            "skipped": [a.skipped().to_dict() for a in self.attempts if not a.usable],
        }


def _in_progress(
    consumer: ConsumerState, migration: ConsumerState, held: str | None, providers: Mapping[str, Provider]
) -> MoveRefused:
    return MoveRefused(
        f"migration {migration.uuid} already holds allocations on {_name(held, providers)}: a move is in "
        f"progress. Confirm it (frees them: minbw allocation migrate confirm --migration {migration.uuid}) "
        f"or revert it "
        f"(gives them back to the consumer: minbw allocation migrate revert --consumer {consumer.uuid} --migration "
        f"{migration.uuid}) first.",
        reason="in-progress",
        consumer=consumer.uuid,
        migration=migration.uuid,
        host=held,
    )


def plan_move(
    consumer: ConsumerState,
    migration: ConsumerState,
    req: ServerRequest,
    cands: CandidateSet,
    target: str,
    providers: Mapping[str, Provider],
) -> MovePlan:
    """Move ``consumer`` to the host ``target`` (a root provider UUID), its source kept by ``migration``.

    ``cands`` are the target's candidates for ``req`` (``target_request``); ``providers`` every
    provider by UUID (hosts and names). Refuses (MoveRefused) a consumer with no allocations, a
    target that is its current host, and a migration that already holds allocations elsewhere.
    """
    check_uuids(consumer.uuid, migration.uuid)
    if not consumer.allocations:
        tail = (
            f"; migration {migration.uuid} holds allocations on "
            f"{_name(host_of(migration, providers), providers)} (revert gives them back)"
            if migration.allocations
            else ""
        )
        raise MoveRefused(
            f"consumer {consumer.uuid} has no allocations: nothing to move{tail}.",
            reason="no-allocations",
            consumer=consumer.uuid,
            migration=migration.uuid,
        )
    source = host_of(consumer, providers)
    if source is None:
        raise AssertionError("the consumer has allocations (checked above), so a host")
    now = {
        "consumer": consumer_view(consumer.uuid, consumer.allocations, providers),
        "migration": consumer_view(migration.uuid, migration.allocations, providers),
    }
    if migration.allocations:
        held = host_of(migration, providers)
        if source == target and held != target:
            # what this move leaves behind: the consumer on the target, the migration on the source
            return MovePlan((), before=now, after=now, source=held or "", target=target, done=True)
        raise _in_progress(consumer, migration, held, providers)
    if source == target:
        raise MoveRefused(
            f"consumer {consumer.uuid} is already on {_name(target, providers)} ({target}): "
            f"the target is its current host, there is nothing to move.",
            reason="same-host",
            consumer=consumer.uuid,
            migration=migration.uuid,
            host=target,
        )
    attempts = tuple(a for a in claim_order(cands, req, len(cands.by_host())) if a.host == target)
    first = next((a for a in attempts if a.usable), None)
    if first is None:
        return MovePlan((), before=now, after=now, attempts=attempts, source=source, target=target)
    op = move_op(consumer, migration, first, req, source)
    after = {
        "consumer": consumer_view(consumer.uuid, op.allocations, providers),
        "migration": consumer_view(migration.uuid, op.held, providers),
    }
    return MovePlan((op,), before=now, after=after, attempts=attempts, source=source, target=target)


def plan_revert(
    consumer: ConsumerState, migration: ConsumerState, providers: Mapping[str, Provider]
) -> base.Plan[RevertOp]:
    """Give ``consumer`` back what ``migration`` holds, and empty ``migration``, in one POST.

    No ops when the migration holds nothing (reverted or confirmed already, or never used). Refuses a
    consumer that holds nothing or is of another project or user than the migration record (made with
    its consumer's): a mistyped consumer UUID would otherwise get, or lose, allocations.
    """
    check_uuids(consumer.uuid, migration.uuid)
    now = {
        "consumer": consumer_view(consumer.uuid, consumer.allocations, providers),
        "migration": consumer_view(migration.uuid, migration.allocations, providers),
    }
    if not migration.allocations:
        return base.Plan((), before=now, after=now)
    if not consumer.allocations:
        # a moved consumer holds its target allocations until the revert: one that holds nothing is a
        # mistyped UUID (or was deleted meanwhile, and then confirming releases the source)
        raise MoveRefused(
            f"consumer {consumer.uuid} has no allocations, so it is not the consumer migration {migration.uuid} "
            f"was made for (a moved consumer holds its target allocations until the revert). Fix: pass the "
            f"consumer that was moved; if it was deleted, confirm the migration to release what it holds.",
            reason="no-allocations",
            consumer=consumer.uuid,
            migration=migration.uuid,
        )
    if (consumer.project_id, consumer.user_id) != (migration.project_id, migration.user_id):
        raise MoveRefused(
            f"migration {migration.uuid} belongs to project {migration.project_id} / user {migration.user_id}, "
            f"consumer {consumer.uuid} to project {consumer.project_id} / user {consumer.user_id}: it is not the "
            f"consumer this migration holds allocations for. Fix: pass the consumer that was moved.",
            reason="mismatch",
            consumer=consumer.uuid,
            migration=migration.uuid,
        )
    source = host_of(migration, providers)
    typed = _types_known(consumer.consumer_type, migration.consumer_type)
    body = {
        consumer.uuid: _part(consumer, migration.allocations, migration, consumer.consumer_type if typed else None),
        migration.uuid: _part(migration, {}, migration, migration.consumer_type if typed else None),
    }
    op = RevertOp(
        "revert",
        consumer=consumer.uuid,
        migration=migration.uuid,
        body=body,
        source=source or "",
        allocations=_allocations(migration.allocations),
    )
    after = {
        "consumer": consumer_view(consumer.uuid, migration.allocations, providers),
        "migration": consumer_view(migration.uuid, {}, providers),
    }
    return base.Plan((op,), before=now, after=after)


def plan_confirm(migration: ConsumerState, providers: Mapping[str, Provider]) -> base.Plan[PostOp]:
    """Release the source: empty ``migration`` at its generation. No ops when it holds nothing."""
    check_uuid("migration", migration.uuid)
    now = {"migration": consumer_view(migration.uuid, migration.allocations, providers)}
    if not migration.allocations:
        return base.Plan((), before=now, after=now)
    op = PostOp(
        "confirm",
        migration=migration.uuid,
        body={migration.uuid: _part(migration, {}, migration, migration.consumer_type)},
    )
    return base.Plan((op,), before=now, after={"migration": consumer_view(migration.uuid, {}, providers)})
