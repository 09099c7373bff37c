"""What Nova's scheduler reads to build its Placement query: the server (flavor, image, ports, availability
zone, project, boot from volume, scheduler hints, requested host/node) and the cloud facts its request filters
look up in Nova's and Neutron's databases (aggregates, whether every nova-compute reports OWNER_NOVA, the
routed networks' segments and their aggregates, the compute nodes of a requested host).

Frozen dataclasses of plain values. ``from_api`` reads each from what the APIs return (a flavor from Nova's
``GET /flavors/{id}`` with its extra specs, an image from Glance, a port from Neutron), so a use case passes
them as it reads them. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from minbw.errors import RequestError
from minbw.model.requests import PortRequest, RequestGroup


def _items(value, where: str) -> tuple[tuple[str, object], ...]:
    if value is None:
        return ()
    items = value.items() if isinstance(value, Mapping) else value
    try:
        return tuple((str(k), v) for k, v in items)
    except (TypeError, ValueError):
        raise RequestError(f"{where}: expected a mapping of names to values, got {value!r}.") from None


def _whole(value, where: str, *, empty_is_zero: bool = False) -> int:
    if empty_is_zero and value in ("", None):
        return 0
    if isinstance(value, bool):
        raise RequestError(f"{where}: expected a whole number, got {value!r}.")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise RequestError(f"{where}: expected a whole number, got {value!r}.") from None


@dataclass(frozen=True)
class Flavor:
    """A flavor as Nova's API shows it: ``vcpus``, ``ram`` (MB), ``disk`` (root GB), ``ephemeral`` (GB,
    ``OS-FLV-EXT-DATA:ephemeral``), ``swap`` (MB; the API's "" is 0) and ``extra_specs`` (string values,
    as Nova stores them)."""

    vcpus: int = 0
    ram: int = 0
    disk: int = 0
    ephemeral: int = 0
    swap: int = 0
    extra_specs: tuple[tuple[str, str], ...] = ()
    name: str = ""
    id: str = ""

    def __post_init__(self):
        for name in ("vcpus", "ram", "disk", "ephemeral", "swap"):
            where = f"flavor {self.name or self.id}".rstrip() + f": {name}"
            value = _whole(getattr(self, name), where, empty_is_zero=name == "swap")
            if value < 0:
                raise RequestError(
                    f"{where}: {value} is negative; Nova's flavors have none. Fix: pass the "
                    f"flavor as Nova's API shows it."
                )
            object.__setattr__(self, name, value)
        # nova.objects.Flavor.extra_specs is a DictOfStringsField: values become strings
        object.__setattr__(
            self,
            "extra_specs",
            tuple((k, v if isinstance(v, str) else str(v)) for k, v in _items(self.extra_specs, "flavor extra_specs")),
        )

    @property
    def specs(self) -> dict[str, str]:
        """The extra specs as a dict name → string value."""
        return dict(self.extra_specs)

    @classmethod
    def given(cls, resources: Mapping[str, int], required=(), group_policy: str | None = None) -> Flavor:
        """The flavor of a server given by its resources and traits (``!TRAIT``: forbidden): the extra specs an
        operator would write for them (``resources:CLASS``, ``trait:NAME=required|forbidden``, ``group_policy``),
        vcpus, ram and disk 0."""
        specs = {f"resources:{rc}": str(amount) for rc, amount in resources.items()}
        for t in required:
            specs[f"trait:{t.removeprefix('!')}"] = "forbidden" if t.startswith("!") else "required"
        if group_policy:
            specs["group_policy"] = group_policy
        return cls(extra_specs=tuple(specs.items()), name="given by its resources")

    @classmethod
    def from_api(cls, flavor: Mapping) -> Flavor:
        """From Nova's API flavor (``GET /flavors/{id}``, microversion 2.61+ for ``extra_specs``) or
        openstacksdk's ``Flavor.to_dict()`` (``ephemeral`` for ``OS-FLV-EXT-DATA:ephemeral``)."""
        if not isinstance(flavor, Mapping):
            raise RequestError(f"a flavor must be a mapping (Nova's API flavor), got {flavor!r}.")
        ephemeral = flavor.get("OS-FLV-EXT-DATA:ephemeral", flavor.get("ephemeral"))
        return cls(
            vcpus=flavor.get("vcpus") or 0,
            ram=flavor.get("ram") or 0,
            disk=flavor.get("disk") or 0,
            ephemeral=ephemeral or 0,
            swap=flavor.get("swap") or 0,
            extra_specs=flavor.get("extra_specs") or {},  # type: ignore[arg-type]  # __post_init__ checks it
            name=str(flavor.get("name") or ""),
            id=str(flavor.get("id") or ""),
        )


