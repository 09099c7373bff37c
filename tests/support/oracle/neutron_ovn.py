"""Neutron's ML2/OVN placement extension, run for real: the oracle for minbw.neutron.ovn.

``neutron/plugins/ml2/drivers/ovn/mech_driver/ovsdb/extensions/placement.py`` parses a southbound Chassis
row (anything with ``name`` and ``other_config``) and builds a ``PlacementState`` whose ``deferred_sync()``
lists the Placement calls. The calls are read, not executed, into the provider tree they would leave.
"""
from __future__ import annotations

import types
import uuid
import warnings

from tests.support.oracle import neutron_sync

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from neutron.plugins.ml2.drivers.ovn.mech_driver.ovsdb.extensions import placement as ovn_placement

NEUTRON_ERRORS = (ValueError, IndexError)


def row(other_config: dict | None, name: str = "chassis-0", hostname: str = "host0"):
    """A southbound Chassis row as the extension reads it (a None value: the key is absent)."""
    return types.SimpleNamespace(name=name, hostname=hostname,
                                 other_config={k: v for k, v in (other_config or {}).items() if v is not None})


def parse(other_config: dict) -> tuple:
    """(bridge mappings, cms options) as build_placement_state parses them."""
    chassis = row(other_config)
    return ovn_placement._parse_bridge_mappings(chassis), ovn_placement._parse_ovn_cms_options(chassis)


def extension(client=None):
    """The extension with neutron-lib's Placement client (one that is never called when the deferred calls are
    only read)."""
    ext = ovn_placement.OVNClientPlacementExtension(driver=None)
    ext._reset(None)
    ext._placement_plugin = types.SimpleNamespace(
        _placement_client=client or neutron_sync.neutron_client("http://unused"))
    return ext


def deferred(other_config: dict, name2uuid: dict, old_other_config: dict | None = None, client=None) -> list:
    old = row(old_other_config) if old_other_config is not None else None
    state = extension(client).build_placement_state(row(other_config), name2uuid, chassis_old=old)
    return state.deferred_sync()


def tree(calls: list) -> dict:
    """The deferred calls as what they leave in Placement: global traits, providers (name, parent),
    provider traits and inventories by uuid, and the providers deleted."""
    out = {"traits": set(), "providers": {}, "provider_traits": {}, "inventories": {}, "deleted": set()}
    for call in calls:
        fn, args, kw = call.func.__name__, call.args, call.kwargs
        if fn == "update_trait":
            out["traits"].add(kw["name"])
        elif fn == "ensure_resource_provider":
            rp = kw.get("resource_provider") or args[0]
            out["providers"][str(rp["uuid"])] = (rp["name"], str(rp["parent_provider_uuid"]))
        elif fn == "delete_resource_provider":
            out["deleted"].add(str(args[0]))
        elif fn == "update_resource_provider_traits":
            out["provider_traits"][str(kw["resource_provider_uuid"])] = set(kw["traits"])
        elif fn == "update_resource_provider_inventories":
            out["inventories"][str(kw["resource_provider_uuid"])] = {
                rc: dict(inv) for rc, inv in kw["inventories"].items()}
        else:
            raise AssertionError(f"unexpected deferred call {fn}")
    return out


def name2uuid(names) -> dict:
    return {n: str(uuid.uuid5(uuid.NAMESPACE_DNS, n)) for n in names}
