"""``minbw port schedule`` and the ``placement_schedule`` module: the
ports-first workflow for consumers that are not Nova's (one candidates query for ports and resources, bind every
port to the host picked, alternates on binding failure, then one atomic claim)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from minbw.model.requests import ServerRequest
from minbw.model.resources import check_resources
from minbw.ops.schedule import Binding, Scheduled, schedule_ports
from minbw.usecases.server_request import NovaServer, check_flavor_or_resources, nova_server_query
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class ScheduleRequest(NovaServer):
    """The ports to bind and the consumer's own resources: given (``resources``) or a Nova flavor's (``flavor``),
    with its image, availability zone, project and Nova's scheduler options, as in :class:`ServerSpec`: the query
    is the one Nova's scheduler would send for such a server with these ports."""

    ports: tuple[str, ...]
    resources: Mapping[str, int] = field(default_factory=dict)
    consumer: str | None = None
    max_hosts: int = 3
    any_traits: bool = False
    check: bool = False
    option: str = "resources"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "resources", MappingProxyType(check_resources(self.resources, self.option)))
        check_flavor_or_resources(self.flavor, self.resources, (), None, self.flavor_option, self.option)


@dataclass(frozen=True)
class ScheduleResult:
    """What ``port schedule`` did: ``scheduled`` (ops.schedule's Scheduled: the host, bindings, attempts, segments,
    ports) with the lines of Nova's request filters that shaped the query; or, unchanged (``scheduled`` None), the
    allocations ``consumer`` already held."""

    consumer: str
    changed: bool
    scheduled: Scheduled | None = None
    nova_filters: tuple[str, ...] = ()
    held: Mapping[str, Mapping] | None = None

    @property
    def host(self) -> str | None:
        """The host the ports were bound to (None: unchanged)."""
        return self.scheduled.host if self.scheduled else None

    @property
    def bindings(self) -> tuple[Binding, ...]:
        """Each port's binding (none when unchanged)."""
        return self.scheduled.bindings if self.scheduled else ()

    def to_dict(self) -> dict:
        """A JSON-ready dict: unchanged, consumer, host (None), the allocations held, and empty bindings, attempts,
        segments and ports; else Scheduled's dict without ``changed``, then ``nova_filters``."""
        if self.scheduled is None:
            return {
                "consumer": self.consumer,
                "host": None,
                "allocations": {rp: dict(a) for rp, a in (self.held or {}).items()},
                "bindings": [],
                "attempts": [],
                "segments": [],
                "ports": [],
            }
        out = self.scheduled.to_dict()
        out.pop("changed", None)
        return {**out, "nova_filters": list(self.nova_filters)}


def schedule(cloud: Cloud, request: ScheduleRequest) -> ScheduleResult:
    """Schedule, bind and claim the request's ports as Nova's scheduler would pick a host for them: a
    ScheduleResult. A consumer that already holds allocations is left as it is (the workflow's desired state
    holds). Raises MissingService without Neutron, and what ops.schedule.schedule_ports raises (InvalidInput,
    NoValidHost with its attempts, BindingNotAllowed, PartialApply)."""
    cloud.require("network", "the ports are read from and bound in Neutron")
    api = cloud.placement
    if request.consumer:
        held = api.get_allocations(request.consumer).get("allocations")
        if held:
            return ScheduleResult(request.consumer, False, held=held)
    options = request.scheduler_options()
    queried = []

    def nova(plans) -> ServerRequest:
        # Nova's query for a server of this flavor with these ports: what its request filters ask of every compute
        # node too (a disabled nova-compute's host, a root without OWNER_NOVA on a Nova 34 cloud, an availability
        # zone), so the workflow picks only hosts Nova would; any-traits kept (minbw claims, not Nova), noted
        queried.append(
            nova_server_query(
                cloud,
                options,
                flavor=request.flavor,
                resources=request.resources,
                image=request.image,
                ports=tuple(p.nova_port() for p in plans),
                availability_zone=request.availability_zone,
                project=request.project,
                owner_nova=request.owner_nova,
                flavor_option=request.flavor_option,
            )
        )
        return queried[-1].request

    scheduled = schedule_ports(
        cloud.conn,
        api,
        list(request.ports),
        consumer=request.consumer,
        max_hosts=request.max_hosts,
        any_traits=request.any_traits,
        check=request.check,
        service_conn=None if request.check else cloud.service_conn(),
        progress=cloud.say,
        server=nova,
    )
    return ScheduleResult(scheduled.consumer, True, scheduled, tuple(queried[-1].explain()) if queried else ())
