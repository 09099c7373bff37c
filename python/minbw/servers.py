"""A server's bandwidth guarantee: boot, verify, explain "no valid host", delete and check the release.

Reads go through openstacksdk's compute and network proxies and :class:`minbw.placement.Placement`.
The verdict is pure (:func:`check_guarantee`): given the server, its ports, their requests, the claim our
exact solver maps from the server's allocations and the providers' usage, it lists what is wrong.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from openstack import exceptions as sdk_exceptions

from minbw import claims, neutron
from minbw.errors import MinbwError
from minbw.mapping import MappingError
from minbw.placement import Placement
from minbw.query import ServerRequest
from minbw.request import PortRequest

NO_VALID_HOST = "No valid host"


@dataclass(frozen=True)
class PortState:
    """A port of the server, with the request its guarantee is checked against."""

    id: str
    name: str | None
    binding_profile: Mapping
    binding_host: str | None
    request: PortRequest | None
    source: str | None          # "neutron" (its resource_request) or "computed" (minbw.neutron)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "request_source": self.source,
                "resource_request": self.request.to_neutron() if self.request else None,
                "binding_allocation": dict(self.binding_profile).get("allocation"),
                "binding_host": self.binding_host, "notes": list(self.notes)}


def port_state(conn, port_id: str) -> PortState:
    """Neutron's resource_request when the caller sees it (admin), else the one computed as Neutron does."""
    facts = neutron.port_facts(conn, port_id)
    reported = neutron.reported_request(facts)
    notes = []
    try:
        computed = neutron.computed_request(facts)
    except MinbwError as e:
        computed = None
        notes.append(f"cannot compute the request: {e}")
    if reported is not None and computed is not None and reported.to_neutron() != computed.to_neutron():
        notes.append(f"Neutron's resource_request {reported.to_neutron()} differs from the computed "
                     f"{computed.to_neutron()}; Nova used Neutron's")
    request, source = (reported, "neutron") if reported is not None else (computed, "computed" if computed else None)
    port = facts.port
    return PortState(id=port["id"], name=port.get("name"), binding_profile=port.get("binding_profile") or {},
                     binding_host=port.get("binding_host_id") or None, request=request, source=source,
                     notes=tuple(notes))


def find_server(conn, name_or_id: str):
    server = conn.compute.find_server(name_or_id, ignore_missing=True)
    if server is None:
        raise MinbwError(f"no server {name_or_id!r} in Nova")
    return conn.compute.get_server(server.id)  # the full body: embedded flavor, host, fault


def server_request(server, ports) -> ServerRequest:
    """What Nova asked Placement for: the server's embedded flavor (microversion 2.47+) and its ports."""
    flavor = dict(server.flavor or {})
    if "vcpus" not in flavor:
        raise MinbwError(f"server {server.id}: the compute API did not embed the flavor (needs microversion "
                         f"2.47 or later), so its resources are unknown")
    image = server.image or {}
    return ServerRequest.from_flavor(flavor, ports=[p.request for p in ports if p.request],
                                     boot_from_volume=not image.get("id"))


def check_guarantee(server: Mapping, ports: list[PortState], claim: claims.Claim | None,
                    claim_error: str | None, providers: Mapping[str, Mapping]) -> list[str]:
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
        problems.append(f"the allocations are on host {claim.host_name}, but the server runs on "
                        f"{server['hypervisor_hostname']}")
    groups = {gid: rps[0] for gid, rps in (claim.mapping if claim else {}).items() if gid}

    def name(rp):
        return f"{providers.get(rp, {}).get('name') or rp} ({rp})"

    for port in ports:
        actual = dict(port.binding_profile).get("allocation")
        where = f"port {port.name or port.id} ({port.id})" if port.name else f"port {port.id}"
        if port.request is None:
            if actual:
                problems.append(f"{where} has no QoS minimum rules, but binding:profile.allocation is {actual}")
            continue
        if server.get("compute_host") and port.binding_host != server["compute_host"]:
            problems.append(f"{where} is bound to host {port.binding_host!r}, the server is on {server['compute_host']!r}")
        if claim is None:
            continue
        expected = claim.binding_profiles.get(port.id)
        if actual != expected:
            problems.append(f"{where}: binding:profile.allocation is {actual!r}, but the server's allocation maps "
                            f"its request group(s) to {expected!r}")
        for group in port.request.groups:
            rp = groups.get(group.id)
            info = providers.get(rp, {})
            mine = (info.get("allocations", {}).get(sid) or {}).get("resources", {})
            for rc, amount in group.resources:
                if mine.get(rc, 0) < amount:
                    problems.append(f"{where} group {group.id}: {name(rp)} has {mine.get(rc, 0)} {rc} allocated "
                                    f"to the server, the group needs {amount}")
                elif info.get("usages", {}).get(rc, 0) < amount:
                    problems.append(f"{where} group {group.id}: the usage of {rc} on {name(rp)} is "
                                    f"{info.get('usages', {}).get(rc, 0)}, less than the {amount} allocated")
    return problems


