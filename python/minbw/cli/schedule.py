"""``minbw schedule`` (the ports-first workflow) and ``minbw segments`` (routed networks' providers)."""
from __future__ import annotations


def register(sub) -> None:
    from minbw.cli.cloud import add_cloud_arguments, add_service_cloud_argument
    sp = sub.add_parser("schedule", help="ports first: one candidates query for the ports and resources, bind "
                                         "every port to the host picked (retrying on alternates), then claim")
    sp.add_argument("--port", action="append", default=[], required=True, metavar="NAME|ID",
                    help="a port to bind (unbound, existing); repeat for several")
    sp.add_argument("--resources", metavar="CLASS:N,...", default="",
                    help="the consumer's own resources, e.g. VCPU:1,MEMORY_MB:256,DISK_GB:1")
    sp.add_argument("--consumer", metavar="UUID", help="the consumer of the allocation (default: a new UUID)")
    sp.add_argument("--max-hosts", type=int, default=3, metavar="N",
                    help="hosts to try, in Placement's order (Nova's alternates; default 3)")
    sp.add_argument("--any-traits", action="store_true",
                    help="a port on a network with several physnet segments may get its bandwidth on any of them "
                         "(required=in:A,B, Placement 1.39); Neutron's own request uses only the first segment")
    sp.add_argument("--dry-run", action="store_true", help="show the host and bindings it would make; write nothing")
    sp.add_argument("--json", action="store_true")
    add_service_cloud_argument(sp)
    add_cloud_arguments(sp)
    sp.set_defaults(func=cmd_schedule)

    sg = sub.add_parser("segments", help="routed networks: each segment's Placement provider (IPV4_ADDRESS, "
                                         "aggregate, hosts) as Neutron reports it, and a sync where it does not")
    sg.add_argument("--network", action="append", default=[], metavar="NAME|ID",
                    help="only these networks (default: every network with subnets on segments)")
    mode = sg.add_mutually_exclusive_group()
    mode.add_argument("--sync", action="store_true", help="write what is missing (providers, inventories, aggregates)")
    mode.add_argument("--dry-run", action="store_true", help="with --sync's plan, write nothing")
    sg.add_argument("--json", action="store_true")
    add_cloud_arguments(sg)
    sg.set_defaults(func=cmd_segments)


def cmd_schedule(args) -> int:
    from minbw.cli import tables
    from minbw.cli.cloud import connect, service_connect
    from minbw.cli.main import _progress, parse_resources, print_json
    from minbw.ops.schedule import schedule
    from minbw.placement.client import Placement

    conn = connect(args)
    result = schedule(conn, Placement(conn), args.port, parse_resources(args.resources),
                      consumer=args.consumer, max_hosts=args.max_hosts, any_traits=args.any_traits,
                      check=args.dry_run, service_conn=None if args.dry_run else service_connect(args),
                      progress=None if args.json else _progress)
    if args.json:
        print_json(result)
        return 0
    verb = "would bind" if args.dry_run else "bound"
    print(f"consumer {result['consumer']}: {'plan: ' if args.dry_run else ''}host {result['host']}")
    print(tables.table(("port", "name", verb, "binding:profile.allocation"),
                       [(b["port"], b["name"] or "", b["host"], (b["binding_profile"] or {}).get("allocation") or "")
                        for b in result["bindings"]]))
    for seg in result["segments"]:
        print(f"port {seg['port_id']}: segments {', '.join(seg['segments'])} (member_of {','.join(seg['member_of'])})"
              + "".join(f"; left out: {x['why']}" for x in seg["excluded"]))
    for p in result["ports"]:
        for note in p["notes"]:
            print(f"port {p['name'] or p['id']}: {note}")
    for a in result["attempts"]:
        if a["outcome"] != "claimed":
            print(f"attempt on {a['host']}: {a['outcome']}: {a.get('why', '')}")
    return 0


def cmd_segments(args) -> int:
    from minbw.cli import tables
    from minbw.cli.cloud import connect
    from minbw.cli.main import print_json
    from minbw.ops import segments
    from minbw.placement.client import Placement

    conn = connect(args)
    api = Placement(conn)
    if args.sync or args.dry_run:
        result = segments.sync(conn, api, args.network or None, check=args.dry_run)
        if args.json:
            print_json(result)
        else:
            for step in result["steps"]:
                print(("  plan: " if args.dry_run else "  done: ") + step)
            print(f"{result['plan']['writes']} writes" + (" planned (nothing written)" if args.dry_run else "")
                  if result["plan"]["writes"] else "Placement already shows every segment: 0 writes.")
            for w in result["warnings"]:
                print(f"warning: {w}")
        return 0
    result = segments.report(conn, api, args.network or None)
    if args.json:
        print_json(result)
        return 0
    rows = []
    for s in result["segments"]:
        inv = (s["provider"]["inventories"] or {}).get("IPV4_ADDRESS") or {}
        seen = s["placement"]
        rows.append((s["name"] or s["id"], s["physical_network"] or s["network_type"], ",".join(s["hosts"]) or "-",
                     f"{inv.get('total', '-')}/{inv.get('reserved', '-')}",
                     "-" if s["free_ips"] is None else s["free_ips"],
                     "missing" if seen is None else ",".join(seen["hosts_in_aggregate"]) or "-"))
    print(tables.table(("segment", "physnet", "hosts (Neutron)", "IPv4 total/reserved", "free", "in Placement"), rows))
    print("in sync" if result["in_sync"] else f"out of sync: {result['plan']['writes']} writes to make (--sync)")
    return 0 if result["in_sync"] else 3

