"""Audit of bandwidth allocations: leaks, stale binding allocations, servers holding more than their
ports request, providers over capacity. Pure: :mod:`minbw.ops.audit` reads Nova, Neutron and Placement
and applies the fixes.

Findings, each with the fix (an op) where one is safe and exact:

* ``leaked-allocation``: a consumer holds bandwidth or packet-rate resources but is neither a live
  server nor an in-progress migration. Fix: remove those resources from the consumer (its other
  allocations — VCPU, memory — are left as they are: the audit speaks for bandwidth only).
* ``stale-binding``: a port's ``binding:profile.allocation`` names a provider that holds nothing of
  the port's request for the port's server, nor for its in-progress migration (a live migration moves
  the binding last), or the port is bound to no server. Fix: clear it.
* ``double-allocation``: a server holds more of a class on a provider than the request groups whose
  binding allocation names that provider request there, and more than its ports and flavor request in
  all (``nova-manage placement heal_allocations`` leaves twice the request when it heals a port whose
  binding allocation was cleared while the allocation stayed).
* ``over-allocation``: the same excess on a provider that no binding allocation of the server's ports
  names (a server with bandwidth and no QoS port, or a copy landed on another device), or of a class the
  groups bound there do not request.
* ``over-capacity``: a provider's usage of a class is above its capacity, ``(total - reserved) *
  allocation_ratio`` (Placement's overcommit under concurrent claims, or an inventory lowered under its
  allocations, which Placement accepts); its consumers youngest first and which of them to move.

The last three are reported only. An excess is not safe to trim: Nova's interface attach extends the
server's allocation before it writes the port's device and binding (no task state marks it), so a port
being attached looks like a double allocation for that moment. Which consumer leaves an overfull
provider is the operator's choice (a move, a deletion, or the inventory given back).

Ages ("youngest first"): Placement keeps no allocation times in its API. A server counts from the
latest of its ``created_at`` and the ``created_at`` of the migrations that brought it to the provider's
host (``dest_node``; failed, cancelled and reverted ones did not); an in-progress migration's consumer
holds the server's allocation from before the move and counts like the server on that host. Any other
consumer has no known age: it is listed after the dated ones, never given an invented one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

from minbw.model.providers import stocks_of
from minbw.model.requests import PortRequest
from minbw.neutron import naming
from minbw.plan import base

GUARANTEED_CLASSES = naming.GUARANTEED_CLASSES
# Nova migration statuses after which the migration consumer holds nothing any more.
MIGRATION_DONE = frozenset({"confirmed", "reverted", "error", "failed", "cancelled", "completed", "done"})
# ... and those of migrations that did not leave the server on their destination.
NOT_ARRIVED = frozenset({"error", "failed", "cancelled", "reverted"})

LEAK, STALE_BINDING, OVER = "leaked-allocation", "stale-binding", "over-allocation"
DOUBLE, OVER_CAPACITY = "double-allocation", "over-capacity"
NO_AGE = "no age known: not a Nova server or migration, and Placement's API keeps no allocation times"


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
class Server:
    """A live server: ``flavor``, the bandwidth and packet-rate amounts its flavor's extra specs request."""

    id: str
    name: str = ""
    created_at: str | None = None
    flavor: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Migration:
    """A Nova migration (any status): its uuid is the consumer of the source's allocation while it runs."""

    uuid: str
    server: str | None = None
    status: str = ""
    dest_node: str | None = None
    created_at: str | None = None
    kind: str = "migration"

    @property
    def in_progress(self) -> bool:
        """Whether the migration still runs: its status (any case) is none of :data:`MIGRATION_DONE`."""
        return self.status.lower() not in MIGRATION_DONE


@dataclass(frozen=True)
class FixOp(base.Op):
    """``trim_consumer`` (drop ``classes`` from the consumer's allocations) or ``clear_binding``."""

    subject: str = ""
    classes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """A JSON-ready dict: ``action``, ``subject`` and, when there are any, ``classes``."""
        out = {"action": self.action, "subject": self.subject}
        if self.classes:
            out["classes"] = list(self.classes)
        return out


