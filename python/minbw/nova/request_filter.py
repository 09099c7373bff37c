"""Nova 34's scheduler request filters (``nova.scheduler.request_filter.ALL_REQUEST_FILTERS``), each under
Nova's own condition, as small pure functions.

Each takes the server, the options, the cloud facts and the request spec so far (``Spec``), and returns the
changed spec and a ``FilterResult``: the filter's name, whether it ran (Nova's return value: enabled and not
excluded), why, and what it added (``root_forbidden COMPUTE_STATUS_DISABLED``, ``member_of in:A,B``, ...). A
filter that refuses the server raises ``errors.RequestFilterFailed`` (Nova: RequestFilterFailed, then "No
valid host"). The database and Neutron look-ups Nova makes are answered from ``CloudFacts``. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from minbw.errors import RequestError, RequestFilterFailed
from minbw.nova import fields, hardware
from minbw.nova.inputs import CloudFacts, Server
from minbw.nova.options import SchedulerOptions
from minbw.nova.resource_request import Spec, all_required_traits

TENANT_METADATA_KEY = "filter_tenant_id"  # request_filter.TENANT_METADATA_KEY
MIN_COMPUTE_VERSION_OWNER_TRAIT = 73  # request_filter.MIN_COMPUTE_VERSION_OWNER_TRAIT
# transform_image_metadata's prefix_map, in Nova's order
IMAGE_TRAIT_PREFIXES = (
    ("hw_cdrom_bus", "COMPUTE_STORAGE_BUS"),
    ("hw_disk_bus", "COMPUTE_STORAGE_BUS"),
    ("hw_video_model", "COMPUTE_GRAPHICS_MODEL"),
    ("hw_vif_model", "COMPUTE_NET_VIF_MODEL"),
    ("hw_architecture", "HW_ARCH"),
    ("hw_emulation_architecture", "COMPUTE_ARCH"),
    ("hw_viommu_model", "COMPUTE_VIOMMU"),
)


@dataclass(frozen=True)
class FilterResult:
    """What one request filter did: ``ran`` is Nova's return value; ``added`` what it put in the query."""

    name: str
    ran: bool
    why: str
    added: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.name}: {', '.join(self.added) if self.added else 'nothing added'} ({self.why})"

    def to_dict(self) -> dict:
        """The result as a JSON-ready dict: filter, ran, why, added."""
        return {"filter": self.name, "ran": self.ran, "why": self.why, "added": list(self.added)}


@dataclass(frozen=True)
class Context:
    """What the filters read besides the spec."""

    server: Server
    options: SchedulerOptions
    facts: CloudFacts


Filter = Callable[[Context, Spec], "tuple[Spec, FilterResult]"]


def _root_required(spec: Spec, *traits: str) -> Spec:
    return dataclasses.replace(spec, root_required=spec.root_required | set(traits))


def _require_aggregates(spec: Spec, uuids) -> Spec:
    """Destination.require_aggregates: one more OR list, AND-ed with the others."""
    return dataclasses.replace(spec, aggregates=(*spec.aggregates, tuple(sorted(uuids))))


def _off(name: str, option: str) -> FilterResult:
    return FilterResult(name, False, f"off: [scheduler] {option} = False")


