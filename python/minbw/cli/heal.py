"""``server heal``: the port allocations and binding:profile.allocation servers lack."""

from __future__ import annotations

import sys

from minbw.cli.base import EXIT_ERROR, EXIT_FINDINGS, Command, View
from minbw.cli.options import add_service_cloud_argument

COLUMNS = ("server", "port", "group", "status", "provider", "why")


class HealServer(Command):
    """Add missing port allocations and binding:profile.allocation to servers (what nova-manage placement
    heal_allocations does, deterministic). Exit 3 when a server is left unhealed (with --dry-run: needs healing), 1
    when every server's writes failed."""

    columns = COLUMNS

    def add_arguments(self, parser):
        parser.add_argument("--server", action="append", default=[], metavar="NAME|ID", help="only these; repeat")
        parser.add_argument("--dry-run", action="store_true", help="show each server's plan, write nothing")
        add_service_cloud_argument(parser)

    def view(self, parsed_args):
        from minbw.usecases.heal import HealRequest, heal

        result = heal(
            self.cloud(parsed_args, service=True, progress=True),
            HealRequest(tuple(parsed_args.server), check=parsed_args.dry_run),
        )
        rows = []
        for r in result.servers:
            groups = r.plan.groups if r.plan is not None else ()
            for g in groups:
                rows.append(
                    (r.name, g.port, g.group, g.status, g.provider or "-", g.chosen_by or g.why or r.error or "")
                )
            if not groups:
                rows.append((r.name, "-", "-", "-", "-", r.error or ""))
        for line in result.failed:  # the other servers were healed: exit 3; every write failed: exit 1
            print(f"minbw: skipped: {line}", file=sys.stderr)
        return View(
            result.to_dict(),
            COLUMNS,
            tuple(rows),
            exit_code=EXIT_ERROR if result.none_made else EXIT_FINDINGS if result.pending else 0,
        )