# Glance's base image attributes (its schema's base properties) and openstacksdk's names for them: every
# other attribute of an image is one of its properties (nova/image/glance.py _extract_attributes_v2)
_IMAGE_BASE = frozenset(
    {
        "id",
        "name",
        "status",
        "visibility",
        "protected",
        "checksum",
        "owner",
        "size",
        "virtual_size",
        "container_format",
        "disk_format",
        "created_at",
        "updated_at",
        "tags",
        "direct_url",
        "locations",
        "min_ram",
        "min_disk",
        "self",
        "schema",
        "file",
        "os_hidden",
        "os_hash_algo",
        "os_hash_value",
        "stores",
        "properties",
        "is_protected",
        "is_hidden",
        "owner_id",
        "hash_algo",
        "hash_value",
        "location",
        "url",
        "store",
        "metadata",
    }
)
# openstacksdk's Image attributes named otherwise than Glance's properties
_SDK_IMAGE_NAMES = {
    "needs_secure_boot": "os_secure_boot",
    "needs_config_drive": "img_config_drive",
    "is_hw_vif_multiqueue_enabled": "hw_vif_multiqueue_enabled",
    "is_hw_boot_menu_enabled": "hw_boot_menu",
    "has_auto_disk_config": "auto_disk_config",
}


@dataclass(frozen=True)
class Image:
    """An image as Glance shows it (or a volume's ``volume_image_metadata`` for a server booted from a
    volume): its ``disk_format`` and its properties (``trait:NAME=required``, ``hw_*``, ``os_secure_boot``)."""

    disk_format: str | None = None
    properties: tuple[tuple[str, object], ...] = ()
    name: str = ""
    id: str = ""

    def __post_init__(self):
        object.__setattr__(
            self,
            "properties",
            tuple(
                (k, v) for k, v in _items(self.properties, f"image {self.name or self.id}: properties") if v is not None
            ),
        )

    @property
    def props(self) -> dict[str, object]:
        """The properties as a dict name → value (None values dropped at construction)."""
        return dict(self.properties)

    @classmethod
    def from_api(cls, image: Mapping) -> Image:
        """From Glance's image (``GET /v2/images/{id}``: properties are top-level attributes) or
        openstacksdk's ``Image.to_dict()`` (some top-level, the rest under ``properties``)."""
        if not isinstance(image, Mapping):
            raise RequestError(f"an image must be a mapping (Glance's image), got {image!r}.")
        props = dict(_items(image.get("properties"), "image properties"))
        props.update(
            (_SDK_IMAGE_NAMES.get(k, k), v) for k, v in image.items() if k not in _IMAGE_BASE and v is not None
        )
        return cls(
            disk_format=image.get("disk_format"),
            properties=tuple(props.items()),
            name=str(image.get("name") or ""),
            id=str(image.get("id") or ""),
        )


