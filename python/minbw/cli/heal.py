"""``minbw heal``: give servers' QoS ports their missing allocations and binding allocations."""
from __future__ import annotations

EXIT_UNHEALED = 3  # some server could not be healed (or, with --dry-run, needs healing); 1 is an error
COLUMNS = ("server", "port", "group", "status", "provider", "why")


def register(sub) -> None:
    from minbw.cli.cloud import add_cloud_arguments, add_service_cloud_argument
    from minbw.cli.output import add_output_arguments
    sp = sub.add_parser("heal", help="add missing port allocations and binding:profile.allocation to servers "
                                     "(what nova-manage placement heal_allocations does, deterministic)")
    sp.add_argument("--server", action="append", default=[], metavar="NAME|ID", help="only these; repeat")
    sp.add_argument("--dry-run", action="store_true", help="show each server's plan, write nothing")
    add_output_arguments(sp, COLUMNS)
    add_service_cloud_argument(sp)
    add_cloud_arguments(sp)
    sp.set_defaults(func=cmd_heal)


def cmd_heal(args) -> int:
    from minbw.cli.cloud import connect, service_connect
    from minbw.cli.output import Output, emit
    from minbw.cli.progress import progress_of
    from minbw.ops.heal import heal

    with progress_of(args) as progress:
        results = heal(connect(args), names=args.server, check=args.dry_run,
                       binding_conn=None if args.dry_run else service_connect(args), progress=progress)
    rows = []
    for r in results:
        for g in (r.get("plan") or {}).get("groups", []) or [{}]:
            rows.append((r["name"], g.get("port", "-"), g.get("group", "-"), g.get("status", "-"),
                         g.get("provider") or "-", g.get("chosen_by") or g.get("why") or r.get("error") or ""))
    emit(args, Output(results, COLUMNS, tuple(rows)))
    pending = [r for r in results if r.get("error") or (args.dry_run and (r.get("plan") or {}).get("ops"))]
    return EXIT_UNHEALED if pending else 0
