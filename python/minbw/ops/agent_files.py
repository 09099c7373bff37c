"""Agent configuration as it is on disk: reading ini files (and option dicts) into AgentConfigs.
Planning an edit of an ini file is pure: :mod:`minbw.plan.agent_file`."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from minbw.errors import ConfigError
from minbw.model.providers import Unit, error_line, unit_subject
from minbw.neutron import naming
from minbw.neutron.agentconf import AgentConfig, ini_host, load_agent_ini, load_agent_values


def read_agent_configs(paths: Iterable[str] = (), agents: Iterable[Mapping] = (), host: str | None = None,
                       *, paths_option: str = "agent_configs") -> list[AgentConfig]:
    """Agent ini files (``paths``) and agents given as option dicts (``agent_type``, ``host`` and the
    agent's options), parsed as the agents would. ``host`` is the default agent host. The first bad one raises
    its ConfigError."""
    configs, errors = read_agent_units(paths, agents, host, paths_option=paths_option)
    if errors:
        raise errors[0][1]
    return configs


def read_agent_units(paths: Iterable[str] = (), agents: Iterable[Mapping] = (), host: str | None = None,
                     *, paths_option: str = "agent_configs") -> tuple[list[AgentConfig], list[tuple[Unit, ConfigError]]]:
    """:func:`read_agent_configs`, each file and option dict on its own: the configurations read, and each one
    that could not be (as a skipped :class:`Unit`, with its error)."""
    configs, errors = [], []
    for i, values in enumerate(agents or ()):
        values = dict(values)
        kind = values.pop("agent_type", None)
        where, agent_host = f"agents[{i}]", values.pop("host", None) or host
        try:
            if kind not in naming.INI_KINDS:
                why = "; give ML2/OVN chassis as ovn_chassis" if kind == naming.OVN else ""
                raise ConfigError(f"agent_type must be one of {', '.join(naming.INI_KINDS)}, got {kind!r}{why}",
                                  source=where)
            configs.append(load_agent_values(kind, values, agent_host, source=where))
        except ConfigError as e:
            errors.append((Unit(where, kind if kind in naming.INI_KINDS else "", agent_host, (),
                                error_line(unit_subject(where), agent_host, e)), e))
    for path in paths or ():
        text = None
        try:
            text = read_text(path, paths_option)
            configs.append(load_agent_ini(text, source=path, host=host))
        except ConfigError as e:
            file_host = host if text is None else ini_host(text, path, host)
            errors.append((Unit(path, "", file_host, (), error_line(unit_subject(path), file_host, e)), e))
    return configs, errors


def read_text(path: str, option: str) -> str:
    """A configuration file's text: UTF-8 (as oslo.config reads it); unreadable or other bytes are a clear
    error naming the file and where."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigError(e.strerror or str(e), option=option, source=path,
                          fix="give the path of a file this user can read") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ConfigError(f"not UTF-8 text: byte {e.start} (line {line}) is {data[e.start:e.start + 1]!r}",
                          option=option, source=path,
                          fix="save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8), as oslo.config reads it") from None
