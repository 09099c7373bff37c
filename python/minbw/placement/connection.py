"""Placement's connection made from a cloud's configuration alone, for a command that talks to Placement only.

openstacksdk's ``Connection`` is made by importing ``openstack.connection``, which imports every service's proxy and
resources (about 450 modules, the most of a command's start that :mod:`minbw.cli.shell` does not avoid), and its
placement proxy first reads Placement's version document. Placement needs neither: its API is at the root of its
endpoint (no version in its URLs). This is what osc-placement (Placement's own command line) does: a keystoneauth
adapter of the cloud's session with the service's type, interface and region, here with the endpoint override too, all
as openstacksdk's cloud region (``CloudRegion``) reads them from clouds.yaml, the ``OS_*`` variables and the options.
The session is the region's own (:meth:`CloudRegion.get_session`): a connection made later from the same region
(another service) shares its authentication.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SERVICE = "placement"


@dataclass(frozen=True)
class PlacementConnection:
    """What :class:`minbw.placement.client.Placement` uses of an openstacksdk ``Connection``: ``placement`` (the
    requests: a keystoneauth adapter), ``session`` (its timeout) and ``config`` (the cloud region)."""

    config: Any
    session: Any
    placement: Any


def placement_connection(region) -> PlacementConnection | None:
    """Placement's connection over ``region`` (an openstacksdk ``CloudRegion``); None when the cloud's configuration
    turns Placement off (``has_placement: false``: openstacksdk's ``Connection`` says so when it is used)."""
    if not region.has_service(SERVICE):
        return None
    from keystoneauth1.adapter import Adapter

    session = region.get_session()
    adapter = Adapter(
        session=session,
        service_type=region.get_service_type(SERVICE),
        service_name=region.get_service_name(SERVICE),
        interface=region.get_interface(SERVICE),
        region_name=region.get_region_name(SERVICE),
        endpoint_override=region.get_endpoint(SERVICE),
    )
    return PlacementConnection(region, session, adapter)
