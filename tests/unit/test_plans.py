"""Unit tables for the pure planners: providers, QoS policies, ports, claims, agent files, the guarantee.

Each row gives what is there and what is wanted, and the exact writes (and prediction) expected.
"""
from __future__ import annotations

import pytest

from minbw.errors import ConfigError, InvalidInput, RootProviderNotFound
from minbw.model.claims import CandidateSet, Claim
from minbw.model.providers import Provider, freeze_inventories
from minbw.model.requests import PortRequest, RequestGroup, ServerRequest
from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.neutron.qos import QosRule
from minbw.plan.agent_file import plan_agent_file
from minbw.plan.allocations import plan_claim, plan_free
from minbw.reports.guarantee import PortState, check_guarantee
from minbw.plan.ports import PortSpec, plan_port
from minbw.plan.providers import Observed, make_absent_plan, make_plan, root_uuid
from minbw.plan.qos import PolicySpec, parse_rules, plan_policy

# ---------------------------------------------------------------- providers

OVS = "[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = br-test:1500:1500\n"
ROOT = Provider("3b36d91e-bf60-460f-b1f8-3322dee5cdfd", "devstack0", 1, None, "3b36d91e-bf60-460f-b1f8-3322dee5cdfd")
AGENT = "89ca1421-5117-5348-acab-6d0e2054239c"
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"
AGENT_TRAITS = frozenset({"CUSTOM_VNIC_TYPE_NORMAL", "CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_SMART_NIC",
                          "CUSTOM_VNIC_TYPE_VDPA"})
