"""ML2/OVN's bandwidth reporting: the chassis options Neutron's OVN placement extension reads.

Neutron 29 (``neutron/plugins/ml2/drivers/ovn/mech_driver/ovsdb/extensions/placement.py``) reads each
southbound ``Chassis`` row's ``other_config``: ``ovn-bridge-mappings`` and ``ovn-cms-options``, whose
comma-separated options include ``resource_provider_bandwidths=BR:EGR:ING;...``,
``resource_provider_inventory_defaults=KEY:VALUE;...`` and ``resource_provider_hypervisors=BR:HOST;...``.
ovn-controller copies both keys from the compute's Open vSwitch ``external_ids`` into that row.

The parsers here are Neutron's (``_parse_ovn_cms_options`` and friends), quirks included (tests run
Neutron's own functions on generated inputs): an option is found by substring and the first match wins;
its value is what lies between the first and the second ``=``; inventory entries are matched by key
substring and unknown ones are ignored; a bridge is reported only when it has a hypervisor entry and is
in the bridge mappings (or is the tunnelled-networks device). :func:`quirks` names every entry Neutron
would silently skip; :func:`chassis_config` turns a chassis into the :class:`AgentConfig` whose provider
tree is the one Neutron builds. :func:`merge_cms_options` renders the bandwidth options into an existing
``ovn-cms-options`` value without touching its other options (``enable-chassis-as-gw``,
``availability-zones=...``).

Pure, standard library only: shipped with the collection (python/build_collection.py) for the module that
configures a compute's chassis options and for the kolla-ansible filter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from ..errors import ConfigError
from . import naming
from .agentconf import (
    BANDWIDTHS,
    HYPERVISORS,
    INVENTORY,
    INVENTORY_OPTIONS,
    AgentConfig,
    parse_mappings,
    parse_rp_bandwidths,
    parse_rp_inventory_defaults,
)
from .provider_tree import desired_state

CMS_OPTIONS = "ovn-cms-options"
BRIDGE_MAPPINGS = "ovn-bridge-mappings"
# The external_ids keys ovn-controller copies into the Chassis row that matter here.
CHASSIS_KEYS = (BRIDGE_MAPPINGS, CMS_OPTIONS)
PLACEMENT_OPTIONS = (BANDWIDTHS, INVENTORY, HYPERVISORS)
# What the configure path also sets: the default hypervisor is spelled out per bridge (OVN has no default).
DEFAULT_HYPERVISOR = "resource_provider_default_hypervisor"
VALUE_OPTIONS = ("bridge_mappings", BANDWIDTHS, INVENTORY, HYPERVISORS, DEFAULT_HYPERVISOR)

SYNTAX = {
    BANDWIDTHS: "BRIDGE:EGRESS:INGRESS;... in kbps inside ovn-cms-options (';' between bridges: ',' separates "
    "the cms options)",
    INVENTORY: "KEY:VALUE;... (allocation_ratio, min_unit, max_unit, reserved, step_size)",
    HYPERVISORS: "BRIDGE:HYPERVISOR;... naming the compute node's resource provider",
    BRIDGE_MAPPINGS: "PHYSNET:BRIDGE,... (each physnet and each bridge once)",
}
# Characters a bridge or hypervisor name cannot hold in ovn-cms-options: Neutron splits on them.
_SEPARATORS = ",;:="


# ---------------------------------------------------------------- Neutron's parsers


def cms_options(raw: str | None) -> list[str]:
    """``ovn_utils.get_ovn_cms_options``: the value split on ',' and stripped (empty entries kept)."""
    return [opt.strip() for opt in (raw or "").split(",")]


def placement_option(name: str, options: list[str]) -> str | None:
    """``_parse_placement_option``: the first option containing ``name`` decides; its value is the text
    between the first and second '=' (None when it has no '=')."""
    for option in options:
        if name in option:
            parts = option.split("=")
            return parts[1] if len(parts) > 1 else None
    return None


def parse_bandwidths(options: list[str]) -> dict[str, Any]:
    """``_parse_bandwidths``: the ``resource_provider_bandwidths`` cms option's ``;``-separated items parsed as
    parse_rp_bandwidths does (a dict keyed by device; {} when absent or empty). Raises ValueError (Neutron's message) as
    parse_rp_bandwidths does."""
    value = placement_option(BANDWIDTHS, options)
    if not value:
        return {}
    return parse_rp_bandwidths(value.split(";"))


def parse_inventory_defaults(options: list[str]) -> dict[str, Any]:
    """``_parse_inventory_defaults``: an entry counts for every known key it contains (by substring);
    entries without one are ignored; a later entry for the same key wins."""
    value = placement_option(INVENTORY, options)
    if not value:
        return {}
    inventory = {}
    for entry in value.split(";"):
        for key in sorted(INVENTORY_OPTIONS):
            if key in entry:
                parts = entry.split(":")
                if len(parts) < 2:  # Neutron: IndexError
                    raise ValueError(f"Cannot parse {INVENTORY}: {entry!r} has no ':' before a value")
                inventory[key] = parts[1]
    return parse_rp_inventory_defaults(inventory)


def parse_hypervisors(options: list[str]) -> dict[str, str]:
    """``_parse_hypervisors``: the ``resource_provider_hypervisors`` cms option's ``;``-separated ``DEVICE:HYPERVISOR``
    items as a dict device → hypervisor ({} when absent or empty). Raises ValueError (Neutron's message) on a bad or
    repeated mapping."""
    value = placement_option(HYPERVISORS, options)
    if not value:
        return {}
    return parse_mappings(value.split(";"), unique_values=False)


def parse_bridge_mappings(raw: str | None) -> dict[str, str]:
    """``_parse_bridge_mappings`` (physnet → bridge; Neutron wraps each bridge in a list)."""
    return parse_mappings((raw or "").split(","))


# ---------------------------------------------------------------- a chassis


@dataclass(frozen=True)
class Chassis:
    """One chassis as Neutron's extension sees it: the southbound row's name, hostname and the two
    ``other_config`` keys (raw strings; None when the key is absent)."""

    name: str
    hostname: str
    bridge_mappings: str | None = None
    cms_options: str | None = None
    source: str = "chassis"

    def to_dict(self) -> dict[str, Any]:
        """The values ``bandwidth_providers``' ``ovn_chassis`` (and :func:`chassis_from_values`) take."""
        return {
            "name": self.name,
            "hostname": self.hostname,
            BRIDGE_MAPPINGS: self.bridge_mappings,
            CMS_OPTIONS: self.cms_options,
        }


def chassis_from_values(values: Mapping[str, Any], source: str) -> Chassis:
    """A chassis from a dict: ``name`` (or ``system-id``), ``hostname`` and the two keys, either at the
    top or under ``other_config`` / ``external_ids`` (a southbound row / an Open vSwitch row)."""
    if not isinstance(values, Mapping):
        raise ConfigError(
            f"expected a dict with name, hostname, {BRIDGE_MAPPINGS} and {CMS_OPTIONS}, got {values!r}", source=source
        )
    inner = values.get("other_config") or values.get("external_ids") or {}
    if not isinstance(inner, Mapping):
        raise ConfigError(f"other_config / external_ids: expected a dict, got {inner!r}", source=source)
    merged = {**inner, **values}
    hostname = merged.get("hostname")
    name = merged.get("name") or merged.get("system-id") or hostname
    if not hostname or not isinstance(hostname, str):
        raise ConfigError(
            "the chassis has no hostname (Chassis.hostname, or external_ids:hostname on the compute)",
            source=source,
            fix="give hostname: the name the chassis reports",
        )
    for key in CHASSIS_KEYS:
        if merged.get(key) is not None and not isinstance(merged[key], str):
            raise ConfigError(f"expected a string, got {merged[key]!r}", option=key, source=source)
    return Chassis(
        name=str(name),
        hostname=hostname,
        bridge_mappings=merged.get(BRIDGE_MAPPINGS),
        cms_options=merged.get(CMS_OPTIONS),
        source=source,
    )


@dataclass(frozen=True)
class Parsed:
    """What Neutron parses from one chassis (before it drops the bridges it cannot place)."""

    bridge_mappings: Mapping[str, str]
    bandwidths: Mapping[str, Mapping[str, int | None]]
    inventory_defaults: Mapping[str, float | int]
    hypervisors: Mapping[str, str]
    options: tuple[str, ...] = field(default=())


def parse_chassis(chassis: Chassis) -> Parsed:
    """Neutron's parse of the chassis options (``_parse_bridge_mappings``, then ``_parse_ovn_cms_options``);
    ConfigError naming the chassis and the option where Neutron's parser raises."""
    options = cms_options(chassis.cms_options)
    steps = (
        (BRIDGE_MAPPINGS, lambda: parse_bridge_mappings(chassis.bridge_mappings)),
        (BANDWIDTHS, lambda: parse_bandwidths(options)),
        (INVENTORY, lambda: parse_inventory_defaults(options)),
        (HYPERVISORS, lambda: parse_hypervisors(options)),
    )
    values: dict[str, Any] = {}
    for option, parse in steps:
        try:
            values[option] = parse()
        except ValueError as e:
            where = option if option == BRIDGE_MAPPINGS else f"{CMS_OPTIONS} {option}"
            raise ConfigError(
                str(e),
                option=where,
                source=f"chassis {chassis.name} ({chassis.source})",
                fix=f"write {option} as {SYNTAX[option]}",
            ) from None
    return Parsed(
        bridge_mappings=values[BRIDGE_MAPPINGS],
        bandwidths=values[BANDWIDTHS],
        inventory_defaults=values[INVENTORY],
        hypervisors=values[HYPERVISORS],
        options=tuple(options),
    )


def reported_bandwidths(parsed: Parsed, tunnelled_rp_name: str = naming.RP_TUNNELLED) -> dict[str, Any]:
    """``build_placement_state``'s filter: a bridge keeps its bandwidth only if it has a hypervisor entry
    and is mapped (or is the tunnelled-networks device with a hypervisor entry)."""
    devices = set(parsed.bridge_mappings.values())
    if tunnelled_rp_name in parsed.hypervisors:
        devices.add(tunnelled_rp_name)
    return {dev: bw for dev, bw in parsed.bandwidths.items() if dev in parsed.hypervisors and dev in devices}


def quirks(chassis: Chassis, parsed: Parsed, tunnelled_rp_name: str = naming.RP_TUNNELLED) -> list[str]:
    """What Neutron silently skips or ignores in this chassis's options, one sentence each."""
    who = f"chassis {chassis.name} ({chassis.hostname})"
    out = []
    reported = reported_bandwidths(parsed, tunnelled_rp_name)
    for dev in parsed.bandwidths:
        if dev in reported:
            continue
        shown = repr(dev) if dev.strip() != dev or not dev else dev
        missing = []
        if dev not in parsed.hypervisors:
            missing.append(f"no entry in {CMS_OPTIONS} {HYPERVISORS} (add {dev}:HYPERVISOR)")
        mapped = set(parsed.bridge_mappings.values()) | (
            {tunnelled_rp_name} if tunnelled_rp_name in parsed.hypervisors else set()
        )
        if dev not in mapped:
            missing.append(
                f"not in {BRIDGE_MAPPINGS} (map a physnet to it, or name it {tunnelled_rp_name} for tunnelled networks)"
                if dev
                else "an empty entry (a stray ';'?)"
            )
        out.append(
            f"{who}: Neutron silently reports no bandwidth for bridge {shown} of {BANDWIDTHS}: " + " and ".join(missing)
        )
    for name in PLACEMENT_OPTIONS:
        matching = [o for o in parsed.options if name in o]
        if matching and matching[0].partition("=")[0] != name:
            out.append(
                f"{who}: Neutron reads {name} from the option {matching[0]!r} ({CMS_OPTIONS} options are "
                f"matched by substring and the first match wins)"
            )
        if len(matching) > 1:
            out.append(
                f"{who}: {CMS_OPTIONS} has {len(matching)} options containing {name}; Neutron uses only "
                f"the first ({matching[0]!r}) and ignores {', '.join(repr(o) for o in matching[1:])}"
            )
        if matching and "=" not in matching[0]:
            out.append(f"{who}: Neutron ignores {name}: the option {matching[0]!r} has no '='")
        elif matching and matching[0].count("=") > 1:
            out.append(f"{who}: Neutron reads {name} only up to the second '=' of {matching[0]!r}")
    value = placement_option(INVENTORY, list(parsed.options)) or ""
    seen: set[str] = set()
    for entry in filter(None, value.split(";")):
        keys = {k for k in INVENTORY_OPTIONS if k in entry}
        if not keys:
            out.append(
                f"{who}: Neutron ignores the {INVENTORY} entry {entry!r} (no known key: "
                f"{', '.join(sorted(INVENTORY_OPTIONS))})"
            )
        for k in sorted(keys & seen):
            out.append(f"{who}: {INVENTORY} sets {k} more than once; Neutron uses the last ({entry!r})")
        seen |= keys
    for option in parsed.options:
        if option and "=" not in option and ":" in option:
            out.append(
                f"{who}: Neutron ignores the {CMS_OPTIONS} entry {option!r}: a ',' inside a value splits "
                f"it into separate options (use ';' between the bridges of a bandwidth option)"
            )
    return out


def chassis_config(chassis: Chassis, tunnelled_rp_name: str = naming.RP_TUNNELLED) -> tuple[AgentConfig, list[str]]:
    """The chassis as the AgentConfig whose provider tree is Neutron's (bridges Neutron skips left out),
    and a warning for each thing Neutron silently skips or ignores."""
    parsed = parse_chassis(chassis)
    config = AgentConfig(
        kind=naming.OVN,
        host=chassis.hostname,
        device_mappings=MappingProxyType({p: (b,) for p, b in parsed.bridge_mappings.items()}),
        bandwidths=MappingProxyType(reported_bandwidths(parsed, tunnelled_rp_name)),
        inventory_defaults=MappingProxyType(dict(parsed.inventory_defaults)),
        hypervisors=MappingProxyType(dict(parsed.hypervisors)),
        tunnelled_rp_name=tunnelled_rp_name,
        source=f"chassis {chassis.name} ({chassis.source})",
    )
    return config, quirks(chassis, parsed, tunnelled_rp_name)


# ---------------------------------------------------------------- configuring a chassis


def _name_problem(kind: str, name: object) -> str:
    if not isinstance(name, str) or not name:
        return f"{kind} name {name!r}: expected a non-empty string"
    bad = sorted({c for c in name if c in _SEPARATORS})
    if bad or name != name.strip():
        what = f"contains {' '.join(repr(c) for c in bad)}" if bad else "has surrounding spaces"
        return (
            f"{kind} name {name!r} {what}, which {CMS_OPTIONS} cannot carry "
            f"(Neutron splits on {' '.join(repr(c) for c in _SEPARATORS)})"
        )
    return ""


def _rate(v: object, where: str) -> str:
    if v is None:
        return ""
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ConfigError(f"{where}: expected a non-negative whole number of kbps, got {v!r}", option=BANDWIDTHS)
    return str(v)


def render_placement_options(values: Mapping[str, Any], hostname: str) -> dict[str, str | None]:
    """Structured values (as ``agent_config`` takes them for OVS) → the three cms option values
    (None: remove the option). ``resource_provider_default_hypervisor`` (else ``hostname``) is written
    out for every bandwidth bridge without a ``resource_provider_hypervisors`` entry: OVN has no default,
    and Neutron skips a bridge without one."""
    unknown = sorted(set(k for k, v in values.items() if v is not None) - set(VALUE_OPTIONS))
    if unknown:
        raise ConfigError(f"not an option of an OVN chassis ({', '.join(VALUE_OPTIONS)})", option=", ".join(unknown))
    bandwidths = values.get(BANDWIDTHS) or {}
    inventory = values.get(INVENTORY) or {}
    hypervisors = dict(values.get(HYPERVISORS) or {})
    for option, value in ((BANDWIDTHS, bandwidths), (INVENTORY, inventory), (HYPERVISORS, hypervisors)):
        if not isinstance(value, Mapping):
            raise ConfigError(f"expected a dict, got {value!r}", option=option, fix=f"give {SYNTAX[option]} as a dict")
    default = values.get(DEFAULT_HYPERVISOR) or hostname
    problems = [p for p in (_name_problem("bridge", b) for b in list(bandwidths) + list(hypervisors)) if p]
    problems += [p for p in (_name_problem("hypervisor", h) for h in list(hypervisors.values()) + [default]) if p]
    if problems:
        raise ConfigError("; ".join(dict.fromkeys(problems)), option=CMS_OPTIONS)
    for bridge in bandwidths:
        hypervisors.setdefault(bridge, default)
    items = []
    for bridge, bw in bandwidths.items():
        bw = bw or {}
        if not isinstance(bw, Mapping) or set(bw) - {"egress", "ingress"}:
            raise ConfigError(
                f"{bridge}: expected a dict with the keys egress and/or ingress, got {bw!r}", option=BANDWIDTHS
            )
        items.append(f"{bridge}:{_rate(bw.get('egress'), bridge)}:{_rate(bw.get('ingress'), bridge)}")
    unknown_keys = sorted(set(inventory) - INVENTORY_OPTIONS)
    if unknown_keys:  # Neutron's OVN parser would ignore them silently; its OVS parser refuses them
        raise ConfigError(
            "Cannot parse inventory_defaults. Unexpected options: " + ",".join(unknown_keys),
            option=INVENTORY,
            fix=f"use only {', '.join(sorted(INVENTORY_OPTIONS))}",
        )
    try:
        parse_rp_inventory_defaults({k: str(v) for k, v in inventory.items()})
    except ValueError as e:
        raise ConfigError(str(e), option=INVENTORY) from None
    return {
        BANDWIDTHS: ";".join(items) or None,
        INVENTORY: ";".join(f"{k}:{v}" for k, v in inventory.items()) or None,
        HYPERVISORS: ";".join(f"{b}:{h}" for b, h in hypervisors.items()) or None,
    }


def merge_cms_options(current: str | None, rendered: Mapping[str, str | None]) -> str | None:
    """``current`` with each of ``rendered``'s options set (in place of the first one of that name, else
    appended) or removed (None); every other option kept as written and in order. None: nothing left."""
    options = [o for o in cms_options(current) if o]
    for name, value in rendered.items():
        new = f"{name}={value}" if value is not None else None
        at = next((i for i, o in enumerate(options) if o.partition("=")[0].strip() == name), None)
        options = [o for o in options if o.partition("=")[0].strip() != name]
        if new is not None:
            options.insert(len(options) if at is None else at, new)
    return ",".join(options) or None


def render_bridge_mappings(mappings: Mapping[str, str] | None) -> str | None:
    """``bridge_mappings`` rendered as ``PHYSNET:BRIDGE,...`` (None for None). Raises ConfigError when it is not a
    dict."""
    if mappings is None:
        return None
    if not isinstance(mappings, Mapping):
        raise ConfigError(f"expected a dict physnet: bridge, got {mappings!r}", option="bridge_mappings")
    return ",".join(f"{p}:{b}" for p, b in mappings.items())


def configured_chassis(
    current: Mapping[str, str],
    values: Mapping[str, Any],
    hostname: str,
    name: str = "",
    tunnelled_rp_name: str = naming.RP_TUNNELLED,
    state: str = "present",
) -> dict[str, str | None]:
    """The chassis keys (``ovn-bridge-mappings``, ``ovn-cms-options``) that give a chassis whose keys are
    ``current`` the bandwidth ``values`` (``state=absent``: without the bandwidth options), validated as
    Neutron will read them: the parse must give back exactly the values, every bandwidth bridge must be
    reported (mapped, with a hypervisor entry), and Placement must accept the inventories. Raises
    ConfigError; pure."""
    if state == "absent":
        rendered: dict[str, str | None] = {o: None for o in PLACEMENT_OPTIONS}
        mappings = current.get(BRIDGE_MAPPINGS)
    else:
        rendered = render_placement_options(values, hostname)
        given = render_bridge_mappings(values.get("bridge_mappings"))
        mappings = given if given is not None else current.get(BRIDGE_MAPPINGS)
    for option, value in rendered.items():  # an option matched by substring would shadow ours
        if value is None:
            continue
        shadow = [
            o for o in cms_options(current.get(CMS_OPTIONS)) if option in o and o.partition("=")[0].strip() != option
        ]
        if shadow:
            raise ConfigError(
                f"the option {shadow[0]!r} contains {option!r}: Neutron matches {CMS_OPTIONS} "
                f"by substring and would read it in place of ours",
                option=CMS_OPTIONS,
                fix=f"remove or rename {shadow[0]!r}",
            )
    after = {BRIDGE_MAPPINGS: mappings, CMS_OPTIONS: merge_cms_options(current.get(CMS_OPTIONS), rendered)}
    chassis = Chassis(
        name=name or hostname,
        hostname=hostname,
        bridge_mappings=after[BRIDGE_MAPPINGS],
        cms_options=after[CMS_OPTIONS],
        source="the new options",
    )
    config = chassis_config(chassis, tunnelled_rp_name)[0]
    parsed = parse_chassis(chassis)
    if state != "absent":
        skipped = [b for b in parsed.bandwidths if b not in config.bandwidths]
        if skipped:
            raise ConfigError(
                f"Neutron would not report bridge(s) {', '.join(skipped)}: not in {BRIDGE_MAPPINGS} "
                f"({mappings or 'unset'})",
                option=BANDWIDTHS,
                fix=f"give bridge_mappings with a physnet for each bridge (or name the device {tunnelled_rp_name})",
            )
        want = parse_chassis(
            Chassis(
                name="",
                hostname=hostname,
                cms_options=",".join(f"{o}={v}" for o, v in rendered.items() if v is not None),
            )
        )
        if (parsed.bandwidths, parsed.inventory_defaults, parsed.hypervisors) != (
            want.bandwidths,
            want.inventory_defaults,
            want.hypervisors,
        ):
            raise ConfigError(
                "the merged ovn-cms-options do not read back as the values given",
                option=CMS_OPTIONS,
                fix="check the chassis's other cms options",
            )
    desired_state([config])  # what Placement would refuse (reserved > total, ...)
    return after


# ---------------------------------------------------------------- the Open vSwitch / OVN databases


def ovsdb_value(cell: Any) -> Any:
    """One cell of ``ovs-vsctl`` / ``ovn-sbctl --format=json`` output (OVSDB's JSON data: a string or
    number, ``["map", [[k, v], ...]]``, ``["set", [...]]``, ``["uuid", "..."]``) as a Python value."""
    if isinstance(cell, list) and len(cell) == 2 and cell[0] in ("map", "set", "uuid", "named-uuid"):
        if cell[0] == "map":
            return {ovsdb_value(k): ovsdb_value(v) for k, v in cell[1]}
        if cell[0] == "set":
            return [ovsdb_value(v) for v in cell[1]]
        return cell[1]
    return cell


def ovsdb_rows(document: object, source: str) -> list[dict[str, Any]]:
    """``--format=json`` output (``{"headings": [...], "data": [[...], ...]}``) → one dict per row."""
    if not (
        isinstance(document, Mapping)
        and isinstance(document.get("headings"), list)
        and isinstance(document.get("data"), list)
    ):
        raise ConfigError(
            "not the JSON of ovs-vsctl / ovn-sbctl --format=json (headings and data expected)", source=source
        )
    return [dict(zip(document["headings"], (ovsdb_value(c) for c in row))) for row in document["data"]]


def chassis_of_rows(rows: list[dict[str, Any]], source: str, hostname: str = "") -> tuple[list[Chassis], bool]:
    """Southbound ``Chassis`` rows (name, hostname, other_config) or one ``Open_vSwitch`` row
    (external_ids, as ovn-controller reads it: ``hostname`` there, else ``hostname`` given) → chassis;
    True when the rows are the southbound table (every chassis of the cloud)."""
    if rows and all("other_config" in r and "name" in r for r in rows):
        return [
            chassis_from_values(
                {"name": r["name"], "hostname": r.get("hostname") or "", **(r.get("other_config") or {})},
                f"{source} row {r['name']}",
            )
            for r in rows
        ], True
    if len(rows) == 1 and "external_ids" in rows[0]:
        ids = dict(rows[0]["external_ids"] or {})
        ids["hostname"] = ids.get("hostname") or hostname
        return [chassis_from_values(ids, source)], False
    raise ConfigError(
        "expected the southbound Chassis table (columns name, hostname, other_config) or the "
        "Open_vSwitch table (column external_ids)",
        source=source,
    )


SB_COLUMNS = ("name", "hostname", "other_config")
# ovs-vsctl/ovn-sbctl arguments after the command (and its --db=...)
SB_LIST = ("--format=json", f"--columns={','.join(SB_COLUMNS)}", "list", "Chassis")
OVS_LIST = ("--format=json", "--columns=external_ids", "list", "Open_vSwitch")


def vsctl_update_args(updates: Mapping[str, str | None]) -> list[str]:
    """ovs-vsctl arguments (after ``--no-wait``) that set (or, None, remove) these ``external_ids`` keys
    of the Open_vSwitch row in one transaction; values are quoted as OVSDB strings."""
    args: list[str] = []
    sets = [f"external_ids:{k}={json.dumps(v)}" for k, v in updates.items() if v is not None]
    if sets:
        args += ["set", "Open_vSwitch", ".", *sets]
    for k, v in updates.items():
        if v is None:
            args += (["--"] if args else []) + ["remove", "Open_vSwitch", ".", "external_ids", k]
    return args


def cms_options_override(current: str | Sequence[str] | None, values: Mapping[str, Any], hostname: str = "") -> str:
    """What a deployment tool should write as ``ovn-cms-options``: ``current`` (the options it sets itself,
    a string or a list) with the bandwidth ``values`` merged in, validated as :func:`configured_chassis`
    does (``bridge_mappings`` in ``values`` are the chassis's, used to check the bridges, not written).
    For kolla-ansible's ``ovn_cms_opts`` and the like."""
    if not isinstance(values, Mapping):
        raise ConfigError(f"expected a dict of bandwidth options, got {values!r}", option="values")
    if not hostname and not values.get(DEFAULT_HYPERVISOR):
        missing = [b for b in (values.get(BANDWIDTHS) or {}) if b not in (values.get(HYPERVISORS) or {})]
        if missing:
            raise ConfigError(
                f"no hypervisor name for bridge(s) {', '.join(missing)}",
                option=HYPERVISORS,
                fix="give resource_provider_hypervisors, resource_provider_default_hypervisor or the "
                "host name (the compute node's name in 'openstack hypervisor list')",
            )
    if not isinstance(current, str):
        current = ",".join(current or ())
    if values.get("bridge_mappings") is None:
        raise ConfigError(
            "give bridge_mappings (the chassis's ovn-bridge-mappings, as the deployment sets them) "
            "to check that Neutron reports each bridge",
            option="bridge_mappings",
        )
    after = configured_chassis({CMS_OPTIONS: current}, values, hostname or "-")
    return after[CMS_OPTIONS] or ""
