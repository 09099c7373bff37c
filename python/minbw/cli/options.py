"""The options several commands share, and their one grammar: ``--resource CLASS=AMOUNT`` (repeat, as
osc-placement), ``--qos-port RULES[,vnic=..][,physnet=..]`` (a port described by its QoS rules), ``--port NAME|ID``
(a Neutron port), ``--port-request [PORT_ID=]FILE`` (a port's resource_request JSON). A malformed value is a usage
error (exit 2) naming the option and an example, before anything is read or written."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

from typing import TYPE_CHECKING

from minbw.errors import InvalidInput, RequestError

if TYPE_CHECKING:
    from minbw.usecases.inputs import QosPort

# The use cases' input parsers (with them the QoS port grammar's classes) are imported by the options that parse with
# them: a command without such options (usage show) starts without them.


def resource_help() -> str:
    from minbw.usecases.inputs import RESOURCE_EXAMPLE

    return f"a resource of the flavor, CLASS=AMOUNT, e.g. {RESOURCE_EXAMPLE}"


def qos_port_help() -> str:
    from minbw.usecases.inputs import QOS_PORT_EXAMPLE, QOS_PORT_GRAMMAR

    return f"a QoS port described by its minimum rules: {QOS_PORT_GRAMMAR}; e.g. {QOS_PORT_EXAMPLE}. Repeat per port"


def uuid_arg(text: str) -> str:
    """A UUID option (Placement's consumers and providers are UUIDs)."""
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a UUID, e.g. {uuid.uuid4()}; got {text!r}") from None


def tcp_port(text: str) -> int:
    if not (text.isascii() and text.isdigit() and 0 < int(text) < 65536):
        raise argparse.ArgumentTypeError(f"expected a TCP port number 1-65535, got {text!r}")
    return int(text)


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def count(text: str) -> int:
    if not (text.isascii() and text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def resource(text: str) -> tuple[str, int]:
    from minbw.usecases.inputs import parse_resource

    try:
        return parse_resource(text, "--resource")
    except InvalidInput as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--resource: ")) from None


def qos_port(text: str) -> QosPort:
    from minbw.usecases.inputs import parse_qos_port

    try:
        return parse_qos_port(text, "--qos-port")
    except RequestError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--qos-port: ")) from None


def names(values) -> list[str]:
    """Repeated and/or comma-separated names (``--required A --required B,C``)."""
    return [n.strip() for v in values or () for n in v.split(",") if n.strip()]


def resources(parsed_args) -> dict[str, int]:
    from minbw.usecases.inputs import resources_of

    return resources_of(parsed_args.resource or (), "--resource")


def load_port_request(spec: str) -> dict:
    """``[PORT_ID=]FILE``: a port's resource_request JSON (either format), or a port as Neutron shows it."""
    port_id: str | None
    port_id, sep, path = spec.partition("=")
    if not sep:
        port_id, path = None, spec
    try:
        value = json.loads(Path(path).read_text())
    except OSError as e:
        raise InvalidInput(f"--port-request {path}: {e.strerror}") from None
    except ValueError as e:
        raise InvalidInput(f"--port-request {path}: not JSON: {e}") from None
    if isinstance(value, dict) and "resource_request" in value:  # a whole port (openstack port show -f json)
        return {"port_id": port_id or value.get("id"), "resource_request": value["resource_request"]}
    return {"port_id": port_id, "resource_request": value}


def add_resource_arguments(parser: argparse.ArgumentParser, required_help: str = "a trait the flavor requires") -> None:
    parser.add_argument("--resource", action="append", type=resource, metavar="CLASS=AMOUNT", help=resource_help())
    parser.add_argument(
        "--required", action="append", metavar="TRAIT", help=f"{required_help} (repeat, or comma-separate)"
    )


def add_port_arguments(parser: argparse.ArgumentParser, neutron_ports: bool = True) -> None:
    parser.add_argument(
        "--port-request",
        action="append",
        metavar="[PORT_ID=]FILE",
        help="a port's resource_request JSON (either format; the legacy one needs PORT_ID=, the "
        "extended one names its groups itself) or the port as Neutron shows it (openstack port "
        "show -f json, or minbw request show's output); repeat per port",
    )
    parser.add_argument("--qos-port", action="append", type=qos_port, metavar="RULES", help=qos_port_help())
    if neutron_ports:
        parser.add_argument(
            "--port",
            action="append",
            metavar="NAME|ID",
            help="a Neutron port: its resource_request and, on a routed network, member_of its "
            "segments' aggregates (segments without free addresses left out); repeat per port",
        )
        parser.add_argument(
            "--any-traits",
            action="store_true",
            help="with --port: a port on a network with several physnet segments may get its "
            "bandwidth on any of them (required=in:A,B, Placement 1.39), for what minbw claims "
            "itself; Nova never sees it: a server Nova schedules asks for Neutron's request, "
            "the first segment only (the answer's notes say so)",
        )
    parser.add_argument(
        "--group-policy", choices=("none", "isolate"), help="default: none with several port groups (as Nova)"
    )


def add_nova_arguments(parser: argparse.ArgumentParser) -> None:
    """The server as operators name it, and Nova's scheduler options (docs/scheduling.md, "Nova's query")."""
    parser.add_argument(
        "--flavor",
        metavar="NAME|ID",
        help="a Nova flavor: its vcpus, ram, disk and extra specs (instead of --resource)",
    )
    parser.add_argument("--image", metavar="NAME|ID", help="a Glance image: its properties (trait:*, hw_*)")
    parser.add_argument(
        "--availability-zone",
        metavar="AZ",
        help="the requested availability zone (member_of the aggregates whose metadata names it)",
    )
    parser.add_argument(
        "--project",
        metavar="PROJECT_ID",
        help="the server's project (Nova's tenant isolation, [scheduler] limit_tenants_to_placement_aggregate)",
    )
    add_scheduler_arguments(parser)


def add_scheduler_arguments(
    parser: argparse.ArgumentParser, example: str = "scheduler.image_metadata_prefilter=true"
) -> None:
    """Nova's scheduler options (``--nova-option``, ``--nova-conf``, ``example`` shown in the help) and
    ``--owner-nova`` (default auto)."""
    parser.add_argument(
        "--nova-option",
        action="append",
        metavar="SECTION.OPTION=VALUE",
        help=f"a nova.conf option of Nova's scheduler, by Nova's name, e.g. {example} (repeat; Nova's defaults "
        "otherwise)",
    )
    parser.add_argument(
        "--nova-conf", metavar="FILE", help="read Nova's scheduler options from this nova.conf (--nova-option wins)"
    )
    add_owner_nova_argument(parser, default="auto")


OWNER_NOVA_CHOICES = {"auto": None, "yes": True, "no": False}


def add_owner_nova_argument(parser: argparse.ArgumentParser, default: str | None = None) -> None:
    parser.add_argument(
        "--owner-nova",
        choices=tuple(OWNER_NOVA_CHOICES),
        default=default,
        help="whether every nova-compute reports OWNER_NOVA (service version 73, Nova 34), so that "
        "Nova asks for it on the compute node (auto: read from Nova's nova-compute services and "
        "their compute nodes' roots, or where Nova's API cannot be read, from every COMPUTE_NODE "
        "root in Placement; docs/scheduling.md)",
    )


def nova_spec_fields(parsed_args) -> dict:
    """The ServerSpec fields of :func:`add_nova_arguments`' options."""
    fields = {
        "flavor": parsed_args.flavor,
        "image": parsed_args.image,
        "project": parsed_args.project,
        "nova_options": tuple(parsed_args.nova_option or ()),
        "nova_conf": parsed_args.nova_conf,
        "owner_nova": OWNER_NOVA_CHOICES[parsed_args.owner_nova],
        "flavor_option": "--flavor",
        "availability_zone": parsed_args.availability_zone,
    }
    return fields


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """What a server asks for (candidates, claim, move)."""
    add_resource_arguments(parser)
    add_nova_arguments(parser)
    add_port_arguments(parser)
    parser.add_argument(
        "--root-required",
        action="append",
        metavar="TRAIT",
        help="a trait the compute node must have (!TRAIT: must not); repeat or comma-separate",
    )
    parser.add_argument("--in-tree", metavar="UUID", type=uuid_arg, help="only this provider's tree")
    parser.add_argument("--limit", type=count, metavar="N", help="at most N candidates")
    parser.add_argument(
        "--separation",
        choices=("off", "avoid", "strict"),
        default="off",
        help="avoid: a server without QoS ports keeps off the hosts reserved for QoS ports; strict: "
        "one with QoS ports must also land on them (default off; minbw separation set)",
    )
    parser.add_argument("--separation-trait", metavar="CUSTOM_TRAIT", help="default CUSTOM_MINBW_QOS_HOST")
    parser.add_argument("--separation-aggregate", metavar="UUID", help="the reserved hosts are this aggregate's")


def server_spec(parsed_args):
    """The ServerSpec of :func:`add_server_arguments`' options."""
    from minbw.usecases.server_request import ServerSpec
    from minbw.usecases.separation import separation_of

    return ServerSpec(
        resources=resources(parsed_args),
        required=tuple(names(parsed_args.required)),
        port_requests=tuple(load_port_request(x) for x in parsed_args.port_request or ()),
        qos_ports=tuple(parsed_args.qos_port or ()),
        ports=tuple(parsed_args.port or ()),
        any_traits=parsed_args.any_traits,
        group_policy=parsed_args.group_policy,
        in_tree=parsed_args.in_tree,
        root_required=tuple(names(parsed_args.root_required)),
        limit=parsed_args.limit,
        separation=separation_of(
            parsed_args.separation,
            parsed_args.separation_trait,
            parsed_args.separation_aggregate,
            option="--separation",
        ),
        option="--resource",
        **nova_spec_fields(parsed_args),
    )


def add_service_cloud_argument(parser: argparse.ArgumentParser) -> None:
    """--service-cloud: the user that writes ports' binding:profile (Neutron gives that to the service role)."""
    parser.add_argument(
        "--service-cloud",
        metavar="NAME",
        help="the clouds.yaml entry of a service user (Nova's or Neutron's) that writes ports' "
        "binding:profile, which Neutron allows to the service role only (default: the "
        "--os-cloud user)",
    )


def add_agent_config_argument(parser: argparse.ArgumentParser, what: str, default=()) -> None:
    """``--agent-config FILE [FILE ...]`` and ``--config-dir DIR``: the agents' files, read as the agents read their
    ``--config-file`` and ``--config-dir`` (minbw.neutron.agentconf.agents_of); the files several after one option (a
    shell glob) and/or the option repeated. (One option with many values, not the option once per file: argparse
    parses N repeated options in time quadratic in N, about 8 s for 20,000.)"""
    parser.add_argument(
        "--agent-config",
        action="extend",
        nargs="+",
        metavar="FILE",
        default=list(default) if default is not None else None,
        help=f"{what}, or a file the agents read beside it (neutron.conf); several after one option "
        "(e.g. a shell glob) or the option repeated, in the order of the agent's --config-file "
        "options. Each file that sets [ovs] bridge_mappings or [sriov_nic] "
        "physical_device_mappings (the section's name in any case) is one agent, which reads "
        "the files that set neither, in the order given, then the --config-dir files; later "
        "files win, option by option",
    )
    parser.add_argument(
        "--config-dir",
        action="append",
        metavar="DIR",
        default=list(default) if default is not None else None,
        help="a directory whose .conf files (sorted by name) every agent reads after the "
        "--agent-config files, as an agent's --config-dir; repeat for several. When no "
        "--agent-config file is an agent's own, the whole set is one agent's (edpm-ansible "
        "writes all of an agent's files in its config dir)",
    )


def add_agent_host_argument(parser: argparse.ArgumentParser, more: str = "") -> None:
    """``--host``: the agent host of the ``--agent-config`` files, over their ``[DEFAULT] host`` (``more``: what else
    the command takes it for, said after it in the help)."""
    parser.add_argument(
        "--host",
        help="the agent host, over the files' [DEFAULT] host (needed only when no file of an agent sets it)" + more,
    )


def add_ovn_arguments(parser: argparse.ArgumentParser, *, southbound_help: str | None = None) -> None:
    """ML2/OVN chassis options as a source of bandwidth providers (``provider sync``, ``drift show``)."""
    g = parser.add_argument_group("ML2/OVN chassis options (what Neutron's OVN placement extension reads)")
    g.add_argument(
        "--ovn-chassis",
        action="append",
        default=[],
        metavar="FILE",
        help="chassis options saved in a file: the JSON of 'ovn-sbctl --format=json list Chassis' or "
        "'ovs-vsctl --format=json list Open_vSwitch', or a YAML/JSON list of {name, hostname, "
        "ovn-bridge-mappings, ovn-cms-options}; repeat for several",
    )
    g.add_argument(
        "--ovn-sb-db",
        nargs="?",
        const="",
        default=None,
        metavar="DB",
        help=southbound_help
        or (
            "every chassis of the OVN southbound database, read with ovn-sbctl "
            "(DB: its --db, e.g. tcp:192.0.2.10:6642; leave out for ovn-sbctl's default "
            "or OVN_SB_DB)"
        ),
    )
    g.add_argument(
        "--ovs-db",
        nargs="?",
        const="",
        default=None,
        metavar="DB",
        help="this compute's chassis options, read from its Open vSwitch database with ovs-vsctl "
        "(DB: its --db; leave out for the local one)",
    )
    g.add_argument(
        "--ovn-sbctl",
        metavar="COMMAND",
        help="how to run ovn-sbctl, e.g. 'docker exec ovn_sb_db ovn-sbctl' or with -p/-c/-C for TLS "
        "(default ovn-sbctl)",
    )
    g.add_argument(
        "--ovs-vsctl",
        metavar="COMMAND",
        help="how to run ovs-vsctl, e.g. 'docker exec openvswitch_vswitchd ovs-vsctl' (default ovs-vsctl)",
    )


def ovn_sources(parsed_args, *, southbound: bool = True):
    """The OvnSources of :func:`add_ovn_arguments`' options (``southbound`` False: without the southbound)."""
    from minbw.usecases.providers import OvnSources

    return OvnSources(
        files=tuple(parsed_args.ovn_chassis),
        southbound=southbound and parsed_args.ovn_sb_db is not None,
        sb_db=(parsed_args.ovn_sb_db or None) if southbound else None,
        sbctl=parsed_args.ovn_sbctl,
        open_vswitch=parsed_args.ovs_db is not None,
        ovs_db=parsed_args.ovs_db or None,
        vsctl=parsed_args.ovs_vsctl,
    )


def warn(warnings) -> None:
    """What Neutron would silently skip, on stderr (stdout stays the result)."""
    for w in warnings:
        print(f"minbw: warning: {w}", file=sys.stderr)


def add_report_cache_argument(parser: argparse.ArgumentParser) -> None:
    """--cache [FILE]: the reports trust the provider cache (``provider sync``'s) for providers whose generation
    did not move (docs/benchmarks.md, "Reports")."""
    parser.add_argument(
        "--cache",
        nargs="?",
        const="",
        default=None,
        metavar="FILE",
        help="trust the provider cache for providers whose generation did not move (FILE, or the "
        "sync's cache for this Placement); reads only what moved",
    )


def report_cloud(cloud, parsed_args):
    """The cloud with the ``--cache`` of :func:`add_report_cache_argument`."""
    from minbw.usecases.cloud import NO_CACHE, Cache

    cloud.cache = NO_CACHE if parsed_args.cache is None else Cache.at(parsed_args.cache)
    return cloud
