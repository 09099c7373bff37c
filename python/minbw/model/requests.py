"""What is asked of Placement: request groups, a port's resource request, a server's request.

``RequestGroup`` and ``PortRequest`` read and write Neutron's ``resource_request`` (both formats);
``ServerRequest`` is a flavor plus QoS ports, read as Nova reads them. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from minbw.errors import RequestError

# How the network part of a port's bandwidth group was built.
MODE_NEUTRON = "neutron"  # exactly Neutron's request (first segment only)
MODE_ANY_TRAITS = "any-traits"  # required=in:A,B over all segments (Placement 1.39)

# nova.scheduler.utils.ResourceRequest.XS_KEYPAT
_EXTRA_SPEC = re.compile(r"^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)$")


@dataclass(frozen=True)
class RequestGroup:
    """One request group; ``id`` is its Placement suffix ("" for the unsuffixed group)."""

    id: str
    resources: tuple[tuple[str, int], ...] = ()
    required: tuple[str, ...] = ()
    # each inner tuple is one "required=in:A,B": at least one of them
    required_any: tuple[tuple[str, ...], ...] = ()
    forbidden: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        res = self.resources.items() if isinstance(self.resources, Mapping) else self.resources
        object.__setattr__(self, "resources", tuple(sorted((str(k), v) for k, v in res)))
        # required keeps Neutron's order (network trait, then vnic trait) so to_neutron() is exact
        object.__setattr__(self, "required", tuple(dict.fromkeys(self.required)))
        object.__setattr__(self, "required_any", tuple(tuple(sorted(set(a))) for a in self.required_any))
        object.__setattr__(self, "forbidden", tuple(sorted(set(self.forbidden))))

    @property
    def resource_dict(self) -> dict[str, int]:
        """The group's resources as ``{class: amount}``."""
        return dict(self.resources)

    def trait_problem(self, traits: set[str] | frozenset[str]) -> str:
        """Why a provider with ``traits`` cannot serve this group's traits ("" when it can)."""
        missing = [t for t in self.required if t not in traits]
        if missing:
            return f"lacks trait(s) {', '.join(missing)}"
        bad = sorted(set(self.forbidden) & set(traits))
        if bad:
            return f"has forbidden trait(s) {', '.join(bad)}"
        for any_of in self.required_any:
            if not set(traits).intersection(any_of):
                return f"has none of {', '.join(any_of)}"
        return ""

    def to_neutron(self) -> dict[str, Any]:
        """The group as one of Neutron's ``request_groups``: ``id``, ``required``, ``resources``; plus ``required_any``
        (not Neutron's) when it has any-traits."""
        out: dict[str, Any] = {"id": self.id, "required": list(self.required), "resources": self.resource_dict}
        if self.required_any:
            # Not Neutron's: Neutron has no any-traits yet; from_neutron() reads it back.
            out["required_any"] = [list(a) for a in self.required_any]
        return out

    @classmethod
    def from_neutron(cls, group: Mapping[str, Any], group_id: str | None = None, where: str = "") -> RequestGroup:
        """A group from one of Neutron's ``request_groups`` (``group_id`` when it has no ``id``; ``where`` prefixes the
        messages). Raises RequestError when it has no id, its resources are not classes to non-negative integers or its
        required traits not a list of names."""
        gid = group.get("id", group_id)
        if not gid or not isinstance(gid, str):
            raise RequestError(
                f"{where}request group without an 'id'. Fix: pass the port's "
                f"resource_request exactly as Neutron returns it."
            )
        resources = group.get("resources")
        if not isinstance(resources, Mapping) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in resources.values()
        ):
            raise RequestError(
                f"{where}group {gid}: 'resources' must map resource classes to "
                f"non-negative integers, got {resources!r}."
            )
        required = group.get("required", [])
        if isinstance(required, str) or not all(isinstance(t, str) for t in required):
            raise RequestError(f"{where}group {gid}: 'required' must be a list of trait names, got {required!r}.")
        return cls(
            id=gid,
            resources=tuple(resources.items()),
            required=tuple(required),
            required_any=tuple(tuple(a) for a in group.get("required_any", ())),
        )


