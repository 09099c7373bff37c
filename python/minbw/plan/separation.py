"""QoS-aware vs non-aware hosts (pure): which compute nodes are reserved for servers with QoS ports,
how a server's request keeps off them (or, strict, onto them), and the flavor extra specs that make
real Nova do the same.

Two ways to mark the reserved hosts' root providers:

- a trait (default ``CUSTOM_MINBW_QOS_HOST``) added to the roots' traits, next to Nova's own (the
  resource tracker keeps traits it does not manage); servers without QoS ports get
  ``root_required=!TRAIT`` (Placement 1.35), in Nova the flavor extra spec ``trait:TRAIT=forbidden``;
  strict mode gives servers with QoS ports ``root_required=TRAIT`` / ``trait:TRAIT=required``.
- a Placement aggregate: servers without QoS ports get ``member_of=!in:AGG`` (1.32), what Nova's
  ``[scheduler] enable_isolated_aggregate_filtering`` sends for a host aggregate whose metadata
  requires a trait the flavor lacks; strict mode gives servers with QoS ports ``member_of=AGG``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Union

from minbw.errors import InvalidInput
from minbw.model.requests import ServerRequest
from minbw.plan import base

DEFAULT_TRAIT = "CUSTOM_MINBW_QOS_HOST"
MODES = ("off", "avoid", "strict")
_TRAIT = re.compile(r"^CUSTOM_[A-Z0-9_]{1,248}$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True)
class Separation:
    """How hosts reserved for QoS ports are marked (``trait``, or ``aggregate`` when given) and what a
    request does about it: ``off`` nothing, ``avoid`` servers without QoS ports keep off, ``strict``
    also servers with QoS ports must land there."""

    mode: str = "off"
    trait: str = DEFAULT_TRAIT
    aggregate: str | None = None

    @property
    def by(self) -> str:
        """How reserved hosts are marked: ``aggregate`` when one is given, else ``trait``."""
        return "aggregate" if self.aggregate else "trait"

    @property
    def extra_spec(self) -> str:
        """The flavor extra spec key Nova reads (``trait:CUSTOM_X``)."""
        return f"trait:{self.trait}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: mode, trait and aggregate."""
        return {"mode": self.mode, "trait": self.trait, "aggregate": self.aggregate}


def separation_of(
    mode: str | None = "off", trait: str | None = None, aggregate: str | None = None, *, option: str = "separation"
) -> Separation:
    """A validated Separation from plain options; ``option`` names them in the error."""
    mode = mode or "off"
    if mode not in MODES:
        raise InvalidInput(f"{option}: mode must be one of {', '.join(MODES)}, got {mode!r}.")
    trait = trait or DEFAULT_TRAIT
    if not _TRAIT.match(trait):
        raise InvalidInput(
            f"{option}: trait {trait!r} is not a custom trait name. Fix: CUSTOM_ followed by "
            f"A-Z, 0-9 and _ (at most 255 characters), e.g. {DEFAULT_TRAIT}."
        )
    if aggregate is not None:
        aggregate = str(aggregate).lower()
        if not _UUID.match(aggregate):
            raise InvalidInput(
                f"{option}: aggregate {aggregate!r} is not a UUID. Fix: a Placement aggregate "
                f"UUID (a Nova host aggregate's uuid), e.g. from 'openstack aggregate show'."
            )
    return Separation(mode, trait, aggregate)


# ---------------------------------------------------------------- the request side


def separate(req: ServerRequest, sep: Separation) -> ServerRequest:
    """``req`` kept off the reserved hosts when it has no QoS ports; in strict mode, one with QoS ports
    kept on them. Mode ``off`` returns ``req`` unchanged."""
    if sep.mode == "off":
        return req
    has_qos = any(p.groups for p in req.ports)
    if not has_qos:
        if sep.aggregate:
            return dataclasses.replace(req, forbidden_member_of=(*req.forbidden_member_of, sep.aggregate))
        return dataclasses.replace(req, root_forbidden=(*req.root_forbidden, sep.trait))
    if sep.mode == "strict":
        if sep.aggregate:
            return dataclasses.replace(req, member_of=(*req.member_of, (sep.aggregate,)))
        return dataclasses.replace(req, root_required=(*req.root_required, sep.trait))
    return req


