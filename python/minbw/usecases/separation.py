"""``minbw separation set|unset`` and the ``host_separation`` module: reserve
hosts for servers with QoS ports (a trait or an aggregate on their root providers) and set the flavors' extra
specs that keep other servers off them."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.ops.separation import set_separation
from minbw.plan.separation import Separation, SeparationPlan, separation_of  # noqa: F401 - the front ends' parser  # pylint: disable=unused-import
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class SeparationRequest:
    separation: Separation
    hosts: tuple[str, ...] = ()
    exclusive: bool = False
    flavors_qos: tuple[str, ...] = ()
    flavors_plain: tuple[str, ...] = ()
    absent: bool = False
    check: bool = False


def separation(cloud: Cloud, request: SeparationRequest) -> SeparationPlan:
    """The plan (applied unless ``check``): host marks in Placement, flavor extra specs in Nova."""
    if request.flavors_qos or request.flavors_plain:
        cloud.require(
            "compute",
            "the flavors' extra specs are set in Nova",
            fix="leave the flavors out to reserve the hosts in Placement only",
        )
    return set_separation(
        cloud.conn,
        request.separation,
        request.hosts,
        exclusive=request.exclusive,
        flavors_qos=request.flavors_qos,
        flavors_plain=request.flavors_plain,
        absent=request.absent,
        check=request.check,
        api=cloud.placement,
    )
