"""What a server asks for, as the use cases that ask Placement "where" take it (:class:`ServerSpec`, its Nova
fields in :class:`NovaServer`), and the request it becomes: Nova 34's query (:func:`nova_query`, its request filters
and ResourceRequest, :mod:`minbw.nova`) then minbw's own (routed segments, ``in_tree``, separation). Shared by
``candidate list``, the claims, the moves, the capacity report, the schedule and the exporter."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import cast

from minbw.errors import InvalidInput, NoValidHost
from minbw.model.requests import ServerRequest, port_request_of
from minbw.model.resources import check_resources
from minbw.neutron.port_request import QosPort
from minbw.neutron.segments import SegmentChoice
from minbw.nova.inputs import Flavor, Image, Port, Server
from minbw.nova.options import SchedulerOptions
from minbw.nova.scheduler import NovaQuery, query
from minbw.ops.nova_query import cloud_facts, prefiltered_hosts, read_flavor, read_image, read_scheduler_options
from minbw.ops.schedule import explain_segments, read_ports, with_ports
from minbw.plan.separation import Separation, separate
from minbw.reports.diagnosis import NOVA, TOGETHER, Diagnosis, summary
from minbw.usecases.cloud import Cloud

# a port described by its rules gets a group id derived from its port id: made up, stable per position
_QOS_PORT_NS = "b1c1a7c4-8f2e-5d0a-9a55-3f1e2d4c6b70"


@dataclass(frozen=True, kw_only=True)
class NovaServer:
    """The server as operators name it to Nova: a flavor (name or id; ``flavor_option`` names it in errors), an
    image, an availability zone, a project, and Nova's scheduler options by Nova's names (``nova_options``:
    ``section.option=value``; ``nova_conf``: a nova.conf to read them from; Nova's defaults otherwise);
    ``owner_nova`` whether every nova-compute reports OWNER_NOVA (None: read from Placement,
    :mod:`minbw.ops.nova_query`). Every request that asks Placement "where" has these (keywords only)."""

    flavor: str | None = None
    image: str | None = None
    availability_zone: str | None = None
    project: str | None = None
    nova_options: tuple[str, ...] = ()
    nova_conf: str | None = None
    owner_nova: bool | None = None
    flavor_option: str = "flavor"

    def __post_init__(self):
        object.__setattr__(self, "nova_options", tuple(self.nova_options or ()))

    def scheduler_options(self) -> SchedulerOptions:
        """Nova's scheduler options: its defaults, then ``nova_conf``'s, then ``nova_options``. Raises InvalidInput
        when ``nova_conf`` cannot be read, ConfigError for an option that cannot be used."""
        return read_scheduler_options(self.nova_options, self.nova_conf)


@dataclass(frozen=True)
class ServerSpec(NovaServer):
    """What a server asks Placement for, as plain values: its flavor (a Nova flavor by name or id, or its
    resources and traits given here), its image (a Glance image by name or id), its ports (as their
    ``resource_request`` JSON, as Neutron ports by name or id, or described by their QoS rules), its availability
    zone and project, and the request-wide filters (:class:`NovaServer` has the fields Nova reads). ``option``
    names the resources' option in errors (``--resource`` / ``resources``)."""

    resources: Mapping[str, int] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    port_requests: tuple[Mapping, ...] = ()
    qos_ports: tuple[QosPort, ...] = ()
    ports: tuple[str, ...] = ()
    any_traits: bool = False
    group_policy: str | None = None
    in_tree: str | None = None
    root_required: tuple[str, ...] = ()
    limit: int | None = None
    separation: Separation | None = None
    option: str = "resources"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "resources", MappingProxyType(check_resources(self.resources, self.option)))
        check_flavor_or_resources(
            self.flavor, self.resources, self.required, self.group_policy, self.flavor_option, self.option
        )

    @property
    def empty(self) -> bool:
        """Whether the spec asks for nothing: no resources, traits, ports or flavor."""
        return not (
            self.resources or self.required or self.port_requests or self.qos_ports or self.ports or self.flavor
        )


