"""Unit tables for plan/providers.py: the provider tree's writes (and the tree predicted after) from what Placement
has and what the agents' configuration wants; the absent plan."""
from __future__ import annotations

import pytest

from minbw.errors import RootProviderNotFound
from minbw.model.providers import Provider, freeze_inventories
from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.plan.providers import Observed, make_absent_plan, make_plan, root_uuid


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
    # a removal under a root: nova-compute's cached tree still lists the provider (docs/troubleshooting.md)
    said = [w for w in plan.warnings if "keeps them in its cached provider tree" in w]
    assert said == ([f"2 provider(s) removed under the root devstack0 (devstack0:Open vSwitch agent, "
                     f"devstack0:Open vSwitch agent:br-test): a nova-compute running on devstack0 keeps them in its "
                     f"cached provider tree, and each build and resource update of devstack0 fails "
                     f"(ResourceProviderAllocationRetrievalFailed: 404 on a removed provider; builds are rescheduled "
                     f"elsewhere) until it re-reads the tree. Fix: restart nova-compute on devstack0, or leave "
                     f"devstack0 out of scheduling for [compute] resource_provider_association_refresh (300 s by "
                     f"default)"] if ops else [])


def test_a_stale_device_removed_by_a_sync_is_warned_of_too():
    plan = make_plan(desired(OVS.replace("br-test:1500:1500", "")), observed(**IN_SYNC))
    assert [op.action for op in plan.ops if op.action == "delete_provider"] == ["delete_provider"]
    assert [w.split(":")[0] for w in plan.warnings] == ["1 provider(s) removed under the root devstack0 (devstack0"]


def test_the_plan_makes_a_providers_snapshot_only_where_it_is_read():
    """before/after are lazy (a 10,000-host warm plan copies nothing); read, each is the snapshot of what it was
    made of, equal to a dict of them, and the source (name, parent, traits, inventories) is given uncopied."""
    from minbw.model.providers import Snapshots, snapshot
    d = desired()
    plan = make_plan(d, observed([agent()], traits={AGENT: AGENT_TRAITS}, inventories={AGENT: {}}))
    assert plan.after._made == {} and plan.before._made == {}
    assert set(plan.after) == {AGENT, BR_TEST} and len(plan.after) == 2 and AGENT in plan.after
    spec = {p.uuid: p for p in d.providers}[BR_TEST]
    assert plan.after[BR_TEST] == snapshot(spec.name, AGENT, spec.traits, spec.inventories)
    assert plan.after.source(BR_TEST)[3] is spec.inventories
    assert plan.before == {AGENT: snapshot(agent().name, ROOT.uuid, AGENT_TRAITS, {})}
    s = Snapshots()
    s.add("u", "n", None, {"B", "A"}, {"X": {"total": 1}})
    first = s["u"]
    assert first == {"name": "n", "parent_provider_uuid": None, "traits": ["A", "B"], "inventories": {"X": {"total": 1}}}
    s.add("u", "m", None, (), {})  # added again: made again
    assert s["u"]["name"] == "m" and "v" not in s and s.get("v") is None


def test_an_inventory_as_placement_stores_it_is_copied_as_it_is_and_any_other_normalized():
    """The fast path (every field, ints and a float ratio) gives what the full normalization gives."""
    from minbw.model.providers import normalize_inventory, PLACEMENT_INVENTORY_DEFAULTS
    stored = {"total": 10, "reserved": 0, "min_unit": 1, "max_unit": 10, "step_size": 1, "allocation_ratio": 1.0}
    out = normalize_inventory(stored)
    assert out == stored and out is not stored
    for other, want in [({"total": 10}, {**PLACEMENT_INVENTORY_DEFAULTS, "total": 10}),
                        ({**stored, "allocation_ratio": 2}, {**stored, "allocation_ratio": 2.0}),
                        ({**stored, "reserved": True}, {**stored, "reserved": 1}),
                        ({**stored, "total": 10.0}, stored),
                        ({**stored, "extra": 1}, stored)]:
        got = normalize_inventory(other)
        assert got == want and {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in want.items()}, other


def _normalized_in_full(inv):  # normalize_inventory without its fast path, as it was before it
    from minbw.model.providers import INVENTORY_FIELDS, PLACEMENT_INVENTORY_DEFAULTS
    full = {**PLACEMENT_INVENTORY_DEFAULTS, **{k: v for k, v in inv.items() if k in INVENTORY_FIELDS}}
    full["allocation_ratio"] = float(full["allocation_ratio"])
    for k in ("total", "reserved", "min_unit", "max_unit", "step_size"):
        full[k] = int(full[k])
    return full


def test_the_fast_path_of_normalize_inventory_agrees_with_the_full_one_on_generated_inventories():
    from hypothesis import given, settings, strategies as st
    from minbw.model.providers import INVENTORY_FIELDS, normalize_inventory
    value = st.one_of(st.integers(0, 2**31 - 1), st.booleans(), st.floats(0, 1e6, allow_nan=False))
    keys = st.sampled_from(INVENTORY_FIELDS + ("extra",))

    @settings(max_examples=300, deadline=None)
    @given(st.dictionaries(keys, value))
    def check(inv):
        if "total" not in inv:  # no total: both refuse it
            with pytest.raises(KeyError):
                _normalized_in_full(inv)
            with pytest.raises(KeyError):
                normalize_inventory(inv)
            return
        got, want = normalize_inventory(inv), _normalized_in_full(inv)
        assert got == want and {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in want.items()}
    check()
