"""Hosts reserved for QoS ports (pure): the hosts' plan, the flavors' plan and the request side,
each query fed to Placement's own parser."""
from __future__ import annotations

import pytest

from minbw.errors import InvalidInput, RequestError
from minbw.model.requests import ServerRequest
from minbw.neutron.port_request import Segment, build_port_request
from minbw.neutron.qos import MIN_BW, QosRule
from minbw.placement.query import build_query
from minbw.plan import separation as sp
from tests.unit.placement.test_query import LATEST, assert_same_as_placement, placement_parse

T = sp.DEFAULT_TRAIT
AGG = "5d1c3b2a-0e9f-4a8b-8c7d-6e5f4a3b2c1d"
R0 = sp.Root("aaaaaaaa-0000-4000-8000-000000000000", "devstack0", 3,
             traits=frozenset({"COMPUTE_NET_ATTACH_INTERFACE", "HW_CPU_X86_SSE"}))
R1 = sp.Root("bbbbbbbb-0000-4000-8000-000000000000", "devstack1", 5,
             traits=frozenset({"COMPUTE_NET_ATTACH_INTERFACE", T}), aggregates=frozenset({AGG}))
FLAVOR = dict(vcpus=1, memory_mb=256, disk_gb=1)
PORT = build_port_request("9f9d8e59-2b7c-4e4f-8a0e-6c1f7a3b5d21",
                          [QosRule("2a4c1f8e-0d6b-4b8e-9f3a-5c7d9e1b3a50", MIN_BW, "egress", 1000)],
                          [Segment("vlan", "physnet0")], "normal")


# ---------------------------------------------------------------- options

@pytest.mark.parametrize("kwargs, message", [
    (dict(mode="sometimes"), "mode must be one of off, avoid, strict"),
    (dict(trait="MINBW_QOS"), "not a custom trait name. Fix: CUSTOM_"),
    (dict(trait="CUSTOM_qos"), "not a custom trait name"),
    (dict(trait="CUSTOM_A,B"), "not a custom trait name"),
    (dict(aggregate="agg-1"), "aggregate 'agg-1' is not a UUID"),
])
def test_bad_options_name_the_option_and_the_fix(kwargs, message):
    with pytest.raises(InvalidInput, match=r"^separation: .*" + message.replace("(", r"\(")):
        sp.separation_of(**kwargs)


def test_defaults():
    sep = sp.separation_of()
    assert (sep.mode, sep.trait, sep.aggregate, sep.by, sep.extra_spec) == ("off", T, None, "trait", f"trait:{T}")
    assert sp.separation_of("avoid", aggregate=AGG.upper()).aggregate == AGG


# ---------------------------------------------------------------- the request side

PLAIN = ServerRequest(**FLAVOR)
QOS = ServerRequest(**FLAVOR, ports=(PORT,))


@pytest.mark.parametrize("sep, req, want", [
    # off: nothing changes, with or without QoS ports
    (sp.Separation("off"), PLAIN, {}),
    (sp.Separation("off"), QOS, {}),
    # avoid: only servers without QoS ports are kept off the reserved roots
    (sp.Separation("avoid"), PLAIN, {"root_required": f"!{T}"}),
    (sp.Separation("avoid"), QOS, {}),
    # strict: servers with QoS ports must land there
    (sp.Separation("strict"), PLAIN, {"root_required": f"!{T}"}),
    (sp.Separation("strict"), QOS, {"root_required": T}),
    (sp.Separation("strict", "CUSTOM_GOLD_NIC"), QOS, {"root_required": "CUSTOM_GOLD_NIC"}),
    # the aggregate variant: what Nova's isolated aggregate filtering sends
    (sp.Separation("avoid", aggregate=AGG), PLAIN, {"member_of": f"!in:{AGG}"}),
    (sp.Separation("avoid", aggregate=AGG), QOS, {}),
    (sp.Separation("strict", aggregate=AGG), QOS, {"member_of": f"in:{AGG}"}),  # Nova's form, one aggregate too
])
def test_request_side(sep, req, want):
    sr = sp.separate(req, sep)
    params, mv = build_query(sr, LATEST)
    base, _ = build_query(req, LATEST)
    assert {k: v for k, v in params.items() if base.get(k) != v} == want
    assert_same_as_placement(sr, params, mv)  # Placement's own parser reads the same request
    groups, rw = placement_parse(params, mv)
    if "member_of" in want and want["member_of"].startswith("!"):
        assert groups[""].forbidden_aggs == {AGG}
    if want.get("root_required", "").startswith("!"):
        assert rw.anchor_forbidden_traits == {sep.trait}


