"""minbw as an OpenStackClient plugin: ``openstack bandwidth ...`` (entry point ``openstack.cli.extension``;
the commands are the group ``openstack.bandwidth.v1``), the same command classes as the ``minbw`` shell.

minbw's commands connect on first use from the global options, so the client this plugin makes is only the
cloud the use cases work on."""

from __future__ import annotations

API_NAME = "bandwidth"
API_VERSION_OPTION = "os_bandwidth_api_version"
DEFAULT_API_VERSION = "1"
API_VERSIONS = ("1",)


def make_client(instance):
    """The use cases' Cloud over the client manager's (authenticated) connection."""
    from minbw.usecases.cloud import Cloud

    def connect():
        instance.setup_auth()
        return instance.sdk_connection

    return Cloud(connect)


def build_option_parser(parser):
    parser.add_argument(
        "--os-bandwidth-api-version",
        metavar="<bandwidth-api-version>",
        default=DEFAULT_API_VERSION,
        help=f"minbw's command set version (default {DEFAULT_API_VERSION})",
    )
    return parser
