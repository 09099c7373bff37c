"""Where would Nova put this server: Nova 34's Placement query for it, and why it is what it is.

``query(server, options, facts)`` runs Nova's request filters (``request_filter.process_reqspec``) and builds
its ResourceRequest (``resources_from_request_spec``) as a ``ServerRequest``;
``minbw.placement.query.build_query`` + ``query_string`` then give the very query string Nova's scheduler sends
(``ResourceRequest.to_querystring``), at Nova's microversion when Placement offers it. tests/unit/nova/
test_scheduler.py proves it against Nova's own code. Where Nova would send a query Placement refuses (a group
without resources, two flavor groups without group_policy, ...) or a request filter refuses the server, ``query``
raises, saying so. Pure: no I/O.

A use case builds the server from what the APIs return::

    server = Server(flavor=conn.compute.get_flavor(id).to_dict(), image=conn.image.get_image(i).to_dict(),
                    ports=[p.to_dict() for p in ports], availability_zone=az, project_id=project)
    nq = query(server, SchedulerOptions.parse(["scheduler.image_metadata_prefilter=true"]), facts)
    params, microversion = build_query(nq.request, api.max_version())
"""

from __future__ import annotations

from dataclasses import dataclass

from minbw.errors import MinbwError, RequestError
from minbw.model import microversions
from minbw.model.requests import ServerRequest
from minbw.nova.inputs import CloudFacts, Server
from minbw.nova.options import SchedulerOptions
from minbw.nova.request_filter import FilterResult, process_reqspec
from minbw.nova.resource_request import pinning_requested, server_request
from minbw.placement.query import build_query

# nova.scheduler.client.report.SAME_SUBTREE_VERSION: get_allocation_candidates' microversion
MICROVERSION = microversions.format(microversions.NOVA_CANDIDATES)


@dataclass(frozen=True)
class NovaQuery:
    """Nova's query for a server: ``request`` (for build_query), what each request filter did, the second
    query Nova makes for a pinned server (``fallback``: VCPU instead of PCPU, unless [workarounds]
    disable_fallback_pcpu_query), and what Nova ignored in the flavor (``notes``)."""

    request: ServerRequest
    filters: tuple[FilterResult, ...]
    fallback: ServerRequest | None = None
    notes: tuple[str, ...] = ()
    microversion: str = MICROVERSION

    @property
    def applied(self) -> tuple[FilterResult, ...]:
        """The filters that put something in the query (the ones that can remove hosts)."""
        return tuple(f for f in self.filters if f.added)

    def explain(self) -> list[str]:
        """One line per filter that added something, e.g. ``compute_status_filter: root_forbidden
        COMPUTE_STATUS_DISABLED (always)``, then the notes."""
        return [str(f) for f in self.applied] + list(self.notes)

    def to_dict(self) -> dict:
        """The query as a JSON-ready dict: every filter's dict, the applied ones as lines, notes, microversion, limit
        and whether there is a fallback query."""
        return {
            "filters": [f.to_dict() for f in self.filters],
            "applied": [str(f) for f in self.applied],
            "notes": list(self.notes),
            "microversion": self.microversion,
            "limit": self.request.limit,
            "fallback": self.fallback is not None,
        }


def _refused_by_placement(req: ServerRequest) -> str:
    """Why Placement would refuse the query Nova sends for ``req`` ("" when it would not): the cases where
    build_query would send something else than Nova does."""
    groups = req.request_groups()
    for g in groups:
        if g.id and not g.resources:
            return (
                f"request group {g.id} asks for no resources (every amount is 0): Nova sends "
                f"resources{g.id}= (empty), which Placement refuses (400: Badly formed resources parameter). "
                f"Fix: give the group a non-zero amount (for a port: a non-zero minimum in its QoS rule), or "
                f"drop it"
            )
    has_unsuffixed = any(not g.id for g in groups)
    if not has_unsuffixed and (req.member_of or req.forbidden_member_of or req.in_tree):
        return (
            "the flavor asks for no unsuffixed resources, but Nova puts the aggregates and in_tree of its "
            "request filters on the unsuffixed group: it sends resources= (empty), which Placement refuses "
            "(400). Fix: give the flavor resources (vcpus, ram, disk or resources:CLASS)"
        )
    ids = {g.id for g in groups}
    for subtree in req.same_subtree():
        missing = sorted(set(subtree) - ids)
        if missing:
            return (
                f"same_subtree names request group(s) {', '.join(missing)}, which ask for nothing once zero "
                f"amounts are stripped: Placement refuses the query (400). Fix: pass the port's "
                f"resource_request as Neutron returns it"
            )
    return ""


def _checked(req: ServerRequest) -> ServerRequest:
    why = _refused_by_placement(req)
    if why:
        raise RequestError(f"Nova 34 cannot schedule this server: {why}.")
    any_traits = any(g.required_any for g in req.request_groups())  # minbw's own (any-traits), never Nova's
    try:
        build_query(req, microversions.format(microversions.ANY_TRAITS) if any_traits else MICROVERSION)
    except MinbwError as e:
        raise RequestError(
            f"Nova 34 cannot schedule this server: the query it sends is refused by Placement: {e}"
        ) from None
    return req


def query(server: Server, options: SchedulerOptions | None, facts: CloudFacts) -> NovaQuery:
    """Nova 34's Placement query for ``server`` (nova.scheduler.manager.SchedulerManager.select_destinations:
    process_reqspec, resources_from_request_spec, get_allocation_candidates)."""
    options = options or SchedulerOptions()
    spec, results = process_reqspec(server, options, facts)
    request, notes = server_request(server, spec, options, facts, pinning=True)
    _checked(request)
    fallback = None
    if pinning_requested(server) and not options.disable_fallback_pcpu_query:
        fallback, _notes = server_request(server, spec, options, facts, pinning=False)
        try:
            _checked(fallback)
        except RequestError as e:
            fallback = None
            notes = (*notes, f"the second query with VCPU instead of PCPU is left out: {e}")
    return NovaQuery(request=request, filters=results, fallback=fallback, notes=notes)


__all__ = ["NovaQuery", "query", "MICROVERSION", "Server", "CloudFacts", "SchedulerOptions"]
