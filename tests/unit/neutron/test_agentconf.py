"""Agent configuration parsing: differential against oslo.config, neutron-lib and neutron."""
from __future__ import annotations

import dataclasses
import pytest
from hypothesis import given, settings, strategies as st
from neutron_lib.placement import utils as place_utils
from neutron_lib.utils import helpers
from oslo_config import types

from minbw.neutron import agentconf as ac
from minbw.errors import ConfigError
from tests.support.oracle import neutron_sync as oracle
from minbw.neutron import naming
from minbw.neutron.provider_tree import desired_state
from minbw.reports.drift import snapshots

FAST = settings(max_examples=300, deadline=None)

# Strings in the shape of option values, with the separators and quotes that make parsing interesting.
value_text = st.text(alphabet="ab1-_., :'\"0", max_size=30)
names = st.text(alphabet="abcxyz0123-_.", min_size=0, max_size=6)
rates = st.one_of(st.just(""), st.integers(min_value=0, max_value=10**7).map(str), st.sampled_from(["-1", "x", "1.5"]))


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except ValueError as e:
        return ("error", str(e))


@FAST
@given(value_text)
def test_list_syntax_matches_oslo(text):
    assert outcome(ac.parse_list, text) == outcome(types.List(), text)


@FAST
@given(value_text)
def test_dict_syntax_matches_oslo(text):
    assert outcome(ac.parse_dict, text) == outcome(types.Dict(), text)


@FAST
@given(st.lists(st.builds(lambda n, parts: ":".join([n] + parts), names, st.lists(rates, max_size=3)), max_size=4))
def test_rp_bandwidths_match_neutron_lib(items):
    assert outcome(ac.parse_rp_bandwidths, items) == outcome(place_utils.parse_rp_bandwidths, items)


@FAST
@given(st.lists(st.builds(lambda n, parts: ":".join([n] + parts), names, st.lists(rates, max_size=3)), max_size=4),
       st.sampled_from(["host0", "devstack0"]))
def test_packet_processing_matches_neutron_lib(items, host):
    assert outcome(ac.parse_rp_pp_with_direction, items, host) == \
        outcome(place_utils.parse_rp_pp_with_direction, list(items), host)
    assert outcome(ac.parse_rp_pp_without_direction, items, host) == \
        outcome(place_utils.parse_rp_pp_without_direction, list(items), host)


@FAST
@given(st.dictionaries(st.sampled_from(["allocation_ratio", "min_unit", "max_unit", "reserved", "step_size", "bogus"]),
                       st.sampled_from(["0", "1", "2.5", "-1", "x", "16"]), max_size=4))
def test_inventory_defaults_match_neutron_lib(d):
    assert outcome(ac.parse_rp_inventory_defaults, dict(d)) == outcome(place_utils.parse_rp_inventory_defaults, dict(d))


@FAST
@given(st.lists(st.text(alphabet="ab:c ", max_size=6), max_size=4), st.booleans())
def test_mappings_match_neutron_lib(items, unique_keys):
    assert outcome(ac.parse_mappings, items, True, unique_keys) == \
        outcome(helpers.parse_mappings, items, True, unique_keys)


physnets = st.sampled_from(["physnet0", "physnet1", "public", "ph-2.x"])
devices = st.sampled_from(["br-a", "br-b", "ens5", "ens6", "rp_tunnelled"])


@st.composite
def agent_sections(draw):
    kind = draw(st.sampled_from(["openvswitch", "sriov"]))
    pairs = draw(st.lists(st.tuples(physnets, devices), max_size=3))
    section = {("bridge_mappings" if kind == "openvswitch" else "physical_device_mappings"):
               ",".join(f"{p}:{d}" for p, d in pairs)}
    bw = draw(st.lists(st.tuples(devices, rates, rates), max_size=3))
    if bw:
        section["resource_provider_bandwidths"] = ",".join(f"{d}:{e}:{i}" for d, e, i in bw)
    if draw(st.booleans()):
        section["resource_provider_inventory_defaults"] = draw(st.sampled_from(
            ["min_unit:2", "allocation_ratio:1.5,reserved:10", "step_size:x", "bogus:1", ""]))
    if draw(st.booleans()):
        section["resource_provider_hypervisors"] = draw(st.sampled_from(["br-a:hv1", "ens5:hv2,br-b:hv1", "x"]))
    if draw(st.booleans()):
        section["resource_provider_default_hypervisor"] = "hv-default"
    if kind == "openvswitch" and draw(st.booleans()):
        section[draw(st.sampled_from([ac.PP_WITH, ac.PP_WITHOUT]))] = draw(st.sampled_from(
            [":1000:1000", "host0:100", ":500", "hv1:1:2,:3:4"]))
    return kind, section


