"""Resource providers: as Placement returns them, as Neutron would create them, and their inventories.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Optional

from ..errors import RequestError


@dataclass(frozen=True)
class Provider:
    uuid: str
    name: str
    generation: int
    parent_uuid: str | None
    root_uuid: str

    @classmethod
    def from_api(cls, body: Mapping[str, Any]) -> "Provider":
        """A provider from Placement's body; without ``root_provider_uuid`` (before 1.14) it is its own root."""
        return cls(
            uuid=body["uuid"],
            name=body["name"],
            generation=body["generation"],
            parent_uuid=body.get("parent_provider_uuid"),
            root_uuid=body.get("root_provider_uuid") or body["uuid"],
        )

    def identity(self) -> dict[str, Any]:
        """uuid, name and generation, as the reports' dicts begin."""
        return {"uuid": self.uuid, "name": self.name, "generation": self.generation}


@dataclass(frozen=True)
class ProviderDetail:
    """A provider with what was read about it: traits, inventories (as Placement returns them; empty
    when not read), usages (None when not read) and allocations (consumer → ``{"resources": ...}`` as Placement
    returns them; None when not read). ``unmoved``: the reads saw the listing's generation."""

    provider: Provider
    traits: frozenset[str]
    inventories: Mapping[str, Mapping[str, Any]]
    usages: Mapping[str, int] | None
    unmoved: bool
    allocations: Mapping[str, Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class ProviderReport:
    """A provider as ``providers show`` reports it: its traits (sorted), inventories (as Placement returns them)
    and usages."""

    provider: Provider
    traits: tuple[str, ...]
    inventories: Mapping[str, Mapping[str, Any]]
    usages: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: uuid, name, generation, root_provider_uuid, parent_provider_uuid, traits, inventories
        and usages."""
        p = self.provider
        return {
            **p.identity(),
            "root_provider_uuid": p.root_uuid,
            "parent_provider_uuid": p.parent_uuid,
            "traits": list(self.traits),
            "inventories": dict(self.inventories),
            "usages": dict(self.usages),
        }


# os_traits.MISC_SHARES_VIA_AGGREGATE: a provider whose inventory serves every tree with a provider in one of
# its aggregates (Placement's sharing providers)
SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
# The traits every nova-compute (Nova 34) reports on its compute node's root provider whatever its driver
# (nova/compute/resource_tracker.py, ResourceTracker._get_traits): a root minbw creates in a nova-compute's stead
# (create_root) gets them, so that Nova's scheduling query (root_required=OWNER_NOVA) finds it as Nova's own.
COMPUTE_NODE, OWNER_NOVA = "COMPUTE_NODE", "OWNER_NOVA"
NOVA_ROOT_TRAITS = (COMPUTE_NODE, OWNER_NOVA)
MAX_INT = 2147483647
# What Placement fills in for fields an inventory leaves out (placement.handlers.inventory).
PLACEMENT_INVENTORY_DEFAULTS = MappingProxyType(
    {"reserved": 0, "min_unit": 1, "max_unit": MAX_INT, "step_size": 1, "allocation_ratio": 1.0}
)
INVENTORY_FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio")


_FIELDS = frozenset(INVENTORY_FIELDS)
_STORED_TYPES = (int, int, int, int, int, float)  # of INVENTORY_FIELDS, as Placement stores them


def normalize_inventory(inv: Mapping[str, Any]) -> dict[str, Any]:
    """An inventory as Placement stores it: every field present, ratio a float (a copy)."""
    # as Placement stores it already (its answers, the cache's entries): copied
    if inv.keys() == _FIELDS and tuple(map(type, map(inv.__getitem__, INVENTORY_FIELDS))) == _STORED_TYPES:
        return dict(inv)
    full = {**PLACEMENT_INVENTORY_DEFAULTS, **{k: v for k, v in inv.items() if k in INVENTORY_FIELDS}}
    full["allocation_ratio"] = float(full["allocation_ratio"])
    for k in ("total", "reserved", "min_unit", "max_unit", "step_size"):
        full[k] = int(full[k])
    return full


SQL_FLOAT_MAX = 3.40282e38  # placement.db.constants.SQL_SP_FLOAT_MAX


def inventory_problems(inv: Mapping[str, Any]) -> list[str]:
    """Why Placement (microversion >= 1.26) would refuse this inventory; empty when it accepts it."""
    problems = []
    for key, low in (("total", 1), ("reserved", 0), ("min_unit", 1), ("max_unit", 1), ("step_size", 1)):
        if not low <= inv[key] <= MAX_INT:
            problems.append(f"{key} must be between {low} and {MAX_INT}, got {inv[key]}")
    if inv["allocation_ratio"] > SQL_FLOAT_MAX:
        problems.append(f"allocation_ratio must be at most {SQL_FLOAT_MAX}, got {inv['allocation_ratio']}")
    elif not problems and (inv["total"] - inv["reserved"]) * inv["allocation_ratio"] < 0:
        problems.append(f"reserved ({inv['reserved']}) is greater than total ({inv['total']})")
    return problems


def usages_of(inventories: Mapping[str, Any], allocations: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """A provider's usage as Placement's ``GET /resource_providers/{uuid}/usages`` answers it, from its inventories
    and its allocations (consumer → ``{"resources": {class: amount}}``) read at one generation: each class of the
    inventories, in their order, with the sum of its allocations (0 when none); a class without inventory is left
    out, as Placement's query of the inventories leaves it out
    (tests/functional/test_usage_after_delete.py compares the two)."""
    used = dict.fromkeys(inventories, 0)
    for allocation in allocations.values():
        for rc, amount in allocation["resources"].items():
            if rc in used:
                used[rc] += amount
    return used


def freeze_inventories(invs: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Mapping[str, Any]]:
    """Read-only copies of ``invs`` by class (classes sorted), each normalized as Placement stores it
    (:func:`normalize_inventory`)."""
    return MappingProxyType({rc: MappingProxyType(normalize_inventory(inv)) for rc, inv in sorted(invs.items())})


def thaw_inventories(invs: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    # a dict's or a frozen view's copy is a dict, made faster than dict() makes it of a view
    """A copy of ``invs`` as a dict of dicts (from dicts or frozen views), by class; the fields as given, not
    normalized."""
    return {
        # type() rather than isinstance(): a subclass's copy() need not be a dict
        rc: inv.copy() if type(inv) in _COPYABLE else dict(inv)  # type: ignore[attr-defined]  # dict, mappingproxy
        for rc, inv in invs.items()
    }


_COPYABLE = (dict, MappingProxyType)
# what a snapshot is made of: name, parent, traits, inventories
_Source = tuple[str, Optional[str], Optional[Iterable[str]], Optional[Mapping[str, Mapping[str, Any]]]]


def snapshot(
    name: str, parent: str | None, traits: Iterable[str] | None, inventories: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, Any]:
    """A provider as its plans and reports compare it: name, parent, traits, inventories (no generation)."""
    return {
        "name": name,
        "parent_provider_uuid": parent,
        "traits": sorted(traits or ()),
        "inventories": thaw_inventories(inventories or {}),
    }


class Snapshots(Mapping[str, dict[str, Any]]):
    """uuid → :func:`snapshot`, each made when first read: a plan of 60,000 providers of which few change
    copies few (:meth:`add` takes what a snapshot is made of; :meth:`source` gives it back, uncopied)."""

    def __init__(self) -> None:
        self._source: dict[str, _Source] = {}
        self._made: dict[str, dict[str, Any]] = {}

    def add(
        self,
        uuid: str,
        name: str,
        parent: str | None,
        traits: Iterable[str] | None,
        inventories: Mapping[str, Mapping[str, Any]] | None,
    ) -> None:
        """Records what ``uuid``'s snapshot is made of (a snapshot made before is made again when read). Returns
        None."""
        self._source[uuid] = (name, parent, traits, inventories)
        if self._made:  # made before: made again when read
            self._made.pop(uuid, None)

    def source(self, uuid: str) -> _Source:
        """(name, parent, traits, inventories) of ``uuid``, as added."""
        return self._source[uuid]

    def __getitem__(self, uuid: str) -> dict[str, Any]:
        made = self._made.get(uuid)
        if made is None:
            made = self._made[uuid] = snapshot(*self._source[uuid])
        return made

    def __contains__(self, uuid: object) -> bool:
        return uuid in self._source

    def __iter__(self) -> Iterator[str]:
        return iter(self._source)

    def __len__(self) -> int:
        return len(self._source)

    def __repr__(self) -> str:
        return f"Snapshots({len(self)} providers)"


@dataclass(frozen=True)
class ProviderSpec:
    """One resource provider as Neutron would create it.

    ``parent_uuid`` is None for an agent provider, whose parent is the root
    provider named ``hypervisor`` (found in Placement by name).
    """

    uuid: str
    name: str
    hypervisor: str
    kind: str
    role: str  # "agent" | "device"
    parent_uuid: str | None
    traits: frozenset[str]
    inventories: Mapping[str, Mapping[str, Any]]
    device: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: uuid, name, hypervisor, kind, role, device, ``parent_provider_uuid``, traits (sorted) and
        inventories."""
        return {
            "uuid": self.uuid,
            "name": self.name,
            "hypervisor": self.hypervisor,
            "kind": self.kind,
            "role": self.role,
            "device": self.device,
            "parent_provider_uuid": self.parent_uuid,
            "traits": sorted(self.traits),
            "inventories": thaw_inventories(self.inventories),
        }


def unit_subject(name: str) -> str:
    """How a skipped line names a unit (kind and name): ``chassis NAME`` for an OVN chassis (its unit name
    ``chassis NAME (SOURCE)``), ``agent agents[N]`` for an agent given as option values, ``ini file PATH``."""
    if name.startswith("chassis "):
        return name.split(" (", 1)[0]
    if re.fullmatch(r"\w+\[\d+\]", name):
        return f"agent {name}"
    return f"ini file {name}"


def skipped_line(subject: str, host: str | None, what: str, fix: str) -> str:
    """The one line of a unit that gets no writes, the same for every kind of unit:
    ``<unit kind> <unit name> (host <host>): <what is wrong>. Fix: <the fix>``."""
    what = what.strip().rstrip(".")
    fix = fix.strip().rstrip(".")
    return f"{subject} (host {host or 'unknown'}): {what}. Fix: {fix}"


def error_line(subject: str, host: str | None, error: Exception) -> str:
    """:func:`skipped_line` of a ConfigError: its option and message, and its fix (or: correct the option)."""
    option = getattr(error, "option", None)
    message, _sep, said = (getattr(error, "neutron_message", None) or str(error)).partition(" Fix: ")
    fix = getattr(error, "fix", None) or said or (f"correct {option}" if option else "correct the configuration")
    return skipped_line(subject, host, f"{option + ': ' if option else ''}{message}", fix)


def natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """Sorts ``agents[2]`` before ``agents[10]`` and ``compute-9`` before ``compute-10``."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text))


@dataclass(frozen=True)
class Unit:
    """One agent configuration or OVN chassis of a sync: where it comes from (``name``: the ini file, the
    option dict, ``chassis NAME (source)``), its kind, host and hypervisors, and, when it gets no writes, why
    (``skipped``: the problem and its fix)."""

    name: str
    kind: str
    host: str | None = None
    hypervisors: tuple[str, ...] = ()
    skipped: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``unit`` (its name), kind, host, hypervisors and ``skipped`` (None when the unit gets
        writes)."""
        return {
            "unit": self.name,
            "kind": self.kind,
            "host": self.host,
            "hypervisors": list(self.hypervisors),
            "skipped": self.skipped or None,
        }


@dataclass(frozen=True)
class DesiredState:
    providers: tuple[ProviderSpec, ...]
    traits: frozenset[str]  # custom traits Neutron ensures exist (PUT /traits/X)
    # (hypervisor, agent provider uuid) whose device providers not in ``providers`` are stale even when
    # the agent provider itself is not desired (an OVN chassis whose bandwidth options were removed)
    sweep: frozenset[tuple[str, str]] = frozenset()
    # agent kinds the configuration describes completely (every OVN chassis, read from the southbound
    # database): every agent provider of theirs in Placement is swept
    sweep_kinds: frozenset[str] = frozenset()
    warnings: tuple[str, ...] = ()  # what Neutron would silently skip in the configuration
    # every configuration and chassis, the skipped ones with why (a skipped unit gets no writes; the others do)
    units: tuple[Unit, ...] = ()
    # agent providers a skipped unit may own: their children that no planned unit describes are left alone
    unswept: frozenset[str] = frozenset()
    # each unit on its own: a hypervisor without its compute node's root is skipped (named), not refused
    isolated: bool = False

    @property
    def skipped(self) -> tuple[Unit, ...]:
        """The units that get no writes, sorted as their lines are: by kind, then name (``agents[2]`` before
        ``agents[10]``)."""
        return tuple(sorted((u for u in self.units if u.skipped), key=lambda u: natural_key(u.skipped)))

    @property
    def hypervisors(self) -> tuple[str, ...]:
        """The desired providers' hypervisors, sorted, each once."""
        return tuple(sorted({p.hypervisor for p in self.providers}))

    @property
    def looked_up(self) -> tuple[str, ...]:
        """Hypervisors whose trees a sync reads: the desired ones and those swept."""
        return tuple(sorted({p.hypervisor for p in self.providers} | {hyp for hyp, agent in self.sweep}))

    @property
    def agent_uuids(self) -> frozenset[str]:
        """The agent providers whose children a sync owns: desired agents and swept ones."""
        return frozenset({p.uuid for p in self.providers if p.role == "agent"} | {agent for hyp, agent in self.sweep})

    def by_uuid(self) -> dict[str, ProviderSpec]:
        """The desired providers keyed by uuid."""
        return {p.uuid: p for p in self.providers}


@dataclass(frozen=True)
class Stock:
    """One inventory of one provider, with its usage."""

    provider: str
    resource_class: str
    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    used: int

    @property
    def capacity(self) -> int:
        """What can be allocated in all: (total - reserved) × allocation_ratio, as an int."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    @property
    def free(self) -> int:
        """The capacity less ``used``, never below 0."""
        return max(self.capacity - self.used, 0)

    def refuses(self, amount: int) -> str:
        """Why one allocation of ``amount`` is refused whatever the usage ("" when it is accepted)."""
        if amount < self.min_unit:
            return f"{amount} is below min_unit {self.min_unit}"
        if amount > self.max_unit:
            return f"{amount} is above max_unit {self.max_unit}"
        if amount % self.step_size:
            return f"{amount} is not a multiple of step_size {self.step_size}"
        return ""

    def copies(self, amount: int) -> int:
        """How many more allocations of ``amount`` fit in :attr:`free`; 0 when one is refused (:meth:`refuses`)."""
        return 0 if self.refuses(amount) else self.free // amount


def stocks_of(
    provider: str, inventories: Mapping[str, Mapping[str, Any]] | None, usages: Mapping[str, int] | None
) -> dict[str, Stock]:
    """A provider's inventories (as Placement returns them) with their usages, by class."""
    usages = usages or {}
    out: dict[str, Stock] = {}
    for rc, inv in (inventories or {}).items():
        full = normalize_inventory(inv)
        out[rc] = Stock(
            provider,
            rc,
            full["total"],
            full["reserved"],
            full["min_unit"],
            full["max_unit"],
            full["step_size"],
            full["allocation_ratio"],
            int(usages.get(rc, 0)),
        )
    return out


def root_inventories(values: Mapping[str, Any] | None, option: str = "root_inventories") -> dict[str, dict[str, Any]]:
    """A compute root's inventories from ``{CLASS: total}`` or ``{CLASS: {inventory fields}}``."""
    inventories: dict[str, dict[str, Any]] = {}
    for rc, value in (values or {}).items():
        try:
            inventories[rc] = dict(value) if isinstance(value, Mapping) else {"total": int(value)}
        except (TypeError, ValueError):
            raise RequestError(
                f"{option}: {rc}: expected a total or a dict of inventory fields, got {value!r}"
            ) from None
    return inventories
