"""``host drain HOST --dry-run``: where every server on a host would go if it were drained now (docs/maintenance.md,
"Plan a window")."""

from __future__ import annotations

from minbw.cli.base import EXIT_NO_VALID_HOST, Command, Section, View
from minbw.cli.options import OWNER_NOVA_CHOICES, add_owner_nova_argument

COLUMNS = ("server", "status", "kind", "destination", "providers")
STUCK_COLUMNS = ("server", "reason")


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


class DrainHost(Command):
    """Plan the drain of a compute host: every server on it placed at once on the other hosts (its flavor, every
    port's request groups, Nova's request filters and server group), no destination overcommitted by the moves
    together; the servers that cannot move, with the reason. Only --dry-run for now (nothing is changed).
    Exit 0: every server has a destination; 4: the plan is incomplete (some server cannot move); 1: an error."""

    columns = COLUMNS

    def add_arguments(self, parser):
        parser.add_argument("host", metavar="HOST", help="the compute host to drain (its nova-compute host name)")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="plan only, change nothing (required for now: the drain itself is the next step)",
        )
        parser.add_argument(
            "--nova-option",
            action="append",
            metavar="SECTION.OPTION=VALUE",
            help="a nova.conf option of Nova's scheduler, by Nova's name, e.g. "
            "scheduler.limit_tenants_to_placement_aggregate=true (repeat; Nova's defaults otherwise)",
        )
        parser.add_argument(
            "--nova-conf", metavar="FILE", help="read Nova's scheduler options from this nova.conf (--nova-option wins)"
        )
        add_owner_nova_argument(parser, default="auto")

    def view(self, parsed_args):
        from minbw.errors import InvalidInput
        from minbw.usecases.drain import HostDrainQuery, plan_host_drain

        if not parsed_args.dry_run:
            raise InvalidInput(
                f"host drain {parsed_args.host}: only the plan exists for now (--dry-run); executing it (disable the "
                f"compute, live-migrate each server to its planned host) is the next step (issue 45 item 2). "
                f"Nothing was changed. Fix: add --dry-run to see the plan."
            )
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
