"""The provider tree Neutron builds for agents' bandwidth and packet-rate configuration.

Pure: reproduces ``neutron.agent.common.placement_report.PlacementState`` (names,
uuid5 UUIDs, parents, traits, inventories) from :class:`AgentConfig` values.
"""
from __future__ import annotations

from typing import Iterable, Mapping

from ..errors import ConfigError
from ..model.providers import (DesiredState, ProviderSpec, freeze_inventories, inventory_problems,
                               normalize_inventory)
from . import naming
from .agentconf import AgentConfig


def _inventories(values: Mapping[str, int | None], classes: Mapping[str, str], defaults: Mapping,
                 where: str, option: str, source: str) -> dict:
    out = {}
    for direction, rc in classes.items():
        if values.get(direction):  # unset and 0 both mean: no inventory
            out[rc] = {**defaults, "total": values[direction]}
            problems = inventory_problems(normalize_inventory(out[rc]))
            if problems:
                raise ConfigError(f"Placement would refuse the {rc} inventory of {where}: {'; '.join(problems)}; "
                                  f"fix {option} or the {direction} value", option=option, source=source)
    return out


def agent_providers(cfg: AgentConfig) -> tuple[list[ProviderSpec], set[str]]:
    """Providers and global traits for one agent, in Neutron's order."""
    kind = cfg.agent_kind
    vnic_traits = [naming.vnic_type_trait(v) for v in kind.vnic_types]
    physnet_of = {dev: naming.physnet_trait(p) for p, devs in cfg.device_mappings.items() for dev in devs}
    physical = set(physnet_of)
    traits = {physnet_of[d] for d in cfg.bandwidths if d in physnet_of} | {naming.TRAIT_NETWORK_TUNNEL} | set(vnic_traits)

    specs: list[ProviderSpec] = []
    for hyp in sorted(set(cfg.hypervisors.values())):
        pp = cfg.packet_processing.get(hyp, {})
        specs.append(ProviderSpec(
            uuid=naming.agent_rp_uuid(kind, hyp), name=naming.agent_rp_name(kind, hyp), hypervisor=hyp,
            kind=cfg.kind, role="agent", parent_uuid=None, traits=frozenset(vnic_traits),
            inventories=freeze_inventories(_inventories(
                pp, naming.PPS_CLASSES, cfg.packet_processing_inventory_defaults, f"hypervisor {hyp}",
                "resource_provider_packet_processing_inventory_defaults", cfg.source))))
    unplaced = set(cfg.packet_processing) - set(cfg.hypervisors.values())
    if unplaced:
        raise ConfigError(
            f"packet processing is configured for hypervisor(s) {', '.join(sorted(unplaced))} but no device "
            f"maps to them, so Neutron creates no agent provider there to hold the inventory",
            option="resource_provider_packet_processing_*", source=cfg.source,
            fix=f"name a hypervisor from resource_provider_hypervisors / resource_provider_default_hypervisor "
                f"({', '.join(sorted(set(cfg.hypervisors.values()))) or 'none: map a device first'})")

    for dev, bw in cfg.bandwidths.items():
        hyp = cfg.hypervisors[dev]
        if dev == cfg.tunnelled_rp_name:
            dev_traits = [naming.TRAIT_NETWORK_TUNNEL] + ([physnet_of[dev]] if dev in physical else [])
        else:
            dev_traits = [physnet_of[dev]]
        specs.append(ProviderSpec(
            uuid=naming.device_rp_uuid(kind, hyp, dev), name=naming.device_rp_name(kind, hyp, dev),
            hypervisor=hyp, kind=cfg.kind, role="device", device=dev,
            parent_uuid=naming.agent_rp_uuid(kind, hyp),
            traits=frozenset(dev_traits + vnic_traits),
            inventories=freeze_inventories(_inventories(
                bw, naming.BW_CLASSES, cfg.inventory_defaults, f"device {dev}",
                "resource_provider_inventory_defaults", cfg.source))))
    return specs, traits


def desired_state(configs: Iterable[AgentConfig], warnings: Iterable[str] = (),
                  sweep_kinds: Iterable[str] = ()) -> DesiredState:
    providers: dict[str, ProviderSpec] = {}
    traits: set[str] = set()
    sweep: set[tuple[str, str]] = set()
    for cfg in configs:
        specs, t = agent_providers(cfg)
        traits |= t
        if cfg.kind == naming.OVN:
            # Neutron deletes the providers of bridges that left a chassis's options; the chassis's own
            # host is where they hang when no hypervisor entry is left to name it
            sweep |= {(h, naming.agent_rp_uuid(cfg.agent_kind, h)) for h in {cfg.host, *cfg.hypervisors.values()}}
        for spec in specs:
            if spec.uuid in providers:
                raise ConfigError(
                    f"provider {spec.name} ({spec.uuid}) is described twice: two {cfg.agent_kind.agent_type} "
                    f"configurations report to hypervisor {spec.hypervisor}", source=cfg.source,
                    fix="give each agent once")
            providers[spec.uuid] = spec
    # agents before devices: parents are created first
    ordered = sorted(providers.values(), key=lambda p: (p.role != "agent", p.hypervisor, p.kind, p.name))
    return DesiredState(providers=tuple(ordered), traits=frozenset(traits), sweep=frozenset(sweep),
                        sweep_kinds=frozenset(sweep_kinds), warnings=tuple(warnings))


def swept_agents(desired: DesiredState, providers) -> set[str]:
    """The swept agent providers: those ``desired.sweep`` names, and every agent provider (among
    ``providers``) of a kind the configuration describes completely."""
    kinds = [naming.AGENT_KINDS[k] for k in desired.sweep_kinds]
    named = {u for _name, u in desired.sweep}
    return named | {p.uuid for p in providers for k in kinds if naming.is_agent_rp(k, p.name, p.uuid)}
