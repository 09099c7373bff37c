"""``drift show``: the agents' ini files, what they report to Neutron, and Placement, compared."""

from __future__ import annotations

import sys

from minbw.cli.base import EXIT_FINDINGS, Command, View
from minbw.cli.options import (
    add_agent_config_argument,
    add_agent_host_argument,
    add_ovn_arguments,
    add_report_cache_argument,
    ovn_sources,
    report_cloud,
    warn,
)

SIDES = ("ini", "agent", "placement")
COLUMNS = ("provider", *SIDES, "differences")
# how errors name the options, among them those a drift that compared nothing names (usecases.drift.nothing_compared)
OPTIONS = {
    "agent_configs": "--agent-config FILE",
    "config_dirs": "--config-dir",
    "neutron": "--no-neutron",
    "ovn_sb_db": "--ovn-sb-db [DB]",
    "ovn_chassis": "--ovn-chassis FILE",
    "ovs_db": "--ovs-db [DB]",
}


class ShowDrift(Command):
    """Compare the agents' ini files, what the agents report to Neutron, and Placement, provider by provider
    (exit 3 when they differ; exit 1 when there was nothing to compare: no ini file, no agent reporting bandwidth
    to Neutron, no OVN chassis - on ML2/OVN give --ovn-sb-db, --ovn-chassis or --ovs-db)."""

    columns = COLUMNS

    def add_arguments(self, parser):
        add_report_cache_argument(parser)
        add_agent_config_argument(parser, "an OVS or SR-IOV agent ini file (leave out: Neutron vs Placement only)")
        add_agent_host_argument(parser)
        parser.add_argument(
            "--no-neutron",
            dest="neutron",
            action="store_false",
            help="do not read the agents from Neutron (e.g. against the embedded Placement)",
        )
        add_ovn_arguments(
            parser,
            southbound_help="the agent side for ML2/OVN: every chassis of the OVN southbound "
            "database (what Neutron's OVN placement extension reads), read with ovn-sbctl (DB: its "
            "--db; leave out for ovn-sbctl's default or OVN_SB_DB). --ovn-chassis/--ovs-db give the "
            "chassis options as the computes hold them (the ini side)",
        )

    def view(self, parsed_args):
        from minbw.usecases.drift import DriftRequest, drift
        from minbw.usecases.providers import OvnSources

        result = drift(
            report_cloud(self.cloud(parsed_args, progress=True), parsed_args),
            DriftRequest(
                tuple(parsed_args.agent_config),
                parsed_args.host,
                parsed_args.neutron,
                option="--agent-config",
                options=OPTIONS,
                config_dirs=tuple(parsed_args.config_dir),
                chassis=ovn_sources(parsed_args, southbound=False),
                southbound=OvnSources(
                    southbound=parsed_args.ovn_sb_db is not None,
                    sb_db=parsed_args.ovn_sb_db or None,
                    sbctl=parsed_args.ovn_sbctl,
                ),
            ),
        )
        warn(result.warnings)
        for line in result.skipped:
            print(f"minbw: skipped: {line}", file=sys.stderr)
        compared = [s for s in SIDES if any(s in r.sides for r in result.rows)]
        # a side that was not compared (no ini files, --no-neutron) shows "-"
        rows = tuple(
            (
                r.name,
                *(("yes" if r.sides.get(s) else "MISSING") if s in compared else "-" for s in SIDES),
                list(r.differences) or "-",
            )
            for r in result.rows
        )
        return View(result.to_dict(), COLUMNS, rows, exit_code=0 if result.ok else EXIT_FINDINGS)
