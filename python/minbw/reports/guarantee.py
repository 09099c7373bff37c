"""A server's bandwidth guarantee, judged: what is there against what its ports request. Pure.

:mod:`minbw.ops.servers` reads the server, its ports, the claim the exact solver maps from the
server's allocations and the providers' usage; :func:`check_guarantee` lists what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from minbw.model.claims import Claim
from minbw.model.requests import PortRequest
from minbw.reports.diagnosis import Diagnosis


@dataclass(frozen=True)
class PortState:
    """A port of the server, with the request its guarantee is checked against."""

    id: str
    name: str | None
    binding_profile: Mapping
    binding_host: str | None
    request: PortRequest | None
    source: str | None  # "neutron" (its resource_request) or "computed" (minbw.neutron)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """The port as a JSON-ready dict: id, name, request_source, resource_request (Neutron's format),
        binding_allocation, binding_host, notes."""
        return {
            "id": self.id,
            "name": self.name,
            "request_source": self.source,
            "resource_request": self.request.to_neutron() if self.request else None,
            "binding_allocation": dict(self.binding_profile).get("allocation"),
            "binding_host": self.binding_host,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Guarantee:
    """Whether a server's bandwidth guarantee holds (``ok``: no ``problems``) and what was checked: the server as
    Nova shows it (id, name, status, hypervisor_hostname, compute_host), the host and allocations of its claim,
    where each request group is (group → provider and provider_name), its ports; for a server in ERROR the
    ``diagnosis`` of its "No valid host" per group."""

    problems: tuple[str, ...]
    server: Mapping
    host: str | None = None
    allocations: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    groups: Mapping[str, Mapping] = field(default_factory=dict)
    ports: tuple[PortState, ...] = ()
    diagnosis: tuple[Diagnosis, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the guarantee holds (no problem)."""
        return not self.problems

    @property
    def notes(self) -> list[str]:
        """The ports' remarks that are not problems."""
        return [n for p in self.ports for n in p.notes]

    def to_dict(self) -> dict:
        """A JSON-ready dict: ok, problems, server, host, allocations, groups, the ports' dicts, notes, diagnosis."""
        return {
            "ok": self.ok,
            "problems": list(self.problems),
            "server": dict(self.server),
            "host": self.host,
            "allocations": {rp: dict(a) for rp, a in self.allocations.items()},
            "groups": {gid: dict(g) for gid, g in self.groups.items()},
            "ports": [p.to_dict() for p in self.ports],
            "notes": self.notes,
            "diagnosis": [d.to_dict() for d in self.diagnosis],
        }


@dataclass(frozen=True)
class Release:
    """What is left of a deleted server: its allocations (Placement's, by provider) and its ports' binding profiles
    (port → binding:profile, the ports Neutron still has); ``problems``: what it did not release."""

    server_id: str
    ports: tuple[str, ...]
    allocations: Mapping[str, Mapping]
    binding_profiles: Mapping[str, Mapping]

    @property
    def problems(self) -> list[str]:
        """One sentence per allocation or binding allocation left."""
        problems = (
            [f"Placement still has allocations for consumer {self.server_id}: {self.allocations}"]
            if self.allocations
            else []
        )
        return problems + [
            f"port {pid}: binding:profile.allocation is still {p['allocation']}"
            for pid, p in self.binding_profiles.items()
            if p.get("allocation")
        ]

    def to_dict(self) -> dict:
        """A JSON-ready dict: allocations, binding_profiles, problems, server_id, ports."""
        return {
            "allocations": dict(self.allocations),
            "binding_profiles": {pid: dict(p) for pid, p in self.binding_profiles.items()},
            "problems": self.problems,
            "server_id": self.server_id,
            "ports": list(self.ports),
        }


def check_guarantee(
    server: Mapping,
    ports: list[PortState],
    claim: Claim | None,
    claim_error: str | None,
    providers: Mapping[str, Mapping],
) -> list[str]:
    """Everything that breaks the guarantee, as sentences; empty when it holds.

    ``server``: ``id``, ``status``, ``hypervisor_hostname``, ``compute_host``; ``providers``: uuid ->
    ``{name, usages, allocations}`` (the provider's usage and its consumers' allocations).
    """
    problems = []
    sid = server["id"]
    if server.get("status") != "ACTIVE":
        problems.append(f"server {sid} is {server.get('status')}, not ACTIVE")
    if claim_error:
        problems.append(f"the server's allocations in Placement do not satisfy its request: {claim_error}")
    elif claim is None:
        problems.append(f"Placement has no allocations for the server (consumer {sid})")
    if claim is not None and server.get("hypervisor_hostname") and claim.host_name != server["hypervisor_hostname"]:
        problems.append(
            f"the allocations are on host {claim.host_name}, but the server runs on {server['hypervisor_hostname']}"
        )
    groups = {gid: rps[0] for gid, rps in (claim.mapping if claim else {}).items() if gid}

    def name(rp):
        """A provider as ``NAME (UUID)`` (the uuid alone for a name when ``providers`` has none)."""
        return f"{providers.get(rp, {}).get('name') or rp} ({rp})"

    for port in ports:
        actual = dict(port.binding_profile).get("allocation")
        where = f"port {port.name or port.id} ({port.id})" if port.name else f"port {port.id}"
        if port.request is None:
            if actual:
                problems.append(f"{where} has no QoS minimum rules, but binding:profile.allocation is {actual}")
            continue
        if server.get("compute_host") and port.binding_host != server["compute_host"]:
            problems.append(
                f"{where} is bound to host {port.binding_host!r}, the server is on {server['compute_host']!r}"
            )
        if claim is None:
            continue
        expected = claim.binding_profiles.get(port.id)
        if actual != expected:
            problems.append(
                f"{where}: binding:profile.allocation is {actual!r}, but the server's allocation maps "
                f"its request group(s) to {expected!r}"
            )
        for group in port.request.groups:
            rp = groups.get(group.id)
            info = providers.get(rp or "", {})
            mine = (info.get("allocations", {}).get(sid) or {}).get("resources", {})
            for rc, amount in group.resources:
                if mine.get(rc, 0) < amount:
                    problems.append(
                        f"{where} group {group.id}: {name(rp)} has {mine.get(rc, 0)} {rc} allocated "
                        f"to the server, the group needs {amount}"
                    )
                elif info.get("usages", {}).get(rc, 0) < amount:
                    problems.append(
                        f"{where} group {group.id}: the usage of {rc} on {name(rp)} is "
                        f"{info.get('usages', {}).get(rc, 0)}, less than the {amount} allocated"
                    )
    return problems
