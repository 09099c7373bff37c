"""``allocation migrate [confirm|revert]``:
move a consumer's allocations to another host (Nova's migration pattern), then release the source or go back."""

from __future__ import annotations

import json

from minbw.cli.base import Command, View
from minbw.cli.options import add_server_arguments, server_spec, uuid_arg

# the one atomic POST /allocations of a move or revert: who holds what afterwards
COLUMNS = ("role", "uuid", "consumer_generation", "resources")


def _resources(providers: dict) -> str:
    return (
        "; ".join(
            f"{name}: " + ", ".join(f"{rc}={n}" for rc, n in sorted(res.items())) for name, res in providers.items()
        )
        or "nothing"
    )


def _bindings(result) -> tuple[str, ...]:
    return tuple(
        f"  port {port} binding:profile.allocation = {json.dumps(value)}"
        for port, value in result.binding_profiles.items()
    )


def _post_rows(result) -> tuple[tuple, ...]:
    """The POST body: who holds what afterwards, at which consumer generation (None: a new consumer)."""
    if not result.changed or result.action == "confirm":
        return ()
    op = result.plan.ops[0]
    after = result.plan.after
    return tuple(
        (
            role,
            after[role]["uuid"],
            op.body[after[role]["uuid"]]["consumer_generation"],
            _resources(after[role]["providers"]),
        )
        for role in ("migration", "consumer")
        if after.get(role)
    )


def _view(result, said: str, tail: tuple[str, ...] = ()) -> View:
    rows = _post_rows(result)
    head = (said,) + (("POST /allocations (one atomic call):",) if rows else ())
    return View(result.to_dict(), COLUMNS, rows, head=head, tail=_bindings(result) + tail, show_table=bool(rows))


class _Step(Command):
    columns = COLUMNS
    step = "move"

    def add_arguments(self, parser):
        parser.add_argument(
            "--retries", type=int, default=4, help="re-reads after consumer generation conflicts (default 4)"
        )
        parser.add_argument("--dry-run", action="store_true", help="show the plan (the POST body), write nothing")

    def run_step(self, parsed_args, **kwargs):
        from minbw.usecases.allocation_migration import MoveRequest, move

        return move(
            self.cloud(parsed_args),
            MoveRequest(
                step=self.step,
                retries=parsed_args.retries,
                check=parsed_args.dry_run,
                options=("--consumer", "--target-host", "--migration"),
                **kwargs,
            ),
        )


class MigrateAllocation(_Step):
    """Move a consumer's allocations to another host in one atomic POST /allocations (port groups mapped again);
    a migration consumer holds the source until 'move confirm' (release it) or 'move revert' (go back)."""

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--consumer", metavar="UUID", type=uuid_arg, help="the consumer to move (required)")
        parser.add_argument("--target-host", metavar="NAME|UUID", help="the compute node (root provider) to move to")
        parser.add_argument(
            "--migration",
            metavar="UUID",
            help="the migration consumer that keeps the source (default: a new UUID, printed)",
        )
        add_server_arguments(parser)

    def view(self, parsed_args):
        result = self.run_step(
            parsed_args,
            consumer=parsed_args.consumer,
            target_host=parsed_args.target_host,
            migration=parsed_args.migration,
            server=server_spec(parsed_args),
        )
        before, after = result.plan.before, result.plan.after
        consumer = parsed_args.consumer
        if not result.changed:
            return _view(
                result,
                f"consumer {consumer} is already on {after['consumer']['host']} and migration "
                f"{result.migration} holds its source on {after['migration']['host']}: nothing to do",
            )
        moved = f"consumer {consumer} from {before['consumer']['host']} → {after['consumer']['host']}"
        if result.check:
            said = (
                f"plan (nothing written): move {moved}; migration {result.migration} keeps the source until "
                f"confirm or revert"
            )
            return _view(result, said)
        prog = ("minbw" if type(self.app).__name__ == "MinbwShell" else "openstack bandwidth") + " allocation migrate"
        nxt = (
            f"next: {prog} confirm --migration {result.migration}  (release {before['consumer']['host']})",
            f"  or: {prog} revert --consumer {consumer} --migration {result.migration}  (go back)",
        )
        return _view(
            result, f"moved {moved} in one POST /allocations; migration {result.migration} holds the source", nxt
        )


class ConfirmMigration(_Step):
    """Release the source of a move: free the migration consumer's allocations."""

    step = "confirm"

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--migration", metavar="UUID", required=True)

    def view(self, parsed_args):
        result = self.run_step(parsed_args, migration=parsed_args.migration)
        if not result.changed:
            said = f"migration {parsed_args.migration} holds no allocations: nothing to confirm"
        else:
            held = result.plan.before["migration"]
            verb = "plan (nothing written): release" if result.check else "released"
            said = (
                f"{verb} the source: migration {parsed_args.migration}'s allocations on {held['host']} "
                f"({_resources(held['providers'])})"
            )
        return View(result.to_dict(), COLUMNS, (), head=(said,), show_table=False)


class RevertMigration(_Step):
    """Give the consumer its source allocations back and empty the migration consumer, in one POST."""

    step = "revert"

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--consumer", metavar="UUID", type=uuid_arg, required=True)
        parser.add_argument("--migration", metavar="UUID", required=True)
        add_server_arguments(parser)  # optional: with them, the ports' source binding allocations are shown

    def view(self, parsed_args):
        result = self.run_step(
            parsed_args, consumer=parsed_args.consumer, migration=parsed_args.migration, server=server_spec(parsed_args)
        )
        if not result.changed:
            return _view(result, f"migration {parsed_args.migration} holds no allocations: nothing to revert")
        before, after = result.plan.before, result.plan.after
        if result.check:
            said = (
                f"plan (nothing written): revert consumer {parsed_args.consumer} to {after['consumer']['host']}, "
                f"releasing {before['consumer']['host']}"
            )
        else:
            said = (
                f"reverted consumer {parsed_args.consumer} to {after['consumer']['host']} in one POST "
                f"/allocations; its allocations on {before['consumer']['host']} are released"
            )
        return _view(result, said)