@dataclass(frozen=True)
class Port:
    """A Neutron port of the server: its vnic type, its ``resource_request`` (either Neutron format; None
    without minimum rules), its network and the subnets of its fixed IPs (for routed networks). ``id`` may be
    left out for a request in the extended format, whose groups carry their own ids (a port given by its
    ``resource_request`` alone).

    No request filter reads ``binding:profile``: its capabilities matter to the PCI filters only after the
    Placement query (Nova 34 does not put the PCI requests of ports in Placement)."""

    id: str
    vnic_type: str = "normal"
    request: PortRequest | None = None
    network_id: str | None = None
    subnet_ids: tuple[str, ...] = ()

    def __post_init__(self):
        needs_id = self.request is None or self.request.legacy
        if (self.id is not None and not isinstance(self.id, str)) or (not self.id and needs_id):
            # the extended format names its groups itself (RequestGroup.from_extended_port_request); the legacy
            # one after the port (RequestGroup.from_port_request), as does a routed network's filter
            raise RequestError(
                f"a port needs its id (Nova names a legacy resource_request's group after it), got "
                f"{self.id!r}. Fix: give the port's id (PORT_ID=FILE, or 'id' in the port's JSON)."
            )
        object.__setattr__(self, "subnet_ids", tuple(self.subnet_ids))

    @property
    def label(self) -> str:
        """How errors name the port: its id, or its request groups' ids."""
        if self.id:
            return f"port {self.id}"
        return "the port of request group(s) " + ", ".join(g.id for g in (self.request.groups if self.request else ()))

    @classmethod
    def from_api(cls, port: Mapping) -> Port:
        """From Neutron's port: ``id``, ``binding:vnic_type``, ``resource_request``, ``network_id``,
        ``fixed_ips`` (openstacksdk's ``binding_vnic_type`` too)."""
        if not isinstance(port, Mapping):
            raise RequestError(f"a port must be a mapping (Neutron's port), got {port!r}.")
        pid = port.get("id") or port.get("port_id")
        vnic = port.get("binding:vnic_type") or port.get("binding_vnic_type") or "normal"
        request = PortRequest.from_neutron(port.get("resource_request"), port_id=pid)
        subnets = tuple(ip.get("subnet_id") for ip in port.get("fixed_ips") or () if isinstance(ip, Mapping))
        return cls(
            id=pid,  # type: ignore[arg-type]  # None: a port given by its extended request (__post_init__)
            vnic_type=vnic,
            request=request,
            network_id=port.get("network_id"),
            subnet_ids=tuple(s for s in subnets if s),
        )


@dataclass(frozen=True)
class Server:
    """The server Nova schedules: what the request filters and ``ResourceRequest`` read of it.

    ``scheduler_hints`` are the hints' names (``group``, ``same_host`` and ``different_host`` lift Nova's
    limit); ``host``/``node`` are a requested destination (API microversion 2.74's ``host`` and
    ``hypervisor_hostname``); ``device_profile_groups`` are the request groups Cyborg gives for the flavor's
    ``accel:device_profile`` (Nova adds them as they are; minbw does not read Cyborg)."""

    flavor: Flavor
    image: Image = field(default_factory=Image)
    ports: tuple[Port, ...] = ()
    availability_zone: str | None = None
    project_id: str | None = None
    boot_from_volume: bool = False
    scheduler_hints: tuple[str, ...] = ()
    host: str | None = None
    node: str | None = None
    device_profile_groups: tuple[RequestGroup, ...] = ()

    def __post_init__(self):
        if not isinstance(self.flavor, Flavor):
            object.__setattr__(self, "flavor", Flavor.from_api(self.flavor))
        if self.image is None:
            object.__setattr__(self, "image", Image())
        elif not isinstance(self.image, Image):
            object.__setattr__(self, "image", Image.from_api(self.image))
        object.__setattr__(self, "ports", tuple(p if isinstance(p, Port) else Port.from_api(p) for p in self.ports))
        hints = self.scheduler_hints.keys() if isinstance(self.scheduler_hints, Mapping) else self.scheduler_hints
        object.__setattr__(self, "scheduler_hints", tuple(sorted(set(hints))))
        object.__setattr__(self, "device_profile_groups", tuple(self.device_profile_groups))
        if self.availability_zone is not None and ":" in self.availability_zone:
            raise RequestError(
                f"availability zone {self.availability_zone!r}: the AZ:HOST[:NODE] form forces a "
                f"host past the scheduler (Nova's admin-only forced host), so no Placement query "
                f"is made. Fix: give the zone alone, and the host as host=/node=."
            )


