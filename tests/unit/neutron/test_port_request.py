"""Port resource_request: minbw.request against Neutron's own QoS plugin code.

The differential tests run neutron's QoSPlugin._get_min_bw_request_group /
_get_min_pps_request_group / _get_resource_request on real (DB-less) Neutron
objects, and Neutron's QoS drivers and policy validators for what is refused.
"""
import uuid
import warnings

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from minbw.neutron import naming
from minbw.errors import RequestError
from minbw.neutron.port_request import QOS_MIN_RULE_TYPES, Segment, build_port_request, segments_of_network
from minbw.neutron.qos import MAX_RULE_VALUE, MIN_BW, MIN_PPS, VNIC_TYPES, QosRule, min_rules
from minbw.model.requests import MODE_ANY_TRAITS, MODE_NEUTRON, PortRequest, RequestGroup

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # eventlet deprecation noise on import
    from neutron.objects import network as network_object
    from neutron.objects.qos import policy as policy_object
    from neutron.objects.qos import qos_policy_validator
    from neutron.objects.qos import rule as rule_object
    from neutron.services.qos.drivers.openvswitch import driver as ovs_driver
    from neutron.services.qos.drivers.ovn import driver as ovn_driver
    from neutron.services.qos.drivers.sriov import driver as sriov_driver
    from neutron.services.qos.qos_plugin import QoSPlugin
    from neutron_lib.api.definitions import portbindings
    from neutron_lib.db import constants as db_constants
    from neutron_lib.placement import utils as pl_utils

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DRIVERS = {naming.OVS: ovs_driver.OVSDriver.create(),
           naming.SRIOV: sriov_driver.SRIOVNICSwitchDriver.create(),
           naming.OVN: ovn_driver.OVNQosDriver.create(None)}

PORT = "9f9d8e59-2b7c-4e4f-8a0e-6c1f7a3b5d21"
BW_E = QosRule("2a4c1f8e-0d6b-4b8e-9f3a-5c7d9e1b3a50", MIN_BW, "egress", 1000)
BW_I = QosRule("6b8d2e4f-1a3c-4d5e-8f7a-9b0c1d2e3f41", MIN_BW, "ingress", 1000)
PPS = QosRule("c0ffee00-1111-4222-8333-444455556666", MIN_PPS, "any", 10)
PHYSNET0 = Segment("vlan", "physnet0")


# --- Neutron's side ---------------------------------------------------------------------------

def neutron_rule(r: QosRule):
    if r.type == MIN_BW:
        return rule_object.QosMinimumBandwidthRule(id=r.id, direction=r.direction, min_kbps=r.value)
    return rule_object.QosMinimumPacketRateRule(id=r.id, direction=r.direction, min_kpps=r.value)


def neutron_resource_request(port_id, rules, segments, vnic_type):
    """QoSPlugin's bulk-path computation with the DB reads replaced by the objects they return."""
    bw = [neutron_rule(r) for r in rules if r.type == MIN_BW]
    pps = [neutron_rule(r) for r in rules if r.type == MIN_PPS]
    segs = [network_object.NetworkSegment(network_type=s.network_type,
                                          physical_network=s.physical_network) for s in segments]
    bw_group = None
    if segs:
        bw_group = QoSPlugin._get_min_bw_request_group(None, port_id, vnic_type, None,
                                                        min_bw_rules=bw, segments=segs)
    pps_group = QoSPlugin._get_min_pps_request_group(None, port_id, vnic_type, pps)
    return QoSPlugin._get_resource_request(bw_group, pps_group)


def neutron_accepts(rules, vnic_type, kind):
    """Would Neutron let these rules (added in order to one policy) apply to such a port?"""
    try:
        objs = [neutron_rule(r) for r in rules]
    except ValueError:  # OVO field validation: the API refuses the rule
        return False
    policy = policy_object.QosPolicy(id=str(uuid.uuid4()), rules=[])
    for obj in objs:
        try:
            qos_policy_validator.check_rules_conflict(policy, obj)
            qos_policy_validator.check_min_pps_rule_conflict(policy, obj)
        except Exception:
            return False
        policy.rules.append(obj)
    driver = DRIVERS[kind]
    return not objs or (driver.is_vnic_compatible(vnic_type)
                        and all(driver.is_rule_supported(o) for o in objs))


