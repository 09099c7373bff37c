"""What ``minbw doctor`` reads of a cloud: Placement's microversion, Neutron's extensions and agents, Nova's
nova-compute services and API microversion. One call each; a service the cloud lacks, or one the caller may not
read, is said, not raised (:mod:`minbw.reports.doctor` judges what was read)."""

from __future__ import annotations

from collections.abc import Callable

from openstack import exceptions as sdk_exceptions

from minbw.errors import MinbwError
from minbw.ops.nova_query import read_compute_services, read_owner_nova
from minbw.reports.doctor import (
    FAIL,
    SKIP,
    Agent,
    Check,
    agents,
    compute_microversion,
    compute_versions,
    neutron_extensions,
    nova_services,
    placement_version,
    provider_writers,
)

UNREADABLE = (sdk_exceptions.SDKException, MinbwError)


def _read(name: str, read: Callable[[], list[Check]], fix: str) -> list[Check]:
    """``read()``'s checks, or one ``fail`` naming what could not be read and why (a refusal, a failing service)."""
    try:
        return read()
    except sdk_exceptions.ForbiddenException as e:
        return [Check(name, SKIP, f"not readable by these credentials ({e.status_code})", fix)]
    except UNREADABLE as e:
        return [Check(name, FAIL, f"cannot be read: {str(e).splitlines()[0] if str(e) else type(e).__name__}", fix)]


def check_placement(api) -> list[Check]:
    """The check of Placement's highest microversion, a list of one Check; a failed read is a ``fail`` or ``skip``
    Check, not raised."""
    return _read(
        "placement microversion",
        lambda: [placement_version(api.server_max_version())],
        "check the placement endpoint in clouds.yaml (or the catalog)",
    )


def check_neutron(conn) -> list[Check]:
    """The checks of Neutron's extensions and agents (and, with agents, of who writes their providers), a list of
    Checks; a failed read is a ``fail`` or ``skip`` Check, not raised."""
    found = []

    def read_agents():
        listed = [
            Agent(a.agent_type or "", a.host or "", bool(a.is_alive), dict(a.configuration or {}), a.resources_synced)
            for a in conn.network.agents()
        ]
        found.extend(listed)
        return agents(listed)

    out = _read(
        "neutron extensions",
        lambda: neutron_extensions(e.alias for e in conn.network.extensions()),
        "check the network endpoint in clouds.yaml (or the catalog)",
    )
    out += _read("neutron agents", read_agents, "list Neutron's agents as an admin (openstack network agent list)")
    if found:
        out.append(provider_writers(found))
    return out


def check_nova(conn, api) -> list[Check]:
    """The checks of Nova's compute microversion, its nova-compute services and the versions their compute roots
    show, a list of Checks; a failed read is a ``fail`` or ``skip`` Check, not raised."""
    read = []  # the services, listed once: their check, then the versions their compute nodes' roots show

    def services():
        read.extend(read_compute_services(conn))
        return [nova_services(read)]

    def version():
        endpoint = conn.compute.get_endpoint_data()
        return [
            compute_microversion(
                str(endpoint.max_microversion[0]) + "." + str(endpoint.max_microversion[1])
                if endpoint and endpoint.max_microversion
                else None
            )
        ]

    def versions():
        decided = read_owner_nova(api, conn, read or None)
        return [compute_versions(decided.applies, decided.why)]

    return (
        _read("compute microversion", version, "check the compute endpoint in clouds.yaml (or the catalog)")
        + _read("nova-compute services", services, "list Nova's services as an admin (openstack compute service list)")
        + _read("nova-compute versions", versions, "")
    )
