"""``provider sync|list``: the agents' configuration as Placement providers."""

from __future__ import annotations

import sys

from minbw.cli.base import EXIT_FINDINGS, Command, Section, View
from minbw.cli.options import (
    add_agent_config_argument,
    add_agent_host_argument,
    add_ovn_arguments,
    ovn_sources,
    warn,
)

PLAN_COLUMNS = ("step", "write")
# osc-placement's column orders: `resource provider list`, `resource provider inventory list` (with `used`)
PROVIDER_COLUMNS = ("uuid", "name", "generation", "root_provider_uuid", "parent_provider_uuid")
INVENTORY_COLUMNS = (
    "resource_class",
    "allocation_ratio",
    "min_unit",
    "max_unit",
    "reserved",
    "step_size",
    "total",
    "used",
)
OPTION_NAMES = {
    "workers": "--workers",
    "cache_max_age": "--cache-max-age",
    "config_dirs": "--config-dir",
    "cache_check_interval": "--cache-check-interval",
    "root_inventories": "--root-inventory",
}


def _workers(text: str) -> int:
    import argparse

    from minbw.usecases.providers import MAX_WORKERS

    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_WORKERS):
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {MAX_WORKERS}, got {text!r}")
    return int(text)


def _max_age(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = -1
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value


class SyncProviders(Command):
    """Make Placement's bandwidth providers match the agents' configuration (Neutron's exact providers)."""

    columns = PLAN_COLUMNS

    def add_arguments(self, parser):
        # the use case's defaults, imported here: the command list (minbw --help) loads this module, not the sync
        from minbw.usecases.providers import (
            DEFAULT_CACHE_CHECK_INTERVAL,
            DEFAULT_CACHE_MAX_AGE,
            DEFAULT_WORKERS,
            MAX_WORKERS,
        )

        from minbw.cli.options import resource

        add_agent_config_argument(parser, "an OVS ([ovs]) or SR-IOV ([sriov_nic]) agent ini file")
        add_agent_host_argument(parser, "; also the default hypervisor name")
        add_ovn_arguments(parser)
        parser.add_argument(
            "--create-root",
            action="store_true",
            help="create a missing compute node root provider, for clouds without Nova (a "
            "standalone Placement) and demos. Where the cloud has Nova, the root gets the UUID "
            "and name of the compute node Nova knows for the hypervisor (nova-compute then "
            "adopts it); a host Nova has no such node for is refused (nova-compute would "
            "create its own root of that name later, and Placement would refuse it)",
        )
        parser.add_argument(
            "--root-inventory",
            action="append",
            type=resource,
            metavar="CLASS=TOTAL",
            help="the root's inventory of a class, e.g. VCPU=8 (repeat): set on a root made with "
            "--create-root, and corrected on an existing one; refused on a compute node's root "
            "Nova knows (nova-compute replaces that inventory with its own)",
        )
        parser.add_argument(
            "--ignore-nova-compute",
            action="store_true",
            help="with --create-root, create minbw's own root where Nova has no compute node for "
            "the hypervisor (a nova-compute service there, Nova unreadable, or a host Nova "
            "does not know), and let --root-inventory set a compute node's root; only for "
            "hosts nova-compute never reports",
        )
        cache = parser.add_mutually_exclusive_group()
        cache.add_argument(
            "--cache",
            metavar="FILE",
            help="where the sync remembers what it read and wrote (default: one file per Placement "
            "endpoint under $XDG_CACHE_HOME/minbw or ~/.cache/minbw); the next sync re-reads "
            "only providers whose generation moved or that the cache's safety check doubts",
        )
        cache.add_argument(
            "--no-cache",
            action="store_true",
            help="read every provider's traits and inventories; use and write no cache",
        )
        parser.add_argument(
            "--cache-max-age",
            type=_max_age,
            default=DEFAULT_CACHE_MAX_AGE,
            metavar="SECONDS",
            help="re-read providers the cache last read or wrote longer ago than this (the "
            f"periodic full check; default {DEFAULT_CACHE_MAX_AGE}, 0: always)",
        )
        parser.add_argument(
            "--cache-check-interval",
            type=_max_age,
            default=DEFAULT_CACHE_CHECK_INTERVAL,
            metavar="SECONDS",
            help="trust a cached provider by its generation alone when the cache confirmed it less "
            "than this long ago; older ones pass the safety check first (default "
            f"{DEFAULT_CACHE_CHECK_INTERVAL}, 0: at every sync)",
        )
        parser.add_argument(
            "--workers",
            type=_workers,
            default=DEFAULT_WORKERS,
            metavar="N",
            help=f"host trees written and providers read at once (1-{MAX_WORKERS}, default {DEFAULT_WORKERS})",
        )
        parser.add_argument(
            "--absent",
            action="store_true",
            help="remove these agents' providers instead (kept where something is allocated)",
        )
        parser.add_argument("--dry-run", action="store_true", help="show the writes, make none")

    def view(self, parsed_args):
        from minbw.usecases.cloud import NO_CACHE, Cache
        from minbw.usecases.inputs import resources_of
        from minbw.usecases import providers

        roots = resources_of(parsed_args.root_inventory or (), "--root-inventory") or None
        result = providers.sync(
            self.cloud(parsed_args, progress=True),
            providers.ProvidersRequest(
                agent_configs=tuple(parsed_args.agent_config),
                config_dirs=tuple(parsed_args.config_dir),
                ovn=ovn_sources(parsed_args),
                host=parsed_args.host,
                check=parsed_args.dry_run,
                absent=parsed_args.absent,
                create_root=parsed_args.create_root,
                root_inventories=roots,
                ignore_nova_compute=parsed_args.ignore_nova_compute,
                cache=NO_CACHE if parsed_args.no_cache else Cache.at(parsed_args.cache),
                cache_max_age=parsed_args.cache_max_age,
                cache_check_interval=parsed_args.cache_check_interval,
                workers=parsed_args.workers,
                option="--agent-config",
                options=OPTION_NAMES,
            ),
        )
        warn(result.warnings)
        for line in result.skipped:
            print(f"minbw: skipped: {line}", file=sys.stderr)
        return plan_view(result)


def plan_view(result) -> View:
    """The writes of a plan (or sync): a row each; what was kept and the count under them."""
    plan, applied = result.plan, result.applied
    head = () if plan.ops else ("Placement already matches the configuration: 0 writes.",)
    tail = tuple("  " + str(k) for k in plan.kept)
    if applied:
        tail += (
            f"{applied.writes} writes"
            + (f", {applied.retries} retried after concurrent updates" if applied.retries else ""),
        )
    elif plan.ops:
        tail += (f"{len(plan.ops)} writes planned (nothing written)",)
    tail += (result.summary,)
    rows = tuple(("done" if applied else "plan", str(op)) for op in plan.ops)
    # some configurations skipped (named on stderr), the others synced: exit 3, a partial run
    # the document (every provider: 60,000 at 10,000 hosts) is made only for -f json/yaml
    return View(
        result.to_dict,
        PLAN_COLUMNS,
        rows,
        head=head,
        tail=tail,
        show_table=bool(rows),
        exit_code=EXIT_FINDINGS if result.skipped else 0,
    )


class ListProviders(Command):
    """Providers with traits, inventories and usage (osc-placement's columns)."""

    columns = PROVIDER_COLUMNS

    def add_arguments(self, parser):
        parser.add_argument("--hypervisor", help="only this compute node's tree")

    def view(self, parsed_args):
        from minbw.usecases import providers

        result = providers.show(self.cloud(parsed_args), providers.ShowRequest(parsed_args.hypervisor))
        sections = []
        for r in result.providers:
            title = f"{r.provider.name} ({r.provider.uuid})"
            if r.traits:
                sections.append(Section(title, ("trait",), tuple((t,) for t in r.traits)))
                title = ""
            if r.inventories:
                rows = tuple(
                    (rc, *(inv[h] for h in INVENTORY_COLUMNS[1:-1]), r.usages.get(rc, 0))
                    for rc, inv in sorted(r.inventories.items())
                )
                sections.append(Section(title, INVENTORY_COLUMNS, rows))
        rows = tuple(
            (p.uuid, p.name, p.generation, p.root_uuid, p.parent_uuid) for p in (r.provider for r in result.providers)
        )
        return View(result.to_dict(), PROVIDER_COLUMNS, rows, sections=tuple(sections))