BR_TRAITS = AGENT_TRAITS | {"CUSTOM_PHYSNET_PHYSNET0"}
GLOBAL_TRAITS = BR_TRAITS | {"CUSTOM_NETWORK_TUNNEL_PROVIDER"}  # the custom traits Neutron makes sure exist
BW = {"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 1500}, "NET_BW_IGR_KILOBIT_PER_SEC": {"total": 1500}}


def desired(ini=OVS):
    return desired_state([load_agent_ini(ini, source="ovs.ini", host="devstack0")])


def observed(providers=(), traits=None, inventories=None, roots=True, allocations=None, existing_traits=None,
             max_version=(1, 39)):
    provs = {p.uuid: p for p in ([ROOT] if roots else []) + list(providers)}
    return Observed(providers=provs, roots={"devstack0": ROOT} if roots else {}, traits=traits or {},
                    inventories={u: freeze_inventories(i) for u, i in (inventories or {}).items()},
                    existing_traits=frozenset(GLOBAL_TRAITS if existing_traits is None else existing_traits),
                    allocations=allocations or {}, max_version=max_version)


def agent(gen=1, parent=ROOT.uuid, name="devstack0:Open vSwitch agent"):
    return Provider(AGENT, name, gen, parent, ROOT.uuid)


def bridge(gen=1, name="devstack0:Open vSwitch agent:br-test"):
    return Provider(BR_TEST, name, gen, AGENT, ROOT.uuid)


IN_SYNC = dict(providers=[agent(), bridge()], traits={AGENT: AGENT_TRAITS, BR_TEST: BR_TRAITS},
               inventories={BR_TEST: BW})


@pytest.mark.parametrize("case, obs, ops", [
    ("nothing there", dict(), [("create_provider", AGENT), ("create_provider", BR_TEST),
                               ("set_traits", AGENT), ("set_traits", BR_TEST), ("set_inventories", BR_TEST)]),
    ("a trait Placement lacks", dict(existing_traits=AGENT_TRAITS),
     [("create_trait", None), ("create_trait", None), ("create_provider", AGENT), ("create_provider", BR_TEST), ("set_traits", AGENT),
      ("set_traits", BR_TEST), ("set_inventories", BR_TEST)]),
    ("in sync", IN_SYNC, []),
    ("another total", dict(IN_SYNC, inventories={BR_TEST: {**BW, "NET_BW_EGR_KILOBIT_PER_SEC": {"total": 9}}}),
     [("set_inventories", BR_TEST)]),
    ("a trait too many", dict(IN_SYNC, traits={AGENT: AGENT_TRAITS | {"CUSTOM_X"}, BR_TEST: BR_TRAITS}),
     [("set_traits", AGENT)]),
    ("renamed", dict(IN_SYNC, providers=[agent(), bridge(name="old")]), [("update_provider", BR_TEST)]),
    ("under another parent", dict(IN_SYNC, providers=[agent(parent="elsewhere"), bridge()]),
     [("update_provider", AGENT)]),
    ("a device no longer configured",
     dict(IN_SYNC, providers=[agent(), bridge(), Provider("gone", "devstack0:Open vSwitch agent:br-old", 1, AGENT,
                                                          ROOT.uuid)]),
     [("delete_provider", "gone")]),
])
def test_provider_plan(case, obs, ops):
    plan = make_plan(desired(), observed(**obs))
    assert [(op.action, op.uuid) for op in plan.ops] == ops, case
    assert plan.changed is bool(ops) and plan.writes() == len(ops)
    assert set(plan.diff()["after"]) == {op.uuid for op in plan.ops if op.uuid and op.uuid in plan.after}


def test_provider_plan_predicts_the_tree_after():
    plan = make_plan(desired(), observed(**dict(IN_SYNC, inventories={BR_TEST: {}})))
    assert plan.diff() == {
        "before": {BR_TEST: {"name": "devstack0:Open vSwitch agent:br-test", "parent_provider_uuid": AGENT,
                             "traits": sorted(BR_TRAITS), "inventories": {}}},
        "after": {BR_TEST: {"name": "devstack0:Open vSwitch agent:br-test", "parent_provider_uuid": AGENT,
                            "traits": sorted(BR_TRAITS),
                            "inventories": {rc: {"total": 1500, "reserved": 0, "min_unit": 1, "max_unit": 2147483647,
                                                 "step_size": 1, "allocation_ratio": 1.0} for rc in BW}}}}


def test_provider_plan_kept_where_allocated_and_the_root():
    gone = Provider("gone", "devstack0:Open vSwitch agent:br-old", 3, AGENT, ROOT.uuid)
    plan = make_plan(desired(), observed(**dict(IN_SYNC, providers=[agent(), bridge(), gone]),
                                         allocations={"gone": {"vm": {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 5}}}}))
    assert plan.ops == () and [(k.uuid, dict(k.consumers)) for k in plan.kept] == [
        ("gone", {"vm": {"NET_BW_EGR_KILOBIT_PER_SEC": 5}})]
    with pytest.raises(RootProviderNotFound, match="devstack0"):
        make_plan(desired(), observed(roots=False))
    created = make_plan(desired(), observed(roots=False), create_root=True, root_inventories={"VCPU": {"total": 8}})
    assert (created.ops[0].action, created.ops[0].uuid) == ("create_root", root_uuid("devstack0"))
    assert created.ops[1].parent_uuid == root_uuid("devstack0")


def test_provider_plan_reparent_needs_1_37():
    with pytest.raises(Exception, match="1.37"):
        make_plan(desired(), observed(**dict(IN_SYNC, providers=[agent(parent="x"), bridge()]), max_version=(1, 36)))


@pytest.mark.parametrize("allocated, ops, kept", [
    ({}, [("delete_provider", BR_TEST), ("delete_provider", AGENT)], []),
    ({BR_TEST: {"vm": {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1}}}}, [], [BR_TEST]),
])
def test_absent_plan(allocated, ops, kept):
    plan = make_absent_plan(desired(), observed(**IN_SYNC, allocations=allocated))
    assert [(op.action, op.uuid) for op in plan.ops] == ops
    assert [k.uuid for k in plan.kept] == kept


# ---------------------------------------------------------------- QoS policies

def view(rules=(), **attrs):
    return {"id": "pid", "name": "qp0", "description": "", "shared": False, "is_default": False,
            "rules": list(rules), **attrs}