@settings(max_examples=400, deadline=None)
@given(agent_sections())
def test_agent_configuration_matches_the_agents(case):
    """What our parser reports equals the agent heartbeat's configurations, or both reject it."""
    kind, section = case
    try:
        theirs = oracle.agent_configurations(kind, section, "host0")
    except ValueError as e:
        with pytest.raises(ConfigError) as err:
            ac.load_agent_config(kind, section, "host0")
        assert err.value.neutron_message.rstrip(".") in str(e) or str(e) in str(err.value)
        return
    ours = ac.load_agent_config(kind, section, "host0").configurations()
    for key, value in ours.items():
        assert value == theirs[key], key
    # and the heartbeat Neutron stores stands for the same providers as the ini (what `minbw drift show` compares)
    agent_type = naming.AGENT_KINDS[kind].agent_type
    try:
        mine = snapshots(desired_state([ac.load_agent_config(kind, section, "host0")]))
    except ConfigError:
        with pytest.raises(ConfigError):
            desired_state([ac.config_from_report(agent_type, "host0", theirs)])
    else:
        assert snapshots(desired_state([ac.config_from_report(agent_type, "host0", theirs)])) == mine
    if kind == "openvswitch":
        assert ac.load_agent_config(kind, section, "host0").packet_processing == (
            theirs[ac.PP_WITHOUT] or theirs[ac.PP_WITH])


def test_seed_003_values_and_messages():
    ovs = ac.load_agent_ini("[ovs]\nbridge_mappings = public:br-ex,physnet0:br-test\n"
                            "resource_provider_bandwidths = br-test:1500:1500,br-ex::1\n", source="ml2_conf.ini",
                            host="devstack0")
    assert dict(ovs.bandwidths) == {"br-test": {"egress": 1500, "ingress": 1500}, "br-ex": {"egress": None, "ingress": 1}}
    with pytest.raises(ConfigError) as err:
        ac.load_agent_ini("[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = eth0:1:2:3\n",
                          source="ml2_conf.ini", host="h")
    assert str(err.value) == ("ml2_conf.ini: resource_provider_bandwidths: Cannot parse resource_provider_bandwidths. "
                              "Expected a tuple with 3 values, got: eth0:1:2:3. Fix: write resource_provider_bandwidths as "
                              "DEVICE:EGRESS:INGRESS,... in kbps (non-negative integers, either may be left empty), "
                              "each device once and mapped in bridge_mappings / physical_device_mappings.")
    with pytest.raises(ConfigError, match="Device name ens6 is missing from device mappings"):
        ac.load_agent_ini("[sriov_nic]\nphysical_device_mappings = physnet0:ens5\n"
                          "resource_provider_bandwidths = ens6:1:1\n", source="sriov_agent.ini", host="h")
    with pytest.raises(ConfigError, match="mutually exclusive"):
        ac.load_agent_config("openvswitch", {"bridge_mappings": "", ac.PP_WITH: ":1:1", ac.PP_WITHOUT: ":1"}, "h")


