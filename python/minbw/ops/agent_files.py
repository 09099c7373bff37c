"""Agent configuration as it is on disk: reading ini files (and option dicts) into AgentConfigs.
Planning an edit of an ini file is pure: :mod:`minbw.plan.agent_file`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from minbw.errors import ConfigError
from minbw.model.providers import Unit, error_line, unit_subject
from minbw.neutron import naming
from minbw.neutron.agentconf import AgentConfig, UnreadAgent, conf_files, load_agent_values, read_agent_set


def read_agent_units(
    paths: Iterable[str] = (),
    agents: Iterable[Mapping] = (),
    host: str | None = None,
    *,
    config_dirs: Iterable[str] = (),
    paths_option: str = "agent_configs",
    dirs_option: str = "config_dirs",
) -> tuple[list[AgentConfig], list[tuple[Unit, ConfigError]]]:
    """Agent ini files (``paths``, the agents' ``--config-file`` files in order, and ``config_dirs``, their
    ``--config-dir``: :func:`minbw.neutron.agentconf.agents_of` tells the agents of the set) and agents given as
    option dicts (``agent_type``, ``host`` and the agent's options), parsed as the agents would, each on its own: the
    configurations read, and each one that could not be (as a skipped :class:`Unit`, with its error). ``host`` is
    the default agent host."""
    configs, errors = [], []
    for i, values in enumerate(agents or ()):
        values = dict(values)
        kind = values.pop("agent_type", None)
        where, agent_host = f"agents[{i}]", values.pop("host", None) or host
        try:
            if kind not in naming.INI_KINDS:
                why = "; give ML2/OVN chassis as ovn_chassis" if kind == naming.OVN else ""
                raise ConfigError(
                    f"agent_type must be one of {', '.join(naming.INI_KINDS)}, got {kind!r}{why}", source=where
                )
            configs.append(load_agent_values(kind, values, agent_host, source=where))
        except ConfigError as e:
            errors.append(
                (
                    Unit(
                        where,
                        kind if kind in naming.INI_KINDS else "",
                        agent_host,
                        (),
                        error_line(unit_subject(where), agent_host, e),
                    ),
                    e,
                )
            )
    files = [(path, _text(path, paths_option)) for path in paths or ()]
    dir_files = [(path, _text(path, dirs_option)) for d in config_dirs or () for path in dir_conf_files(d, dirs_option)]
    for agent in read_agent_set(files, dir_files, host):
        if isinstance(agent, UnreadAgent):
            errors.append(
                (
                    Unit(
                        agent.name,
                        agent.kind,
                        agent.host,
                        (),
                        error_line(unit_subject(agent.name), agent.host, agent.error),
                    ),
                    agent.error,
                )
            )
        else:
            configs.append(agent)
    return configs, errors


def dir_conf_files(directory: str, option: str) -> list[str]:
    """The files an agent reads of its ``--config-dir`` (``*.conf``, sorted); a directory that cannot be listed is
    an error, as for the agent."""
    try:
        return conf_files(directory, os.listdir(directory))
    except OSError as e:
        raise ConfigError(
            e.strerror or str(e),
            option=option,
            source=directory,
            fix="give the path of a directory this user can list (the agent's --config-dir)",
        ) from None


def _text(path: str, option: str) -> str | ConfigError:
    try:
        return read_text(path, option)
    except ConfigError as e:
        return e


def read_text(path: str, option: str) -> str:
    """A configuration file's text: UTF-8 (as oslo.config reads it); unreadable or other bytes are a clear
    error naming the file and where."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigError(
            e.strerror or str(e), option=option, source=path, fix="give the path of a file this user can read"
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ConfigError(
            f"not UTF-8 text: byte {e.start} (line {line}) is {data[e.start : e.start + 1]!r}",
            option=option,
            source=path,
            fix="save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8), as oslo.config reads it",
        ) from None
