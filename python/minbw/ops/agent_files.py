"""Agent configuration as it is on disk: reading ini files (and option dicts) into AgentConfigs, and
planning an edit of an agent's (or neutron-server's) ini file. The file's text in, the new text out:
the caller (the ``agent_config`` module) writes it."""
from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minbw.errors import ConfigError
from minbw.neutron import agentconf, naming, server_options
from minbw.neutron.agentconf import AgentConfig, load_agent_ini, load_agent_values
from minbw.neutron.provider_tree import desired_state


def read_agent_configs(paths: Iterable[str] = (), agents: Iterable[Mapping] = (), host: str | None = None,
                       *, paths_option: str = "agent_configs") -> list[AgentConfig]:
    """Agent ini files (``paths``) and agents given as option dicts (``agent_type``, ``host`` and the
    agent's options), parsed as the agents would. ``host`` is the default agent host."""
    configs = []
    for i, values in enumerate(agents or ()):
        values = dict(values)
        kind = values.pop("agent_type", None)
        if kind not in naming.AGENT_KINDS:
            raise ConfigError(f"agent_type must be one of {', '.join(naming.AGENT_KINDS)}, got {kind!r}",
                              source=f"agents[{i}]")
        configs.append(load_agent_values(kind, values, values.pop("host", None) or host, source=f"agents[{i}]"))
    for path in paths or ():
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            raise ConfigError(e.strerror, option=paths_option, source=path) from None
        configs.append(load_agent_ini(text, source=path, host=host))
    return configs


@dataclass(frozen=True)
class FileEdit:
    """An ini file's text before and after; ``updates`` the options set (None: removed);
    ``configurations`` what the agent would report in its heartbeat (None for neutron-server)."""

    path: str
    section: str
    before: str
    after: str
    updates: Mapping[str, str | None]
    configurations: Mapping | None

    @property
    def changed(self) -> bool:
        return self.after != self.before

    def diff(self) -> dict:
        return {"before": self.before, "after": self.after, "before_header": self.path, "after_header": self.path}


def plan_agent_file(path: str, text: str, kind: str, values: Mapping[str, object],
                    host: str | None = None) -> FileEdit:
    """The edit that gives ``kind``'s section of the file the option ``values`` (structured, as the
    module takes them; None: leave as is), validated as the agent (or Placement) would. Raises
    ConfigError with Neutron's message; the file is not touched."""
    given = sorted(o for o, v in values.items() if v is not None)
    if kind in server_options.SERVER_LISTS:
        if given:
            raise ConfigError(f"not an option of agent_type {kind}", option=", ".join(given))
        section = server_options.SERVER_LISTS[kind][0]
        current = agentconf.read_ini(text, source=path).get(section, {})
        updates = server_options.server_updates(kind, current)
    else:
        section = naming.AGENT_KINDS[kind].ini_section
        current = agentconf.read_ini(text, source=path).get(section, {})
        rendered = agentconf.render_options(kind, values)
        updates = {o: v for o, v in rendered.items() if not agentconf.same_value(o, current.get(o), v)}
    after = agentconf.edit_ini(text, section, updates) if updates else text
    sections = agentconf.read_ini(after, source=path)
    configurations = None
    if kind in naming.AGENT_KINDS:
        # the agent's host: as the agent finds it ([DEFAULT] host, else the machine's name)
        agent_host = host or sections.get("DEFAULT", {}).get("host", "").strip() or socket.gethostname()
        config = load_agent_ini(after, source=path, host=agent_host, kind=kind)
        desired_state([config])  # what Placement would refuse (e.g. reserved > total)
        configurations = config.configurations()
    return FileEdit(path, section, text, after, updates, configurations)