EGR = {"id": "r1", "type": "minimum_bandwidth", "direction": "egress", "min_kbps": 1000}
LIMIT = {"id": "r9", "type": "bandwidth_limit", "direction": "egress", "max_kbps": 5}


@pytest.mark.parametrize("case, current, want, ops", [
    ("create", None, dict(rules=[{"type": "minimum_bandwidth", "min_kbps": 1000}]),
     [{"action": "create_policy", "values": {"name": "qp0"}},
      {"action": "create_rule", "values": {"direction": "egress", "min_kbps": 1000},
       "rule_type": "minimum_bandwidth", "rule_id": None}]),
    ("same", view([EGR]), dict(rules=[{"type": "minimum_bandwidth", "direction": "egress", "min_kbps": 1000}]), []),
    ("value in place", view([EGR]), dict(rules=[{"type": "minimum_bandwidth", "min_kbps": 2000}]),
     [{"action": "update_rule", "values": {"min_kbps": 2000}, "rule_type": "minimum_bandwidth", "rule_id": "r1"}]),
    ("direction: delete then create", view([EGR]),
     dict(rules=[{"type": "minimum_bandwidth", "direction": "ingress", "min_kbps": 1000}]),
     [{"action": "delete_rule", "values": {"direction": "egress"}, "rule_type": "minimum_bandwidth", "rule_id": "r1"},
      {"action": "create_rule", "values": {"direction": "ingress", "min_kbps": 1000},
       "rule_type": "minimum_bandwidth", "rule_id": None}]),
    ("other rule types are left alone", view([EGR, LIMIT]), dict(rules=[]),
     [{"action": "delete_rule", "values": {"direction": "egress"}, "rule_type": "minimum_bandwidth", "rule_id": "r1"}]),
    ("rules unmanaged", view([EGR]), dict(rules=None, shared=True), [{"action": "update_policy", "values": {"shared": True}}]),
    ("absent", view([EGR]), None, [{"action": "delete_policy", "values": {}}]),
    ("absent and gone", None, None, []),
])
def test_policy_plan(case, current, want, ops):
    spec = None if want is None else PolicySpec(
        name="qp0", shared=want.get("shared"),
        rules=None if want["rules"] is None else parse_rules(want["rules"]))
    plan = plan_policy(spec, current)
    assert [op.to_dict() for op in plan.ops] == ops, case
    if want is None:
        assert plan.after is None
    elif want["rules"] is not None:
        managed = [(r["type"], r["direction"], r.get("min_kbps")) for r in plan.after["rules"]
                   if r["type"] == "minimum_bandwidth"]
        assert managed == sorted((r["type"], r.get("direction", "egress"), r["min_kbps"]) for r in want["rules"])
        assert LIMIT in plan.after["rules"] or LIMIT not in (current or view())["rules"]


@pytest.mark.parametrize("rules, match", [
    ([{"type": "minimum_bandwidth", "min_kbps": 1}, {"type": "minimum_bandwidth", "min_kbps": 2}], "duplicates"),
    ([{"type": "minimum_packet_rate", "direction": "any", "min_kpps": 1},
      {"type": "minimum_packet_rate", "direction": "egress", "min_kpps": 1}], "mix direction 'any'"),
    ([{"type": "minimum_bandwidth", "min_kpps": 1}], "takes min_kbps, not min_kpps"),
    ([{"type": "minimum_bandwidth", "direction": "any", "min_kbps": 1}], "direction must be one of egress, ingress"),
    ([{"type": "minimum_bandwidth", "min_kbps": -1}], "integer in"),
    ([{"type": "dscp_marking"}], "type must be one of"),
])
def test_policy_rules_refused_as_neutron_would(rules, match):
    with pytest.raises(InvalidInput, match=match):
        parse_rules(rules)


# ---------------------------------------------------------------- ports

PORT = {"id": "p1", "name": "port0", "network_id": "net0", "binding:vnic_type": "normal", "qos_policy_id": None,
        "fixed_ips": [{"subnet_id": "s1", "ip_address": "10.0.0.5"}]}


