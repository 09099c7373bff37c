"""A server's request (flavor + ports) as ONE ``GET /allocation_candidates`` query.

Pure: no I/O. The query is Nova 34's (``nova.scheduler.utils.ResourceRequest.to_querystring`` and
``RequestGroup.to_queryparams``): the flavor in the unsuffixed group with the request-wide
``member_of`` (always ``in:``), ``member_of=!in:`` and ``in_tree``; one group per flavor granular group
and per port request group, suffixed with its id; each port's ``same_subtree`` as Neutron gives it
(at 1.36 or more; below, only the lists that constrain anything);
``resources`` as sorted ``CLASS:AMOUNT`` strings; ``group_policy`` defaulted as Nova does; ``limit``
when set. It is sent at the microversion Nova's report client sends (``SAME_SUBTREE_VERSION``, 1.36)
when Placement offers it, else at the lowest that expresses it (or 1.34 for mappings).
tests/unit/nova/test_scheduler.py compares the query string with Nova's own on generated servers;
tests/unit/placement/test_query.py feeds every query to Placement's own parser.

Beyond Nova (requests ``minbw.nova`` never builds, for the callers that name groups by hand):
``required<S>=in:A,B`` (any-traits, 1.39); a group without resources inside a ``same_subtree`` (1.36;
Nova would send ``resources<S>=``, which Placement refuses); ``in_tree`` on every group when there is no
unsuffixed group.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlencode

from minbw.errors import MicroversionUnsupported, RequestError
from minbw.model import microversions
from minbw.model.requests import RequestGroup, ServerRequest

# placement/schemas/common.py GROUP_PAT / GROUP_PAT_1_33
_NUMERIC_SUFFIX = re.compile(r"^[1-9][0-9]*$")
_STRING_SUFFIX = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# Trait and class names: anything else would break the comma/"!"/"in:" syntax of the query.
_NAME = re.compile(r"^[A-Z0-9_]{1,255}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
GROUP_POLICIES = ("none", "isolate")


def _validate(req: ServerRequest, groups: tuple[RequestGroup, ...]) -> None:
    if req.group_policy is not None and req.group_policy not in GROUP_POLICIES:
        raise RequestError(f"group_policy must be one of {', '.join(GROUP_POLICIES)}, got {req.group_policy!r}.")
    if req.limit is not None and (not isinstance(req.limit, int) or req.limit < 1):
        raise RequestError(f"limit must be a positive integer, got {req.limit!r}.")
    seen: dict[str, str] = {}
    for port in req.ports:
        for g in port.groups:
            if g.id in seen:
                raise RequestError(
                    f"request group id {g.id} appears in port {seen[g.id]} and port "
                    f"{port.port_id}: suffixes must be unique in one query."
                )
            seen[g.id] = str(port.port_id)
            if not _STRING_SUFFIX.match(g.id):
                raise RequestError(
                    f"port {port.port_id}: group id {g.id!r} is not a valid Placement "
                    f"suffix ([a-zA-Z0-9_-], 1 to 64 characters)."
                )
    for g in groups:
        where = f"group {g.id}" if g.id else "the flavor (unsuffixed group)"
        for rc, amount in g.resources:
            if not _NAME.match(rc):
                raise RequestError(f"{where}: {rc!r} is not a resource class name (A-Z, 0-9, _).")
            if not isinstance(amount, int) or isinstance(amount, bool) or amount < 0:
                raise RequestError(f"{where}: amount of {rc} must be a non-negative integer, got {amount!r}.")
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
    numbered = [g.id for g in groups if g.id]
    if len(numbered) > 1 and req.effective_group_policy() is None:
        raise RequestError(
            f"the flavor defines {len(req.flavor_groups)} granular request groups and no "
            f"group_policy; with {len(numbered)} suffixed groups ({', '.join(numbered)}) Placement "
            f"refuses a query without one (Nova sends none: it defaults it only when the flavor "
            f"defines at most one group). Fix: set the flavor's extra spec group_policy=none or "
            f"group_policy=isolate."
        )
    flavor = next((g for g in groups if not g.id), None)
    if flavor is not None and not flavor.resources:
        raise RequestError(
            "the flavor requests traits but no resources; Placement refuses an "
            "unsuffixed group without resources. Fix: give the flavor resources."
        )
    if (req.member_of or req.forbidden_member_of) and flavor is None:
        raise RequestError(
            "member_of applies to the flavor's (unsuffixed) group, and this request "
            "has no flavor resources. Fix: add flavor resources or drop member_of."
        )
    for agg in (
        *(a for m in req.member_of for a in m),
        *req.forbidden_member_of,
        *([req.in_tree] if req.in_tree else []),
    ):
        if not _UUID.match(agg):
            raise RequestError(f"{agg!r} is not a UUID (member_of / in_tree take UUIDs).")
    if not any(g.resources for g in groups):
        raise RequestError(
            "the request asks for no resources at all (no flavor resources, no "
            "non-zero port minimums); Placement needs at least one group with resources."
        )
    subtree_ids = {i for s in req.same_subtrees() for i in s}
    for g in groups:
        if g.id and not g.resources and g.id not in subtree_ids:
            raise RequestError(
                f"group {g.id} requests no resources (all amounts are 0) and is in "
                f"no same_subtree; Placement refuses such a group. Fix: give the "
                f"rule a non-zero minimum."
            )


def required_microversion(
    req: ServerRequest,
) -> tuple[microversions.Microversion, list[tuple[microversions.Microversion, str]]]:
    """The lowest microversion that expresses ``req``, and why: (version, feature) pairs."""
    groups = req.request_groups()
    why = [(microversions.NESTED_CANDIDATES, "nested providers in allocation candidates")]
    numbered = [g.id for g in groups if g.id]
    if any(not _NUMERIC_SUFFIX.match(s) for s in numbered):
        why.append((microversions.STRING_SUFFIXES, "string group suffixes (the ports' request group ids)"))
    if req.in_tree:
        why.append((microversions.IN_TREE, "in_tree"))
    if req.forbidden_member_of:
        why.append((microversions.FORBIDDEN_AGGREGATES, "forbidden aggregates member_of=!in:"))
    if req.root_required or req.root_forbidden:
        why.append((microversions.ROOT_REQUIRED, "root_required"))
    if req.same_subtrees():
        why.append((microversions.SAME_SUBTREE, "same_subtree (a port with several request groups)"))
    if any(g.id and not g.resources for g in groups):
        why.append((microversions.SAME_SUBTREE, "a request group without resources (a zero minimum)"))
    if any(g.required_any for g in groups):
        why.append((microversions.ANY_TRAITS, "any-traits required=in:A,B (a multi-segment network)"))
    return max(v for v, _reason in why), why


def group_params(
    g: RequestGroup, in_tree: str | None = None, member_of=(), forbidden_member_of=()
) -> list[tuple[str, str]]:
    """One group's query parameters, suffixed with its id (none for the unsuffixed group)."""
    s = g.id
    # Nova sorts the "CLASS:AMOUNT" strings, not the classes (CUSTOM_X1:1 before CUSTOM_X:1)
    out = [(f"resources{s}", ",".join(sorted(f"{rc}:{a}" for rc, a in g.resources)))] if g.resources else []
    plain = ",".join([*sorted(g.required), *(f"!{t}" for t in sorted(g.forbidden))])
    if plain:
        out.append((f"required{s}", plain))
    out += [(f"required{s}", "in:" + ",".join(a)) for a in g.required_any]
    out += [(f"member_of{s}", "in:" + ",".join(sorted(m))) for m in member_of]
    if forbidden_member_of:
        out.append((f"member_of{s}", "!in:" + ",".join(forbidden_member_of)))
    if in_tree:
        out.append((f"in_tree{s}", in_tree))
    return out


