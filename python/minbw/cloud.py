"""Connections: clouds.yaml / OS_CLOUD / --os-* options, as python-openstackclient does."""
from __future__ import annotations

import argparse

import openstack.config
from openstack import connection


def add_cloud_arguments(parser: argparse.ArgumentParser) -> None:
    """--os-cloud, --os-auth-url, ... (openstacksdk's own argparse integration)."""
    openstack.config.OpenStackConfig().register_argparse_arguments(parser, [])


def connect(args: argparse.Namespace | None = None, **kwargs) -> connection.Connection:
    region = openstack.config.OpenStackConfig().get_one(argparse=args, **kwargs)
    return connection.Connection(config=region)
