"""Bad input at volume, pure code: generated agent configurations (ini files and the modules' structured
values) and port requests, valid and invalid. Every one either parses or raises minbw's own error
(InvalidInput) naming the option and the fix; nothing else escapes (a traceback for the user).
neutron-lib's parsers are the oracle for what is valid."""
from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from neutron_lib.placement import utils as place_utils

from minbw.errors import ConfigError, InvalidInput, RequestError
from minbw.neutron import agentconf as ac
from minbw.neutron import naming
from minbw.neutron.port_request import Segment, build_port_request
from minbw.neutron.provider_tree import desired_state
from minbw.neutron.qos import QosRule, VNIC_TYPES

# deterministic and bounded: the whole file runs in seconds
VOLUME = settings(max_examples=800, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

ALL_OPTIONS = set(ac.OPTIONS[naming.OVS]) | set(ac.OPTIONS[naming.SRIOV])

# -------------------------------------------------------------- option values, raw (as in an ini file)

names = st.sampled_from(["br-ex", "br-test", "physnet0", "physnet1", "eth0", "ens5", "rp_tunnelled", "h0",
                         "", " ", "a b", "x:y", "é", "0"])
numbers = st.sampled_from(["", "0", "1", "1000", "10000000", "-1", "x", "1.5", " 7 ", "1e3", "²", "0x10",
                           "99999999999999999999"])
floats = st.sampled_from(["1.0", "0", "2.5", "-1", "nan", "inf", "x", "", "1e400"])
inventory_keys = st.sampled_from(["allocation_ratio", "min_unit", "max_unit", "reserved", "step_size",
                                  "total", "foo", ""])


def joined(item, sep=",", max_size=4):
    return st.lists(item, max_size=max_size).map(sep.join)


mapping_items = st.one_of(st.builds(lambda a, b: f"{a}:{b}", names, names), names,
                          st.builds(lambda a, b, c: f"{a}:{b}:{c}", names, names, names))
rate_items = st.one_of(st.builds(lambda d, e, i: f"{d}:{e}:{i}", names, numbers, numbers),
                       st.builds(lambda d, e: f"{d}:{e}", names, numbers), names)
inventory_items = st.builds(lambda k, v: f"{k}:{v}", inventory_keys, st.one_of(numbers, floats))
raw_values = {
    "bridge_mappings": joined(mapping_items),
    "physical_device_mappings": joined(mapping_items),
    ac.BANDWIDTHS: joined(rate_items),
    ac.INVENTORY: joined(inventory_items),
    ac.HYPERVISORS: joined(st.builds(lambda a, b: f"{a}:{b}", names, names) | names),
    ac.DEFAULT_HYPERVISOR: names,
    ac.PP_WITHOUT: joined(st.one_of(st.builds(lambda h, n: f"{h}:{n}", names, numbers), names)),
    ac.PP_WITH: joined(rate_items),
    ac.PP_INVENTORY: joined(inventory_items),
}


@st.composite
def ini_files(draw):
    kind = draw(st.sampled_from([naming.OVS, naming.SRIOV]))
    section = naming.AGENT_KINDS[kind].ini_section
    chosen = draw(st.lists(st.sampled_from(ac.OPTIONS[kind]), unique=True, max_size=6))
    if draw(st.booleans()):  # usually the kind can be told; sometimes not
        chosen = [naming.AGENT_KINDS[kind].mappings_option] + [o for o in chosen
                                                               if o != naming.AGENT_KINDS[kind].mappings_option]
    lines = [f"[{section}]"] + [f"{o} = {draw(raw_values[o])}" for o in chosen]
    lines = draw(st.sampled_from([lines, lines, lines, ["garbage without a section"] + lines,
                                  [f"[{section}"] + lines[1:], lines + ["  continued"]]))
    host = draw(st.sampled_from(["devstack0", None, ""]))
    if host is not None:
        lines = ["[DEFAULT]", f"host = {host}"] + lines
    return kind, "\n".join(lines) + "\n"


def _names_an_option(e: InvalidInput) -> bool:
    text = str(e)
    return any(o in text for o in ALL_OPTIONS) or "ini file" in text or "agent kind" in text or \
        "agent host" in text or "resource_provider_packet_processing_*" in text


def _neutron_accepts(text: str, kind: str) -> bool:
    """neutron-lib's own parsers (the agents call them at start-up) on the same raw values."""
    sections = ac.read_ini(text, "f.ini")
    opts = sections.get(naming.AGENT_KINDS[kind].ini_section, {})
    try:
        place_utils.parse_rp_bandwidths(ac.parse_list(opts.get(ac.BANDWIDTHS, "")))
        place_utils.parse_rp_inventory_defaults(ac.parse_dict(opts.get(ac.INVENTORY, "")))
        if kind == naming.OVS:
            place_utils.parse_rp_pp_with_direction(ac.parse_list(opts.get(ac.PP_WITH, "")), "devstack0")
            place_utils.parse_rp_pp_without_direction(ac.parse_list(opts.get(ac.PP_WITHOUT, "")), "devstack0")
            place_utils.parse_rp_inventory_defaults(ac.parse_dict(opts.get(ac.PP_INVENTORY, "")))
    except ValueError:
        return False
    return True


def _says_the_fix(e: Exception) -> bool:
    """The message says what to write instead: a Fix, or the values that are accepted."""
    return any(w in str(e) for w in ("Fix", "one of", "must be", "expected", "Neutron accepts", "; "))


OUTCOMES: dict[str, int] = {"ok": 0, "error": 0}


@VOLUME
@given(ini_files())
def test_generated_agent_ini_files_parse_or_name_the_option(case):
    kind, text = case
    try:
        cfg = ac.load_agent_ini(text, source="f.ini", kind=None, machine_host="machine0")
        desired_state([cfg])
    except InvalidInput as e:
        assert isinstance(e, ConfigError), repr(e)
        assert _names_an_option(e), str(e)
        assert "Fix" in str(e) or "fix" in str(e) or "expected" in str(e).lower(), str(e)
        OUTCOMES["error"] += 1
        return
    OUTCOMES["ok"] += 1
    # what minbw accepts, Neutron's parsers accept too
    assert _neutron_accepts(text, cfg.kind), text


def test_generated_ini_cases_hit_both_outcomes():
    """The generator above is not all-valid or all-invalid (runs after it in file order)."""
    assert OUTCOMES["ok"] > 50 and OUTCOMES["error"] > 500, OUTCOMES


# -------------------------------------------------------------- structured values (the modules' options)

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**8), st.floats(allow_nan=True),
                         st.sampled_from(["", "x", "1000", "br-test", "eth0", "physnet0", "devstack0"]))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["egress", "ingress", "any", "br-test", "eth0",
                                                                  "physnet0", "allocation_ratio", "reserved",
                                                                  "min_unit", "devstack0", "foo"]),
                                                 inner, max_size=3)), max_leaves=4)