@dataclass(frozen=True)
class FixResult:
    """What a fix tried did: ``done``, or the ``error`` that stopped it (each fix is independent)."""

    op: FixOp
    done: bool
    error: str | None = None

    def to_dict(self) -> dict:
        """A JSON-ready dict: the fix's dict, ``done`` and ``error``."""
        return {**self.op.to_dict(), "done": self.done, "error": self.error}


@dataclass(frozen=True)
class Finding:
    """``facts``: the finding as data (provider, amounts, consumers), beside the sentence in ``detail``."""

    kind: str
    subject: str  # the consumer, port or provider
    detail: str
    fix: FixOp | None = None
    facts: Mapping = field(default_factory=dict)

    def to_dict(self) -> dict:
        """A JSON-ready dict: kind, subject, detail, the fix's dict (None: no fix), and the facts merged in."""
        return {
            "kind": self.kind,
            "subject": self.subject,
            "detail": self.detail,
            "fix": self.fix.to_dict() if self.fix else None,
            **self.facts,
        }


@dataclass(frozen=True)
class AuditPlan(base.Plan):
    findings: tuple[Finding, ...] = ()
    consumers: int = 0
    ports: int = 0
    providers: int = 0

    @property
    def ok(self) -> bool:
        """Whether the audit found nothing."""
        return not self.findings

    def left(self, fixes: Iterable[FixResult]) -> int:
        """How many findings are left after ``fixes`` (what :func:`minbw.ops.audit.apply_fixes` returned)."""
        return len(self.findings) - sum(1 for f in fixes if f.done)

    def to_dict(self) -> dict:
        """The plan's dict plus ``ok``, the findings' dicts and ``checked`` (how many consumers, ports and
        providers)."""
        return {
            **super().to_dict(),
            "ok": self.ok,
            "findings": [f.to_dict() for f in self.findings],
            "checked": {"consumers": self.consumers, "ports": self.ports, "providers": self.providers},
        }


def guaranteed(resources: Mapping[str, int]) -> dict[str, int]:
    """``{class: amount}`` of the guaranteed classes (NET_BW_*, NET_PACKET_RATE_*) in ``resources``, zero amounts
    left out."""
    return {rc: n for rc, n in resources.items() if rc in GUARANTEED_CLASSES and n}


def amounts(resources: Mapping[str, int]) -> str:
    """``resources`` as one ``CLASS=N, ...`` string, classes sorted."""
    return ", ".join(f"{rc}={n}" for rc, n in sorted(resources.items()))


def judge_audit(
    allocations: Mapping[str, Mapping[str, Mapping[str, int]]],
    servers: Iterable[Server],
    migrations: Iterable[Migration],
    ports: Iterable[PortBinding],
    names: Mapping[str, str] | None = None,
    ignore: Iterable[str] = (),
    inventories: Mapping[str, Mapping[str, Mapping]] | None = None,
    hosts: Mapping[str, str] | None = None,
) -> AuditPlan:
    """``allocations``: provider → consumer → resources (of the providers read); ``servers``: the live
    servers; ``migrations``: Nova's migrations, any status; ``ignore``: consumers that are known to be
    someone else's (e.g. non-Nova claims); ``inventories``: provider → class → inventory (as Placement
    returns it) for the capacity check; ``hosts``: provider → its compute host (root provider's name)."""
    names = {} if names is None else names
    inventories = {} if inventories is None else inventories
    hosts = {} if hosts is None else hosts
    servers = {s.id: s for s in servers}
    migrations = tuple(migrations)
    moving = {m.uuid for m in migrations if m.in_progress}
    ports = list(ports)
    held: dict[str, dict[str, dict[str, int]]] = {}  # consumer → provider → guaranteed resources
    for rp, consumers in allocations.items():
        for consumer, resources in consumers.items():
            mine = guaranteed(resources)
            if mine:
                held.setdefault(consumer, {})[rp] = mine

    def label(rp):
        return f"{names[rp]} ({rp})" if rp in names else rp

    findings = list(_leaks(held, set(servers) | moving | set(ignore), label))
    # while a server moves, its ports' bindings may still name the source, which its migration holds
    also = {}
    for m in migrations:
        if m.uuid in moving and m.server:
            also.setdefault(m.server, []).append(m.uuid)
    findings += _stale_bindings(held, servers, ports, label, also)
    for sid in sorted(set(servers) & set(held)):
        findings += _excess(servers[sid], held[sid], [p for p in ports if p.device_id == sid], label)
    ages = _Ages(servers, migrations)
    for rp in sorted(allocations):
        found = _over_capacity(rp, inventories.get(rp) or {}, allocations[rp], hosts.get(rp), ages, label)
        if found:
            findings.append(found)
    ops = tuple(f.fix for f in findings if f.fix)
    return AuditPlan(
        ops,
        before=None,
        after=None,
        findings=tuple(findings),
        consumers=len(held),
        ports=len(ports),
        providers=len(allocations),
    )


