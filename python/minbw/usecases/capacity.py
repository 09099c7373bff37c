"""``minbw capacity show`` and the ``bandwidth_capacity_info`` module: how many
more servers of one shape fit, per host, physnet and in total."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from minbw.errors import InvalidInput
from minbw.model.requests import ServerRequest
from minbw.ops.nova_query import aggregate_exclusions, root_trait_reasons
from minbw.neutron.port_request import QosPort
from minbw.reports.capacity.report import CapacityReport, count_capacity
from minbw.reports.capacity.solver import Limit  # noqa: F401 - the front ends describe limits with it  # pylint: disable=unused-import
from minbw.placement.client import Placement
from minbw.reports.capacity.request import CapacityRequest, capacity_request
from minbw.readers.providers import sharing_providers
from minbw.readers.placement import Reader, read_for_capacity
from minbw.usecases.server_request import STAND_IN, NovaServer, check_flavor_or_resources, nova_server_query
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class CapacityQuery(NovaServer):
    """The server's shape (flavor resources and traits, ports as their ``resource_request`` or described by
    their QoS rules) and, optionally, the one host to count. ``options`` name the front end's options in
    errors (``resources``, ``hypervisor``; ``qos_ports``: one label per port)."""

    resources: Mapping[str, int] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    port_requests: tuple[Mapping, ...] = ()
    qos_ports: tuple[QosPort | Mapping, ...] = ()
    group_policy: str | None = None
    hypervisor: str | None = None
    resources_option: str = "resources"
    hypervisor_option: str = "hypervisor"
    port_labels: tuple[str, ...] | None = None

    def __post_init__(self):
        super().__post_init__()
        check_flavor_or_resources(
            self.flavor, self.resources, self.required, self.group_policy, self.flavor_option, self.resources_option
        )


def capacity(cloud: Cloud, query: CapacityQuery) -> CapacityReport:
    """Every host (or the one named), counted now (bad input is refused before anything is read), for the server
    Nova would schedule: its flavor (given, or read from Nova) and image, with what Nova's request filters add to
    the compute node (a disabled nova-compute's host counts 0, and says why; so does a host outside the requested
    availability zone's aggregates, or the project's, or in an isolated aggregate)."""
    options = query.scheduler_options()
    _request(query, ServerRequest(vcpus=1) if query.flavor else None)  # bad input refused before anything is read
    # ports alone (no flavor): what Nova's filters ask of the compute node still counts; the flavor that stands in
    # for the one Nova's query always has is not counted
    ports_alone = not (query.flavor or query.resources)
    nq = nova_server_query(
        cloud,
        options,
        flavor=query.flavor,
        resources=query.resources or STAND_IN,
        required=query.required,
        group_policy=query.group_policy,
        image=query.image,
        project=query.project,
        availability_zone=query.availability_zone,
        owner_nova=query.owner_nova,
        flavor_option=query.flavor_option,
    )
    if nq.request.in_tree:
        raise InvalidInput(
            "capacity counts every host; Nova's request would restrict this server to one tree ("
            + "; ".join(nq.explain())
            + "). Fix: count that host with its hypervisor instead."
        )
    flavor = nq.request
    if ports_alone:
        flavor = ServerRequest(
            required=flavor.required,
            forbidden=flavor.forbidden,
            root_required=flavor.root_required,
            root_forbidden=flavor.root_forbidden,
        )
    request = _request(
        query,
        flavor,
        root_reasons=root_trait_reasons(nq.applied),
        excluded_roots=aggregate_exclusions(cloud.placement, nq.applied),
    )
    return capacity_report(cloud.reader(), request, query.hypervisor, query.hypervisor_option)


def _request(query: CapacityQuery, flavor: ServerRequest | None, **nova_filters) -> CapacityRequest:
    """The query's server (its resources, traits and ports) with ``flavor`` as capacity_request counts it;
    ``nova_filters``: what Nova's request filters add (root_reasons, excluded_roots)."""
    return capacity_request(
        query.resources,
        query.required,
        query.port_requests,
        query.qos_ports,
        group_policy=query.group_policy,
        resources_option=query.resources_option,
        port_labels=query.port_labels,
        flavor=flavor,
        **nova_filters,
    )


def capacity_report(
    api: Placement | Reader, request: CapacityRequest, hypervisor: str | None = None, option: str = "hypervisor"
) -> CapacityReport:
    """``request`` counted on every host (or the one named ``hypervisor``; ``option`` names it in an error),
    reading only what can hold a server (:func:`minbw.readers.placement.read_for_capacity`)."""
    reader = api if isinstance(api, Reader) else Reader(api)
    api = reader.api
    if hypervisor:
        roots = api.list_providers(name=hypervisor)
        if not roots:
            known = sorted(p.name for p in api.list_providers() if p.parent_uuid is None)
            raise InvalidInput(
                f"{option}: no compute node (root resource provider) named {hypervisor!r} in "
                f"Placement. Fix: use one of {', '.join(known) or '(none: Placement has no providers)'}."
            )
        if roots[0].parent_uuid is not None:
            raise InvalidInput(
                f"{option}: {hypervisor!r} is not a compute node: it has a parent provider. Fix: "
                f"name the root provider (the hypervisor name nova-compute reports)."
            )
        providers = api.list_providers(in_tree=roots[0].uuid)
        shared = {s: r for s, r in sharing_providers(api).items() if roots[0].uuid in r}
        providers += [api.get_provider(s) for s in shared if s not in {p.uuid for p in providers}]
    else:
        providers = api.list_providers()
        shared = sharing_providers(api)
    groups = request.server.request_groups()
    items = {(rc, amount) for g in groups for rc, amount in g.resources}
    details = read_for_capacity(
        reader, providers, items, everything=any(not g.resources for g in groups), shared=shared
    )
    reader.save()
    return count_capacity(details, request, shared)