# --- strategies -------------------------------------------------------------------------------

rule_ids = st.uuids().map(str)
values = st.integers(min_value=0, max_value=MAX_RULE_VALUE)
physnets = st.one_of(st.none(), st.just(""), st.text(min_size=1, max_size=24),
                     st.sampled_from(["physnet0", "physnet-0.a", "public", "PhysNet_1", "ñet 2"]))
segments = st.lists(st.builds(Segment, st.sampled_from(["vlan", "flat", "vxlan", "geneve"]),
                              physnets), min_size=1, max_size=4)


@st.composite
def valid_rules(draw):
    """A rule list Neutron allows in one policy: one per (type, direction); pps 'any' alone."""
    keys = [(MIN_BW, d) for d in draw(st.lists(st.sampled_from(["egress", "ingress"]), unique=True))]
    pps = draw(st.sampled_from([[], ["any"], ["egress"], ["ingress"], ["egress", "ingress"],
                                ["ingress", "egress"]]))
    keys += [(MIN_PPS, d) for d in pps]
    keys = draw(st.permutations(keys))
    return [QosRule(draw(rule_ids), t, d, draw(values)) for t, d in keys]


any_rules = st.lists(st.builds(
    QosRule, rule_ids, st.sampled_from([MIN_BW, MIN_PPS]),
    st.sampled_from(["egress", "ingress", "any"]),
    st.one_of(values, st.sampled_from([-1, MAX_RULE_VALUE + 1]))), max_size=4)


# --- differential -----------------------------------------------------------------------------

@FAST
@given(port=st.uuids().map(str), rules=valid_rules(), segs=segments,
       vnic=st.sampled_from(VNIC_TYPES))
def test_same_resource_request_as_neutron(port, rules, segs, vnic):
    ours = build_port_request(port, rules, segs, vnic)
    theirs = neutron_resource_request(port, rules, segs, vnic)
    assert (ours.to_neutron() if ours else None) == theirs
    if ours:
        assert ours.mode == MODE_NEUTRON
        # the API's JSON is what we read back
        assert PortRequest.from_neutron(theirs, port) == ours


@FAST
@given(port=st.uuids().map(str), rules=valid_rules(), segs=segments,
       vnic=st.sampled_from(VNIC_TYPES))
def test_any_traits_differs_from_neutron_only_in_the_network_trait(port, rules, segs, vnic):
    ours = build_port_request(port, rules, segs, vnic, any_traits=True)
    theirs = neutron_resource_request(port, rules, segs, vnic)
    if ours is None:
        assert theirs is None
        return
    net_traits = {naming.physnet_trait(s.physical_network) if s.physical_network
                  else naming.TRAIT_NETWORK_TUNNEL for s in segs}
    bw = next((g for g in ours.groups if dict(g.resources).keys() & set(naming.BW_CLASSES.values())),
              None)
    if bw is None or len(net_traits) == 1:
        assert ours.to_neutron() == theirs
        return
    assert ours.mode == MODE_ANY_TRAITS and ours.notes
    assert bw.required == (naming.vnic_type_trait(vnic),)
    assert bw.required_any == (tuple(sorted(net_traits)),)
    # same ids, resources and same_subtree as Neutron's
    theirs_bw = theirs["request_groups"][0]
    assert (bw.id, bw.resource_dict) == (theirs_bw["id"], theirs_bw["resources"])
    assert list(ours.same_subtree) == theirs["same_subtree"]


@FAST
@given(port=st.uuids().map(str), rules=any_rules, vnic=st.sampled_from(VNIC_TYPES),
       kind=st.sampled_from(sorted(naming.AGENT_KINDS)))
