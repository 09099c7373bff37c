"""``allocation create|delete``: claim a server's resources in Placement, or free them."""

from __future__ import annotations

import json

from minbw.cli.base import Command, Section, View, fields
from minbw.cli.options import add_server_arguments, count, server_spec, uuid_arg

CLAIM_COLUMNS = ("provider", "uuid", "resources")


class CreateAllocation(Command):
    """Claim a server's resources atomically (alternates on capacity); explains a failure per request group
    (exit 4). The consumer already holding exactly this claim is left unchanged. A claim written whose
    verification could not read Placement: exit 5, the consumer named."""

    columns = CLAIM_COLUMNS

    def add_arguments(self, parser):
        parser.add_argument("--consumer", required=True, metavar="UUID", type=uuid_arg)
        # dest names of their own: openstacksdk reads project_id/user_id in the namespace as auth options
        parser.add_argument("--project-id", required=True, dest="consumer_project_id")
        parser.add_argument("--user-id", required=True, dest="consumer_user_id")
        parser.add_argument("--consumer-type", help="e.g. INSTANCE (Placement 1.38)")
        parser.add_argument("--max-hosts", type=count, default=3, help="hosts to try, as Nova's alternates (default 3)")
        parser.add_argument("--dry-run", action="store_true", help="show the claim the real run makes first")
        add_server_arguments(parser)

    def failure_document(self, error):
        """No valid host: ``claimed`` false and why; a claim written and not verified: ``claimed`` true,
        ``written_unverified`` true and the claim ``written``; any other failure: ``error``."""
        from minbw.errors import NoValidHost, WrittenUnverified

        if isinstance(error, NoValidHost):
            return {"claimed": False, **error.to_dict()}
        if isinstance(error, WrittenUnverified):
            return {"claimed": True, **error.to_dict()}
        return super().failure_document(error)

    def view(self, parsed_args):
        from minbw.usecases.allocation import ClaimRequest, claim

        cloud = self.cloud(parsed_args)
        result = claim(
            cloud,
            ClaimRequest(
                parsed_args.consumer,
                server_spec(parsed_args),
                project_id=parsed_args.consumer_project_id,
                user_id=parsed_args.consumer_user_id,
                consumer_type=parsed_args.consumer_type,
                max_hosts=parsed_args.max_hosts,
                check=parsed_args.dry_run,
            ),
        )
        c = result.claim
        names = provider_names(cloud, c.host)
        rows = tuple((names.get(rp, rp), rp, dict(alloc["resources"])) for rp, alloc in c.allocations.items())
        where = f"on {c.host_name} ({c.host})" if c.host_name else f"on host {c.host}"
        said = (
            f"unchanged: consumer {c.consumer} already holds this claim {where}"
            if not result.changed
            else f"plan (nothing written): claim for consumer {c.consumer} {where}"
            if result.check
            else f"claimed for consumer {c.consumer} {where}"
        )
        return View(result.to_dict(), CLAIM_COLUMNS, rows, head=(said,), sections=binding_sections(c.binding_profiles))


def provider_names(cloud, host: str) -> dict[str, str]:
    """The names of the providers in ``host``'s tree, for the claim's rows; none (the rows show UUIDs) when that read
    fails, said on stderr: a claim just made is made and verified, the names only show it."""
    from minbw.errors import PlacementError

    try:
        return cloud.placement.provider_names(in_tree=host)
    except PlacementError as e:
        cloud.say(f"the names of host {host}'s providers could not be read: {e}")
        return {}


def binding_sections(binding_profiles: dict) -> tuple[Section, ...]:
    """Each port's binding:profile.allocation (what Nova writes to the port), a table under the main one."""
    if not binding_profiles:
        return ()
    return (
        Section(
            "",
            ("port", "binding:profile.allocation"),
            tuple((port, json.dumps(value)) for port, value in binding_profiles.items()),
        ),
    )


class DeleteAllocation(Command):
    """Free a consumer's allocations (a safe delete at its generation); nothing to do when it has none."""

    columns = ("changed", "consumer")

    def add_arguments(self, parser):
        parser.add_argument("--consumer", required=True, metavar="UUID", type=uuid_arg)
        parser.add_argument("--dry-run", action="store_true", help="say whether there is anything to free")

    def view(self, parsed_args):
        from minbw.usecases.allocation import FreeRequest, free

        result = free(self.cloud(parsed_args), FreeRequest(parsed_args.consumer, check=parsed_args.dry_run))
        said = (
            f"{'would free' if parsed_args.dry_run else 'freed'} the allocations of {result.consumer}"
            if result.changed
            else f"{result.consumer} has no allocations"
        )
        return fields(result.to_dict(), self.columns, said)