# ---------------------------------------------------------------- the hosts


@dataclass(frozen=True)
class Root:
    """A compute node's root provider as observed: its traits and aggregates at ``generation``."""

    uuid: str
    name: str
    generation: int
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Observed:
    """The named hosts' roots (by name; absent when Placement has none) and the roots that are
    reserved now (carry the trait / are in the aggregate), and whether the trait exists."""

    named: Mapping[str, Root]
    reserved: Mapping[str, Root]  # by name
    trait_exists: bool = True


@dataclass(frozen=True)
class HostOp(base.Op):
    # action: create_trait | reserve | release
    host: str = ""
    uuid: str = ""
    trait: str | None = None
    aggregate: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: action; host and uuid when a host is named; trait and aggregate when set."""
        d = {"action": self.action}
        if self.host:
            d.update(host=self.host, uuid=self.uuid)
        d.update({k: v for k, v in (("trait", self.trait), ("aggregate", self.aggregate)) if v})
        return d

    def __str__(self) -> str:
        what = f"trait {self.trait}" if self.trait else f"aggregate {self.aggregate}"
        if self.action == "create_trait":
            return f"create {what}"
        verb = "add" if self.action == "reserve" else "remove"
        return f"{verb} {what} {'to' if verb == 'add' else 'from'} {self.host} ({self.uuid})"


def _marks(sep: Separation, root: Root) -> list[str]:
    return sorted(root.aggregates if sep.aggregate else root.traits)


def plan_hosts(
    sep: Separation, hosts: Iterable[str], observed: Observed, *, exclusive: bool = False
) -> base.Plan[HostOp]:
    """Mark the roots of ``hosts`` (names as Placement has them: the hypervisor names); with
    ``exclusive``, unmark every other root that is marked. Only our trait/aggregate is added or
    removed: the writes keep every other trait and aggregate. Raises InvalidInput; writes nothing."""
    hosts = list(dict.fromkeys(hosts))
    missing = [h for h in hosts if h not in observed.named]
    if missing:
        raise InvalidInput(
            f"hosts: no root provider named {', '.join(map(repr, missing))} in Placement. Fix: use "
            f"the hypervisor names nova-compute reports ('openstack hypervisor list')."
        )
    mark = {"aggregate": sep.aggregate} if sep.aggregate else {"trait": sep.trait}
    ops: list[HostOp] = []
    if not sep.aggregate and not observed.trait_exists and hosts:
        ops.append(HostOp("create_trait", trait=sep.trait))
    before, after = {}, {}
    for name in hosts:
        root = observed.named[name]
        if name in observed.reserved:
            continue
        ops.append(HostOp("reserve", host=name, uuid=root.uuid, **mark))
        before[name] = {"uuid": root.uuid, "reserved": False, sep.by + "s": _marks(sep, root)}
        after[name] = {
            "uuid": root.uuid,
            "reserved": True,
            sep.by + "s": sorted({*_marks(sep, root), sep.aggregate or sep.trait}),
        }
    if exclusive:
        for name, root in sorted(observed.reserved.items()):
            if name in hosts:
                continue
            ops.append(HostOp("release", host=name, uuid=root.uuid, **mark))
            before[name] = {"uuid": root.uuid, "reserved": True, sep.by + "s": _marks(sep, root)}
            after[name] = {
                "uuid": root.uuid,
                "reserved": False,
                sep.by + "s": sorted(set(_marks(sep, root)) - {sep.aggregate or sep.trait}),
            }
    return base.Plan(tuple(ops), before=before, after=after)


def marked(sep: Separation, current: Iterable[str], op: HostOp) -> set[str]:
    """The root's traits (or aggregates) after ``op``, from what it has now (re-read on a conflict)."""
    mark = sep.aggregate or sep.trait
    return set(current) | {mark} if op.action == "reserve" else set(current) - {mark}


# ---------------------------------------------------------------- the flavors (what Nova reads)


@dataclass(frozen=True)
class Flavor:
    id: str
    name: str
    extra_specs: Mapping[str, str]


