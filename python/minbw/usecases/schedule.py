"""``minbw schedule`` (``openstack bandwidth port schedule``) and the ``placement_schedule`` module: the
ports-first workflow for consumers that are not Nova's (one candidates query for ports and resources, bind every
port to the host picked, alternates on binding failure, then one atomic claim)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from minbw.model.resources import check_resources
from minbw.ops.schedule import schedule as run
from minbw.usecases.candidates import nova_root_filters
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class ScheduleRequest:
    ports: tuple[str, ...]
    resources: Mapping[str, int] = field(default_factory=dict)
    consumer: str | None = None
    max_hosts: int = 3
    any_traits: bool = False
    check: bool = False
    option: str = "resources"

    def __post_init__(self):
        object.__setattr__(self, "resources", MappingProxyType(check_resources(self.resources, self.option)))


@dataclass(frozen=True)
class ScheduleResult:
    outcome: dict   # host, allocations, bindings, attempts, segments, ports (as ops.schedule reports them)
    changed: bool

    def to_dict(self) -> dict:
        return dict(self.outcome)


def schedule(cloud: Cloud, request: ScheduleRequest) -> ScheduleResult:
    """A consumer that already holds allocations is left as it is (the workflow's desired state holds)."""
    cloud.require("network", "the ports are read from and bound in Neutron")
    api = cloud.placement
    if request.consumer:
        held = api.get_allocations(request.consumer).get("allocations")
        if held:
            return ScheduleResult({"consumer": request.consumer, "host": None, "allocations": held, "bindings": [],
                                   "attempts": [], "segments": [], "ports": []}, False)
    # what Nova's request filters ask of every compute node (a disabled nova-compute's host, a root without
    # OWNER_NOVA on a Nova 34 cloud): the workflow picks only hosts Nova would
    nova = nova_root_filters(cloud)
    outcome = run(cloud.conn, api, list(request.ports), dict(request.resources), consumer=request.consumer,
                  max_hosts=request.max_hosts, any_traits=request.any_traits, check=request.check,
                  service_conn=None if request.check else cloud.service_conn(), progress=cloud.say,
                  root_required=nova.request.root_required, root_forbidden=nova.request.root_forbidden)
    outcome.pop("changed", None)
    return ScheduleResult(outcome, True)
