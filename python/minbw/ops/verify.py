"""Verify a write of allocations and undo it when Placement accepted it over capacity (see
:mod:`minbw.reports.verify` for why and why it is enough). Used by every write that gives a consumer more:
claims (and so the ports-first schedule), moves and heal."""

from __future__ import annotations

from typing import Any, Mapping

from minbw.errors import ConcurrentUpdate, ConsumerConflict
from minbw.placement.client import Placement
from minbw.reports.verify import Allocations, Excess, capacity, over_capacity, raised, undo_body


def check(
    api: Placement,
    written: Allocations,
    before: Allocations | None = None,
    capacities: Mapping[str, Mapping[str, float]] | None = None,
) -> tuple[Excess, ...]:
    """The providers and classes the write from ``before`` to ``written`` raised that are over capacity now.

    Reads their usages after the write (concurrently). The capacities are ``capacities`` (the allocation
    candidates' ``provider_summaries``, fetched just before the write: Placement's own ``(total - reserved) *
    allocation_ratio``) where they name every raised class of a provider, else its inventories; a provider
    found over capacity by a summary's figure is read again from its inventories before it counts. (A summary
    older than an inventory decrease would hide an excess: callers pass only candidates they just fetched.)"""
    touched = raised(written, before)
    if not touched:
        return ()
    usages = api.usages_of(touched)
    known = capacities or {}
    caps = {rp: dict(known[rp]) for rp in touched if rp in known and touched[rp] <= set(known[rp])}
    from_summaries = set(caps)
    caps.update(_inventory_capacities(api, [rp for rp in touched if rp not in caps]))
    excess = over_capacity(touched, usages, caps)
    doubtful = {e.provider for e in excess} & from_summaries
    if doubtful:
        caps.update(_inventory_capacities(api, sorted(doubtful)))
        excess = over_capacity(touched, usages, caps)
    return excess


def _inventory_capacities(api: Placement, rps) -> dict[str, dict[str, float]]:
    return {rp: {rc: capacity(inv) for rc, inv in api.get_inventories(rp)[0].items()} for rp in rps}


def undo_put(
    api: Placement,
    consumer: str,
    written: Allocations,
    before: Allocations | None = None,
    *,
    project_id: str | None = None,
    user_id: str | None = None,
) -> None:
    """Put back ``before`` (nothing, for a new consumer) in place of our ``written``, at the generation the
    consumer has now, only if it still holds exactly what we wrote (else ConsumerConflict, nothing written)."""
    now = api.get_allocations(consumer)
    body = undo_body(consumer, now, written, before, project_id=project_id, user_id=user_id)
    try:
        api.put_allocations(consumer, body)
    except ConcurrentUpdate:
        raise ConsumerConflict(
            f"consumer {consumer} changed while we undid our write that left a provider over "
            f"capacity; nothing more was written. Check it (minbw audit)."
        ) from None


def undo_post(
    api: Placement, written: Mapping[str, Mapping[str, Any]], before: Mapping[str, Allocations | None]
) -> None:
    """Undo one ``POST /allocations`` (``written``: its body): every consumer of it gets back ``before[c]``
    in one POST, at its generation now, only if each still holds exactly what we wrote."""
    body = {}
    for c, part in written.items():
        now = api.get_allocations(c)
        body[c] = undo_body(
            c,
            now,
            part.get("allocations") or {},
            before.get(c),
            project_id=part.get("project_id"),
            user_id=part.get("user_id"),
        )
    try:
        api.post_allocations(body)
    except ConcurrentUpdate:
        raise ConsumerConflict(
            f"consumers {', '.join(sorted(written))} changed while we undid our write that left "
            f"a provider over capacity; nothing more was written. Check them (minbw audit)."
        ) from None
