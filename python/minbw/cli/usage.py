"""``usage show``: usage and allocations of the providers with inventory."""

from __future__ import annotations

from minbw.cli.base import Command, Section, View
from minbw.cli.options import uuid_arg

COLUMNS = ("uuid", "name", "generation", "resource_class", "used", "total")


class ShowUsage(Command):
    """Usage and allocations of the providers with inventory."""

    columns = COLUMNS

    def add_arguments(self, parser):
        parser.add_argument("--hypervisor", help="only this compute node's tree")
        parser.add_argument("--provider", metavar="UUID", type=uuid_arg, help="only this provider")

    def view(self, parsed_args):
        from minbw.usecases.usage import UsageRequest, usage

        result = usage(self.cloud(parsed_args), UsageRequest(parsed_args.hypervisor, parsed_args.provider))
        rows, sections = [], []
        for u in result.providers:
            p = u.provider
            rows += [
                (p.uuid, p.name, p.generation, rc, u.usages.get(rc, 0), inv["total"])
                for rc, inv in sorted(u.inventories.items())
            ]
            sections.append(
                Section(
                    f"{p.name} ({p.uuid}): allocations",
                    ("consumer", "resources"),
                    tuple((c, dict(sorted(a["resources"].items()))) for c, a in sorted(u.allocations.items())),
                )
            )
        return View(result.to_dict(), COLUMNS, tuple(rows), sections=tuple(sections))
