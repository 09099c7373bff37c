"""The nova.conf options Nova 34's scheduling query depends on, by Nova's own names, with Nova's defaults.

Given as ``section.option=value`` strings (a CLI option, a module or config key) or read from a nova.conf's
text (the caller reads the file). Values are parsed as oslo.config parses them (BoolOpt: true/false, 1/0,
on/off, yes/no in any case; IntOpt with its minimum). An option minbw does not reproduce is an error when
given by name, and ignored in a nova.conf (which holds hundreds Nova's query does not read). Pure: no I/O.
"""

from __future__ import annotations

import configparser
import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minbw.errors import ConfigError

# nova/conf/scheduler.py, nova/conf/workarounds.py: name → (section, kind, minimum, what it does here)
OPTIONS = {
    "max_placement_results": ("scheduler", int, 1, "the limit of the allocation candidates query"),
    "limit_tenants_to_placement_aggregate": (
        "scheduler",
        bool,
        None,
        "require_tenant_aggregate: member_of the project's aggregates (metadata filter_tenant_id*=PROJECT)",
    ),
    "placement_aggregate_required_for_tenants": (
        "scheduler",
        bool,
        None,
        "require_tenant_aggregate: no valid host for a project without one",
    ),
    "query_placement_for_image_type_support": (
        "scheduler",
        bool,
        None,
        "require_image_type_support: root_required COMPUTE_IMAGE_TYPE_<disk_format>",
    ),
    "enable_isolated_aggregate_filtering": (
        "scheduler",
        bool,
        None,
        "isolate_aggregates: member_of=!in: aggregates requiring traits the server does not",
    ),
    "image_metadata_prefilter": (
        "scheduler",
        bool,
        None,
        "transform_image_metadata: root_required traits from hw_* image properties",
    ),
    "query_placement_for_routed_network_aggregates": (
        "scheduler",
        bool,
        None,
        "routed_networks_filter: member_of the ports' segment aggregates",
    ),
    "pci_in_placement": (
        "filter_scheduler",
        bool,
        None,
        "PCI aliases of the flavor as request groups (not reproduced: refused when a flavor has one)",
    ),
    "disable_fallback_pcpu_query": ("workarounds", bool, None, "no second query with VCPU for a pinned server"),
}
_TRUE = ("true", "1", "on", "yes")  # oslo_config.types.Boolean
_FALSE = ("false", "0", "off", "no")


def _known() -> str:
    return ", ".join(f"{section}.{name}" for name, (section, *_rest) in OPTIONS.items())


