"""Healing servers' QoS port allocations (see :mod:`minbw.plan.heal`): read, plan, write the allocation
then the bindings, and roll back what was written when a later write fails."""

from __future__ import annotations

from collections.abc import Iterable

from minbw.errors import MinbwError, ObjectNotFound, OvercommitUndone, PartialApply
from minbw.ops import outcome_unknown, verify, write_failures
from minbw.ops.servers import find_server, port_state
from minbw.ops.neutron import write_binding_profile
from minbw.model.providers import Provider
from minbw.placement.client import Placement
from minbw.plan.heal import HealPlan, ServerHeal, plan_heal
from minbw.readers.placement import Reader


class Trees:
    """The compute trees a heal run plans against, read through the reports' reader (:class:`Reader`): the
    providers listed once (one listing of every provider when more than :attr:`WHOLE` hosts are healed, else
    each host's own two listings), then the traits, inventories and usages of every provider of those trees in
    one :meth:`Reader.details` (the provider cache where it holds them at the listed generation, after its
    safety check; read otherwise). A tree a heal wrote to is listed and read again when next needed (only its
    providers that moved are read)."""

    WHOLE = 2

    def __init__(self, reader: Reader):
        self.reader = reader
        self._trees: dict[str, dict[str, dict]] = {}  # hypervisor → its tree, until a heal writes there

    def prefetch(self, hypervisors: Iterable[str]) -> None:
        """List the trees of ``hypervisors`` and read their providers at once."""
        wanted = sorted(set(hypervisors) - set(self._trees))
        if not wanted:
            return
        members: dict[str, list[Provider]] = {}
        if len(wanted) > self.WHOLE:
            listing = self.reader.listing()
            by_name: dict[str, Provider] = {}
            in_tree: dict[str, list[Provider]] = {}
            for p in listing:
                by_name.setdefault(p.name, p)
                in_tree.setdefault(p.root_uuid, []).append(p)
            members = {h: in_tree.get(by_name[h].uuid, []) for h in wanted if h in by_name}
        else:
            for h in wanted:
                members.update(self._list(h))
        details = self.reader.details([p for ps in members.values() for p in ps], usages=True)
        for h, ps in members.items():
            self._trees[h] = {
                p.uuid: {
                    "name": p.name,
                    "traits": sorted(details[p.uuid].traits),
                    "inventories": details[p.uuid].inventories,
                    "usages": details[p.uuid].usages,
                }
                for p in ps
            }

    def _list(self, hypervisor: str) -> dict[str, list[Provider]]:
        roots = self.reader.listing(name=hypervisor)
        return {hypervisor: self.reader.listing(in_tree=roots[0].uuid)} if roots else {}

    def of(self, hypervisor: str) -> dict[str, dict]:
        """rp → {name, traits, inventories, usages} of the compute node's tree."""
        if hypervisor not in self._trees:
            self.prefetch([hypervisor])
        if hypervisor not in self._trees:
            raise ObjectNotFound(f"no resource provider named {hypervisor!r} (the server's hypervisor)")
        return self._trees[hypervisor]

    def moved(self, hypervisor: str) -> None:
        """A heal wrote to the tree of ``hypervisor``: its usages moved, so it is listed and read again when next
        needed."""
        self._trees.pop(hypervisor, None)


def compute_tree(api: Placement, hypervisor: str) -> dict[str, dict]:
    """rp → {name, traits, inventories, usages} of the compute node's tree (read, no cache)."""
    return Trees(Reader(api)).of(hypervisor)


def server_plan(conn, api: Placement, server, trees: Trees | None = None) -> tuple[HealPlan, list, dict]:
    """The heal plan of one server (an openstacksdk Server with its full body), its ports and allocations.
    ``trees``: the run's compute trees (each host's tree is read once)."""
    ports = [port_state(conn, p.id) for p in conn.network.ports(device_id=server.id)]
    current = api.get_allocations(server.id)
    if not server.hypervisor_hostname:
        raise ObjectNotFound(f"server {server.name} ({server.id}) is on no hypervisor (status {server.status})")
    tree = (trees or Trees(Reader(api))).of(server.hypervisor_hostname)
    plan = plan_heal({"id": server.id}, current, ports, tree)
    return plan, ports, current


def apply(conn, api: Placement, server, plan: HealPlan, ports, current, binding_conn=None) -> int:
    """Write the allocation, then each binding (with ``binding_conn``, a service user's connection, when
    given), and return how many writes were made; on a failure undo what was written, then raise PartialApply
    saying what was written and undone. A write that failed without a usable answer (reset, timeout, 5xx) may
    have been applied: it is undone too (putting back what was there is harmless if it was not)."""
    binding_conn = binding_conn or conn
    done = []
    by_id = {p.id: p for p in ports}
    try:
        for op in plan.ops:
            if op.action == "put_allocations":
                owner = {
                    "project_id": current.get("project_id") or server.project_id,
                    "user_id": current.get("user_id") or server.user_id,
                }
                api.put_allocations(
                    server.id, {"allocations": op.allocations, "consumer_generation": plan.generation, **owner}
                )
                _verified(api, server, op.allocations, current.get("allocations"), owner)
            else:
                write_binding_profile(
                    binding_conn, op.port, dict(by_id[op.port].binding_profile, allocation=op.binding)
                )
            done.append(op)
    except write_failures() as e:
        maybe = [plan.ops[len(done)]] if outcome_unknown(e) else []  # the failed write
        undone = _roll_back(binding_conn, api, server, done + maybe, by_id, current)
        raise PartialApply(
            e,
            done,
            len(plan.ops),
            {"rolled_back": undone},
            then=f"undone: {', '.join(undone) or 'nothing was written'}",
        ) from e
    return len(done)