@st.composite
def structured_agents(draw):
    kind = draw(st.sampled_from([naming.OVS, naming.SRIOV]))
    allowed = list(ac.OPTIONS[kind]) + ["bogus_option"]
    values = draw(st.dictionaries(st.sampled_from(allowed), json_values, max_size=5))
    if draw(st.booleans()):
        mappings = naming.AGENT_KINDS[kind].mappings_option
        values[mappings] = {"physnet0": "br-test" if kind == naming.OVS else ["eth0"]}
        if draw(st.booleans()):
            values[ac.BANDWIDTHS] = {("br-test" if kind == naming.OVS else "eth0"): draw(json_values)}
    return kind, values


@VOLUME
@given(structured_agents())
def test_generated_structured_agent_values_parse_or_name_the_option(case):
    kind, values = case
    try:
        desired_state([ac.load_agent_values(kind, values, "devstack0")])
    except InvalidInput as e:
        assert isinstance(e, ConfigError), repr(e)
        assert _names_an_option(e) or "bogus_option" in str(e), str(e)


# -------------------------------------------------------------- port requests

rule_ids = st.one_of(st.uuids().map(str), st.sampled_from(["", "r1", None]), st.integers(0, 3))
rule_types = st.sampled_from(["minimum_bandwidth", "minimum_packet_rate", "bandwidth_limit", "", None])
directions = st.sampled_from(["egress", "ingress", "any", "both", "", None])
rule_values = st.one_of(st.integers(-2, 2**31 + 1), st.sampled_from([None, "1000", 1.5, True]))
rules = st.builds(QosRule, rule_ids, rule_types, directions, rule_values)
segments = st.builds(Segment, st.sampled_from(["vlan", "flat", "vxlan", "geneve", "", None]),
                     st.sampled_from(["physnet0", "physnet1", None, "", "a b"]))
port_ids = st.one_of(st.uuids().map(str), st.sampled_from(["", "port0", "not-a-uuid", "00000000"]))
vnic_types = st.one_of(st.sampled_from(VNIC_TYPES), st.sampled_from(["", "DIRECT", "sriov"]))
agent_kinds = st.sampled_from([None, naming.OVS, naming.SRIOV, "Open vSwitch agent", "NIC Switch agent",
                               "linuxbridge", ""])


@VOLUME
@given(port_ids, st.lists(rules, max_size=4), st.lists(segments, max_size=3), vnic_types, agent_kinds,
       st.booleans())
def test_generated_port_requests_build_or_say_why(port_id, rules_, segments_, vnic, kind, any_traits):
    try:
        pr = build_port_request(port_id, rules_, segments_, vnic, agent_kind=kind, any_traits=any_traits)
    except RequestError as e:
        assert _says_the_fix(e), str(e)
        return
    if pr is not None:
        assert uuid.UUID(pr.port_id) and pr.groups
        assert all(isinstance(n, int) and n >= 0 for g in pr.groups for _, n in g.resources)


neutron_rule_dicts = st.dictionaries(
    st.sampled_from(["id", "type", "direction", "min_kbps", "min_kpps", "max_kbps"]),
    st.one_of(st.none(), st.integers(-1, 10**6), st.sampled_from(["minimum_bandwidth", "minimum_packet_rate",
                                                                  "egress", "any", "r1", ""])), max_size=5)


@VOLUME
@given(neutron_rule_dicts, st.uuids().map(str), vnic_types)
def test_generated_neutron_and_option_rules_raise_request_errors_only(rule, port_id, vnic):
    for build in (QosRule.from_neutron, QosRule.from_option):
        try:
            r = build(rule)
            build_port_request(port_id, [r] if r.id is not None else [QosRule(port_id, r.type, r.direction,
                                                                               r.value)],
                               [Segment("vlan", "physnet0")], vnic)
        except RequestError as e:
            assert _says_the_fix(e), str(e)


@pytest.mark.parametrize("values", [
    {ac.BANDWIDTHS: ["br-test:1000:1000"]},           # a list where a dict is expected
    {ac.PP_WITH: "devstack0:1:1"},                     # a string where a dict is expected
    {"bridge_mappings": {"physnet0": "br-test"}, ac.BANDWIDTHS: {"br-test": {"egress": "lots"}}},
])
def test_structured_values_of_the_wrong_shape_name_the_option(values):
    with pytest.raises(ConfigError) as err:
        ac.load_agent_values(naming.OVS, values, "devstack0")
    assert err.value.option and err.value.option in str(err.value)
