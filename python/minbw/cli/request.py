"""``request show``: a port's resource_request as Neutron computes it."""
from __future__ import annotations

import sys

from minbw.cli.base import Command, View
from minbw.cli.options import QOS_PORT_HELP, qos_port, uuid_arg

COLUMNS = ("group", "resources", "required")


class ShowRequest(Command):
    """A port's resource_request from its QoS rules, segments and vnic type, exactly as Neutron builds it
    (JSON by default: ``minbw request show ... > port.json`` is what --port-request reads back, with the port id)."""

    columns = COLUMNS
    default_format = "json"

    def add_arguments(self, parser):
        parser.add_argument("--qos-port", required=True, type=qos_port, metavar="RULES",
                            help=QOS_PORT_HELP.removesuffix(". Repeat per port") +
                            " (no physnet: vlan physnet0); rules in the policy's order")
        parser.add_argument("--port-id", type=uuid_arg, metavar="UUID",
                            help="the port's UUID, which the group ids derive from (default: id= of --qos-port, "
                                 "else a new one)")
        parser.add_argument("--agent-type", choices=("openvswitch", "sriov", "ovn"),
                            help="check the rules and vnic type against this agent's QoS driver")
        parser.add_argument("--any-traits", action="store_true",
                            help="several segments: required=in:A,B (Placement 1.39), any of their physnets")
        parser.add_argument("--legacy", action="store_true", help="the legacy single-group format")

    def view(self, parsed_args):
        from minbw.usecases.port_request import PortRequestQuery, port_request
        result = port_request(None, PortRequestQuery(qos_port=parsed_args.qos_port, port_id=parsed_args.port_id,
                                                     agent_type=parsed_args.agent_type,
                                                     any_traits=parsed_args.any_traits))
        pr = result.request
        for note in (pr.notes if pr else ()):
            print(f"note: {note}", file=sys.stderr)
        value = None if pr is None else (pr.to_legacy() if parsed_args.legacy else pr.to_neutron())
        # the port as --port-request reads it back (id and resource_request, as Neutron shows a port)
        document = {"id": result.port_id, "resource_request": value, "mode": pr.mode if pr else None,
                    "notes": list(pr.notes) if pr else []}
        groups = ((value or {}).get("request_groups") or [dict(value, id="")]) if value else []
        rows = tuple((g.get("id", ""), {rc: n for rc, n in sorted(g.get("resources", {}).items())},
                      list(g.get("required", []))) for g in groups)
        return View(document, COLUMNS, rows)