def _verified(api: Placement, server, written, before, owner: dict) -> None:
    """Undo the allocation just written when a provider it raised is over capacity (Placement accepted it
    under concurrency: docs/placement-overcommit.md), then raise OvercommitUndone: nothing is left written."""
    excess = verify.check(api, written, before)
    if excess:
        verify.undo_put(api, server.id, written, before, **owner)
        raise OvercommitUndone(
            f"server {server.name} ({server.id}): Placement accepted the healed allocation but left "
            f"{'; '.join(map(str, excess))} (its server-side retry under concurrent claims, "
            f"docs/placement-overcommit.md); minbw put back the allocation the server had. Run heal again",
            excess=tuple(e.to_dict() for e in excess),
        )


def _roll_back(binding_conn, api, server, done, by_id, current) -> list[str]:
    undone = []
    for op in reversed(done):
        try:
            if op.action == "put_allocations":
                now = api.get_allocations(server.id)
                api.put_allocations(
                    server.id,
                    {
                        **{k: current.get(k) for k in ("project_id", "user_id")},
                        "allocations": current.get("allocations") or {},
                        "consumer_generation": now.get("consumer_generation"),
                    },
                )
            else:
                write_binding_profile(binding_conn, op.port, dict(by_id[op.port].binding_profile))
            undone.append(f"{op.action} {op.consumer or op.port}")
        except write_failures() as e:
            undone.append(f"{op.action} {op.consumer or op.port}: NOT undone ({e})")
    return undone


def servers_to_heal(conn, names: Iterable[str] = ()) -> list:
    """The named servers, or every server of every project: one Nova deletes between the listing and its read is
    gone (nothing to heal), not an error that stops the run for the others."""
    from openstack import exceptions as sdk_exceptions

    if names:
        return [find_server(conn, n) for n in names]
    found = []
    for listed in conn.compute.servers(all_projects=True):
        try:
            found.append(conn.compute.get_server(listed.id))
        except sdk_exceptions.NotFoundException:
            continue
    return found


def heal_servers(
    conn,
    api: Placement | None = None,
    names: Iterable[str] = (),
    *,
    check: bool = False,
    binding_conn=None,
    progress=None,
    reader: Reader | None = None,
) -> list[ServerHeal]:
    """Plan (and unless ``check``, apply) for the named servers, or every server; one ServerHeal each:
    the plan, and ``healed`` / ``error``. A server that cannot be healed is reported, not raised.
    ``binding_conn``: the connection that writes ``binding:profile`` (Neutron's service role), default ``conn``.
    ``progress(step, done, total)`` after each server. ``reader``: the reports' reader the compute trees are
    read with (its provider cache; default: one without cache over ``api``)."""
    api = api or Placement(conn)
    found = servers_to_heal(conn, names)
    results: list[ServerHeal] = []
    trees = Trees(reader or Reader(api))  # each host's tree read once per run (again after a heal wrote there)
    trees.prefetch(s.hypervisor_hostname for s in found if s.hypervisor_hostname)
    for server in found:
        if progress and results:
            progress("servers healed" if not check else "servers planned", len(results), len(found))
        if getattr(server, "task_state", None):
            # Nova is moving the server's allocations (a boot, a move, a resize: allocations handed to the
            # migration's consumer, the target claimed after): what is read now may be a step of it, and a write
            # planned on it would race Nova's next one. Skipped, as nova-manage placement heal_allocations skips an
            # instance undergoing a task state transition (the soak on the mini-cloud, docs/soak.md)
            results.append(
                ServerHeal(
                    server.id,
                    server.name,
                    error=f"Nova has a task under way on it (task_state {server.task_state}): heal it once it ends",
                )
            )
            continue
        try:
            plan, ports, current = server_plan(conn, api, server, trees)
        except MinbwError as e:
            results.append(ServerHeal(server.id, server.name, error=str(e)))
            continue
        if not plan.healable:
            entry = ServerHeal(server.id, server.name, plan, error="; ".join(g.why for g in plan.groups if g.why))
        elif not plan.ops or check:
            entry = ServerHeal(server.id, server.name, plan)
        else:
            trees.moved(server.hypervisor_hostname)  # its usage moves with the write
            try:
                writes = apply(conn, api, server, plan, ports, current, binding_conn)
                entry = ServerHeal(server.id, server.name, plan, healed=True, writes=writes)
            except PartialApply as e:
                entry = ServerHeal(
                    server.id, server.name, plan, error=str(e), rolled_back=tuple(e.result["rolled_back"])
                )
        results.append(entry)
    if progress:
        progress("servers healed" if not check else "servers planned", len(results), len(found))
    trees.reader.save()  # what was read, for the next report (and the next run)
    return results