@dataclass(frozen=True)
class PortRequest:
    """A port's resource request: its groups and ``same_subtree``.

    ``legacy`` says the port speaks the single-group format (``binding:profile.allocation``
    is then one provider uuid); ``mode`` and ``notes`` say how the request was built.
    """

    port_id: str | None
    groups: tuple[RequestGroup, ...]
    same_subtree: tuple[str, ...] = ()
    legacy: bool = False
    mode: str = MODE_NEUTRON
    notes: tuple[str, ...] = field(default=(), compare=False)

    def to_neutron(self) -> dict[str, Any] | None:
        """The request in Neutron's request_groups format (``request_groups``, ``same_subtree``), None when it has no
        groups."""
        if not self.groups:
            return None
        return {"request_groups": [g.to_neutron() for g in self.groups], "same_subtree": list(self.same_subtree)}

    def to_legacy(self) -> dict[str, Any] | None:
        """The request in the legacy single-group format (``required``, ``resources``), None when it has no groups.
        Raises RequestError when it has more than one group or any-traits."""
        if not self.groups:
            return None
        if len(self.groups) > 1 or self.groups[0].required_any:
            raise RequestError(
                f"port {self.port_id}: the legacy resource_request format holds one group of "
                f"required traits; this request has {len(self.groups)} group(s)"
                f"{' and any-traits' if self.groups[0].required_any else ''}. Fix: use the "
                f"request_groups format (Neutron extension port-resource-request-groups)."
            )
        g = self.groups[0]
        return {"required": list(g.required), "resources": g.resource_dict}

    def view(self) -> dict[str, Any]:
        """Both formats (legacy None where it cannot hold the request), how it was built and notes."""
        try:
            legacy = self.to_legacy()
        except RequestError:
            legacy = None
        return {"resource_request": self.to_neutron(), "legacy": legacy, "mode": self.mode, "notes": list(self.notes)}

    @classmethod
    def from_neutron(cls, value: Mapping[str, Any] | None, port_id: str | None = None) -> PortRequest | None:
        """Read a port's ``resource_request`` in either format; None means no request."""
        if value is None:
            return None
        where = f"port {port_id}: " if port_id else ""
        if not isinstance(value, Mapping):
            raise RequestError(f"{where}resource_request must be an object or null, got {value!r}.")
        if "request_groups" in value:
            groups = tuple(RequestGroup.from_neutron(g, where=where) for g in value["request_groups"])
            ids = [g.id for g in groups]
            if len(set(ids)) != len(ids):
                raise RequestError(f"{where}duplicate request group ids {ids}.")
            subtree = tuple(value.get("same_subtree") or ())
            unknown = set(subtree) - set(ids)
            if unknown:
                raise RequestError(
                    f"{where}same_subtree names groups that are not in request_groups: {sorted(unknown)}."
                )
            if not groups:
                return None
            mode = MODE_ANY_TRAITS if any(g.required_any for g in groups) else MODE_NEUTRON
            return cls(port_id=port_id, groups=groups, same_subtree=subtree, mode=mode)
        if "resources" in value:
            if not port_id:
                # Nova uses the port id as the suffix of a legacy group; without it there is no id.
                raise RequestError(
                    "a legacy resource_request (no request_groups) has no group id: "
                    "Nova names the group after the port. Fix: give the port's id (--port-request "
                    "PORT_ID=FILE; the modules' port_id), or the request in the extended format "
                    "(request_groups), whose groups have their own ids."
                )
            return cls(port_id=port_id, groups=(RequestGroup.from_neutron(value, port_id, where),), legacy=True)
        raise RequestError(f"{where}resource_request has neither 'request_groups' nor 'resources': {value!r}.")


def request_view(request: PortRequest | None) -> dict[str, Any]:
    """:meth:`PortRequest.view`, or its empty shape for a port without minimum rules."""
    if request is None:
        return {"resource_request": None, "legacy": None, "mode": None, "notes": []}
    return request.view()


def port_request_of(value: Mapping[str, Any] | PortRequest) -> PortRequest | None:
    """A port's request from ``{"port_id"|"id": ..., "resource_request": {...}}`` (either format)."""
    if isinstance(value, PortRequest):
        return value
    if not isinstance(value, Mapping) or "resource_request" not in value:
        raise RequestError(f"a port request needs 'resource_request' (and 'port_id' or 'id'), got {value!r}")
    return PortRequest.from_neutron(value["resource_request"], port_id=value.get("port_id") or value.get("id"))


def flavor_amounts(extra_specs: Mapping[str, str] | None) -> dict[str, int]:
    """Every class a flavor's extra specs request (``resources[SUFFIX]:CLASS=N``), summed over its
    groups, as the server's allocation holds them. Amounts that are not whole numbers are left out
    (Nova refuses them at boot, so no server holds them)."""
    out: dict[str, int] = {}
    for key, value in (extra_specs or {}).items():
        m = _EXTRA_SPEC.match(key)
        if m and m.group(1) == "resources":
            try:
                amount = int(value)
            except (TypeError, ValueError):
                continue
            if amount:
                out[m.group(3)] = out.get(m.group(3), 0) + amount
    return out


