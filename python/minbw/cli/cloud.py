"""Connections: clouds.yaml / OS_CLOUD / OS_* variables, as python-openstackclient reads them."""
from __future__ import annotations

import argparse
import os

import openstack.config
from openstack import connection


def add_cloud_arguments(parser: argparse.ArgumentParser) -> None:
    """--os-cloud and friends. Looked up when connecting, not while parsing: an OS_CLOUD that is
    not (yet) in clouds.yaml must not break commands that need no cloud."""
    group = parser.add_argument_group("cloud (clouds.yaml or OS_* variables)")
    group.add_argument("--os-cloud", default=os.environ.get("OS_CLOUD"), metavar="NAME",
                       help="the clouds.yaml entry (default: $OS_CLOUD)")
    group.add_argument("--os-region-name", default=os.environ.get("OS_REGION_NAME"), metavar="REGION")
    group.add_argument("--os-interface", default=os.environ.get("OS_INTERFACE"), metavar="INTERFACE",
                       choices=("public", "internal", "admin", None))


def connect(args: argparse.Namespace | None = None, **kwargs) -> connection.Connection:
    if args is not None:
        for opt, key in (("os_cloud", "cloud"), ("os_region_name", "region_name"), ("os_interface", "interface")):
            if getattr(args, opt, None):
                kwargs.setdefault(key, getattr(args, opt))
    region = openstack.config.OpenStackConfig().get_one(**kwargs)
    return connection.Connection(config=region)


def add_service_cloud_argument(parser: argparse.ArgumentParser) -> None:
    """--service-cloud: the user that writes ports' binding:profile (Neutron gives that to the service role)."""
    parser.add_argument("--service-cloud", metavar="NAME",
                        help="the clouds.yaml entry of a service user (Nova's or Neutron's) that writes ports' "
                             "binding:profile, which Neutron allows to the service role only (default: the "
                             "--os-cloud user)")


def service_connect(args: argparse.Namespace) -> connection.Connection | None:
    """The --service-cloud connection, or None (then the main connection writes the bindings)."""
    return connect(cloud=args.service_cloud) if getattr(args, "service_cloud", None) else None
