"""``audit``: leaked and stale bandwidth allocations, double allocations, providers over capacity."""

from __future__ import annotations

import sys

from minbw.cli.base import EXIT_ERROR, EXIT_FINDINGS, Command, View
from minbw.cli.options import add_report_cache_argument, report_cloud, add_service_cloud_argument

COLUMNS = ("kind", "subject", "detail")


class Audit(Command):
    """Find leaked bandwidth allocations, stale binding allocations, servers holding more than their ports request
    (double allocations) and providers over capacity (exit 3 when something is found and left; with --fix, 1 when
    every fix failed)."""

    columns = COLUMNS

    def add_arguments(self, parser):
        add_report_cache_argument(parser)
        parser.add_argument(
            "--fix",
            action="store_true",
            help="remove leaked bandwidth from their consumers and clear stale binding allocations",
        )
        parser.add_argument(
            "--ignore-consumer",
            action="append",
            default=[],
            metavar="UUID",
            help="a consumer that is not Nova's (e.g. a claim made with allocation create); repeat",
        )
        add_service_cloud_argument(parser)

    def view(self, parsed_args):
        from minbw.usecases.audit import AuditRequest, audit

        result = audit(
            report_cloud(self.cloud(parsed_args, service=True, progress=True), parsed_args),
            AuditRequest(fix=parsed_args.fix, ignore_consumers=tuple(parsed_args.ignore_consumer)),
        )
        plan = result.plan
        for line in result.failed:  # the other fixes were made: exit 3 (findings left); every fix failed: exit 1
            print(f"minbw: skipped: {line}", file=sys.stderr)
        return View(
            result.to_dict(),
            COLUMNS,
            tuple((f.kind, f.subject, f.detail) for f in plan.findings),
            head=(
                f"ok: {plan.consumers} consumers with bandwidth, {plan.ports} ports with requests, "
                f"{plan.providers} providers checked",
            )
            if plan.ok
            else (),
            show_table=not plan.ok,
            tail=tuple(
                f"fix {fix.op.action} {fix.op.subject}: " + ("done" if fix.done else f"FAILED: {fix.error}")
                for fix in result.fixes
            ),
            exit_code=EXIT_ERROR if result.none_made else EXIT_FINDINGS if result.left else 0,
        )
