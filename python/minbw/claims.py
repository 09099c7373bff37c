"""Allocation candidates, claims and frees against Placement (the I/O half of issue 3).

One ``GET /allocation_candidates`` for the whole server; one atomic
``PUT /allocations/{consumer}`` per attempt. Conflicts are told apart by their
code and by the consumer's state, never by message text:

* capacity (``placement.undefined_code`` 409): try the next candidate on the same
  host, then the next host (Nova's alternates);
* provider generation (``placement.concurrent_update`` while the consumer still has
  no allocations): retry the same candidate with jittered backoff, bounded;
* consumer generation (``placement.concurrent_update`` and the consumer now has
  allocations): fail, naming the consumer — someone else claimed for it.
"""
from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from minbw.errors import ConcurrentUpdate, MinbwError, PlacementError, RequestError, UndefinedCode
from minbw.mapping import binding_allocations, mapping_from_candidate
from minbw.placement import Placement
from minbw.query import ServerRequest, build_query, format_microversion
from minbw.request import PortRequest

MV_CLAIM = "1.28"          # consumer_generation: null for a new consumer
MV_CONSUMER_TYPE = "1.38"  # consumer_type becomes part of the allocation body


class NoValidHost(MinbwError):
    """No allocation candidate, or every candidate was taken: with a per-group diagnosis."""

    def __init__(self, message: str, diagnosis: list[dict] | None = None, attempts: list[dict] | None = None):
        self.diagnosis = diagnosis or []
        self.attempts = attempts or []
        super().__init__(message)

    def to_dict(self) -> dict:
        return {"msg": str(self), "diagnosis": self.diagnosis, "attempts": self.attempts}


class ConsumerConflict(MinbwError):
    """The consumer's allocations changed under us (someone else claimed or freed for it)."""


@dataclass(frozen=True)
class CandidateSet:
    """Placement's answer: allocation requests in Placement's order, provider summaries, the query."""

    allocation_requests: tuple[dict, ...]
    provider_summaries: Mapping[str, dict]
    params: Mapping[str, Any]
    microversion: str

    def by_host(self) -> list[tuple[str, list[dict]]]:
        """Candidates grouped by root provider (host), hosts in the order Placement returned them."""
        hosts: dict[str, list[dict]] = {}
        for ar in self.allocation_requests:
            root = self.root_of(next(iter(ar["allocations"])))
            hosts.setdefault(root, []).append(ar)
        return list(hosts.items())

    def root_of(self, rp: str) -> str:
        summary = self.provider_summaries.get(rp, {})
        return summary.get("root_provider_uuid") or rp

    def to_dict(self) -> dict:
        return {"allocation_requests": list(self.allocation_requests),
                "provider_summaries": dict(self.provider_summaries), "query": dict(self.params),
                "microversion": self.microversion}


def port_request(value: Mapping | PortRequest) -> PortRequest | None:
    """A port's request from ``{"port_id"|"id": ..., "resource_request": {...}}`` (either format)."""
    if isinstance(value, PortRequest):
        return value
    if not isinstance(value, Mapping) or "resource_request" not in value:
        raise RequestError(f"a port request needs 'resource_request' (and 'port_id' or 'id'), got {value!r}")
    return PortRequest.from_neutron(value["resource_request"], port_id=value.get("port_id") or value.get("id"))


def server_request(resources: Mapping[str, int] | None = None, required=(), ports=(), *,
                   group_policy: str | None = None, in_tree: str | None = None, root_required=(),
                   limit: int | None = None) -> ServerRequest:
    """A ServerRequest from plain data (CLI options, module parameters)."""
    prs = tuple(p for p in (port_request(v) for v in ports or ()) if p)
    return ServerRequest(extra_resources=dict(resources or {}), required=tuple(required or ()), ports=prs,
                         group_policy=group_policy, in_tree=in_tree, root_required=tuple(root_required or ()),
                         limit=limit)


def get_candidates(api: Placement, req: ServerRequest) -> CandidateSet:
    params, mv = build_query(req, format_microversion(api.max_version()))
    try:
        body = api.request("get", "/allocation_candidates", mv, params=params)
    except PlacementError as e:
        # Placement answers 400 for a trait it has never heard of; no provider can have it,
        # so that is "no candidates" (and the diagnosis names the trait), not a bad query.
        if e.status == 400 and _unknown_traits(api, req):
            return CandidateSet((), {}, params, mv)
        raise
    return CandidateSet(tuple(body["allocation_requests"]), body["provider_summaries"], params, mv)


