"""``minbw drift``: agent ini files vs the agents' reports in Neutron vs Placement, provider by provider."""
from __future__ import annotations

EXIT_DRIFT = 3  # some provider differs between the sides; 1 is an error
SIDES = ("ini", "agent", "placement")
COLUMNS = ("provider", *SIDES, "differences")


def register(sub) -> None:
    from minbw.cli.cloud import add_cloud_arguments
    from minbw.cli.output import add_output_arguments
    from minbw.cli.ovn import add_ovn_arguments
    sp = sub.add_parser("drift", help="compare agent ini files, what the agents report to Neutron, and Placement "
                                      "(exit 3 when they differ)")
    sp.add_argument("--agent-config", action="append", default=[], metavar="FILE",
                    help="an OVS or SR-IOV agent ini file; repeat (leave out: Neutron vs Placement only)")
    sp.add_argument("--host", help="the agent host when the files do not set [DEFAULT] host")
    sp.add_argument("--no-neutron", dest="neutron", action="store_false",
                    help="do not read the agents from Neutron (e.g. against the embedded Placement)")
    add_ovn_arguments(sp, southbound_help="the agent side for ML2/OVN: every chassis of the OVN southbound "
                      "database (what Neutron's OVN placement extension reads), read with ovn-sbctl (DB: its "
                      "--db; leave out for ovn-sbctl's default or OVN_SB_DB). --ovn-chassis/--ovs-db give the "
                      "chassis options as the computes hold them (the ini side)")
    add_output_arguments(sp, COLUMNS)
    add_cloud_arguments(sp)
    sp.set_defaults(func=cmd_drift)


def cmd_drift(args) -> int:
    from minbw.cli.cloud import connect
    from minbw.cli.output import Output, emit
    from minbw.ops.drift import run_drift
    from minbw.placement.client import Placement

    from minbw.cli import ovn as ovn_cli
    from minbw.ops import ovn

    conn = connect(args)
    chassis = []
    if args.ovn_chassis or args.ovs_db is not None:
        chassis, _ = ovn.gather(files=args.ovn_chassis, open_vswitch=args.ovs_db is not None, ovs_db=args.ovs_db or None,
                                vsctl=args.ovs_vsctl, hostname=args.host)
    southbound = ovn.read_southbound(args.ovn_sb_db or None, args.ovn_sbctl) if args.ovn_sb_db is not None else None
    rows = run_drift(conn, Placement(conn), agent_configs=args.agent_config, host=args.host, neutron=args.neutron,
                     chassis=chassis, southbound=southbound)
    ovn_cli.warn(dict.fromkeys(ovn.chassis_configs([*chassis, *(southbound or ())])[1]))  # both sides: once each
    ok = all(r.agree for r in rows)
    compared = [s for s in SIDES if any(s in r.sides for r in rows)]
    # a side that was not compared (no ini files, --no-neutron) shows "-"
    emit(args, Output({"ok": ok, "providers": [r.to_dict() for r in rows]}, COLUMNS, tuple(
        (r.name, *(("yes" if r.sides.get(s) else "MISSING") if s in compared else "-" for s in SIDES),
         "; ".join(r.differences) or "-") for r in rows)))
    return 0 if ok else EXIT_DRIFT