def test_request_side_keeps_what_the_request_asks_and_refuses_a_contradiction():
    req = ServerRequest(**FLAVOR, root_forbidden=("COMPUTE_STATUS_DISABLED",))
    sr = sp.separate(req, sp.Separation("avoid"))
    assert sr.root_forbidden == ("COMPUTE_STATUS_DISABLED", T)
    assert build_query(sr, LATEST)[0]["root_required"] == f"!COMPUTE_STATUS_DISABLED,!{T}"
    # a server without QoS ports that asks for the reserved hosts contradicts the separation: a clear error
    with pytest.raises(RequestError, match=f"root traits both required and forbidden: \\['{T}'\\]"):
        build_query(sp.separate(ServerRequest(**FLAVOR, root_required=(T,)), sp.Separation("avoid")), LATEST)


def test_forbidden_aggregates_need_1_32():
    sr = sp.separate(PLAIN, sp.Separation("avoid", aggregate=AGG))
    assert build_query(sr, "1.32", mappings=False)[1] == "1.32"
    with pytest.raises(Exception, match="forbidden aggregates member_of=!in: needs 1.32"):
        build_query(sr, "1.31")


def test_without_forbidden_drops_only_forbidden_traits():
    sr = ServerRequest(**FLAVOR, forbidden=("CUSTOM_A",), root_forbidden=(T, "CUSTOM_B"), root_required=("CUSTOM_C",))
    out = sr.without_forbidden({T, "CUSTOM_A", "CUSTOM_C"})
    assert (out.forbidden, out.root_forbidden, out.root_required) == ((), ("CUSTOM_B",), ("CUSTOM_C",))


# ---------------------------------------------------------------- the hosts

def observed(named=(R0, R1), reserved=(R1,), trait_exists=True):
    return sp.Observed({r.name: r for r in named}, {r.name: r for r in reserved}, trait_exists)


@pytest.mark.parametrize("sep, hosts, obs, exclusive, ops", [
    # a fresh cloud: the trait is made first, then added to the root
    (sp.Separation("avoid"), ["devstack1"], observed(reserved=(), trait_exists=False), False,
     [{"action": "create_trait", "trait": T},
      {"action": "reserve", "host": "devstack1", "uuid": R1.uuid, "trait": T}]),
    # already reserved: nothing to write (idempotent)
    (sp.Separation("avoid"), ["devstack1"], observed(), False, []),
    (sp.Separation("avoid"), ["devstack1"], observed(), True, []),
    # another host reserved as well; devstack1 stays reserved unless exclusive
    (sp.Separation("avoid"), ["devstack0"], observed(), False,
     [{"action": "reserve", "host": "devstack0", "uuid": R0.uuid, "trait": T}]),
    (sp.Separation("avoid"), ["devstack0"], observed(), True,
     [{"action": "reserve", "host": "devstack0", "uuid": R0.uuid, "trait": T},
      {"action": "release", "host": "devstack1", "uuid": R1.uuid, "trait": T}]),
    # no hosts + exclusive: release everything (state absent)
    (sp.Separation("off"), [], observed(named=()), True,
     [{"action": "release", "host": "devstack1", "uuid": R1.uuid, "trait": T}]),
    (sp.Separation("off"), [], observed(named=(), reserved=(), trait_exists=False), True, []),
    # aggregates: no trait to create
    (sp.Separation("avoid", aggregate=AGG), ["devstack0"], observed(reserved=(R1,), trait_exists=False), True,
     [{"action": "reserve", "host": "devstack0", "uuid": R0.uuid, "aggregate": AGG},
      {"action": "release", "host": "devstack1", "uuid": R1.uuid, "aggregate": AGG}]),
])
def test_hosts_plan(sep, hosts, obs, exclusive, ops):
    plan = sp.plan_hosts(sep, hosts, obs, exclusive=exclusive)
    assert [op.to_dict() for op in plan.ops] == ops
    assert plan.changed == bool(ops)
    assert set(plan.before) == set(plan.after) == {op["host"] for op in ops if "host" in op}


def test_hosts_plan_adds_to_nova_traits_never_replaces_them():
    plan = sp.plan_hosts(sp.Separation("avoid"), ["devstack0", "devstack1"], observed(reserved=(R1,)))
    assert plan.diff() == {
        "before": {"devstack0": {"uuid": R0.uuid, "reserved": False,
                                 "traits": ["COMPUTE_NET_ATTACH_INTERFACE", "HW_CPU_X86_SSE"]}},
        "after": {"devstack0": {"uuid": R0.uuid, "reserved": True,
                                "traits": ["COMPUTE_NET_ATTACH_INTERFACE", T, "HW_CPU_X86_SSE"]}}}
    op = plan.ops[0]
    assert sp.marked(sp.Separation("avoid"), R0.traits, op) == set(R0.traits) | {T}
    # on a conflict the apply re-reads: what Nova added meanwhile is kept
    assert sp.marked(sp.Separation("avoid"), R0.traits | {"COMPUTE_STATUS_DISABLED"}, op) == \
        set(R0.traits) | {T, "COMPUTE_STATUS_DISABLED"}
    release = sp.plan_hosts(sp.Separation("avoid"), [], observed(), exclusive=True).ops[0]
    assert sp.marked(sp.Separation("avoid"), R1.traits, release) == {"COMPUTE_NET_ATTACH_INTERFACE"}
    assert str(release) == f"remove trait {T} from devstack1 ({R1.uuid})"


