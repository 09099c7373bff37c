"""``minbw host drain HOST --dry-run`` and the ``host_drain_info`` module: where every server on a host would go if
the host were drained now, all planned together so that no destination is overcommitted by the moves (issue 45
item 1). ``minbw host drain HOST`` and the ``host_drain`` module (item 2, :func:`drain_host`): disable the compute
with a reason, then make the plan's moves (live, or cold for a server that is not ACTIVE), each to its planned host,
verified one by one, stopping before the next move at the first failure; a re-run reads everything again and goes
on; ``--undo`` enables the compute again."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from minbw.errors import InvalidInput, MinbwError
from minbw.ops import write_failures
from minbw.ops.drain import (
    ComputeState,
    DrainFacts,
    ServerToMove,
    compute_nodes,
    compute_state,
    disable_compute,
    enable_compute,
    finish_move,
    finished_from,
    read_drain,
    judged_again,
    start_move,
    verify_move,
)
from minbw.ops.nova_query import read_scheduler_options
from minbw.ops.server_move import confirm
from minbw.plan.drain import DrainPlan, DrainServer, Move, Stuck, plan_drain, waves
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


# ---------------------------------------------------------------- the drain itself (issue 45 item 2)

REASON = "minbw host drain: maintenance"  # the disabled_reason when none is given
MOVED, CONFIRMED, FAILED, NO_PLACE = "moved", "confirmed", "failed", "no place"
HALTS = (FAILED, NO_PLACE)  # the outcomes that stop a drain
DRAINED, REFUSED, STOPPED, PLANNED, ENABLED = "drained", "refused", "stopped", "planned", "enabled"


@dataclass(frozen=True)
class HostDrainRequest:
    """A drain of ``host`` to make: the plan's query (``nova_options``, ``nova_conf``, ``owner_nova`` as in
    :class:`HostDrainQuery`), ``cold`` (every move a cold migration), ``parallel`` (moves in flight at once, 1 or
    more), ``partial`` (move the servers that have a destination even when some have none), ``reason`` (the compute's
    disabled_reason), ``timeout`` (seconds per move), ``check`` (plan only, change nothing), ``undo`` (enable the
    compute again instead). ``host_option`` names the host in errors."""

    host: str
    nova_options: tuple[str, ...] = ()
    nova_conf: str | None = None
    owner_nova: bool | None = None
    cold: bool = False
    parallel: int = 1
    partial: bool = False
    reason: str = REASON
    timeout: float = 300
    check: bool = False
    undo: bool = False
    host_option: str = "host"

    def __post_init__(self):
        object.__setattr__(self, "nova_options", tuple(self.nova_options or ()))
        HostDrainQuery(self.host, host_option=self.host_option)  # the host's check
        waves((), self.parallel)  # the bound's check
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise InvalidInput(
                f"reason: give why {self.host} is disabled (Nova shows it as the service's disabled_reason), got "
                f"{self.reason!r}. Fix: --reason 'kernel update' (or leave it out: {REASON!r})."
            )

    @property
    def query(self) -> HostDrainQuery:
        """The plan's query."""
        return HostDrainQuery(self.host, self.nova_options, self.nova_conf, self.owner_nova, self.host_option)


@dataclass(frozen=True)
class DrainStep:
    """One server's step in a drain: ``moved`` (to ``host``, verified; ``note``: when Nova chose other providers on
    that host than planned, which, verified for what Nova chose), ``confirmed`` (a cold migration left VERIFY_RESIZE
    by an earlier run, confirmed now), ``failed`` (``error``: what Nova or the check said; ``problems``: the
    verification's) or ``no place`` (not started: the re-plan made just before it found no room for the server,
    ``error`` says which resource, short by how much, on which providers)."""

    server_id: str
    server_name: str
    kind: str
    host: str
    outcome: str
    error: str | None = None
    problems: tuple[str, ...] = ()
    note: str = ""

    def to_dict(self) -> dict:
        """A JSON-ready dict of its fields."""
        return {
            "server_id": self.server_id,
            "server_name": self.server_name,
            "kind": self.kind,
            "host": self.host,
            "outcome": self.outcome,
            "error": self.error,
            "problems": list(self.problems),
            "note": self.note,
        }


