"""ML2/OVN chassis options where they live: a file, a compute's Open vSwitch database (``ovs-vsctl``), the
OVN southbound database (``ovn-sbctl``), read into :class:`minbw.neutron.ovn.Chassis` and the desired
provider tree Neutron's OVN placement extension builds from them.

The databases are read with the OVN/OVS command-line tools an operator already uses (and points at the
right database and TLS files: ``--db``, ``OVN_SB_DB``, ``-p/-c/-C``, or ``docker exec ... ovn-sbctl`` on a
containerised cloud): no OVSDB client library or schema is needed here, and the command can be any
wrapper the deployment needs.
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
from collections.abc import Iterable, Sequence

from minbw.errors import ConfigError
from minbw.model.providers import DesiredState, Unit, error_line, skipped_line
from minbw.neutron import naming, ovn
from minbw.neutron.agentconf import AgentConfig
from minbw.neutron.provider_tree import desired_state

OVN_SBCTL = "ovn-sbctl"
OVS_VSCTL = "ovs-vsctl"
TIMEOUT = 60


def command(text: str | Sequence[str] | None, default: str) -> list[str]:
    """A command given as a string (shell words: ``docker exec ovn_sb_db ovn-sbctl``) or a list."""
    if not text:
        return [default]
    return shlex.split(text) if isinstance(text, str) else [str(w) for w in text]


def run(argv: Sequence[str], what: str, timeout: float = TIMEOUT) -> str:
    """Run an OVS/OVN tool; its stdout, or ConfigError saying what failed and how to point it elsewhere."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise ConfigError(
            f"{argv[0]} not found",
            source=what,
            fix="install the OVN/Open vSwitch client tools, or give the command to run "
            "(e.g. 'docker exec ovn_sb_db ovn-sbctl')",
        ) from None
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"{shlex.join(argv)} did not answer within {timeout:.0f} s",
            source=what,
            fix="check the database address (--db) and that its server runs",
        ) from None
    if done.returncode:
        raise ConfigError(
            f"{shlex.join(argv)} failed (exit {done.returncode}): {' '.join(done.stderr.split()) or 'no message'}",
            source=what,
        )
    return done.stdout


def _db(db: str | None) -> list[str]:
    return [f"--db={db}"] if db else []


def read_southbound(db: str | None = None, sbctl: str | Sequence[str] | None = None) -> list[ovn.Chassis]:
    """Every chassis of the southbound database (what Neutron's extension reads)."""
    argv = command(sbctl, OVN_SBCTL) + _db(db) + list(ovn.SB_LIST)
    where = f"the OVN southbound database{f' {db}' if db else ''}"
    chassis, _whole_table = ovn.chassis_of_rows(ovn.ovsdb_rows(_json(run(argv, where), where), where), where)
    return chassis


def read_open_vswitch(
    db: str | None = None, vsctl: str | Sequence[str] | None = None, hostname: str | None = None
) -> ovn.Chassis:
    """This compute's chassis options from its Open vSwitch database (``external_ids``, as ovn-controller
    reads them; without ``external_ids:hostname`` the chassis is named after ``hostname`` or this machine)."""
    argv = command(vsctl, OVS_VSCTL) + _db(db) + list(ovn.OVS_LIST)
    where = f"the Open vSwitch database{f' {db}' if db else ''}"
    chassis, _whole_table = ovn.chassis_of_rows(
        ovn.ovsdb_rows(_json(run(argv, where), where), where), where, hostname=hostname or socket.gethostname()
    )
    return chassis[0]


def _json(text: str, where: str):
    try:
        return json.loads(text)
    except ValueError as e:
        raise ConfigError(f"not JSON: {e}", source=where) from None


def read_chassis_file(path: str, hostname: str | None = None) -> tuple[list[ovn.Chassis], bool]:
    """Chassis options saved in a file: the JSON of ``ovn-sbctl --format=json list Chassis`` or of
    ``ovs-vsctl --format=json list Open_vSwitch``, or a YAML/JSON list (or one dict) of chassis values
    (``name``, ``hostname``, ``ovn-bridge-mappings``, ``ovn-cms-options``). True when it is the whole
    southbound table."""
    import yaml

    try:
        with open(path) as f:
            document = yaml.safe_load(f)
    except OSError as e:
        raise ConfigError(e.strerror, option="--ovn-chassis", source=path) from None
    except yaml.YAMLError as e:
        raise ConfigError(f"neither JSON nor YAML: {' '.join(str(e).split())}", source=path) from None
    if isinstance(document, dict) and "headings" in document:
        return ovn.chassis_of_rows(ovn.ovsdb_rows(document, path), path, hostname=hostname or socket.gethostname())
    items = document if isinstance(document, list) else [document]
    return [ovn.chassis_from_values(v, f"{path}[{i}]") for i, v in enumerate(items)], False