def test_refuses_what_neutron_refuses(port, rules, vnic, kind):
    try:
        build_port_request(port, rules, [PHYSNET0], vnic, agent_kind=kind)
        ours = True
    except RequestError:
        ours = False
    assert ours == neutron_accepts(rules, vnic, kind)


def test_tables_match_neutron():
    for key, driver in DRIVERS.items():
        assert tuple(driver.vnic_types) == naming.AGENT_KINDS[key].qos_vnic_types
        assert set(QOS_MIN_RULE_TYPES[key]) == set(driver.supported_rules) & {MIN_BW, MIN_PPS}
    assert VNIC_TYPES == tuple(portbindings.VNIC_TYPES)
    assert MAX_RULE_VALUE == db_constants.DB_INTEGER_MAX_VALUE


# --- fixed cases ------------------------------------------------------------------------------

def test_seed_003_port():
    pr = build_port_request(PORT, [BW_E, BW_I], [PHYSNET0], "normal", "openvswitch")
    gid = str(pl_utils.resource_request_group_uuid(uuid.UUID(PORT), [BW_E, BW_I]))
    assert pr.to_neutron() == {
        "request_groups": [{"id": gid,
                            "required": ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"],
                            "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000,
                                          "NET_BW_IGR_KILOBIT_PER_SEC": 1000}}],
        "same_subtree": [gid]}
    assert pr.to_legacy() == {"required": ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"],
                              "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000,
                                            "NET_BW_IGR_KILOBIT_PER_SEC": 1000}}
    assert not pr.notes and not pr.legacy


def test_group_id_follows_rule_order():
    a = build_port_request(PORT, [BW_E, BW_I], [PHYSNET0], "normal")
    b = build_port_request(PORT, [BW_I, BW_E], [PHYSNET0], "normal")
    assert a.groups[0].id != b.groups[0].id
    assert a.groups[0].resources == b.groups[0].resources


def test_tunnelled_and_odd_physnets():
    pr = build_port_request(PORT, [BW_E], [Segment("vxlan", None)], "normal")
    assert pr.groups[0].required[0] == "CUSTOM_NETWORK_TUNNEL_PROVIDER"
    pr = build_port_request(PORT, [BW_E], [Segment("vlan", "physnet-0.a")], "direct", "sriov")
    assert pr.groups[0].required == ("CUSTOM_PHYSNET_PHYSNET_0_A", "CUSTOM_VNIC_TYPE_DIRECT")


def test_bandwidth_and_packet_rate_share_a_subtree():
    pr = build_port_request(PORT, [BW_E, PPS], [PHYSNET0], "normal", "openvswitch")
    bw, pps = pr.groups
    assert pps.required == ("CUSTOM_VNIC_TYPE_NORMAL",)
    assert pps.resource_dict == {"NET_PACKET_RATE_KILOPACKET_PER_SEC": 10}
    assert pr.same_subtree == (bw.id, pps.id)
    with pytest.raises(RequestError, match="legacy"):
        pr.to_legacy()


def test_multi_segment_fallback_and_any_traits():
    segs = [PHYSNET0, Segment("vlan", "physnet1"), Segment("vxlan")]
    first = build_port_request(PORT, [BW_E], segs, "normal")
    assert first.mode == MODE_NEUTRON
    assert first.groups[0].required == ("CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL")
    assert "only the first" in first.notes[0]
    anyt = build_port_request(PORT, [BW_E], segs, "normal", any_traits=True)
    assert anyt.mode == MODE_ANY_TRAITS
    assert anyt.groups[0].required_any == (("CUSTOM_NETWORK_TUNNEL_PROVIDER",
                                            "CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_PHYSNET_PHYSNET1"),)
    assert anyt.groups[0].id == first.groups[0].id
    # same physnet twice is not "multi": Neutron's request, no note
    same = build_port_request(PORT, [BW_E], [PHYSNET0, PHYSNET0], "normal", any_traits=True)
    assert same.mode == MODE_NEUTRON and not same.notes
    # round trip of our extension through the request_groups format
    assert PortRequest.from_neutron(anyt.to_neutron(), PORT) == anyt


