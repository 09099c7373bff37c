"""ML2/OVN chassis options: differential against Neutron's OVN placement extension (the oracle runs
Neutron's own ``_parse_ovn_cms_options``, ``build_placement_state`` and ``PlacementState.deferred_sync``)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from minbw.errors import ConfigError
from minbw.model.providers import Provider, inventory_problems, normalize_inventory
from minbw.neutron import naming, ovn
from minbw.neutron.provider_tree import desired_state
from minbw.plan.providers import Observed, make_plan
from tests.support.oracle import neutron_ovn as oracle

FAST = settings(max_examples=300, deadline=None)
OVN = naming.AGENT_KINDS[naming.OVN]
EXISTING = ("hv1", "hv2", "host0")     # providers Placement has (Neutron's name2uuid)
NAME2UUID = oracle.name2uuid(EXISTING)

bridges = st.sampled_from(["br-ex", "br-a", "rp_tunnelled", "br-b", "", " br-a"])
good_bridges = st.sampled_from(["br-ex", "br-a", "rp_tunnelled", "br-b"])
hypervisors = st.sampled_from(["hv1", "hv2", "hv3", "host0", ""])
good_hypervisors = st.sampled_from(["hv1", "hv2", "hv3", "host0"])
rates = st.sampled_from(["", "0", "1000", "10000", "-1", "x", "2147483648"])
good_rates = st.sampled_from(["", "0", "1000", "10000"])
physnets = st.sampled_from(["physnet0", "physnet1", "public"])

# wild: every malformation Neutron's parsers meet; good: what a careful operator writes
bandwidth_entry = {
    "wild": st.one_of(st.builds(lambda b, e, i: f"{b}:{e}:{i}", bridges, rates, rates),
                      st.builds(lambda b: b, bridges),
                      st.builds(lambda b, e: f"{b}:{e}", bridges, rates),
                      st.builds(lambda b: f"{b}:1:2:3", bridges)),
    "good": st.builds(lambda b, e, i: f"{b}:{e}:{i}", good_bridges, good_rates, good_rates)}
inventory_entry = {
    "wild": st.sampled_from(["min_unit:10", "allocation_ratio:1.5", "max_unit:5000", "reserved:3", "step_size:2",
                             "reserved:100000", "bogus:1", "min_unit", "reserved:x", "min_unit:1:2",
                             "allocation_ratio:", "", "min_unit:2", "max_unit_min_unit:4"]),
    "good": st.sampled_from(["min_unit:10", "allocation_ratio:1.5", "max_unit:5000", "reserved:3", "step_size:2",
                             "bogus:1", "min_unit:1:2"])}
hypervisor_entry = {
    "wild": st.one_of(st.builds(lambda b, h: f"{b}:{h}", bridges, hypervisors), bridges,
                      st.builds(lambda b, h: f"{b}:{h}:x", bridges, hypervisors)),
    "good": st.builds(lambda b, h: f"{b}:{h}", good_bridges, good_hypervisors)}


@st.composite
def option(draw, name: str, entries, mode: str) -> str:
    """One cms option the way people (and typos) write it: NAME=VALUE, or without '=', or with a prefix
    that still contains the name (Neutron matches by substring), or with a second '='."""
    items = draw(st.lists(entries, max_size=3, unique_by=(lambda e: e.split(":")[0]) if mode == "good" else None))
    value = ";".join(items)
    forms = ["plain"] if mode == "good" else ["plain", "plain", "no-eq", "prefix", "second-eq", "spaces"]
    form = draw(st.sampled_from(forms))
    return {"plain": f"{name}={value}", "no-eq": name, "prefix": f"x{name}={value}",
            "second-eq": f"{name}={value}=tail", "spaces": f" {name}={value} "}[form]


@st.composite
def other_configs(draw) -> dict:
    """A Chassis row's other_config: bridge mappings and cms options, well-formed (mostly) or not."""
    mode = draw(st.sampled_from(["coherent", "coherent", "good", "good", "wild"]))
    if mode == "coherent":  # what minbw's configure path writes: every bridge mapped and placed
        chosen = draw(st.lists(good_bridges, min_size=1, max_size=3, unique=True))
        bw = ";".join(f"{b}:{draw(good_rates)}:{draw(good_rates)}" for b in chosen)
        hyp = ";".join(f"{b}:{draw(good_hypervisors)}" for b in chosen)
        inv = draw(st.sampled_from(["", ",resource_provider_inventory_defaults=min_unit:10;allocation_ratio:2.0"]))
        mapped = [b for b in chosen if b != "rp_tunnelled"]
        return {ovn.CMS_OPTIONS: f"enable-chassis-as-gw,resource_provider_bandwidths={bw},"
                                 f"resource_provider_hypervisors={hyp}{inv}",
                ovn.BRIDGE_MAPPINGS: ",".join(f"physnet{i}:{b}" for i, b in enumerate(mapped))}
    options = []
    if draw(st.booleans()):
        options.append("enable-chassis-as-gw")
    options.append(draw(option(ovn.BANDWIDTHS, bandwidth_entry[mode], mode)))
    if draw(st.booleans()):
        options.append(draw(option(ovn.INVENTORY, inventory_entry[mode], mode)))
    if draw(st.integers(0, 4)):
        options.append(draw(option(ovn.HYPERVISORS, hypervisor_entry[mode], mode)))
    if draw(st.booleans()):
        options.append(draw(st.sampled_from(["availability-zones=az1:az2", "rp_tunnelled:hv1", "",
                                             f"{ovn.HYPERVISORS}=br-b:hv2", f"{ovn.BANDWIDTHS}=br-b:5:5"])))
    options = draw(st.permutations(options))
    bridges_ = st.sampled_from(["br-ex", "br-a", "br-b"])
    pairs = draw(st.lists(st.tuples(physnets, bridges_), max_size=3,
                          unique_by=(lambda p: p[0], lambda p: p[1]) if mode == "good" else None))
    config = {ovn.CMS_OPTIONS: ",".join(options)}
    if pairs or draw(st.booleans()):
        tail = draw(st.sampled_from(["", ",", ", x"] if mode == "wild" else ["", ","]))
        config[ovn.BRIDGE_MAPPINGS] = ",".join(f"{p}:{b}" for p, b in pairs) + tail
    return config


