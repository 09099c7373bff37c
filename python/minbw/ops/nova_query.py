"""What Nova's scheduler reads to build its Placement query for a server, read from the cloud: the flavor (with
its extra specs) and the image by name or id, the host aggregates, and whether every nova-compute reports
``OWNER_NOVA`` (the facts of :class:`minbw.nova.inputs.CloudFacts`). :mod:`minbw.nova` turns them into Nova's query.

Whether every nova-compute reports ``OWNER_NOVA`` (Nova: the minimum nova-compute service version of all cells is
73 or more, which no API shows) is decided by :mod:`minbw.nova.owner` from Nova's services and compute nodes and
their roots' traits where Nova's API can be read, else from Placement alone (every ``COMPUTE_NODE`` root carries
``OWNER_NOVA``); that module says what each reading sees and misses.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterable, Sequence

from minbw.errors import InvalidInput, NotFound, ObjectNotFound, ProviderNotFound
from minbw.nova import compute_root, owner
from minbw.nova.fields import COMPUTE_NODE, COMPUTE_STATUS_DISABLED, OWNER_NOVA
from minbw.nova.inputs import Aggregate, CloudFacts, Flavor, Image, Port, Subnet
from minbw.nova.options import SchedulerOptions
from minbw.placement.client import Placement


def read_compute_services(conn) -> list[owner.ComputeService]:
    """Nova's nova-compute services (``GET /os-services?binary=nova-compute``)."""
    return [
        owner.ComputeService(s.host, bool(s.is_forced_down), s.state, s.status == "disabled")
        for s in conn.compute.services(binary="nova-compute")
    ]


def _unreadable(e: Exception) -> str:
    return f"Nova's services and compute nodes not readable ({getattr(e, 'status_code', None) or type(e).__name__})"


def read_compute_hosts(conn) -> compute_root.NovaComputes:
    """What Nova knows of its computes, for a compute node root minbw would create
    (:mod:`minbw.nova.compute_root`): its compute nodes' UUIDs by hypervisor hostname (``GET /os-hypervisors``, not
    the detailed listing, which from compute API 2.88 asks each nova-compute for its uptime over RPC - an RPC timeout,
    500, while one that stopped still counts as up: nova/api/openstack/compute/hypervisors.py; the e2e test reads
    this listing with one stopped, tests/e2e/test_create_root_cloud.py) and its nova-compute services' hosts. Where
    Nova cannot be read (a user without the admin role, an error answer) ``unread`` says why."""
    from openstack import exceptions as sdk_exceptions

    try:
        services = frozenset(s.host for s in read_compute_services(conn))
        nodes: dict[str, list[str]] = {}
        for h in conn.compute.hypervisors():
            nodes.setdefault(h.name, []).append(h.id)
    except (sdk_exceptions.HttpException, sdk_exceptions.EndpointNotFound) as e:
        return compute_root.NovaComputes(unread=_unreadable(e))
    if not all(_is_uuid(u) for uuids in nodes.values() for u in uuids):  # Nova before compute API 2.53
        return compute_root.NovaComputes(unread="Nova's compute API is older than 2.53 and shows no compute node UUIDs")
    return compute_root.NovaComputes({n: tuple(u) for n, u in nodes.items()}, services)


def _is_uuid(text) -> bool:
    try:
        uuidlib.UUID(str(text))
    except ValueError:
        return False
    return True


def read_owner_nova(api: Placement, conn=None, services: list[owner.ComputeService] | None = None) -> owner.OwnerNova:
    """Whether Nova's ``owner_nova_filter`` adds ``root_required=OWNER_NOVA`` (:mod:`minbw.nova.owner`): from
    Nova's nova-compute services (``services``, when the caller read them already) and compute nodes (``conn``: a
    connection whose catalog has Nova; two listings of Nova, one of Placement), else, where Nova's API cannot be
    read, from Placement alone (two listings)."""
    from openstack import exceptions as sdk_exceptions

    known = OWNER_NOVA in api.existing_traits([OWNER_NOVA])  # a Placement whose os-traits predate it: none has it
    unread = ""
    if conn is not None:
        try:
            services = read_compute_services(conn) if services is None else services
            nodes = [((h.service_details or {}).get("host"), h.id) for h in conn.compute.hypervisors(details=True)]
        except (sdk_exceptions.HttpException, sdk_exceptions.EndpointNotFound) as e:
            unread = _unreadable(e) + "; "
        else:
            owned = {p.uuid for p in api.list_providers(required=OWNER_NOVA)} if known else set()
            return owner.from_nova(services, nodes, owned)
    roots = {p.name: {COMPUTE_NODE} for p in api.list_providers(required=COMPUTE_NODE) if p.parent_uuid is None}
    if known:
        for p in api.list_providers(required=f"{COMPUTE_NODE},{OWNER_NOVA}"):
            if p.name in roots:
                roots[p.name].add(OWNER_NOVA)
    decided = owner.from_placement(roots)
    return owner.OwnerNova(decided.applies, decided.source, unread + decided.why)


