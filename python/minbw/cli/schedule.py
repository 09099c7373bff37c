"""``minbw schedule`` (the ports-first workflow) and ``minbw segments`` (routed networks' providers)."""
from __future__ import annotations

SCHEDULE_COLUMNS = ("port", "name", "host", "binding:profile.allocation")
SEGMENT_COLUMNS = ("segment", "physnet", "hosts", "ipv4_total", "ipv4_reserved", "free_ips", "in_placement")
STEP_COLUMNS = ("step",)


def register(sub) -> None:
    from minbw.cli.main import uuid_arg
    from minbw.cli.cloud import add_cloud_arguments, add_service_cloud_argument
    from minbw.cli.output import add_output_arguments
    sp = sub.add_parser("schedule", help="ports first: one candidates query for the ports and resources, bind "
                                         "every port to the host picked (retrying on alternates), then claim")
    sp.add_argument("--port", action="append", default=[], required=True, metavar="NAME|ID",
                    help="a port to bind (unbound, existing); repeat for several")
    sp.add_argument("--resources", metavar="CLASS:N,...", default="",
                    help="the consumer's own resources, e.g. VCPU:1,MEMORY_MB:256,DISK_GB:1")
    sp.add_argument("--consumer", metavar="UUID", type=uuid_arg, help="the consumer of the allocation (default: a new UUID)")
    sp.add_argument("--max-hosts", type=int, default=3, metavar="N",
                    help="hosts to try, in Placement's order (Nova's alternates; default 3)")
    sp.add_argument("--any-traits", action="store_true",
                    help="a port on a network with several physnet segments may get its bandwidth on any of them "
                         "(required=in:A,B, Placement 1.39); Neutron's own request uses only the first segment")
    sp.add_argument("--dry-run", action="store_true", help="show the host and bindings it would make; write nothing")
    add_output_arguments(sp, SCHEDULE_COLUMNS)
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
    sg.add_argument("--recount", action="store_true",
                    help="with --sync or --dry-run: also set IPV4_ADDRESS counts (total, reserved) that differ from "
                         "Neutron's count of the segment's subnets and ports, once they stayed still for "
                         "--quiet-window seconds (Neutron keeps them by deltas; without this they are only reported)")
    sg.add_argument("--quiet-window", type=float, default=5.0, metavar="SECONDS",
                    help="with --recount: how long the counts must stay still (more than Neutron's "
                         "send_events_interval; default 5)")
    add_output_arguments(sg, SEGMENT_COLUMNS + STEP_COLUMNS)
    add_cloud_arguments(sg)
    sg.set_defaults(func=cmd_segments)


def _say(msg: str) -> None:
    import sys
    sys.stderr.write(f"minbw: {msg}\n")


def cmd_schedule(args) -> int:
    from minbw.cli.cloud import connect, service_connect
    from minbw.cli.main import EXIT_NO_VALID_HOST, parse_resources
    from minbw.cli.output import Output, emit, wants_json
    from minbw.errors import NoValidHost
    from minbw.ops.schedule import schedule
    from minbw.placement.client import Placement

    conn = connect(args)
    try:
        result = schedule(conn, Placement(conn), args.port, parse_resources(args.resources),
                          consumer=args.consumer, max_hosts=args.max_hosts, any_traits=args.any_traits,
                          check=args.dry_run, service_conn=None if args.dry_run else service_connect(args),
                          progress=None if wants_json(args) else _say)
    except NoValidHost as e:
        if wants_json(args):
            emit(args, Output({"scheduled": False, **e.to_dict()}))
        _say(str(e))
        return EXIT_NO_VALID_HOST
    head = (f"consumer {result['consumer']}: {'plan: ' if args.dry_run else ''}host {result['host']}",)
    tail = tuple(f"port {seg['port_id']}: segments {', '.join(seg['segments'])} (member_of "
                 f"{','.join(seg['member_of'])})" + "".join(f"; left out: {x['why']}" for x in seg["excluded"])
                 for seg in result["segments"])
    tail += tuple(f"port {p['name'] or p['id']}: {note}" for p in result["ports"] for note in p["notes"])
    tail += tuple(f"attempt on {a['host']}: {a['outcome']}: {a.get('why', '')}" for a in result["attempts"]
                  if a["outcome"] != "claimed")
    rows = tuple((b["port"], b["name"] or "", b["host"], (b["binding_profile"] or {}).get("allocation") or "")
                 for b in result["bindings"])
    emit(args, Output(result, SCHEDULE_COLUMNS, rows, head=head, tail=tail))
    return 0


def cmd_segments(args) -> int:
    from minbw.cli.cloud import connect
    from minbw.cli.main import EXIT_FINDINGS
    from minbw.cli.output import Output, emit
    from minbw.errors import InvalidInput
    from minbw.ops import segments
    from minbw.placement.client import Placement

    if args.recount and not (args.sync or args.dry_run):
        raise InvalidInput("--recount goes with --sync (or --dry-run to see the recount planned)")
    conn = connect(args)
    api = Placement(conn)
    if args.sync or args.dry_run:
        result = segments.sync(conn, api, args.network or None, check=args.dry_run, recount=args.recount,
                               quiet=args.quiet_window)
        writes = result["plan"]["writes"]
        said = (f"{writes} writes" + (" planned (nothing written)" if args.dry_run else "") if writes
                else "Placement already shows every segment: 0 writes.")
        emit(args, Output(result, STEP_COLUMNS, tuple((s,) for s in result["steps"]), head=(said,),
                          tail=tuple(f"warning: {w}" for w in result["warnings"] + result["unresolved"])))
        return EXIT_FINDINGS if result["unresolved"] else 0
    result = segments.report(conn, api, args.network or None)
    rows = []
    for s in result["segments"]:
        inv = (s["provider"]["inventories"] or {}).get("IPV4_ADDRESS") or {}
        seen = s["placement"]
        rows.append((s["name"] or s["id"], s["physical_network"] or s["network_type"], ",".join(s["hosts"]) or "-",
                     inv.get("total", "-"), inv.get("reserved", "-"), "-" if s["free_ips"] is None else s["free_ips"],
                     "missing" if seen is None else ",".join(seen["hosts_in_aggregate"]) or "-"))
    said = "in sync" if result["in_sync"] else f"out of sync: {result['plan']['writes']} writes to make (--sync)" + (
        f", {len(result['differences'])} counts differ from Neutron's (--sync --recount)" if result["differences"] else "")
    emit(args, Output(result, SEGMENT_COLUMNS, tuple(rows), tail=(said, *result["unresolved"])))
    return 0 if result["in_sync"] else EXIT_FINDINGS