def chassis(other_config: dict, name: str = "chassis-0", hostname: str = "host0") -> ovn.Chassis:
    return ovn.Chassis(name=name, hostname=hostname, bridge_mappings=other_config.get(ovn.BRIDGE_MAPPINGS),
                       cms_options=other_config.get(ovn.CMS_OPTIONS), source="test")


def neutron_parse(other_config: dict):
    try:
        return oracle.parse(other_config)
    except oracle.NEUTRON_ERRORS as e:
        return e


# ---------------------------------------------------------------- parsing

@FAST
@given(other_configs())
def test_parsing_matches_neutron(other_config):
    theirs = neutron_parse(other_config)
    if isinstance(theirs, Exception):
        with pytest.raises(ConfigError) as err:
            ovn.parse_chassis(chassis(other_config))
        if isinstance(theirs, ValueError):  # neutron-lib's own message, with the option and chassis named
            assert str(theirs) in str(err.value)
        return
    mappings, cms = theirs
    ours = ovn.parse_chassis(chassis(other_config))
    assert {p: [b] for p, b in ours.bridge_mappings.items()} == mappings
    assert dict(ours.bandwidths) == cms[ovn.BANDWIDTHS]
    assert dict(ours.inventory_defaults) == cms[ovn.INVENTORY]
    assert dict(ours.hypervisors) == cms[ovn.HYPERVISORS]


@FAST
@given(st.lists(st.text(alphabet="abr=_-:;, ", max_size=12), max_size=4),
       st.sampled_from(list(ovn.PLACEMENT_OPTIONS)))
def test_option_lookup_matches_neutron(options, name):
    """Substring match, first one wins, value between the first and second '=' (or None)."""
    assert ovn.placement_option(name, options) == oracle.ovn_placement._parse_placement_option(name, options)


# ---------------------------------------------------------------- the provider tree

def neutron_tree(other_config: dict, old: dict | None = None) -> dict:
    return oracle.tree(oracle.deferred(other_config, NAME2UUID, old))


def roots(names=EXISTING) -> dict:
    return {n: Provider(uuid=NAME2UUID[n], name=n, generation=1, parent_uuid=None, root_uuid=NAME2UUID[n])
            for n in names}


def observed(providers: dict | None = None) -> Observed:
    return Observed(providers=providers or {}, roots=roots(), traits={}, inventories={},
                    existing_traits=frozenset(), allocations={})


