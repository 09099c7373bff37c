"""The provider tree Neutron builds for agents' bandwidth and packet-rate configuration.

Pure: reproduces ``neutron.agent.common.placement_report.PlacementState`` (names,
uuid5 UUIDs, parents, traits, inventories) from :class:`AgentConfig` values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..errors import ConfigError
from ..model.providers import (
    DesiredState,
    Provider,
    ProviderSpec,
    Unit,
    error_line,
    freeze_inventories,
    inventory_problems,
    natural_key,
    normalize_inventory,
    skipped_line,
    unit_subject,
)
from . import naming

if TYPE_CHECKING:  # annotations only: the Placement reports that import this module do not parse agents' configs
    from .agentconf import AgentConfig

# the agent kinds as users know them (in warnings)
KIND_NAMES = {naming.OVN: "OVN", naming.OVS: "Open vSwitch", naming.SRIOV: "SR-IOV"}


def _inventories(
    values: Mapping[str, int | None],
    classes: Mapping[str, str],
    defaults: Mapping[str, Any],
    where: str,
    option: str,
    source: str,
) -> dict[str, Any]:
    out = {}
    for direction, rc in classes.items():
        if values.get(direction):  # unset and 0 both mean: no inventory
            out[rc] = {**defaults, "total": values[direction]}
            problems = inventory_problems(normalize_inventory(out[rc]))
            if problems:
                raise ConfigError(
                    f"Placement would refuse the {rc} inventory of {where}: {'; '.join(problems)}",
                    option=option,
                    source=source,
                    fix=f"correct {option} or the {direction} value",
                )
    return out


def agent_providers(cfg: AgentConfig) -> tuple[list[ProviderSpec], set[str]]:
    """Providers and global traits for one agent, in Neutron's order."""
    kind = cfg.agent_kind
    vnic_traits = [naming.vnic_type_trait(v) for v in kind.vnic_types]
    physnet_of = {dev: naming.physnet_trait(p) for p, devs in cfg.device_mappings.items() for dev in devs}
    physical = set(physnet_of)
    traits = (
        {physnet_of[d] for d in cfg.bandwidths if d in physnet_of} | {naming.TRAIT_NETWORK_TUNNEL} | set(vnic_traits)
    )

    specs: list[ProviderSpec] = []
    for hyp in sorted(set(cfg.hypervisors.values())):
        pp = cfg.packet_processing.get(hyp, {})
        specs.append(
            ProviderSpec(
                uuid=naming.agent_rp_uuid(kind, hyp),
                name=naming.agent_rp_name(kind, hyp),
                hypervisor=hyp,
                kind=cfg.kind,
                role="agent",
                parent_uuid=None,
                traits=frozenset(vnic_traits),
                inventories=freeze_inventories(
                    _inventories(
                        pp,
                        naming.PPS_CLASSES,
                        cfg.packet_processing_inventory_defaults,
                        f"hypervisor {hyp}",
                        "resource_provider_packet_processing_inventory_defaults",
                        cfg.source,
                    )
                ),
            )
        )
    unplaced = set(cfg.packet_processing) - set(cfg.hypervisors.values())
    if unplaced:
        raise ConfigError(
            f"packet processing is configured for hypervisor(s) {', '.join(sorted(unplaced))} but no device "
            f"maps to them, so Neutron creates no agent provider there to hold the inventory",
            option="resource_provider_packet_processing_*",
            source=cfg.source,
            fix=f"name a hypervisor from resource_provider_hypervisors / resource_provider_default_hypervisor "
            f"({', '.join(sorted(set(cfg.hypervisors.values()))) or 'none: map a device first'})",
        )

    for dev, bw in cfg.bandwidths.items():
        hyp = cfg.hypervisors[dev]
        if dev == cfg.tunnelled_rp_name:
            dev_traits = [naming.TRAIT_NETWORK_TUNNEL] + ([physnet_of[dev]] if dev in physical else [])
        else:
            dev_traits = [physnet_of[dev]]
        specs.append(
            ProviderSpec(
                uuid=naming.device_rp_uuid(kind, hyp, dev),
                name=naming.device_rp_name(kind, hyp, dev),
                hypervisor=hyp,
                kind=cfg.kind,
                role="device",
                device=dev,
                parent_uuid=naming.agent_rp_uuid(kind, hyp),
                traits=frozenset(dev_traits + vnic_traits),
                inventories=freeze_inventories(
                    _inventories(
                        bw,
                        naming.BW_CLASSES,
                        cfg.inventory_defaults,
                        f"device {dev}",
                        "resource_provider_inventory_defaults",
                        cfg.source,
                    )
                ),
            )
        )
    return specs, traits


