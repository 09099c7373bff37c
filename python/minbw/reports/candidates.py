"""Allocation candidates as a report: per candidate its host and which provider serves which group."""

from __future__ import annotations

from typing import Mapping

from minbw.model.claims import CandidateSet
from minbw.model.requests import ServerRequest
from minbw.placement.mapping import binding_allocations, mapping_from_candidate


def candidate_view(cands: CandidateSet, req: ServerRequest, names: Mapping[str, str]) -> list[dict]:
    """One dict per candidate, in Placement's order: host (uuid and name), allocations, the
    group→provider mapping and the ports' binding allocations (or why there is no single mapping)."""
    out = []
    for ar in cands.allocation_requests:
        host = cands.host_of(ar)
        result = mapping_from_candidate(ar, cands.provider_summaries, req)
        out.append(
            {
                "host": host,
                "host_name": names.get(host),
                "allocations": ar["allocations"],
                "mapping": result.mapping,
                "mapping_source": result.source,
                "binding_profiles": (
                    binding_allocations(req.ports, result.group_providers()) if result.unique else None
                ),
                "mapping_problem": None if result.unique else result.describe(),
            }
        )
    return out