def ours_tree(other_config: dict, **kw):
    config, warnings = ovn.chassis_config(chassis(other_config))
    desired = desired_state([config], warnings, **kw)
    return desired, config, warnings


@settings(max_examples=300, deadline=None)
@given(other_configs())
def test_provider_tree_matches_neutron(other_config):
    """Names, uuids, parents, traits and inventories of every provider, and the global traits."""
    if isinstance(neutron_parse(other_config), Exception):
        return
    theirs = neutron_tree(other_config)
    try:
        desired, _, _ = ours_tree(other_config)
    except ConfigError as e:  # only what Placement itself would refuse: an inventory
        assert "Placement would refuse" in str(e)
        assert any(inventory_problems(normalize_inventory(inv))
                   for invs in theirs["inventories"].values() for inv in invs.values())
        return
    plan = make_plan(desired, observed())
    assert {op.name for op in plan.ops if op.action == "create_trait"} == theirs["traits"]
    assert {p.uuid: (p.name, p.parent_uuid) for p in plan.providers} == theirs["providers"]
    assert {p.uuid: set(p.traits) for p in plan.providers} == theirs["provider_traits"]
    assert {p.uuid: {rc: dict(i) for rc, i in p.inventories.items()} for p in plan.providers if p.inventories} == {
        u: {rc: normalize_inventory(i) for rc, i in invs.items()} for u, invs in theirs["inventories"].items()}


@settings(max_examples=200, deadline=None)
@given(other_configs())
def test_a_warning_for_each_bridge_neutron_skips(other_config):
    """Every bridge with bandwidth that Neutron leaves without a provider is named, with why."""
    theirs = neutron_parse(other_config)
    if isinstance(theirs, Exception):
        return
    mappings, cms = theirs
    try:
        desired, _, warnings = ours_tree(other_config)
    except ConfigError:
        return
    plan = make_plan(desired, observed())
    reported = {name.rsplit(":", 1)[1] for name, _ in neutron_tree(other_config)["providers"].values()
                if name.count(":") == 2}
    text = "\n".join(plan.warnings)
    for bridge in cms[ovn.BANDWIDTHS]:
        if bridge in reported:
            continue
        hyp = cms[ovn.HYPERVISORS].get(bridge)
        if hyp is None:
            assert f"bridge {bridge if bridge.strip() == bridge and bridge else repr(bridge)} of" in text
            assert ovn.HYPERVISORS in text
        elif hyp not in EXISTING:
            assert f"no resource provider named {hyp!r}" in text and bridge in text
        else:
            assert ovn.BRIDGE_MAPPINGS in text or bridge == ""


@settings(max_examples=200, deadline=None)
@given(other_configs(), other_configs())
def test_bridges_that_left_the_options_are_deleted_as_neutron_does(old, new):
    """Neutron deletes the providers of bridges that left ``resource_provider_bandwidths`` (on the Chassis
    update event). minbw, reading every chassis (the southbound database), deletes those too, and ends
    with exactly the device providers Neutron builds from the new options (Neutron leaves a provider
    whose bridge stays in the bandwidths but lost its hypervisor entry or mapping: minbw does not)."""
    if any(isinstance(neutron_parse(c), Exception) for c in (old, new)):
        return
    try:
        before = neutron_tree(old)
        theirs = neutron_tree(new, old)
        desired, _, _ = ours_tree(new, sweep_kinds=[naming.OVN])
    except (ConfigError, KeyError):  # KeyError: Neutron's own crash when a deleted bridge's hypervisor is gone
        return
    in_placement = {u: Provider(uuid=u, name=n, generation=1, parent_uuid=p, root_uuid="r")
                    for u, (n, p) in before["providers"].items()}
    plan = make_plan(desired, observed(in_placement))
    deleted = {op.uuid for op in plan.ops if op.action == "delete_provider"}
    assert theirs["deleted"] & set(in_placement) <= deleted
    fresh_devices = {u for u, (n, _) in neutron_tree(new)["providers"].items() if n.count(":") == 2}
    left = {u for u, (n, _) in before["providers"].items() if n.count(":") == 2} - deleted
    assert left | {p.uuid for p in plan.providers if p.role == "device"} == fresh_devices