@pytest.mark.parametrize("case, current, spec, ops, after", [
    ("create", None, PortSpec("port0", "net0", "direct", "qp"),
     [{"action": "create", "values": {"name": "port0", "network_id": "net0", "qos_policy_id": "qp",
                                      "binding:vnic_type": "direct"}}],
     {"id": None, "name": "port0", "network_id": "net0", "binding:vnic_type": "direct", "qos_policy_id": "qp",
      "fixed_ips": []}),
    ("same", PORT, PortSpec("port0", "net0", "normal", None, ({"subnet_id": "s1"},)), [], PORT),
    ("policy on", PORT, PortSpec("port0", qos_policy_id="qp"),
     [{"action": "update", "values": {"qos_policy_id": "qp"}}], {**PORT, "qos_policy_id": "qp"}),
    ("another address", PORT, PortSpec("port0", fixed_ips=({"ip_address": "10.0.0.6"},)),
     [{"action": "update", "values": {"fixed_ips": [{"ip_address": "10.0.0.6"}]}}],
     {**PORT, "fixed_ips": [{"ip_address": "10.0.0.6"}]}),
    ("absent", PORT, None, [{"action": "delete", "values": {}}], None),
])
def test_port_plan(case, current, spec, ops, after):
    plan = plan_port(spec, current)
    assert [op.to_dict() for op in plan.ops] == ops, case
    assert plan.after == after and plan.diff() == {"before": current or {}, "after": after or {}}


@pytest.mark.parametrize("current, spec, match", [
    (None, PortSpec("port0"), "needs its network"),
    (PORT, PortSpec("port0", "net1"), "cannot move a port"),
])
def test_port_plan_refusals(current, spec, match):
    with pytest.raises(InvalidInput, match=match):
        plan_port(spec, current)


# ---------------------------------------------------------------- claims

H1, H2 = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"
P1 = "33333333-3333-3333-3333-333333333333"
P2 = "44444444-4444-4444-4444-444444444444"


def summaries(host, devices):
    out = {host: {"resources": {}, "traits": [], "parent_provider_uuid": None, "root_provider_uuid": host}}
    for d in devices:
        out[d] = {"resources": {}, "traits": ["CUSTOM_PHYSNET_PHYSNET0"], "parent_provider_uuid": host,
                  "root_provider_uuid": host}
    return out


def two_ports():
    ports = tuple(PortRequest(pid, (RequestGroup(f"g{i}", {"NET_BW_EGR_KILOBIT_PER_SEC": 1000},
                                                 ("CUSTOM_PHYSNET_PHYSNET0",)),), (f"g{i}",))
                  for i, pid in enumerate(("port-a", "port-b")))
    return ServerRequest(vcpus=1, ports=ports)


def test_check_mode_skips_an_ambiguous_first_candidate_as_the_claim_does():
    """Host 1's candidate (no Placement mappings) fits two ways: the plan, and so check mode, take host 2."""
    d1, d2 = "d1aaaaaa-0000-4000-8000-000000000001", "d1aaaaaa-0000-4000-8000-000000000002"
    d3 = "d3aaaaaa-0000-4000-8000-000000000003"
    ambiguous = {"allocations": {H1: {"resources": {"VCPU": 1}}, d1: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}},
                                 d2: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}}}
    clear = {"allocations": {H2: {"resources": {"VCPU": 1}}, d3: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 2000}}}}
    cands = CandidateSet((ambiguous, clear), {**summaries(H1, [d1, d2]), **summaries(H2, [d3])}, {}, "1.33")
    plan = plan_claim("vm", cands, two_ports(), max_hosts=3)
    assert [(a.host, a.usable) for a in plan.attempts] == [(H1, False), (H2, True)]
    op = plan.ops[0]
    assert (op.host, op.binding_profiles) == (H2, {"port-a": {"g0": d3}, "port-b": {"g1": d3}})
    assert plan.after == {"claimed": True, "host": H2} and plan.to_dict()["skipped"][0]["host"] == H1
    # max_hosts bounds the alternates: with one host there is nothing to claim
    assert plan_claim("vm", cands, two_ports(), max_hosts=1).ops == ()