def check_flavor_or_resources(
    flavor, resources, required, group_policy, flavor_option: str, resources_option: str
) -> None:
    """A server is given by a Nova flavor or by its resources and traits, not both."""
    if flavor and (resources or required or group_policy):
        raise InvalidInput(
            f"{flavor_option} {flavor}: the flavor gives the server's resources, traits and "
            f"group_policy (its extra specs). Fix: give either a flavor or {resources_option} (with "
            f"required / group_policy), not both."
        )


def qos_port_request(index: int, port: QosPort):
    """The request of a port described by its rules (the ``index``-th of the server's): on its own segments, or,
    with no network given, on any physnet."""
    import uuid

    return port.open_request(port.port_id or str(uuid.uuid5(uuid.UUID(_QOS_PORT_NS), f"qos-port-{index}")))[0]


def server_request(cloud: Cloud, spec: ServerSpec) -> tuple[ServerRequest, tuple[SegmentChoice, ...]]:
    """The core's request for ``spec``, and each Neutron port's routed segments (empty when none).

    The request is the one Nova 34's scheduler builds (:func:`nova_query`: its request filters and its
    ResourceRequest, :mod:`minbw.nova`), then minbw's own: Neutron ports on a routed network get ``member_of``
    their segments' aggregates (segments without free addresses left out), ``in_tree``, ``root_required`` and
    ``limit`` as given, and the separation keeps the server off or onto the reserved hosts."""
    return nova_query(cloud, spec)[:2]


def nova_query(cloud: Cloud, spec: ServerSpec) -> tuple[ServerRequest, tuple[SegmentChoice, ...], NovaQuery | None]:
    """:func:`server_request`, with Nova's query it starts from (None for a spec that asks for nothing)."""
    options = spec.scheduler_options()
    port_plans: list = []
    if spec.ports:
        cloud.require(
            "network",
            "Neutron ports are read from Neutron",
            fix="describe the ports instead (--port-request FILE or --qos-port RULES; the modules' "
            "port_requests or qos_ports)",
        )
        port_plans = read_ports(cloud.conn, spec.ports, any_traits=spec.any_traits, allow_bound=True)
    given = (port_request_of(v) for v in spec.port_requests)
    built = (qos_port_request(i, p) for i, p in enumerate(spec.qos_ports))
    ports = [Port(p.port_id, request=p) for p in (*given, *built) if p]
    ports += [p.nova_port() for p in port_plans]
    nq = None
    if spec.empty:
        req = ServerRequest()
    else:
        nq = nova_server_query(
            cloud,
            options,
            flavor=spec.flavor,
            resources=spec.resources,
            required=spec.required,
            group_policy=spec.group_policy,
            image=spec.image,
            ports=tuple(ports),
            availability_zone=spec.availability_zone,
            project=spec.project,
            owner_nova=spec.owner_nova,
            flavor_option=spec.flavor_option,
        )
        req = nq.request
    extra_root = tuple(t for t in spec.root_required if not t.startswith("!"))
    req = dataclasses.replace(
        req,
        in_tree=spec.in_tree or req.in_tree,
        limit=spec.limit if spec.limit is not None else req.limit,
        root_required=req.root_required + extra_root,
        root_forbidden=req.root_forbidden + tuple(t[1:] for t in spec.root_required if t.startswith("!")),
    )
    segments: tuple[SegmentChoice, ...] = ()
    if port_plans:
        req, segments = with_ports(cloud.conn, cloud.placement, req, port_plans, add_groups=False)
    if spec.separation is not None:
        req = separate(req, spec.separation)
    return req, segments, nq


# the flavor of a server whose flavor does not matter (its ports alone are counted, or only what Nova's request
# filters ask of every compute node is wanted): Nova's query always has one; whoever uses it does not count it
STAND_IN = MappingProxyType({"VCPU": 1})


