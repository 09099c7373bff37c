"""The ``server`` and ``server_bandwidth_info`` modules: boot a server on its QoS ports and check that its
bandwidth guarantee holds (allocations, ``binding:profile.allocation``, usage), delete it and check that it
released them; a server in ERROR is explained (for "No valid host": per request group)."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.errors import InvalidInput
from minbw.ops.servers import boot, delete, explain_failure, verify
from minbw.reports.guarantee import Guarantee, Release
from minbw.usecases.cloud import Cloud


def server_view(server) -> dict:
    """The server's id, name, status, hypervisor hostname, compute host and fault, a dict."""
    return dict(
        id=server.id,
        name=server.name,
        status=server.status,
        hypervisor_hostname=server.hypervisor_hostname,
        compute_host=server.compute_host,
        fault=server.fault,
    )


@dataclass(frozen=True)
class DesiredServer:
    name: str
    flavor: str | None = None
    image: str | None = None
    ports: tuple[str, ...] = ()
    present: bool = True
    wait: bool = True
    timeout: int = 300
    check: bool = False


@dataclass(frozen=True)
class ServerResult:
    changed: bool
    before: dict
    after: dict
    server: dict | None = None
    release: Release | None = None  # after a deletion with wait: what is left of its allocations and bindings

    def diff(self) -> dict:
        """Ansible's diff shape: the server's view before and after ({} for absent)."""
        return {"before": self.before, "after": self.after}

    def to_dict(self) -> dict:
        """``server``: its view (None in check mode before a boot; nothing when absent), and ``release`` after a
        waited deletion."""
        out = {} if self.server is None and self.release is None and not self.after else {"server": self.server}
        if self.release is not None:
            out["release"] = self.release.to_dict()
        return out


def server(cloud: Cloud, request: DesiredServer) -> ServerResult:
    """Boot the server unless it exists, or with ``present`` off delete it (with ``wait``: until its allocations and
    bindings are released); check mode: what would be done. A ServerResult. Raises MissingService without Nova,
    InvalidInput when booting lacks a flavor, image or ports; for a server in ERROR, NoValidHost (with the per-group
    diagnosis) or ServerFailed."""
    cloud.require("compute", "servers are booted and deleted through Nova")
    conn = cloud.conn
    found = conn.compute.find_server(request.name, ignore_missing=True)
    existing = conn.compute.get_server(found.id) if found is not None else None
    before = server_view(existing) if existing is not None else {}
    if not request.present:
        if found is None or request.check:
            return ServerResult(found is not None, before, {})
        if not request.wait:
            conn.compute.delete_server(found)
            return ServerResult(True, before, {})
        return ServerResult(True, before, {}, release=delete(conn, found.id, cloud.placement, timeout=request.timeout))
    if found is not None:
        made, changed = existing, False
    elif request.check:
        return ServerResult(True, {}, dict(name=request.name, status="ACTIVE"), server=None)
    else:
        missing = [o for o in ("flavor", "image", "ports") if not getattr(request, o)]
        if missing:
            raise InvalidInput(f"booting {request.name} needs {', '.join(missing)}")
        made = boot(
            conn,
            request.name,
            request.flavor,
            request.image,
            list(request.ports),
            wait=request.wait,
            timeout=request.timeout,
        )
        changed = True
    if made.status == "ERROR":
        raise explain_failure(conn, made, list(request.ports), cloud.placement)
    return ServerResult(changed, before, server_view(made), server=server_view(made))


@dataclass(frozen=True)
class GuaranteeQuery:
    server: str
    boot_ports: tuple[str, ...] = ()  # the ports a server in ERROR was booted with (Nova never bound them)


def guarantee(cloud: Cloud, query: GuaranteeQuery) -> Guarantee:
    """Does the server's bandwidth guarantee hold? A Guarantee: ``ok``, ``problems`` and what was checked. Raises
    MissingService without Nova or Neutron, ObjectNotFound when Nova has no such server."""
    cloud.require("compute", "the server is read from Nova")
    cloud.require("network", "the server's ports are read from Neutron")
    return verify(cloud.conn, query.server, cloud.placement, boot_ports=list(query.boot_ports) or None)