def _unknown_traits(api: Placement, req: ServerRequest) -> set[str]:
    wanted = {t for g in req.request_groups() for t in (*g.required, *g.forbidden, *(x for a in g.required_any for x in a))}
    wanted |= set(req.root_required) | set(req.root_forbidden)
    return wanted - api.existing_traits(wanted)


@dataclass(frozen=True)
class Claim:
    consumer: str
    host: str                      # root provider uuid
    host_name: str | None          # None from claim(): naming costs a GET, see named()
    allocations: Mapping[str, dict]  # {rp: {"resources": {...}}}
    mapping: Mapping[str, list[str]]  # {suffix: [rp]}
    binding_profiles: Mapping[str, Any]  # {port id: binding:profile.allocation value}
    attempts: tuple[dict, ...] = ()
    mapping_source: str = "placement"

    def to_dict(self) -> dict:
        return {"consumer": self.consumer, "host": self.host, "host_name": self.host_name,
                "allocations": {rp: dict(a) for rp, a in self.allocations.items()},
                "mapping": {k: list(v) for k, v in self.mapping.items()}, "mapping_source": self.mapping_source,
                "binding_profiles": dict(self.binding_profiles), "attempts": list(self.attempts)}


def named(api: Placement, claim: Claim) -> Claim:
    """The claim with its host's name (one GET, kept off the claim path itself)."""
    if claim.host_name is not None:
        return claim
    return dataclasses.replace(claim, host_name=api.get_provider(claim.host).name)


def _allocation_body(ar: dict, project_id: str, user_id: str, generation: int | None,
                     consumer_type: str | None) -> tuple[dict, str]:
    body = {"allocations": {rp: {"resources": dict(a["resources"])} for rp, a in ar["allocations"].items()},
            "project_id": project_id, "user_id": user_id, "consumer_generation": generation}
    if consumer_type:
        body["consumer_type"] = consumer_type
        return body, MV_CONSUMER_TYPE
    return body, MV_CLAIM


def consumer_allocations(api: Placement, consumer: str) -> dict:
    """``{"allocations": {...}, "consumer_generation": n|None, "project_id", "user_id"}``."""
    return api.request("get", f"/allocations/{consumer}", MV_CLAIM)


def put_allocations(api: Placement, consumer: str, body: dict, microversion: str = MV_CLAIM) -> None:
    api.request("put", f"/allocations/{consumer}", microversion, json=body)


def claim(api: Placement, consumer: str, req: ServerRequest, *, project_id: str, user_id: str,
          consumer_type: str | None = None, max_hosts: int = 3, retries: int = 4,
          candidates: CandidateSet | None = None, diagnose_on_failure: bool = True,
          sleep: Callable[[float], None] = time.sleep) -> Claim:
    """Claim everything ``req`` asks for, for a new consumer, in one atomic PUT per attempt."""
    if consumer_type:
        api.require(MV_CONSUMER_TYPE, "consumer_type")
    cands = candidates or get_candidates(api, req)
    attempts: list[dict] = []
    if not cands.allocation_requests:
        raise _no_valid_host(api, req, attempts, diagnose_on_failure, "Placement returned no allocation candidates")
    for host, host_cands in cands.by_host()[:max_hosts]:
        for ar in host_cands:
            result = mapping_from_candidate(ar, cands.provider_summaries, req)
            if result.status != "unique":
                attempts.append({"host": host, "outcome": "skipped", "why": result.describe()})
                continue
            body, mv = _allocation_body(ar, project_id, user_id, None, consumer_type)
            outcome = _put_new_consumer(api, consumer, body, mv, retries, sleep)
            attempts.append({"host": host, "outcome": outcome})
            if outcome == "claimed":
                groups = result.group_providers()
                return Claim(consumer=consumer, host=host, host_name=None,
                             allocations=body["allocations"], mapping=result.solutions[0],
                             binding_profiles=binding_allocations(req.ports, groups), attempts=tuple(attempts),
                             mapping_source=result.source)
    raise _no_valid_host(api, req, attempts, diagnose_on_failure,
                         f"every candidate was taken by others before we could claim it "
                         f"({len(attempts)} attempts on {min(max_hosts, len(cands.by_host()))} host(s))")


