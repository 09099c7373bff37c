"""``minbw candidate list`` and the ``allocation_candidates_info`` module: one
``GET /allocation_candidates`` for a server and its QoS ports, with which provider serves which request group,
or, when there is none, why (per request group). What the server asks for is
:class:`minbw.usecases.server_request.ServerSpec`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from minbw.model.claims import CandidateSet
from minbw.model.requests import ServerRequest
from minbw.neutron.segments import SegmentChoice
from minbw.nova.scheduler import NovaQuery
from minbw.ops import claims
from minbw.ops.nova_query import prefiltered_hosts
from minbw.ops.schedule import hosts_outside_segments
from minbw.placement.query import query_string
from minbw.readers.diagnose import diagnose
from minbw.reports.diagnosis import SEGMENTS, Diagnosis, summary
from minbw.reports.candidates import CandidateView, candidate_view
from minbw.usecases.cloud import Cloud
from minbw.usecases.server_request import ServerSpec, nova_diagnosis, nova_query


@dataclass(frozen=True)
class CandidatesResult:
    candidates: CandidateSet
    view: tuple[CandidateView, ...]  # per candidate: host, allocations, mapping, binding profiles
    # per request group, when there is no candidate (readers.diagnose's), as errors.NoValidHost carries them
    diagnosis: tuple[Diagnosis, ...]
    segments: tuple[SegmentChoice, ...]  # each routed port's segments and their aggregates
    request: ServerRequest
    names: Mapping[str, str] = field(default_factory=dict)  # provider uuid -> name (when there are candidates)
    nova: NovaQuery | None = None  # Nova's query the request starts from: its request filters

    @property
    def found(self) -> bool:
        """Whether Placement returned some allocation candidate."""
        return bool(self.candidates.allocation_requests)

    @property
    def query(self) -> str:
        """The candidates query sent, as ``GET /allocation_candidates?...``."""
        return f"GET /allocation_candidates?{query_string(self.candidates.params)}"

    def summary(self) -> str:
        """The diagnosis in one line (empty when there is none)."""
        return summary(self.diagnosis)

    def to_dict(self) -> dict:
        """The candidate set's dict with the candidates' view and count, the diagnosis, the segments and Nova's
        request filters (as explained)."""
        return {
            **self.candidates.to_dict(),
            "candidates": [c.to_dict() for c in self.view],
            "count": len(self.view),
            "diagnosis": [d.to_dict() for d in self.diagnosis],
            "segments": [s.to_dict() for s in self.segments],
            "nova_filters": self.nova.explain() if self.nova else [],
        }


def candidates(cloud: Cloud, spec: ServerSpec) -> CandidatesResult:
    """One candidates query; each candidate's group→provider mapping; the per-group diagnosis when none (Nova's
    request filters' and the ports' segments' first): a CandidatesResult. Raises what the server request's reads
    raise (InvalidInput, ObjectNotFound, MissingService, RequestError); lets PlacementError through."""
    api = cloud.placement
    req, segments, nq = nova_query(cloud, spec)
    cands = claims.get_candidates(api, req)
    diagnosis: list[Diagnosis] = []
    view: list[CandidateView] = []
    names: dict[str, str] = {}
    if cands.allocation_requests:
        names = api.provider_names()
        view = candidate_view(cands, req, names)
    else:
        diagnosis = diagnose(api, req)
        outside = hosts_outside_segments(api, req, segments) if segments else ""
        if outside:
            diagnosis.append(Diagnosis("member_of", "the ports' segments", (outside,), kind=SEGMENTS))
        if nq is not None:
            diagnosis = nova_diagnosis(prefiltered_hosts(api, nq.applied), diagnosis)
    return CandidatesResult(cands, tuple(view), tuple(diagnosis), tuple(segments), req, names, nq)