def _leaks(held, known, label):
    for consumer in sorted(set(held) - known):
        what = "; ".join(f"{label(rp)}: {amounts(res)}" for rp, res in sorted(held[consumer].items()))
        classes = tuple(sorted({rc for res in held[consumer].values() for rc in res}))
        yield Finding(
            LEAK,
            consumer,
            f"consumer {consumer} is neither a live server nor an in-progress migration but holds {what}",
            FixOp("trim_consumer", subject=consumer, classes=classes),
        )


def _stale_bindings(held, servers, ports, label, migrating):
    out = []
    for port in sorted(ports, key=lambda p: p.id):
        named = port.providers()
        if not named:
            continue
        server_holds = dict(held.get(port.device_id or "", {}))
        for m in migrating.get(port.device_id, ()):
            server_holds.update({rp: res for rp, res in held.get(m, {}).items() if res})
        empty = [rp for rp in named.values() if not server_holds.get(rp)]
        if not port.device_id or port.device_id not in servers:
            detail = (
                f"port {port.id} is bound to no live server ({port.device_id or 'no device'}) but its "
                f"binding:profile.allocation is {port.binding_allocation}"
            )
        elif empty:
            detail = (
                f"port {port.id}: binding:profile.allocation names {', '.join(map(label, empty))}, which "
                f"hold(s) nothing for its server {port.device_id}"
            )
        else:
            continue
        out.append(Finding(STALE_BINDING, port.id, detail, FixOp("clear_binding", subject=port.id)))
    return out


def _excess(server: Server, held: Mapping[str, Mapping[str, int]], ports: list[PortBinding], label) -> list[Finding]:
    """A server's bandwidth beyond what its ports and flavor request, placed on the providers that hold
    it: first those a binding allocation names (where a second copy of a bound group lands), then the
    others, most excess first. Nothing when the totals are within the request."""
    bound: dict[str, list[dict]] = {}  # provider → the groups bound there
    requested = dict(server.flavor)
    loose = [f"its flavor requests {amounts(server.flavor)}"] if server.flavor else []
    for port in sorted(ports, key=lambda p: p.id):
        named = port.providers()
        for g in port.request.groups if port.request else ():
            res = guaranteed(dict(g.resources))
            for rc, n in res.items():
                requested[rc] = requested.get(rc, 0) + n
            if g.id in named:
                bound.setdefault(named[g.id], []).append({"port": port.id, "group": g.id, "resources": res})
            elif res:
                loose.append(f"port {port.id}'s group {g.id} has no binding allocation")
    total: dict[str, int] = {}
    for res in held.values():
        for rc, n in res.items():
            total[rc] = total.get(rc, 0) + n
    extra: dict[str, dict[str, int]] = {}  # provider → class → excess
    for rc in sorted(total):
        left = total[rc] - requested.get(rc, 0)
        spare = {
            rp: res.get(rc, 0) - sum(g["resources"].get(rc, 0) for g in bound.get(rp, ())) for rp, res in held.items()
        }
        for rp in sorted((rp for rp, n in spare.items() if n > 0), key=lambda rp: (rp not in bound, -spare[rp], rp)):
            if left <= 0:
                break
            extra.setdefault(rp, {})[rc] = min(spare[rp], left)
            left -= extra[rp][rc]
    out = []
    who = f"server {server.name} ({server.id})" if server.name else f"server {server.id}"
    for rp, more in sorted(extra.items()):
        here = {rc: sum(g["resources"].get(rc, 0) for g in bound.get(rp, ())) for rc in more}
        keep = {rc: held[rp][rc] - n for rc, n in more.items()}
        holds = amounts({rc: held[rp][rc] for rc in more})
        # a copy of a bound group: every class in excess is one the groups bound there request
        double = rp in bound and all(here.values())
        if double:
            groups = ", ".join(f"port {g['port']} group {g['group']}" for g in bound[rp])
            detail = (
                f"{who} holds {holds} on {label(rp)}, where the binding allocation of {groups} requests "
                f"{amounts(here)}: {amounts(more)} extra"
            )
            if all(held[rp][rc] == 2 * here[rc] for rc in more):
                detail += (
                    " (twice the request: what `nova-manage placement heal_allocations` leaves after healing "
                    "a port whose binding allocation was cleared while its allocation stayed)"
                )
        else:
            where = (
                "which no binding allocation of its ports names"
                if rp not in bound
                else "where the port groups bound there request none of it"
            )
            detail = (
                f"{who} holds {holds} on {label(rp)}, {where}; its ports and flavor request "
                f"{amounts({rc: requested.get(rc, 0) for rc in more})} in all: {amounts(more)} extra"
            )
        if loose:
            detail += f"; which provider holds the extra is a guess while {'; '.join(loose)}"
        detail += (
            f". To do: audit again (a port being attached looks like this until Nova binds it); if it stays, "
            f"remove {amounts(more)} from the server's allocation on {rp} (keep {amounts(keep)}) — "
            f"reported only, never fixed by the audit"
        )
        out.append(
            Finding(
                DOUBLE if double else OVER,
                server.id,
                detail,
                facts={
                    "provider": rp,
                    "holds": dict(held[rp]),
                    "extra": more,
                    "keep": keep,
                    "bound": bound.get(rp, []),
                    "ambiguous": bool(loose),
                },
            )
        )
    return out


