"""The ``server_move`` and ``server_move_info`` modules (and the ``bandwidth_move`` role): move a server through
Nova (migrate, resize, confirm, revert, live migrate, evacuate, shelve, unshelve, start) and judge its bandwidth
guarantee at each step of the move."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minbw.ops.server_move import move_server, read_move_state
from minbw.plan.base import Plan
from minbw.reports.server_move import MoveState, MoveWait
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class ServerMoveRequest:
    server: str
    action: str
    host: str | None = None
    flavor: str | None = None
    force_down_source: bool = False
    timeout: float = 180
    check: bool = False


@dataclass(frozen=True)
class ServerMoveResult:
    plan: Plan
    seen: MoveWait | None  # what the wait saw after the action (the server, its migration); None: no wait

    def to_dict(self) -> dict:
        """The plan's dict, the server's view and the migration's dict after the action (None when nothing was waited
        for)."""
        return {
            "plan": self.plan.to_dict(),
            **(self.seen.to_dict() if self.seen else {"server": None, "migration": None}),
        }


def server_move(cloud: Cloud, request: ServerMoveRequest) -> ServerMoveResult:
    """Plan the action and, unless ``check``, make it through Nova and wait for its end state: a ServerMoveResult
    (the plan, and what the wait saw). Raises MissingService without Nova, ObjectNotFound for no such server,
    InvalidInput when the action cannot be made from the server's state (or a flavor is missing or unknown),
    NovaMoveFailed when Nova refuses it, the server or its migration fails, or the wait runs out."""
    cloud.require("compute", "servers are moved through Nova")
    plan, seen = move_server(
        cloud.conn,
        request.server,
        request.action,
        host=request.host,
        flavor=request.flavor,
        force_down_source=request.force_down_source,
        timeout=request.timeout,
        check=request.check,
    )
    return ServerMoveResult(plan, seen)


@dataclass(frozen=True)
class MoveStateQuery:
    server: str
    expect_allocations: Mapping[str, Mapping[str, int]] | None = None


def move_state(cloud: Cloud, query: MoveStateQuery) -> MoveState:
    """The server's move step, judged (a MoveState): phase, allocations of the server and its migration, problems.
    Raises MissingService without Nova, ObjectNotFound when Nova has no such server."""
    cloud.require("compute", "the server and its migrations are read from Nova")
    return read_move_state(cloud.conn, query.server, cloud.placement, expect_allocations=query.expect_allocations)