def test_free_plan():
    assert plan_free("vm", {"allocations": {}}).ops == ()
    plan = plan_free("vm", {"allocations": {H1: {"resources": {"VCPU": 1}}}})
    assert [op.action for op in plan.ops] == ["free"] and plan.diff() == {"before": {"claimed": True},
                                                                         "after": {"claimed": False}}


# ---------------------------------------------------------------- agent files

@pytest.mark.parametrize("kind, text, values, updates, after", [
    ("openvswitch", "[ovs]\nbridge_mappings = physnet0:br-test\n",
     {"resource_provider_bandwidths": {"br-test": {"egress": 1500, "ingress": 1500}}},
     {"resource_provider_bandwidths": "br-test:1500:1500"},
     "[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = br-test:1500:1500\n"),
    ("openvswitch", "[ovs]\nbridge_mappings = physnet0:br-test, public:br-ex\n",
     {"bridge_mappings": {"physnet0": "br-test", "public": "br-ex"}}, {},
     "[ovs]\nbridge_mappings = physnet0:br-test, public:br-ex\n"),
    ("openvswitch", "[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = br-test:1:1\n",
     {"resource_provider_bandwidths": {}}, {"resource_provider_bandwidths": None},
     "[ovs]\nbridge_mappings = physnet0:br-test\n"),
    ("neutron_server", "[DEFAULT]\nservice_plugins = router\n", {}, {"service_plugins": "router,qos,placement"},
     "[DEFAULT]\nservice_plugins = router,qos,placement\n"),
    ("neutron_server", "[DEFAULT]\nservice_plugins = neutron.services.qos.qos_plugin.QoSPlugin,placement\n", {}, {},
     "[DEFAULT]\nservice_plugins = neutron.services.qos.qos_plugin.QoSPlugin,placement\n"),
    ("ml2", "[ml2]\n", {}, {"extension_drivers": "qos"}, "[ml2]\nextension_drivers = qos\n"),
])
def test_agent_file_plan(kind, text, values, updates, after):
    edit = plan_agent_file("f.ini", text, kind, values, host="devstack0")
    assert (dict(edit.updates), edit.after, edit.changed) == (updates, after, text != after)


@pytest.mark.parametrize("kind, text, values, match", [
    ("openvswitch", "[ovs]\n", {"resource_provider_bandwidths": {"br-x": {"egress": 1}}}, "missing from device mappings"),
    ("sriov", "[sriov_nic]\n", {"bridge_mappings": {"p": "b"}}, "not an option of the NIC Switch agent"),
    ("ml2", "[ml2]\n", {"bridge_mappings": {"p": "b"}}, "not an option of agent_type ml2"),
    ("openvswitch", "[ovs]\nbridge_mappings = p:b\n",
     {"resource_provider_bandwidths": {"b": {"egress": 5}}, "resource_provider_inventory_defaults": {"reserved": 9}},
     "Placement would refuse"),
])
def test_agent_file_plan_refusals(kind, text, values, match):
    with pytest.raises(ConfigError, match=match):
        plan_agent_file("f.ini", text, kind, values, host="devstack0")


# ---------------------------------------------------------------- the guarantee

SERVER = {"id": "vm", "status": "ACTIVE", "hypervisor_hostname": "devstack0", "compute_host": "devstack0"}
GROUP = RequestGroup("g0", {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}, ("CUSTOM_PHYSNET_PHYSNET0",))
REQUEST = PortRequest("p1", (GROUP,), ("g0",))
CLAIM = Claim("vm", H1, "devstack0", {BR_TEST: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}},
              {"g0": [BR_TEST], "": [H1]}, {"p1": {"g0": BR_TEST}})
HELD = {BR_TEST: {"name": "br-test", "usages": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000},
                  "allocations": {"vm": {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}}}}


def port(allocation=None, host="devstack0", request=REQUEST):
    return PortState("p1", "port0", {"allocation": allocation} if allocation else {}, host, request, "neutron")