def test_one_compute_sweeps_its_own_agents():
    """From one compute's options (not every chassis), the stale providers found are those under the
    agent providers of its host and of the hypervisors its options name."""
    old = {ovn.BRIDGE_MAPPINGS: "physnet0:br-ex,physnet1:br-a",
           ovn.CMS_OPTIONS: "resource_provider_bandwidths=br-ex:1000:1000;br-a:5:5,"
                            "resource_provider_hypervisors=br-ex:host0;br-a:host0"}
    new = {ovn.BRIDGE_MAPPINGS: "physnet0:br-ex", ovn.CMS_OPTIONS: "enable-chassis-as-gw"}
    before = neutron_tree(old)
    in_placement = {u: Provider(uuid=u, name=n, generation=1, parent_uuid=p, root_uuid="r")
                    for u, (n, p) in before["providers"].items()}
    desired, _, _ = ours_tree(new)
    assert not desired.providers
    plan = make_plan(desired, observed(in_placement))
    assert {op.name for op in plan.ops if op.action == "delete_provider"} == {
        "host0:OVN Controller agent:br-ex", "host0:OVN Controller agent:br-a"}
    assert neutron_tree(new, old)["deleted"] == {op.uuid for op in plan.ops if op.action == "delete_provider"}


# ---------------------------------------------------------------- fixed cases and messages

SEED = {ovn.BRIDGE_MAPPINGS: "physnet0:br-ex",
        ovn.CMS_OPTIONS: "enable-chassis-as-gw,availability-zones=az1,"
                         "resource_provider_bandwidths=br-ex:1000000:1000000;br-a:10:10,"
                         "resource_provider_inventory_defaults=allocation_ratio:1.0;min_unit:10,"
                         "resource_provider_hypervisors=br-ex:devstack0"}


def test_names_and_uuids_of_the_ovn_tree():
    desired, config, warnings = ours_tree(SEED)
    by_name = {p.name: p for p in desired.providers}
    agent = by_name["devstack0:OVN Controller agent"]
    device = by_name["devstack0:OVN Controller agent:br-ex"]
    assert agent.uuid == naming.agent_rp_uuid(OVN, "devstack0")
    assert device.uuid == naming.device_rp_uuid(OVN, "devstack0", "br-ex") and device.parent_uuid == agent.uuid
    assert set(device.traits) == {"CUSTOM_PHYSNET_PHYSNET0", *(naming.vnic_type_trait(v) for v in OVN.vnic_types)}
    assert device.inventories["NET_BW_EGR_KILOBIT_PER_SEC"]["min_unit"] == 10
    assert warnings == ["chassis chassis-0 (host0): Neutron silently reports no bandwidth for bridge br-a of "
                        "resource_provider_bandwidths: no entry in ovn-cms-options resource_provider_hypervisors "
                        "(add br-a:HYPERVISOR) and not in ovn-bridge-mappings (map a physnet to it, or name it "
                        "rp_tunnelled for tunnelled networks)"]


def test_quirks_are_named():
    config = {ovn.BRIDGE_MAPPINGS: "physnet0:br-ex",
              ovn.CMS_OPTIONS: "resource_provider_bandwidths=br-ex:1:1,"
                               "resource_provider_inventory_defaults=min_unit:1;bogus:3;min_unit:2,"
                               "resource_provider_hypervisors=br-ex:host0,rp_tunnelled:host0,"
                               "resource_provider_bandwidths=br-ex:2:2"}
    _, _, warnings = ours_tree(config)
    text = "\n".join(warnings)
    assert "ignores the resource_provider_inventory_defaults entry 'bogus:3'" in text
    assert "sets min_unit more than once; Neutron uses the last ('min_unit:2')" in text
    assert "ignores the ovn-cms-options entry 'rp_tunnelled:host0'" in text
    assert "2 options containing resource_provider_bandwidths; Neutron uses only the first" in text


def test_a_parse_error_names_the_chassis_and_option():
    bad = {ovn.CMS_OPTIONS: "resource_provider_bandwidths=br-ex:1:2:3"}
    with pytest.raises(ConfigError) as err:
        ovn.chassis_config(chassis(bad, name="c1"))
    assert str(err.value).startswith("chassis c1 (test): ovn-cms-options resource_provider_bandwidths: Cannot parse "
                                     "resource_provider_bandwidths. Expected a tuple with 3 values, got: br-ex:1:2:3")


