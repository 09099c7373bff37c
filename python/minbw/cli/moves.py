"""``minbw move``: move a consumer's allocations to another host (Nova's migration pattern), then
``minbw move confirm`` (release the source) or ``minbw move revert`` (go back)."""
from __future__ import annotations

import json

from minbw.cli.output import Output, emit
from minbw.errors import InvalidInput

# the one atomic POST /allocations of a move or revert: who holds what afterwards
COLUMNS = ("role", "uuid", "consumer_generation", "resources")


def _placement(args):
    from minbw.cli.cloud import connect
    from minbw.placement.client import Placement
    return Placement(connect(args))


def _resources(providers: dict) -> str:
    return "; ".join(f"{name}: " + ", ".join(f"{rc}={n}" for rc, n in sorted(res.items()))
                     for name, res in providers.items()) or "nothing"


def _bindings(result) -> tuple[str, ...]:
    return tuple(f"  port {port} binding:profile.allocation = {json.dumps(value)}"
                 for port, value in result.binding_profiles.items())


def _post_rows(result) -> tuple[tuple, ...]:
    """The POST body: who holds what afterwards, at which consumer generation (None: a new consumer)."""
    if not result.changed:
        return ()
    op = result.plan.ops[0]
    after = result.plan.after
    return tuple((role, after[role]["uuid"], op.body[after[role]["uuid"]]["consumer_generation"],
                  _resources(after[role]["providers"])) for role in ("migration", "consumer") if after.get(role))


def _output(result, said: str, tail: tuple[str, ...] = ()) -> Output:
    rows = _post_rows(result)
    head = (said,) + (("POST /allocations (one atomic call):",) if rows else ())
    return Output(result.to_dict(), COLUMNS, rows, head=head, tail=_bindings(result) + tail, show_table=bool(rows))


def cmd_move(args) -> int:
    from minbw.cli.main import request_from_args
    from minbw.ops import moves
    for option, value in (("--consumer", args.consumer), ("--target-host", args.target_host)):
        if not value:
            raise InvalidInput(f"{option} is required to move (or use 'minbw move confirm' / 'minbw move revert').")
    api = _placement(args)
    result = moves.move(api, args.consumer, request_from_args(args), args.target_host, args.migration,
                        retries=args.retries, check=args.dry_run)
    before, after = result.plan.before, result.plan.after
    if not result.changed:
        emit(args, _output(result, f"consumer {args.consumer} is already on {after['consumer']['host']} and "
                                   f"migration {result.migration} holds its source on {after['migration']['host']}: "
                                   f"nothing to do"))
        return 0
    move = f"consumer {args.consumer} from {before['consumer']['host']} → {after['consumer']['host']}"
    if result.check:
        said = (f"plan (nothing written): move {move}; migration {result.migration} keeps the source until "
                f"confirm or revert")
    else:
        said = f"moved {move} in one POST /allocations; migration {result.migration} holds the source"
    nxt = () if result.check else (
        f"next: minbw move confirm --migration {result.migration}  (release {before['consumer']['host']})",
        f"  or: minbw move revert --consumer {args.consumer} --migration {result.migration}  (go back)")
    emit(args, _output(result, said, nxt))
    return 0


def cmd_move_confirm(args) -> int:
    from minbw.ops import moves
    result = moves.confirm(_placement(args), args.migration, retries=args.retries, check=args.dry_run)
    if not result.changed:
        said = f"migration {args.migration} holds no allocations: nothing to confirm"
    else:
        held = result.plan.before["migration"]
        verb = "plan (nothing written): release" if result.check else "released"
        said = (f"{verb} the source: migration {args.migration}'s allocations on {held['host']} "
                f"({_resources(held['providers'])})")
    # confirm deletes the migration consumer's allocations: no POST to show
    emit(args, Output(result.to_dict(), COLUMNS, (), head=(said,), show_table=False))
    return 0


def cmd_move_revert(args) -> int:
    from minbw.cli.main import request_from_args
    from minbw.ops import moves
    # the request is optional here: given, the result maps the source again (the ports' old bindings)
    req = request_from_args(args) if (args.resources or args.port_request or args.required) else None
    result = moves.revert(_placement(args), args.consumer, args.migration, req, retries=args.retries,
                          check=args.dry_run)
    if not result.changed:
        emit(args, _output(result, f"migration {args.migration} holds no allocations: nothing to revert"))
        return 0
    before, after = result.plan.before, result.plan.after
    if result.check:
        said = (f"plan (nothing written): revert consumer {args.consumer} to {after['consumer']['host']}, "
                f"releasing {before['consumer']['host']}")
    else:
        said = (f"reverted consumer {args.consumer} to {after['consumer']['host']} in one POST /allocations; "
                f"its allocations on {before['consumer']['host']} are released")
    emit(args, _output(result, said))
    return 0


def register(subparsers) -> None:
    from minbw.cli.main import uuid_arg
    from minbw.cli.cloud import add_cloud_arguments
    from minbw.cli.main import _server_request_arguments
    from minbw.cli.output import add_output_arguments
    mv = subparsers.add_parser(
        "move", help="move a consumer's allocations to another host in one atomic POST; the source is held by a "
                     "migration consumer until 'move confirm' or 'move revert'",
        description="Move a consumer's allocations to another host as Nova migrates a server: one POST /allocations "
                    "gives the consumer its allocations on the target (port groups mapped again) and the migration "
                    "consumer its source allocations. Then 'minbw move confirm' releases the source, or 'minbw move "
                    "revert' gives it back.")
    mv.add_argument("--consumer", metavar="UUID", type=uuid_arg, help="the consumer to move (required to move)")
    mv.add_argument("--target-host", metavar="NAME|UUID", help="the compute node (root provider) to move to")
    mv.add_argument("--migration", metavar="UUID", help="the migration consumer that keeps the source "
                                                        "(default: a new UUID, printed)")
    mv.add_argument("--retries", type=int, default=4, help="re-reads after consumer generation conflicts (default 4)")
    mv.add_argument("--dry-run", action="store_true", help="show the plan (the POST body), write nothing")
    _server_request_arguments(mv, COLUMNS)
    add_cloud_arguments(mv)
    mv.set_defaults(func=cmd_move)

    steps = mv.add_subparsers(dest="move_step", metavar="{confirm,revert}",
                              description="after a move: 'confirm' releases the source, 'revert' goes back")
    conf = steps.add_parser("confirm", help="release the source: free the migration consumer's allocations")
    conf.add_argument("--migration", metavar="UUID", required=True)
    conf.add_argument("--retries", type=int, default=4)
    conf.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
    add_output_arguments(conf, COLUMNS)
    add_cloud_arguments(conf)
    conf.set_defaults(func=cmd_move_confirm)

    rev = steps.add_parser("revert", help="give the consumer its source allocations back and empty the migration "
                                          "consumer, in one POST")
    rev.add_argument("--consumer", metavar="UUID", type=uuid_arg, required=True)
    rev.add_argument("--migration", metavar="UUID", required=True)
    rev.add_argument("--retries", type=int, default=4)
    rev.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
    _server_request_arguments(rev, COLUMNS)  # optional: with them, the ports' source binding allocations are shown
    add_cloud_arguments(rev)
    rev.set_defaults(func=cmd_move_revert)
