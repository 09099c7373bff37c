"""``minbw request show`` and the ``port_resource_request_info`` module: a port's
``resource_request`` computed as Neutron's QoS plugin computes it, from QoS rules, segments and vnic type, or for
a port that exists, beside what Neutron shows."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from minbw.errors import InvalidInput
from minbw.model.requests import PortRequest, request_view
from minbw.neutron.port_request import QosPort, Segment
from minbw.ops import neutron
from minbw.ops.neutron import ComparedRequest
from minbw.usecases.cloud import Cloud

DEFAULT_SEGMENT = Segment("vlan", "physnet0")  # a port described without its network


@dataclass(frozen=True)
class PortRequestQuery:
    """Either ``port`` (a Neutron port's name or id: computed from what Neutron holds and compared) or
    ``qos_port`` (its rules, vnic type and segments; ``port_id``: the id its group ids derive from, made up
    when not given; None with a ``port_id``: a policy without minimum rules, which requests nothing)."""

    qos_port: QosPort | None = None
    port_id: str | None = None
    port: str | None = None
    agent_type: str | None = None
    any_traits: bool = False


@dataclass(frozen=True)
class PortRequestResult:
    """The port's id and its request (None: it requests nothing) and, for a Neutron port, the comparison with
    Neutron's own request."""

    port_id: str
    request: PortRequest | None
    compared: ComparedRequest | None = None

    def to_dict(self) -> dict:
        """The request's view, the port id and, for a Neutron port, Neutron's request (``neutron_resource_request``)
        and whether it matches (``matches_neutron``)."""
        return {
            **request_view(self.request),
            "port_id": self.port_id,
            **(self.compared.to_dict() if self.compared else {}),
        }


def port_request(cloud: Cloud | None, query: PortRequestQuery) -> PortRequestResult:
    """The port's request: for ``query.port``, computed from what Neutron holds and compared with Neutron's own;
    otherwise from ``query.qos_port`` (a PortRequestResult). Raises InvalidInput without a cloud for a Neutron port,
    without a port id for no rules, or for two different port ids; MissingService without Neutron, ObjectNotFound for
    no such port; lets RequestError through."""
    if query.port:
        if cloud is None:
            raise InvalidInput("reading a port from Neutron needs a cloud")
        cloud.require("network", "the port is read from Neutron")
        compared = neutron.request_against_neutron(cloud.conn, query.port, query.agent_type, query.any_traits)
        return PortRequestResult(compared.port_id, compared.request, compared)
    if query.qos_port is None:  # a policy without minimum rules: nothing to request
        if not query.port_id:
            raise InvalidInput("give a port (its name or id), or its id and its QoS rules")
        return PortRequestResult(query.port_id, None)
    port_id = query.port_id or query.qos_port.port_id or str(uuid.uuid4())
    if query.port_id and query.qos_port.port_id and query.port_id != query.qos_port.port_id:
        raise InvalidInput(
            f"the port id is given twice: {query.port_id} and id={query.qos_port.port_id}. Fix: give it once"
        )
    return PortRequestResult(
        port_id,
        query.qos_port.request(
            port_id,
            query.qos_port.segments or (DEFAULT_SEGMENT,),
            agent_kind=query.agent_type,
            any_traits=query.any_traits,
        ),
    )
