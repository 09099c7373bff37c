"""Verify a write of allocations and undo it when Placement accepted it over capacity (see
:mod:`minbw.plan.verify` for why and why it is enough). Used by every write that gives a consumer more:
claims (and so the ports-first schedule), moves and heal."""
from __future__ import annotations

from typing import Any, Mapping

from minbw.errors import ConcurrentUpdate, ConsumerConflict
from minbw.placement.client import Placement
from minbw.plan.verify import Allocations, Excess, capacity, over_capacity, raised, undo_body


def check(api: Placement, written: Allocations, before: Allocations | None = None) -> tuple[Excess, ...]:
    """The providers and classes the write from ``before`` to ``written`` raised that are over capacity now:
    their usages and inventories, read concurrently after the write."""
    touched = raised(written, before)
    if not touched:
        return ()
    usages, inventories = api.usages_and_inventories(touched)
    caps = {rp: {rc: capacity(inv) for rc, inv in invs.items()} for rp, invs in inventories.items()}
    return over_capacity(touched, usages, caps)


def undo_put(api: Placement, consumer: str, written: Allocations, before: Allocations | None = None, *,
             project_id: str | None = None, user_id: str | None = None) -> None:
    """Put back ``before`` (nothing, for a new consumer) in place of our ``written``, at the generation the
    consumer has now, only if it still holds exactly what we wrote (else ConsumerConflict, nothing written)."""
    now = api.get_allocations(consumer)
    body = undo_body(consumer, now, written, before, project_id=project_id, user_id=user_id)
    try:
        api.put_allocations(consumer, body)
    except ConcurrentUpdate:
        raise ConsumerConflict(f"consumer {consumer} changed while we undid our write that left a provider over "
                               f"capacity; nothing more was written. Check it (minbw audit).") from None


def undo_post(api: Placement, written: Mapping[str, Mapping[str, Any]],
              before: Mapping[str, Allocations | None]) -> None:
    """Undo one ``POST /allocations`` (``written``: its body): every consumer of it gets back ``before[c]``
    in one POST, at its generation now, only if each still holds exactly what we wrote."""
    body = {}
    for c, part in written.items():
        now = api.get_allocations(c)
        body[c] = undo_body(c, now, part.get("allocations") or {}, before.get(c),
                            project_id=part.get("project_id"), user_id=part.get("user_id"))
    try:
        api.post_allocations(body)
    except ConcurrentUpdate:
        raise ConsumerConflict(f"consumers {', '.join(sorted(written))} changed while we undid our write that left "
                               f"a provider over capacity; nothing more was written. Check them (minbw audit).") \
            from None
