"""Agent configuration: parse, validate and render bandwidth options exactly as Neutron.

The parsers reproduce oslo.config's ListOpt/DictOpt value syntax, neutron-lib's
``placement.utils.parse_*`` and ``helpers.parse_mappings``, and the agents' own
checks, with Neutron's error messages (tests compare them with upstream). Errors
are raised as :class:`minbw.errors.ConfigError` naming the option and the file.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
import string
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from ..errors import ConfigError
from . import naming

INVENTORY_OPTIONS = frozenset({"allocation_ratio", "max_unit", "min_unit", "reserved", "step_size"})
INVENTORY_DEFAULTS = MappingProxyType({"allocation_ratio": 1.0, "min_unit": 1, "step_size": 1, "reserved": 0})

BANDWIDTHS = "resource_provider_bandwidths"
INVENTORY = "resource_provider_inventory_defaults"
HYPERVISORS = "resource_provider_hypervisors"
DEFAULT_HYPERVISOR = "resource_provider_default_hypervisor"
PP_WITHOUT = "resource_provider_packet_processing_without_direction"
PP_WITH = "resource_provider_packet_processing_with_direction"
PP_INVENTORY = "resource_provider_packet_processing_inventory_defaults"

# The options this project reads and writes, per agent kind (bandwidth options only).
OPTIONS = {
    naming.OVS: (
        "bridge_mappings",
        BANDWIDTHS,
        INVENTORY,
        HYPERVISORS,
        DEFAULT_HYPERVISOR,
        PP_WITHOUT,
        PP_WITH,
        PP_INVENTORY,
    ),
    naming.SRIOV: ("physical_device_mappings", BANDWIDTHS, INVENTORY, HYPERVISORS, DEFAULT_HYPERVISOR),
}

_INVENTORY_SYNTAX = (
    "KEY:VALUE,... with the keys allocation_ratio (a non-negative number), min_unit, max_unit, "
    "reserved and step_size (non-negative integers)"
)
# How each option is written: the fix a ConfigError gives after Neutron's own message.
SYNTAX = {
    "bridge_mappings": "PHYSNET:BRIDGE,... (each physnet and each bridge once)",
    "physical_device_mappings": "PHYSNET:DEVICE,... (a device under one physnet)",
    BANDWIDTHS: (
        "DEVICE:EGRESS:INGRESS,... in kbps (non-negative integers, either may be left empty), "
        "each device once and mapped in bridge_mappings / physical_device_mappings"
    ),
    INVENTORY: _INVENTORY_SYNTAX,
    HYPERVISORS: "DEVICE:HYPERVISOR,... (each device once)",
    DEFAULT_HYPERVISOR: "one hypervisor name",
    PP_WITHOUT: "[HYPERVISOR:]KPPS,... (non-negative integers, each hypervisor once)",
    PP_WITH: "[HYPERVISOR:]EGRESS:INGRESS,... in kpps (non-negative integers, each hypervisor once)",
    PP_INVENTORY: _INVENTORY_SYNTAX,
}


def syntax_fix(option: str) -> str:
    """The fix a ConfigError gives for an option: ``write OPTION as`` its syntax from ``SYNTAX`` (a str)."""
    return f"write {option} as {SYNTAX[option]}"


# ---------------------------------------------------------------- oslo.config value syntax


def parse_list(value: str) -> list[str]:
    """oslo.config ``ListOpt`` of strings (no quote handling, as ListOpt's String())."""
    s = value.strip().rstrip(",")
    return [item.strip() for item in s.split(",")] if s else []


def parse_dict(value: str) -> dict[str, str]:
    """oslo.config ``DictOpt`` of strings: a pair without ':' is joined with the next one."""
    s = value.strip()
    result: dict[str, str] = {}
    pairs = s.split(",") if s else []
    while pairs:
        pair = pairs.pop(0)
        while ":" not in pair:
            if not pairs:
                raise ValueError('Value should be NAME:VALUE pairs separated by ","')
            pair += "," + pairs.pop(0)
        key, val = (x.strip() for x in pair.split(":", 1))
        if key == "":
            raise ValueError("Key name should not be empty")
        if key in result:
            raise ValueError(f"Duplicate key {key}")
        result[key] = val
    return result


# ---------------------------------------------------------------- neutron-lib parsers


def parse_mappings(mapping_list: list[str], unique_values: bool = True, unique_keys: bool = True) -> dict[str, Any]:
    """neutron_lib.utils.helpers.parse_mappings."""
    mappings: dict[str, Any] = {}
    for mapping in mapping_list:
        mapping = mapping.strip()
        if not mapping:
            continue
        split_result = mapping.split(":")
        if len(split_result) != 2:
            raise ValueError(f"Invalid mapping: '{mapping}'")
        key = split_result[0].strip()
        if not key:
            raise ValueError(f"Missing key in mapping: '{mapping}'")
        value = split_result[1].strip()
        if not value:
            raise ValueError(f"Missing value in mapping: '{mapping}'")
        if unique_keys:
            if key in mappings:
                raise ValueError(f"Key {key} in mapping: '{mapping}' not unique")
            if unique_values and value in mappings.values():
                raise ValueError(f"Value {value} in mapping: '{mapping}' not unique")
            mappings[key] = value
        else:
            mappings.setdefault(key, [])
            if value not in mappings[key]:
                mappings[key].append(value)
    return mappings


def _parse_rate(rate_str: str) -> int | None:
    try:
        rate = None
        if rate_str:
            rate = int(rate_str)
            if rate < 0:
                raise ValueError()
    except ValueError as e:
        raise ValueError(
            f"Cannot parse string value to an integer. Expected: non-negative integer value, got: {rate_str}"
        ) from e
    return rate


def _parse_rp_options(options: list[str], keys: tuple[str, ...]) -> dict[str, dict[str, int | None]]:
    rv: dict[str, dict[str, int | None]] = {}
    for option in options:
        if ":" not in option:
            option += ":" * len(keys)
        values = option.split(":")
        if len(values) != len(keys) + 1:
            raise ValueError(f"Expected a tuple with {len(keys) + 1} values, got: {option}")
        name = values.pop(0)
        if name in rv:
            raise ValueError(f'Same resource name listed multiple times: "{name}"')
        rv[name] = dict(zip(keys, [_parse_rate(v) for v in values]))
    return rv


def parse_rp_bandwidths(bandwidths: list[str]) -> dict[str, dict[str, int | None]]:
    """neutron_lib.placement.utils.parse_rp_bandwidths: ``DEVICE:EGRESS:INGRESS`` items → a dict keyed by device of
    {"egress", "ingress"} in kbps (None: left empty). Raises ValueError (Neutron's message) on a wrong number of fields,
    a device listed twice or a rate that is not a non-negative integer."""
    try:
        return _parse_rp_options(bandwidths, ("egress", "ingress"))
    except ValueError as e:
        raise ValueError(f"Cannot parse resource_provider_bandwidths. {e}") from e


def _pp_default_hypervisor(cfg: dict[str, Any], host: str) -> None:
    if cfg.get("") and cfg.get(host):
        raise ValueError(
            f'Found configuration for "{host}" hypervisor and one without '
            "hypervisor name specified that would override it."
        )
    if cfg.get(""):
        cfg[host] = cfg.pop("")


def parse_rp_pp_with_direction(pkt_rates: list[str], host: str) -> dict[str, Any]:
    """neutron_lib.placement.utils.parse_rp_pp_with_direction: ``[HYPERVISOR]:EGRESS:INGRESS`` items → a dict keyed by
    hypervisor of {"egress", "ingress"} in kpps, the empty hypervisor name taken as ``host``. Raises ValueError
    (Neutron's message) as parse_rp_bandwidths does, or when both ``host`` and the empty name are given."""
    try:
        cfg = _parse_rp_options(pkt_rates, ("egress", "ingress"))
        _pp_default_hypervisor(cfg, host)
    except ValueError as e:
        raise ValueError(f"Cannot parse {PP_WITH}. {e}") from e
    return cfg


def parse_rp_pp_without_direction(pkt_rates: list[str], host: str) -> dict[str, Any]:
    """neutron_lib.placement.utils.parse_rp_pp_without_direction: ``[HYPERVISOR]:KPPS`` items → a dict keyed by
    hypervisor of {"any"} in kpps, the empty hypervisor name taken as ``host``. Raises ValueError (Neutron's message) as
    parse_rp_pp_with_direction does."""
    try:
        cfg = _parse_rp_options(pkt_rates, ("any",))
        _pp_default_hypervisor(cfg, host)
    except ValueError as e:
        raise ValueError(f"Cannot parse {PP_WITHOUT}. {e}") from e
    return cfg


def parse_rp_inventory_defaults(inventory_defaults: dict[str, Any]) -> dict[str, Any]:
    """neutron_lib.placement.utils.parse_rp_inventory_defaults: a copy of the dict with allocation_ratio a float and
    min_unit, max_unit, reserved and step_size ints. Raises ValueError (Neutron's message) on another key or a value
    that is negative or does not parse."""
    inventory_defaults = dict(inventory_defaults)
    unexpected = set(inventory_defaults) - INVENTORY_OPTIONS
    if unexpected:
        raise ValueError("Cannot parse inventory_defaults. Unexpected options: " + ",".join(unexpected))
    try:
        if "allocation_ratio" in inventory_defaults:
            inventory_defaults["allocation_ratio"] = float(inventory_defaults["allocation_ratio"])
            if inventory_defaults["allocation_ratio"] < 0:
                raise ValueError()
    except ValueError as e:
        raise ValueError(
            "Cannot parse inventory_defaults.allocation_ratio. "
            f"Expected: non-negative float, got: {inventory_defaults['allocation_ratio']}"
        ) from e
    for key in ("min_unit", "max_unit", "reserved", "step_size"):
        try:
            if key in inventory_defaults:
                inventory_defaults[key] = int(inventory_defaults[key])
                if inventory_defaults[key] < 0:
                    raise ValueError()
        except ValueError as e:
            raise ValueError(
                f"Cannot parse inventory_defaults.{key}. Expected: non-negative int, got: {inventory_defaults[key]}"
            ) from e
    return inventory_defaults


def validate_rp_bandwidth(
    rp_bandwidths: Mapping[str, Any], device_names: set[str], tunnelled_network_rp_name: str | None = None
) -> None:
    """neutron.common.utils.validate_rp_bandwidth."""
    if tunnelled_network_rp_name:
        device_names = device_names | {tunnelled_network_rp_name}
    for dev_name in rp_bandwidths:
        if dev_name not in device_names:
            raise ValueError(
                f"Invalid resource_provider_bandwidths: Device name {dev_name} is missing from device mappings"
            )


def default_rp_hypervisors(
    hypervisors: Mapping[str, Any],
    device_mappings: Mapping[str, Any],
    default_hypervisor: str,
    tunnelled_network_rp_name: str | None = None,
) -> dict[str, str]:
    """neutron.agent.common.utils.default_rp_hypervisors (the default hypervisor given)."""
    devices = {dev for devs in device_mappings.values() for dev in devs}
    if tunnelled_network_rp_name:
        devices.add(tunnelled_network_rp_name)
    return {device: hypervisors.get(device) or default_hypervisor for device in devices}


# ---------------------------------------------------------------- the parsed configuration


@dataclass(frozen=True)
class AgentConfig:
    """One agent's bandwidth configuration, parsed and validated (what its heartbeat reports)."""

    kind: str
    host: str
    device_mappings: Mapping[str, tuple[str, ...]]
    bandwidths: Mapping[str, Mapping[str, int | None]]
    inventory_defaults: Mapping[str, float | int]
    hypervisors: Mapping[str, str]
    packet_processing: Mapping[str, Mapping[str, int | None]] = field(default_factory=dict)
    packet_processing_inventory_defaults: Mapping[str, float | int] = field(default_factory=dict)
    tunnelled_rp_name: str = naming.RP_TUNNELLED
    source: str = "options"

    @property
    def agent_kind(self) -> naming.AgentKind:
        """The :class:`naming.AgentKind` of ``kind`` (agent type, binary, vnic types, ini section, mappings option)."""
        return naming.AGENT_KINDS[self.kind]

    def configurations(self) -> dict[str, Any]:
        """The ``configurations`` the real agent puts in its heartbeat (placement keys)."""
        conf = {
            BANDWIDTHS: {d: dict(v) for d, v in self.bandwidths.items()},
            INVENTORY: dict(self.inventory_defaults),
            HYPERVISORS: dict(self.hypervisors),
        }
        if self.kind == naming.OVS:
            conf["bridge_mappings"] = {p: devs[0] for p, devs in self.device_mappings.items()}
            # the agent reports both packet-rate options; the one not configured is empty
            directed = any("any" not in rates for rates in self.packet_processing.values())
            pp = {hyp: dict(rates) for hyp, rates in self.packet_processing.items()}
            conf[PP_WITHOUT] = {} if directed else pp
            conf[PP_WITH] = pp if directed else {}
            conf[PP_INVENTORY] = dict(self.packet_processing_inventory_defaults)
        else:
            conf["device_mappings"] = {p: list(devs) for p, devs in self.device_mappings.items()}
        return conf


_T = TypeVar("_T")


def _opt(options: Mapping[str, str | None], name: str, parser: Callable[[str], _T], source: str) -> _T:
    raw = options.get(name)
    try:
        return parser(raw if raw is not None else "")
    except ValueError as e:
        raise ConfigError(str(e), option=name, source=source, fix=syntax_fix(name)) from None


def load_agent_config(
    kind: str,
    options: Mapping[str, str | None],
    host: str | None,
    *,
    source: str = "options",
    tunnelled_rp_name: str = naming.RP_TUNNELLED,
    origins: Mapping[str, str] = MappingProxyType({}),
) -> AgentConfig:
    """Parse the agent section's raw string values as the agent does at start-up. An error names the option's
    file from ``origins`` (option → the file that set it), else ``source``."""
    if kind not in naming.INI_KINDS:
        why = (
            ": ML2/OVN is configured by chassis options, not agent options (minbw.neutron.ovn)"
            if kind == naming.OVN
            else ""
        )
        raise ConfigError(
            f"unknown agent kind {kind!r}; expected one of {sorted(naming.INI_KINDS)}{why}", source=source
        )
    if not host:
        raise ConfigError(
            "the agent host is empty: give --host (module option 'host') or [DEFAULT] host", source=source
        )

    def at(option: str) -> str:
        """The file that set ``option`` (``origins``), else ``source``."""
        return origins.get(option, source)

    if kind == naming.OVS:

        def _bridges(v: str) -> dict[str, Any]:
            try:
                return parse_mappings(parse_list(v))
            except ValueError as e:
                raise ValueError(f"Parsing bridge_mappings failed: {e}.") from e

        bridges = _opt(options, "bridge_mappings", _bridges, at("bridge_mappings"))
        device_mappings = {p: (b,) for p, b in bridges.items()}
    else:
        raw = _opt(
            options,
            "physical_device_mappings",
            lambda v: parse_mappings(parse_list(v), unique_keys=False),
            at("physical_device_mappings"),
        )
        device_mappings = {p: tuple(devs) for p, devs in raw.items()}

    # The order of checks is the agents' own, so the first error reported is theirs too.
    bandwidths = _opt(options, BANDWIDTHS, lambda v: parse_rp_bandwidths(parse_list(v)), at(BANDWIDTHS))
    devices = {d for devs in device_mappings.values() for d in devs}
    tunnelled = tunnelled_rp_name if kind == naming.OVS else None

    def validate() -> None:
        """validate_rp_bandwidth on the parsed values; returns None. Raises ConfigError naming
        resource_provider_bandwidths's file when a device is not mapped."""
        try:
            validate_rp_bandwidth(bandwidths, devices, tunnelled_network_rp_name=tunnelled)
        except ValueError as e:
            raise ConfigError(
                str(e),
                option=BANDWIDTHS,
                source=at(BANDWIDTHS),
                fix=f"list only devices mapped in {naming.AGENT_KINDS[kind].mappings_option}"
                + (f" (or {tunnelled})" if tunnelled else ""),
            ) from None

    pp: dict[str, Any] = {}
    pp_defaults: dict[str, Any] = {}
    if kind == naming.OVS:
        without = _opt(
            options, PP_WITHOUT, lambda v: parse_rp_pp_without_direction(parse_list(v), host), at(PP_WITHOUT)
        )
        with_dir = _opt(options, PP_WITH, lambda v: parse_rp_pp_with_direction(parse_list(v), host), at(PP_WITH))
        if without and with_dir:
            raise ConfigError(
                f"{PP_WITHOUT} and {PP_WITH} configuration options are mutually exclusive.",
                option=f"{PP_WITHOUT}/{PP_WITH}",
                source=at(PP_WITH),
                fix="set only one of them (remove the other)",
            )
        pp = without or with_dir
        validate()
    inventory_defaults = _inventory_defaults(options, INVENTORY, at(INVENTORY))
    if kind == naming.OVS:
        pp_defaults = _inventory_defaults(options, PP_INVENTORY, at(PP_INVENTORY))
    hyp_map = _opt(options, HYPERVISORS, parse_dict, at(HYPERVISORS))
    default_hyp = (options.get(DEFAULT_HYPERVISOR) or "").strip() or host
    hypervisors = default_rp_hypervisors(hyp_map, device_mappings, default_hyp, tunnelled_network_rp_name=tunnelled)
    if kind == naming.SRIOV:
        validate()
    return AgentConfig(
        kind=kind,
        host=host,
        device_mappings=MappingProxyType(device_mappings),
        bandwidths=MappingProxyType(bandwidths),
        inventory_defaults=MappingProxyType(inventory_defaults),
        hypervisors=MappingProxyType(hypervisors),
        packet_processing=MappingProxyType(pp),
        packet_processing_inventory_defaults=MappingProxyType(pp_defaults),
        tunnelled_rp_name=tunnelled_rp_name,
        source=source,
    )


def _inventory_defaults(options: Mapping[str, str | None], name: str, source: str) -> dict[str, Any]:
    if options.get(name) is None:
        return dict(INVENTORY_DEFAULTS)
    return _opt(options, name, lambda v: parse_rp_inventory_defaults(parse_dict(v)), source)


# ---------------------------------------------------------------- ini files, as oslo.config reads them

DEFAULT = "DEFAULT"


def group_of(section: str) -> str:
    """The option group a section header names, as oslo.config finds it: ``DEFAULT`` as written, any other name
    folded to lower case (``[SRIOV_NIC]`` is ``[sriov_nic]``; ``[default]`` is a group of its own, not DEFAULT)."""
    return section if section == DEFAULT else section.lower()


_LINES = re.compile(r"\r\n|\r|\n")  # the line ends Python's text mode reads (oslo.config opens files so)


def read_ini(text: str, source: str = "<string>") -> dict[str, dict[str, str]]:
    """Groups → raw option strings, as oslo.config's parser reads one file (``oslo_config.iniparser.BaseParser``
    and ``cfg.ConfigParser``): sections of the same group (:func:`group_of`) merged, the last assignment of an
    option winning; option names as written (oslo.config matches them case-sensitively); ``NAME = VALUE`` or
    ``NAME: VALUE``, whichever separator comes first; one pair of equal quotes around a value removed; indented
    lines continue the value (joined with newlines) until a blank line, a comment or the next option; a ``#`` or
    ``;`` starts a comment only at the start of a line."""
    groups: dict[str, dict[str, str]] = {}
    group: str | None = None
    key: str | None = None
    value: list[str] = []
    key_line = 0

    def invalid(lineno: int, message: str, line: str) -> ConfigError:
        """The ConfigError (returned, not raised) for line ``lineno`` of the file: not a valid ini file, ``message``."""
        return ConfigError(
            f"not a valid ini file: at line {lineno}, {message}: {line!r}",
            source=source,
            fix="every option must be NAME = VALUE under a [section] header, a continuation line "
            "indented right after it",
        )

    def assign(name: str) -> None:
        """Store the option being read (its lines joined) in its group; returns None. Raises ConfigError when no section
        started before it."""
        if group is None:
            raise invalid(key_line, "Section must be started before assignment", lines[key_line - 1].rstrip())
        groups[group][name] = "\n".join(value)

    lines = _LINES.split(text)
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if line.startswith((" ", "\t")):
            if key is None:
                raise invalid(lineno, "Unexpected continuation line", line)
            value.append(line.lstrip())
            continue
        if key is not None:
            assign(key)
            key = None
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise invalid(lineno, "Invalid section (must end with ])", line)
            if len(line) <= 2:
                raise invalid(lineno, "Empty section name", line)
            group = group_of(line[1:-1])
            groups.setdefault(group, {})
            continue
        colon, equal = line.find(":"), line.find("=")
        if colon < 0 and equal < 0:
            raise invalid(lineno, "No ':' or '=' found in assignment", line)
        at = equal if colon < 0 or 0 <= equal < colon else colon
        after = at + 1
        key, first = line[:at].strip(), line[after:].strip()
        if not key:
            raise invalid(lineno, "Key cannot be empty", line)
        if first and first[0] == first[-1] and first.startswith(('"', "'")):
            first = first[1:-1]
        value, key_line = [first], lineno
    if key is not None:
        assign(key)
    return groups


class _Template(string.Template):
    idpattern = r"[_a-z][\._a-z0-9]*"  # oslo.config's ConfigOpts.Template (and string.Template's IGNORECASE)


def oslo_value(raw: str, option: str, source: str) -> str:
    """A raw value as oslo.config hands it to the agent: ``$$`` and ``\\$`` are a ``$``; ``$NAME`` and ``${NAME}``
    are another option's value, which oslo.config takes from the agent's registered options and their defaults -
    minbw knows neither, so such a value is refused, naming the reference."""
    if "$" not in raw:
        return raw
    references: list[str] = []

    class Refuse(dict[str, str]):
        def __missing__(self, name: str) -> str:
            references.append(name)
            raise KeyError(name)

    value = _Template(raw.replace("\\$", "$$")).safe_substitute(Refuse())
    if references:
        raise ConfigError(
            f"${references[0]} stands for another option's value (oslo.config substitutes it), which "
            f"minbw does not read",
            option=option,
            source=source,
            fix="write the value itself (a $ that is meant as a $: $$)",
        )
    return value


@dataclass(frozen=True)
class Layers:
    """Files read one after another, as an agent reads its ``--config-file`` and ``--config-dir`` files: for each
    group and option the value of the last file that sets it (``groups``), and that file (``origins``)."""

    files: tuple[str, ...]
    groups: Mapping[str, Mapping[str, str]]
    origins: Mapping[str, Mapping[str, str]]

    def group(self, name: str) -> Mapping[str, str]:
        """The group's raw option values, as the last file that sets each has it ({}: no file has the group)."""
        return self.groups.get(name, {})

    def value(self, group: str, option: str) -> str | None:
        """The option's value as the agent gets it (None: no file sets it)."""
        raw = self.group(group).get(option)
        return None if raw is None else oslo_value(raw, option, self.origins[group][option])

    def host(self) -> str:
        """``[DEFAULT] host`` as the agent takes it (empty: no file sets it); a value the agent refuses (it does
        not start) is a ConfigError."""
        raw = self.value(DEFAULT, "host")
        if raw is None:
            return ""
        try:
            return host_address(raw)
        except ValueError as e:
            raise ConfigError(
                f"the agent host is not valid: {e}; the agent does not start",
                option="host",
                source=self.origins[DEFAULT]["host"],
                fix="set [DEFAULT] host to the host's name (letters, digits and hyphens between "
                "dots) or an IP address, or remove it (the agent's default: the machine's name)",
            ) from None


_HOST_LABEL = re.compile(r"(?!-)[A-Z0-9-]{1,63}(?<!-)$", re.IGNORECASE)


def host_address(value: str) -> str:
    """oslo.config's ``HostAddress`` type, that of ``[DEFAULT] host``: an IP address, else a host name of at most 253
    characters whose dot-separated labels are 1-63 letters, digits and hyphens (no hyphen at either end), the last
    not all digits; a trailing dot is dropped. ValueError otherwise."""
    try:
        if "%" not in value:  # a scoped IPv6 address: ipaddress takes it, oslo.config (netaddr) does not
            ipaddress.ip_address(value)
            return value
    except ValueError:
        pass
    name = value[:-1] if value.endswith(".") else value
    if (
        not value
        or len(value) > 253
        or not re.search("[a-zA-Z-]", name.split(".")[-1])
        or not all(_HOST_LABEL.match(label) for label in name.split("."))
    ):
        raise ValueError(f"{value!r} is not a valid host address (an IP address or a host name)")
    return name


def layer(files: Iterable[tuple[str, Mapping[str, Mapping[str, str]]]]) -> Layers:
    """``(path, read_ini(...))`` in the order the agent reads them → their :class:`Layers` (a later file's option
    over an earlier one's, option by option)."""
    groups: dict[str, dict[str, str]] = {}
    origins: dict[str, dict[str, str]] = {}
    paths = []
    for path, sections in files:
        paths.append(path)
        for group, options in sections.items():
            groups.setdefault(group, {}).update(options)
            origins.setdefault(group, {}).update(dict.fromkeys(options, path))
    return Layers(tuple(paths), groups, origins)


def conf_files(directory: str, names: Iterable[str]) -> list[str]:
    """What oslo.config reads of a ``--config-dir`` whose entries are ``names``: ``sorted(glob(DIR/*.conf))`` (no
    name starting with a dot; sorted as Python sorts strings)."""
    prefix = directory if directory.endswith("/") else directory + "/"  # os.path.join's
    return sorted(prefix + n for n in names if n.endswith(".conf") and not n.startswith("."))


def own_kinds(sections: Mapping[str, Mapping[str, str]]) -> tuple[str, ...]:
    """The agent kinds a file is the own file of: it sets their mappings option (``[ovs] bridge_mappings``,
    ``[sriov_nic] physical_device_mappings``)."""
    return tuple(
        k
        for k in naming.INI_KINDS
        for ak in (naming.AGENT_KINDS[k],)
        if ak.mappings_option in sections.get(ak.ini_section, {})
    )


@dataclass(frozen=True)
class AgentFiles:
    """One agent of a set of files: ``name`` its own file (what a unit of a sync is named after), ``kind`` (None:
    the files do not tell) and the files it reads."""

    name: str
    kind: str | None
    layers: Layers


def agents_of(
    files: Sequence[tuple[str, Mapping[str, Any]]], dir_files: Sequence[tuple[str, Mapping[str, Any]]] = ()
) -> list[AgentFiles]:
    """The agents a set configures (docs/operators.md, "The agent files minbw reads"): ``files`` the ``--config-file``
    files, read, in their order, ``dir_files`` the ``--config-dir`` files, read after them. A file that sets an
    agent's mappings option is that agent's own; each such file is one agent, which reads the other files - every
    file that is no agent's own (neutron.conf, overrides) in the order given, then the ``dir_files``. When no file
    of ``files`` is an agent's own, the whole set is one agent's command line (a config dir holding everything,
    as edpm-ansible writes it): an agent of each kind whose mappings option the set gives."""
    kinds_of = [own_kinds(sections) for _path, sections in files]
    shared = [i for i, kinds in enumerate(kinds_of) if not kinds]  # (indexes: 20,000 hosts' files are linear)
    agents = []
    for i, kinds in enumerate(kinds_of):
        before = bisect.bisect(shared, i)
        chosen = [files[j] for j in shared[:before]] + [files[i]] + [files[j] for j in shared[before:]]
        agents += [AgentFiles(files[i][0], kind, layer([*chosen, *dir_files])) for kind in kinds]
    if agents or not (files or dir_files):
        return agents
    whole = layer([*files, *dir_files])
    kinds = own_kinds(whole.groups)
    return [
        AgentFiles(whole.origins[naming.AGENT_KINDS[k].ini_section][naming.AGENT_KINDS[k].mappings_option], k, whole)
        for k in kinds
    ] or [AgentFiles(", ".join(whole.files), None, whole)]


def _no_kind(agent: AgentFiles) -> ConfigError:
    return ConfigError(
        "cannot tell the agent kind: expected [ovs] bridge_mappings (Open vSwitch agent) or "
        "[sriov_nic] physical_device_mappings (SR-IOV agent; the section's name in any case, as "
        "oslo.config reads it) in one of the files, found neither",
        source=agent.name,
        fix="give the agent's own ini file (openvswitch_agent.ini, sriov_agent.ini) with the others",
    )


def load_agent_files(agent: AgentFiles, host: str | None = None, machine_host: str = "") -> AgentConfig:
    """An agent's files → its AgentConfig, the values as the agent reads them.

    ``host`` overrides ``[DEFAULT] host``; without either the agent's host is ``machine_host`` (the caller's
    ``socket.gethostname()``, as the agent's own default); without that, an error naming the files.
    ``[ml2] tunnelled_network_rp_name`` is honoured. An error about an option names the file that set it."""
    if agent.kind is None:
        raise _no_kind(agent)
    layers = agent.layers
    section = naming.AGENT_KINDS[agent.kind].ini_section
    host = host or layers.host() or machine_host
    if not host:
        raise ConfigError(
            f"the agent host is not known: no file of the agent ({', '.join(layers.files)}) sets [DEFAULT] host",
            source=agent.name,
            fix="give --host (module option 'host') or set [DEFAULT] host in one of them",
        )
    tun = layers.value("ml2", "tunnelled_network_rp_name")
    options = {o: layers.value(section, o) for o in OPTIONS[agent.kind] if o in layers.group(section)}
    return load_agent_config(
        agent.kind,
        options,
        host,
        source=agent.name,
        tunnelled_rp_name=naming.RP_TUNNELLED if tun is None else tun,
        origins=layers.origins.get(section, {}),
    )


@dataclass(frozen=True)
class UnreadAgent:
    """An agent (or a file) of a set that could not be read: its unit name, kind ("" when not told), host (None
    when not told) and the error."""

    name: str
    kind: str
    host: str | None
    error: ConfigError


def read_agent_set(
    files: Sequence[tuple[str, str | ConfigError]],
    dir_files: Sequence[tuple[str, str | ConfigError]] = (),
    host: str | None = None,
    machine_host: str = "",
) -> list[AgentConfig | UnreadAgent]:
    """The agents of a set of files (:func:`agents_of`), each read on its own: ``(path, text)`` pairs (or the
    ConfigError of a file that could not be read). A file that cannot be read or parsed is one UnreadAgent, and the
    agents are read without it."""
    parsed: list[list[tuple[str, Mapping[str, Any]]]] = [[], []]
    out: list[AgentConfig | UnreadAgent] = []
    for into, given in zip(parsed, (files, dir_files)):
        for path, text in given:
            try:
                if isinstance(text, ConfigError):
                    raise text
                into.append((path, read_ini(text, path)))
            except ConfigError as e:
                out.append(UnreadAgent(path, "", host, e))
    for agent in agents_of(*parsed):
        try:
            out.append(load_agent_files(agent, host, machine_host))
        except ConfigError as e:
            try:
                agent_host = host or agent.layers.host() or machine_host or None
            except ConfigError:
                agent_host = host
            out.append(UnreadAgent(agent.name, agent.kind or "", agent_host, e))
    return out


def load_agent_ini(
    text: str, *, source: str, host: str | None = None, kind: str | None = None, machine_host: str = ""
) -> AgentConfig:
    """One agent ini file (openvswitch_agent.ini / ml2_conf.ini / sriov_agent.ini) → AgentConfig
    (:func:`load_agent_files` of it alone); ``kind`` given: that agent's section, whatever else the file has."""
    layers = layer([(source, read_ini(text, source))])
    kinds = own_kinds(layers.groups)
    if kind is None and len(kinds) > 1:
        raise ConfigError(
            "cannot tell the agent kind: the file configures both [ovs] bridge_mappings and "
            "[sriov_nic] physical_device_mappings",
            source=source,
            fix="pass the kind explicitly",
        )
    return load_agent_files(AgentFiles(source, kind or (kinds[0] if kinds else None), layers), host, machine_host)


_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")
_KEY = re.compile(r"^([^\s#;=:][^=:]*?)\s*[=:]")


def edit_ini(text: str, section: str, updates: Mapping[str, str | None]) -> str:
    """Set (or, with None, remove) options in one section (its group: ``[SRIOV_NIC]`` is edited as ``sriov_nic``);
    keep every other line as it is.

    The first occurrence of an option is replaced in place; later duplicates (which
    oslo.config would let win) and their continuation lines are removed.
    """
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    out: list[str] = []
    current = None
    done: set[str] = set()
    last_in_section = None  # index in out after the last non-blank line of the section
    skipping = False
    for line in lines:
        m = _SECTION.match(line)
        if m:
            current = group_of(m.group(1).strip())
            skipping = False
            out.append(line)
            if current == group_of(section):
                last_in_section = len(out)
            continue
        if skipping and line[:1] in (" ", "\t") and line.strip():
            continue  # continuation of a removed value
        skipping = False
        if current == group_of(section):
            k = _KEY.match(line)
            key = k.group(1).strip() if k else None
            if key is not None and key in updates:
                skipping = True
                if key not in done and updates[key] is not None:
                    out.append(f"{key} = {updates[key]}\n")
                    last_in_section = len(out)
                done.add(key)
                continue
            if line.strip():
                last_in_section = len(out) + 1
        out.append(line)
    missing = [(k, v) for k, v in updates.items() if k not in done and v is not None]
    if missing:
        new = [f"{k} = {v}\n" for k, v in missing]
        if last_in_section is None:
            if out and out[-1].strip():
                out.append("\n")
            out.append(f"[{section}]\n")
            out.extend(new)
        else:
            out[last_in_section:last_in_section] = new
    return "".join(out)


# ---------------------------------------------------------------- rendering structured values


def render_mappings(mappings: Mapping[str, str | list[str] | tuple[str, ...]]) -> str:
    """``PHYSNET:DEVICE,...`` for bridge_mappings / physical_device_mappings (one device or a sequence of them per
    physnet): a str."""
    items = []
    for physnet, devs in mappings.items():
        for dev in [devs] if isinstance(devs, str) else devs:
            items.append(f"{physnet}:{dev}")
    return ",".join(items)


def _rate(v: int | None) -> str:
    return "" if v is None else str(int(v))


def render_bandwidths(bandwidths: Mapping[str, Mapping[str, int | None] | None]) -> str:
    """``DEVICE:EGRESS:INGRESS,...`` for resource_provider_bandwidths, a None rate (or device value) left empty: a
    str."""
    return ",".join(
        f"{dev}:{_rate((bw or {}).get('egress'))}:{_rate((bw or {}).get('ingress'))}" for dev, bw in bandwidths.items()
    )


def render_dict(values: Mapping[str, object]) -> str:
    """``KEY:VALUE,...`` as an oslo.config DictOpt is written: a str."""
    return ",".join(f"{k}:{v}" for k, v in values.items())


def render_pp_with_direction(rates: Mapping[str, Mapping[str, int | None]]) -> str:
    """``HYPERVISOR:EGRESS:INGRESS,...`` for resource_provider_packet_processing_with_direction, a None rate left empty:
    a str."""
    return render_bandwidths(rates)


def render_pp_without_direction(rates: Mapping[str, int | None]) -> str:
    """``HYPERVISOR:KPPS,...`` for resource_provider_packet_processing_without_direction, a None rate left empty: a
    str."""
    return ",".join(f"{hyp}:{_rate(r)}" for hyp, r in rates.items())


# How each option's structured value is rendered, and how a raw value is parsed to compare two
# (parsed lists/dicts, so a value that differs only in spacing is the same).
RENDER: dict[str, tuple[Callable[[Any], str], Callable[[str], object]]] = {
    "bridge_mappings": (render_mappings, parse_list),
    "physical_device_mappings": (render_mappings, parse_list),
    BANDWIDTHS: (render_bandwidths, parse_list),
    INVENTORY: (render_dict, parse_dict),
    HYPERVISORS: (render_dict, parse_dict),
    DEFAULT_HYPERVISOR: (str, str.strip),
    PP_WITHOUT: (render_pp_without_direction, parse_list),
    PP_WITH: (render_pp_with_direction, parse_list),
    PP_INVENTORY: (render_dict, parse_dict),
}
_DIRECTIONAL = (BANDWIDTHS, PP_WITH)


def render_options(kind: str, values: Mapping[str, object]) -> dict[str, str | None]:
    """Structured option values (dicts as the modules take them) → ini strings; ``{}``/``''`` → None
    (remove the option). Options left out or None are not in the result. Raises ConfigError."""
    allowed = OPTIONS[kind]
    wrong = sorted(o for o, v in values.items() if v is not None and o not in allowed)
    if wrong:
        raise ConfigError(
            f"not an option of the {naming.AGENT_KINDS[kind].agent_type} ({', '.join(allowed)})",
            option=", ".join(wrong),
        )
    out: dict[str, str | None] = {}
    for option in allowed:
        value = values.get(option)
        if value is None:
            continue
        expected = str if option == DEFAULT_HYPERVISOR else Mapping
        if value != "" and not isinstance(value, expected):
            raise ConfigError(
                f"expected {'a string' if expected is str else 'a dict'}, got {value!r}",
                option=option,
                fix=f"give {option} as {'a' if expected is str else 'the dict of'} {SYNTAX[option]}",
            )
        if option in _DIRECTIONAL and isinstance(value, Mapping) and value:
            for name, rates in value.items():
                if rates is not None and (not isinstance(rates, Mapping) or set(rates) - {"egress", "ingress"}):
                    raise ConfigError(
                        f"{name}: expected a dict with the keys egress and/or ingress, got {rates!r}", option=option
                    )
        try:
            out[option] = RENDER[option][0](value) if value not in ({}, "") else None
        except (TypeError, ValueError, AttributeError) as e:
            raise ConfigError(f"cannot render {value!r}: {e}", option=option) from None
    return out


def same_value(option: str, raw: str | None, rendered: str | None) -> bool:
    """Whether the file's raw value already says what ``rendered`` says."""
    if raw is None or rendered is None:
        return raw is rendered
    parse = RENDER[option][1]
    try:
        return parse(raw) == parse(rendered)
    except ValueError:
        return False


def load_agent_values(
    kind: str, values: Mapping[str, object], host: str | None, source: str = "options"
) -> AgentConfig:
    """An AgentConfig from structured option values instead of an ini file."""
    rendered = {o: v for o, v in render_options(kind, values).items() if v is not None}
    return load_agent_config(kind, rendered, host, source=source)


def agent_values(cfg: AgentConfig) -> dict[str, Any]:
    """The agent as structured option values with its ``agent_type`` and ``host``: what
    bandwidth_providers' ``agents`` (and :func:`load_agent_values`) take, so an ini file read on a
    compute can be synced from elsewhere. Defaults are spelled out (hypervisors resolved, inventory
    defaults filled in), so the values mean the same wherever they are read."""
    values: dict[str, Any] = {"agent_type": cfg.kind, "host": cfg.host}
    if cfg.kind == naming.OVS:
        values["bridge_mappings"] = {p: devs[0] for p, devs in cfg.device_mappings.items()}
    else:
        values["physical_device_mappings"] = {p: list(devs) for p, devs in cfg.device_mappings.items()}
    values[BANDWIDTHS] = {d: dict(bw) for d, bw in cfg.bandwidths.items()}
    values[INVENTORY] = dict(cfg.inventory_defaults)
    values[HYPERVISORS] = dict(cfg.hypervisors)
    if cfg.kind == naming.OVS:
        directed = any("any" not in rates for rates in cfg.packet_processing.values())
        if directed:
            values[PP_WITH] = {hyp: dict(rates) for hyp, rates in cfg.packet_processing.items()}
        else:
            values[PP_WITHOUT] = {hyp: rates["any"] for hyp, rates in cfg.packet_processing.items()}
        values[PP_INVENTORY] = dict(cfg.packet_processing_inventory_defaults)
    return values


def config_from_report(agent_type: str, host: str, configurations: Mapping[str, Any]) -> AgentConfig:
    """The AgentConfig an agent's heartbeat ``configurations`` (as Neutron stores them: parsed values)
    stands for: what Neutron's placement plugin builds the providers from."""
    kind = naming.AGENT_KIND_BY_TYPE.get(agent_type)
    if kind is None:
        raise ConfigError(
            f"agent type {agent_type!r} reports no bandwidth; expected one of {', '.join(naming.AGENT_KIND_BY_TYPE)}",
            source=f"agent on {host}",
        )
    c = configurations
    if kind.key == naming.OVS:
        devices = {p: (b,) for p, b in (c.get("bridge_mappings") or {}).items()}
    else:
        devices = {p: tuple(d) for p, d in (c.get("device_mappings") or {}).items()}
    pp = c.get(PP_WITH) or {h: dict(r) for h, r in (c.get(PP_WITHOUT) or {}).items()}
    return AgentConfig(
        kind=kind.key,
        host=host,
        device_mappings=MappingProxyType(devices),
        bandwidths=MappingProxyType({d: dict(bw) for d, bw in (c.get(BANDWIDTHS) or {}).items()}),
        inventory_defaults=MappingProxyType(dict(c.get(INVENTORY) or INVENTORY_DEFAULTS)),
        hypervisors=MappingProxyType(dict(c.get(HYPERVISORS) or {})),
        packet_processing=MappingProxyType(pp),
        packet_processing_inventory_defaults=MappingProxyType(dict(c.get(PP_INVENTORY) or {})),
        source=f"{agent_type} on {host} (Neutron's agent list)",
    )