@dataclass(frozen=True)
class DrainRun:
    """What a drain (or its undo) did and where things stand: ``state`` (``drained``: every planned server moved
    and verified; ``refused``: the plan is incomplete and nothing was moved; ``stopped``: a move failed, the next
    ones were not made; ``planned``: check mode, nothing changed; ``enabled``: the undo), ``changed``, the compute
    service as it stands, the plan (the one the run began with; the last re-plan when it stopped), each step made,
    the moves not made (``pending``) and one line saying where things stand (``message``)."""

    host: str
    state: str
    changed: bool
    compute: ComputeState
    plan: DrainPlan | None = None
    steps: tuple[DrainStep, ...] = ()
    pending: tuple[Move, ...] = ()
    message: str = ""

    @property
    def ok(self) -> bool:
        """Whether the run did what was asked (drained, planned complete, or enabled)."""
        return self.state in (DRAINED, ENABLED) or (self.state == PLANNED and bool(self.plan and self.plan.complete))

    def to_dict(self) -> dict:
        """A JSON-ready dict: host, state, ok, changed, message, compute, steps, pending, and the plan (moves, stuck,
        complete, method...) under ``plan``."""
        return {
            "host": self.host,
            "state": self.state,
            "ok": self.ok,
            "changed": self.changed,
            "message": self.message,
            "compute": self.compute.to_dict(),
            "steps": [s.to_dict() for s in self.steps],
            "pending": [m.to_dict() for m in self.pending],
            "plan": self.plan.to_dict() if self.plan is not None else None,
        }


def to_confirm(finished: Sequence[tuple[str, str]]) -> list[str]:
    """The servers an earlier drain left waiting for the confirmation of their cold migration out of the host (from
    (server id, status) of each ``finished`` migration): those VERIFY_RESIZE, each once, in order."""
    return list(dict.fromkeys(sid for sid, status in finished if status == "VERIFY_RESIZE"))


def where_it_stands(
    host: str, steps: Sequence[DrainStep], pending: Sequence[Move], disabled: bool, why: str = ""
) -> str:
    """One line after a drain that stopped: why (``why``, else the step that stopped it: a move that failed, or a
    server the re-plan found no place for), what was moved, what is left (the ``pending`` moves and the servers with
    no place), how to go on."""
    halted = [s for s in steps if s.outcome in HALTS]
    done = [s for s in steps if s.outcome not in HALTS]
    unplaced = sum(s.outcome == NO_PLACE for s in halted)  # not started either: the re-plan had no move for them
    first = halted[0] if halted else None
    if not why and first is not None:
        what = first.error or "; ".join(first.problems)
        why = (
            f"{first.server_name} was not moved: the re-plan before its move found no place for it: {what}"
            if first.outcome == NO_PLACE
            else f"{first.server_name} ({first.kind} to {first.host}) failed: {what}"
        )
    return (
        f"host {host}: drain stopped: {why}. {len(done)} server(s) moved and verified, {len(pending) + unplaced} not "
        f"started; "
        f"{host} is {'disabled' if disabled else 'enabled'}. Fix the cause, then run 'minbw host drain {host}' again "
        f"(it reads Nova and Placement and goes on), or 'minbw host drain {host} --undo' to enable it again."
    )


def newly_stuck(plan: DrainPlan, accepted: frozenset[str]) -> tuple[Stuck, ...]:
    """The servers a re-plan has no place for that the drain had planned to move (``accepted``: the ids the run
    began with stuck and ``--partial`` let stay): where a drain stops before moving them."""
    return tuple(s for s in plan.stuck if s.server_id not in accepted)


def other_providers(
    planned: Mapping[str, Mapping[str, int]], held: Mapping[str, Mapping[str, int]], names: Mapping[str, str]
) -> str:
    """What a step's note says when Nova placed a server on other providers of the planned host than the plan's
    (``planned``, ``held``: provider uuid → class → amount; ``names``: uuid → name): the providers planned and not
    used, and those used instead ("" when they are the same)."""
    plan = {rp: dict(res) for rp, res in planned.items()}
    have = {rp: dict(res) for rp, res in held.items()}
    if plan == have:
        return ""

    def listed(rps) -> str:
        return ", ".join(f"{names.get(rp, rp)} {dict(sorted(src[rp].items()))}" for rp, src in rps)

    missing = [(rp, plan) for rp in sorted(plan) if plan[rp] != have.get(rp)]
    instead = [(rp, have) for rp in sorted(have) if have[rp] != plan.get(rp)]
    return (
        f"Nova chose other providers than planned on the same host: planned {listed(missing) or 'nothing more'}; "
        f"holds {listed(instead) or 'nothing more'} instead (verified for what Nova chose)"
    )


