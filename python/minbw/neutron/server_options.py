"""What neutron-server needs for guaranteed minimum bandwidth: the qos and placement service
plugins, and the qos ML2 extension driver. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from .agentconf import parse_list

# agent_type -> (section, list option, entries it must include)
SERVER_LISTS = {
    "neutron_server": ("DEFAULT", "service_plugins", ("qos", "placement")),
    "ml2": ("ml2", "extension_drivers", ("qos",)),
}
# service_plugins may name a plugin by its class instead of its alias.
ALIASES = {
    "qos": ("neutron.services.qos.qos_plugin.QoSPlugin",),
    "placement": ("neutron.services.placement_report.plugin.PlacementReportPlugin",),
}


def server_updates(kind: str, current: Mapping[str, str]) -> dict[str, str]:
    """The list option with the missing entries appended (empty when nothing is missing)."""
    option, wanted = SERVER_LISTS[kind][1:]
    raw = (current.get(option) or "").strip().rstrip(",").rstrip()
    items = parse_list(raw)
    missing = [w for w in wanted if w not in items and not set(ALIASES.get(w, ())) & set(items)]
    # appended to the value as written, so the entries already there keep their spelling
    return {option: ",".join(([raw] if raw else []) + missing)} if missing else {}