def require_tenant_aggregate(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """When limit_tenants_to_placement_aggregate is on, one ``member_of in:`` of the aggregates whose filter_tenant_id*
    metadata names the project: the spec and its FilterResult. Raises RequestError without a project,
    RequestFilterFailed when none does and placement_aggregate_required_for_tenants is on."""
    name = "require_tenant_aggregate"
    if not ctx.options.limit_tenants_to_placement_aggregate:
        return spec, _off(name, "limit_tenants_to_placement_aggregate")
    project = ctx.server.project_id
    if not project:
        raise RequestError(
            "[scheduler] limit_tenants_to_placement_aggregate is on: Nova looks up the aggregates "
            "of the server's project. Fix: give the project (id) the server is created in."
        )
    # AggregateList.get_by_metadata(value=project): only the metadata rows with that value are loaded
    uuids = {
        a.uuid
        for a in ctx.facts.aggregates
        if any(k.startswith(TENANT_METADATA_KEY) and v == project for k, v in a.metadata)
    }
    if uuids:
        spec = _require_aggregates(spec, uuids)
        return spec, FilterResult(
            name,
            True,
            f"project {project}: the aggregates whose metadata {TENANT_METADATA_KEY}* names it",
            (f"member_of in:{','.join(sorted(uuids))}",),
        )
    if ctx.options.placement_aggregate_required_for_tenants:
        raise RequestFilterFailed(
            name,
            "No hosts available for tenant",
            fix=(
                f"give project {project} an aggregate (metadata {TENANT_METADATA_KEY}={project}), or set [scheduler] "
                f"placement_aggregate_required_for_tenants = False."
            ),
        )
    return spec, FilterResult(name, True, f"project {project} has no aggregate ({TENANT_METADATA_KEY}*): any host")


def map_az_to_placement_aggregate(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """For a requested availability zone, one ``member_of in:`` of the aggregates with that availability_zone metadata
    (none: any host): the spec and its FilterResult."""
    name, az = "map_az_to_placement_aggregate", ctx.server.availability_zone
    if not az:
        return spec, FilterResult(name, False, "no availability zone requested")
    uuids = [a.uuid for a in ctx.facts.aggregates if dict(a.metadata).get("availability_zone") == az]
    if uuids:
        return _require_aggregates(spec, uuids), FilterResult(
            name,
            True,
            f"availability zone {az!r}: the aggregates with availability_zone={az}",
            (f"member_of in:{','.join(sorted(uuids))}",),
        )
    return spec, FilterResult(name, True, f"availability zone {az!r} names no aggregate: any host")


def require_image_type_support(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """When query_placement_for_image_type_support is on and the server boots from an image, ``root_required
    COMPUTE_IMAGE_TYPE_<disk format>`` (nothing for a format os-traits lacks): the spec and its FilterResult."""
    name = "require_image_type_support"
    if not ctx.options.query_placement_for_image_type_support:
        return spec, _off(name, "query_placement_for_image_type_support")
    if ctx.server.boot_from_volume:
        return spec, FilterResult(name, False, "boot from volume: the image's disk format does not matter")
    disk_format = ctx.server.image.disk_format or ""
    trait = f"COMPUTE_IMAGE_TYPE_{disk_format.upper()}"
    if trait not in fields.COMPUTED_TRAITS:
        return spec, FilterResult(
            name,
            False,
            f"disk format {disk_format!r}: {trait} is no trait of os-traits (Nova logs an error and adds nothing)",
        )
    return _root_required(spec, trait), FilterResult(
        name, True, f"image disk format {disk_format}", (f"root_required {trait}",)
    )


def compute_status_filter(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """Always ``root_forbidden COMPUTE_STATUS_DISABLED``: the spec and its FilterResult."""
    trait = fields.COMPUTE_STATUS_DISABLED
    return (
        dataclasses.replace(spec, root_forbidden=spec.root_forbidden | {trait}),
        FilterResult("compute_status_filter", True, "always", (f"root_forbidden {trait}",)),
    )


def isolate_aggregates(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """When enable_isolated_aggregate_filtering is on, ``member_of !in:`` the aggregates requiring
    (``trait:NAME=required``) a trait the server does not: the spec and its FilterResult. Raises RequestError when
    the flavor, image or ports are ones Nova refuses (all_required_traits assembles the request)."""
    name = "isolate_aggregates"
    if not ctx.options.enable_isolated_aggregate_filtering:
        return spec, _off(name, "enable_isolated_aggregate_filtering")
    keys = {f"trait:{t}" for t in all_required_traits(ctx.server)}
    # AggregateList.get_non_matching_by_metadata_keys(keys, 'trait:', value='required'): SQL
    # "key LIKE 'trait:%'" (case-insensitive for ASCII) and "value = 'required'" and "key NOT IN keys"
    isolated = {
        a.uuid
        for a in ctx.facts.aggregates
        if any(k[:6].lower() == "trait:" and v == "required" and k not in keys for k, v in a.metadata)
    }
    if isolated:
        spec = dataclasses.replace(spec, forbidden_aggregates=spec.forbidden_aggregates | isolated)
        return spec, FilterResult(
            name,
            True,
            "aggregates requiring (trait:NAME=required) traits the flavor and image do not require",
            (f"member_of !in:{','.join(sorted(isolated))}",),
        )
    return spec, FilterResult(name, True, "no aggregate requires a trait the server does not")


def transform_image_metadata(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """When image_metadata_prefilter is on, ``root_required`` the traits of the image's bus, video, vif, architecture
    and viommu properties (none if one is no os-traits trait): the spec and its FilterResult. Raises RequestError when
    image_meta refuses a property."""
    name = "transform_image_metadata"
    if not ctx.options.image_metadata_prefilter:
        return spec, _off(name, "image_metadata_prefilter")
    meta = hardware.image_meta(ctx.server.image)
    traits = []
    for key, prefix in IMAGE_TRAIT_PREFIXES:
        if key in meta:
            trait = f"{prefix}_{str(meta[key]).replace('-', '_').upper()}"
            if trait not in fields.COMPUTED_TRAITS:
                return spec, FilterResult(
                    name,
                    False,
                    f"image property {key}={meta[key]}: {trait} is no trait of "
                    f"os-traits (Nova logs an error and adds none of them)",
                )
            traits.append(trait)
    return _root_required(spec, *traits), FilterResult(
        name,
        True,
        "image properties " + (", ".join(k for k, _trait in IMAGE_TRAIT_PREFIXES if k in meta) or "(none)"),
        tuple(f"root_required {t}" for t in traits),
    )


def accelerators_filter(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """For a flavor with accel:device_profile, ``root_required COMPUTE_ACCELERATORS``: the spec and its FilterResult.
    Raises RequestError when the server's device_profile_groups are not given."""
    name = "accelerators_filter"
    profile = ctx.server.flavor.specs.get("accel:device_profile")
    if profile:
        if not ctx.server.device_profile_groups:
            raise RequestError(
                f"the flavor's accel:device_profile={profile!r}: Nova adds that Cyborg device "
                f"profile's request groups, which minbw does not read. Fix: pass them as the "
                f"server's device_profile_groups, or ask about a flavor without a device profile."
            )
        return _root_required(spec, fields.COMPUTE_ACCELERATORS), FilterResult(
            name,
            True,
            f"flavor extra spec accel:device_profile={profile}",
            (f"root_required {fields.COMPUTE_ACCELERATORS}",),
        )
    return spec, FilterResult(name, True, "no accel:device_profile in the flavor")


def packed_virtqueue_filter(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """For a packed virtqueue asked by flavor or image, ``root_required COMPUTE_NET_VIRTIO_PACKED``: the spec and its
    FilterResult. Raises RequestError when image_meta refuses a property or flavor and image disagree."""
    name = "packed_virtqueue_filter"
    meta = hardware.image_meta(ctx.server.image)
    if hardware.get_packed_virtqueue_constraint(ctx.server.flavor, meta):
        return _root_required(spec, fields.COMPUTE_NET_VIRTIO_PACKED), FilterResult(
            name,
            True,
            "hw:virtio_packed_ring (flavor) / hw_virtio_packed_ring (image) is true",
            (f"root_required {fields.COMPUTE_NET_VIRTIO_PACKED}",),
        )
    return spec, FilterResult(name, True, "no packed virtqueue requested")


def routed_networks_filter(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """When query_placement_for_routed_network_aggregates is on, one ``member_of in:`` per port on a routed network (its
    subnet's segment's aggregates, else its network's segments'): the spec and its FilterResult. Raises RequestError
    when the facts lack the port's subnet or network's subnets, RequestFilterFailed when a segment has no aggregate."""
    name = "routed_networks_filter"
    if not ctx.options.query_placement_for_routed_network_aggregates:
        return spec, _off(name, "query_placement_for_routed_network_aggregates")
    if not ctx.server.ports:
        return spec, FilterResult(name, True, "no port requested: any host")
    facts = ctx.facts
    subnets = {s.id: s for s in facts.subnets}
    segment_aggs = dict(facts.segment_aggregates)
    added, routed = [], []

    def aggregates_of(segment: str, failure: str) -> tuple[str, ...]:
        """The segment's aggregates, a tuple. Raises RequestFilterFailed with ``failure`` when it has none."""
        aggs = segment_aggs.get(segment)
        if not aggs:
            raise RequestFilterFailed(
                name,
                failure,
                fix=(
                    f"make sure segment {segment}'s resource provider is in an aggregate in Placement (Neutron's "
                    f"segments plugin does that for segments with an IPv4 subnet and hosts)."
                ),
            )
        return tuple(aggs)

    for port in ctx.server.ports:
        if port.subnet_ids:
            subnet = subnets.get(port.subnet_ids[0])
            if subnet is None:
                raise RequestError(
                    f"port {port.id}: routed_networks_filter is on and the cloud facts do not "
                    f"describe its subnet {port.subnet_ids[0]}. Fix: pass the subnets of the "
                    f"server's networks (with their segments)."
                )
            aggs = (
                aggregates_of(subnet.segment_id, f"Aggregates not found for the subnet {subnet.id}")
                if subnet.segment_id
                else ()
            )
        else:
            if not any(s.network_id == port.network_id for s in facts.subnets) and port.network_id:
                raise RequestError(
                    f"port {port.id}: routed_networks_filter is on and the cloud facts do not "
                    f"describe the subnets of its network {port.network_id}. Fix: pass the "
                    f"subnets of the server's networks (with their segments)."
                )
            aggs = ()
            for s in facts.subnets:  # get_segment_ids_for_network: the network's subnets' segments
                if s.network_id == port.network_id and s.segment_id is not None:
                    aggs += aggregates_of(s.segment_id, f"Aggregates not found for the network {port.network_id}")
        if aggs:
            spec = _require_aggregates(spec, aggs)
            added.append(f"member_of in:{','.join(sorted(aggs))}")
            routed.append(port.id)
    return spec, FilterResult(
        name,
        True,
        f"the segments of port(s) {', '.join(routed)} on routed networks" if routed else "no port on a routed network",
        tuple(added),
    )


def remote_managed_ports_filter(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """For a remote-managed port, ``root_required COMPUTE_REMOTE_MANAGED_PORTS``: the spec and its FilterResult."""
    name = "remote_managed_ports_filter"
    ports = [p.id for p in ctx.server.ports if p.vnic_type == fields.VNIC_TYPE_REMOTE_MANAGED]
    if ports:
        return _root_required(spec, fields.COMPUTE_REMOTE_MANAGED_PORTS), FilterResult(
            name,
            True,
            f"port(s) {', '.join(ports)} of vnic type remote-managed",
            (f"root_required {fields.COMPUTE_REMOTE_MANAGED_PORTS}",),
        )
    return spec, FilterResult(name, True, "no remote-managed port")


def ephemeral_encryption_filter(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """For ephemeral encryption asked by flavor or image, ``root_required COMPUTE_EPHEMERAL_ENCRYPTION`` (and
    ``_<FORMAT>`` for a format): the spec and its FilterResult. Raises RequestError as image_meta and the hardware
    getters do."""
    name = "ephemeral_encryption_filter"
    flavor, meta = ctx.server.flavor, hardware.image_meta(ctx.server.image)
    if not hardware.get_ephemeral_encryption_constraint(flavor, meta):
        return spec, FilterResult(name, False, "no ephemeral encryption requested")
    traits = [fields.COMPUTE_EPHEMERAL_ENCRYPTION]
    fmt = hardware.get_ephemeral_encryption_format(flavor, meta)
    if fmt:
        traits.append(f"COMPUTE_EPHEMERAL_ENCRYPTION_{fmt.upper()}")
    return _root_required(spec, *traits), FilterResult(
        name,
        True,
        "hw:ephemeral_encryption (flavor) / hw_ephemeral_encryption (image) is true",
        tuple(f"root_required {t}" for t in traits),
    )


def virtio_sound_filter(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """For the virtio sound model, ``root_required COMPUTE_SOUND_MODEL_VIRTIO``: the spec and its FilterResult. Raises
    RequestError as image_meta and get_sound_model do."""
    name = "virtio_sound_filter"
    model = hardware.get_sound_model(ctx.server.flavor, hardware.image_meta(ctx.server.image))
    if model != "virtio":
        return spec, FilterResult(name, False, "no virtio sound device requested")
    return _root_required(spec, fields.COMPUTE_SOUND_MODEL_VIRTIO), FilterResult(
        name,
        True,
        "sound model virtio (hw:sound_model / hw_sound_model)",
        (f"root_required {fields.COMPUTE_SOUND_MODEL_VIRTIO}",),
    )


def tpm_secret_security_filter(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """For a vTPM, ``root_required`` the trait of the flavor's hw:tpm_secret_security (default user): the spec and its
    FilterResult. Raises RequestError as image_meta and get_vtpm_constraint do, RequestFilterFailed for an unknown
    security."""
    name = "tpm_secret_security_filter"
    flavor = ctx.server.flavor
    if hardware.get_vtpm_constraint(flavor, hardware.image_meta(ctx.server.image)) is None:
        return spec, FilterResult(name, False, "no vTPM requested")
    security = hardware.get_tpm_secret_security_constraint(flavor) or "user"
    trait = fields.TPM_SECRET_SECURITY.get(security)
    if trait is None:
        raise RequestFilterFailed(
            name,
            f"TPM secret security '{security}' is not supported.",
            fix=(f"set the flavor's hw:tpm_secret_security to one of {', '.join(fields.TPM_SECRET_SECURITY)}."),
        )
    return _root_required(spec, trait), FilterResult(
        name, True, f"vTPM with secret security {security}", (f"root_required {trait}",)
    )


def owner_nova_filter(ctx: Context, spec: Spec) -> tuple[Spec, FilterResult]:
    """When every nova-compute reports OWNER_NOVA (the facts say so), ``root_required OWNER_NOVA``: the spec and its
    FilterResult."""
    name = "owner_nova_filter"
    if fields.OWNER_NOVA in spec.root_required:
        return spec, FilterResult(name, True, "OWNER_NOVA is already required")
    how = f": {ctx.facts.owner_nova_why}" if ctx.facts.owner_nova_why else ""
    if not ctx.facts.every_compute_reports_owner_nova:
        return spec, FilterResult(
            name,
            False,
            f"not every nova-compute is at service version "
            f"{MIN_COMPUTE_VERSION_OWNER_TRAIT} or later (reports OWNER_NOVA){how}",
        )
    return _root_required(spec, fields.OWNER_NOVA), FilterResult(
        name,
        True,
        f"every nova-compute is at service version {MIN_COMPUTE_VERSION_OWNER_TRAIT} or later{how}",
        (f"root_required {fields.OWNER_NOVA}",),
    )


# request_filter.ALL_REQUEST_FILTERS, in Nova's order
ALL_REQUEST_FILTERS: tuple[Filter, ...] = (
    require_tenant_aggregate,
    map_az_to_placement_aggregate,
    require_image_type_support,
    compute_status_filter,
    isolate_aggregates,
    transform_image_metadata,
    accelerators_filter,
    packed_virtqueue_filter,
    routed_networks_filter,
    remote_managed_ports_filter,
    ephemeral_encryption_filter,
    virtio_sound_filter,
    tpm_secret_security_filter,
    owner_nova_filter,
)


def process_reqspec(
    server: Server, options: SchedulerOptions, facts: CloudFacts, spec: Spec | None = None
) -> tuple[Spec, tuple[FilterResult, ...]]:
    """request_filter.process_reqspec: every filter in order, over the request spec."""
    ctx, spec, results = Context(server, options, facts), spec or Spec(), []
    for f in ALL_REQUEST_FILTERS:
        spec, result = f(ctx, spec)
        results.append(result)
    return spec, tuple(results)