@dataclass(frozen=True)
class FlavorOp(base.Op):
    # action: set_extra_spec | unset_extra_spec
    flavor: str = ""
    flavor_id: str = ""
    key: str = ""
    value: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: action, flavor, ``flavor_id``, key, and the value when one is set."""
        d = {"action": self.action, "flavor": self.flavor, "flavor_id": self.flavor_id, "key": self.key}
        if self.value is not None:
            d["value"] = self.value
        return d

    def __str__(self) -> str:
        if self.action == "set_extra_spec":
            return f"set {self.key}={self.value} on flavor {self.flavor}"
        return f"unset {self.key} on flavor {self.flavor}"


def flavor_specs(sep: Separation, qos: bool) -> str | None:
    """The value of ``trait:TRAIT`` a flavor should have: ``forbidden`` for flavors of servers without
    QoS ports, ``required`` for QoS flavors in strict mode, none otherwise (mode off: none at all)."""
    if sep.mode == "off":
        return None
    if not qos:
        return "forbidden"
    return "required" if sep.mode == "strict" else None


def plan_flavors(
    sep: Separation, qos_flavors: Iterable[str], plain_flavors: Iterable[str], observed: Mapping[str, Flavor]
) -> base.Plan[FlavorOp]:
    """Set (or unset) ``trait:TRAIT`` on each named flavor; ``observed`` by the name given. Other extra
    specs are left as they are. Raises InvalidInput; writes nothing."""
    both = sorted(set(qos_flavors) & set(plain_flavors))
    if both:
        raise InvalidInput(
            f"flavors_qos and flavors_plain both name {', '.join(both)}. Fix: a flavor is for "
            f"servers with QoS ports or for servers without, not both."
        )
    if sep.aggregate and (qos_flavors or plain_flavors):
        raise InvalidInput(
            "flavors_qos/flavors_plain: with an aggregate, Nova keeps other servers off through a "
            "Nova host aggregate whose metadata has trait:CUSTOM_X=required "
            "([scheduler] enable_isolated_aggregate_filtering), not through flavors. Fix: use the "
            "trait (leave out aggregate) to have minbw set the flavors' extra specs."
        )
    missing = [f for f in (*qos_flavors, *plain_flavors) if f not in observed]
    if missing:
        raise InvalidInput(
            f"flavors_qos/flavors_plain: no flavor {', '.join(map(repr, missing))} in Nova. "
            f"Fix: create it first or correct the name ('openstack flavor list')."
        )
    ops: list[FlavorOp] = []
    before, after = {}, {}
    key = sep.extra_spec
    for name, qos in [*((f, True) for f in qos_flavors), *((f, False) for f in plain_flavors)]:
        flavor = observed[name]
        want, have = flavor_specs(sep, qos), flavor.extra_specs.get(key)
        if want == have:
            continue
        if want is None:
            ops.append(FlavorOp("unset_extra_spec", flavor=flavor.name, flavor_id=flavor.id, key=key))
        else:
            ops.append(FlavorOp("set_extra_spec", flavor=flavor.name, flavor_id=flavor.id, key=key, value=want))
        before[flavor.name] = {key: have} if have is not None else {}
        after[flavor.name] = {key: want} if want is not None else {}
    return base.Plan(tuple(ops), before=before, after=after)


@dataclass(frozen=True)
class SeparationPlan(base.Plan[Union[HostOp, FlavorOp]]):
    """The hosts' plan and the flavors' plan, run in that order (hosts first: a flavor that forbids
    the trait before any host has it excludes nothing, one that requires it would find no host)."""

    hosts: base.Plan[HostOp] = base.Plan(())
    flavors: base.Plan[FlavorOp] = base.Plan(())
    separation: Separation = Separation()

    def diff(self) -> dict[str, Any]:
        """Ansible's diff: the hosts' and the flavors' before and after."""
        return {
            "before": {"hosts": self.hosts.before, "flavors": self.flavors.before},
            "after": {"hosts": self.hosts.after, "flavors": self.flavors.after},
        }

    def to_dict(self) -> dict[str, Any]:
        """The plan's dict plus the separation's dict."""
        return {**super().to_dict(), "separation": self.separation.to_dict()}


def combine(sep: Separation, hosts: base.Plan[HostOp], flavors: base.Plan[FlavorOp]) -> SeparationPlan:
    """The plan of both: the hosts' ops then the flavors' (the order they run in), each plan kept, with ``sep``."""
    return SeparationPlan(ops=(*hosts.ops, *flavors.ops), hosts=hosts, flavors=flavors, separation=sep)