def nova_root_filters(cloud: Cloud, options: SchedulerOptions | None = None, **server) -> NovaQuery:
    """Nova's query for a server whose flavor does not matter (:data:`STAND_IN`): for what its request filters
    ask of every compute node (``root_required``, ``root_forbidden``; :func:`nova_server_query`'s ``server``
    keywords but the flavor's)."""
    return nova_server_query(cloud, options or SchedulerOptions(), resources=STAND_IN, **server)


def nova_server_query(
    cloud: Cloud,
    options: SchedulerOptions,
    *,
    flavor: str | None = None,
    resources: Mapping[str, int] | None = None,
    required=(),
    group_policy: str | None = None,
    image: str | None = None,
    ports: tuple = (),
    availability_zone: str | None = None,
    project: str | None = None,
    owner_nova: bool | None = None,
    flavor_option: str = "flavor",
) -> NovaQuery:
    """Nova 34's query for a server (:func:`minbw.nova.scheduler.query`): its flavor read from Nova (``flavor``:
    name or id) or given by ``resources``, ``required`` and ``group_policy``; its image read from Glance; the
    facts its request filters read (:func:`minbw.ops.nova_query.cloud_facts`)."""
    if flavor or image or availability_zone:
        cloud.require(
            "compute",
            "a flavor, an image or an availability zone is Nova's",
            fix="give the flavor's resources instead (--resource; the modules' resources)",
        )
    server = Server(
        flavor=read_flavor(cloud.conn, flavor, flavor_option)
        if flavor
        else Flavor.given(resources or {}, required, group_policy),
        image=read_image(cloud.conn, image) if image else Image(),
        ports=ports,
        availability_zone=availability_zone,
        project_id=project,
    )
    has_compute = cloud.has("compute")
    facts = cloud_facts(
        cloud.placement,
        cloud.conn if has_compute or ports else None,
        options,
        availability_zone=availability_zone,
        owner_nova=owner_nova,
        has_compute=has_compute,
        ports=server.ports,
    )
    return query(server, options, facts)


def nova_diagnosis(removed: list[dict], diagnosis: Sequence[Diagnosis]) -> list[Diagnosis]:
    """``diagnosis`` (a list of Diagnosis) with, first, the hosts Nova's request filters remove (``removed``:
    :func:`minbw.ops.nova_query.prefiltered_hosts`); where every group fits only on such hosts, the groups
    together are said to fit there, and not to lack room. Raises nothing."""
    if not removed:
        return list(diagnosis)
    gone = {h for r in removed for h in r["hosts"]}
    entry = Diagnosis(
        "nova",
        "Nova's request filters",
        tuple(f"{r['filter']} removes {', '.join(r['hosts'])} ({r['reason']})" for r in removed),
        None,
        tuple(sorted(gone)),
        kind=NOVA,
    )
    out = []
    for e in diagnosis:
        if e.kind == TOGETHER and e.hosts and set(e.hosts) <= gone:
            e = dataclasses.replace(
                e,
                problems=(
                    f"every group fits on {', '.join(e.hosts)}, which Nova's request filters "
                    f"remove (above): the server fits on no other host",
                ),
            )
        out.append(e)
    return [entry] + out


def no_valid_host(
    cloud: Cloud, req: ServerRequest, segments: Sequence[SegmentChoice], error: NoValidHost, nq: NovaQuery | None = None
) -> NoValidHost:
    """``error`` naming the hosts outside the ports' segments that had room (routed networks), and the hosts
    Nova's request filters remove (``nq``: Nova's query the request started from), first: a NoValidHost, returned
    (not raised). Lets PlacementError through."""
    if nq is not None and error.diagnosis:
        # ops.claims' NoValidHost carries readers.diagnose's entries (errors.py names them by their to_dict)
        ours = cast("list[Diagnosis]", error.diagnosis)
        diagnosis = nova_diagnosis(prefiltered_hosts(cloud.placement, nq.applied), ours)
        if diagnosis != error.diagnosis:
            head = str(error).split(". ", 1)[0]
            error = NoValidHost(f"{head}. {summary(diagnosis)}", diagnosis, error.attempts)
    return explain_segments(cloud.placement, req, segments, error) if segments else error