def test_missing_root_is_skipped_with_a_warning_as_neutron_does():
    config = {ovn.BRIDGE_MAPPINGS: "physnet0:br-ex",
              ovn.CMS_OPTIONS: "resource_provider_bandwidths=br-ex:1:1,resource_provider_hypervisors=br-ex:nowhere"}
    desired, _, _ = ours_tree(config)
    plan = make_plan(desired, observed())
    assert not plan.providers and not [op for op in plan.ops if op.action != "create_trait"]
    assert "no resource provider named 'nowhere' in Placement" in plan.warnings[0]
    assert neutron_tree(config)["providers"] == {}
    plan = make_plan(desired, observed(), create_root=True)
    assert {p.name for p in plan.providers} == {"nowhere:OVN Controller agent", "nowhere:OVN Controller agent:br-ex"}


# ---------------------------------------------------------------- configuring a chassis

@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["br-ex", "br-a", "rp_tunnelled"]),
                       st.fixed_dictionaries({}, optional={"egress": st.integers(0, 10**7),
                                                           "ingress": st.integers(0, 10**7)}), max_size=3),
       st.sampled_from([{}, {"min_unit": 10}, {"allocation_ratio": 1.5, "reserved": 2}]),
       st.sampled_from([{}, {"br-ex": "hv1"}, {"br-a": "hv2", "rp_tunnelled": "hv1"}]),
       st.sampled_from(["", "enable-chassis-as-gw", "availability-zones=az1:az2,enable-chassis-as-gw",
                        "resource_provider_bandwidths=br-z:1:1,enable-chassis-as-gw"]))
def test_configured_options_read_back_through_neutron(bandwidths, inventory, hypervisors, other):
    """What the configure path writes, Neutron parses back to exactly the values, reports every bridge,
    and the deployment's other cms options are kept in order."""
    current = {ovn.BRIDGE_MAPPINGS: "physnet0:br-ex", ovn.CMS_OPTIONS: other}
    values = {"bridge_mappings": {"physnet0": "br-ex", "physnet1": "br-a"}, ovn.BANDWIDTHS: bandwidths,
              ovn.INVENTORY: inventory, ovn.HYPERVISORS: hypervisors}
    try:
        after = ovn.configured_chassis(current, values, hostname="host0")
    except ConfigError as e:
        assert "Placement would refuse" in str(e)
        return
    mappings, cms = oracle.parse(after)
    assert mappings == {"physnet0": ["br-ex"], "physnet1": ["br-a"]}
    assert cms[ovn.BANDWIDTHS] == {b: {"egress": bw.get("egress"), "ingress": bw.get("ingress")}
                                   for b, bw in bandwidths.items()}
    assert cms[ovn.INVENTORY] == inventory
    assert cms[ovn.HYPERVISORS] == {**{b: "host0" for b in bandwidths}, **hypervisors}
    kept = [o for o in ovn.cms_options(other) if o and not o.startswith(ovn.BANDWIDTHS)]
    assert [o for o in ovn.cms_options(after[ovn.CMS_OPTIONS])
            if o and o.partition("=")[0] not in ovn.PLACEMENT_OPTIONS] == kept
    reported = {n.rsplit(":", 1)[1] for n, _ in oracle.tree(oracle.deferred(
        after, oracle.name2uuid(["host0", "hv1", "hv2"])))["providers"].values() if n.count(":") == 2}
    assert reported == set(bandwidths)
    # idempotent: configuring again changes nothing; absent removes exactly the bandwidth options
    assert ovn.configured_chassis(after, values, hostname="host0") == after
    gone = ovn.configured_chassis(after, {}, hostname="host0", state="absent")
    assert gone[ovn.CMS_OPTIONS] == (",".join(kept) or None)


def test_configure_refuses_what_neutron_would_skip_or_misread():
    current = {ovn.BRIDGE_MAPPINGS: "physnet0:br-ex", ovn.CMS_OPTIONS: "enable-chassis-as-gw"}
    with pytest.raises(ConfigError, match="Neutron would not report bridge.s. br-x: not in ovn-bridge-mappings"):
        ovn.configured_chassis(current, {ovn.BANDWIDTHS: {"br-x": {"egress": 1}}}, hostname="h")
    with pytest.raises(ConfigError, match="contains ';'"):
        ovn.configured_chassis(current, {ovn.BANDWIDTHS: {"br;x": {"egress": 1}}}, hostname="h")
    with pytest.raises(ConfigError, match="Unexpected options: bogus"):
        ovn.configured_chassis(current, {ovn.INVENTORY: {"bogus": 1}}, hostname="h")
    shadowed = {**current, ovn.CMS_OPTIONS: "old_resource_provider_bandwidths=br-ex:1:1"}
    with pytest.raises(ConfigError, match="matches ovn-cms-options by substring"):
        ovn.configured_chassis(shadowed, {ovn.BANDWIDTHS: {"br-ex": {"egress": 1}}}, hostname="h")