def step_line(host: str, step: DrainStep) -> str:
    """One progress line for a step made (what the command prints as each step ends)."""
    if step.outcome in (MOVED, CONFIRMED):
        return f"drain {host}: {step.server_name} {step.outcome} and verified" + (f"; {step.note}" if step.note else "")
    what = step.error or "; ".join(step.problems)
    if step.outcome == NO_PLACE:
        return f"drain {host}: {step.server_name} not moved: the re-plan found no place for it: {what}"
    return f"drain {host}: {step.server_name} {step.outcome}: {what}"


def _say(cloud: Cloud, line: str) -> None:
    if cloud.say:
        cloud.say(line)


def _verified(cloud: Cloud, move: Move, target: str, timeout: float, since: str | None) -> DrainStep:
    """Wait for the move's end and verify it: a DrainStep ``moved`` or ``failed``. The allocation is checked against
    the plan's providers first; when Nova chose others on the planned host, the step is verified for what Nova chose
    (its groups served, the bindings rewritten, the source freed) and says so in its note."""
    conn = cloud.conn
    try:
        finish_move(conn, move.server_id, move.kind, since, timeout=timeout)
        state = verify_move(conn, cloud.placement, move.server_id, move.allocations)
    except write_failures() as e:
        return DrainStep(move.server_id, move.server_name, move.kind, target, FAILED, error=str(e))
    if state.ok:
        return DrainStep(move.server_id, move.server_name, move.kind, target, MOVED)
    chosen = judged_again(state)  # the same facts, the allocation any that serves the server's request
    where = str(chosen.facts.server.get("compute_host") or "")
    if not chosen.ok or where != target:
        return DrainStep(move.server_id, move.server_name, move.kind, target, FAILED, problems=state.verdict.problems)
    held = chosen.facts.allocations.get(move.server_id) or {}
    names = {rp: p.name for rp, p in chosen.facts.providers.items()}
    note = other_providers(move.allocations, held, names)
    return DrainStep(move.server_id, move.server_name, move.kind, target, MOVED, note=note)


def _resume(cloud: Cloud, host: str, timeout: float) -> list[DrainStep]:
    """Confirm the cold migrations out of ``host`` an earlier run left in VERIFY_RESIZE, each verified."""
    steps = []
    for sid in to_confirm(finished_from(cloud.conn, host)):
        _say(cloud, f"drain {host}: confirming the cold migration of {sid} left by an earlier run")
        try:
            seen = confirm(cloud.conn, sid, timeout=timeout)
            state = verify_move(cloud.conn, cloud.placement, sid, None)
        except MinbwError as e:
            steps.append(DrainStep(sid, sid, "cold", "", FAILED, error=str(e)))
            break
        name, where = str(seen.server.get("name") or sid), str(seen.server.get("compute_host") or "")
        steps.append(
            DrainStep(sid, name, "cold", where, CONFIRMED if state.ok else FAILED, problems=state.verdict.problems)
        )
        if not state.ok:
            break
    return steps


def _planned(cloud: Cloud, request: HostDrainRequest) -> DrainPlan:
    """The drain's plan read now (:func:`plan_host_drain`), every move cold with ``request.cold``."""
    plan = plan_host_drain(cloud, request.query).plan
    if request.cold:
        plan = dataclasses.replace(plan, moves=tuple(m for wave in waves(plan.moves, 1, cold=True) for m in wave))
    return plan


def _stopped(
    host: str,
    compute: ComputeState,
    plan: DrainPlan,
    steps: Sequence[DrainStep],
    pending: Sequence[Move],
    why: str = "",
) -> DrainRun:
    return DrainRun(
        host,
        STOPPED,
        True,
        compute,
        plan,
        tuple(steps),
        tuple(pending),
        where_it_stands(host, steps, pending, compute.disabled, why),
    )