def read_scheduler_options(nova_options=(), nova_conf: str | None = None) -> SchedulerOptions:
    """Nova's scheduler options: Nova's defaults, those of the nova.conf ``nova_conf`` (read here), then
    ``nova_options`` (``section.option=value``)."""
    base = None
    if nova_conf:
        try:
            with open(nova_conf) as f:
                text = f.read()
        except OSError as e:
            raise InvalidInput(f"nova_conf {nova_conf}: {e.strerror}. Fix: give a readable nova.conf.") from None
        base = SchedulerOptions.from_nova_conf(text, source=nova_conf)
    return SchedulerOptions.parse(tuple(nova_options or ()), base=base, source="nova options")


def read_flavor(conn, name_or_id: str, option: str = "--flavor") -> Flavor:
    """The flavor by name or id, with its extra specs, as Nova's API shows it."""
    try:
        flavor = conn.compute.find_flavor(name_or_id, ignore_missing=True, get_extra_specs=True)
    except Exception as e:  # noqa: BLE001 - several flavors of that name, or Nova's answer: said in one line
        raise InvalidInput(
            f"{option} {name_or_id}: {e}. Fix: give the flavor's id ('openstack flavor list')."
        ) from None
    if flavor is None:
        raise ObjectNotFound(f"{option} {name_or_id}: no such flavor in Nova. Fix: one of 'openstack flavor list'.")
    return Flavor.from_api(flavor.to_dict())


def read_image(conn, name_or_id: str, option: str = "--image") -> Image:
    """The image by name or id, with its properties, as Glance shows it."""
    try:
        image = conn.image.find_image(name_or_id, ignore_missing=True)
    except Exception as e:  # noqa: BLE001 - several images of that name, or Glance's answer
        raise InvalidInput(f"{option} {name_or_id}: {e}. Fix: give the image's id ('openstack image list').") from None
    if image is None:
        raise ObjectNotFound(f"{option} {name_or_id}: no such image in Glance. Fix: one of 'openstack image list'.")
    return Image.from_api(image.to_dict())


def read_aggregates(conn) -> tuple[Aggregate, ...]:
    """Nova's host aggregates (uuid: compute API 2.41) with their metadata."""
    return tuple(Aggregate.from_api(a.to_dict()) for a in conn.compute.aggregates())


def needs_aggregates(options: SchedulerOptions, availability_zone: str | None) -> bool:
    """Whether a request filter reads Nova's aggregates for this server (an AZ, tenant isolation, isolated
    aggregates)."""
    return bool(
        availability_zone or options.limit_tenants_to_placement_aggregate or options.enable_isolated_aggregate_filtering
    )


def cloud_facts(
    api: Placement,
    conn,
    options: SchedulerOptions,
    *,
    availability_zone: str | None = None,
    owner_nova: bool | None = None,
    has_compute: bool = True,
    ports: Sequence[Port] = (),
) -> CloudFacts:
    """The facts Nova's request filters read for a server: ``owner_nova`` given, or read
    (:func:`read_owner_nova`); the aggregates from Nova when a filter reads them (``has_compute`` False: a cloud
    without Nova, where asking for an availability zone or an aggregate option is refused); with ``[scheduler]
    query_placement_for_routed_network_aggregates`` on, the subnets of the Neutron ports' networks and their
    segments' aggregates in Placement (:func:`routed_network_facts`)."""
    subnets: tuple[Subnet, ...] = ()
    segment_aggregates: dict[str, tuple[str, ...]] = {}
    if options.query_placement_for_routed_network_aggregates:
        subnets, segment_aggregates = routed_network_facts(api, conn, ports)
    aggregates: Iterable[Aggregate] = ()
    if needs_aggregates(options, availability_zone):
        if not has_compute:
            raise InvalidInput(
                "an availability zone and Nova's aggregate options need Nova's host aggregates, and "
                "this cloud has no compute service. Fix: leave them out."
            )
        aggregates = read_aggregates(conn)
    decided = read_owner_nova(api, conn if has_compute else None) if owner_nova is None else owner.given(owner_nova)
    return CloudFacts(
        every_compute_reports_owner_nova=decided.applies,
        aggregates=tuple(aggregates),
        subnets=subnets,
        segment_aggregates=tuple(segment_aggregates.items()),
        owner_nova_why=decided.why,
    )


def routed_network_facts(
    api: Placement, conn, ports: Sequence[Port]
) -> tuple[tuple[Subnet, ...], dict[str, tuple[str, ...]]]:
    """What Nova's ``routed_networks_filter`` reads for the ports that name a network (Neutron ports; a port
    given by its rules has none, and the filter adds nothing for it): the subnets of their networks (Neutron) and
    each subnet segment's aggregates (its resource provider in Placement; none when Neutron made no provider,
    which Nova's filter reports as "Aggregates not found")."""
    networks = sorted({p.network_id for p in ports if p.network_id})
    if not networks:
        return (), {}
    subnets = tuple(
        Subnet(s.id, s.network_id, s.segment_id) for n in networks for s in conn.network.subnets(network_id=n)
    )
    segment_aggregates = {}
    for segment in sorted({s.segment_id for s in subnets if s.segment_id}):
        try:
            segment_aggregates[segment] = tuple(sorted(api.get_provider_aggregates(segment)[0]))
        except (NotFound, ProviderNotFound):  # no provider for the segment
            segment_aggregates[segment] = ()
    return subnets, segment_aggregates


