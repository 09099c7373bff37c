"""Desired providers + what Placement holds → the list of writes (pure).

The plan is data, like Neutron's ``deferred_sync()``: it can be printed, counted,
diffed (check and diff mode) and tested before anything is written.
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from minbw.errors import PlanError, RootProviderNotFound, RootRefused
from minbw.model import microversions
from minbw.model.providers import (
    NOVA_ROOT_TRAITS,
    DesiredState,
    Provider,
    ProviderSpec,
    Snapshots,
    freeze_inventories,
    thaw_inventories,
)
from minbw.model.synced import Synced
from minbw.neutron import naming
from minbw.neutron.provider_tree import swept_agents
from minbw.nova.compute_root import NovaComputes, check_root_inventory, root_of
from minbw.plan import base

# Deterministic UUIDs for roots that minbw creates itself (create_root) where the cloud has no Nova (or where told
# to ignore it), so that a check-mode plan names the same UUID the real run will create. Where Nova knows the
# compute node, the root gets the node's UUID instead (minbw.nova.compute_root).
ROOT_NAMESPACE = uuidlib.UUID("5f0c3a52-9a51-5d3e-9a1e-6d696e62772e")


def root_uuid(hypervisor: str) -> str:
    """The UUID minbw gives the root it creates for ``hypervisor`` (uuid5 in :data:`ROOT_NAMESPACE`: the same each
    run)."""
    return str(uuidlib.uuid5(ROOT_NAMESPACE, hypervisor))


@dataclass(frozen=True)
class Observed:
    """What Placement holds that matters to a sync (read by :func:`minbw.sync.observe`)."""

    providers: Mapping[str, Provider]  # every provider seen, by uuid
    roots: Mapping[str, Provider]  # hypervisor name → provider with that name
    traits: Mapping[str, frozenset[str]]  # for desired providers that exist
    inventories: Mapping[str, Mapping[str, Mapping[str, Any]]]
    existing_traits: frozenset[str]  # which of the desired global traits exist
    allocations: Mapping[str, Mapping[str, Any]]  # consumers on providers that would be removed
    max_version: microversions.Microversion = microversions.ANY_TRAITS


@dataclass(frozen=True)
class Op(base.Op):
    """One write to a provider (or a trait)."""

    # action: create_trait | create_root | create_provider | update_provider | set_traits | set_inventories
    #         | delete_provider
    name: str = ""
    uuid: str | None = None
    parent_uuid: str | None = None
    traits: tuple[str, ...] = ()
    inventories: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: action and name, uuid when set, and what the action sends (parent, traits,
        inventories)."""
        d: dict[str, Any] = {"action": self.action, "name": self.name}
        if self.uuid:
            d["uuid"] = self.uuid
        if self.action in ("create_root", "create_provider", "update_provider"):
            d["parent_provider_uuid"] = self.parent_uuid
        if self.action == "set_traits":
            d["traits"] = list(self.traits)
        if self.action in ("set_inventories", "create_root") and (self.inventories or self.action == "set_inventories"):
            d["inventories"] = thaw_inventories(self.inventories)
        return d

    def __str__(self) -> str:
        what = {
            "create_trait": "create trait",
            "create_root": "create root provider",
            "create_provider": "create provider",
            "update_provider": "update provider",
            "set_traits": "set traits of",
            "set_inventories": "set inventories of",
            "delete_provider": "delete provider",
        }[self.action]
        detail = ""
        if self.action == "set_traits":
            detail = ": " + ", ".join(self.traits)
        elif self.action == "set_inventories":
            detail = ": " + (", ".join(f"{rc}={inv['total']}" for rc, inv in self.inventories.items()) or "none")
        elif self.action in ("create_provider", "update_provider") and self.parent_uuid:
            detail = f" under {self.parent_uuid}"
        return (
            f"{what} {self.name}" + (f" ({self.uuid})" if self.uuid and self.action != "create_trait" else "") + detail
        )


@dataclass(frozen=True)
class Kept:
    """A provider the configuration no longer has, kept because something is allocated on it."""

    uuid: str
    name: str
    consumers: Mapping[str, Mapping[str, int]]

    def __str__(self) -> str:
        who = ", ".join(
            f"{c} ({', '.join(f'{rc}={n}' for rc, n in sorted(r.items()))})" for c, r in sorted(self.consumers.items())
        )
        return f"kept {self.name} ({self.uuid}): no longer configured, but allocated to {who}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: uuid, name and the consumers' allocations on it (``{consumer: {class: amount}}``)."""
        return {"uuid": self.uuid, "name": self.name, "consumers": {c: dict(r) for c, r in self.consumers.items()}}