def test_unknown_host_is_refused_before_any_write():
    with pytest.raises(InvalidInput, match=r"^hosts: no root provider named 'devstack9' in Placement\. Fix: "):
        sp.plan_hosts(sp.Separation("avoid"), ["devstack0", "devstack9"], observed())


# ---------------------------------------------------------------- the flavors

PLAIN_F = sp.Flavor("f-plain", "m1.plain", {"hw:cpu_policy": "shared"})
QOS_F = sp.Flavor("f-qos", "m1.qos", {})
SPEC = f"trait:{T}"


def flavors(plain=PLAIN_F.extra_specs, qos=QOS_F.extra_specs):
    return {"m1.plain": sp.Flavor("f-plain", "m1.plain", dict(plain)), "m1.qos": sp.Flavor("f-qos", "m1.qos", dict(qos))}


@pytest.mark.parametrize("mode, obs, ops", [
    ("avoid", flavors(), [("set_extra_spec", "m1.plain", "forbidden")]),
    ("strict", flavors(), [("set_extra_spec", "m1.qos", "required"), ("set_extra_spec", "m1.plain", "forbidden")]),
    ("strict", flavors(plain={SPEC: "forbidden"}, qos={SPEC: "required"}), []),
    # from strict back to avoid: the QoS flavor no longer requires the trait
    ("avoid", flavors(plain={SPEC: "forbidden"}, qos={SPEC: "required"}), [("unset_extra_spec", "m1.qos", None)]),
    # a plain flavor that wrongly required the trait is turned round
    ("avoid", flavors(plain={SPEC: "required"}), [("set_extra_spec", "m1.plain", "forbidden")]),
    # off (state absent): every spec of ours unset, other specs left alone
    ("off", flavors(plain={SPEC: "forbidden", "hw:cpu_policy": "shared"}, qos={SPEC: "required"}),
     [("unset_extra_spec", "m1.qos", None), ("unset_extra_spec", "m1.plain", None)]),
])
def test_flavors_plan(mode, obs, ops):
    plan = sp.plan_flavors(sp.Separation(mode), ["m1.qos"], ["m1.plain"], obs)
    assert [(op.action, op.flavor, op.value) for op in plan.ops] == ops
    assert all(op.key == SPEC for op in plan.ops)
    for op in plan.ops:
        assert plan.after[op.flavor] == ({SPEC: op.value} if op.value else {})
        assert "hw:cpu_policy" not in plan.before[op.flavor]


def test_flavor_specs_are_what_nova_reads_into_the_same_placement_request():
    """The extra specs Nova reads (ServerRequest.from_flavor, Nova's rules) ask Placement for the same
    hosts as the request side: forbidden/required trait of the unsuffixed group, served by the root."""
    flavor = {"vcpus": 1, "ram": 256, "disk": 1}
    for mode, qos, spec in (("avoid", False, "forbidden"), ("strict", True, "required")):
        sep = sp.Separation(mode)
        assert sp.flavor_specs(sep, qos) == spec
        nova = ServerRequest.from_flavor({**flavor, "extra_specs": {sep.extra_spec: spec}},
                                         ports=(PORT,) if qos else ())
        groups, _ = placement_parse(*build_query(nova, LATEST))
        assert (groups[""].forbidden_traits if spec == "forbidden" else set().union(*groups[""].required_traits)) == {T}
    assert sp.flavor_specs(sp.Separation("avoid"), True) is None


@pytest.mark.parametrize("sep, qos, plain, obs, message", [
    (sp.Separation("avoid"), ["m1.qos"], ["m1.qos"], flavors(), "flavors_qos and flavors_plain both name m1.qos"),
    (sp.Separation("avoid"), ["m1.qos"], ["m1.nope"], flavors(), "no flavor 'm1.nope' in Nova. Fix: "),
    (sp.Separation("avoid", aggregate=AGG), [], ["m1.plain"], flavors(), "enable_isolated_aggregate_filtering"),
])
def test_flavor_plan_refusals(sep, qos, plain, obs, message):
    with pytest.raises(InvalidInput, match=message.replace(".", r"\.")):
        sp.plan_flavors(sep, qos, plain, obs)


def test_combined_plan_runs_hosts_first():
    sep = sp.Separation("strict")
    plan = sp.combine(sep, sp.plan_hosts(sep, ["devstack0"], observed()),
                      sp.plan_flavors(sep, ["m1.qos"], ["m1.plain"], flavors()))
    assert [op.action for op in plan.ops] == ["reserve", "set_extra_spec", "set_extra_spec"]
    assert plan.to_dict()["writes"] == 3 and plan.to_dict()["separation"]["mode"] == "strict"
    assert set(plan.diff()["after"]) == {"hosts", "flavors"}