def chassis_values(values: Iterable, option: str = "ovn_chassis") -> list[ovn.Chassis]:
    """Chassis given as option values (the ``chassis`` an ovn_chassis_config task returns), or already read."""
    return [
        v if isinstance(v, ovn.Chassis) else ovn.chassis_from_values(v, f"{option}[{i}]")
        for i, v in enumerate(values or ())
    ]


def chassis_configs(
    chassis: Iterable[ovn.Chassis], tunnelled_rp_name: str = naming.RP_TUNNELLED, *, isolate: bool = False
) -> tuple[list[AgentConfig], list[str], list[Unit]]:
    """Each chassis as the AgentConfig Neutron reports from, the warnings of what it skips, and the chassis
    that cannot be read (a chassis of a name given twice, options that do not parse): with ``isolate`` each
    skipped on its own, named with its host, what is wrong and the fix; without, the first raises ConfigError."""
    chassis = list(chassis)
    names = [c.name for c in chassis]
    configs, warnings, skipped = [], [], []
    for k, c in enumerate(chassis):
        where = f"chassis {c.name} ({c.source})"
        if names.count(c.name) > 1:
            if not isolate:
                raise ConfigError(
                    f"chassis {c.name} given more than once",
                    option="--ovn-chassis",
                    fix="give each chassis from one source",
                )
            skipped.append(
                Unit(
                    where,
                    naming.OVN,
                    c.hostname,
                    (),
                    skipped_line(
                        f"chassis {c.name}",
                        c.hostname,
                        f"given more than once (this one from {c.source}, also from "
                        f"{', '.join(o.source for j, o in enumerate(chassis) if o.name == c.name and j != k)})",
                        "give each chassis from one source",
                    ),
                )
            )
            continue
        try:
            config, said = ovn.chassis_config(c, tunnelled_rp_name)
        except ConfigError as e:
            if not isolate:
                raise
            skipped.append(Unit(where, naming.OVN, c.hostname, (), error_line(f"chassis {c.name}", c.hostname, e)))
            continue
        configs.append(config)
        warnings += said
    return configs, warnings, skipped


def desired(
    agent_configs: Iterable[AgentConfig] = (),
    chassis: Iterable[ovn.Chassis] = (),
    *,
    complete: bool = False,
    tunnelled_rp_name: str = naming.RP_TUNNELLED,
    skipped: Iterable[Unit] = (),
    isolate: bool = False,
) -> DesiredState:
    """The providers of the agents' configurations and of the OVN chassis together, each a unit of its own
    (:func:`minbw.neutron.provider_tree.desired_state`; ``skipped``: agent configurations that could not be
    read; ``isolate``: a bad unit is skipped, not raised). ``complete``: the chassis are every chassis of the
    cloud (the southbound database), so any OVN device provider in Placement that none of them describes is
    stale."""
    configs, warnings, bad = chassis_configs(chassis, tunnelled_rp_name, isolate=isolate)
    return desired_state(
        [*agent_configs, *configs],
        warnings,
        sweep_kinds=[naming.OVN] if complete else [],
        skipped=[*skipped, *bad],
        isolate=isolate,
    )


def gather(
    *,
    files: Iterable[str] = (),
    southbound: bool = False,
    sb_db: str | None = None,
    sbctl: str | Sequence[str] | None = None,
    open_vswitch: bool = False,
    ovs_db: str | None = None,
    vsctl: str | Sequence[str] | None = None,
    values: Iterable = (),
    hostname: str | None = None,
) -> tuple[list[ovn.Chassis], bool]:
    """The chassis from every source given; True when the southbound database (or a saved copy of its
    Chassis table) was among them."""
    chassis: list[ovn.Chassis] = chassis_values(values)
    complete = False
    for path in files or ():
        found, whole = read_chassis_file(path, hostname)
        chassis += found
        complete = complete or whole
    if southbound:
        chassis += read_southbound(sb_db, sbctl)
        complete = True
    if open_vswitch:
        chassis.append(read_open_vswitch(ovs_db, vsctl, hostname))
    return chassis, complete