@dataclass(frozen=True)
class Plan(base.Plan[Op]):
    """``before``/``after``: uuid → provider as observed (generation left out) / as it will be."""

    kept: tuple[Kept, ...] = ()
    providers: tuple[ProviderSpec, ...] = ()  # desired, parents resolved
    warnings: tuple[str, ...] = ()  # what Neutron would silently skip (OVN chassis options)
    skipped: tuple[tuple[str, str], ...] = ()  # (hypervisor, why) planned nothing for: no compute node root

    def diff(self) -> dict[str, Any]:
        """Each provider before/after, only those that change (Ansible's diff shape)."""
        changed = sorted({op.uuid or op.name for op in self.ops})
        before = {u: self.before[u] for u in changed if u in self.before}
        after = {u: self.after[u] for u in changed if u in self.after}
        return {"before": before, "after": after}

    def to_dict(self) -> dict[str, Any]:
        """The plan's dict plus ``kept``, the desired providers' dicts and the warnings."""
        return {
            **super().to_dict(),
            "kept": [k.to_dict() for k in self.kept],
            "providers": [p.to_dict() for p in self.providers],
            "warnings": list(self.warnings),
        }


def owned_agents(desired: DesiredState, providers: Iterable[Provider]) -> set[str]:
    """The agent providers whose unlisted children are stale: the desired agents and the swept ones, but for
    those a skipped unit may own (``desired.unswept``)."""
    return (set(desired.agent_uuids) | swept_agents(desired, providers)) - desired.unswept


def make_absent_plan(desired: DesiredState, observed: Observed) -> Plan:
    """Remove the agents' providers (devices, then agents); a provider with allocations is kept and
    so is its agent provider, with the consumers named."""
    ops: list[Op] = []
    kept: list[Kept] = []
    before = Snapshots()
    agents = owned_agents(desired, observed.providers.values())
    ours = {p.uuid for p in desired.providers} | agents
    present = [p for p in observed.providers.values() if p.uuid in ours or p.parent_uuid in agents]
    blocked_parents: set[str | None] = set()
    # leaves first: devices (children of our agents), then the agents themselves
    for prov in sorted(present, key=lambda p: (p.uuid in agents, p.name)):
        before.add(
            prov.uuid, prov.name, prov.parent_uuid, observed.traits.get(prov.uuid), observed.inventories.get(prov.uuid)
        )
        consumers = observed.allocations.get(prov.uuid, {})
        if consumers or prov.uuid in blocked_parents:
            if consumers:
                kept.append(Kept(prov.uuid, prov.name, {c: dict(a.get("resources", a)) for c, a in consumers.items()}))
            blocked_parents.add(prov.parent_uuid)
            continue
        ops.append(Op("delete_provider", name=prov.name, uuid=prov.uuid))
    return Plan(
        ops=tuple(ops),
        kept=tuple(kept),
        providers=(),
        before=before,
        after=Snapshots(),
        warnings=tuple(desired.warnings) + tuple(nova_compute_caches(ops, observed)),
    )


