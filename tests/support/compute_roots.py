"""Compute node roots as nova-compute makes them, for the tests that build a cloud in Placement themselves.

Nova 34's nova-compute marks its compute node's root provider with COMPUTE_NODE and OWNER_NOVA
(``ResourceTracker._get_traits``), as ``minbw provider sync --create-root`` does (``NOVA_ROOT_TRAITS``): a
root made here carries them, so the default path (Nova's query: ``root_required=OWNER_NOVA``) finds it as
Nova's own. A test that needs a root without them (a root Nova would leave out) makes it on purpose.
"""
from __future__ import annotations

import uuid as uuidlib
from collections.abc import Mapping

from minbw.model.providers import NOVA_ROOT_TRAITS


def root_uuid(name: str) -> str:
    """The uuid the tests give the compute node ``name`` (uuid5 of its name)."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, name))


def compute_root(api, name: str, inventories: Mapping[str, Mapping] | None = None, *,
                 uuid: str | None = None) -> str:
    """Create the compute node ``name``'s root provider (``uuid``: :func:`root_uuid` by default) with
    ``inventories`` (Placement's form: ``{class: {"total": n, ...}}``) and Nova's root traits; its uuid."""
    uuid = uuid or root_uuid(name)
    gen = api.create_provider(uuid, name, None).generation
    if inventories:
        gen = api.set_inventories(uuid, inventories, gen)
    api.set_provider_traits(uuid, NOVA_ROOT_TRAITS, gen)
    return uuid