def _put_new_consumer(api, consumer, body, mv, retries, sleep) -> str:
    for attempt in range(retries + 1):
        try:
            put_allocations(api, consumer, body, mv)
            return "claimed"
        except UndefinedCode as e:
            if e.status == 409:
                return "capacity"  # someone took it since the candidates were listed
            raise
        except ConcurrentUpdate:
            current = consumer_allocations(api, consumer)
            if current.get("allocations"):
                raise ConsumerConflict(
                    f"consumer {consumer} already has allocations (consumer generation "
                    f"{current.get('consumer_generation')}): another claim for it won; free it first or use "
                    f"another consumer UUID") from None
            if attempt == retries:
                return "provider-conflict"
            sleep(random.uniform(0, 0.02 * (2 ** attempt)))
    return "provider-conflict"


def claims_failure(api: Placement, req: ServerRequest) -> NoValidHost:
    """The NoValidHost (with diagnosis) for a request that has no candidates."""
    return _no_valid_host(api, req, [], True, "Placement returned no allocation candidates")


def _no_valid_host(api, req, attempts, diagnose: bool, why: str) -> NoValidHost:
    from minbw.diagnose import diagnose as run_diagnosis, summary
    diagnosis = run_diagnosis(api, req) if diagnose else []
    text = f"No valid host: {why}."
    if diagnosis:
        text += " " + summary(diagnosis)
    return NoValidHost(text, diagnosis, attempts)


def provider_summaries(api: Placement, rps) -> dict[str, dict]:
    """Summaries in Placement's candidate shape for the whole trees of ``rps`` (traits, parents)."""
    out: dict[str, dict] = {}
    for rp in rps:
        if rp in out:
            continue
        root = api.get_provider(rp).root_uuid
        for p in api.list_providers(in_tree=root):
            out[p.uuid] = {"resources": {}, "traits": sorted(api.get_provider_traits(p.uuid)[0]),
                           "parent_provider_uuid": p.parent_uuid, "root_provider_uuid": p.root_uuid,
                           "name": p.name}
    return out


def existing_claim(api: Placement, consumer: str, req: ServerRequest) -> Claim | None:
    """The consumer's current allocations, mapped to ``req``'s groups by the local solver; None if it has none.

    Raises MappingError when they do not satisfy ``req`` (or satisfy it in several ways).
    """
    from minbw.mapping import solve
    current = consumer_allocations(api, consumer)
    allocs = current.get("allocations") or {}
    if not allocs:
        return None
    summaries = provider_summaries(api, allocs)
    result = solve({"allocations": allocs}, summaries, req)
    groups = result.group_providers()  # raises MappingError unless exactly one mapping fits
    host = summaries[next(iter(allocs))]["root_provider_uuid"]
    return Claim(consumer=consumer, host=host, host_name=summaries[host]["name"],
                 allocations={rp: {"resources": dict(a["resources"])} for rp, a in allocs.items()},
                 mapping=result.solutions[0], binding_profiles=binding_allocations(req.ports, groups),
                 mapping_source=result.source)


def free(api: Placement, consumer: str, retries: int = 3) -> bool:
    """Remove all of a consumer's allocations safely (PUT {} at its generation). False when it had none."""
    for _ in range(retries + 1):
        current = consumer_allocations(api, consumer)
        if not current.get("allocations"):
            return False
        body = {"allocations": {}, "consumer_generation": current["consumer_generation"],
                "project_id": current["project_id"], "user_id": current["user_id"]}
        try:
            put_allocations(api, consumer, body)
            return True
        except ConcurrentUpdate:
            continue  # the consumer changed between our read and write: read again
    raise ConsumerConflict(f"consumer {consumer} kept changing while freeing it ({retries + 1} tries)")


def post_allocations(api: Placement, bodies: Mapping[str, dict], microversion: str = MV_CLAIM) -> None:
    """``POST /allocations``: several consumers' allocations in one atomic call (moves, swaps)."""
    api.request("post", "/allocations", microversion, json=dict(bodies))
