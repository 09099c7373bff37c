"""``minbw candidates`` / ``openstack bandwidth candidate list`` and the ``allocation_candidates_info`` module: one
``GET /allocation_candidates`` for a server and its QoS ports, with which provider serves which request group,
or, when there is none, why (per request group). Also what a server asks for (:class:`ServerSpec`), which the
claim and move use cases share."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..errors import NoValidHost
from ..model.claims import CandidateSet
from ..model.requests import ServerRequest
from ..model.resources import check_resources
from ..neutron.port_request import QosPort
from ..ops import claims
from ..ops.schedule import explain_segments, hosts_outside_segments, with_neutron_ports
from ..placement.query import query_string
from ..plan.separation import Separation, separate
from ..reports.candidates import candidate_view
from ..reports.diagnose import diagnose, summary
from ..usecases.cloud import Cloud

# a port described by its rules gets a group id derived from its port id: made up, stable per position
_QOS_PORT_NS = "b1c1a7c4-8f2e-5d0a-9a55-3f1e2d4c6b70"


@dataclass(frozen=True)
class ServerSpec:
    """What a server asks Placement for, as plain values: the flavor's resources and traits, its ports (as
    their ``resource_request`` JSON, as Neutron ports by name or id, or described by their QoS rules), and the
    request-wide filters. ``option`` names the resources' option in errors (``--resource`` / ``resources``)."""

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
        object.__setattr__(self, "resources", MappingProxyType(check_resources(self.resources, self.option)))

    @property
    def empty(self) -> bool:
        return not (self.resources or self.required or self.port_requests or self.qos_ports or self.ports)


def qos_port_request(index: int, port: QosPort):
    """The request of a port described by its rules (the ``index``-th of the server's): on its own segments, or,
    with no network given, on any physnet."""
    import uuid
    return port.open_request(port.port_id or str(uuid.uuid5(uuid.UUID(_QOS_PORT_NS), f"qos-port-{index}")))[0]


def server_request(cloud: Cloud, spec: ServerSpec) -> tuple[ServerRequest, list[dict]]:
    """The core's request for ``spec``, and each Neutron port's routed segments (empty when none): Neutron ports
    are read (their request groups; on a routed network ``member_of`` their segments' aggregates, segments
    without free addresses left out); the separation keeps the server off or onto the reserved hosts."""
    req = ServerRequest.from_options(spec.resources, spec.required, spec.port_requests,
                                     group_policy=spec.group_policy, in_tree=spec.in_tree,
                                     root_required=spec.root_required, limit=spec.limit)
    built = tuple(qos_port_request(i, p) for i, p in enumerate(spec.qos_ports))
    req = dataclasses.replace(req, ports=req.ports + tuple(p for p in built if p))
    segments: list[dict] = []
    if spec.ports:
        cloud.require("network", "Neutron ports are read from Neutron",
                      fix="describe the ports instead (--port-request FILE or --qos-port RULES; the modules' "
                          "port_requests or qos_ports)")
        req, segments = with_neutron_ports(cloud.placement, req, spec.ports, any_traits=spec.any_traits)
    if spec.separation is not None:
        req = separate(req, spec.separation)
    return req, segments


@dataclass(frozen=True)
class CandidatesResult:
    candidates: CandidateSet
    view: tuple[dict, ...]          # per candidate: host, allocations, mapping, binding profiles
    diagnosis: tuple[dict, ...]     # per request group, when there is no candidate
    segments: tuple[dict, ...]
    request: ServerRequest
    names: Mapping[str, str] = field(default_factory=dict)  # provider uuid -> name (when there are candidates)

    @property
    def found(self) -> bool:
        return bool(self.candidates.allocation_requests)

    @property
    def query(self) -> str:
        return f"GET /allocation_candidates?{query_string(self.candidates.params)}"

    def summary(self) -> str:
        return summary(list(self.diagnosis))

    def to_dict(self) -> dict:
        return {**self.candidates.to_dict(), "candidates": list(self.view), "count": len(self.view),
                "diagnosis": list(self.diagnosis), "segments": list(self.segments)}


def candidates(cloud: Cloud, spec: ServerSpec) -> CandidatesResult:
    """One candidates query; each candidate's group→provider mapping; the per-group diagnosis when none."""
    api = cloud.placement
    req, segments = server_request(cloud, spec)
    cands = claims.get_candidates(api, req)
    diagnosis: list[dict] = []
    view: list[dict] = []
    names: dict[str, str] = {}
    if cands.allocation_requests:
        names = api.provider_names()
        view = candidate_view(cands, req, names)
    else:
        diagnosis = diagnose(api, req)
        outside = hosts_outside_segments(api, req, segments) if segments else ""
        if outside:
            diagnosis.append({"group": "member_of", "label": "the ports' segments", "problems": [outside]})
    return CandidatesResult(cands, tuple(view), tuple(diagnosis), tuple(segments), req, names)


def no_valid_host(cloud: Cloud, req: ServerRequest, segments: list[dict], error: NoValidHost) -> NoValidHost:
    """``error`` naming the hosts outside the ports' segments that had room (routed networks)."""
    return explain_segments(cloud.placement, req, segments, error) if segments else error
