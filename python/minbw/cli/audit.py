"""``minbw audit``: leaked bandwidth allocations, stale binding allocations, double or over-allocated servers,
providers over capacity."""
from __future__ import annotations

EXIT_FINDINGS = 3  # the audit found something (and --fix did not fix all of it); 1 is an error
COLUMNS = ("kind", "subject", "detail")


def register(sub) -> None:
    from minbw.cli.cloud import add_cloud_arguments, add_service_cloud_argument
    from minbw.cli.output import add_output_arguments
    sp = sub.add_parser("audit", help="find leaked bandwidth allocations, stale binding allocations, servers holding "
                                      "more than their ports request (double allocations) and providers over "
                                      "capacity (exit 3 when something is found)")
    sp.add_argument("--fix", action="store_true",
                    help="remove leaked bandwidth from their consumers and clear stale binding allocations")
    sp.add_argument("--ignore-consumer", action="append", default=[], metavar="UUID",
                    help="a consumer that is not Nova's (e.g. a claim made with `minbw claim`); repeat")
    add_output_arguments(sp, COLUMNS)
    add_service_cloud_argument(sp)
    add_cloud_arguments(sp)
    sp.set_defaults(func=cmd_audit)


def cmd_audit(args) -> int:
    from minbw.cli.cloud import connect, service_connect
    from minbw.cli.output import Output, emit
    from minbw.cli.progress import progress_of
    from minbw.ops.audit import apply_fixes, run_audit
    from minbw.placement.client import Placement

    conn = connect(args)
    api = Placement(conn)
    with progress_of(args) as progress:
        plan = run_audit(conn, api, ignore=args.ignore_consumer, progress=progress)
    fixes = apply_fixes(conn, api, plan, binding_conn=service_connect(args)) if args.fix else []
    emit(args, Output(
        {**plan.to_dict(), "fixes": fixes}, COLUMNS, tuple((f.kind, f.subject, f.detail) for f in plan.findings),
        head=(f"ok: {plan.consumers} consumers with bandwidth, {plan.ports} ports with requests, "
              f"{plan.providers} providers checked",)
        if plan.ok else (), show_table=not plan.ok,
        tail=tuple(f"fix {fix['action']} {fix['subject']}: " + ("done" if fix["done"] else f"FAILED: {fix['error']}")
                   for fix in fixes)))
    return EXIT_FINDINGS if plan.left(fixes) else 0
