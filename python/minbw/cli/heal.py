"""``minbw heal``: give servers' QoS ports their missing allocations and binding allocations."""
from __future__ import annotations

EXIT_UNHEALED = 3  # some server could not be healed (or, with --dry-run, needs healing); 1 is an error


def register(sub) -> None:
    from minbw.cli.cloud import add_cloud_arguments, add_service_cloud_argument
    sp = sub.add_parser("heal", help="add missing port allocations and binding:profile.allocation to servers "
                                     "(what nova-manage placement heal_allocations does, deterministic)")
    sp.add_argument("--server", action="append", default=[], metavar="NAME|ID", help="only these; repeat")
    sp.add_argument("--dry-run", action="store_true", help="show each server's plan, write nothing")
    sp.add_argument("--json", action="store_true")
    add_service_cloud_argument(sp)
    add_cloud_arguments(sp)
    sp.set_defaults(func=cmd_heal)


def cmd_heal(args) -> int:
    from minbw.cli import tables
    from minbw.cli.cloud import connect, service_connect
    from minbw.cli.main import print_json
    from minbw.ops.heal import heal

    results = heal(connect(args), names=args.server, check=args.dry_run,
                   binding_conn=None if args.dry_run else service_connect(args))
    if args.json:
        print_json(results)
    else:
        rows = []
        for r in results:
            for g in (r.get("plan") or {}).get("groups", []) or [{}]:
                rows.append([r["name"], g.get("port", "-"), g.get("group", "-"), g.get("status", "-"),
                             g.get("provider") or "-", g.get("chosen_by") or g.get("why") or r.get("error") or ""])
        print(tables.table(("server", "port", "group", "status", "provider", "why"), rows))
    pending = [r for r in results if r.get("error") or (args.dry_run and (r.get("plan") or {}).get("ops"))]
    return EXIT_UNHEALED if pending else 0