def _pairs(value: Mapping[str, int] | Iterable[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted((str(k), v) for k, v in items))


@dataclass(frozen=True)
class ServerRequest:
    """What a server asks for: flavor resources and traits, QoS ports, request-wide filters.

    ``extra_resources`` are the flavor's ``resources:CLASS`` extra specs: they override
    vcpus/memory_mb/disk_gb, PCPU replaces VCPU, and 0 removes a class (Nova's rules).
    ``flavor_groups`` are the flavor's granular groups (``resources<S>:``/``trait<S>:``, numbered or
    string-suffixed), every one the flavor names, empty ones included (Nova counts them for the
    group_policy default); ``device_groups`` are other groups from outside the flavor with their own
    ids (Cyborg device profiles). ``group_policy`` None is Nova's default
    (``nova.scheduler.utils.resources_from_request_spec``): "none" when there are two or more
    suffixed groups and the flavor defines at most one of them, else not sent.
    ``member_of`` is an AND of ORs (each inner tuple one ``member_of=in:A,B``, kept with any
    repeats as Nova sends them); ``minbw.nova.scheduler.query`` builds one the way Nova 34 does.
    """

    vcpus: int = 0
    memory_mb: int = 0
    disk_gb: int = 0
    extra_resources: tuple[tuple[str, int], ...] = ()
    required: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    ports: tuple[PortRequest, ...] = ()
    group_policy: str | None = None
    root_required: tuple[str, ...] = ()
    root_forbidden: tuple[str, ...] = ()
    # AND of ORs: each inner tuple is one member_of=in:A,B
    member_of: tuple[tuple[str, ...], ...] = ()
    # member_of=!in:A,B (Placement 1.32): in none of these aggregates
    forbidden_member_of: tuple[str, ...] = ()
    in_tree: str | None = None
    limit: int | None = None
    flavor_groups: tuple[RequestGroup, ...] = ()
    device_groups: tuple[RequestGroup, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra_resources", _pairs(self.extra_resources))
        for name in ("required", "forbidden", "root_required", "root_forbidden", "forbidden_member_of"):
            object.__setattr__(self, name, tuple(sorted(set(getattr(self, name)))))
        object.__setattr__(self, "ports", tuple(p for p in self.ports if p is not None))
        object.__setattr__(self, "member_of", tuple(tuple(sorted(m)) for m in self.member_of))
        object.__setattr__(self, "flavor_groups", tuple(self.flavor_groups))
        object.__setattr__(self, "device_groups", tuple(self.device_groups))

    @classmethod
    def from_options(
        cls,
        resources: Mapping[str, int] | None = None,
        required: Iterable[str] | None = (),
        port_requests: Iterable[Mapping[str, Any] | PortRequest] | None = (),
        *,
        group_policy: str | None = None,
        in_tree: str | None = None,
        root_required: Iterable[str] | None = (),
        limit: int | None = None,
    ) -> ServerRequest:
        """From plain data (CLI options, module parameters): flavor resources by class, and the
        ports as ``{"port_id"|"id": ..., "resource_request": {...}}`` (either Neutron format)."""
        ports = tuple(p for p in (port_request_of(v) for v in port_requests or ()) if p)
        amounts: dict[str, int] = {}
        for rc, amount in (resources or {}).items():
            try:
                amounts[rc] = int(amount)
            except (TypeError, ValueError):
                raise RequestError(f"resources: {rc}: expected a whole number, got {amount!r}.") from None
        return cls(
            extra_resources=tuple(amounts.items()),
            required=tuple(required or ()),
            ports=ports,
            group_policy=group_policy,
            in_tree=in_tree,
            root_required=tuple(root_required or ()),
            limit=limit,
        )

    @classmethod
    def from_flavor(
        cls,
        flavor: Mapping[str, Any],
        ports: Iterable[PortRequest] = (),
        *,
        boot_from_volume: bool = False,
        **kwargs: Any,
    ) -> ServerRequest:
        """From a Nova API flavor (``vcpus``, ``ram``, ``disk``, ``OS-FLV-EXT-DATA:ephemeral``,
        ``swap``, ``extra_specs``) as Nova's ResourceRequest.from_request_spec reads it."""
        specs = flavor.get("extra_specs") or {}
        extra: dict[str, int] = {}
        required: list[str] = []
        forbidden: list[str] = []
        policy = specs.get("group_policy")
        for key, value in specs.items():
            m = _EXTRA_SPEC.match(key)
            if not m:
                continue
            prefix, suffix, name = m.groups()
            if suffix:
                raise RequestError(
                    f"flavor extra spec {key!r}: suffixed groups in flavors are not "
                    f"supported here. Fix: use unsuffixed resources:/trait: specs."
                )
            if prefix == "resources":
                try:
                    extra[name] = int(value)
                except ValueError:
                    raise RequestError(f"flavor extra spec {key}={value!r}: not an integer.") from None
            elif value in ("required", "forbidden"):
                (required if value == "required" else forbidden).append(name)
            else:
                raise RequestError(f"flavor extra spec {key}={value!r}: expected 'required' or 'forbidden'.")
        swap_gb = -(-int(flavor.get("swap") or 0) // 1024)  # Nova rounds swap MB up to GB
        disk = int(flavor.get("OS-FLV-EXT-DATA:ephemeral") or flavor.get("ephemeral") or 0) + swap_gb
        if not boot_from_volume:
            disk += int(flavor.get("disk") or 0)
        kwargs.setdefault("group_policy", policy)
        return cls(
            vcpus=int(flavor.get("vcpus") or 0),
            memory_mb=int(flavor.get("ram") or 0),
            disk_gb=disk,
            extra_resources=tuple(extra.items()),
            required=tuple(required),
            forbidden=tuple(forbidden),
            ports=tuple(ports),
            **kwargs,
        )

    def without_forbidden(self, traits: Iterable[str]) -> ServerRequest:
        """This request without forbidding ``traits`` (flavor and root): forbidding a trait that does not
        exist excludes nothing, but Placement refuses a query naming it (400)."""
        drop = set(traits)
        return dataclasses.replace(
            self,
            forbidden=tuple(t for t in self.forbidden if t not in drop),
            root_forbidden=tuple(t for t in self.root_forbidden if t not in drop),
        )

    def flavor_resources(self) -> dict[str, int]:
        """The unsuffixed group's resources (Nova's ResourceRequest.from_request_spec): vcpus, memory_mb
        and disk_gb only for classes no group of the request names (zero amounts included), PCPU anywhere
        replacing VCPU; zero amounts stripped."""
        import os_resource_classes as orc

        extra = dict(self.extra_resources)
        named = (
            set(extra)
            | {rc for g in (*self.flavor_groups, *self.device_groups) for rc, _amount in g.resources}
            | {rc for p in self.ports for g in p.groups for rc, _amount in g.resources}
        )
        res = dict(extra)
        if orc.VCPU not in named and orc.PCPU not in named:
            res[orc.VCPU] = self.vcpus
        if orc.MEMORY_MB not in named:
            res[orc.MEMORY_MB] = self.memory_mb
        if orc.DISK_GB not in named:
            res[orc.DISK_GB] = self.disk_gb
        return {rc: amount for rc, amount in sorted(res.items()) if amount}

    def request_groups(self) -> tuple[RequestGroup, ...]:
        """Every group sent to Placement: unsuffixed ("") first, then the flavor's granular groups, the
        device groups and the ports' groups; zero amounts stripped and groups left with nothing dropped,
        as Nova's ResourceRequest.strip_zeros does."""
        return self._groups

    @cached_property
    def _groups(self) -> tuple[RequestGroup, ...]:
        # cached: the query, the solver and the mapping of every candidate all ask for it
        groups: list[RequestGroup] = []
        flavor = self.flavor_resources()
        if flavor or self.required or self.forbidden:
            groups.append(RequestGroup("", tuple(flavor.items()), self.required, forbidden=self.forbidden))
        for g in (*self.flavor_groups, *self.device_groups, *(g for port in self.ports for g in port.groups)):
            stripped = RequestGroup(
                g.id, tuple((rc, a) for rc, a in g.resources if a), g.required, g.required_any, g.forbidden
            )
            if stripped.resources or stripped.required or stripped.required_any or stripped.forbidden:
                groups.append(stripped)
        return tuple(groups)

    def same_subtree(self) -> tuple[tuple[str, ...], ...]:
        """The ``same_subtree`` lists Nova sends: each port's, as Neutron gives it (a one-group list too),
        its suffixes sorted (nova.scheduler.utils.ResourceRequest.to_querystring)."""
        return tuple(tuple(sorted(p.same_subtree)) for p in self.ports if p.same_subtree)

    def same_subtrees(self) -> tuple[tuple[str, ...], ...]:
        """Each port's same_subtree, minus one-group lists of groups with resources (always true)."""
        return self._same_subtrees

    @cached_property
    def _same_subtrees(self) -> tuple[tuple[str, ...], ...]:
        # cached for the same reason as _groups: asked once per candidate when mapping
        resourceless = {g.id for g in self.request_groups() if not g.resources}
        out: list[tuple[str, ...]] = []
        for port in self.ports:
            ids = tuple(sorted(set(port.same_subtree)))
            if len(ids) > 1 or (ids and ids[0] in resourceless):
                out.append(ids)
        return tuple(out)

    def effective_group_policy(self) -> str | None:
        """Nova's (resources_from_request_spec): the flavor's policy; else, with two or more suffixed
        groups, "none" when the flavor defines at most one of them (the others come from ports), and
        nothing when it defines more (Placement then refuses the query: the flavor must say)."""
        if self.group_policy is not None:
            return self.group_policy
        numbered = [g for g in self.request_groups() if g.id]
        return "none" if len(numbered) > 1 and len(self.flavor_groups) <= 1 else None
