"""``segment list|sync``: routed networks' segment providers."""

from __future__ import annotations

import sys

from minbw.cli.base import EXIT_FINDINGS, Command, View

SEGMENT_COLUMNS = ("segment", "physnet", "hosts", "ipv4_total", "ipv4_reserved", "free_ips", "in_placement")
STEP_COLUMNS = ("step",)


class _Segments(Command):
    sync = False  # segment sync: True

    def add_arguments(self, parser):
        parser.add_argument(
            "--network",
            action="append",
            default=[],
            metavar="NAME|ID",
            help="only these networks (default: every network with subnets on segments)",
        )
        if self.sync:
            parser.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
            parser.add_argument(
                "--recount",
                action="store_true",
                help="also set IPV4_ADDRESS counts (total, reserved) that differ from Neutron's count "
                "of the segment's subnets and ports, once they stayed still for --quiet-window "
                "seconds (Neutron keeps them by deltas; without this they are only reported)",
            )
            parser.add_argument(
                "--quiet-window",
                type=float,
                default=5.0,
                metavar="SECONDS",
                help="with --recount: how long the counts must stay still (more than Neutron's "
                "send_events_interval; default 5)",
            )

    def view(self, parsed_args):
        from minbw.usecases.segments import SegmentsRequest, segments

        dry_run = getattr(parsed_args, "dry_run", False)
        result = segments(
            self.cloud(parsed_args),
            SegmentsRequest(
                tuple(parsed_args.network),
                sync=self.sync,
                check=dry_run,
                recount=getattr(parsed_args, "recount", False),
                quiet_window=getattr(parsed_args, "quiet_window", 5.0),
                option="--recount",
            ),
        )
        report = result.to_dict()
        if self.sync:
            writes = result.report.writes
            said = (
                f"{writes} writes" + (" planned (nothing written)" if dry_run else "")
                if writes
                else "Placement already shows every segment: 0 writes."
            )
            for line in result.failed:  # its writes stopped, the other segments' made: exit 3, a partial run
                print(f"minbw: skipped: {line}", file=sys.stderr)
            return View(
                report,
                STEP_COLUMNS,
                tuple((s,) for s in result.report.steps),
                head=(said,),
                tail=tuple(f"warning: {w}" for w in [*result.report.warnings, *result.unresolved]),
                exit_code=EXIT_FINDINGS if result.unresolved or result.failed else 0,
            )
        rows = []
        for s in report["segments"]:
            inv = (s["provider"]["inventories"] or {}).get("IPV4_ADDRESS") or {}
            seen = s["placement"]
            rows.append(
                (
                    s["name"] or s["id"],
                    s["physical_network"] or s["network_type"],
                    ",".join(s["hosts"]) or "-",
                    inv.get("total", "-"),
                    inv.get("reserved", "-"),
                    "-" if s["free_ips"] is None else s["free_ips"],
                    "missing" if seen is None else ",".join(seen["hosts_in_aggregate"]) or "-",
                )
            )
        said = (
            "in sync"
            if result.in_sync
            else (f"out of sync: {result.report.writes} writes to make (segment sync)")
            + (
                f", {len(report['differences'])} counts differ from Neutron's (segment sync --recount)"
                if report["differences"]
                else ""
            )
        )
        return View(
            report,
            SEGMENT_COLUMNS,
            tuple(rows),
            tail=(said, *result.unresolved),
            exit_code=0 if result.in_sync else EXIT_FINDINGS,
        )


class ListSegments(_Segments):
    """Each routed network segment's Placement provider (IPV4_ADDRESS, aggregate, hosts) as Neutron's segments
    plugin reports it (exit 3 when Placement differs)."""

    columns = SEGMENT_COLUMNS


class SyncSegments(_Segments):
    """Write the segment providers, inventories and aggregates Placement lacks (exit 3 when a segment's writes
    failed and the others were made)."""

    columns = STEP_COLUMNS
    sync = True