def verify(conn, name_or_id: str, api: Placement | None = None) -> dict:
    """Does the server's bandwidth guarantee hold? ``ok``, ``problems`` and what was checked."""
    api = api or Placement(conn)
    server = find_server(conn, name_or_id)
    ports = [port_state(conn, p.id) for p in conn.network.ports(device_id=server.id)]
    claim, claim_error = None, None
    try:
        claim = claims.existing_claim(api, server.id, server_request(server, ports))
    except MappingError as e:
        claim_error = str(e)
    providers = {}
    if claim is not None:
        names = api.provider_names(in_tree=claim.host)
        for rp in claim.allocations:
            providers[rp] = {"name": names.get(rp), "usages": api.provider_usages(rp),
                             "allocations": api.provider_allocations(rp)}
    view = {"id": server.id, "name": server.name, "status": server.status,
            "hypervisor_hostname": server.hypervisor_hostname, "compute_host": server.compute_host}
    problems = check_guarantee(view, ports, claim, claim_error, providers)
    groups = {}
    if claim is not None:
        groups = {gid: {"provider": rps[0], "provider_name": providers.get(rps[0], {}).get("name")}
                  for gid, rps in claim.mapping.items() if gid}
    return {"ok": not problems, "problems": problems, "server": view,
            "host": claim.host_name if claim else None,
            "allocations": {rp: dict(a) for rp, a in claim.allocations.items()} if claim else {},
            "groups": groups, "ports": [p.to_dict() for p in ports],
            "notes": [n for p in ports for n in p.notes]}


# ---------------------------------------------------------------- boot, explain, delete
def boot(conn, name: str, flavor: str, image: str, ports: list[str], *, wait: bool = True,
         timeout: int = 300):
    """Boot a server on existing ports (by name or id) and wait until it is ACTIVE or ERROR."""
    compute, net = conn.compute, conn.network
    port_ids = [net.find_port(p, ignore_missing=False).id for p in ports]
    server = compute.create_server(name=name, flavor_id=compute.find_flavor(flavor, ignore_missing=False).id,
                                   image_id=conn.image.find_image(image, ignore_missing=False).id,
                                   networks=[{"port": pid} for pid in port_ids])
    if wait:
        try:
            compute.wait_for_server(server, status="ACTIVE", failures=["ERROR"], wait=timeout)
        except sdk_exceptions.ResourceFailure:
            pass  # ERROR: the caller explains it (explain_failure)
    return compute.get_server(server.id)


def explain_failure(conn, server, ports: list[str], api: Placement | None = None) -> MinbwError:
    """The error for a server in ERROR: for "No valid host", our per-group diagnosis of the same request."""
    fault = server.fault or {}
    message = fault.get("message") or f"server {server.name} is {server.status}"
    if NO_VALID_HOST not in message:
        return MinbwError(f"server {server.name} ({server.id}) is {server.status}: {message}")
    # Nova never bound the ports, so they are found by what the boot was given, not by device_id.
    states = [port_state(conn, conn.network.find_port(p, ignore_missing=False).id) for p in ports]
    nvh = claims.claims_failure(api or Placement(conn), server_request(server, states))
    nvh.args = (f"server {server.name} ({server.id}) is {server.status}: Nova says {message.strip()!r}. "
                f"{nvh}",)
    return nvh


def release_state(conn, api: Placement, server_id: str, port_ids: list[str]) -> dict:
    """What is left of a server after its deletion: its allocations and its ports' binding allocations."""
    allocs = claims.consumer_allocations(api, server_id).get("allocations") or {}
    profiles = {}
    for pid in port_ids:
        port = conn.network.find_port(pid, ignore_missing=True)
        if port is not None:
            profiles[pid] = dict(port.binding_profile or {})
    problems = [f"Placement still has allocations for consumer {server_id}: {allocs}"] if allocs else []
    problems += [f"port {pid}: binding:profile.allocation is still {p['allocation']}"
                 for pid, p in profiles.items() if p.get("allocation")]
    return {"allocations": allocs, "binding_profiles": profiles, "problems": problems}


def delete(conn, name_or_id: str, api: Placement | None = None, *, timeout: int = 120,
           settle: float = 20, poll: float = 0.5) -> dict | None:
    """Delete the server, wait until it is gone, then until its allocations and binding allocations are
    released (at most ``settle`` seconds). None when there was no such server."""
    api = api or Placement(conn)
    server = conn.compute.find_server(name_or_id, ignore_missing=True)
    if server is None:
        return None
    port_ids = [p.id for p in conn.network.ports(device_id=server.id)]
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=timeout)
    deadline = time.monotonic() + settle
    while True:
        state = release_state(conn, api, server.id, port_ids)
        if not state["problems"] or time.monotonic() > deadline:
            return dict(state, server_id=server.id, ports=port_ids)
        time.sleep(poll)
