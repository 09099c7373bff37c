"""``port schedule`` (the ports-first workflow)."""

from __future__ import annotations

from minbw.cli.base import Command, View
from minbw.cli.options import (
    add_nova_arguments,
    add_service_cloud_argument,
    count,
    nova_spec_fields,
    resource,
    resources,
    uuid_arg,
)

COLUMNS = ("port", "name", "host", "binding:profile.allocation")


class SchedulePort(Command):
    """Ports first: one candidates query for the ports and resources, bind every port to the host picked
    (retrying on alternates), then claim (exit 4 when no host works; nothing is left bound or claimed)."""

    columns = COLUMNS

    def add_arguments(self, parser):
        parser.add_argument(
            "--port",
            action="append",
            default=[],
            required=True,
            metavar="NAME|ID",
            help="a port to bind (unbound, existing); repeat for several",
        )
        parser.add_argument(
            "--resource",
            action="append",
            type=resource,
            metavar="CLASS=AMOUNT",
            help="the consumer's own resources, e.g. VCPU=1 (repeat), or --flavor",
        )
        add_nova_arguments(parser)
        parser.add_argument(
            "--consumer", metavar="UUID", type=uuid_arg, help="the consumer of the allocation (default: a new UUID)"
        )
        parser.add_argument(
            "--max-hosts",
            type=count,
            default=3,
            metavar="N",
            help="hosts to try, in Placement's order (Nova's alternates; default 3)",
        )
        parser.add_argument(
            "--any-traits",
            action="store_true",
            help="a port on a network with several physnet segments may get its bandwidth on any "
            "of them (required=in:A,B, Placement 1.39): minbw schedules, binds and claims the "
            "ports itself, so Nova's scheduler never sees it; Neutron's own request (what Nova "
            "asks for when it boots a server with the port) uses only the first segment",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="show the host and bindings it would make; write nothing"
        )
        add_service_cloud_argument(parser)

    def failure_document(self, error):
        from minbw.errors import NoValidHost

        if isinstance(error, NoValidHost):
            return {"scheduled": False, **error.to_dict()}
        return super().failure_document(error)

    def view(self, parsed_args):
        from minbw.usecases.schedule import ScheduleRequest, schedule

        result = schedule(
            self.cloud(parsed_args, service=not parsed_args.dry_run),
            ScheduleRequest(
                tuple(parsed_args.port),
                resources(parsed_args),
                consumer=parsed_args.consumer,
                max_hosts=parsed_args.max_hosts,
                any_traits=parsed_args.any_traits,
                check=parsed_args.dry_run,
                option="--resource",
                **nova_spec_fields(parsed_args),
            ),
        )
        if not result.changed or result.scheduled is None:
            return View(
                result.to_dict(),
                COLUMNS,
                (),
                head=(f"unchanged: consumer {result.consumer} already holds allocations",),
            )
        done = result.scheduled
        head = (f"consumer {result.consumer}: {'plan: ' if parsed_args.dry_run else ''}host {done.host}",)
        tail = tuple(
            f"port {seg.port_id}: segments {', '.join(seg.candidates)} (member_of "
            f"{','.join(seg.aggregates)})" + "".join(f"; left out: {why}" for _segment, why in seg.excluded)
            for seg in done.segments
        )
        tail += tuple(f"port {p.name or p.id}: {note}" for p in done.ports for note in p.notes)
        tail += tuple(
            f"attempt on {a.host}: {a.outcome}: {a.why or ''}" for a in done.attempts if a.outcome != "claimed"
        )
        rows = tuple((b.port, b.name or "", b.host, b.allocation or "") for b in done.bindings)
        return View(result.to_dict(), COLUMNS, rows, head=head, tail=tail)
