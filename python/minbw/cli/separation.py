"""``minbw separation``: reserve hosts for servers with QoS ports (a trait or an aggregate on their root
providers) and set the flavors' extra specs that keep other servers off them in Nova."""
from __future__ import annotations


def _names(values) -> list[str]:
    return [n for v in values or () for n in v.split(",") if n]


def add_request_arguments(sp) -> None:
    """The request side of ``candidates`` and ``claim``."""
    sp.add_argument("--separation", choices=("off", "avoid", "strict"), default="off",
                    help="avoid: a server without QoS ports keeps off the reserved hosts; strict: also one with "
                         "QoS ports must land on them (default off)")
    sp.add_argument("--separation-trait", metavar="CUSTOM_TRAIT", help="default CUSTOM_MINBW_QOS_HOST")
    sp.add_argument("--separation-aggregate", metavar="UUID", help="reserved hosts are this aggregate's instead")


def separation_from_args(args):
    from minbw.plan.separation import separation_of
    return separation_of(args.separation, args.separation_trait, args.separation_aggregate, option="--separation")


def register(sub) -> None:
    from minbw.cli.cloud import add_cloud_arguments
    sp = sub.add_parser("separation", help="reserve hosts for servers with QoS ports and set the flavors' extra "
                                           "specs that keep other servers off them")
    sp.add_argument("--hosts", action="append", metavar="NAME[,NAME]",
                    help="hypervisor names (root providers) to reserve; repeat or comma-separate")
    sp.add_argument("--trait", metavar="CUSTOM_TRAIT", help="default CUSTOM_MINBW_QOS_HOST")
    sp.add_argument("--aggregate", metavar="UUID", help="mark the hosts by this Placement aggregate instead of a trait")
    sp.add_argument("--mode", choices=("avoid", "strict"), default="avoid",
                    help="strict: QoS flavors also require the trait (default avoid)")
    sp.add_argument("--exclusive", action="store_true", help="unreserve every other reserved host")
    sp.add_argument("--flavor-qos", action="append", metavar="NAME[,NAME]", help="flavors of servers with QoS ports")
    sp.add_argument("--flavor-plain", action="append", metavar="NAME[,NAME]",
                    help="flavors of servers without QoS ports (get trait:TRAIT=forbidden)")
    sp.add_argument("--absent", action="store_true",
                    help="undo: unreserve every reserved host and unset the named flavors' trait spec")
    sp.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
    from minbw.cli.output import add_output_arguments
    add_output_arguments(sp, ("step",))
    add_cloud_arguments(sp)
    sp.set_defaults(func=cmd_separation)


def cmd_separation(args) -> int:
    from minbw.cli.cloud import connect
    from minbw.cli.output import Output, emit
    from minbw.ops.separation import separation
    from minbw.plan.separation import separation_of

    sep = separation_of(args.mode, args.trait, args.aggregate, option="--mode/--trait/--aggregate")
    plan = separation(connect(args), sep, _names(args.hosts), exclusive=args.exclusive,
                      flavors_qos=_names(args.flavor_qos), flavors_plain=_names(args.flavor_plain),
                      absent=args.absent, check=args.dry_run)
    said = (f"{plan.writes()} writes" + (" planned (nothing written)" if args.dry_run else "") if plan.ops
            else "Hosts and flavors already separated as asked: 0 writes.")
    emit(args, Output({**plan.to_dict(), "diff": plan.diff(), "dry_run": args.dry_run}, ("step",),
                      tuple((str(op),) for op in plan.ops), head=(said,)))
    return 0