def make_plan(
    desired: DesiredState,
    observed: Observed,
    *,
    create_root: bool = False,
    root_inventories: Mapping[str, Mapping[str, Any]] | None = None,
    nova: NovaComputes | None = None,
    ignore_nova_compute: bool = False,
) -> Plan:
    """Compare and list the writes, in the order they must run. Raises PlanError; writes nothing.

    ``nova``: what Nova knows of its computes, where the cloud has Nova and a root is to be created or given
    inventories (None: no Nova): a root to create gets its compute node's UUID, or is refused where nova-compute
    makes it, and inventories are refused on a root nova-compute owns, unless ``ignore_nova_compute``
    (:mod:`minbw.nova.compute_root`)."""
    ops: list[Op] = []
    before, after = Snapshots(), Snapshots()  # a snapshot is made only where it is read: the diff, a report

    roots: dict[str, str] = {}
    warnings = list(desired.warnings)
    skipped: list[tuple[str, str]] = []
    refused: dict[str, PlanError] = {}  # hypervisor -> why it is skipped
    by_hypervisor: dict[str, list[ProviderSpec]] = {}  # once: a scan per hypervisor is hosts x providers
    for spec in desired.providers:
        by_hypervisor.setdefault(spec.hypervisor, []).append(spec)
    hosts: dict[str, set[str]] = {}  # hypervisor -> the agent hosts that name it
    for unit in desired.units:
        for hyp in unit.hypervisors:
            hosts.setdefault(hyp, set()).update([unit.host] if unit.host else [])
    for hyp in desired.hypervisors:
        root = observed.roots.get(hyp)
        devices = sorted(p.device for p in by_hypervisor.get(hyp, ()) if p.device)
        if root is not None:
            roots[hyp] = root.uuid
            warnings += _not_novas(root, nova)
            if root_inventories:
                check_root_inventory(hyp, root.uuid, nova, ignore=ignore_nova_compute)
                ops += _root_inventories(root, observed, root_inventories, before, after)
        elif create_root:
            try:
                uuid = root_of(hyp, hosts.get(hyp, ()), nova, ignore=ignore_nova_compute) or root_uuid(hyp)
            except RootRefused as e:
                if not desired.isolated:
                    raise
                refused[hyp] = e
                skipped.append((hyp, str(e)))
                continue
            if root_inventories:
                check_root_inventory(hyp, uuid, nova, ignore=ignore_nova_compute)
            roots[hyp] = uuid
            invs = freeze_inventories(root_inventories or {})
            ops.append(Op("create_root", name=hyp, uuid=roots[hyp], inventories=invs))
            ops.append(Op("set_traits", name=hyp, uuid=roots[hyp], traits=NOVA_ROOT_TRAITS))
            after.add(roots[hyp], hyp, None, NOVA_ROOT_TRAITS, invs)
        elif all(p.kind == naming.OVN for p in by_hypervisor.get(hyp, ())):
            # Neutron's OVN extension skips a hypervisor entry that names no provider, silently
            warnings.append(
                f"no resource provider named {hyp!r} in Placement: Neutron's OVN extension "
                f"silently reports nothing for its resource_provider_hypervisors entries"
                + (f" (bridges {', '.join(devices)})" if devices else "")
                + "; minbw skips them too. "
                "Fix: name the compute node's provider ('openstack hypervisor list'), or create_root"
            )
        elif desired.isolated:  # this hypervisor's configurations only: named, the others planned
            refused[hyp] = RootProviderNotFound(hyp, devices)
            skipped.append((hyp, str(refused[hyp])))
        else:
            raise RootProviderNotFound(hyp, devices)
    if skipped and not roots:  # no hypervisor has its root: nothing can be done
        if len(skipped) == 1:
            raise refused[skipped[0][0]]
        raise PlanError(
            "nothing to sync: no hypervisor has its compute node's root provider in Placement: "
            + " | ".join(why for _hyp, why in skipped)
        )

    # the physnet traits only skipped providers had are not ensured either (Neutron never saw those bridges)
    kept_traits = {t for p in desired.providers if p.hypervisor in roots for t in p.traits}
    dropped = {
        t
        for p in desired.providers
        if p.hypervisor not in roots and p.role == "device"
        for t in p.traits
        if t.startswith("CUSTOM_PHYSNET_")
    } - kept_traits
    ops += [Op("create_trait", name=t) for t in sorted(desired.traits - dropped - observed.existing_traits)]

    resolved: list[ProviderSpec] = []
    reparent_ok = microversions.at_least(observed.max_version, microversions.REPARENT)
    for spec in desired.providers:
        if spec.hypervisor not in roots:
            continue
        parent = spec.parent_uuid or roots[spec.hypervisor]
        spec = ProviderSpec(**{**spec.__dict__, "parent_uuid": parent})
        resolved.append(spec)
        after.add(spec.uuid, spec.name, parent, spec.traits, spec.inventories)
        have = observed.providers.get(spec.uuid)
        if have is None:
            ops.append(Op("create_provider", name=spec.name, uuid=spec.uuid, parent_uuid=parent))
            if spec.traits:
                ops.append(Op("set_traits", name=spec.name, uuid=spec.uuid, traits=tuple(sorted(spec.traits))))
            if spec.inventories:
                ops.append(Op("set_inventories", name=spec.name, uuid=spec.uuid, inventories=spec.inventories))
            continue
        traits = observed.traits.get(spec.uuid, frozenset())
        invs = observed.inventories.get(spec.uuid, {})
        before.add(spec.uuid, have.name, have.parent_uuid, traits, invs)
        if have.name != spec.name or have.parent_uuid != parent:
            if have.parent_uuid != parent and not reparent_ok:
                raise PlanError(
                    f"provider {spec.name} ({spec.uuid}) hangs under {have.parent_uuid}, not under {parent}: "
                    f"moving it needs Placement microversion {microversions.format(microversions.REPARENT)} "
                    f"(this server offers {microversions.format(observed.max_version)}); delete the provider and "
                    f"sync again (neutron bug 1921150)"
                )
            ops.append(Op("update_provider", name=spec.name, uuid=spec.uuid, parent_uuid=parent))
        if frozenset(traits) != spec.traits:
            ops.append(Op("set_traits", name=spec.name, uuid=spec.uuid, traits=tuple(sorted(spec.traits))))
        if invs != spec.inventories:  # frozen (read-only views) both: compared as the dicts they show
            ops.append(Op("set_inventories", name=spec.name, uuid=spec.uuid, inventories=spec.inventories))

    kept: list[Kept] = []
    agent_uuids = owned_agents(desired, observed.providers.values())
    wanted = {p.uuid for p in resolved}
    for prov in sorted(observed.providers.values(), key=lambda p: p.name):
        if prov.parent_uuid in agent_uuids and prov.uuid not in wanted:
            consumers = observed.allocations.get(prov.uuid, {})
            before.add(
                prov.uuid,
                prov.name,
                prov.parent_uuid,
                observed.traits.get(prov.uuid),
                observed.inventories.get(prov.uuid),
            )
            if consumers:
                kept.append(Kept(prov.uuid, prov.name, {c: dict(a.get("resources", a)) for c, a in consumers.items()}))
            else:
                ops.append(Op("delete_provider", name=prov.name, uuid=prov.uuid))
    warnings += nova_compute_caches(ops, observed)
    return Plan(
        ops=tuple(_ordered(ops)),
        kept=tuple(kept),
        providers=tuple(resolved),
        before=before,
        after=after,
        warnings=tuple(warnings),
        skipped=tuple(skipped),
    )


