"""Agent configuration as it is on disk: reading ini files (and option dicts) into AgentConfigs.
Planning an edit of an ini file is pure: :mod:`minbw.plan.agent_file`."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import ConfigError
from ..neutron import naming
from ..neutron.agentconf import AgentConfig, load_agent_ini, load_agent_values


def read_agent_configs(paths: Iterable[str] = (), agents: Iterable[Mapping] = (), host: str | None = None,
                       *, paths_option: str = "agent_configs") -> list[AgentConfig]:
    """Agent ini files (``paths``) and agents given as option dicts (``agent_type``, ``host`` and the
    agent's options), parsed as the agents would. ``host`` is the default agent host."""
    configs = []
    for i, values in enumerate(agents or ()):
        values = dict(values)
        kind = values.pop("agent_type", None)
        if kind not in naming.INI_KINDS:
            why = "; give ML2/OVN chassis as ovn_chassis" if kind == naming.OVN else ""
            raise ConfigError(f"agent_type must be one of {', '.join(naming.INI_KINDS)}, got {kind!r}{why}",
                              source=f"agents[{i}]")
        configs.append(load_agent_values(kind, values, values.pop("host", None) or host, source=f"agents[{i}]"))
    for path in paths or ():
        configs.append(load_agent_ini(read_text(path, paths_option), source=path, host=host))
    return configs


def read_text(path: str, option: str) -> str:
    """A configuration file's text: UTF-8 (as oslo.config reads it); unreadable or other bytes are a clear
    error naming the file and where."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigError(e.strerror or str(e), option=option, source=path) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ConfigError(f"not UTF-8 text: byte {e.start} (line {line}) is {data[e.start:e.start + 1]!r}",
                          option=option, source=path,
                          fix="save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8), as oslo.config reads it") from None