def build_query(
    req: ServerRequest,
    max_microversion: str | microversions.Microversion,
    *,
    mappings: bool = True,
    pinned: bool = False,
) -> tuple[dict[str, str | list[str]], str]:
    """``(params, microversion)`` for ``GET /allocation_candidates``.

    ``params`` suits ``conn.placement.allocation_candidates(**params, microversion=mv)``
    (a list value is a repeated key). With ``mappings`` the microversion is Nova's, 1.36
    (``nova.scheduler.client.report.SAME_SUBTREE_VERSION``, what its ``get_allocation_candidates``
    sends), when the server has it, else 1.34 when it has that, so candidates name each group's
    provider; it is never raised beyond what the server offers, and a request the server cannot
    express raises MicroversionUnsupported instead of being weakened. Without ``mappings``: the
    lowest microversion that expresses the request.
    """
    groups = req.request_groups()
    _validate(req, groups)
    need, why = required_microversion(req)
    have = microversions.parse(max_microversion)
    if have < need:
        missing = [f"{text} needs {microversions.format(v)}" for v, text in why if v > have]
        if pinned:  # the user's --os-placement-api-version, not the server, is the limit
            raise MicroversionUnsupported(
                f"--os-placement-api-version pins Placement microversion {microversions.format(have)}, but this "
                f"request needs {microversions.format(need)}: {'; '.join(missing)}. Fix: pin "
                f"{microversions.format(need)} or more, or leave the pin out."
            )
        raise MicroversionUnsupported(
            f"Placement offers microversions up to {microversions.format(have)}, but this request "
            f"needs {microversions.format(need)}: {'; '.join(missing)}. Sending it at a lower "
            f"microversion would ask for less than requested. Fix: upgrade Placement to "
            f"{microversions.format(need)} or later, or drop those features (e.g. build the port "
            f"requests with any_traits=False when the server lacks "
            f"{microversions.format(microversions.ANY_TRAITS)})."
        )
    use = need
    if mappings:
        use = (
            max(need, microversions.NOVA_CANDIDATES)
            if have >= microversions.NOVA_CANDIDATES
            else max(need, microversions.MAPPINGS)
            if have >= microversions.MAPPINGS
            else need
        )

    has_flavor = any(not g.id for g in groups)
    pairs: list[tuple[str, str]] = []
    for g in groups:
        # request-wide filters ride on the flavor's group; without one, in_tree on every group
        on_this = not g.id or not has_flavor
        pairs += group_params(
            g,
            req.in_tree if on_this else None,
            req.member_of if not g.id else (),
            req.forbidden_member_of if not g.id else (),
        )
    policy = req.effective_group_policy()
    if policy:
        pairs.append(("group_policy", policy))
    if req.root_required or req.root_forbidden:
        pairs.append(("root_required", ",".join([*req.root_required, *(f"!{t}" for t in req.root_forbidden)])))
    # Nova's form: every port's same_subtree as Neutron gives it; below 1.36 (an older Placement) the one-group
    # lists of groups with resources, always true, are left out (ServerRequest.same_subtrees)
    subtrees = req.same_subtree() if use >= microversions.SAME_SUBTREE else req.same_subtrees()
    pairs += [("same_subtree", ",".join(s)) for s in subtrees]
    if req.limit is not None:
        pairs.append(("limit", str(req.limit)))

    return _params(pairs), microversions.format(use)