def warm_refusal(synced: Synced, fingerprint: str, *, now: float, check_interval: float, max_age: float) -> str | None:
    """Why the last complete sync's record cannot answer for the listing, whatever it shows: another desired state
    (``fingerprint``), the safety check due (an entry confirmed ``check_interval`` seconds before ``now`` or
    longer), or the periodic full check (read more than ``max_age`` seconds before). None: the listing decides."""
    if synced.fingerprint != fingerprint:
        return "the desired state differs from the last sync's"
    if now - synced.verified >= check_interval:
        return f"the safety check is due (confirmed {now - synced.verified:.0f} s ago)"
    if now - synced.checked > max_age:
        return f"the periodic full check is due (read {now - synced.checked:.0f} s ago)"
    return None


def make_warm_plan(
    desired: DesiredState,
    synced: Synced,
    fingerprint: str,
    providers: Mapping[str, Provider],
    roots: Mapping[str, Provider],
    *,
    now: float,
    check_interval: float,
    max_age: float,
) -> tuple[Plan | None, str]:
    """The warm sync as the listing: ``(plan, why)``. The plan (no writes, the desired providers with their parents
    resolved, the last sync's warnings and skipped hypervisors) when the listing (``providers`` by UUID, ``roots``
    by hypervisor name) shows what the last complete sync (``synced``) left: the same desired state (``fingerprint``),
    every desired provider at its generation (so its traits and inventories are those written or read then) with
    its name and parent, the same roots, no other child under the owned agents, and its cache entries confirmed
    less than ``check_interval`` and read less than ``max_age`` seconds before ``now`` (the safety check and the
    periodic full check not due). Else ``(None, why not)``: the full path runs. Raises nothing."""
    refused = warm_refusal(synced, fingerprint, now=now, check_interval=check_interval, max_age=max_age)
    if refused:
        return None, refused
    for hyp in desired.hypervisors:
        root = roots.get(hyp)
        if (root.uuid if root is not None else None) != synced.roots.get(hyp, ""):
            return None, f"the compute node root of {hyp} changed since the last sync"
    resolved: list[ProviderSpec] = []
    before, after = Snapshots(), Snapshots()  # as the full plan's: equal, the providers unchanged
    for spec in desired.providers:
        root_uuid_ = synced.roots.get(spec.hypervisor)
        if root_uuid_ is None:  # skipped by the last sync (no root), skipped now: the check above
            continue
        parent = spec.parent_uuid or root_uuid_
        have = providers.get(spec.uuid)
        if (
            have is None
            or have.generation != synced.generations.get(spec.uuid)
            or have.name != spec.name
            or have.parent_uuid != parent
        ):
            return None, f"provider {spec.name} ({spec.uuid}) changed since the last sync"
        resolved.append(spec if spec.parent_uuid == parent else replace(spec, parent_uuid=parent))
        before.add(spec.uuid, spec.name, parent, spec.traits, spec.inventories)
        after.add(spec.uuid, spec.name, parent, spec.traits, spec.inventories)
    if len(resolved) != len(synced.generations):
        return None, "the last sync's providers are not the desired ones"
    agents = owned_agents(desired, providers.values())
    if agents != synced.agents:
        return None, "the agents owned changed since the last sync"
    for prov in providers.values():
        if prov.parent_uuid in agents and prov.uuid not in synced.generations:
            return None, f"provider {prov.name} ({prov.uuid}) appeared under an agent since the last sync"
    plan = Plan(
        ops=(),
        providers=tuple(resolved),
        before=before,
        after=after,
        warnings=synced.warnings,
        skipped=synced.skipped,
    )
    return plan, "unchanged"