def test_ovsdb_json_and_vsctl_arguments():
    sb = {"headings": ["name", "hostname", "other_config"],
          "data": [["c1", "devstack0", ["map", [["ovn-bridge-mappings", "physnet0:br-ex"],
                                                 ["ovn-cms-options", "enable-chassis-as-gw"]]]]]}
    found, complete = ovn.chassis_of_rows(ovn.ovsdb_rows(sb, "sb"), "sb")
    assert complete and found == [ovn.Chassis("c1", "devstack0", "physnet0:br-ex", "enable-chassis-as-gw",
                                              "sb row c1")]
    ovs = {"headings": ["external_ids"], "data": [[["map", [["system-id", "c2"], ["ovn-cms-options", "a=b"]]]]]}
    found, complete = ovn.chassis_of_rows(ovn.ovsdb_rows(ovs, "ovs"), "ovs", hostname="me")
    assert not complete and found[0].name == "c2" and found[0].hostname == "me" and found[0].cms_options == "a=b"
    assert ovn.vsctl_update_args({"ovn-cms-options": 'a=b,c', "ovn-bridge-mappings": None}) == [
        "set", "Open_vSwitch", ".", 'external_ids:ovn-cms-options="a=b,c"',
        "--", "remove", "Open_vSwitch", ".", "external_ids", "ovn-bridge-mappings"]


def test_neutron_deletes_nothing_for_a_chassis_read_at_start():
    """neutron-server's API worker reads each Chassis row at start as a create event, without the old row:
    Neutron's own code deletes nothing then, so a bridge that left the options while it was down keeps its
    provider (minbw's sync from the southbound deletes it: test_bridges_that_left_the_options_are_deleted...)."""
    old = {ovn.BRIDGE_MAPPINGS: "physnet0:br-ex,physnet1:br-a",
           ovn.CMS_OPTIONS: "resource_provider_bandwidths=br-ex:1:1;br-a:2:2,"
                            "resource_provider_hypervisors=br-ex:host0;br-a:host0"}
    new = {ovn.BRIDGE_MAPPINGS: "physnet0:br-ex", ovn.CMS_OPTIONS: "resource_provider_bandwidths=br-ex:1:1,"
                                                                   "resource_provider_hypervisors=br-ex:host0"}
    assert neutron_tree(new, old)["deleted"] == {naming.device_rp_uuid(OVN, "host0", "br-a")}  # the update event
    assert neutron_tree(new)["deleted"] == set()  # the create event at start
    # a bridge that stays in the bandwidths but loses its hypervisor entry, or moves to another hypervisor:
    # its provider is neither updated nor deleted
    lost = {**old, ovn.CMS_OPTIONS: old[ovn.CMS_OPTIONS].replace(";br-a:host0", "")}
    moved = {**old, ovn.CMS_OPTIONS: old[ovn.CMS_OPTIONS].replace("br-a:host0", "br-a:hv1")}
    for new in (lost, moved):
        calls = neutron_tree(new, old)
        assert calls["deleted"] == set()
        assert naming.device_rp_uuid(OVN, "host0", "br-a") not in calls["providers"]


def test_cms_options_override_for_a_deployment_tool():
    values = {"bridge_mappings": {"physnet1": "br-ex"},
              "resource_provider_bandwidths": {"br-ex": {"egress": 10, "ingress": 20}}}
    assert ovn.cms_options_override(["enable-chassis-as-gw"], values, "compute1") == (
        "enable-chassis-as-gw,resource_provider_bandwidths=br-ex:10:20,resource_provider_hypervisors=br-ex:compute1")
    assert ovn.cms_options_override("", {**values, "resource_provider_hypervisors": {"br-ex": "c1.example"}}) == (
        "resource_provider_bandwidths=br-ex:10:20,resource_provider_hypervisors=br-ex:c1.example")
    with pytest.raises(ConfigError, match="no hypervisor name for bridge.s. br-ex"):
        ovn.cms_options_override("", values)
    with pytest.raises(ConfigError, match="give bridge_mappings"):
        ovn.cms_options_override("", {"resource_provider_bandwidths": {"br-ex": {"egress": 1}}}, "h")
