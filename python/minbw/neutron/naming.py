"""Neutron's names, UUIDs and traits for bandwidth resource providers.

Pure functions that reproduce neutron-lib's ``placement.utils`` and the ML2
mechanism drivers' constants exactly; tests compare them with neutron-lib.
Standard library only (no os-traits / os-resource-classes): the collection ships this
module to computes that have nothing but Python and Ansible (python/build_collection.py);
tests/unit/neutron/test_naming.py compares the names below with os-traits and os-resource-classes.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

OVS = "openvswitch"
SRIOV = "sriov"
OVN = "ovn"
# Agents configured by an ini file (their heartbeat carries the configuration); OVN's chassis options
# live in Open vSwitch / the OVN southbound database instead (neutron/ovn.py).
INI_KINDS = (OVS, SRIOV)


@dataclass(frozen=True)
class AgentKind:
    """What Neutron's mechanism driver declares for one agent type."""

    key: str
    agent_type: str
    binary: str
    namespace: uuid.UUID
    vnic_types: tuple[str, ...]
    # vnic types whose ports may carry minimum-bandwidth / packet-rate rules
    qos_vnic_types: tuple[str, ...]
    ini_section: str  # "" for OVN: no ini file
    mappings_option: str


AGENT_KINDS = {
    OVS: AgentKind(
        key=OVS,
        agent_type="Open vSwitch agent",
        binary="neutron-openvswitch-agent",
        namespace=uuid.UUID("87ee7d5c-73bb-11e8-9008-c4d987b2a692"),
        vnic_types=("normal", "direct", "smart-nic", "vdpa"),
        qos_vnic_types=("normal", "direct"),
        ini_section="ovs",
        mappings_option="bridge_mappings",
    ),
    SRIOV: AgentKind(
        key=SRIOV,
        agent_type="NIC Switch agent",
        binary="neutron-sriov-nic-agent",
        namespace=uuid.UUID("87f1895c-73bb-11e8-9008-c4d987b2a692"),
        vnic_types=("direct", "macvtap", "direct-physical", "accelerator-direct"),
        qos_vnic_types=("direct", "macvtap", "direct-physical"),
        ini_section="sriov_nic",
        mappings_option="physical_device_mappings",
    ),
    # ML2/OVN: neutron/common/ovn/constants.py (OVN_CONTROLLER_AGENT, OVN_RP_UUID,
    # OVN_SUPPORTED_VNIC_TYPES); the QoS driver (services/qos/drivers/ovn/driver.py) takes
    # minimum-bandwidth rules on normal ports only.
    OVN: AgentKind(
        key=OVN,
        agent_type="OVN Controller agent",
        binary="ovn-controller",
        namespace=uuid.UUID("5533233b-800c-11eb-b1f4-000056b2f5b8"),
        vnic_types=(
            "normal",
            "direct",
            "direct-physical",
            "macvtap",
            "vdpa",
            "remote-managed",
            "baremetal",
            "virtio-forwarder",
        ),
        qos_vnic_types=("normal",),
        ini_section="",
        mappings_option="ovn-bridge-mappings",
    ),
}

# A chassis with enable-chassis-as-gw shows in Neutron's agent list as the gateway agent; its providers
# are still named after "OVN Controller agent" (the placement extension's agent_type).
OVN_GATEWAY_AGENT_TYPE = "OVN Controller Gateway agent"
AGENT_KIND_BY_TYPE = {k.agent_type: k for k in AGENT_KINDS.values()}
AGENT_KIND_BY_TYPE[OVN_GATEWAY_AGENT_TYPE] = AGENT_KINDS[OVN]

RP_TUNNELLED = "rp_tunnelled"
TRAIT_NETWORK_TUNNEL = "CUSTOM_NETWORK_TUNNEL_PROVIDER"

# os_resource_classes' standard classes (Placement's names, fixed by its API)
BW_EGRESS = "NET_BW_EGR_KILOBIT_PER_SEC"
BW_INGRESS = "NET_BW_IGR_KILOBIT_PER_SEC"
PPS_ANY = "NET_PACKET_RATE_KILOPACKET_PER_SEC"
PPS_EGRESS = "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC"
PPS_INGRESS = "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC"

BW_CLASSES = {"egress": BW_EGRESS, "ingress": BW_INGRESS}
PPS_CLASSES = {"egress": PPS_EGRESS, "ingress": PPS_INGRESS, "any": PPS_ANY}
# What a port's minimum rules reserve: the classes a bandwidth guarantee is about.
GUARANTEED_CLASSES = frozenset({*BW_CLASSES.values(), *PPS_CLASSES.values()})


def custom_trait(name: str) -> str:
    """os_traits.normalize_name: CUSTOM_ + the name upper-cased, each run of other characters an underscore."""
    return "CUSTOM_" + re.sub("[^0-9A-Za-z]+", "_", name).upper()


def physnet_trait(physnet: str) -> str:
    """The physnet's trait: ``CUSTOM_PHYSNET_`` + the normalized name (os_traits.normalize_name), a str."""
    return custom_trait("PHYSNET_" + physnet)


def vnic_type_trait(vnic_type: str) -> str:
    """The vnic type's trait: ``CUSTOM_VNIC_TYPE_`` + the normalized name, a str."""
    return custom_trait("VNIC_TYPE_" + vnic_type)


def agent_rp_uuid(kind: AgentKind, hypervisor: str) -> str:
    """The agent provider's uuid, as neutron-lib's placement.utils.agent_resource_provider_uuid: uuid5 of the hypervisor
    in the kind's namespace, a str."""
    return str(uuid.uuid5(kind.namespace, hypervisor))


def device_rp_uuid(kind: AgentKind, hypervisor: str, device: str) -> str:
    """The device provider's uuid, as neutron-lib's placement.utils.device_resource_provider_uuid: uuid5 of
    ``HYPERVISOR:DEVICE`` in the kind's namespace, a str."""
    return str(uuid.uuid5(kind.namespace, f"{hypervisor}:{device}"))


def agent_rp_name(kind: AgentKind, hypervisor: str) -> str:
    """The agent provider's name, ``HYPERVISOR:AGENT TYPE``."""
    return f"{hypervisor}:{kind.agent_type}"


def device_rp_name(kind: AgentKind, hypervisor: str, device: str) -> str:
    """The device provider's name, ``HYPERVISOR:AGENT TYPE:DEVICE``."""
    return f"{hypervisor}:{kind.agent_type}:{device}"


def is_agent_rp(kind: AgentKind, name: str, uuid_: str) -> bool:
    """Is this provider ``kind``'s agent provider (name ``HYPERVISOR:AGENT TYPE`` and its uuid5)?"""
    suffix = f":{kind.agent_type}"
    return name.endswith(suffix) and agent_rp_uuid(kind, name[: -len(suffix)]) == uuid_


def request_group_uuid(port_id: str, rule_ids: list[str] | tuple[str, ...]) -> str:
    """``resource_request_group_uuid``: uuid5(port, "rule1:rule2") in rule order."""
    return str(uuid.uuid5(uuid.UUID(port_id), ":".join(rule_ids)))