def _when(text: str | None) -> datetime | None:
    """Nova's times: servers' with a zone, migrations' without (UTC)."""
    if not text:
        return None
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Holder:
    """One consumer of an over-capacity provider: what it holds of the classes over, since when (None:
    not known), what that time is, and what to do with it."""

    consumer: str
    type: str  # "server", "migration" or "consumer" (anything else)
    name: str
    resources: Mapping[str, int]
    since: datetime | None
    basis: str
    todo: str

    def order(self):
        """Youngest first; those without an age after the dated ones, by uuid."""
        return (self.since is None, -self.since.timestamp() if self.since else 0, self.consumer)

    def describe(self) -> str:
        """One line for a report: type, name, consumer, since when (the basis) and its amounts."""
        name = f"{self.name} " if self.name else ""
        return f"{self.type} {name}{self.consumer} ({self.basis}): {amounts(self.resources)}"

    def to_dict(self) -> dict:
        """A JSON-ready dict of the holder (``since`` in ISO 8601, None when not known)."""
        return {
            "consumer": self.consumer,
            "type": self.type,
            "name": self.name,
            "resources": dict(self.resources),
            "since": self.since.isoformat() if self.since else None,
            "basis": self.basis,
            "todo": self.todo,
        }


class _Ages:
    """Since when a consumer holds its allocation on a host, from Nova's servers and migrations."""

    def __init__(self, servers: Mapping[str, Server], migrations: tuple[Migration, ...]):
        self.servers = servers
        self.migrations = {m.uuid: m for m in migrations}
        self.arrivals: dict[str, list[Migration]] = {}
        for m in migrations:
            if m.server and m.dest_node and m.status.lower() not in NOT_ARRIVED and _when(m.created_at):
                self.arrivals.setdefault(m.server, []).append(m)

    def server_since(self, sid: str, host: str | None) -> tuple[datetime | None, str]:
        """``(since, basis)`` of server ``sid``'s allocation on ``host``: its creation time, or the start of the latest
        arrived migration to ``host`` after it; ``(None, "no creation time")`` without either."""
        s = self.servers[sid]
        best = (_when(s.created_at), f"created {s.created_at}") if _when(s.created_at) else (None, "no creation time")
        for m in self.arrivals.get(sid, ()):
            t = _when(m.created_at)
            if m.dest_node == host and (best[0] is None or t > best[0]):
                best = (t, f"{m.kind} {m.uuid} to {host} started {m.created_at}")
        return best

    def holder(self, consumer: str, host: str | None, resources: Mapping[str, int]) -> Holder:
        """The :class:`Holder` of ``consumer``'s ``resources`` on ``host``: a server, a migration (aged by its server,
        else its own start) or another consumer (no age), with what to do about it."""
        if consumer in self.servers:
            s = self.servers[consumer]
            since, basis = self.server_since(consumer, host)
            return Holder(
                consumer,
                "server",
                s.name,
                resources,
                since,
                basis,
                f"move (migrate) or delete server {s.name + ' ' if s.name else ''}{consumer}",
            )
        m = self.migrations.get(consumer)
        if m is not None:
            todo = f"finish {m.kind} {consumer} of server {m.server} (confirm or revert it)"
            since, basis = self.server_since(m.server, host) if m.server in self.servers else (None, "")
            if since:
                basis = f"the server's allocation from before {m.kind} {consumer}, server {basis}"
            elif _when(m.created_at):
                since, basis = _when(m.created_at), f"{m.kind} started {m.created_at}"
            return Holder(
                consumer, "migration", f"{m.kind} of server {m.server}", resources, since, basis or NO_AGE, todo
            )
        return Holder(
            consumer,
            "consumer",
            "",
            resources,
            None,
            NO_AGE,
            f"move or free consumer {consumer} (`minbw allocation migrate`, or `minbw allocation delete` "
            f"if it is a claim of minbw's)",
        )


