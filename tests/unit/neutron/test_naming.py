"""Names, UUIDs and traits: differential against neutron-lib."""
import uuid

from hypothesis import given, settings, strategies as st
from neutron_lib.placement import utils as place_utils

from minbw.neutron import naming
from tests.support.oracle import neutron_sync as oracle

text = st.text(min_size=1, max_size=20)


@settings(max_examples=300, deadline=None)
@given(text, text, st.sampled_from(list(naming.AGENT_KINDS)))
def test_uuids_match_neutron_lib(host, device, kind):
    k = naming.AGENT_KINDS[kind]
    assert naming.agent_rp_uuid(k, host) == str(place_utils.agent_resource_provider_uuid(k.namespace, host))
    assert naming.device_rp_uuid(k, host, device) == str(
        place_utils.device_resource_provider_uuid(k.namespace, host, device))


@settings(max_examples=300, deadline=None)
@given(text)
def test_traits_match_neutron_lib(name):
    assert naming.physnet_trait(name) == place_utils.physnet_trait(name)
    assert naming.vnic_type_trait(name) == place_utils.vnic_type_trait(name)


@settings(max_examples=200, deadline=None)
@given(st.uuids(), st.lists(st.uuids().map(str), min_size=1, max_size=3))
def test_group_uuid_matches_neutron_lib(port, rules):
    class Rule:
        def __init__(self, i):
            self.id = i
    assert naming.request_group_uuid(str(port), rules) == str(
        place_utils.resource_request_group_uuid(port, [Rule(r) for r in rules]))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_custom_trait_is_os_traits_normalize_name(name):
    import os_traits
    assert naming.custom_trait(name) == os_traits.normalize_name(name)


def test_resource_classes_are_os_resource_classes():
    import os_resource_classes as orc
    assert naming.BW_CLASSES == {"egress": orc.NET_BW_EGR_KILOBIT_PER_SEC, "ingress": orc.NET_BW_IGR_KILOBIT_PER_SEC}
    assert naming.PPS_CLASSES == {"egress": orc.NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC,
                                  "ingress": orc.NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC,
                                  "any": orc.NET_PACKET_RATE_KILOPACKET_PER_SEC}


def test_namespaces_and_vnic_types_are_the_drivers():
    from neutron.plugins.ml2.drivers.mech_sriov.mech_driver import mech_driver as sriov
    assert str(naming.AGENT_KINDS["openvswitch"].namespace) == oracle.OVS_NS
    assert str(naming.AGENT_KINDS["sriov"].namespace) == oracle.SRIOV_NS
    assert list(naming.AGENT_KINDS["sriov"].vnic_types) == list(sriov.SRIOV_SUPPORTED_VNIC_TYPES)
    assert list(naming.AGENT_KINDS["openvswitch"].vnic_types) == oracle.OVS_VNIC


def test_seed_003_vectors():
    ovs, sriov = naming.AGENT_KINDS["openvswitch"], naming.AGENT_KINDS["sriov"]
    assert naming.agent_rp_uuid(ovs, "devstack0") == "89ca1421-5117-5348-acab-6d0e2054239c"
    assert naming.agent_rp_uuid(sriov, "devstack0") == "4a8a819d-61f9-5822-8c5c-3e9c7cb942d6"
    assert naming.device_rp_uuid(sriov, "devstack0", "ens5") == "1c7e83f0-108d-5c35-ada7-7ebebbe43aad"
    assert naming.device_rp_uuid(ovs, "devstack0", "br-test") == "f9c9ce07-679d-5d72-ac5f-31720811629a"
    assert naming.device_rp_uuid(ovs, "devstack0", "br-ex") == "193134fd-464c-5545-9d20-df7d58c0166f"
    assert naming.device_rp_uuid(ovs, "host", "eth0") == "13cc0ed9-e802-5eaa-b4c7-3441855e31f2"
    assert naming.physnet_trait("physnet-0.a") == "CUSTOM_PHYSNET_PHYSNET_0_A"
    assert uuid.UUID(naming.request_group_uuid(str(uuid.uuid4()), ["a"])).version == 5


def test_ovn_kind_is_the_ovn_driver():
    """ML2/OVN's placement extension: agent type, uuid namespace and vnic types from Neutron's constants."""
    from neutron.common.ovn import constants as ovn_const
    ovn = naming.AGENT_KINDS[naming.OVN]
    assert ovn.agent_type == ovn_const.OVN_CONTROLLER_AGENT
    assert ovn.namespace == ovn_const.OVN_RP_UUID
    assert list(ovn.vnic_types) == list(ovn_const.OVN_SUPPORTED_VNIC_TYPES)
    assert naming.OVN_GATEWAY_AGENT_TYPE == ovn_const.OVN_CONTROLLER_GW_AGENT
    assert naming.AGENT_KIND_BY_TYPE[ovn_const.OVN_CONTROLLER_GW_AGENT] is ovn
