"""``minbw audit``: read Nova (servers, migrations), Neutron (ports) and Placement (the bandwidth providers'
inventories and allocations, and the compute roots that are full or over), judge with
:func:`minbw.plan.audit.judge_audit`, and apply the fixes when asked."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from minbw.errors import ConcurrentUpdate, ConsumerConflict
from minbw.model.providers import stocks_of
from minbw.model.requests import PortRequest, flavor_amounts
from minbw.ops import write_failures
from minbw.ops.neutron import write_binding_profile
from minbw.placement.client import Placement
from minbw.readers.placement import Reader, read_bandwidth, roots_over_capacity
from minbw.plan.audit import AuditPlan, FixResult, Migration, PortBinding, Server, guaranteed, judge_audit, trimmed


@dataclass(frozen=True)
class PlacementView:
    """What the audit reads of Placement: provider → consumer → resources of every bandwidth provider (and
    root over capacity); provider → class → inventory of those that may be over capacity (a provider listed
    with room in every class it holds allocations of is not; its inventory is not read); names; each
    provider's host (its root's name)."""

    allocations: dict
    inventories: dict
    names: dict
    hosts: dict


def read_placement(api: Placement | Reader, progress=None) -> PlacementView:
    """The bandwidth providers (:func:`minbw.readers.placement.read_bandwidth`: one listing, one allocation read
    each, and the inventories of those that may be over capacity — from the provider cache where it holds
    them), and the compute roots a
    ``?resources=CLASS:1`` listing per class finds full or over (:func:`roots_over_capacity`: read, and their
    allocations when over), so the capacity check covers them without reading every root.
    ``progress(step, done, total)`` after each read."""
    reader = api if isinstance(api, Reader) else Reader(api, progress=progress)
    seen = read_bandwidth(reader, allocations=True)
    roots = roots_over_capacity(reader, seen.providers.values(), skip=set(seen.details) | set(seen.allocations))
    over = sorted(
        u for u, d in roots.items() if any(s.used > s.capacity for s in stocks_of(u, d.inventories, d.usages).values())
    )
    allocations = {**seen.allocations, **reader.allocations(over)}
    inventories = {u: d.inventories for u, d in seen.details.items() if d.inventories}
    inventories.update({u: roots[u].inventories for u in over})
    reader.save()
    return PlacementView(allocations, inventories, seen.names(), seen.hosts())


def port_bindings(conn) -> list[PortBinding]:
    """Every port with a resource request or a binding allocation (one listing; Neutron shows
    ``resource_request`` to admins)."""
    out = []
    for port in conn.network.ports():
        profile = port.binding_profile or {}
        request = PortRequest.from_neutron(port.resource_request, port_id=port.id)
        if request is None and not profile.get("allocation"):
            continue
        out.append(PortBinding(port.id, port.device_id or None, request, profile.get("allocation")))
    return out


def servers_and_migrations(conn) -> tuple[list[Server], list[Migration]]:
    """The live servers (with the bandwidth their flavors request, from the flavor embedded in the
    server) and Nova's migrations of any status (ages come from them; those with no uuid, from before
    compute API 2.59, are no consumer)."""
    servers = []
    for s in conn.compute.servers(all_projects=True):
        flavor = guaranteed(flavor_amounts(getattr(s.flavor, "extra_specs", None) if s.flavor else None))
        servers.append(Server(s.id, s.name or "", s.created_at, flavor))
    migrations = [
        Migration(m.uuid, m.server_id, m.status or "", m.dest_node, m.created_at, m.migration_type or "migration")
        for m in conn.compute.migrations()
        if getattr(m, "uuid", None)
    ]
    return servers, migrations


def run_audit(conn, api: Placement | Reader | None = None, *, ignore: Iterable[str] = (), progress=None) -> AuditPlan:
    """Read Placement (through ``api``, default a client of ``conn``), Nova and Neutron and judge: the AuditPlan
    (findings and fixes, nothing written). Lets Placement's errors through (PlacementError)."""
    seen = read_placement(api or Placement(conn), progress)
    servers, migrations = servers_and_migrations(conn)
    return judge_audit(
        seen.allocations, servers, migrations, port_bindings(conn), seen.names, ignore, seen.inventories, seen.hosts
    )


def apply_fixes(conn, api: Placement, plan: AuditPlan, retries: int = 3, binding_conn=None) -> list[FixResult]:
    """Apply the plan's fixes one by one; returns what each did (a FixResult: ``done``, or its ``error``).
    ``binding_conn``: the connection that clears ``binding:profile`` (Neutron's service role), default ``conn``."""
    done = []
    for op in plan.ops:
        try:
            if op.action == "trim_consumer":
                _trim(api, op.subject, op.classes, retries)
            else:
                port = conn.network.get_port(op.subject)
                write_binding_profile(
                    binding_conn or conn,
                    port,
                    {k: v for k, v in (port.binding_profile or {}).items() if k != "allocation"},
                )
            done.append(FixResult(op, True))
        except write_failures() as e:  # each fix is independent: report, go on
            done.append(FixResult(op, False, f"{type(e).__name__}: {e}"))
    return done


def _trim(api: Placement, consumer: str, classes, retries: int) -> None:
    for _attempt in range(retries + 1):
        body = api.get_allocations(consumer)
        try:
            api.put_allocations(consumer, trimmed(body, classes))
            return
        except ConcurrentUpdate:
            continue  # the consumer changed between our read and write: read again
    raise ConsumerConflict(f"consumer {consumer} kept changing while trimming it ({retries + 1} tries)")
