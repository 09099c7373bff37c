"""``minbw allocation migrate [confirm|revert]`` and the
``allocation_migration`` module: move a consumer's allocations to another host as Nova migrates a server (one
atomic ``POST /allocations``; a migration consumer holds the source), then confirm or revert."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.errors import InvalidInput, MoveRefused
from minbw.ops import claims, allocation_migration
from minbw.ops.allocation_migration import MoveResult
from minbw.plan import base
from minbw.usecases.server_request import ServerSpec, server_request
from minbw.usecases.cloud import Cloud

MOVE, CONFIRM, REVERT = "move", "confirm", "revert"


@dataclass(frozen=True)
class MoveRequest:
    """``step`` move: ``consumer``, ``server`` and ``target_host`` (``migration`` None: a new one); confirm:
    ``migration``; revert: ``consumer``, ``migration`` and optionally ``server`` (then the ports' source
    binding allocations are shown). ``settled``: what a move to where the consumer already is (the migration
    holding nothing) does: "refuse" (the command) or "unchanged" (the module: the desired state holds)."""

    step: str = MOVE
    consumer: str | None = None
    server: ServerSpec | None = None
    target_host: str | None = None
    migration: str | None = None
    retries: int = 4
    check: bool = False
    settled: str = "refuse"
    options: tuple[str, str, str] = ("consumer", "target_host", "migration")  # their names in errors


def move(cloud: Cloud, request: MoveRequest) -> MoveResult:
    """Move, confirm or revert (``request.step``) the consumer's allocations: a MoveResult. Raises InvalidInput when
    the step's consumer, target host or migration is missing, MoveRefused when the step must not be made (a move to
    where the consumer already is unless ``settled`` is "unchanged"), MappingError when such a settled claim does not
    satisfy the request; lets NoValidHost, ConsumerConflict and PlacementError through."""
    api = cloud.placement
    consumer_opt, target_opt, migration_opt = request.options
    if request.step == CONFIRM:
        if not request.migration:
            raise InvalidInput(f"{migration_opt} is required to confirm a move.")
        return allocation_migration.confirm(api, request.migration, retries=request.retries, check=request.check)
    req = None
    if request.server is not None and not request.server.empty:
        req = server_request(cloud, request.server)[0]
    if request.step == REVERT:
        for option, value in ((consumer_opt, request.consumer), (migration_opt, request.migration)):
            if not value:
                raise InvalidInput(f"{option} is required to revert a move.")
        return allocation_migration.revert(
            api,
            request.consumer,  # type: ignore[arg-type]  # checked above
            request.migration,  # type: ignore[arg-type]  # checked above
            req,
            retries=request.retries,
            check=request.check,
        )
    for option, value in ((consumer_opt, request.consumer), (target_opt, request.target_host)):
        if not value:
            raise InvalidInput(f"{option} is required to move (or confirm / revert one).")
    if req is None:
        req = server_request(cloud, request.server or ServerSpec())[0]
    try:
        return allocation_migration.move(
            api,
            request.consumer,  # type: ignore[arg-type]  # checked above
            req,
            request.target_host,  # type: ignore[arg-type]  # checked above
            request.migration,
            retries=request.retries,
            check=request.check,
        )
    except MoveRefused as e:
        if e.reason != "same-host" or request.settled != "unchanged":
            raise
        # On the target already, the migration holding nothing: confirmed (or never moved). The desired state
        # holds; the claim must still satisfy the request (MappingError says how it does not).
        claim = claims.existing_claim(api, request.consumer, req)  # type: ignore[arg-type]  # checked above
        held = {"consumer": {"host": request.target_host}}
        return MoveResult(
            MOVE,
            False,
            request.migration or "",
            base.Plan((), held, held),
            request.consumer,
            claim,
            None,
            (),
            request.check,
            reason=e.reason,
            message=str(e),
        )
