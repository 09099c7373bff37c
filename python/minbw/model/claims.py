"""Allocation candidates as Placement answered them, and a claim as it was made.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Mapping

from minbw.model.providers import SHARING_TRAIT


def resources_by_provider(allocations: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, int]]:
    """Placement's ``{rp: {"resources": {...}, "generation": n}}`` as ``{rp: {class: amount}}``."""
    return {rp: dict(a.get("resources", {})) for rp, a in (allocations or {}).items()}


@dataclass(frozen=True)
class CandidateSet:
    """Placement's answer: allocation requests in Placement's order, provider summaries, the query."""

    allocation_requests: tuple[dict[str, Any], ...]
    provider_summaries: Mapping[str, dict[str, Any]]
    params: Mapping[str, Any]
    microversion: str

    def by_host(self) -> list[tuple[str, list[dict[str, Any]]]]:
        """Candidates grouped by root provider (host, as :meth:`host_of` says), hosts in the order Placement returned
        them. Grouped once per candidate set (a claim plans from it twice, a claimer may claim from it many times)."""
        return list(self._hosts)

    @cached_property
    def _hosts(self) -> tuple[tuple[str, list[dict[str, Any]]], ...]:
        summaries = self.provider_summaries
        sharing = {rp for rp, s in summaries.items() if SHARING_TRAIT in (s.get("traits") or ())}
        hosts: dict[str, list[dict[str, Any]]] = {}
        for ar in self.allocation_requests:
            rps = ar["allocations"]
            rp = next((p for p in rps if p not in sharing), None) or next(iter(rps))
            hosts.setdefault((summaries.get(rp) or {}).get("root_provider_uuid") or rp, []).append(ar)
        return tuple(hosts.items())

    def host_of(self, allocation_request: Mapping[str, Any]) -> str:
        """The root of the tree a candidate is anchored on: the root of its providers, leaving out the sharing
        providers (trait ``MISC_SHARES_VIA_AGGREGATE``, in the summaries' traits), which serve every tree with a
        provider in one of their aggregates; a candidate drawn from sharing providers alone, their root."""
        rps = list(allocation_request["allocations"])
        own = [rp for rp in rps if SHARING_TRAIT not in (self.provider_summaries.get(rp, {}).get("traits") or ())]
        return self.root_of((own or rps)[0])

    def root_of(self, rp: str) -> str:
        """The root provider of ``rp`` as the provider summaries give it; ``rp`` itself when they name none."""
        summary = self.provider_summaries.get(rp, {})
        return summary.get("root_provider_uuid") or rp

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the allocation requests, provider summaries, the query (``query``) and the
        microversion."""
        return {
            "allocation_requests": list(self.allocation_requests),
            "provider_summaries": dict(self.provider_summaries),
            "query": dict(self.params),
            "microversion": self.microversion,
        }


@dataclass(frozen=True)
class Tried:
    """One attempt of a claim, a schedule or an allocation move: the host (root provider, or the Neutron host a
    schedule binds to), its ``outcome`` (``claimed``, ``capacity``, ``skipped``, ``over-capacity-undone``, ...), why
    (when said) and, for a write Placement accepted over capacity and minbw undid, what was over capacity
    (``excess``: each reports.verify.Excess's dict: provider, resource_class, used, capacity)."""

    host: str
    outcome: str
    why: str | None = None
    excess: tuple[Mapping[str, Any], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: host, outcome, then ``why`` and ``excess`` when there are."""
        out: dict[str, Any] = {"host": self.host, "outcome": self.outcome}
        if self.why is not None:
            out["why"] = self.why
        if self.excess is not None:
            out["excess"] = [dict(e) for e in self.excess]
        return out


@dataclass(frozen=True)
class Claim:
    """A claim as it was made (or is held): the consumer, its host (root provider) and name, the allocations, which
    providers serve which group (``mapping``) and how that was found, the ports' binding profiles, and the
    attempts it took."""

    consumer: str
    host: str  # root provider uuid
    host_name: str | None  # None from claim(): naming costs a GET, see named()
    allocations: Mapping[str, Mapping[str, Any]]  # {rp: {"resources": {...}}}
    mapping: Mapping[str, list[str]]  # {suffix: [rp]}
    binding_profiles: Mapping[str, Any]  # {port id: binding:profile.allocation value}
    attempts: tuple[Tried, ...] = ()
    mapping_source: str = "placement"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: consumer, host and its name, allocations, mapping and ``mapping_source``, binding profiles
        and attempts."""
        return {
            "consumer": self.consumer,
            "host": self.host,
            "host_name": self.host_name,
            "allocations": {rp: dict(a) for rp, a in self.allocations.items()},
            "mapping": {k: list(v) for k, v in self.mapping.items()},
            "mapping_source": self.mapping_source,
            "binding_profiles": dict(self.binding_profiles),
            "attempts": [a.to_dict() for a in self.attempts],
        }
