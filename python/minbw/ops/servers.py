"""A server's bandwidth guarantee: boot, verify, explain "no valid host", delete and check the release.

Reads go through openstacksdk's compute and network proxies and :class:`minbw.placement.Placement`.
The verdict is pure (:func:`minbw.reports.guarantee.check_guarantee`).
"""

from __future__ import annotations

import time
from typing import cast

from minbw.errors import MappingError, MicroversionUnsupported, MinbwError, NoValidHost, ObjectNotFound, ServerFailed
from minbw.model.requests import ServerRequest
from minbw.ops import claims, neutron
from minbw.placement.client import Placement
from minbw.reports.diagnosis import Diagnosis
from minbw.reports.guarantee import Guarantee, PortState, Release, check_guarantee

NO_VALID_HOST = "No valid host"


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
        notes.append(
            f"Neutron's resource_request {reported.to_neutron()} differs from the computed "
            f"{computed.to_neutron()}; Nova used Neutron's"
        )
    request, source = (reported, "neutron") if reported is not None else (computed, "computed" if computed else None)
    port = facts.port
    return PortState(
        id=port["id"],
        name=port.get("name"),
        binding_profile=port.get("binding_profile") or {},
        binding_host=port.get("binding_host_id") or None,
        request=request,
        source=source,
        notes=tuple(notes),
    )


def find_server(conn, name_or_id: str):
    """The server named or with id ``name_or_id``, read in full (embedded flavor, host, fault). Raises ObjectNotFound
    when Nova has none."""
    server = conn.compute.find_server(name_or_id, ignore_missing=True)
    if server is None:
        raise ObjectNotFound(f"no server {name_or_id!r} in Nova")
    if server.id == name_or_id:
        return server  # found by its id: openstacksdk read it with GET /servers/ID, the full body already
    return conn.compute.get_server(server.id)  # found by name in a listing: the full body (flavor, host, fault)


def request_of_server(server, ports) -> ServerRequest:
    """What Nova asked Placement for: the server's embedded flavor (microversion 2.47+) and its ports."""
    flavor = dict(server.flavor or {})
    if "vcpus" not in flavor:
        raise MicroversionUnsupported(
            f"server {server.id}: the compute API did not embed the flavor (needs microversion "
            f"2.47 or later), so its resources are unknown"
        )
    image = server.image or {}
    return ServerRequest.from_flavor(
        flavor, ports=[p.request for p in ports if p.request], boot_from_volume=not image.get("id")
    )


def verify(conn, name_or_id: str, api: Placement | None = None, boot_ports: list[str] | None = None) -> Guarantee:
    """Does the server's bandwidth guarantee hold? A Guarantee: ``ok``, ``problems`` and what was checked. Raises
    ObjectNotFound when Nova has no such server.

    A server in ERROR holds no guarantee: its one problem is Nova's fault, and for "No valid host" the
    ``diagnosis`` of the same request per group (``boot_ports``: the ports it was booted with, by name or id,
    which Nova never bound; without them, the ports bound to it).
    """
    api = api or Placement(conn)
    server = find_server(conn, name_or_id)
    view = {
        "id": server.id,
        "name": server.name,
        "status": server.status,
        "hypervisor_hostname": server.hypervisor_hostname,
        "compute_host": server.compute_host,
    }
    if server.status == "ERROR":
        failure = explain_failure(
            conn, server, boot_ports or [p.id for p in conn.network.ports(device_id=server.id)], api
        )
        # explain_failure's NoValidHost carries readers.diagnose's entries (errors.py names them by their to_dict)
        diagnosis = cast(list[Diagnosis], failure.diagnosis) if isinstance(failure, NoValidHost) else []
        return Guarantee((str(failure),), view, diagnosis=tuple(diagnosis))
    ports = [port_state(conn, p.id) for p in conn.network.ports(device_id=server.id)]
    claim, claim_error = None, None
    try:
        claim = claims.existing_claim(api, server.id, request_of_server(server, ports))
    except MappingError as e:
        claim_error = str(e)
    providers = {}
    if claim is not None:
        names = api.provider_names(in_tree=claim.host)
        for rp in claim.allocations:
            providers[rp] = {
                "name": names.get(rp),
                "usages": api.provider_usages(rp),
                "allocations": api.provider_allocations(rp),
            }
    problems = check_guarantee(view, ports, claim, claim_error, providers)
    groups = {}
    if claim is not None:
        groups = {
            gid: {"provider": rps[0], "provider_name": providers.get(rps[0], {}).get("name")}
            for gid, rps in claim.mapping.items()
            if gid
        }
    return Guarantee(
        tuple(problems),
        view,
        host=claim.host_name if claim else None,
        allocations=dict(claim.allocations) if claim else {},
        groups=groups,
        ports=tuple(ports),
    )


# ---------------------------------------------------------------- boot, explain, delete
def boot(conn, name: str, flavor: str, image: str, ports: list[str], *, wait: bool = True, timeout: int = 300):
    """Boot a server on existing ports (by name or id) and wait until it is ACTIVE or ERROR."""
    from openstack import exceptions as sdk_exceptions

    compute, net = conn.compute, conn.network
    port_ids = [net.find_port(p, ignore_missing=False).id for p in ports]
    server = compute.create_server(
        name=name,
        flavor_id=compute.find_flavor(flavor, ignore_missing=False).id,
        image_id=conn.image.find_image(image, ignore_missing=False).id,
        networks=[{"port": pid} for pid in port_ids],
    )
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
        return ServerFailed(f"server {server.name} ({server.id}) is {server.status}: {message}")
    # Nova never bound the ports, so they are found by what the boot was given, not by device_id.
    states = [port_state(conn, conn.network.find_port(p, ignore_missing=False).id) for p in ports]
    ours = claims.no_valid_host(api or Placement(conn), request_of_server(server, states))
    return NoValidHost(
        f"server {server.name} ({server.id}) is {server.status}: Nova says {message.strip()!r}. {ours}",
        ours.diagnosis,
        ours.attempts,
    )


def release_state(conn, api: Placement, server_id: str, port_ids: list[str]) -> Release:
    """What is left of a server after its deletion (a Release): its allocations and its ports' binding allocations."""
    allocs = api.get_allocations(server_id).get("allocations") or {}
    profiles = {}
    for pid in port_ids:
        port = conn.network.find_port(pid, ignore_missing=True)
        if port is not None:
            profiles[pid] = dict(port.binding_profile or {})
    return Release(server_id, tuple(port_ids), allocs, profiles)


def delete(
    conn, name_or_id: str, api: Placement | None = None, *, timeout: int = 120, settle: float = 20, poll: float = 0.5
) -> Release | None:
    """Delete the server, wait until it is gone, then until its allocations and binding allocations are
    released (at most ``settle`` seconds): what is left then (a Release). None when there was no such server."""
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
        if not state.problems or time.monotonic() > deadline:
            return state
        time.sleep(poll)
