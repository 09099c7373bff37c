"""The ports-first workflow (seed 000) for consumers that are not Nova.

Ports exist first (their requests, and on routed networks their segments, are known before a host is
picked); then: one candidates query for everything → for each candidate in Nova's alternate order, bind
every port to that host (``binding:host_id`` and ``binding:profile.allocation`` from the candidate's
mapping) → a binding that fails (agent dead, no address left in the host's segment, vif type
``binding_failed``) unbinds this attempt's ports and moves to the next host → all bound: claim
everything in one atomic ``PUT /allocations/{consumer}`` → a claim refused for capacity unbinds and
moves on. On give-up nothing is left bound or claimed, and every attempt says why it failed.

The candidates and their order are :func:`minbw.ops.claims.planned_claim` (check mode shows its first attempt).
"""

from __future__ import annotations

import dataclasses
import time
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from minbw.errors import BindingNotAllowed, InvalidInput, MinbwError, NoValidHost, PartialApply, RequestError
from minbw.model.claims import Tried
from minbw.model.requests import PortRequest, ServerRequest
from minbw.neutron.segments import SegmentChoice
from minbw.nova.inputs import Port
from minbw.ops import claims, neutron, segments, write_failures
from minbw.placement.client import Placement
from minbw.plan.allocations import claim_op
from minbw.plan.base import Plan
from minbw.reports.verify import capacities_from_summaries

BIND_FAILED = ("binding_failed", "unbound")


