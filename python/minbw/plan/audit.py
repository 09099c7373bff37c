"""Audit of bandwidth allocations: leaks, stale binding allocations, servers holding more than their
ports request. Pure: :mod:`minbw.ops.audit` reads Nova, Neutron and Placement and applies the fixes.

Findings, each with the fix (an op) where one is safe:

* ``leaked-allocation``: a consumer holds bandwidth or packet-rate resources but is neither a live
  server nor an in-progress migration. Fix: remove those resources from the consumer (its other
  allocations — VCPU, memory — are left as they are: the audit speaks for bandwidth only).
* ``stale-binding``: a port's ``binding:profile.allocation`` names a provider that holds nothing of
  the port's request for the port's server (or the port is bound to no server). Fix: clear it.
* ``over-allocation``: a server holds more of a bandwidth class than its ports request in all.
  No automatic fix: which provider to trim is ambiguous; the finding names the amounts.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minbw.model.requests import PortRequest
from minbw.neutron import naming
from minbw.plan import base

GUARANTEED_CLASSES = naming.GUARANTEED_CLASSES
# Nova migration statuses after which the migration consumer holds nothing any more.
MIGRATION_DONE = frozenset({"confirmed", "reverted", "error", "failed", "cancelled", "completed", "done"})

LEAK, STALE_BINDING, OVER = "leaked-allocation", "stale-binding", "over-allocation"


@dataclass(frozen=True)
class PortBinding:
    """A port as the audit sees it: its server (device_id), request and binding allocation."""

    id: str
    device_id: str | None
    request: PortRequest | None
    binding_allocation: str | Mapping[str, str] | None

    def providers(self) -> dict[str, str]:
        """``{group id: provider}`` its binding allocation names (a legacy single uuid: its one group)."""
        alloc = self.binding_allocation
        if not alloc:
            return {}
        if isinstance(alloc, str):
            return {self.request.groups[0].id if self.request else "": alloc}
        return dict(alloc)


@dataclass(frozen=True)
class FixOp(base.Op):
    """``trim_consumer`` (drop ``classes`` from the consumer's allocations) or ``clear_binding``."""

    subject: str = ""
    classes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        out = {"action": self.action, "subject": self.subject}
        if self.classes:
            out["classes"] = list(self.classes)
        return out


@dataclass(frozen=True)
class Finding:
    kind: str
    subject: str          # the consumer or port
    detail: str
    fix: FixOp | None = None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "subject": self.subject, "detail": self.detail,
                "fix": self.fix.to_dict() if self.fix else None}


@dataclass(frozen=True)
class AuditPlan(base.Plan):
    findings: tuple[Finding, ...] = ()
    consumers: int = 0
    ports: int = 0

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict:
        return {**super().to_dict(), "ok": self.ok, "findings": [f.to_dict() for f in self.findings],
                "checked": {"consumers": self.consumers, "ports": self.ports}}


def guaranteed(resources: Mapping[str, int]) -> dict[str, int]:
    return {rc: n for rc, n in resources.items() if rc in GUARANTEED_CLASSES and n}


def audit(allocations: Mapping[str, Mapping[str, Mapping[str, int]]], servers: Iterable[str],
          migrations: Iterable[str], ports: Iterable[PortBinding], names: Mapping[str, str] = {},
          ignore: Iterable[str] = ()) -> AuditPlan:
    """``allocations``: provider → consumer → resources (the bandwidth providers' allocations);
    ``servers``: ids of live servers; ``migrations``: uuids of in-progress migrations; ``ignore``:
    consumers that are known to be someone else's (e.g. non-Nova claims)."""
    servers, migrations, ignore = set(servers), set(migrations), set(ignore)
    ports = list(ports)
    held: dict[str, dict[str, dict[str, int]]] = {}  # consumer → provider → guaranteed resources
    for rp, consumers in allocations.items():
        for consumer, resources in consumers.items():
            mine = guaranteed(resources)
            if mine:
                held.setdefault(consumer, {})[rp] = mine

    def label(rp):
        return f"{names.get(rp, rp)} ({rp})" if rp in names else rp

    findings: list[Finding] = []
    for consumer in sorted(held):
        if consumer in servers or consumer in migrations or consumer in ignore:
            continue
        what = "; ".join(f"{label(rp)}: " + ", ".join(f"{rc}={n}" for rc, n in sorted(res.items()))
                         for rp, res in sorted(held[consumer].items()))
        classes = tuple(sorted({rc for res in held[consumer].values() for rc in res}))
        findings.append(Finding(LEAK, consumer, f"consumer {consumer} is neither a live server nor an "
                                                f"in-progress migration but holds {what}",
                                FixOp("trim_consumer", subject=consumer, classes=classes)))
    for port in sorted(ports, key=lambda p: p.id):
        named = port.providers()
        if not named:
            continue
        server_holds = held.get(port.device_id or "", {})
        empty = [rp for rp in named.values() if not server_holds.get(rp)]
        if not port.device_id or port.device_id not in servers:
            detail = (f"port {port.id} is bound to no live server ({port.device_id or 'no device'}) but its "
                      f"binding:profile.allocation is {port.binding_allocation}")
        elif empty:
            detail = (f"port {port.id}: binding:profile.allocation names {', '.join(map(label, empty))}, which "
                      f"hold(s) nothing for its server {port.device_id}")
        else:
            continue
        findings.append(Finding(STALE_BINDING, port.id, detail, FixOp("clear_binding", subject=port.id)))
    requested: dict[str, dict[str, int]] = {}
    for port in ports:
        if port.device_id and port.request:
            for g in port.request.groups:
                for rc, n in g.resources:
                    requested.setdefault(port.device_id, {}).setdefault(rc, 0)
                    requested[port.device_id][rc] += n
    for server in sorted(servers & set(held)):
        total: dict[str, int] = {}
        for res in held[server].values():
            for rc, n in res.items():
                total[rc] = total.get(rc, 0) + n
        want = requested.get(server, {})
        over = {rc: (n, want.get(rc, 0)) for rc, n in sorted(total.items()) if n > want.get(rc, 0)}
        if over:
            findings.append(Finding(OVER, server, f"server {server} holds " + ", ".join(
                f"{rc}={n} but its ports request {w}" for rc, (n, w) in over.items())))
    ops = tuple(f.fix for f in findings if f.fix)
    return AuditPlan(ops, before=None, after=None, findings=tuple(findings), consumers=len(held),
                     ports=len(ports))


def trimmed(body: Mapping, classes: Iterable[str]) -> dict:
    """A consumer's GET /allocations body without ``classes``, ready to PUT at its generation."""
    drop = set(classes)
    allocs = {}
    for rp, a in (body.get("allocations") or {}).items():
        left = {rc: n for rc, n in a["resources"].items() if rc not in drop}
        if left:
            allocs[rp] = {"resources": left}
    out = {"allocations": allocs, "consumer_generation": body.get("consumer_generation"),
           "project_id": body.get("project_id"), "user_id": body.get("user_id")}
    if body.get("consumer_type"):
        out["consumer_type"] = body["consumer_type"]
    return out
