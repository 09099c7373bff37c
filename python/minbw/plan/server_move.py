"""One server action through Nova's API, planned: the call a move step makes of the server as it is now (none
when it is already done), or why it cannot be made. Pure: :mod:`minbw.ops.server_move` applies and then judges
the step with :func:`minbw.reports.server_move.check_move`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minbw.errors import InvalidInput
from minbw.plan.base import Op, Plan
from minbw.reports.server_move import HOLDING_STATUSES, Migration

ACTIONS = ("migrate", "resize", "confirm", "revert", "live_migrate", "evacuate", "shelve", "unshelve", "start")
# Nova's statuses that accept each action (nova.compute.api check_instance_state), as the API shows them
_ACCEPTS = {
    "migrate": {"ACTIVE", "SHUTOFF"},
    "resize": {"ACTIVE", "SHUTOFF"},
    "confirm": {"VERIFY_RESIZE"},
    "revert": {"VERIFY_RESIZE"},
    "live_migrate": {"ACTIVE", "PAUSED"},
    "evacuate": {"ACTIVE", "SHUTOFF", "ERROR", "PAUSED", "SUSPENDED", "RESCUE"},
    "shelve": {"ACTIVE", "SHUTOFF", "PAUSED", "SUSPENDED"},
    "unshelve": {"SHELVED", "SHELVED_OFFLOADED"},
    "start": {"SHUTOFF"},
}
# what the server looks like once the action is over (the drivers of minbw.ops.server_move wait for it)
# (a stopped server stays stopped; Nova's compute API 2.95+ leaves an evacuated server stopped)
_AFTER = {
    "migrate": "VERIFY_RESIZE",
    "resize": "VERIFY_RESIZE",
    "confirm": "ACTIVE or SHUTOFF",
    "revert": "ACTIVE or SHUTOFF",
    "live_migrate": "ACTIVE",
    "evacuate": "SHUTOFF or ACTIVE",
    "shelve": "SHELVED_OFFLOADED",
    "unshelve": "ACTIVE",
    "start": "ACTIVE",
}


@dataclass(frozen=True)
class NovaAction(Op):
    """One server action through Nova's API (and, for an evacuation, the source forced down first)."""

    server: str = ""
    host: str | None = None
    flavor: str | None = None
    force_down: str | None = None  # evacuate: the source host whose nova-compute is marked forced down

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: action, server, host, flavor and ``force_down``."""
        return {
            "action": self.action,
            "server": self.server,
            "host": self.host,
            "flavor": self.flavor,
            "force_down": self.force_down,
        }


def plan_action(
    server: Mapping[str, Any],
    migration: Migration | None,
    action: str,
    *,
    host: str | None = None,
    flavor: str | None = None,
    force_down_source: bool = False,
) -> Plan[NovaAction]:
    """The Nova call ``action`` makes of the server as it is now (no op when it is already done), or
    :class:`InvalidInput` naming what is wrong and how to fix it; the same plan check mode shows."""
    if action not in ACTIONS:
        raise InvalidInput(f"action {action!r}: expected one of {', '.join(ACTIONS)}.")
    status, here = server.get("status"), server.get("compute_host")
    name = f"server {server.get('name')} ({server.get('id')})"
    before = {
        "status": status,
        "host": here,
        "flavor": server.get("flavor"),
        "migration": migration.to_dict() if migration else None,
    }
    if server.get("task_state"):
        raise InvalidInput(
            f"{name} is busy ({status}, task {server['task_state']}). Fix: wait until its task is over, then {action}."
        )
    if action == "resize" and not flavor:
        raise InvalidInput("flavor is required to resize. Fix: name the flavor to resize the server to.")
    if action in ("live_migrate", "migrate", "evacuate") and host is not None and host == here:
        return Plan((), before, before)  # already there
    if action == "resize" and flavor == server.get("flavor"):
        return Plan((), before, before)
    done = {"confirm": "confirmed", "revert": "reverted"}.get(action)
    if done and status in HOLDING_STATUSES and migration is not None and migration.status == done:
        return Plan((), before, before)
    if (action == "shelve" and status == "SHELVED_OFFLOADED") or (
        action in ("unshelve", "start") and status == "ACTIVE"
    ):
        return Plan((), before, before)
    if status not in _ACCEPTS[action]:
        raise InvalidInput(f"{name} is {status}; Nova accepts {action} only from {'/'.join(sorted(_ACCEPTS[action]))}.")
    if action == "evacuate" and not here:
        raise InvalidInput(f"{name} has no host to evacuate from.")
    op = NovaAction(
        action,
        server=str(server.get("id")),
        host=host,
        flavor=flavor,
        force_down=here if action == "evacuate" and force_down_source else None,
    )
    after_host = {
        "migrate": host,
        "live_migrate": host,
        "evacuate": host,
        "confirm": here,
        "revert": migration.source_compute if migration else None,
        "shelve": None,
    }.get(action, here)
    after = {
        "status": _AFTER[action],
        "host": after_host,
        "flavor": flavor if action == "resize" else server.get("flavor"),
    }
    return Plan((op,), before, after)
