"""A server's request (flavor + ports) as ONE ``GET /allocation_candidates`` query.

Pure: no I/O. The query follows Nova's ``ResourceRequest.to_querystring`` (flavor in the
unsuffixed group, one group per port request group suffixed with its id, ``same_subtree``
per port, zero amounts stripped) at the lowest microversion that expresses it; the tests
feed every query to Placement's own parser.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import urlencode

import os_resource_classes as orc

from minbw.errors import MicroversionUnsupported, RequestError
from minbw.request import PortRequest, RequestGroup

Microversion = tuple[int, int]

# Below 1.29 candidates ignore nested providers and summaries lack parent/root uuids.
MIN_MICROVERSION: Microversion = (1, 29)
IN_TREE: Microversion = (1, 31)
STRING_SUFFIXES: Microversion = (1, 33)
MAPPINGS: Microversion = (1, 34)
ROOT_REQUIRED: Microversion = (1, 35)
SAME_SUBTREE: Microversion = (1, 36)  # also: groups without resources
ANY_TRAITS: Microversion = (1, 39)    # also: repeating required{S}

# placement/schemas/common.py GROUP_PAT / GROUP_PAT_1_33
_NUMERIC_SUFFIX = re.compile(r"^[1-9][0-9]*$")
_STRING_SUFFIX = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# Trait and class names: anything else would break the comma/"!"/"in:" syntax of the query.
_NAME = re.compile(r"^[A-Z0-9_]{1,255}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
GROUP_POLICIES = ("none", "isolate")
# nova.scheduler.utils.ResourceRequest.XS_KEYPAT
_EXTRA_SPEC = re.compile(r"^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)$")


def parse_microversion(value: str | Microversion) -> Microversion:
    """``"1.36"`` (or ``"placement 1.36"``, or ``(1, 36)``) -> ``(1, 36)``."""
    if isinstance(value, tuple):
        return value
    text = str(value).strip()
    if text.lower().startswith("placement "):
        text = text[len("placement "):].strip()
    m = re.fullmatch(r"(\d+)\.(\d+)", text)
    if not m:
        raise ValueError(f"not a microversion: {value!r} (expected MAJOR.MINOR, e.g. 1.36)")
    return int(m.group(1)), int(m.group(2))


def format_microversion(value: str | Microversion) -> str:
    major, minor = parse_microversion(value)
    return f"{major}.{minor}"


def microversion_at_least(have: str | Microversion, want: str | Microversion) -> bool:
    return parse_microversion(have) >= parse_microversion(want)


def _pairs(value) -> tuple:
    items = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted((str(k), v) for k, v in items))


@dataclass(frozen=True)
class ServerRequest:
    """What a server asks for: flavor resources and traits, QoS ports, request-wide filters.

    ``extra_resources`` are the flavor's ``resources:CLASS`` extra specs: they override
    vcpus/memory_mb/disk_gb, PCPU replaces VCPU, and 0 removes a class (Nova's rules).
    ``group_policy`` None is Nova's default: "none" when there is more than one numbered
    group, else not sent.
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
    in_tree: str | None = None
    limit: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "extra_resources", _pairs(self.extra_resources))
        for name in ("required", "forbidden", "root_required", "root_forbidden"):
            object.__setattr__(self, name, tuple(sorted(set(getattr(self, name)))))
        object.__setattr__(self, "ports", tuple(p for p in self.ports if p is not None))
        object.__setattr__(self, "member_of", tuple(tuple(sorted(set(m))) for m in self.member_of))

    @classmethod
    def from_flavor(cls, flavor: Mapping, ports=(), *, boot_from_volume: bool = False,
                    **kwargs) -> ServerRequest:
        """From a Nova API flavor (``vcpus``, ``ram``, ``disk``, ``OS-FLV-EXT-DATA:ephemeral``,
        ``swap``, ``extra_specs``) as Nova's ResourceRequest.from_request_spec reads it."""
        specs = flavor.get("extra_specs") or {}
        extra, required, forbidden = {}, [], []
        policy = specs.get("group_policy")
        for key, value in specs.items():
            m = _EXTRA_SPEC.match(key)
            if not m:
                continue
            prefix, suffix, name = m.groups()
            if suffix:
                raise RequestError(f"flavor extra spec {key!r}: suffixed groups in flavors are not "
                                   f"supported here. Fix: use unsuffixed resources:/trait: specs.")
            if prefix == "resources":
                try:
                    extra[name] = int(value)
                except ValueError:
                    raise RequestError(f"flavor extra spec {key}={value!r}: not an integer.")
            elif value in ("required", "forbidden"):
                (required if value == "required" else forbidden).append(name)
            else:
                raise RequestError(f"flavor extra spec {key}={value!r}: expected 'required' or "
                                   f"'forbidden'.")
        swap_gb = -(-int(flavor.get("swap") or 0) // 1024)  # Nova rounds swap MB up to GB
        disk = int(flavor.get("OS-FLV-EXT-DATA:ephemeral") or flavor.get("ephemeral") or 0) + swap_gb
        if not boot_from_volume:
            disk += int(flavor.get("disk") or 0)
        kwargs.setdefault("group_policy", policy)
        return cls(vcpus=int(flavor.get("vcpus") or 0), memory_mb=int(flavor.get("ram") or 0),
                   disk_gb=disk, extra_resources=extra, required=tuple(required),
                   forbidden=tuple(forbidden), ports=tuple(ports), **kwargs)

    def flavor_resources(self) -> dict[str, int]:
        extra = dict(self.extra_resources)
        res = {}
        # Nova: extra specs win; a flavor asking for PCPU gets no VCPU from flavor.vcpus
        if orc.VCPU not in extra and orc.PCPU not in extra:
            res[orc.VCPU] = self.vcpus
        res[orc.MEMORY_MB] = self.memory_mb
        res[orc.DISK_GB] = self.disk_gb
        res.update(extra)
        return {rc: amount for rc, amount in sorted(res.items()) if amount}

    def request_groups(self) -> tuple[RequestGroup, ...]:
        """Every group sent to Placement, unsuffixed ("") first, zero amounts stripped as Nova does."""
        return self._groups

    @cached_property
    def _groups(self) -> tuple[RequestGroup, ...]:
        # cached: the query, the solver and the mapping of every candidate all ask for it
        groups = []
        flavor = self.flavor_resources()
        if flavor or self.required or self.forbidden:
            groups.append(RequestGroup("", flavor, self.required, forbidden=self.forbidden))
        for port in self.ports:
            for g in port.groups:
                groups.append(RequestGroup(g.id, [(rc, a) for rc, a in g.resources if a],
                                           g.required, g.required_any, g.forbidden))
        return tuple(groups)

    def same_subtrees(self) -> tuple[tuple[str, ...], ...]:
        """Each port's same_subtree, minus one-group lists of groups with resources (always true)."""
        return self._same_subtrees

    @cached_property
    def _same_subtrees(self) -> tuple[tuple[str, ...], ...]:
        # cached for the same reason as _groups: asked once per candidate when mapping
        resourceless = {g.id for g in self.request_groups() if not g.resources}
        out = []
        for port in self.ports:
            ids = tuple(sorted(set(port.same_subtree)))
            if len(ids) > 1 or (ids and ids[0] in resourceless):
                out.append(ids)
        return tuple(out)

    def effective_group_policy(self) -> str | None:
        if self.group_policy is not None:
            return self.group_policy
        numbered = [g for g in self.request_groups() if g.id]
        return "none" if len(numbered) > 1 else None


def _validate(req: ServerRequest, groups: tuple[RequestGroup, ...]) -> None:
    if req.group_policy is not None and req.group_policy not in GROUP_POLICIES:
        raise RequestError(f"group_policy must be one of {', '.join(GROUP_POLICIES)}, "
                           f"got {req.group_policy!r}.")
    if req.limit is not None and (not isinstance(req.limit, int) or req.limit < 1):
        raise RequestError(f"limit must be a positive integer, got {req.limit!r}.")
    seen: dict[str, str] = {}
    for port in req.ports:
        for g in port.groups:
            if g.id in seen:
                raise RequestError(f"request group id {g.id} appears in port {seen[g.id]} and port "
                                   f"{port.port_id}: suffixes must be unique in one query.")
            seen[g.id] = str(port.port_id)
            if not _STRING_SUFFIX.match(g.id):
                raise RequestError(f"port {port.port_id}: group id {g.id!r} is not a valid Placement "
                                   f"suffix ([a-zA-Z0-9_-], 1 to 64 characters).")
    for g in groups:
        where = f"group {g.id}" if g.id else "the flavor (unsuffixed group)"
        for rc, amount in g.resources:
            if not _NAME.match(rc):
                raise RequestError(f"{where}: {rc!r} is not a resource class name (A-Z, 0-9, _).")
            if not isinstance(amount, int) or isinstance(amount, bool) or amount < 0:
                raise RequestError(f"{where}: amount of {rc} must be a non-negative integer, "
                                   f"got {amount!r}.")
        for t in (*g.required, *g.forbidden, *(t for a in g.required_any for t in a)):
            if not _NAME.match(t):
                raise RequestError(f"{where}: {t!r} is not a trait name (A-Z, 0-9, _).")
        both = set(g.required) & set(g.forbidden)
        if both:
            raise RequestError(f"{where}: traits both required and forbidden: {sorted(both)}.")
    for t in (*req.root_required, *req.root_forbidden):
        if not _NAME.match(t):
            raise RequestError(f"root_required: {t!r} is not a trait name (A-Z, 0-9, _).")
    both = set(req.root_required) & set(req.root_forbidden)
    if both:
        raise RequestError(f"root traits both required and forbidden: {sorted(both)}.")
    flavor = next((g for g in groups if not g.id), None)
    if flavor is not None and not flavor.resources:
        raise RequestError("the flavor requests traits but no resources; Placement refuses an "
                           "unsuffixed group without resources. Fix: give the flavor resources.")
    if req.member_of and flavor is None:
        raise RequestError("member_of applies to the flavor's (unsuffixed) group, and this request "
                           "has no flavor resources. Fix: add flavor resources or drop member_of.")
    for agg in (*(a for m in req.member_of for a in m), *([req.in_tree] if req.in_tree else [])):
        if not _UUID.match(agg):
            raise RequestError(f"{agg!r} is not a UUID (member_of / in_tree take UUIDs).")
    if not any(g.resources for g in groups):
        raise RequestError("the request asks for no resources at all (no flavor resources, no "
                           "non-zero port minimums); Placement needs at least one group with resources.")
    subtree_ids = {i for s in req.same_subtrees() for i in s}
    for g in groups:
        if g.id and not g.resources and g.id not in subtree_ids:
            raise RequestError(f"group {g.id} requests no resources (all amounts are 0) and is in "
                               f"no same_subtree; Placement refuses such a group. Fix: give the "
                               f"rule a non-zero minimum.")


def required_microversion(req: ServerRequest) -> tuple[Microversion, list[tuple[Microversion, str]]]:
    """The lowest microversion that expresses ``req``, and why: (version, feature) pairs."""
    groups = req.request_groups()
    why = [(MIN_MICROVERSION, "nested providers in allocation candidates")]
    numbered = [g.id for g in groups if g.id]
    if any(not _NUMERIC_SUFFIX.match(s) for s in numbered):
        why.append((STRING_SUFFIXES, "string group suffixes (the ports' request group ids)"))
    if req.in_tree:
        why.append((IN_TREE, "in_tree"))
    if req.root_required or req.root_forbidden:
        why.append((ROOT_REQUIRED, "root_required"))
    if req.same_subtrees():
        why.append((SAME_SUBTREE, "same_subtree (a port with several request groups)"))
    if any(g.id and not g.resources for g in groups):
        why.append((SAME_SUBTREE, "a request group without resources (a zero minimum)"))
    if any(g.required_any for g in groups):
        why.append((ANY_TRAITS, "any-traits required=in:A,B (a multi-segment network)"))
    return max(v for v, _ in why), why


def _group_params(g: RequestGroup, in_tree: str | None, member_of) -> list[tuple[str, str]]:
    s = g.id
    out = [(f"resources{s}", ",".join(f"{rc}:{a}" for rc, a in g.resources))] if g.resources else []
    plain = ",".join([*sorted(g.required), *(f"!{t}" for t in g.forbidden)])
    if plain:
        out.append((f"required{s}", plain))
    out += [(f"required{s}", "in:" + ",".join(a)) for a in g.required_any]
    out += [(f"member_of{s}", "in:" + ",".join(m) if len(m) > 1 else m[0]) for m in member_of]
    if in_tree:
        out.append((f"in_tree{s}", in_tree))
    return out


def build_query(req: ServerRequest, max_microversion: str | Microversion, *,
                mappings: bool = True) -> tuple[dict[str, str | list[str]], str]:
    """``(params, microversion)`` for ``GET /allocation_candidates``.

    ``params`` suits ``conn.placement.allocation_candidates(**params, microversion=mv)``
    (a list value is a repeated key). With ``mappings`` the microversion is raised to 1.34
    when the server has it, so candidates name each group's provider; it is never raised
    beyond what the server offers, and a request the server cannot express raises
    MicroversionUnsupported instead of being weakened.
    """
    groups = req.request_groups()
    _validate(req, groups)
    need, why = required_microversion(req)
    have = parse_microversion(max_microversion)
    if have < need:
        missing = [f"{text} needs {format_microversion(v)}" for v, text in why if v > have]
        raise MicroversionUnsupported(
            f"Placement offers microversions up to {format_microversion(have)}, but this request "
            f"needs {format_microversion(need)}: {'; '.join(missing)}. Sending it at a lower "
            f"microversion would ask for less than requested. Fix: upgrade Placement to "
            f"{format_microversion(need)} or later, or drop those features (e.g. build the port "
            f"requests with any_traits=False when the server lacks "
            f"{format_microversion(ANY_TRAITS)}).")
    use = max(need, MAPPINGS) if mappings and have >= MAPPINGS else need

    has_flavor = any(not g.id for g in groups)
    pairs: list[tuple[str, str]] = []
    for g in groups:
        # request-wide filters ride on the flavor's group; without one, in_tree on every group
        on_this = not g.id or not has_flavor
        pairs += _group_params(g, req.in_tree if on_this else None,
                               req.member_of if not g.id else ())
    policy = req.effective_group_policy()
    if policy:
        pairs.append(("group_policy", policy))
    if req.root_required or req.root_forbidden:
        pairs.append(("root_required", ",".join([*req.root_required,
                                                  *(f"!{t}" for t in req.root_forbidden)])))
    pairs += [("same_subtree", ",".join(s)) for s in req.same_subtrees()]
    if req.limit is not None:
        pairs.append(("limit", str(req.limit)))

    params: dict[str, str | list[str]] = {}
    for key, value in pairs:
        if key in params:
            prev = params[key]
            params[key] = [*prev, value] if isinstance(prev, list) else [prev, value]
        else:
            params[key] = value
    return params, format_microversion(use)


def query_string(params: Mapping[str, str | list[str]]) -> str:
    """The URL query for ``params`` (sorted, repeated keys for list values), as Nova sorts it."""
    pairs = []
    for key, value in params.items():
        pairs += [(key, v) for v in (value if isinstance(value, list) else [value])]
    return urlencode(sorted(pairs))