# what a root trait a request filter asks about means to an operator, and how to change it
_MEANS = {
    COMPUTE_STATUS_DISABLED: (
        "its nova-compute service is disabled ('openstack compute service set --enable HOST "
        "nova-compute' brings it back)"
    ),
    OWNER_NOVA: (
        "its root lacks OWNER_NOVA, which every nova-compute of Nova 34 reports on its compute node (a "
        "root made by hand, a deleted compute's provider, or the trait removed; during a rolling upgrade "
        "to Nova 34: --owner-nova no)"
    ),
}


def prefiltered_hosts(api: Placement, filters) -> list[dict]:
    """The compute nodes (root providers) each of Nova's request filters removes from the candidates, read from
    Placement: for each filter that added ``root_forbidden T`` the roots with ``T``, ``root_required T`` the roots
    without it, ``member_of in:A,B`` (to the flavor's group) the roots in none of those aggregates, ``member_of
    !in:A,B`` the roots in one of them. A root stands for its host: Nova puts a host aggregate's hosts' compute
    nodes in the Placement aggregate, and the flavor's resources are the compute node's (Placement accepts a
    provider of the flavor's group when it or its root is in the aggregate). ``filters``:
    :attr:`minbw.nova.scheduler.NovaQuery.applied`. One listing per filter and trait."""
    return _removed(api, filters, {p.uuid: p.name for p in api.list_providers() if p.parent_uuid is None})


def aggregate_exclusions(api: Placement, filters) -> dict[str, str]:
    """root uuid → why Nova's request filters keep that host out by its aggregates (``member_of``: an
    availability zone, tenant isolation, isolated aggregates); ``filters`` as in :func:`prefiltered_hosts`."""
    filters = [f for f in filters if any(a.startswith("member_of ") for a in f.added)]
    if not filters:
        return {}
    roots = {p.uuid: p.name for p in api.list_providers() if p.parent_uuid is None}
    out: dict[str, str] = {}
    for r in _removed(api, filters, roots, kinds=("member_of",)):
        for u in r["uuids"]:
            out.setdefault(u, f"is {r['reason']} (Nova's {r['filter']}: {r['why']})")
    return out


def _removed(
    api: Placement, filters, roots: dict[str, str], kinds=("root_forbidden", "root_required", "member_of")
) -> list[dict]:
    filters = list(filters)
    traits = {
        a.partition(" ")[2] for f in filters for a in f.added if a.startswith(("root_forbidden ", "root_required "))
    }
    known = api.existing_traits(traits) if traits else set()  # Placement refuses a listing naming an unknown trait

    def having(trait: str) -> set[str]:
        return {p.uuid for p in api.list_providers(required=trait)} if trait in known else set()

    out = []
    for f in filters:
        for added in f.added:
            kind, _space, what = added.partition(" ")
            if kind not in kinds:
                continue
            if kind == "root_forbidden":
                removed = having(what) & set(roots)
                why = f"{what}: {_MEANS.get(what, f'the root has {what}')}"
            elif kind == "root_required":
                removed = set(roots) - having(what)
                why = f"no {what}: {_MEANS.get(what, f'the root lacks {what}')}"
            elif kind == "member_of" and what.startswith(("in:", "!in:")):
                aggs = what.partition("in:")[2]
                inside = {p.uuid for p in api.list_providers(member_of=f"in:{aggs}") if p.parent_uuid is None}
                if what.startswith("!"):
                    removed, why = inside & set(roots), f"in one of the aggregates {aggs}"
                else:
                    removed, why = set(roots) - inside, f"in none of the aggregates {aggs}"
            else:
                continue
            if removed:
                out.append(
                    {
                        "filter": f.name,
                        "why": f.why,
                        "added": added,
                        "reason": why,
                        "hosts": sorted(roots[u] for u in removed),
                        "uuids": sorted(removed),
                    }
                )
    return out


def root_trait_reasons(filters) -> dict[str, str]:
    """root trait → which of Nova's request filters asks for it and what it means (for the capacity's reasons):
    ``filters`` as in :func:`prefiltered_hosts`."""
    out = {}
    for f in filters:
        for added in f.added:
            kind, _space, trait = added.partition(" ")
            if kind in ("root_forbidden", "root_required"):
                out[trait] = f"Nova's {f.name}: " + _MEANS.get(trait, f.why)
    return out


__all__ = [
    "read_owner_nova",
    "read_compute_services",
    "read_compute_hosts",
    "read_scheduler_options",
    "read_flavor",
    "read_image",
    "read_aggregates",
    "cloud_facts",
    "routed_network_facts",
    "prefiltered_hosts",
    "aggregate_exclusions",
    "root_trait_reasons",
]
