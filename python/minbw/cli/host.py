"""``host drain HOST --dry-run``: where every server on a host would go if it were drained now (docs/maintenance.md,
"Plan a window"); ``host drain HOST [--cold] [--parallel N] [--partial] [--reason TEXT]``: the drain itself, and
``--undo`` (docs/maintenance.md, "Drain", "Resume", "Undo")."""

from __future__ import annotations

from minbw.cli.base import EXIT_ERROR, EXIT_NO_VALID_HOST, Command, Section, View
from minbw.cli.options import OWNER_NOVA_CHOICES, add_scheduler_arguments

COLUMNS = ("server", "status", "kind", "destination", "providers")
STUCK_COLUMNS = ("server", "reason")
STEP_COLUMNS = ("server", "kind", "destination", "outcome", "detail")
PENDING_COLUMNS = ("server", "kind", "destination")


def _short(host: str, name: str) -> str:
    """Neutron names providers HOST:AGENT:DEVICE: the table keeps what follows the host."""
    return name.removeprefix(host + ":") if name.startswith(host + ":") else name


def providers_cell(move: dict, names: dict, label=lambda server, group: group or "flavor") -> str:
    """Each request group's providers, ``GROUP=PROVIDER`` by name (``label(server_id, group)`` names the group: the
    flavor's, a port's)."""
    parts = []
    for group, rps in move["mappings"].items():
        shown = "+".join(_short(move["host"], names.get(rp, rp)) for rp in rps)
        parts.append(f"{label(move['server_id'], group)}={shown}")
    return ", ".join(parts)


def move_rows(plan: dict, result) -> tuple[tuple, ...]:
    """One row per planned move: server, status, kind, destination host, providers per group (``result``: the use
    case's HostDrain, for the servers' status, the providers' and the groups' names)."""
    return tuple(
        (
            m["server_name"],
            getattr(result.servers.get(m["server_id"]), "status", ""),
            m["kind"],
            m["host"],
            providers_cell(m, dict(result.names), result.group_label),
        )
        for m in plan["moves"]
    )


def stuck_rows(plan: dict) -> tuple[tuple, ...]:
    """One row per server that cannot move: server, reason."""
    return tuple((s["server_name"], s["reason"]) for s in plan["stuck"])


def summary(plan: dict) -> str:
    """The plan in one line."""
    moves, stuck = len(plan["moves"]), len(plan["stuck"])
    if not moves and not stuck:
        return f"host {plan['source']}: no server to move; the drain plan is complete (dry run: nothing was changed)"
    state = "complete" if not stuck else f"INCOMPLETE: {stuck} server(s) cannot move"
    return (
        f"host {plan['source']}: {moves} server(s) planned ({plan['method']}), the drain plan is {state} "
        f"(dry run: nothing was changed)"
    )


def step_rows(run: dict) -> tuple[tuple, ...]:
    """One row per step a drain made: server, kind, destination, outcome, the detail (what failed: the error or the
    problems; else the step's note)."""
    return tuple(
        (s["server_name"], s["kind"], s["host"], s["outcome"], s["error"] or "; ".join(s["problems"]) or s["note"])
        for s in run["steps"]
    )


def pending_rows(run: dict) -> tuple[tuple, ...]:
    """One row per planned move not made: server, kind, destination."""
    return tuple((m["server_name"], m["kind"], m["host"]) for m in run["pending"])


def run_exit_code(run: dict) -> int:
    """0: drained (or enabled); 4: refused, the plan is incomplete (nothing moved); 1: stopped at a failure."""
    if run["state"] == "refused":
        return EXIT_NO_VALID_HOST
    return 0 if run["ok"] else EXIT_ERROR


