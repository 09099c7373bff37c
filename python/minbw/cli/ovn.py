"""ML2/OVN chassis options as a source of bandwidth providers: the options ``providers plan|sync`` and
``drift`` take beside ``--agent-config`` (docs/operators.md, "ML2/OVN")."""
from __future__ import annotations

import argparse
import sys


def add_ovn_arguments(parser: argparse.ArgumentParser, *, southbound_help: str | None = None) -> None:
    g = parser.add_argument_group("ML2/OVN chassis options (what Neutron's OVN placement extension reads)")
    g.add_argument("--ovn-chassis", action="append", default=[], metavar="FILE",
                   help="chassis options saved in a file: the JSON of 'ovn-sbctl --format=json list Chassis' or "
                        "'ovs-vsctl --format=json list Open_vSwitch', or a YAML/JSON list of {name, hostname, "
                        "ovn-bridge-mappings, ovn-cms-options}; repeat for several")
    g.add_argument("--ovn-sb-db", nargs="?", const="", default=None, metavar="DB",
                   help=southbound_help or "every chassis of the OVN southbound database, read with ovn-sbctl "
                        "(DB: its --db, e.g. tcp:192.0.2.10:6642; leave out for ovn-sbctl's default or OVN_SB_DB)")
    g.add_argument("--ovs-db", nargs="?", const="", default=None, metavar="DB",
                   help="this compute's chassis options, read from its Open vSwitch database with ovs-vsctl "
                        "(DB: its --db; leave out for the local one)")
    g.add_argument("--ovn-sbctl", metavar="COMMAND",
                   help="how to run ovn-sbctl, e.g. 'docker exec ovn_sb_db ovn-sbctl' or with -p/-c/-C for TLS "
                        "(default ovn-sbctl)")
    g.add_argument("--ovs-vsctl", metavar="COMMAND",
                   help="how to run ovs-vsctl, e.g. 'docker exec openvswitch_vswitchd ovs-vsctl' (default ovs-vsctl)")


def given(args) -> bool:
    return bool(args.ovn_chassis) or args.ovn_sb_db is not None or args.ovs_db is not None


def read_chassis(args):
    """The chassis the options name, and whether they are every chassis of the cloud (the southbound)."""
    from minbw.ops import ovn
    return ovn.gather(files=args.ovn_chassis, southbound=args.ovn_sb_db is not None, sb_db=args.ovn_sb_db or None,
                      sbctl=args.ovn_sbctl, open_vswitch=args.ovs_db is not None, ovs_db=args.ovs_db or None,
                      vsctl=args.ovs_vsctl, hostname=getattr(args, "host", None))


def warn(warnings) -> None:
    """What Neutron would silently skip, on stderr (stdout stays the result)."""
    for w in warnings:
        print(f"minbw: warning: {w}", file=sys.stderr)
