"""``minbw host drain HOST --dry-run`` and the ``host_drain_info`` module: where every server on a host would go if
the host were drained now, all planned together so that no destination is overcommitted by the moves (issue 45
item 1). Nothing is written: the execution (disable the compute, live-migrate each server to its planned host) is
issue 45 item 2."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from minbw.errors import InvalidInput
from minbw.ops.drain import DrainFacts, ServerToMove, read_drain
from minbw.ops.nova_query import read_scheduler_options
from minbw.plan.drain import DrainPlan, DrainServer, Stuck, plan_drain
from minbw.usecases.cloud import Cloud


@dataclass(frozen=True)
class HostDrainQuery:
    """The host to drain (a nova-compute host) and Nova's scheduler options by Nova's names (``nova_options``:
    ``section.option=value``; ``nova_conf``: a nova.conf to read them from; Nova's defaults otherwise);
    ``owner_nova`` whether every nova-compute reports OWNER_NOVA (None: read). ``host_option`` names the host in
    errors."""

    host: str
    nova_options: tuple[str, ...] = ()
    nova_conf: str | None = None
    owner_nova: bool | None = None
    host_option: str = "host"

    def __post_init__(self):
        object.__setattr__(self, "nova_options", tuple(self.nova_options or ()))
        if not isinstance(self.host, str) or not self.host.strip():
            raise InvalidInput(
                f"{self.host_option}: give the compute host to drain (a nova-compute host, as 'openstack compute "
                f"service list --service nova-compute' names it), got {self.host!r}."
            )


@dataclass(frozen=True)
class HostDrain:
    """The plan of a host's drain (``plan``, a :class:`minbw.plan.drain.DrainPlan`), with what it was planned on:
    each server as read (``servers``: id → :class:`minbw.ops.drain.ServerToMove`) and the providers' names (uuid →
    name) for tables. ``to_dict()`` is the plan's."""

    plan: DrainPlan
    servers: Mapping[str, ServerToMove] = field(default_factory=dict)
    names: Mapping[str, str] = field(default_factory=dict)

    def group_label(self, server_id: str, group: str) -> str:
        """How a table names a request group of the server: ``flavor`` for the unsuffixed one, else its port's name
        (with ``#N`` for the N-th group of a port that has several: bandwidth, packet rate), else the group id."""
        if not group:
            return "flavor"
        server = self.servers.get(server_id)
        if server is None or server.request is None:
            return group
        for port in server.request.ports:
            ids = [g.id for g in port.groups]
            if group in ids:
                name = server.port_names.get(port.port_id or "") or f"port {port.port_id}"
                return name if len(ids) == 1 else f"{name}#{ids.index(group) + 1}"
        return group

    @property
    def complete(self) -> bool:
        """Whether every server on the host has a destination."""
        return self.plan.complete

    def to_dict(self) -> dict:
        """The plan's dict (:meth:`minbw.plan.drain.DrainPlan.to_dict`)."""
        return self.plan.to_dict()


def drain_servers(facts: DrainFacts) -> tuple[list[DrainServer], list[Stuck]]:
    """The servers the planner places (each with its request, the roots it may go to, its anti-affinity group), and
    those that cannot be planned at all (stuck with why: a state Nova moves nothing from, a request Nova refuses)."""
    movable, stuck = [], []
    for s in facts.servers:
        if s.request is None:
            stuck.append(Stuck(s.id, s.name, s.unmovable, ()))
            continue
        movable.append(DrainServer(s.id, s.name, s.status, s.request, s.roots, s.anti_affinity, s.port_names))
    return movable, stuck


def explained(stuck: Stuck, server: ServerToMove | None) -> Stuck:
    """``stuck`` with why each host was no destination for it (Nova's request filters, its server group) when none
    was allowed (the planner says only that none was)."""
    if server is None or server.request is None or server.roots or not server.excluded:
        return stuck
    hosts = "; ".join(f"{h}: {why}" for h, why in sorted(server.excluded.items()))
    return dataclasses.replace(stuck, reason=f"{stuck.reason}: {hosts}")


def plan_host_drain(cloud: Cloud, query: HostDrainQuery) -> HostDrain:
    """The drain of ``query.host`` planned now, nothing written: a HostDrain (its ``plan``: each server → its
    destination host and providers, or stuck with the reason; an empty, complete plan for a host without servers).
    Raises MissingService without Nova, InvalidInput for a host that runs no nova-compute (naming those that do) or
    a nova.conf that cannot be read, ConfigError for a scheduler option that cannot be used."""
    cloud.require("compute", "the servers on a host and how Nova moves them are read from Nova")
    options = read_scheduler_options(query.nova_options, query.nova_conf)
    facts = read_drain(cloud.conn, cloud.placement, cloud.reader(), query.host, options, owner_nova=query.owner_nova)
    movable, stuck = drain_servers(facts)
    plan = plan_drain(query.host, movable, facts.trees)
    by_id = {s.id: s for s in facts.servers}
    plan = dataclasses.replace(
        plan, stuck=tuple(explained(s, by_id.get(s.server_id)) for s in plan.stuck) + tuple(stuck)
    )
    names = {u: n for t in facts.trees for u, n in t.names.items()}
    names.update(facts.roots)
    return HostDrain(plan, by_id, names)