def drain_host(cloud: Cloud, request: HostDrainRequest, on_step: Callable[[DrainStep], None] | None = None) -> DrainRun:
    """Drain ``request.host``: confirm what an earlier run left in VERIFY_RESIZE, plan every server on the host
    (:func:`plan_host_drain`), refuse an incomplete plan unless ``partial`` (nothing changed), disable the compute
    with the reason (unless it is disabled already: its reason is kept), then make the moves ``parallel`` at a
    time, each to its planned host (never forced) and verified (:func:`minbw.ops.drain.verify_move`). Before each
    wave after the first, the drain is planned again from fresh reads of Nova and Placement, so that no move targets
    room taken since (another boot): a server the re-plan has no place for (and the first plan had) is not moved, its
    step ``no place`` says why, and the drain stops there. At the first failure (a move Nova refuses or fails, a
    verification that does not hold, Nova or Placement unreachable) the moves after it are not started.
    Each step made is said (:func:`step_line`, the command's progress), then given to ``on_step``. ``check``: the
    plan only.
    ``undo``: enable the compute. Returns the DrainRun. Raises MissingService without Nova, InvalidInput for a host
    that runs no nova-compute, NovaMoveFailed when Nova refuses to disable or enable the compute."""
    cloud.require("compute", "the servers on a host and how Nova moves them are read from Nova")
    host, conn = request.host, cloud.conn
    before = compute_state(conn, host)
    if request.undo:
        if not before.disabled:
            return DrainRun(host, ENABLED, False, before, message=f"host {host}: nova-compute is enabled already")
        after = before if request.check else enable_compute(conn, host)
        return DrainRun(host, ENABLED, True, after, message=f"host {host}: nova-compute enabled (reason cleared)")

    def told(step: DrainStep) -> None:  # each step as it ends: the progress line, then the caller's ``on_step``
        _say(cloud, step_line(host, step))
        if on_step is not None:
            on_step(step)

    steps: list[DrainStep] = [] if request.check else _resume(cloud, host, request.timeout)
    for step in steps:
        told(step)
    if any(s.outcome == FAILED for s in steps):
        return DrainRun(host, STOPPED, True, before, None, tuple(steps), (), where_it_stands(host, steps, (), True))
    plan = _planned(cloud, request)
    if request.check:
        would = bool(plan.moves) or not before.disabled
        return DrainRun(
            host, PLANNED, would, before, plan, (), plan.moves, message=f"host {host}: check mode, nothing changed"
        )
    if plan.stuck and not request.partial:
        return DrainRun(
            host,
            REFUSED,
            bool(steps),
            before,
            plan,
            tuple(steps),
            plan.moves,
            f"host {host}: the drain plan is incomplete ({len(plan.stuck)} server(s) cannot move: "
            f"{', '.join(s.server_name for s in plan.stuck)}); nothing was moved and the compute was left as it is. "
            f"Fix: make room (see 'minbw host drain {host} --dry-run'), or drain the others with --partial.",
        )
    compute = before
    if not before.disabled:
        compute = disable_compute(conn, host, request.reason)
        _say(cloud, f"drain {host}: nova-compute disabled ({request.reason})")
    accepted = frozenset(s.server_id for s in plan.stuck)
    first = plan
    targets = compute_nodes(conn) if plan.moves else {}
    made: set[str] = set()

    def record(step: DrainStep) -> None:
        steps.append(step)
        made.add(step.server_id)
        told(step)

    while True:
        if made:  # planned again from what Nova and Placement hold now
            try:
                plan = _planned(cloud, request)
            except write_failures() as e:
                pending = [m for m in plan.moves if m.server_id not in made]
                return _stopped(host, compute, plan, steps, pending, f"the re-plan before the next move failed: {e}")
        blocked = newly_stuck(plan, accepted)
        if blocked:
            for b in blocked:
                record(DrainStep(b.server_id, b.server_name, "", "", NO_PLACE, error=b.reason))
            return _stopped(host, compute, plan, steps, plan.moves)
        again = [m.server_name for m in plan.moves if m.server_id in made]
        if again:
            return _stopped(
                host, compute, plan, steps, plan.moves, f"{', '.join(again)} still on {host} after its move"
            )
        if not plan.moves:
            break
        wave = waves(plan.moves, request.parallel)[0]
        started: list[tuple[Move, str, str | None]] = []
        halted = False
        for move in wave:
            target = targets.get(move.host, move.host)
            at, total = len(made) + len(started) + 1, len(made) + len(plan.moves)
            _say(cloud, f"drain {host}: {at}/{total} {move.server_name} → {target} ({move.kind})")
            try:
                started.append((move, target, start_move(conn, move.server_id, move.kind, target)))
            except write_failures() as e:
                record(DrainStep(move.server_id, move.server_name, move.kind, target, FAILED, error=str(e)))
                halted = True
                break
        for move, target, since in started:
            step = _verified(cloud, move, target, request.timeout, since)
            record(step)
            halted = halted or step.outcome == FAILED
        if halted:
            return _stopped(host, compute, plan, steps, [m for m in plan.moves if m.server_id not in made])
    changed = bool(steps) or not before.disabled
    left = f"; {len(plan.stuck)} server(s) left on it (--partial)" if plan.stuck else ""
    moved = [s for s in steps if s.outcome in (MOVED, CONFIRMED)]
    return DrainRun(
        host,
        DRAINED,
        changed,
        compute,
        first,
        tuple(steps),
        (),
        f"host {host}: drained, {len(moved)} server(s) moved and verified{left}; nova-compute disabled "
        f"({compute.reason or 'no reason'})",
    )
