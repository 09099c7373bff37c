"""Hosts reserved for QoS ports: observe the roots (Placement) and flavors (Nova), plan
(:mod:`minbw.plan.separation`), apply.

Each write adds or removes only our trait (or aggregate) on what the root has at that moment: a
``placement.concurrent_update`` (nova-compute's resource tracker updating its COMPUTE_* traits, say)
re-reads the root's traits and generation and writes again, bounded.
"""

from __future__ import annotations

import random
import time
from typing import Iterable


from minbw.errors import ConcurrentUpdate
from minbw.ops import apply_in_order
from minbw.placement.client import Placement
from minbw.plan.separation import (
    Flavor,
    FlavorOp,
    HostOp,
    Observed,
    Root,
    Separation,
    SeparationPlan,
    combine,
    marked,
    plan_flavors,
    plan_hosts,
)

RETRIES = 10


def _root(api: Placement, sep: Separation, prov) -> Root:
    if sep.aggregate:
        aggs, gen = api.get_provider_aggregates(prov.uuid)
        return Root(prov.uuid, prov.name, gen, aggregates=frozenset(aggs))
    traits, gen = api.get_provider_traits(prov.uuid)
    return Root(prov.uuid, prov.name, gen, traits=frozenset(traits))


def observe_hosts(api: Placement, sep: Separation, hosts: Iterable[str]) -> Observed:
    """The named hosts' roots and every root marked now (trait or aggregate), with their marks."""
    named = {}
    for name in dict.fromkeys(hosts):
        found = [p for p in api.list_providers(name=name) if p.parent_uuid is None]
        if found:
            named[name] = _root(api, sep, found[0])
    trait_exists = True
    if sep.aggregate:
        marked = api.list_providers(member_of=sep.aggregate)
    else:
        trait_exists = bool(api.existing_traits([sep.trait]))
        marked = api.list_providers(required=sep.trait) if trait_exists else []
    reserved = {p.name: named.get(p.name) or _root(api, sep, p) for p in marked if p.parent_uuid is None}
    return Observed(named=named, reserved=reserved, trait_exists=trait_exists)


def observe_flavors(conn, names: Iterable[str]) -> dict[str, Flavor]:
    """Nova's flavors by the name (or id) given, with their extra specs; missing ones left out."""
    out = {}
    for name in dict.fromkeys(names):
        flavor = conn.compute.find_flavor(name, ignore_missing=True, get_extra_specs=True)
        if flavor is not None:
            out[name] = Flavor(flavor.id, flavor.name, dict(flavor.extra_specs or {}))
    return out


def _write_host(api: Placement, sep: Separation, op: HostOp, root: Root) -> None:
    read, write = (
        (api.get_provider_aggregates, api.set_provider_aggregates)
        if sep.aggregate
        else (api.get_provider_traits, api.set_provider_traits)
    )
    current, gen = (root.aggregates if sep.aggregate else root.traits), root.generation
    for attempt in range(1, RETRIES + 2):
        try:
            write(op.uuid, marked(sep, current, op), gen)
            return
        except ConcurrentUpdate:
            if attempt > RETRIES:
                raise
            time.sleep(random.uniform(0, 0.05 * attempt))  # jitter: let the other writer finish
            current, gen = read(op.uuid)  # add to / remove from what is there now, never replace it


def _write_flavor(conn, op: FlavorOp) -> None:
    if op.action == "set_extra_spec":
        conn.compute.update_flavor_extra_specs_property(op.flavor_id, op.key, op.value)
    else:
        conn.compute.delete_flavor_extra_specs_property(op.flavor_id, op.key)


def apply(api: Placement, conn, plan: SeparationPlan, observed: Observed) -> list:
    """Run the plan's writes in order; a failure after some writes is a PartialApply naming them."""
    sep = plan.separation
    roots = {**observed.named, **observed.reserved}

    def run(op) -> None:
        if op.action == "create_trait":
            api.create_trait(op.trait)
        elif isinstance(op, HostOp):
            _write_host(api, sep, op, roots[op.host])
        else:
            _write_flavor(conn, op)

    return apply_in_order(plan.ops, run)


def set_separation(
    conn,
    sep: Separation,
    hosts: Iterable[str] = (),
    *,
    exclusive: bool = False,
    flavors_qos: Iterable[str] = (),
    flavors_plain: Iterable[str] = (),
    absent: bool = False,
    check: bool = False,
    api: Placement | None = None,
) -> SeparationPlan:
    """Reserve ``hosts`` for QoS ports and set the flavors' extra specs (``absent``: unreserve every
    reserved host and unset the flavors' spec). ``check``: the plan only, nothing written."""
    api = api or Placement(conn)
    hosts, flavors_qos, flavors_plain = list(hosts), list(flavors_qos), list(flavors_plain)
    if absent:
        hosts, exclusive, sep = [], True, Separation("off", sep.trait, sep.aggregate)
    observed = observe_hosts(api, sep, hosts)
    host_plan = plan_hosts(sep, hosts, observed, exclusive=exclusive)
    flavors = observe_flavors(conn, [*flavors_qos, *flavors_plain]) if (flavors_qos or flavors_plain) else {}
    plan = combine(sep, host_plan, plan_flavors(sep, flavors_qos, flavors_plain, flavors))
    if not check and plan.ops:
        apply(api, conn, plan, observed)
    return plan