def nova_compute_caches(ops: Iterable[Op], observed: Observed) -> list[str]:
    """A warning per root under which providers are deleted: nova-compute caches its provider tree, and at each
    update of its node (every build's claim, every periodic) reads the allocations of every provider it cached
    (``SchedulerReportClient.get_allocations_for_provider_tree``); a provider deleted by another party answers 404,
    ``ResourceProviderAllocationRetrievalFailed``, and the build is rescheduled, until nova-compute re-reads the
    root's tree (``[compute] resource_provider_association_refresh``, 300 s by default: ``ProviderTree.
    populate_from_iterable`` then drops the children Placement no longer lists) or restarts
    (tests/e2e/test_create_root_cloud.py shows it on Nova 34)."""
    by_root: dict[str, list[str]] = {}
    deleted = [op for op in ops if op.action == "delete_provider"]
    roots = {p.uuid: p for p in observed.roots.values()} if deleted else {}  # a warm sync deletes nothing
    for op in deleted:
        prov = observed.providers.get(op.uuid or "")
        if prov is None or prov.root_uuid == prov.uuid:
            continue
        root = observed.providers.get(prov.root_uuid) or roots.get(prov.root_uuid)
        if root is not None:
            by_root.setdefault(root.name, []).append(op.name)
    return [
        f"{len(names)} provider(s) removed under the root {host} ({', '.join(sorted(names))}): a nova-compute "
        f"running on {host} keeps them in its cached provider tree, and each build and resource update of {host} "
        f"fails (ResourceProviderAllocationRetrievalFailed: 404 on a removed provider; builds are rescheduled "
        f"elsewhere) until it re-reads the tree. Fix: restart nova-compute on {host}, or leave {host} out of "
        f"scheduling for [compute] resource_provider_association_refresh (300 s by default)"
        for host, names in sorted(by_root.items())
    ]


def _not_novas(root: Provider, nova: NovaComputes | None) -> list[str]:
    """A warning when Nova has a compute node of the root's name with another UUID: nova-compute cannot create its
    provider (Placement: 409 Conflicting resource provider name) and reports nothing for that node."""
    uuids = nova.nodes.get(root.name, ()) if nova is not None else ()
    if not uuids or root.uuid in uuids:
        return []
    return [
        f"root provider {root.name} ({root.uuid}) is not Nova's compute node {root.name} ({', '.join(uuids)}): "
        f"nova-compute cannot create its own root (Placement refuses the name: 409) and reports nothing for it "
        f"(a root made by hand, or by create_root before it read Nova). Fix: once nothing is allocated in that "
        f"tree, remove it (provider sync --absent, then 'openstack resource provider delete {root.uuid}'); "
        f"nova-compute creates its root at its next update, and a sync puts the agents' providers under it"
    ]


def _root_inventories(
    root: Provider, observed: Observed, given: Mapping[str, Mapping[str, Any]], before: Snapshots, after: Snapshots
) -> list[Op]:
    """An existing root corrected to the inventories given: each given field of each given class replaced, the
    rest of the root's inventories (nova-compute's allocation ratios, other classes) kept."""
    have = thaw_inventories(observed.inventories.get(root.uuid, {}))
    merged = {**have, **{rc: {**have.get(rc, {}), **dict(fields)} for rc, fields in given.items()}}
    wanted = freeze_inventories(merged)
    if thaw_inventories(wanted) == have:
        return []
    traits = observed.traits.get(root.uuid, frozenset())
    before.add(root.uuid, root.name, None, traits, have)
    after.add(root.uuid, root.name, None, traits, wanted)
    return [Op("set_inventories", name=root.name, uuid=root.uuid, inventories=wanted)]


_ORDER = (
    "create_trait",
    "create_root",
    "create_provider",
    "update_provider",
    "set_traits",
    "set_inventories",
    "delete_provider",
)


def _ordered(ops: list[Op]) -> list[Op]:
    # stable: within one action the desired order (parents first) is kept
    return sorted(ops, key=lambda op: _ORDER.index(op.action))