def _params(pairs: list[tuple[str, str]]) -> dict[str, str | list[str]]:
    params: dict[str, str | list[str]] = {}
    for key, value in pairs:
        if key in params:
            prev = params[key]
            params[key] = [*prev, value] if isinstance(prev, list) else [prev, value]
        else:
            params[key] = value
    return params


def single_group_query(g: RequestGroup, resources: Mapping[str, int] | None = None) -> tuple[dict, str]:
    """``(params, microversion)`` asking for one group alone (``resources`` replace its own): the diagnosis asks
    this for each group of a request that has no candidates. A port's group keeps its suffix, as in the whole
    request: one provider must then hold all of its resources (Placement may take an unsuffixed group's resource
    classes from different providers of a tree)."""
    alone = RequestGroup(
        g.id, resources if resources is not None else g.resources, g.required, g.required_any, g.forbidden
    )
    version = (
        microversions.ANY_TRAITS
        if g.required_any
        else microversions.STRING_SUFFIXES
        if g.id
        else microversions.NESTED_CANDIDATES
    )
    return _params(group_params(alone)), microversions.format(version)


def query_string(params: Mapping[str, str | list[str]]) -> str:
    """The URL query for ``params`` (sorted, repeated keys for list values): Nova's
    ``urlencode(sorted(qparams))``, the same string for the same request."""
    pairs = []
    for key, value in params.items():
        pairs += [(key, v) for v in (value if isinstance(value, list) else [value])]
    return urlencode(sorted(pairs))
