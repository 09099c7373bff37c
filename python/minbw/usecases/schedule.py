"""``minbw port schedule`` and the ``placement_schedule`` module: the
ports-first workflow for consumers that are not Nova's (one candidates query for ports and resources, bind every
port to the host picked, alternates on binding failure, then one atomic claim)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from minbw.model.requests import ServerRequest
from minbw.model.resources import check_resources
from minbw.ops.schedule import schedule_ports
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
    outcome: dict  # host, allocations, bindings, attempts, segments, ports (as ops.schedule reports them)
    changed: bool

    def to_dict(self) -> dict:
        """The outcome as ops.schedule reports it (a copy)."""
        return dict(self.outcome)


def schedule(cloud: Cloud, request: ScheduleRequest) -> ScheduleResult:
    """A consumer that already holds allocations is left as it is (the workflow's desired state holds)."""
    cloud.require("network", "the ports are read from and bound in Neutron")
    api = cloud.placement
    if request.consumer:
        held = api.get_allocations(request.consumer).get("allocations")
        if held:
            return ScheduleResult(
                {
                    "consumer": request.consumer,
                    "host": None,
                    "allocations": held,
                    "bindings": [],
                    "attempts": [],
                    "segments": [],
                    "ports": [],
                },
                False,
            )
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

    outcome = schedule_ports(
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
    outcome.pop("changed", None)
    outcome["nova_filters"] = queried[-1].explain() if queried else []
    return ScheduleResult(outcome, True)