def test_kind_detection_and_host_errors():
    with pytest.raises(ConfigError, match="cannot tell the agent kind"):
        ac.load_agent_ini("[DEFAULT]\nhost = x\n", source="empty.ini")
    with pytest.raises(ConfigError, match=r"the agent host is not known: no file of the agent \(ovs.ini\) sets "
                                          r"\[DEFAULT\] host\. Fix: give --host"):
        ac.load_agent_ini("[ovs]\nbridge_mappings = a:b\n", source="ovs.ini")
    cfg = ac.load_agent_ini("[DEFAULT]\nhost = h1\n[ovs]\nbridge_mappings = a:b\n", source="ovs.ini")
    assert cfg.host == "h1" and dict(cfg.hypervisors) == {"b": "h1", "rp_tunnelled": "h1"}


ORIGINAL = """# managed by hand
[DEFAULT]
debug = True

[ovs]
# the bridges
bridge_mappings = physnet0:br-test
resource_provider_bandwidths = br-test:1:1
  , continued
local_ip = 10.0.0.1
resource_provider_bandwidths = duplicate-later

[agent]
tunnel_types = vxlan
"""


def test_edit_ini_replaces_in_place_and_keeps_the_rest():
    out = ac.edit_ini(ORIGINAL, "ovs", {"resource_provider_bandwidths": "br-test:1500:1500",
                                        "resource_provider_hypervisors": "br-test:hv1"})
    assert out == ORIGINAL.replace("resource_provider_bandwidths = br-test:1:1\n  , continued\n",
                                   "resource_provider_bandwidths = br-test:1500:1500\n").replace(
        "local_ip = 10.0.0.1\nresource_provider_bandwidths = duplicate-later\n",
        "local_ip = 10.0.0.1\nresource_provider_hypervisors = br-test:hv1\n")
    assert ac.edit_ini(out, "ovs", {"resource_provider_bandwidths": "br-test:1500:1500"}) == out  # idempotent
    assert ac.read_ini(out)["ovs"]["resource_provider_bandwidths"] == "br-test:1500:1500"
    removed = ac.edit_ini(out, "ovs", {"resource_provider_hypervisors": None})
    assert "resource_provider_hypervisors" not in removed and "[agent]\ntunnel_types = vxlan\n" in removed


@FAST
@given(st.dictionaries(st.sampled_from(["a", "b", "bridge_mappings"]), st.one_of(st.none(), st.sampled_from(["1", "x:y"])),
                       max_size=3), st.sampled_from(["ovs", "DEFAULT", "new"]))
def test_edit_ini_result_reads_back(updates, section):
    out = ac.edit_ini(ORIGINAL, section, updates)
    values = ac.read_ini(out).get(section, {})
    for k, v in updates.items():
        assert values.get(k) == v
    untouched = [s for s in ("DEFAULT", "agent") if s != section]
    for s in untouched:
        assert ac.read_ini(out)[s] == ac.read_ini(ORIGINAL)[s]


def test_render_round_trip():
    assert ac.render_mappings({"physnet0": ["ens5", "ens6"], "public": "br-ex"}) == "physnet0:ens5,physnet0:ens6,public:br-ex"
    text = ac.render_bandwidths({"br-test": {"egress": 1500, "ingress": 1500}, "br-ex": {"ingress": 1}, "eth3": None})
    assert text == "br-test:1500:1500,br-ex::1,eth3::"
    assert ac.parse_rp_bandwidths(ac.parse_list(text))["br-ex"] == {"egress": None, "ingress": 1}
    assert ac.render_pp_without_direction({"": 1000}) == ":1000"


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({"total": st.integers(-2, 3000), "reserved": st.integers(-1, 3000),
                              "min_unit": st.integers(0, 3), "max_unit": st.integers(0, 3000),
                              "step_size": st.integers(0, 3), "allocation_ratio": st.sampled_from([0.0, 1.0, 1.5, 16.0])}))
def test_inventory_checks_agree_with_placement(inv):
    """Our pre-flight inventory check accepts exactly what Placement's schema and capacity check accept."""
    import jsonschema
    from placement.schemas import inventory as schema
    from minbw.model.providers import inventory_problems
    from tests.support.placement_serve import validate  # jsonschema.validate, the schema's own check once
    try:
        validate({"inventories": {"X": inv}, "resource_provider_generation": 0}, schema.PUT_INVENTORY_SCHEMA)
        accepted = (inv["total"] - inv["reserved"]) * inv["allocation_ratio"] >= 0  # handlers.inventory, >= 1.26
    except jsonschema.ValidationError:
        accepted = False
    assert (inventory_problems(inv) == []) == accepted


