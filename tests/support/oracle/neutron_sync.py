"""Neutron's own provider sync, run for real: the oracle for tests and the peer for benchmarks.

The agent side parses the ini values with neutron-lib's and neutron's own functions
(as ovs_neutron_agent / sriov_nic_agent do at start-up); the server side is the
placement plugin's ``_sync_placement_state`` logic: root look-up by hypervisor
name, then ``PlacementState.deferred_sync()`` executed call by call with
neutron-lib's ``PlacementAPIClient`` against a real Placement.
"""
from __future__ import annotations

import configparser

from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from neutron.agent.common import placement_report
from neutron.agent.common import utils as agent_utils
from neutron.common import utils as n_utils
from neutron.conf.plugins.ml2 import config as ml2_config
from neutron.plugins.ml2.drivers.mech_sriov.mech_driver import mech_driver as sriov_md
from neutron_lib import constants as n_const
from neutron_lib.placement import client as place_client
from neutron_lib.placement import utils as place_utils
from neutron_lib.utils import helpers
from oslo_config import cfg, types

OVS_NS = "87ee7d5c-73bb-11e8-9008-c4d987b2a692"
SRIOV_NS = "87f1895c-73bb-11e8-9008-c4d987b2a692"
OVS_VNIC = ["normal", "direct", "smart-nic", "vdpa"]  # OpenvswitchMechanismDriver.supported_vnic_types

_LIST = types.List()
_DICT = types.Dict()
_DEFAULT_INV = {"allocation_ratio": 1.0, "min_unit": 1, "step_size": 1, "reserved": 0}

try:
    ml2_config.register_ml2_plugin_opts()
except cfg.DuplicateOptError:
    pass


def agent_configurations(kind: str, section: dict, host: str, tunnelled: str = "rp_tunnelled") -> dict:
    """What the real agent reports in its heartbeat, computed with Neutron's parsers."""
    def lst(k):
        return _LIST(section.get(k, ""))

    def inv(k):
        return place_utils.parse_rp_inventory_defaults(_DICT(section[k]) if k in section else dict(_DEFAULT_INV))

    # the agents' own order of parsing and checks (ovs_neutron_agent.__init__, SriovNicAgentConfigParser.parse)
    default_hyp = section.get("resource_provider_default_hypervisor") or host
    if kind == "openvswitch":
        bridges = helpers.parse_mappings(lst("bridge_mappings"))
        rp_bw = place_utils.parse_rp_bandwidths(lst("resource_provider_bandwidths"))
        pp_without = place_utils.parse_rp_pp_without_direction(
            lst("resource_provider_packet_processing_without_direction"), host)
        pp_with = place_utils.parse_rp_pp_with_direction(
            lst("resource_provider_packet_processing_with_direction"), host)
        if pp_without and pp_with:
            raise ValueError("mutually exclusive")
        n_utils.validate_rp_bandwidth(rp_bw, set(bridges.values()), tunnelled_network_rp_name=tunnelled)
        inventory = inv("resource_provider_inventory_defaults")
        pp_inventory = inv("resource_provider_packet_processing_inventory_defaults")
        hyps = _DICT(section.get("resource_provider_hypervisors", ""))
        return {"bridge_mappings": bridges, n_const.RP_BANDWIDTHS: rp_bw,
                n_const.RP_INVENTORY_DEFAULTS: inventory,
                n_const.RP_PP_WITHOUT_DIRECTION: pp_without, n_const.RP_PP_WITH_DIRECTION: pp_with,
                n_const.RP_PP_INVENTORY_DEFAULTS: pp_inventory,
                "resource_provider_hypervisors": agent_utils.default_rp_hypervisors(
                    hyps, {k: [v] for k, v in bridges.items()}, default_hypervisor=default_hyp,
                    tunnelled_network_rp_name=tunnelled)}
    devices = helpers.parse_mappings(lst("physical_device_mappings"), unique_keys=False)
    rp_bw = place_utils.parse_rp_bandwidths(lst("resource_provider_bandwidths"))
    inventory = inv("resource_provider_inventory_defaults")
    hyps = _DICT(section.get("resource_provider_hypervisors", ""))
    hypervisors = agent_utils.default_rp_hypervisors(hyps, devices, default_hypervisor=default_hyp)
    n_utils.validate_rp_bandwidth(rp_bw, {d for ds in devices.values() for d in ds})
    return {"device_mappings": devices, n_const.RP_BANDWIDTHS: rp_bw,
            n_const.RP_INVENTORY_DEFAULTS: inventory, "resource_provider_hypervisors": hypervisors}


def agent_from_ini(text: str, host: str) -> tuple[str, dict]:
    parser = configparser.ConfigParser(interpolation=None, strict=False, default_section="\0")
    parser.optionxform = str
    parser.read_string(text)
    kind = "openvswitch" if parser.has_section("ovs") else "sriov"
    section = dict(parser.items("ovs" if kind == "openvswitch" else "sriov_nic"))
    return kind, agent_configurations(kind, section, host)


def neutron_client(url: str, token: str = "admin", **version) -> place_client.PlacementAPIClient:
    """neutron-lib's Placement client on ``url`` (``openstack_api_version=`` as the caller in Neutron passes it)."""
    conf = cfg.ConfigOpts()
    conf.register_opts([cfg.StrOpt("region_name"), cfg.StrOpt("endpoint_type", default="public"),
                        cfg.StrOpt("auth_type", default="token")], group="placement")
    conf([])
    client = place_client.PlacementAPIClient(conf, **version)
    client._client = ks_session.Session(auth=token_endpoint.Token(url, token))
    return client


def deferred_calls(client, kind: str, configurations: dict) -> list:
    """The placement plugin's _sync_placement_state, up to the deferred batch."""
    hypervisors = configurations["resource_provider_hypervisors"]
    name2uuid = {}
    for name in hypervisors.values():  # one look-up per device, as the plugin does
        name2uuid[name] = client.list_resource_providers(name=name)["resource_providers"][0]["uuid"]
    hypervisor_rps = {dev: {"name": h, "uuid": name2uuid[h]} for dev, h in hypervisors.items()}
    if kind == "openvswitch":
        ns, agent_type, vnic = OVS_NS, "Open vSwitch agent", OVS_VNIC
        device_mappings = {k: [v] for k, v in configurations["bridge_mappings"].items()}
    else:
        ns, agent_type, vnic = SRIOV_NS, "NIC Switch agent", list(sriov_md.SRIOV_SUPPORTED_VNIC_TYPES)
        device_mappings = configurations["device_mappings"]
    import uuid
    state = placement_report.PlacementState(
        rp_bandwidths=configurations[n_const.RP_BANDWIDTHS],
        rp_inventory_defaults=configurations[n_const.RP_INVENTORY_DEFAULTS],
        rp_pkt_processing=(configurations.get(n_const.RP_PP_WITHOUT_DIRECTION)
                           or configurations.get(n_const.RP_PP_WITH_DIRECTION, {})),
        rp_pkt_processing_inventory_defaults=configurations.get(n_const.RP_PP_INVENTORY_DEFAULTS, {}),
        driver_uuid_namespace=uuid.UUID(ns), agent_type=agent_type, hypervisor_rps=hypervisor_rps,
        device_mappings=device_mappings, supported_vnic_types=vnic, client=client)
    return state.deferred_sync()


def neutron_sync(client, kind: str, configurations: dict) -> int:
    """Run Neutron's sync for one agent; returns the number of deferred calls executed."""
    calls = deferred_calls(client, kind, configurations)
    for call in calls:
        call.execute()
    return len(calls)