@pytest.mark.parametrize("case, server, ports, claim, error, providers, problems", [
    ("holds", SERVER, [port({"g0": BR_TEST})], CLAIM, None, HELD, []),
    ("not active", dict(SERVER, status="ERROR"), [port({"g0": BR_TEST})], CLAIM, None, HELD,
     ["server vm is ERROR, not ACTIVE"]),
    ("no allocations", SERVER, [port()], None, None, {}, ["Placement has no allocations for the server (consumer vm)"]),
    ("binding names another provider", SERVER, [port({"g0": "other"})], CLAIM, None, HELD,
     ["port port0 (p1): binding:profile.allocation is {'g0': 'other'}, but the server's allocation maps its "
      "request group(s) to {'g0': '" + BR_TEST + "'}"]),
    ("bound elsewhere", SERVER, [port({"g0": BR_TEST}, host="devstack1")], CLAIM, None, HELD,
     ["port port0 (p1) is bound to host 'devstack1', the server is on 'devstack0'"]),
    ("not enough allocated", SERVER, [port({"g0": BR_TEST})], CLAIM, None,
     {BR_TEST: dict(HELD[BR_TEST], allocations={"vm": {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 10}}})},
     [f"port port0 (p1) group g0: br-test ({BR_TEST}) has 10 NET_BW_EGR_KILOBIT_PER_SEC allocated to the server, "
      f"the group needs 1000"]),
    ("mapping error", SERVER, [port()], None, "no mapping", {},
     ["the server's allocations in Placement do not satisfy its request: no mapping"]),
    ("a port without QoS keeps no binding allocation", SERVER, [port({"g0": BR_TEST}, request=None)], CLAIM, None, HELD,
     [f"port port0 (p1) has no QoS minimum rules, but binding:profile.allocation is {{'g0': '{BR_TEST}'}}"]),
])
def test_guarantee(case, server, ports, claim, error, providers, problems):
    assert check_guarantee(server, ports, claim, error, providers) == problems, case


def test_rules_keep_ids_for_ports_and_none_for_desired():
    assert QosRule.from_option({"type": "minimum_bandwidth", "min_kbps": 5}) == QosRule(None, "minimum_bandwidth",
                                                                                        "egress", 5)


def test_apply_in_order_names_what_was_and_was_not_written():
    from minbw.errors import PartialApply, PlacementError
    from minbw.ops import apply_in_order

    def run(op):
        if op == "c":
            raise PlacementError("boom", status=503)
    with pytest.raises(PartialApply) as e:
        apply_in_order(["a", "b", "c", "d"], run)
    d = e.value.to_dict()
    assert (d["writes_done"], d["writes_planned"], d["applied"], d["not_applied"]) == (2, 4, ["a", "b"], ["c", "d"])
    assert "not written: c and 1 more" in str(e.value)
    with pytest.raises(PlacementError):  # nothing written: the error as it is, not a PartialApply
        apply_in_order(["c", "d"], run)


def test_apply_in_order_reports_a_transport_failure_after_writes_as_partial():
    """keystoneauth's connection failures are not SDKExceptions: they too end in a PartialApply, not a
    bare traceback with the earlier writes unreported; and their outcome is unknown (a 4xx's is not)."""
    from keystoneauth1 import exceptions as ksa
    from openstack import exceptions as sdk

    from minbw.errors import PartialApply
    from minbw.ops import apply_in_order, outcome_unknown

    def run(op):
        if op == "b":
            raise ksa.ConnectFailure("reset by peer")
    with pytest.raises(PartialApply) as e:
        apply_in_order(["a", "b"], run)
    assert e.value.applied == ["a"] and e.value.pending == ["b"]
    assert outcome_unknown(ksa.ConnectFailure("x")) and outcome_unknown(ksa.ConnectTimeout("x"))
    assert outcome_unknown(sdk.HttpException("x", http_status=503))
    assert not outcome_unknown(sdk.HttpException("x", http_status=409))
    assert not outcome_unknown(sdk.ForbiddenException("x", http_status=403))