@pytest.mark.parametrize("rules, vnic, kind, match", [
    ([PPS], "direct", "sriov", "minimum_packet_rate.*cannot be served by the NIC Switch agent"),
    ([BW_E], "macvtap", "openvswitch", "vnic_type 'macvtap'"),
    ([BW_E], "smart-nic", "openvswitch", "vnic_type 'smart-nic'"),
    ([BW_E, QosRule("x", MIN_BW, "egress", 5)], "normal", None, "duplicates"),
    ([PPS, QosRule("y", MIN_PPS, "egress", 5)], "normal", None, "mix direction 'any'"),
    ([QosRule("z", MIN_BW, "any", 5)], "normal", None, "direction must be one of egress, ingress"),
    ([QosRule("z", MIN_BW, "egress", -1)], "normal", None, "min_kbps must be an integer"),
    ([BW_E], "bogus", None, "unknown vnic_type"),
])
def test_clear_errors(rules, vnic, kind, match):
    with pytest.raises(RequestError, match=match):
        build_port_request(PORT, rules, [PHYSNET0], vnic, agent_kind=kind)


def test_no_segments_and_bad_port_id():
    with pytest.raises(RequestError, match="no segments"):
        build_port_request(PORT, [BW_E], [], "normal")
    assert build_port_request(PORT, [PPS], [], "normal").groups[0].resource_dict
    with pytest.raises(RequestError, match="not a UUID"):
        build_port_request("port-1", [BW_E], [PHYSNET0], "normal")


def test_no_rules_no_request():
    assert build_port_request(PORT, [], [PHYSNET0], "normal") is None
    # incompatible vnic type does not matter without minimum rules (Neutron validates rules)
    assert build_port_request(PORT, [], [PHYSNET0], "baremetal", "sriov") is None


def test_from_neutron_formats():
    assert PortRequest.from_neutron(None) is None
    legacy = {"required": ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"],
              "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}
    pr = PortRequest.from_neutron(legacy, PORT)
    assert pr.legacy and pr.groups[0].id == PORT and pr.to_legacy() == legacy
    with pytest.raises(RequestError, match="give the port's id"):
        PortRequest.from_neutron(legacy)
    with pytest.raises(RequestError, match="not in request_groups"):
        PortRequest.from_neutron({"request_groups": [{"id": "a", "resources": {}}],
                                  "same_subtree": ["b"]})
    with pytest.raises(RequestError, match="non-negative integers"):
        PortRequest.from_neutron({"request_groups": [{"id": "a", "resources": {"X": "1"}}]})
    with pytest.raises(RequestError, match="neither"):
        PortRequest.from_neutron({"foo": 1}, PORT)


def test_api_dict_helpers():
    policy_rules = [{"id": "r1", "type": "bandwidth_limit", "max_kbps": 1},
                    {"id": "r2", "type": MIN_BW, "direction": "ingress", "min_kbps": 7},
                    {"id": "r3", "type": MIN_PPS, "direction": "any", "min_kpps": 3}]
    assert min_rules(policy_rules) == (QosRule("r2", MIN_BW, "ingress", 7),
                                       QosRule("r3", MIN_PPS, "any", 3))
    assert segments_of_network({"provider:network_type": "vlan",
                                "provider:physical_network": "physnet0"}) == (PHYSNET0,)
    assert segments_of_network({"segments": [
        {"provider:network_type": "vxlan", "provider:physical_network": None},
        {"provider:network_type": "vlan", "provider:physical_network": "physnet0"}]}) == (
        Segment("vxlan"), PHYSNET0)
    assert RequestGroup("g", {"B": 1, "A": 2}).resources == (("A", 2), ("B", 1))
