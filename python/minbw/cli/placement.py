"""``placement serve|stop|show``: the embedded real Placement."""

from __future__ import annotations

import argparse

from minbw.cli.base import Command, fields
from minbw.cli.options import seconds, tcp_port
from minbw.errors import InvalidInput

COLUMNS = (
    "changed",
    "running",
    "pid",
    "url",
    "port",
    "cloud",
    "clouds_yaml",
    "state_dir",
    "pid_file",
    "log_file",
    "ours",
    "port_in_use",
)


class _Placement(Command):
    columns = COLUMNS

    def add_arguments(self, parser):
        parser.add_argument("--state-dir", required=True, help="SQLite database, placement.conf, clouds.yaml, log")
        parser.add_argument("--pid-file", metavar="FILE", help="default STATE_DIR/placement.pid")

    def request(self, parsed_args):
        from minbw.usecases.placement import PlacementRequest

        return PlacementRequest(
            parsed_args.state_dir,
            port=getattr(parsed_args, "port", None),
            host=getattr(parsed_args, "host", "127.0.0.1"),
            pid_file=parsed_args.pid_file,
            log_file=getattr(parsed_args, "log_file", None),
            timeout=getattr(parsed_args, "timeout", None),
        )


class ServePlacement(_Placement):
    """Run openstack-placement on 127.0.0.1 (SQLite, noauth2) in the foreground, or in the background with
    --daemon (which returns once it answers, and does nothing when this state dir's Placement already runs)."""

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--port", type=tcp_port, default=8780)
        parser.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
        parser.add_argument(
            "--daemon",
            action="store_true",
            help="start it detached and return once it answers; does nothing when this state "
            "dir's Placement already runs (idempotent)",
        )
        parser.add_argument("--log-file", metavar="FILE", help="with --daemon: default STATE_DIR/placement.log")
        parser.add_argument(
            "--timeout",
            type=seconds,
            metavar="SECONDS",
            help="with --daemon: how long to wait until it is ready (default 120)",
        )

    def run(self, parsed_args):
        if not parsed_args.daemon:
            given = [
                opt
                for opt, value in (
                    ("--pid-file", parsed_args.pid_file),
                    ("--log-file", parsed_args.log_file),
                    ("--timeout", parsed_args.timeout),
                    ("-f/--json/-c", parsed_args.formatter != "table" or parsed_args.columns),
                )
                if value
            ]
            if given:
                parsed_args.formatter = "table"
                return self.fail(
                    parsed_args,
                    InvalidInput(f"{', '.join(given)}: only with --daemon (without it, serve runs in the foreground)"),
                )
            from minbw.usecases.placement import serve

            try:
                return serve(self.request(parsed_args))
            except Exception as e:  # noqa: BLE001 - said in one line (the daemon's log shows it)
                return self.fail(parsed_args, e)
        return super().run(parsed_args)

    def view(self, parsed_args):
        from minbw.usecases.placement import start

        result = start(self.request(parsed_args))
        said = (
            f"minbw: placement started on {result.url} (pid {result.pid}, log {result.log_file}, "
            f"cloud {result.cloud!r} in {result.clouds_yaml})"
            if result.changed
            else f"minbw: placement already running on {result.url} (pid {result.pid})"
        )
        return fields(result.to_dict(), COLUMNS, said)


class StopPlacement(_Placement):
    """Stop the Placement that serve --daemon started (idempotent)."""

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--timeout",
            type=seconds,
            default=30.0,
            metavar="SECONDS",
            help="SIGKILL when it has not exited this long after SIGTERM (default 30)",
        )

    def view(self, parsed_args):
        from minbw.usecases.placement import stop

        result = stop(self.request(parsed_args))
        return fields(
            result.to_dict(),
            COLUMNS,
            f"minbw: placement stopped (pid {result.pid})"
            if result.changed
            else f"minbw: placement of {result.state_dir} is not running",
        )


class ShowPlacement(_Placement):
    """Is the Placement of a state dir running? (read-only)"""

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--port", type=tcp_port, help="default: the port of its running process, else 8780")
        parser.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)

    def view(self, parsed_args):
        from minbw.usecases.placement import status

        result = status(self.request(parsed_args))
        if result.running:
            said = f"minbw: placement running on {result.url} (pid {result.pid}, state {result.state_dir})"
        else:
            why = (
                f"its process (pid {result.pid}) does not answer on {result.url}"
                if result.ours
                else f"{result.url} is held by another process"
                if result.port_in_use
                else ""
            )
            said = f"minbw: placement of {result.state_dir} is not running" + (f": {why}" if why else "")
        return fields(result.to_dict(), COLUMNS, said)
