"""Configuration overrides for deployment tools that own /etc/neutron (kolla-ansible's
/etc/kolla/config/neutron/*.ini, openstack-ansible's neutron_*_overrides): the bandwidth options as
{section: {option: raw ini value}}, validated with the parsers and checks agent_config uses, so a bad
value fails before a reconfigure rolls it out. Pure, standard library only (shipped with the collection
for its filter plugin: python/build_collection.py)."""

from __future__ import annotations

from typing import Mapping

from ..errors import ConfigError
from . import naming, server_options
from .agentconf import load_agent_config, read_ini, render_options
from .provider_tree import desired_state


def agent_sections(kind: str, values: Mapping[str, object], host: str = "") -> dict[str, dict[str, str]]:
    """An agent's structured option values (as agent_config takes them) → its section's raw values.

    Validated as the agent does at start-up and as Placement would accept the providers, so the values
    must be complete for what they name: the mappings of the devices that have bandwidth. ``host`` is
    the agent host where packet-rate options use the key '' (this host)."""
    if kind not in naming.INI_KINDS:
        raise ConfigError(
            f"agent_type must be one of {', '.join(naming.INI_KINDS)} for agent options, "
            f"got {kind!r}" + ("; ML2/OVN's options: the filter ovn_cms_options" if kind == naming.OVN else ""),
            option="agent_type",
        )
    rendered = {o: v for o, v in render_options(kind, values).items() if v is not None}
    config = load_agent_config(kind, rendered, host or "this-host", source="overrides")
    desired_state([config])
    return {naming.AGENT_KINDS[kind].ini_section: rendered}


def server_sections(kind: str, current: str = "") -> dict[str, dict[str, str]]:
    """neutron-server's list option (``service_plugins`` / ML2 ``extension_drivers``) as the deployment
    tool sets it (``current``), with what guaranteed minimum bandwidth needs appended."""
    if kind not in server_options.SERVER_LISTS:
        raise ConfigError(
            f"agent_type must be one of {', '.join(server_options.SERVER_LISTS)} for neutron-server, got {kind!r}",
            option="agent_type",
        )
    section, option = server_options.SERVER_LISTS[kind][:2]
    updates = server_options.server_updates(kind, {option: current})
    return {section: {option: updates.get(option, current.strip())}}


def render_ini(sections: Mapping[str, Mapping[str, str]]) -> str:
    """Sections of raw values → ini text (what read_ini reads back as the same sections)."""
    out = []
    for section, options in sections.items():
        bad = [o for o, v in options.items() if not isinstance(v, str) or "\n" in v]
        if bad:
            raise ConfigError("expected one-line string values", option=", ".join(bad), source=f"[{section}]")
        out.append(f"[{section}]\n" + "".join(f"{o} = {v}\n" for o, v in options.items()))
    text = "\n".join(out)
    if read_ini(text) != {s: dict(o) for s, o in sections.items()}:
        raise ConfigError(
            "does not read back as given (an option name with '=' or ':' or a value with surrounding spaces?)",
            source="overrides",
        )
    return text