def desired_state(
    configs: Iterable[AgentConfig],
    warnings: Iterable[str] = (),
    sweep_kinds: Iterable[str] = (),
    skipped: Iterable[Unit] = (),
    *,
    isolate: bool = False,
) -> DesiredState:
    """The providers of every configuration, each configuration (and OVN chassis) a unit of its own: one whose
    providers Placement would refuse is skipped, and so are the units that describe the same provider
    differently, or the same device twice (Neutron's result would depend on which report came last); every other
    unit is planned. Two OVN chassis that report different bridges into one hypervisor's agent provider are both
    planned, as Neutron's OVN extension writes both (with a warning). ``skipped``: units already found bad (an
    unreadable file, a chassis whose options do not parse). Without ``isolate`` the first bad unit raises its
    ConfigError instead (one configuration checked, or every one required good)."""
    warnings = list(warnings)
    units: list[tuple[AgentConfig, list[ProviderSpec], set[str]]] = []
    bad: dict[int, str] = {}  # index in units → why
    out_units: list[Unit] = list(skipped)
    for cfg in configs:
        try:
            specs, t = agent_providers(cfg)
        except ConfigError as e:
            if not isolate:
                raise
            out_units.append(_unit(cfg, skipped=error_line(unit_subject(cfg.source), cfg.host, e)))
            continue
        units.append((cfg, specs, t))
    by_uuid: dict[str, list[tuple[int, ProviderSpec]]] = {}
    for i, (_cfg, specs, _t) in enumerate(units):
        for spec in specs:
            by_uuid.setdefault(spec.uuid, []).append((i, spec))
    shared: list[tuple[ProviderSpec, list[int]]] = []  # agent providers several chassis report into
    for uuid, claims in by_uuid.items():
        owners = sorted({i for i, _spec in claims})
        if len(claims) == 1:
            continue
        spec = claims[0][1]
        shared_agent = (
            spec.role == "agent"
            and spec.kind == naming.OVN
            and len(owners) == len(claims)
            and all(c == spec for _i, c in claims)
        )
        names = [units[i][0].source for i in owners]
        if shared_agent:
            shared.append((spec, owners))
            continue
        if not isolate:
            raise ConfigError(
                f"provider {spec.name} ({uuid}) is described twice: two {spec.kind} configurations report to "
                f"hypervisor {spec.hypervisor} ({', '.join(names)})",
                source=units[owners[-1]][0].source,
                fix="give each agent once",
            )
        what = f"the same {'device' if spec.role == 'device' else 'agent'} provider {spec.name} ({uuid})" + (
            ""
            if spec.role == "device" or spec.kind == naming.OVN
            else f": two {units[owners[0]][0].agent_kind.agent_type} configurations of one host"
        )
        for i in owners:
            others = (
                ", ".join(f"{unit_subject(units[j][0].source)} (host {units[j][0].host})" for j in owners if j != i)
                or "itself, twice"
            )
            bad.setdefault(
                i,
                skipped_line(
                    unit_subject(units[i][0].source),
                    units[i][0].host,
                    f"it and {others} describe {what}, so which one Placement would get depends on which reports last",
                    f"give each {'bridge' if spec.kind == naming.OVN else 'device'} of hypervisor {spec.hypervisor} in "
                    f"one {'chassis' if spec.kind == naming.OVN else 'agent configuration'} only "
                    f"(resource_provider_hypervisors names the hypervisor each reports to)",
                ),
            )
    for spec, owners in shared:  # skipped chassis report nothing: no warning about them
        names = [units[i][0].source for i in owners if i not in bad]
        if len(names) > 1:
            warnings.append(
                f"{' and '.join(names)} all report to hypervisor {spec.hypervisor} "
                f"(resource_provider_hypervisors), so their bridges share the agent provider {spec.name}, "
                f"as Neutron's OVN extension writes them; if {spec.hypervisor} is not each one's "
                f"hypervisor, fix that chassis's ovn-cms-options"
            )
    providers: dict[str, ProviderSpec] = {}
    traits: set[str] = set()
    sweep: set[tuple[str, str]] = set()
    unswept: set[str] = set()
    for i, (cfg, specs, t) in enumerate(units):
        if i in bad:
            out_units.append(_unit(cfg, skipped=bad[i]))
            continue
        out_units.append(_unit(cfg))
        traits |= t
        if cfg.kind == naming.OVN:
            # Neutron deletes the providers of bridges that left a chassis's options; the chassis's own
            # host is where they hang when no hypervisor entry is left to name it
            sweep |= {(h, naming.agent_rp_uuid(cfg.agent_kind, h)) for h in {cfg.host, *cfg.hypervisors.values()}}
        for spec in specs:
            providers[spec.uuid] = spec
    for u in out_units:  # what a skipped unit may own: its agents (a chassis that did not parse: its host's)
        if u.skipped and u.kind in naming.AGENT_KINDS:
            unswept |= {naming.agent_rp_uuid(naming.AGENT_KINDS[u.kind], h) for h in {u.host, *u.hypervisors} if h}
    sweep_kinds = set(sweep_kinds)
    unknown = [u for u in out_units if u.skipped and not u.hypervisors and u.kind in sweep_kinds]
    if unknown:
        sweep_kinds -= {u.kind for u in unknown}
        kinds = sorted({KIND_NAMES.get(u.kind, u.kind) for u in unknown})
        warnings.append(
            f"the {', '.join(kinds)} agent providers that no configuration describes are kept this run: "
            f"{', '.join(u.name for u in sorted(unknown, key=lambda u: natural_key(u.name)))} could not "
            f"be read, and may own some of them"
        )
    # agents before devices: parents are created first
    ordered = sorted(providers.values(), key=lambda p: (p.role != "agent", p.hypervisor, p.kind, p.name))
    return DesiredState(
        providers=tuple(ordered),
        traits=frozenset(traits),
        sweep=frozenset(sweep),
        sweep_kinds=frozenset(sweep_kinds),
        warnings=tuple(warnings),
        units=tuple(out_units),
        unswept=frozenset(unswept),
        isolated=isolate,
    )


def _unit(cfg: AgentConfig, skipped: str = "") -> Unit:
    return Unit(cfg.source, cfg.kind, cfg.host, tuple(sorted(set(cfg.hypervisors.values()))), skipped)


def swept_agents(desired: DesiredState, providers: Iterable[Provider]) -> set[str]:
    """The swept agent providers: those ``desired.sweep`` names, and every agent provider (among
    ``providers``) of a kind the configuration describes completely."""
    kinds = [naming.AGENT_KINDS[k] for k in desired.sweep_kinds]
    named = {u for _name, u in desired.sweep}
    return (
        named | {p.uuid for p in providers for k in kinds if naming.is_agent_rp(k, p.name, p.uuid)}
    ) - desired.unswept
