"""Allocation candidates as a report: per candidate its host and which provider serves which group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from minbw.model.claims import CandidateSet
from minbw.model.requests import ServerRequest
from minbw.placement.mapping import binding_allocations, mapping_from_candidate


@dataclass(frozen=True)
class CandidateView:
    """One allocation candidate: its host (root provider uuid and name), its allocations, the group→provider mapping
    and where it came from, the ports' binding allocations (None without a single mapping) and why there is no
    single mapping (None when there is one)."""

    host: str
    host_name: str | None
    allocations: Mapping
    mapping: Mapping | None
    mapping_source: str | None
    binding_profiles: Mapping | None
    mapping_problem: str | None

    def to_dict(self) -> dict:
        """A JSON-ready dict: host, host_name, allocations, mapping, mapping_source, binding_profiles,
        mapping_problem (the mappings as they are)."""
        return {
            "host": self.host,
            "host_name": self.host_name,
            "allocations": self.allocations,
            "mapping": self.mapping,
            "mapping_source": self.mapping_source,
            "binding_profiles": self.binding_profiles,
            "mapping_problem": self.mapping_problem,
        }


def candidate_view(cands: CandidateSet, req: ServerRequest, names: Mapping[str, str]) -> list[CandidateView]:
    """One CandidateView per candidate, in Placement's order: host (uuid and name), allocations, the
    group→provider mapping and the ports' binding allocations (or why there is no single mapping)."""
    out = []
    for ar in cands.allocation_requests:
        host = cands.host_of(ar)
        result = mapping_from_candidate(ar, cands.provider_summaries, req)
        out.append(
            CandidateView(
                host,
                names.get(host),
                ar["allocations"],
                result.mapping,
                result.source,
                binding_allocations(req.ports, result.group_providers()) if result.unique else None,
                None if result.unique else result.describe(),
            )
        )
    return out
