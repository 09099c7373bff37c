"""``separation set|unset``: reserve hosts for servers with QoS ports
and set the flavors' extra specs that keep other servers off them."""

from __future__ import annotations

from minbw.cli.base import Command, View
from minbw.cli.options import names


class _Separation(Command):
    columns = ("step",)
    absent = False  # separation unset: True

    def add_arguments(self, parser):
        if not self.absent:
            parser.add_argument(
                "--hosts",
                action="append",
                metavar="NAME[,NAME]",
                help="hypervisor names (root providers) to reserve; repeat or comma-separate",
            )
            parser.add_argument(
                "--mode",
                choices=("avoid", "strict"),
                default="avoid",
                help="strict: QoS flavors also require the trait (default avoid)",
            )
            parser.add_argument("--exclusive", action="store_true", help="unreserve every other reserved host")
            parser.add_argument(
                "--flavor-qos", action="append", metavar="NAME[,NAME]", help="flavors of servers with QoS ports"
            )
        parser.add_argument("--trait", metavar="CUSTOM_TRAIT", help="default CUSTOM_MINBW_QOS_HOST")
        parser.add_argument(
            "--aggregate", metavar="UUID", help="mark the hosts by this Placement aggregate instead of a trait"
        )
        parser.add_argument(
            "--flavor-plain",
            action="append",
            metavar="NAME[,NAME]",
            help="flavors of servers without QoS ports (get trait:TRAIT=forbidden)",
        )
        parser.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")

    def view(self, parsed_args):
        from minbw.usecases.separation import SeparationRequest, separation, separation_of

        sep = separation_of(
            getattr(parsed_args, "mode", "avoid"),
            parsed_args.trait,
            parsed_args.aggregate,
            option="--mode/--trait/--aggregate",
        )
        plan = separation(
            self.cloud(parsed_args),
            SeparationRequest(
                sep,
                tuple(names(getattr(parsed_args, "hosts", ()))),
                exclusive=getattr(parsed_args, "exclusive", False),
                flavors_qos=tuple(names(getattr(parsed_args, "flavor_qos", ()))),
                flavors_plain=tuple(names(parsed_args.flavor_plain)),
                absent=self.absent,
                check=parsed_args.dry_run,
            ),
        )
        said = (
            f"{plan.writes()} writes" + (" planned (nothing written)" if parsed_args.dry_run else "")
            if plan.ops
            else "Hosts and flavors already separated as asked: 0 writes."
        )
        return View(
            {**plan.to_dict(), "diff": plan.diff(), "dry_run": parsed_args.dry_run},
            self.columns,
            tuple((str(op),) for op in plan.ops),
            head=(said,),
        )


class SetSeparation(_Separation):
    """Reserve hosts for servers with QoS ports (a trait or an aggregate on their root providers) and set the
    flavors' extra specs that keep other servers off them (docs/separation.md)."""


class UnsetSeparation(_Separation):
    """Undo: unreserve every reserved host and unset the named flavors' trait spec."""

    absent = True