class DrainHost(Command):
    """Plan the drain of a compute host: every server on it placed at once on the other hosts (its flavor, every
    port's request groups, Nova's request filters and server group), no destination overcommitted by the moves
    together; the servers that cannot move, with the reason (--dry-run: nothing is changed). Without --dry-run, drain
    it: disable its nova-compute with a reason, then move each server to its planned host (live; cold when it is not
    ACTIVE, or with --cold), at most --parallel at once, each verified (its allocation on the planned providers, its
    ports' binding:profile.allocation rewritten, the source freed); the first failure stops the moves after it. An
    incomplete plan moves nothing unless --partial. Run it again to resume; --undo enables the host again.
    Exit 0: every server has a destination (drained); 4: the plan is incomplete (some server cannot move; nothing
    moved); 1: an error, or a move failed (the drain stopped: the output says where things stand)."""

    columns = COLUMNS

    def add_arguments(self, parser):
        parser.add_argument("host", metavar="HOST", help="the compute host to drain (its nova-compute host name)")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="plan only, change nothing",
        )
        parser.add_argument(
            "--cold", action="store_true", help="cold-migrate every server (default: live for ACTIVE servers)"
        )
        parser.add_argument(
            "--parallel", type=int, default=1, metavar="N", help="at most N moves in flight at once (default 1)"
        )
        parser.add_argument(
            "--partial",
            action="store_true",
            help="when some server cannot move, drain the others anyway (default: an incomplete plan moves nothing)",
        )
        parser.add_argument(
            "--reason",
            default=None,
            metavar="TEXT",
            help="why the compute is disabled (Nova's disabled_reason; default 'minbw host drain: maintenance')",
        )
        parser.add_argument(
            "--timeout", type=float, default=300, metavar="SECONDS", help="how long one move may take (default 300)"
        )
        parser.add_argument("--undo", action="store_true", help="enable the host's nova-compute again (reason cleared)")
        add_scheduler_arguments(parser, "scheduler.limit_tenants_to_placement_aggregate=true")

    def view(self, parsed_args):
        from minbw.errors import InvalidInput
        from minbw.usecases.drain import HostDrainQuery, plan_host_drain

        if parsed_args.undo and parsed_args.dry_run:
            raise InvalidInput(
                f"host drain {parsed_args.host}: --undo enables the host and --dry-run plans its drain: give one. "
                f"Nothing was changed."
            )
        if not parsed_args.dry_run:
            return self.drain(parsed_args)
        result = plan_host_drain(
            self.cloud(parsed_args, progress=True),
            HostDrainQuery(
                parsed_args.host,
                nova_options=tuple(parsed_args.nova_option or ()),
                nova_conf=parsed_args.nova_conf,
                owner_nova=OWNER_NOVA_CHOICES[parsed_args.owner_nova],
                host_option="HOST",
            ),
        )
        plan = result.to_dict()
        stuck = stuck_rows(plan)
        return View(
            plan,
            COLUMNS,
            move_rows(plan, result),
            head=(summary(plan),),
            sections=(Section("stuck (cannot move):", STUCK_COLUMNS, stuck),) if stuck else (),
            exit_code=0 if result.complete else EXIT_NO_VALID_HOST,
        )

    def drain(self, parsed_args):
        """The drain (or its undo) made: the steps' table, the pending moves or the stuck servers."""
        from minbw.usecases.drain import REASON, HostDrainRequest, drain_host

        run = drain_host(
            self.cloud(parsed_args, progress=True),
            HostDrainRequest(
                parsed_args.host,
                nova_options=tuple(parsed_args.nova_option or ()),
                nova_conf=parsed_args.nova_conf,
                owner_nova=OWNER_NOVA_CHOICES[parsed_args.owner_nova],
                cold=parsed_args.cold,
                parallel=parsed_args.parallel,
                partial=parsed_args.partial,
                reason=parsed_args.reason if parsed_args.reason is not None else REASON,
                timeout=parsed_args.timeout,
                undo=parsed_args.undo,
                host_option="HOST",
            ),
        )
        doc = run.to_dict()
        sections = []
        if doc["pending"] and doc["state"] != "drained":
            sections.append(Section("not moved:", PENDING_COLUMNS, pending_rows(doc)))
        stuck = stuck_rows(doc["plan"]) if doc["plan"] else ()
        if stuck:
            sections.append(Section("stuck (cannot move):", STUCK_COLUMNS, stuck))
        return View(
            doc,
            STEP_COLUMNS,
            step_rows(doc),
            head=(doc["message"],),
            sections=tuple(sections),
            exit_code=run_exit_code(doc),
        )