@dataclass(frozen=True)
class SchedulerOptions:
    """Nova's options, named as in nova.conf, defaulted as Nova 34 defaults them."""

    max_placement_results: int | None = 1000  # [scheduler] (None: set empty, no limit)
    limit_tenants_to_placement_aggregate: bool = False  # [scheduler]
    placement_aggregate_required_for_tenants: bool = False  # [scheduler]
    query_placement_for_image_type_support: bool = False  # [scheduler]
    enable_isolated_aggregate_filtering: bool = False  # [scheduler]
    image_metadata_prefilter: bool = False  # [scheduler]
    query_placement_for_routed_network_aggregates: bool = False  # [scheduler]
    pci_in_placement: bool = False  # [filter_scheduler]
    disable_fallback_pcpu_query: bool = False  # [workarounds]

    def __post_init__(self):
        for name, (_section, kind, minimum, _description) in OPTIONS.items():
            value = getattr(self, name)
            if kind is bool and not isinstance(value, bool):
                object.__setattr__(self, name, _parse(name, value, "options"))
            elif (
                kind is int
                and value is not None
                and (isinstance(value, bool) or not isinstance(value, int) or value < minimum)
            ):
                object.__setattr__(self, name, _parse(name, value, "options"))

    @classmethod
    def parse(
        cls,
        items: Iterable[str] | Mapping[str, object] = (),
        *,
        base: SchedulerOptions | None = None,
        source: str = "options",
    ) -> SchedulerOptions:
        """From ``section.option=value`` strings (or a mapping of ``section.option`` to values), over
        ``base`` (Nova's defaults)."""
        pairs: list[tuple[str, object]] = []
        if isinstance(items, Mapping):
            pairs = [(str(k), v) for k, v in items.items()]
        else:
            for item in items:
                key, sep, raw = str(item).partition("=")
                if not sep:
                    raise ConfigError(
                        f"{item!r} is not section.option=value",
                        source=source,
                        fix="write e.g. scheduler.image_metadata_prefilter=true",
                    )
                pairs.append((key.strip(), raw.strip()))
        changes = {}
        for key, value in pairs:
            section, dot, name = key.rpartition(".")
            section = section.strip("[] ")
            if name not in OPTIONS:
                raise ConfigError(
                    f"{key!r} is not a nova.conf option that Nova's scheduling query reads",
                    option=key,
                    source=source,
                    fix=f"give one of {_known()} (as section.option=value)",
                )
            want = OPTIONS[name][0]
            if not dot or section != want:
                raise ConfigError(
                    f"{name} is in nova.conf's [{want}] section",
                    option=key,
                    source=source,
                    fix=f"write {want}.{name}={value}",
                )
            changes[name] = _parse(name, value, source, option=key)
        return dataclasses.replace(base or cls(), **changes)

    @classmethod
    def from_nova_conf(
        cls, text: str, source: str = "nova.conf", base: SchedulerOptions | None = None
    ) -> SchedulerOptions:
        """From a nova.conf's text: the options above in their sections (the last value of a repeated one,
        as oslo.config takes it); every other option is ignored."""
        parser = configparser.ConfigParser(
            interpolation=None,
            strict=False,
            default_section="\0",
            comment_prefixes=("#", ";"),
            inline_comment_prefixes=None,
        )
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # configparser's documented way
        try:
            parser.read_string(text, source=source)
        except configparser.Error as e:
            raise ConfigError(
                f"cannot be read as an ini file: {e}".replace("\n", " "),
                source=source,
                fix="give nova.conf as Nova reads it ([section] headers, option = value lines)",
            ) from None
        changes = {}
        for name, (section, *_rest) in OPTIONS.items():
            if parser.has_option(section, name):
                changes[name] = _parse(name, parser.get(section, name), source, option=f"[{section}] {name}")
        return dataclasses.replace(base or cls(), **changes)

    def changed(self) -> dict[str, object]:
        """The options that differ from Nova's defaults, as ``section.option``."""
        default = SchedulerOptions()
        return {
            f"{OPTIONS[f.name][0]}.{f.name}": getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(default, f.name)
        }

    def to_dict(self) -> dict[str, object]:
        """Every option as a dict ``section.option`` → value, defaults included."""
        return {f"{OPTIONS[f.name][0]}.{f.name}": getattr(self, f.name) for f in dataclasses.fields(self)}


def _parse(name: str, value, source: str, option: str | None = None):
    section, kind, minimum, _description = OPTIONS[name]
    option = option or f"{section}.{name}"
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ConfigError(
            f"{value!r} is not a boolean",
            option=option,
            source=source,
            fix=f"write true or false (Nova also takes {'/'.join(_TRUE[1:])} and {'/'.join(_FALSE[1:])})",
        )
    if value is None or (isinstance(value, str) and not value.strip()):
        return None  # oslo.config's Integer type: an empty value is None (for this option: no limit at all)
    try:
        if isinstance(value, bool):
            raise ValueError
        number = int(str(value).strip())
    except ValueError:
        raise ConfigError(
            f"{value!r} is not a whole number",
            option=option,
            source=source,
            fix=f"write a whole number of at least {minimum}",
        ) from None
    if minimum is not None and number < minimum:
        raise ConfigError(
            f"{number} is less than its minimum {minimum}",
            option=option,
            source=source,
            fix=f"write a whole number of at least {minimum} (Nova refuses to start otherwise)",
        )
    return number