def test_render_options_then_load_equals_the_ini_route():
    values = {"bridge_mappings": {"public": "br-ex", "physnet0": "br-test"},
              "resource_provider_bandwidths": {"br-test": {"egress": 1500, "ingress": 1500}, "br-ex": {"ingress": 1}},
              "resource_provider_inventory_defaults": {"min_unit": 2}}
    from_values = ac.load_agent_values("openvswitch", values, "devstack0")
    text = "[ovs]\n" + "".join(f"{k} = {v}\n" for k, v in ac.render_options("openvswitch", values).items())
    from_ini = ac.load_agent_ini(text, source="x", host="devstack0")
    assert from_values.configurations() == from_ini.configurations()
    assert ac.render_options("openvswitch", {"resource_provider_hypervisors": {}}) == {"resource_provider_hypervisors": None}
    assert ac.same_value("bridge_mappings", "a:b , c:d", "a:b,c:d") and not ac.same_value("bridge_mappings", None, "a:b")
    with pytest.raises(ConfigError, match="not an option of the NIC Switch agent"):
        ac.render_options("sriov", {"bridge_mappings": {"a": "b"}})
    with pytest.raises(ConfigError, match="expected a dict with the keys egress and/or ingress"):
        ac.render_options("sriov", {"resource_provider_bandwidths": {"ens5": {"up": 1}}})


@settings(max_examples=300, deadline=None)
@given(agent_sections())
def test_agent_values_load_back_to_the_same_agent(case):
    """An ini read on a compute, sent as values (agent_config_info → bandwidth_providers' agents): same agent."""
    kind, section = case
    try:
        cfg = ac.load_agent_config(kind, section, "host0")
    except ConfigError:
        return
    values = ac.agent_values(cfg)
    assert (values.pop("agent_type"), values.pop("host")) == (kind, "host0")
    again = ac.load_agent_values(kind, values, "host0")
    # an option set to '' gives the agent no inventory defaults at all, where the values spell out
    # Placement's own defaults: the same providers, so only there the parsed defaults may differ
    same = {f: getattr(cfg, f) for f in ("inventory_defaults", "packet_processing_inventory_defaults")
            if section.get(f"resource_provider_{'packet_processing_' * ('packet' in f)}inventory_defaults") == ""}
    assert dataclasses.replace(again, source=cfg.source, **same) == cfg
    try:
        assert snapshots(desired_state([again])) == snapshots(desired_state([cfg]))
    except ConfigError:
        with pytest.raises(ConfigError):
            desired_state([cfg])


def test_agent_values_of_seed_003():
    cfg = ac.load_agent_ini("[DEFAULT]\nhost = devstack0\n[ovs]\nbridge_mappings = public:br-ex,physnet0:br-test\n"
                            "resource_provider_bandwidths = br-test:1500:1500,br-ex::1\n"
                            "resource_provider_packet_processing_without_direction = :1000\n", source="x")
    assert ac.agent_values(cfg) == {
        "agent_type": "openvswitch", "host": "devstack0",
        "bridge_mappings": {"public": "br-ex", "physnet0": "br-test"},
        "resource_provider_bandwidths": {"br-test": {"egress": 1500, "ingress": 1500}, "br-ex": {"egress": None, "ingress": 1}},
        "resource_provider_inventory_defaults": dict(ac.INVENTORY_DEFAULTS),
        "resource_provider_hypervisors": {"br-ex": "devstack0", "br-test": "devstack0", "rp_tunnelled": "devstack0"},
        ac.PP_WITHOUT: {"devstack0": 1000},
        ac.PP_INVENTORY: dict(ac.INVENTORY_DEFAULTS)}
    # without [DEFAULT] host and --host, the agent's host is the machine's name
    assert ac.load_agent_ini("[sriov_nic]\nphysical_device_mappings = p:ens5\n", source="x",
                             machine_host="cmp7").host == "cmp7"
