"""Connections: clouds.yaml / OS_CLOUD / OS_* variables and every ``--os-*`` option of openstacksdk's
config (``register_argparse_arguments``), as python-openstackclient reads them; and what a failed
connection means, in one line."""
from __future__ import annotations

import argparse
import os
import sys

import openstack.config
from keystoneauth1 import exceptions as ksa_exceptions
from openstack import connection
from openstack import exceptions as sdk_exceptions

from minbw.errors import CloudError
from minbw.ops.connection import CLI, one_line
from minbw.ops.connection import explain as explain_connection

# the --os-* options registered for a command line, and the config that registered them (it remembers
# what it peeked, e.g. whether --timeout was given, for get_one)
_TEMPLATE: dict[tuple[str, ...], tuple[argparse.ArgumentParser, openstack.config.OpenStackConfig]] = {}
_CONNECTED: list = []  # the CloudRegion of each connection made, to name it when a call fails


def cloud_template(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """openstacksdk's own options; it peeks at ``argv`` (and OS_CLOUD) for the auth type to offer that
    plugin's options (--os-auth-type token: --os-token). A cloud it cannot find yet is not an error here:
    commands that need no cloud must work, and the connection names the unknown cloud (with the fix)."""
    key = tuple(sys.argv[1:] if argv is None else argv)
    if key not in _TEMPLATE:
        template, config = argparse.ArgumentParser(add_help=False), openstack.config.OpenStackConfig()
        try:
            config.register_argparse_arguments(template, list(key), service_keys=[])
        except sdk_exceptions.ConfigException:
            template, config = argparse.ArgumentParser(add_help=False), openstack.config.OpenStackConfig()
            openstack.config.OpenStackConfig(load_envvars=False).register_argparse_arguments(template, [],
                                                                                            service_keys=[])
        _TEMPLATE.clear()  # one command line per parser tree
        _TEMPLATE[key] = template, config
    return _TEMPLATE[key][0]


def add_cloud_arguments(parser: argparse.ArgumentParser) -> None:
    """--os-cloud, --os-auth-url, --os-region-name, --os-interface, --os-cacert, --insecure, ... Looked up
    when connecting, not while parsing: an OS_CLOUD that is not (yet) in clouds.yaml must not break
    commands that need no cloud."""
    template = next(iter(_TEMPLATE.values()))[0] if _TEMPLATE else cloud_template()
    group = parser.add_argument_group("cloud (clouds.yaml, OS_* variables or these --os-* options, "
                                      "as the openstack client)")
    for action in template._actions:
        if action.dest != "help":
            group._add_action(action)
    parser.set_defaults(cloud_dests=tuple(a.dest for a in template._actions if a.dest != "help"))


def _options(args: argparse.Namespace) -> argparse.Namespace:
    """Only the --os-* options: the command's own (--resources, --timeout of serve, ...) are not config."""
    return argparse.Namespace(**{d: getattr(args, d, None) for d in getattr(args, "cloud_dests", ())})


def connect(args: argparse.Namespace | None = None, **kwargs) -> connection.Connection:
    from_options = args is not None and bool(getattr(args, "cloud_dests", None)) and bool(_TEMPLATE)
    config = next(iter(_TEMPLATE.values()))[1] if from_options else openstack.config.OpenStackConfig()
    try:
        if from_options:
            region = config.get_one(argparse=_options(args), **kwargs)
        else:
            region = config.get_one(**kwargs)
    except sdk_exceptions.ConfigException as e:
        raise CloudError(f"{str(e).rstrip('.')}. Fix: name a cloud of {_config_files(config)} with --os-cloud "
                         f"or OS_CLOUD, or give --os-auth-url and the credentials") from None
    except ksa_exceptions.ClientException as e:  # e.g. an auth plugin that is missing an option
        raise CloudError(f"{type(e).__name__}: {one_line(e)}. Fix: complete the cloud's auth in clouds.yaml or the "
                         f"--os-* options") from None
    _CONNECTED.append(region)
    return connection.Connection(config=region)


def _config_files(config) -> str:
    found = [f for f in config._config_files if os.path.exists(f)]
    return " or ".join(found) if found else "clouds.yaml (none found: set OS_CLIENT_CONFIG_FILE)"


def add_service_cloud_argument(parser: argparse.ArgumentParser) -> None:
    """--service-cloud: the user that writes ports' binding:profile (Neutron gives that to the service role)."""
    parser.add_argument("--service-cloud", metavar="NAME",
                        help="the clouds.yaml entry of a service user (Nova's or Neutron's) that writes ports' "
                             "binding:profile, which Neutron allows to the service role only (default: the "
                             "--os-cloud user)")


def service_connect(args: argparse.Namespace) -> connection.Connection | None:
    """The --service-cloud connection, or None (then the main connection writes the bindings)."""
    return connect(cloud=args.service_cloud) if getattr(args, "service_cloud", None) else None


def explain(e: Exception) -> CloudError | None:
    """A connection or authentication failure as one line naming the cloud and the fix; None for others."""
    return explain_connection(e, _CONNECTED[-1] if _CONNECTED else None, CLI)


