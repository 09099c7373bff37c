"""Planning an edit of an agent's (or neutron-server's) ini file: the file's text and the wanted option
values in, the new text (validated as the agent and Placement would) out; the caller writes it.

Pure and standard library only, with relative imports: the collection ships this module and what it
imports as plugins/module_utils/core (python/build_collection.py), so the agent_config module runs on a
compute that has only Python >= 3.9 and Ansible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import ConfigError
from ..neutron import agentconf, naming, server_options
from ..neutron.agentconf import load_agent_ini
from ..neutron.provider_tree import desired_state


@dataclass(frozen=True)
class FileEdit:
    """An ini file's text before and after; ``updates`` the options set (None: removed);
    ``configurations`` what the agent would report in its heartbeat (None for neutron-server)."""

    path: str
    section: str
    before: str
    after: str
    updates: Mapping[str, str | None]
    configurations: Mapping[str, Any] | None

    @property
    def changed(self) -> bool:
        """Whether the edit changes the file's text."""
        return self.after != self.before

    def diff(self) -> dict[str, Any]:
        """Ansible's diff of the file: its text before and after, both headed by its path."""
        return {"before": self.before, "after": self.after, "before_header": self.path, "after_header": self.path}


def plan_agent_file(
    path: str, text: str, kind: str, values: Mapping[str, object], host: str | None = None, machine_host: str = ""
) -> FileEdit:
    """The edit that gives ``kind``'s section of the file the option ``values`` (structured, as the
    module takes them; None: leave as is), validated as the agent (or Placement) would. Raises
    ConfigError with Neutron's message; the file is not touched. The agent's host is ``host``, else
    the file's ``[DEFAULT] host``, else ``machine_host`` (the caller's ``socket.gethostname()``)."""
    given = sorted(o for o, v in values.items() if v is not None)
    if kind in server_options.SERVER_LISTS:
        if given:
            raise ConfigError(f"not an option of agent_type {kind}", option=", ".join(given))
        section = server_options.SERVER_LISTS[kind][0]
        current = agentconf.read_ini(text, source=path).get(section, {})
        updates: Mapping[str, str | None] = server_options.server_updates(kind, current)
    else:
        section = naming.AGENT_KINDS[kind].ini_section
        current = agentconf.read_ini(text, source=path).get(section, {})
        rendered = agentconf.render_options(kind, values)
        updates = {o: v for o, v in rendered.items() if not agentconf.same_value(o, current.get(o), v)}
    after = agentconf.edit_ini(text, section, updates) if updates else text
    agentconf.read_ini(after, source=path)  # the new text parses as the agent parses it
    configurations = None
    if kind in naming.INI_KINDS:
        # the agent's host: as the agent finds it ([DEFAULT] host, else the machine's name)
        config = load_agent_ini(after, source=path, host=host, kind=kind, machine_host=machine_host)
        desired_state([config])  # what Placement would refuse (e.g. reserved > total)
        configurations = config.configurations()
    return FileEdit(path, section, text, after, updates, configurations)
