"""``request show``: a port's resource_request as Neutron computes it."""

from __future__ import annotations

import sys

from minbw.cli.base import EXIT_FINDINGS, Command, View
from minbw.cli.options import qos_port, qos_port_help, uuid_arg
from minbw.errors import InvalidInput

COLUMNS = ("group", "resources", "required")


class ShowRequest(Command):
    """A port's resource_request from its QoS rules, segments and vnic type, exactly as Neutron builds it
    (JSON by default: ``minbw request show ... > port.json`` is what --port-request reads back, with the port id).
    With --port, of a port Neutron holds (its policy's rules, its network's segments, its vnic type), beside
    Neutron's own resource_request (admin only): exit 3 when the two differ."""

    columns = COLUMNS
    default_format = "json"

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument(
            "--qos-port",
            type=qos_port,
            metavar="RULES",
            help=qos_port_help().removesuffix(". Repeat per port")
            + " (no physnet: vlan physnet0); rules in the policy's order",
        )
        which.add_argument(
            "--port",
            metavar="NAME|ID",
            help="a port Neutron holds: its request computed from its policy's rules, its network's "
            "segments and its vnic type, compared with Neutron's own resource_request",
        )
        parser.add_argument(
            "--port-id",
            type=uuid_arg,
            metavar="UUID",
            help="the port's UUID, which the group ids derive from (default: id= of --qos-port, else a new one)",
        )
        parser.add_argument(
            "--agent-type",
            choices=("openvswitch", "sriov", "ovn"),
            help="check the rules and vnic type against this agent's QoS driver",
        )
        parser.add_argument(
            "--any-traits",
            action="store_true",
            help="several segments: required=in:A,B (Placement 1.39), any of their physnets: "
            "minbw's own request, for what it claims itself (port schedule, allocation create "
            "--port-request); Neutron and Nova use only the first segment",
        )
        parser.add_argument("--legacy", action="store_true", help="the legacy single-group format")

    def view(self, parsed_args):
        from minbw.usecases.port_request import PortRequestQuery, port_request

        if parsed_args.port and parsed_args.port_id:
            raise InvalidInput(
                "--port-id goes with --qos-port; with --port the port's own id is used. Fix: leave --port-id out"
            )
        query = PortRequestQuery(
            qos_port=parsed_args.qos_port,
            port_id=parsed_args.port_id,
            port=parsed_args.port,
            agent_type=parsed_args.agent_type,
            any_traits=parsed_args.any_traits,
        )
        result = port_request(self.cloud(parsed_args) if parsed_args.port else None, query)
        pr = result.request
        for note in pr.notes if pr else ():
            print(f"note: {note}", file=sys.stderr)
        value = None if pr is None else (pr.to_legacy() if parsed_args.legacy else pr.to_neutron())
        # the port as --port-request reads it back (id and resource_request, as Neutron shows a port)
        document = {
            "id": result.port_id,
            "resource_request": value,
            "mode": pr.mode if pr else None,
            "notes": list(pr.notes) if pr else [],
            **(result.compared.to_dict() if result.compared else {}),
        }
        groups = ((value or {}).get("request_groups") or [dict(value, id="")]) if value else []
        rows = tuple(
            (g.get("id", ""), {rc: n for rc, n in sorted(g.get("resources", {}).items())}, list(g.get("required", [])))
            for g in groups
        )
        matches = result.compared.matches_neutron if result.compared else None
        tail = (
            ()
            if result.compared is None
            else (
                ("Neutron shows no resource_request to this user (admin only), or the port has none: nothing compared",)
                if matches is None
                else ("The same as Neutron's resource_request.",)
                if matches
                else (
                    "Differs from Neutron's resource_request (neutron_resource_request in -f json): the port's policy, "
                    "network or vnic type changed after Neutron computed it, or the two disagree",
                )
            )
        )
        return View(document, COLUMNS, rows, tail=tail, exit_code=EXIT_FINDINGS if matches is False else 0)