def _over_capacity(rp, inventories, consumers, host, ages: _Ages, label) -> Finding | None:
    used: dict[str, int] = {}
    for res in consumers.values():
        for rc, n in res.items():
            used[rc] = used.get(rc, 0) + n
    over = {rc: s for rc, s in stocks_of(rp, inventories, used).items() if s.used > s.capacity}
    if not over:
        return None
    holders = sorted(
        (
            ages.holder(c, host, {rc: n for rc, n in res.items() if rc in over and n})
            for c, res in consumers.items()
            if any(res.get(rc) for rc in over)
        ),
        key=Holder.order,
    )
    need = {rc: s.used - s.capacity for rc, s in over.items()}
    move = []
    for h in holders:  # the youngest first, until every class over fits again
        if all(n <= 0 for n in need.values()):
            break
        if any(need[rc] > 0 for rc in h.resources):
            move.append(h)
            for rc, n in h.resources.items():
                need[rc] -= n
    classes = {
        rc: {
            "used": s.used,
            "capacity": s.capacity,
            "total": s.total,
            "reserved": s.reserved,
            "allocation_ratio": s.allocation_ratio,
            "over": s.used - s.capacity,
        }
        for rc, s in sorted(over.items())
    }
    detail = (
        f"provider {label(rp)} is over capacity: "
        + ", ".join(
            f"{rc} used {c['used']} of {c['capacity']} "
            f"((total {c['total']} - reserved {c['reserved']}) x allocation_ratio "
            f"{c['allocation_ratio']}), {c['over']} over"
            for rc, c in classes.items()
        )
        + ". Consumers, youngest first: "
        + "; ".join(h.describe() for h in holders)
        + ". To get back within capacity: "
        + "; then ".join(h.todo for h in move)
        + " — or give the provider its capacity back if its inventory was lowered by mistake"
    )
    return Finding(
        OVER_CAPACITY,
        rp,
        detail,
        facts={
            "provider": rp,
            "host": host,
            "classes": classes,
            "consumers": [h.to_dict() for h in holders],
            "move": [h.consumer for h in move],
        },
    )


def trimmed(body: Mapping, classes: Iterable[str]) -> dict:
    """A consumer's GET /allocations body without ``classes``, ready to PUT at its generation."""
    drop = set(classes)
    allocs = {}
    for rp, a in (body.get("allocations") or {}).items():
        left = {rc: n for rc, n in a["resources"].items() if rc not in drop}
        if left:
            allocs[rp] = {"resources": left}
    out = {
        "allocations": allocs,
        "consumer_generation": body.get("consumer_generation"),
        "project_id": body.get("project_id"),
        "user_id": body.get("user_id"),
    }
    if body.get("consumer_type"):
        out["consumer_type"] = body["consumer_type"]
    return out