@dataclass(frozen=True)
class PortPlan:
    """One port as the workflow sees it: its id/name, network and fixed IPs, and its request."""

    id: str
    name: str | None
    network_id: str
    fixed_ips: tuple
    request: PortRequest | None
    notes: tuple[str, ...] = ()
    vnic_type: str = "normal"

    def nova_port(self) -> Port:
        """The port as Nova's scheduler sees it (its request filters and ResourceRequest)."""
        return Port(
            self.id,
            vnic_type=self.vnic_type,
            request=self.request,
            network_id=self.network_id,
            subnet_ids=tuple(ip["subnet_id"] for ip in self.fixed_ips if ip.get("subnet_id")),
        )

    def to_dict(self) -> dict:
        """The port as JSON values: id, name, network_id, Neutron's ``resource_request`` shape and mode of its request
        (None without one), and the notes."""
        return {
            "id": self.id,
            "name": self.name,
            "network_id": self.network_id,
            "resource_request": self.request.to_neutron() if self.request else None,
            "mode": self.request.mode if self.request else None,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Binding:
    """One port's binding to the host picked: the port's id and name, the host, and the ``binding:profile`` written
    (``{"allocation": ...}`` for a port with a request, else empty)."""

    port: str
    name: str | None
    host: str
    binding_profile: Mapping[str, Any]

    @property
    def allocation(self) -> Any:
        """The ``binding:profile.allocation`` value (None for a port without a request)."""
        return self.binding_profile.get("allocation")

    def to_dict(self) -> dict:
        """A JSON-ready dict: port, name, host, binding_profile."""
        return {"port": self.port, "name": self.name, "host": self.host, "binding_profile": dict(self.binding_profile)}


@dataclass(frozen=True)
class Scheduled:
    """What the ports-first workflow did (or, with ``plan``, would do: check mode): the consumer, the ports read
    and their segment choices, the host, each port's binding and every attempt. A claim made has ``root_provider``,
    ``allocations`` and ``mapping``; check mode has the ``plan`` (its first attempt) and no attempts."""

    consumer: str
    ports: tuple[PortPlan, ...]
    segments: tuple[SegmentChoice, ...]
    host: str
    bindings: tuple[Binding, ...]
    attempts: tuple[Tried, ...] = ()
    plan: Plan | None = None
    root_provider: str | None = None
    allocations: Mapping[str, Mapping[str, Any]] | None = None
    mapping: Mapping[str, tuple[str, ...]] | None = None

    @property
    def check(self) -> bool:
        """Whether this is check mode's plan (nothing written)."""
        return self.plan is not None

    def to_dict(self) -> dict:
        """A JSON-ready dict: consumer, ports, segments, changed (True), then check mode's check, host, plan,
        bindings and (empty) attempts, or the claim's host, root_provider, allocations, mapping, bindings and
        attempts."""
        base = {
            "consumer": self.consumer,
            "ports": [p.to_dict() for p in self.ports],
            "segments": [c.to_dict() for c in self.segments],
        }
        bindings = [b.to_dict() for b in self.bindings]
        if self.plan is not None:
            return {
                **base,
                "changed": True,
                "check": True,
                "host": self.host,
                "plan": self.plan.to_dict(),
                "bindings": bindings,
                "attempts": [],
            }
        return {
            **base,
            "changed": True,
            "host": self.host,
            "root_provider": self.root_provider,
            "allocations": {rp: dict(a) for rp, a in (self.allocations or {}).items()},
            "mapping": {k: list(v) for k, v in (self.mapping or {}).items()},
            "bindings": bindings,
            "attempts": [a.to_dict() for a in self.attempts],
        }


def read_ports(conn, ports: Iterable[str], *, any_traits: bool = False, allow_bound: bool = False) -> list[PortPlan]:
    """Each port with the request Neutron gave it (or, with ``any_traits``, the one accepting every segment).

    A bound port is refused unless ``allow_bound`` (read-only uses): the workflow binds ports itself, and
    rebinding a port in use would move it. Returns a list of PortPlan, in the order given. Raises ObjectNotFound for
    no such port, InvalidInput for a port given twice or already bound; lets RequestError through."""
    out, seen = [], set()
    for name_or_id in ports:
        facts = neutron.port_facts(conn, name_or_id)
        port = facts.port
        if port["id"] in seen:
            raise InvalidInput(f"port {name_or_id!r} is given twice. Fix: list each port once.")
        seen.add(port["id"])
        if port.get("binding_host_id") and not allow_bound:
            raise InvalidInput(
                f"port {port.get('name') or port['id']} is already bound to host "
                f"{port['binding_host_id']}. Fix: unbind it (or leave it out); the workflow binds "
                f"the ports itself, to the host it picks."
            )
        reported = neutron.reported_request(facts)
        computed = neutron.computed_request(facts, any_traits=any_traits)
        notes = list(computed.notes) if computed else []
        request = computed if any_traits and computed is not None else (reported or computed)
        if reported is None and computed is not None and not any_traits:
            notes.append("Neutron did not show a resource_request (not an admin?); computed as Neutron does")
        out.append(
            PortPlan(
                port["id"],
                port.get("name"),
                port["network_id"],
                tuple(port.get("fixed_ips") or ()),
                request,
                tuple(notes),
                port.get("binding_vnic_type") or port.get("binding:vnic_type") or "normal",
            )
        )
    return out


def with_ports(
    conn, api: Placement, req: ServerRequest, ports: list[PortPlan], *, add_groups: bool = True
) -> tuple[ServerRequest, tuple[SegmentChoice, ...]]:
    """``req`` plus the Neutron ports' request groups (``add_groups``; False: ``req`` has them already) and, for
    ports on routed networks, ``member_of`` their segments' aggregates (Nova's routed-network prefilter, minus
    segments without free addresses), and each routed port's SegmentChoice. Raises RequestError for routed ports
    without the consumer's own resources, NoValidHost when a port has no segment left."""
    member_of, choices = segments.member_of_for_ports(
        conn, api, [{"id": p.id, "network_id": p.network_id, "fixed_ips": list(p.fixed_ips)} for p in ports]
    )
    if member_of and not req.flavor_resources():
        raise RequestError(
            "the ports are on a routed network, whose segments are chosen with member_of on the "
            "consumer's own resources, and no resources were given. Fix: pass resources "
            "(e.g. VCPU=1,MEMORY_MB=512,DISK_GB=1)."
        )
    added = tuple(p.request for p in ports if p.request) if add_groups else ()
    member_of = tuple(m for m in member_of if m not in req.member_of)  # Nova's routed-network filter has it
    return dataclasses.replace(req, ports=req.ports + added, member_of=req.member_of + member_of), choices


def build_request(
    conn,
    api: Placement,
    ports: list[PortPlan],
    resources: Mapping[str, int],
    *,
    required=(),
    forbidden=(),
    root_forbidden=(),
    root_required=(),
    group_policy=None,
    limit=None,
) -> tuple[ServerRequest, tuple[SegmentChoice, ...]]:
    """The one query's request: flavor-like ``resources`` and every port, with the routed ports' segment choices
    (:func:`with_ports`, whose errors it raises)."""
    req = dataclasses.replace(
        ServerRequest.from_options(
            resources, required, group_policy=group_policy, root_required=root_required, limit=limit
        ),
        forbidden=tuple(sorted(set(forbidden))),
        root_forbidden=tuple(sorted(set(root_forbidden))),
    )
    return with_ports(conn, api, req, ports)


def _binding_host(api_names: Mapping[str, str], attempt_op) -> str:
    """The Neutron host of a candidate: the host part of a mapped device provider's name
    (``<host>:<agent>:<device>``, Neutron's naming), else the compute node's name."""
    for rps in attempt_op.mapping.values():
        for rp in rps:
            name = api_names.get(rp, "")
            if name.count(":") >= 2:
                return name.split(":", 1)[0]
    return api_names.get(attempt_op.host, attempt_op.host)


def _bind(svc, port: PortPlan, host: str, profile: Mapping | None) -> str:
    """Bind one port to ``host``; "" when Neutron bound it, else why not."""
    from openstack import exceptions as sdk_exceptions

    body: dict = {"binding_host_id": host}
    if profile is not None:
        body["binding_profile"] = {"allocation": profile}
    try:
        bound = svc.network.update_port(port.id, **body)
    except sdk_exceptions.ForbiddenException as e:
        raise BindingNotAllowed(
            f"Neutron refused to bind port {port.id} ({e.details or e}): binding:profile is writable only by the "
            f"service role. Fix: connect as a service user for the bindings (--service-cloud NAME / "
            f"service_cloud)"
        ) from e
    except sdk_exceptions.ConflictException as e:
        return f"Neutron refused the binding: {e.details or e}"
    vif = bound.binding_vif_type
    if vif in BIND_FAILED:
        return (
            f"binding failed (vif_type {vif}): no live agent on {host} could bind it "
            f"(is the L2 agent there up, with the network's physical network mapped?)"
        )
    return ""


def _unbind(svc, port_ids: Iterable[str]) -> list[str]:
    """Unbind ``port_ids``; the ids that could not be unbound."""
    stuck = []
    for pid in port_ids:
        try:
            svc.network.update_port(pid, binding_host_id="", binding_profile={})
        except write_failures():
            stuck.append(pid)
    return stuck


def schedule_ports(
    conn,
    api: Placement,
    ports: list[str],
    resources: Mapping[str, int] | None = None,
    *,
    consumer: str | None = None,
    project_id: str | None = None,
    user_id: str | None = None,
    service_conn=None,
    max_hosts: int = 3,
    any_traits: bool = False,
    check: bool = False,
    required=(),
    forbidden=(),
    root_required=(),
    root_forbidden=(),
    group_policy=None,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    server: Callable[[list[PortPlan]], ServerRequest] | None = None,
) -> Scheduled:
    """Schedule, bind and claim ``ports`` (+ ``resources``) for ``consumer`` (default: a new uuid).

    ``server``: the request for the ports read (their groups in it), as Nova's query builds it for a server of a
    flavor (instead of ``resources`` and the traits given); the ports' segments are added here.

    Returns a Scheduled: host, allocations, each port's binding, every attempt. ``check`` returns the plan
    (first attempt) in it and writes nothing. Raises InvalidInput for bad input (before any call), RequestError
    for routed ports without resources, BindingNotAllowed when Neutron refuses to write binding:profile,
    NoValidHost (its ``attempts`` say why each host failed) with nothing left bound or claimed; PartialApply if a
    rollback itself failed (what is left is named)."""
    say = progress or (lambda msg: None)
    if max_hosts < 1:
        raise InvalidInput(f"max_hosts must be at least 1, got {max_hosts}.")
    consumer = consumer or str(uuidlib.uuid4())
    try:
        uuidlib.UUID(consumer)
    except ValueError:
        raise InvalidInput(f"consumer {consumer!r} is not a UUID. Fix: pass a UUID (or none for a new one).") from None
    port_plans = read_ports(conn, ports, any_traits=any_traits)
    if not port_plans:
        raise InvalidInput("no ports given. Fix: pass at least one port (name or id).")
    if server is not None:
        req, choices = with_ports(conn, api, server(port_plans), port_plans, add_groups=False)
    else:
        req, choices = build_request(
            conn,
            api,
            port_plans,
            resources or {},
            required=required,
            forbidden=forbidden,
            root_required=root_required,
            root_forbidden=root_forbidden,
            group_policy=group_policy,
            limit=limit,
        )
    try:
        plan = claims.planned_claim(api, consumer, req, max_hosts=max_hosts)
    except NoValidHost as e:
        raise explain_segments(api, req, choices, e) from None
    first = plan.ops[0]
    names = api.provider_names()
    if check:
        host = _binding_host(names, first)
        return Scheduled(
            consumer,
            tuple(port_plans),
            choices,
            host,
            _bindings(port_plans, first.binding_profiles, host),
            plan=plan,
        )
    svc = service_conn or conn
    project_id = project_id or conn.current_project_id
    user_id = user_id or conn.current_user_id
    attempts: list[Tried] = []
    capacities = capacities_from_summaries(plan.candidates.provider_summaries if plan.candidates else None)
    failed_hosts: set[str] = set()
    for attempt in plan.attempts:
        if not attempt.usable:
            attempts.append(attempt.skipped())
            continue
        if attempt.host in failed_hosts:
            continue
        op = claim_op(consumer, attempt, req)
        host = _binding_host(names, op)
        bound: list[str] = []
        why, outcome = "", "binding-failed"
        try:
            for p in port_plans:
                say(f"binding port {p.name or p.id} to {host}")
                bound.append(p.id)  # a failed binding still sets binding:host_id: unbind it too
                why = _bind(svc, p, host, op.binding_profiles.get(p.id) if p.request else None)
                if why:
                    why = f"port {p.name or p.id}: {why}"
                    break
            if not why:
                outcome = claims.put_claim_op(
                    api, op, project_id=project_id, user_id=user_id, sleep=sleep, log=attempts, capacities=capacities
                )
                if outcome == "claimed":
                    attempts.append(Tried(host, "claimed"))
                    say(f"claimed on {host}")
                    return Scheduled(
                        consumer,
                        tuple(port_plans),
                        choices,
                        host,
                        _bindings(port_plans, op.binding_profiles, host),
                        tuple(attempts),
                        root_provider=op.host,
                        allocations=op.allocations,
                        mapping={k: tuple(v) for k, v in op.mapping.items()},
                    )
                why = {
                    "capacity": "Placement refused the claim: the capacity was taken meanwhile",
                    "provider-conflict": "providers kept changing while claiming",
                    "overcommitted": "Placement accepted the claim over capacity each time (its server-side "
                    "retry under concurrent claims); each was undone",
                }.get(outcome, outcome)
                outcome = "claim-failed"
        except BaseException as e:
            stuck = _unbind(svc, bound)
            if stuck:
                raise PartialApply(
                    e if isinstance(e, Exception) else MinbwError(str(e)),
                    bound,
                    len(port_plans),
                    then=f"ports left bound to {host}: {', '.join(stuck)}; unbind them",
                ) from e
            raise
        if outcome == "binding-failed":
            failed_hosts.add(attempt.host)
        stuck = _unbind(svc, bound)
        if stuck:
            raise PartialApply(
                MinbwError(why),
                bound,
                len(port_plans),
                then=f"ports left bound to {host}: {', '.join(stuck)}; unbind them",
            )
        say(f"{host}: {why}; trying the next candidate")
        attempts.append(Tried(host, outcome, why))
    hosts = len({a.host for a in attempts if a.outcome != claims.UNDONE})
    raise claims.overcommit_error(
        NoValidHost(
            f"No valid host: every candidate failed ({sum(a.outcome != claims.UNDONE for a in attempts)} attempts "
            f"on {hosts} host(s)): "
            + "; ".join(
                f"{a.host}: {a.outcome if a.why is None else a.why}" for a in attempts if a.outcome != claims.UNDONE
            )
            + claims.undone_note(attempts)
            + ". Nothing is left bound or claimed.",
            [],
            attempts,
        )
    )


def _bindings(ports: list[PortPlan], profiles: Mapping, host: str) -> tuple[Binding, ...]:
    return tuple(Binding(p.id, p.name, host, {"allocation": profiles.get(p.id)} if p.request else {}) for p in ports)


def hosts_outside_segments(api: Placement, req: ServerRequest, choices: Sequence[SegmentChoice]) -> str:
    """Which hosts would have room without the ports' segment filter ("host H is not in segment(s) S"; a str), ""
    when there are none (the segments are not what stands in the way). Lets PlacementError through."""
    ours = {c.aggregates for c in choices}
    if not ours:
        return ""
    loose = dataclasses.replace(req, member_of=tuple(m for m in req.member_of if m not in ours))
    cands = claims.get_candidates(api, loose)
    if not cands.allocation_requests:
        return ""
    names = api.provider_names()
    segs = ", ".join(sorted({s for c in choices for s in c.candidates}))
    return "; ".join(
        f"host {names.get(h, h)} is not in segment(s) {segs} of the ports' network"
        for h in sorted({h for h, _requests in cands.by_host()})
    )


def explain_segments(
    api: Placement, req: ServerRequest, choices: Sequence[SegmentChoice], err: NoValidHost
) -> NoValidHost:
    """NoValidHost for a routed request (returned, not raised), naming the hosts that had room but are outside the
    ports' segments; ``err`` itself when there are none. Lets PlacementError through."""
    why = hosts_outside_segments(api, req, choices)
    if not why:
        return err
    return NoValidHost(f"{err} Without the segment filter these hosts have room: {why}.", err.diagnosis, err.attempts)