@dataclass(frozen=True)
class Aggregate:
    """A Nova host aggregate: its uuid (mirrored in Placement) and metadata."""

    uuid: str
    metadata: tuple[tuple[str, str], ...] = ()
    name: str = ""

    def __post_init__(self):
        object.__setattr__(
            self,
            "metadata",
            tuple((k, str(v)) for k, v in _items(self.metadata, f"aggregate {self.name or self.uuid}: metadata")),
        )

    @classmethod
    def from_api(cls, aggregate: Mapping) -> Aggregate:
        """From Nova's ``GET /os-aggregates`` entry (``uuid``, ``metadata``, ``name``)."""
        return cls(
            uuid=aggregate.get("uuid"),  # type: ignore[arg-type]  # as Nova gives it
            metadata=aggregate.get("metadata") or {},  # type: ignore[arg-type]  # __post_init__ checks it
            name=str(aggregate.get("name") or ""),
        )


@dataclass(frozen=True)
class Subnet:
    """A Neutron subnet: its network and segment (None on a network that is not routed)."""

    id: str
    network_id: str
    segment_id: str | None = None


@dataclass(frozen=True)
class ComputeNode:
    """A nova-compute node: its service host, hypervisor hostname and uuid (its root provider's)."""

    host: str
    node: str
    uuid: str


@dataclass(frozen=True)
class CloudFacts:
    """What Nova's request filters look up in the cloud, given in.

    ``every_compute_reports_owner_nova``: Nova checks that the minimum nova-compute service version in all
    cells is at least 73 (``request_filter._should_filter_by_owner``), the version that reports the
    OWNER_NOVA trait on its providers; the caller decides it (no default: an unknown answer changes the query;
    :mod:`minbw.nova.owner` reads it from Nova's API or Placement), ``owner_nova_why`` says how.
    ``aggregates``: Nova's host aggregates (availability zones, tenant isolation, isolate_aggregates).
    ``subnets`` and ``segment_aggregates`` (segment id → its provider's aggregates in Placement): read when
    ``[scheduler] query_placement_for_routed_network_aggregates`` is on; ``compute_nodes``: read for a
    requested host/node.
    """

    every_compute_reports_owner_nova: bool
    aggregates: tuple[Aggregate, ...] = ()
    owner_nova_why: str = ""
    subnets: tuple[Subnet, ...] = ()
    segment_aggregates: tuple[tuple[str, tuple[str, ...]], ...] = ()
    compute_nodes: tuple[ComputeNode, ...] = ()

    def __post_init__(self):
        if not isinstance(self.every_compute_reports_owner_nova, bool):
            raise RequestError(
                "every_compute_reports_owner_nova must be true or false (whether every "
                "nova-compute is at service version 73 or later), got "
                f"{self.every_compute_reports_owner_nova!r}."
            )
        object.__setattr__(
            self, "aggregates", tuple(a if isinstance(a, Aggregate) else Aggregate.from_api(a) for a in self.aggregates)
        )
        object.__setattr__(self, "subnets", tuple(self.subnets))
        pairs = (
            self.segment_aggregates.items() if isinstance(self.segment_aggregates, Mapping) else self.segment_aggregates
        )
        object.__setattr__(self, "segment_aggregates", tuple((str(s), tuple(a)) for s, a in pairs))
        object.__setattr__(self, "compute_nodes", tuple(self.compute_nodes))


def ports_of(values: Iterable) -> tuple[Port, ...]:
    """Ports from Neutron's port dicts (or Port objects)."""
    return tuple(v if isinstance(v, Port) else Port.from_api(v) for v in values)
