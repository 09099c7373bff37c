"""``minbw audit``: read Nova (servers, migrations), Neutron (ports) and Placement (the bandwidth
providers' allocations), judge with :func:`minbw.plan.audit.audit`, and apply the fixes when asked."""
from __future__ import annotations

from collections.abc import Iterable

from minbw.errors import ConcurrentUpdate, ConsumerConflict
from minbw.model.requests import PortRequest
from minbw.ops import WRITE_FAILURES
from minbw.ops.neutron import write_binding_profile
from minbw.placement.client import Placement
from minbw.plan.audit import GUARANTEED_CLASSES, MIGRATION_DONE, AuditPlan, PortBinding, audit, trimmed


def bandwidth_allocations(api: Placement, progress=None) -> tuple[dict, dict[str, str]]:
    """provider → consumer → resources, for every provider with a bandwidth or packet-rate inventory,
    and the providers' names. ``progress(step, done, total)`` after each provider read."""
    providers = api.list_providers()
    out = {}
    for i, d in enumerate(api.provider_details(providers), 1):
        if progress:
            progress("providers read", i, len(providers))
        if GUARANTEED_CLASSES & set(d.inventories):
            out[d.provider.uuid] = {c: a["resources"] for c, a in api.provider_allocations(d.provider.uuid).items()}
    return out, {p.uuid: p.name for p in providers}


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


def live_servers_and_migrations(conn) -> tuple[set[str], set[str]]:
    servers = {s.id for s in conn.compute.servers(all_projects=True)}
    migrations = {m.uuid for m in conn.compute.migrations() if (m.status or "").lower() not in MIGRATION_DONE
                  and getattr(m, "uuid", None)}
    return servers, migrations


def run_audit(conn, api: Placement | None = None, *, ignore: Iterable[str] = (), progress=None) -> AuditPlan:
    api = api or Placement(conn)
    allocations, names = bandwidth_allocations(api, progress)
    servers, migrations = live_servers_and_migrations(conn)
    return audit(allocations, servers, migrations, port_bindings(conn), names, ignore)


def apply_fixes(conn, api: Placement, plan: AuditPlan, retries: int = 3, binding_conn=None) -> list[dict]:
    """Apply the plan's fixes one by one; returns what was done (each op with ``done`` and ``error``).
    ``binding_conn``: the connection that clears ``binding:profile`` (Neutron's service role), default ``conn``."""
    done = []
    for op in plan.ops:
        try:
            if op.action == "trim_consumer":
                _trim(api, op.subject, op.classes, retries)
            else:
                port = conn.network.get_port(op.subject)
                write_binding_profile(binding_conn or conn, port,
                                      {k: v for k, v in (port.binding_profile or {}).items() if k != "allocation"})
            done.append({**op.to_dict(), "done": True, "error": None})
        except WRITE_FAILURES as e:  # each fix is independent: report, go on
            done.append({**op.to_dict(), "done": False, "error": f"{type(e).__name__}: {e}"})
    return done


def _trim(api: Placement, consumer: str, classes, retries: int) -> None:
    for _ in range(retries + 1):
        body = api.get_allocations(consumer)
        try:
            api.put_allocations(consumer, trimmed(body, classes))
            return
        except ConcurrentUpdate:
            continue  # the consumer changed between our read and write: read again
    raise ConsumerConflict(f"consumer {consumer} kept changing while trimming it ({retries + 1} tries)")
