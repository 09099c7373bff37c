"""Provider sync against the real embedded Placement."""
from __future__ import annotations

import json
import sys
import time
import types

import pytest
from neutron_lib.exceptions.placement import PlacementClientError
from hypothesis import HealthCheck, given, settings, strategies as st

from minbw.neutron import naming
from minbw.ops import sync as s
from minbw.neutron.agentconf import load_agent_ini
from minbw.errors import ConcurrentUpdate, ConfigError, InvalidInput, PartialApply, RootProviderNotFound
from minbw.cache import check as cache_check
from minbw.cache.providers import default_cache_path
from minbw.plan.providers import make_plan
from minbw.neutron.provider_tree import desired_state
from tests.conftest import wipe
from tests.support.compute_roots import compute_root
from tests.support.oracle import neutron_sync as oracle
from tests.support import cli_forks

OVS_INI = """[ovs]
resource_provider_bandwidths = br-test:1500:1500,br-ex::1
bridge_mappings = public:br-ex,physnet0:br-test
"""
SRIOV_INI = """[sriov_nic]
physical_device_mappings = physnet0:ens5
resource_provider_bandwidths = ens5:100000:100000
"""
SEED_003 = {  # uuid: (name, parent uuid or "root", traits, {class: total})
    "89ca1421-5117-5348-acab-6d0e2054239c": ("devstack0:Open vSwitch agent", "root", None, {}),
    "4a8a819d-61f9-5822-8c5c-3e9c7cb942d6": ("devstack0:NIC Switch agent", "root", None, {}),
    "f9c9ce07-679d-5d72-ac5f-31720811629a": ("devstack0:Open vSwitch agent:br-test",
                                             "89ca1421-5117-5348-acab-6d0e2054239c", "CUSTOM_PHYSNET_PHYSNET0",
                                             {"NET_BW_EGR_KILOBIT_PER_SEC": 1500, "NET_BW_IGR_KILOBIT_PER_SEC": 1500}),
    "193134fd-464c-5545-9d20-df7d58c0166f": ("devstack0:Open vSwitch agent:br-ex",
                                             "89ca1421-5117-5348-acab-6d0e2054239c", "CUSTOM_PHYSNET_PUBLIC",
                                             {"NET_BW_IGR_KILOBIT_PER_SEC": 1}),
    "1c7e83f0-108d-5c35-ada7-7ebebbe43aad": ("devstack0:NIC Switch agent:ens5",
                                             "4a8a819d-61f9-5822-8c5c-3e9c7cb942d6", "CUSTOM_PHYSNET_PHYSNET0",
                                             {"NET_BW_EGR_KILOBIT_PER_SEC": 100000, "NET_BW_IGR_KILOBIT_PER_SEC": 100000}),
}


def desired(*inis, host="devstack0"):
    return desired_state([load_agent_ini(t, source=f"agent{i}.ini", host=host) for i, t in enumerate(inis)])


def make_root(api, name="devstack0"):
    """A compute node root provider, as nova-compute creates it (seed 003's UUID for devstack0)."""
    return compute_root(api, name, uuid="3b36d91e-bf60-460f-b1f8-3322dee5cdfd" if name == "devstack0" else None)


def tree(api, root_name="devstack0"):
    """The provider tree as stored: {uuid: (name, parent, traits, inventories)} (generations left out)."""
    root = api.list_providers(name=root_name)[0]
    out = {}
    for p in api.list_providers(in_tree=root.uuid):
        if p.uuid == root.uuid:
            continue
        out[p.uuid] = (p.name, p.parent_uuid, sorted(api.get_provider_traits(p.uuid)[0]),
                       api.get_inventories(p.uuid)[0])
    return out


def test_seed_003_gives_neutrons_providers(placement):
    root = make_root(placement)
    plan, result = s.sync_providers(placement, desired(OVS_INI, SRIOV_INI))
    assert result.writes == len(plan.ops) > 0
    got = tree(placement)
    assert set(got) == set(SEED_003)
    for uuid, (name, parent, physnet, totals) in SEED_003.items():
        g_name, g_parent, g_traits, g_inv = got[uuid]
        assert g_name == name
        assert g_parent == (root if parent == "root" else parent)
        if physnet:
            assert physnet in g_traits
        assert {rc: inv["total"] for rc, inv in g_inv.items()} == totals
        for inv in g_inv.values():
            assert (inv["min_unit"], inv["step_size"], inv["reserved"], inv["allocation_ratio"]) == (1, 1, 0, 1.0)
    assert got["1c7e83f0-108d-5c35-ada7-7ebebbe43aad"][2] == [
        "CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_ACCELERATOR_DIRECT", "CUSTOM_VNIC_TYPE_DIRECT",
        "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL", "CUSTOM_VNIC_TYPE_MACVTAP"]


def test_identical_to_neutrons_own_sync_for_seed_003(placement, placement_server):
    """Neutron's PlacementState executed by neutron-lib's client, then ours: the same tree."""
    make_root(placement)
    client = oracle.neutron_client(placement_server.url)
    for text in (OVS_INI, SRIOV_INI):
        oracle.neutron_sync(client, *oracle.agent_from_ini(text, "devstack0"))
    theirs = tree(placement)
    placement.counter.reset()
    plan, result = s.sync_providers(placement, desired(OVS_INI, SRIOV_INI))
    assert plan.ops == () and result is None, [str(o) for o in plan.ops]
    assert placement.counter.writes == 0
    assert set(theirs) == set(SEED_003)


ini_cases = st.builds(
    lambda kind, pairs, bws, inv, hyp: (kind, pairs, bws, inv, hyp),
    st.sampled_from(["openvswitch", "sriov"]),
    st.lists(st.tuples(st.sampled_from(["physnet0", "ph-1.x", "public"]), st.sampled_from(["br-a", "br-b", "ens5"])),
             min_size=1, max_size=3, unique_by=lambda t: t[1]),
    st.lists(st.tuples(st.sampled_from(["br-a", "br-b", "ens5", "rp_tunnelled"]),
                       st.sampled_from(["", "0", "1000"]), st.sampled_from(["", "5", "2000"])),
             max_size=3, unique_by=lambda t: t[0]),
    st.sampled_from(["", "min_unit:2", "allocation_ratio:1.5,reserved:10,max_unit:100"]),
    st.sampled_from(["", "br-a:hv-other"]),
)


def ini_text(kind, pairs, bws, inv, hyp):
    if kind == "openvswitch":
        pairs = list({p: d for p, d in pairs}.items())  # bridge_mappings: one bridge per physnet
        head = "[ovs]\nbridge_mappings = " + ",".join(f"{p}:{d}" for p, d in pairs)
        known = {d for _, d in pairs} | {"rp_tunnelled"}
    else:
        head = "[sriov_nic]\nphysical_device_mappings = " + ",".join(f"{p}:{d}" for p, d in pairs)
        known = {d for _, d in pairs}
    bws = [b for b in bws if b[0] in known]
    lines = [head, "resource_provider_bandwidths = " + ",".join(f"{d}:{e}:{i}" for d, e, i in bws)]
    if inv:
        lines.append("resource_provider_inventory_defaults = " + inv)
    if hyp:
        lines.append("resource_provider_hypervisors = " + hyp)
    return "\n".join(lines) + "\n"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ini_cases)
def test_differential_against_neutron_on_generated_configs(placement, placement_server, case):
    """For generated agent configs: Neutron's sync and ours, each into an empty Placement, store the same tree."""
    from tests.conftest import wipe
    text = ini_text(*case)
    results = []
    for runner in ("neutron", "minbw"):
        wipe(placement)
        make_root(placement, "devstack0")
        make_root(placement, "hv-other")
        try:
            if runner == "neutron":
                oracle.neutron_sync(oracle.neutron_client(placement_server.url),
                                    *oracle.agent_from_ini(text, "devstack0"))
            else:
                s.sync_providers(placement, desired(text))
        except (ValueError, PlacementClientError) as e:  # Placement refused what Neutron sent / we refused first
            results.append(("refused", type(e).__name__))
            continue
        results.append({h: tree(placement, h) for h in ("devstack0", "hv-other")})
    if isinstance(results[0], tuple):
        assert results[1] == ("refused", "ConfigError"), text  # we refuse before writing anything
    else:
        assert results[0] == results[1], text


def test_second_run_makes_no_writes_and_few_calls(placement):
    make_root(placement)
    s.sync_providers(placement, desired(OVS_INI, SRIOV_INI))
    placement.counter.reset()
    plan, result = s.sync_providers(placement, desired(OVS_INI, SRIOV_INI))
    assert plan.ops == () and result is None
    assert placement.counter.writes == 0
    # 2 tree look-ups + 1 trait check + traits and inventories of 5 providers (the version is known)
    assert placement.counter.total == 3 + 2 * 5, placement.counter.calls


def test_changed_bandwidth_is_one_inventory_write(placement):
    make_root(placement)
    s.sync_providers(placement, desired(OVS_INI, SRIOV_INI))
    placement.counter.reset()
    plan, result = s.sync_providers(placement, desired(OVS_INI.replace("br-test:1500:1500", "br-test:2000:1500"), SRIOV_INI))
    assert [o.action for o in plan.ops] == ["set_inventories"]
    assert placement.counter.writes == 1
    assert [c for c in placement.counter.calls if c[0] != "GET"] == [
        ("PUT", "/resource_providers/f9c9ce07-679d-5d72-ac5f-31720811629a/inventories")]
    inv, _ = placement.get_inventories("f9c9ce07-679d-5d72-ac5f-31720811629a")
    assert inv["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 2000


def test_deleted_ovs_providers_come_back_with_the_same_uuids(placement):
    """Seed 003's re-sync: delete the OVS agent's providers (leaves first), sync again."""
    make_root(placement)
    s.sync_providers(placement, desired(OVS_INI, SRIOV_INI))
    before = tree(placement)
    for uuid in ("f9c9ce07-679d-5d72-ac5f-31720811629a", "193134fd-464c-5545-9d20-df7d58c0166f",
                 "89ca1421-5117-5348-acab-6d0e2054239c"):
        placement.delete_provider(uuid)
    assert len(tree(placement)) == 2
    plan, result = s.sync_providers(placement, desired(OVS_INI, SRIOV_INI))
    assert {o.uuid for o in plan.ops if o.action == "create_provider"} == {
        "f9c9ce07-679d-5d72-ac5f-31720811629a", "193134fd-464c-5545-9d20-df7d58c0166f",
        "89ca1421-5117-5348-acab-6d0e2054239c"}
    assert tree(placement) == before


def _plan_then_concurrent_write(placement, change):
    """Plan br-test's bandwidth 3000, then another writer changes br-test before we apply: its generation
    moves on. Returns (desired, observed, plan, the generation the plan saw)."""
    make_root(placement)
    s.sync_providers(placement, desired(OVS_INI, SRIOV_INI))
    want = desired(OVS_INI.replace("br-test:1500:1500", "br-test:3000:3000"), SRIOV_INI)
    observed = s.observe(placement, want)
    plan = make_plan(want, observed)
    inv, gen = placement.get_inventories(BR_TEST)
    placement.set_inventories(BR_TEST, {rc: {**i, **change} for rc, i in inv.items()}, gen)
    return want, observed, plan, gen


BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"


def test_concurrent_writer_conflict_is_retried_and_converges(placement):
    want, observed, plan, _ = _plan_then_concurrent_write(placement, {"total": 2500})
    uuid = BR_TEST
    result = s.apply(placement, plan, observed)
    assert result.retries == 1
    assert placement.get_inventories(uuid)[0]["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 3000
    assert s.sync_providers(placement, want)[0].ops == ()


def test_pinned_generation_is_not_retried(placement):
    want, observed, plan, gen = _plan_then_concurrent_write(placement, {"reserved": 1})
    with pytest.raises(PartialApply) as err:
        s.apply(placement, plan, observed, pinned={BR_TEST: gen})
    assert isinstance(err.value.cause, ConcurrentUpdate)
    assert err.value.code == "placement.concurrent_update" and err.value.status == 409
    assert "0 of 1 planned writes succeeded" in str(err.value)


def _allocate(placement, consumer, rp, resources):
    placement.request("put", f"/allocations/{consumer}", "1.28", json={
        "allocations": {rp: {"resources": resources}}, "project_id": "p", "user_id": "u", "consumer_generation": None})


def test_removed_bridge_with_allocation_is_kept_and_the_consumer_named(placement):
    make_root(placement)
    s.sync_providers(placement, desired(OVS_INI, SRIOV_INI))
    consumer = "71cb7e04-3d5a-40f9-a99f-07f0d0831741"
    _allocate(placement, consumer, "f9c9ce07-679d-5d72-ac5f-31720811629a", {"NET_BW_EGR_KILOBIT_PER_SEC": 1000})
    no_br_test = "[ovs]\nresource_provider_bandwidths = br-ex::1\nbridge_mappings = public:br-ex\n"
    plan, result = s.sync_providers(placement, desired(no_br_test, SRIOV_INI))
    assert [k.uuid for k in plan.kept] == ["f9c9ce07-679d-5d72-ac5f-31720811629a"]
    assert consumer in str(plan.kept[0]) and "NET_BW_EGR_KILOBIT_PER_SEC=1000" in str(plan.kept[0])
    assert "f9c9ce07-679d-5d72-ac5f-31720811629a" in tree(placement)
    # once freed, the next sync removes it
    placement.request("delete", f"/allocations/{consumer}", "1.0")
    plan, result = s.sync_providers(placement, desired(no_br_test, SRIOV_INI))
    assert [(o.action, o.uuid) for o in plan.ops] == [("delete_provider", "f9c9ce07-679d-5d72-ac5f-31720811629a")]
    assert "f9c9ce07-679d-5d72-ac5f-31720811629a" not in tree(placement)


def test_inventory_placement_would_refuse_is_a_config_error(placement):
    make_root(placement)
    placement.counter.reset()
    with pytest.raises(ConfigError) as err:
        s.sync_providers(placement, desired(OVS_INI + "resource_provider_inventory_defaults = reserved:2000\n"))
    assert "Placement would refuse the NET_BW_EGR_KILOBIT_PER_SEC inventory of device br-test: reserved (2000) " \
           "is greater than total (1500)" in str(err.value)
    assert placement.counter.total == 0


def test_bad_configuration_is_a_clear_error_and_zero_writes(placement):
    make_root(placement)
    placement.counter.reset()
    with pytest.raises(ConfigError) as err:
        s.sync_providers(placement, desired(OVS_INI.replace("br-ex::1", "br-missing::1"), SRIOV_INI))
    assert "agent0.ini: resource_provider_bandwidths: Invalid resource_provider_bandwidths: " \
           "Device name br-missing is missing from device mappings. Fix: list only devices mapped in " \
           "bridge_mappings (or rp_tunnelled)." == str(err.value)
    assert placement.counter.total == 0


def test_missing_root_names_the_hypervisor_and_the_fix(placement):
    placement.counter.reset()
    with pytest.raises(RootProviderNotFound) as err:
        s.sync_providers(placement, desired(OVS_INI, host="compute-1.example.org"))
    assert "'compute-1.example.org'" in str(err.value) and "resource_provider_default_hypervisor" in str(err.value)
    assert "create_root" in str(err.value)
    assert placement.counter.writes == 0
    plan, result = s.sync_providers(placement, desired(OVS_INI, host="compute-1.example.org"), create_root=True,
                          root_inventories={"VCPU": {"total": 8}})
    assert [o.action for o in plan.ops].count("create_root") == 1
    assert placement.get_inventories(placement.list_providers(name="compute-1.example.org")[0].uuid)[0]["VCPU"]["total"] == 8


def test_check_mode_plan_writes_nothing_and_diff_ignores_generations(placement):
    make_root(placement)
    s.sync_providers(placement, desired(OVS_INI, SRIOV_INI))
    placement.counter.reset()
    plan, result = s.sync_providers(placement, desired(OVS_INI.replace("br-ex::1", "br-ex::7"), SRIOV_INI), check=True)
    assert result is None and placement.counter.writes == 0
    diff = plan.diff()
    uuid = "193134fd-464c-5545-9d20-df7d58c0166f"
    assert list(diff["before"]) == [uuid] == list(diff["after"])
    assert diff["before"][uuid]["inventories"]["NET_BW_IGR_KILOBIT_PER_SEC"]["total"] == 1
    assert diff["after"][uuid]["inventories"]["NET_BW_IGR_KILOBIT_PER_SEC"]["total"] == 7
    assert "generation" not in json.dumps(diff)


def test_cli_plan_sync_show_json(placement, placement_server, tmp_path):
    make_root(placement)
    (tmp_path / "ovs.ini").write_text(OVS_INI)
    (tmp_path / "sriov.ini").write_text(SRIOV_INI)
    args = ["--agent-config", str(tmp_path / "ovs.ini"), "--agent-config", str(tmp_path / "sriov.ini"),
            "--host", "devstack0", "--json"]

    def run(*a):
        return cli_forks.run([sys.executable, "-m", "minbw.cli", *a], capture_output=True, text=True,
                              env=placement_server.env(), timeout=120)
    out = run("provider", "sync", "--dry-run", *args)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["writes"] > 0 and tree(placement) == {}
    assert run("provider", "sync", *args).returncode == 0
    again = json.loads(run("provider", "sync", *args).stdout)
    assert again["writes"] == 0 and again["changed"] is False
    shown = json.loads(run("provider", "list", "--hypervisor", "devstack0", "--json").stdout)
    assert {p["uuid"] for p in shown} >= set(SEED_003)
    bad = run("provider", "sync", "--agent-config", str(tmp_path / "missing.ini"), "--host", "h")
    assert bad.returncode == 1 and "missing.ini" in bad.stderr
    # keystoneauth logs each answer's body only where it is shown: --debug shows it; without, nothing is made
    debug = run("--debug", "provider", "sync", *args[:-1])
    assert debug.returncode == 0 and "RESP BODY:" in debug.stderr and '"resource_providers"' in debug.stderr
    table = run("provider", "sync", *args[:-1])
    assert table.returncode == 0 and "RESP BODY" not in table.stderr
    assert table.stdout.startswith("Placement already matches the configuration: 0 writes.\n")
    assert table.stdout.strip().splitlines()[-1].startswith("1 host, 5 providers: 0 created, 0 updated, 0 deleted")


def test_keystoneauth_formats_no_answer_for_a_log_nobody_shows():
    """osc-lib sets the root logger to DEBUG and filters in its handlers: keystoneauth's logger is set to the
    lowest level a handler shows, so that it does not format a 30 MB listing's body for nothing."""
    import logging
    from minbw.cli.base import http_log_as_shown
    root, ks = logging.getLogger(""), logging.getLogger("keystoneauth")
    saved = root.handlers[:], root.level, ks.level
    handler = logging.StreamHandler()
    try:
        root.handlers, root.level = [handler], logging.DEBUG
        for shown, enabled in ((logging.WARNING, False), (logging.INFO, False), (logging.DEBUG, True),
                               (logging.NOTSET, True)):
            handler.setLevel(shown)
            http_log_as_shown()
            assert logging.getLogger("keystoneauth.session").isEnabledFor(logging.DEBUG) is enabled, shown
    finally:
        root.handlers, root.level = saved[0], saved[1]
        ks.setLevel(saved[2])


def test_absent_removes_an_agents_providers_and_keeps_allocated_ones(placement):
    make_root(placement)
    s.sync_providers(placement, desired(OVS_INI, SRIOV_INI))
    consumer = "71cb7e04-3d5a-40f9-a99f-07f0d0831741"
    _allocate(placement, consumer, "193134fd-464c-5545-9d20-df7d58c0166f", {"NET_BW_IGR_KILOBIT_PER_SEC": 1})
    plan, result = s.sync_providers(placement, desired(OVS_INI), absent=True, check=True)
    assert [o.uuid for o in plan.ops] == ["f9c9ce07-679d-5d72-ac5f-31720811629a"]  # br-ex and its agent stay
    assert [k.uuid for k in plan.kept] == ["193134fd-464c-5545-9d20-df7d58c0166f"] and consumer in str(plan.kept[0])
    placement.request("delete", f"/allocations/{consumer}", "1.0")
    plan, result = s.sync_providers(placement, desired(OVS_INI), absent=True)
    assert [o.name for o in plan.ops] == ["devstack0:Open vSwitch agent:br-ex", "devstack0:Open vSwitch agent:br-test",
                                          "devstack0:Open vSwitch agent"]
    assert set(tree(placement)) == {"4a8a819d-61f9-5822-8c5c-3e9c7cb942d6", "1c7e83f0-108d-5c35-ada7-7ebebbe43aad"}
    assert s.sync_providers(placement, desired(OVS_INI), absent=True)[0].ops == ()


def three_hosts(placement, inis=(OVS_INI,), hosts=("hv1", "hv2", "hv3")):
    for h in hosts:  # three hypervisors or more: one listing of all providers
        make_root(placement, h)
    return desired_state([load_agent_ini(t, source=f"{h}-{i}.ini", host=h) for h in hosts for i, t in enumerate(inis)])


def test_cache_makes_a_warm_sync_one_listing_and_still_sees_changes(placement, tmp_path):
    want = three_hosts(placement)
    cache_file = tmp_path / "cache.json"
    cache = lambda: s.ProviderCache(cache_file, placement.endpoint())  # noqa: E731
    s.sync_providers(placement, want, cache=cache())
    checks = len(cache_check.listings(cache().entries.values()))
    placement.counter.reset()
    plan, result = s.sync_providers(placement, want, cache=cache())
    # the listing, the safety check's filtered listings and the trait check; no provider read
    assert plan.ops == () and placement.counter.total == 2 + checks
    assert {m for m, _ in placement.counter.calls} == {"GET"}
    # someone else changes one provider: its generation moves, so only it is read again, and fixed
    uuid = naming.device_rp_uuid(naming.AGENT_KINDS["openvswitch"], "hv2", "br-test")
    inv, gen = placement.get_inventories(uuid)
    placement.set_inventories(uuid, {rc: {**i, "total": 7} for rc, i in inv.items()}, gen)
    placement.counter.reset()
    plan, result = s.sync_providers(placement, want, cache=cache())
    assert [(o.action, o.uuid) for o in plan.ops] == [("set_inventories", uuid)]
    assert placement.counter.total == 2 + checks + 2 + 1  # listings, 2 reads of that provider, 1 write
    placement.counter.reset()
    assert s.sync_providers(placement, want, cache=cache())[0].ops == () and placement.counter.total == 2 + checks
    # a cache of another endpoint is not used
    assert s.ProviderCache(cache_file, "http://elsewhere").entries == {}


def test_warm_default_sync_sends_no_write_and_the_same_gets_at_any_size(placement, tmp_path):
    """The number of calls of a warm sync with the cache does not grow with the number of hosts."""
    calls = {}
    for n in (3, 12):
        hosts = tuple(f"n{n}-hv{i}" for i in range(n))
        want = three_hosts(placement, (OVS_INI, SRIOV_INI), hosts)
        cache_file = tmp_path / f"cache-{n}.json"
        s.sync_providers(placement, want, cache=s.ProviderCache(cache_file, placement.endpoint()))
        placement.counter.reset()
        cache = s.ProviderCache(cache_file, placement.endpoint())
        plan, result = s.sync_providers(placement, want, cache=cache)
        assert plan.ops == () and result is None and placement.counter.writes == 0
        assert cache.stats == {"candidates": 5 * n, "checks": cache.stats["checks"], "trusted": 5 * n, "reread": 0,
                               "recent": 0}
        calls[n] = placement.counter.total
    assert calls[3] == calls[12] < 3 * 5 * 2  # fewer than reading the 3 smallest hosts' providers


def _recreate(placement, uuid, traits, inventories):
    """Delete a provider and create it again with the same UUID, name and parent, then set ``traits`` and
    ``inventories`` (in that order, as the sync does): the same generation, other content."""
    old = placement.get_provider(uuid)
    placement.delete_provider(uuid)
    prov = placement.create_provider(uuid, old.name, old.parent_uuid)
    gen = placement.set_provider_traits(uuid, traits, prov.generation)
    gen = placement.set_inventories(uuid, inventories, gen)
    assert gen == old.generation
    return old


@pytest.mark.parametrize("change", ["other trait", "larger total", "other class"])
def test_default_sync_repairs_a_provider_recreated_at_the_same_generation(placement, tmp_path, change):
    want = three_hosts(placement)
    cache_file = tmp_path / "cache.json"
    s.sync_providers(placement, want, cache=s.ProviderCache(cache_file, placement.endpoint()))
    uuid = naming.device_rp_uuid(naming.AGENT_KINDS["openvswitch"], "hv2", "br-test")
    expected = tree(placement, "hv2")
    inv, _ = placement.get_inventories(uuid)
    traits = {"CUSTOM_PHYSNET_PHYSNET0"}
    if change == "other trait":
        traits = {"CUSTOM_PHYSNET_PUBLIC"}  # br-ex's physnet: a trait the cache knows
    elif change == "larger total":
        inv = {rc: {**i, "total": i["total"] * 2, "max_unit": i["total"] * 2} for rc, i in inv.items()}
    else:
        inv = {"NET_BW_EGR_KILOBIT_PER_SEC": inv["NET_BW_EGR_KILOBIT_PER_SEC"]}
    _recreate(placement, uuid, traits, inv)
    assert tree(placement, "hv2") != expected
    cache = s.ProviderCache(cache_file, placement.endpoint())
    plan, result = s.sync_providers(placement, want, cache=cache)
    assert cache.stats["reread"] == 1 and {o.uuid for o in plan.ops} == {uuid}
    assert tree(placement, "hv2") == expected
    placement.counter.reset()
    assert s.sync_providers(placement, want, cache=s.ProviderCache(cache_file, placement.endpoint()))[0].ops == ()
    assert placement.counter.writes == 0


def test_within_the_check_interval_a_warm_sync_is_one_listing_and_writes_no_cache(placement, tmp_path):
    """With ``check_interval`` (the front ends' default, 3600 s) a provider the cache read, wrote or confirmed less
    than that long ago is trusted by its generation alone: the warm sync is the listing and the trait check, and
    the cache file, unchanged, is not written again."""
    want = three_hosts(placement, (OVS_INI, SRIOV_INI))
    cache_file = tmp_path / "cache.json"
    now = [time.time()]
    cache = lambda: s.ProviderCache(cache_file, placement.endpoint(), check_interval=3600,  # noqa: E731
                                    clock=lambda: now[0])
    s.sync_providers(placement, want, cache=cache())
    written = cache_file.stat().st_mtime_ns, cache_file.stat().st_ino
    now[0] += 3599
    placement.counter.reset()
    warm = cache()
    plan, result = s.sync_providers(placement, want, cache=warm)
    assert plan.ops == () and result is None
    assert placement.counter.total == 2 and {m for m, _ in placement.counter.calls} == {"GET"}  # listing, traits
    assert warm.stats == {"candidates": 15, "checks": 0, "trusted": 15, "reread": 0, "recent": 15}
    assert (cache_file.stat().st_mtime_ns, cache_file.stat().st_ino) == written
    assert "(15 confirmed less than 3600 s ago: no check due), 0 re-read" in s.summary(
        want, plan, result, seconds=0.1, calls=2, cache=warm)
    # an hour after the last confirmation the check is due: it runs, and confirms the entries again
    now[0] += 1
    placement.counter.reset()
    due = cache()
    assert s.sync_providers(placement, want, cache=due)[0].ops == ()
    checks = len(cache_check.listings(due.entries.values()))
    assert due.stats == {"candidates": 15, "checks": checks, "trusted": 15, "reread": 0, "recent": 0}
    assert placement.counter.total == 2 + checks
    now[0] += 3599
    placement.counter.reset()
    assert s.sync_providers(placement, want, cache=cache())[0].ops == () and placement.counter.total == 2


def test_a_provider_recreated_at_the_same_generation_is_repaired_once_the_check_is_due(placement, tmp_path):
    """The bound the check interval states: a provider deleted and re-created by someone else at the same
    generation with another trait goes unseen while its entry was confirmed less than ``check_interval`` ago,
    and is read again and repaired by the first sync after that."""
    want = three_hosts(placement)
    cache_file = tmp_path / "cache.json"
    now = [time.time()]
    cache = lambda: s.ProviderCache(cache_file, placement.endpoint(), check_interval=600,  # noqa: E731
                                    clock=lambda: now[0])
    s.sync_providers(placement, want, cache=cache())
    uuid = naming.device_rp_uuid(naming.AGENT_KINDS["openvswitch"], "hv2", "br-test")
    expected = tree(placement, "hv2")
    inv, _ = placement.get_inventories(uuid)
    _recreate(placement, uuid, {"CUSTOM_PHYSNET_PUBLIC"}, inv)
    now[0] += 599
    assert s.sync_providers(placement, want, cache=cache())[0].ops == ()  # within the bound: trusted
    assert tree(placement, "hv2") != expected
    now[0] += 1
    due = cache()
    plan, _ = s.sync_providers(placement, want, cache=due)
    assert due.stats["reread"] == 1 and {o.uuid for o in plan.ops} == {uuid}
    assert tree(placement, "hv2") == expected


def test_a_cache_without_changes_takes_in_what_another_sync_saved(placement, tmp_path):
    """Saving a cache that changed nothing writes nothing; when another sync saved meanwhile, its entries are
    taken in (a long-lived reader, the exporter's, sees them)."""
    want = three_hosts(placement)
    cache_file = tmp_path / "cache.json"
    s.sync_providers(placement, want, cache=s.ProviderCache(cache_file, placement.endpoint()))
    mine = s.ProviderCache(cache_file, placement.endpoint())
    other = s.ProviderCache(cache_file, placement.endpoint())
    first = next(iter(other.entries))
    other.drop(first)
    other.save()
    assert first in mine.entries
    mine.save()
    assert first not in mine.entries and set(mine.entries) == set(other.entries)
    written = cache_file.stat().st_mtime_ns
    mine.save()
    assert cache_file.stat().st_mtime_ns == written


@pytest.mark.parametrize("bad", [-1, "soon", True])
def test_a_bad_check_interval_is_a_clear_error_and_zero_calls(placement, tmp_path, bad):
    from minbw.usecases import providers
    from minbw.usecases.cloud import Cache
    (tmp_path / "ovs.ini").write_text(OVS_INI)
    cloud = types.SimpleNamespace(placement=placement, progress=None)
    placement.counter.reset()
    with pytest.raises(InvalidInput, match=r"cache_check_interval: expected seconds >= 0 \(0 runs the safety "
                                           r"check at every sync; default 3600\), got"):
        providers.sync(cloud, providers.ProvidersRequest(agent_configs=(str(tmp_path / "ovs.ini"),), host="hv1",
                                                         cache=Cache.at(str(tmp_path / "c.json")),
                                                         cache_check_interval=bad))
    assert placement.counter.total == 0


def test_cache_max_age_rereads_everything(placement, tmp_path):
    want = three_hosts(placement)
    cache_file = tmp_path / "cache.json"
    s.sync_providers(placement, want, cache=s.ProviderCache(cache_file, placement.endpoint()))
    later = s.ProviderCache(cache_file, placement.endpoint(), max_age=60, clock=lambda: time.time() + 61)
    plan, _ = s.sync_providers(placement, want, cache=later)
    assert plan.ops == () and later.stats["candidates"] == 0 and later.stats["trusted"] == 0
    # the full re-read refreshed the entries: the next sync trusts them again
    again = s.ProviderCache(cache_file, placement.endpoint())
    s.sync_providers(placement, want, cache=again)
    assert again.stats["trusted"] == 9 and again.stats["reread"] == 0


def test_parallel_sync_writes_every_tree_and_a_failure_is_reported(placement, tmp_path):
    hosts = tuple(f"par{i}" for i in range(8))
    want = three_hosts(placement, (OVS_INI, SRIOV_INI), hosts)
    placement.counter.reset()
    plan, result = s.sync_providers(placement, want, workers=4)
    assert result.writes == len(plan.ops) == placement.counter.writes
    assert s.sync_providers(placement, want, workers=4)[0].ops == ()
    for h in hosts:
        assert len(tree(placement, h)) == 5
    # a tree whose root vanished fails alone: the other trees are written, the failed one named with what was not
    more = tuple(f"par{i}" for i in range(8, 12))
    want2 = three_hosts(placement, (OVS_INI,), more)
    observed = s.observe(placement, want2)
    plan = make_plan(want2, observed)
    placement.delete_provider(observed.roots["par9"].uuid)
    result = s.apply(placement, plan, observed, workers=4)
    (failed,) = result.failed
    assert failed["tree"] == "par9" and failed["pending"] and all(op.name.startswith("par9:") for op in failed["pending"])
    assert result.writes == len(plan.ops) - len(failed["pending"]) == len(result.applied)
    assert all(len(tree(placement, h)) == 3 for h in ("par8", "par10", "par11"))
    # when every tree fails, nothing could be done: PartialApply names what was written and what was not
    make_root(placement, "par9")
    observed = s.observe(placement, want2)
    plan = make_plan(want2, observed)
    assert {op.name.split(":")[0] for op in plan.ops} == {"par9"}
    placement.delete_provider(observed.roots["par9"].uuid)
    with pytest.raises(PartialApply) as err:
        s.apply(placement, plan, observed, workers=4)
    assert err.value.applied == [] and len(err.value.pending) == len(plan.ops)


def test_workers_out_of_range_is_a_clear_error_and_zero_writes(placement):
    want = three_hosts(placement)
    placement.counter.reset()
    for bad in (0, 33, "4"):
        with pytest.raises(InvalidInput, match="workers: expected a whole number from 1 to 32"):
            s.sync_providers(placement, want, workers=bad)
    assert placement.counter.total == 0


def test_cli_cache_option(placement, placement_server, tmp_path):
    make_root(placement)
    (tmp_path / "ovs.ini").write_text(OVS_INI)
    args = ["provider", "sync", "--agent-config", str(tmp_path / "ovs.ini"), "--host", "devstack0",
            "--cache", str(tmp_path / "cache.json"), "--json"]
    for expected in (True, False):
        out = cli_forks.run([sys.executable, "-m", "minbw.cli", *args], capture_output=True, text=True,
                             env=placement_server.env(), timeout=120)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["changed"] is expected
    cached = json.loads((tmp_path / "cache.json").read_text())
    assert set(cached["providers"]) >= {"89ca1421-5117-5348-acab-6d0e2054239c", "f9c9ce07-679d-5d72-ac5f-31720811629a"}


def test_cli_cache_is_on_by_default_per_endpoint_and_says_so(placement, placement_server, tmp_path):
    for h in ("hv1", "hv2", "hv3"):
        make_root(placement, h)
    args = []
    for h in ("hv1", "hv2", "hv3"):
        (tmp_path / f"{h}.ini").write_text("[DEFAULT]\nhost = %s\n" % h + OVS_INI)
        args += ["--agent-config", str(tmp_path / f"{h}.ini")]
    env = {**placement_server.env(), "XDG_CACHE_HOME": str(tmp_path / "xdg")}

    def sync(*extra, files=args):
        out = cli_forks.run([sys.executable, "-m", "minbw.cli", "provider", "sync", *files, *extra, "--json"],
                             capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)
    first = sync("--workers", "2")
    assert first["summary"].startswith("3 hosts, 9 providers: 9 created, 0 updated, 0 deleted "
                                       f"({first['writes']} writes) in ")
    assert default_cache_path(placement.endpoint(), env).exists()
    # the files after one option (as a shell glob gives them): the same sync
    warm = sync(files=["--agent-config", *(str(tmp_path / f"{h}.ini") for h in ("hv1", "hv2", "hv3"))])
    assert warm["changed"] is False and [u["unit"] for u in warm["units"]] == [a for a in args if a.endswith(".ini")]
    assert "0 created, 0 updated, 0 deleted (0 writes)" in warm["summary"]
    # the files and the providers as the first sync left them: the listing alone answers (issue 46), and says why
    assert " 1 calls (0.33/host); unchanged: 9 providers at the generations of the last sync" in warm["summary"]
    assert warm["unchanged"]["providers"] == 9 and "no safety check due" in warm["unchanged"]["why"]
    checked = sync("--cache-check-interval", "0")["summary"]
    assert "cache: 9 of 9 cached providers trusted after " in checked and "no check due" not in checked
    assert sync("--no-cache")["summary"].endswith("; no cache")
    bad = cli_forks.run([sys.executable, "-m", "minbw.cli", "provider", "sync", *args, "--workers", "99"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "--workers: expected a whole number from 1 to 32" in bad.stderr  # usage
    bad = cli_forks.run([sys.executable, "-m", "minbw.cli", "provider", "sync", *args, "--cache-check-interval",
                          "-5"], capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "--cache-check-interval: expected seconds >= 0, got '-5'" in bad.stderr


def test_a_provider_deleted_under_the_sync_costs_its_host_tree_only(placement, tmp_path):
    """Three hosts' bridges grow; while the sync runs (after its reads, before its writes) hv2's bridge provider is
    deleted in Placement. hv1's and hv3's trees are written; hv2's write is refused (the provider is gone) and
    named with what was left; the cache forgets it, and the next sync creates it again."""
    hosts = ("hv1", "hv2", "hv3")
    s.sync_providers(placement, three_hosts(placement, hosts=hosts))
    grown = desired_state([load_agent_ini(OVS_INI.replace("1500:1500", "2500:2500"), source=f"{h}.ini", host=h)
                           for h in hosts])
    bridge = next(p for p in grown.providers if p.name == "hv2:Open vSwitch agent:br-test")
    deleted = []

    def meanwhile(step, done, total):
        if step == "providers read" and done == total and not deleted:
            placement.delete_provider(bridge.uuid)
            deleted.append(bridge.uuid)
    cache = s.ProviderCache(tmp_path / "cache.json", placement.endpoint())
    plan, result = s.sync_providers(placement, grown, progress=meanwhile, workers=1, cache=cache)
    assert deleted and [f["tree"] for f in result.failed] == ["hv2"], result.to_dict()
    (line,) = result.failures()
    assert line.startswith("host tree hv2 (host hv2): ") and "hv2:Open vSwitch agent:br-test" in line
    assert line.endswith(". Fix: run the sync again: it resumes from what is in Placement")
    for h in ("hv1", "hv3"):
        inv = placement.get_inventories(next(p.uuid for p in grown.providers if p.name == f"{h}:Open vSwitch agent:br-test"))[0]
        assert inv["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 2500
    assert bridge.uuid not in s.ProviderCache(tmp_path / "cache.json", placement.endpoint()).entries
    plan, again = s.sync_providers(placement, grown, cache=s.ProviderCache(tmp_path / "cache.json", placement.endpoint()))
    assert [op.action for op in plan.ops if op.uuid == bridge.uuid] == ["create_provider", "set_traits", "set_inventories"]
    assert not again.failed
    assert placement.get_inventories(bridge.uuid)[0]["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 2500


def test_a_host_without_its_compute_node_costs_that_host_only(placement, placement_server, tmp_path):
    """Agent files of two hosts, one of which has no compute node in Placement yet: the other is synced, the
    missing one named with the fix, exit 3; with neither there, nothing can be done (exit 1)."""
    make_root(placement, "hv1")
    for h in ("hv1", "hv2"):
        (tmp_path / f"{h}.ini").write_text(f"[DEFAULT]\nhost = {h}\n" + OVS_INI)
    args = ["provider", "sync", "--agent-config", str(tmp_path / "hv1.ini"), "--agent-config",
            str(tmp_path / "hv2.ini"), "--no-cache", "--json"]
    out = cli_forks.run([sys.executable, "-m", "minbw.cli", *args], capture_output=True, text=True,
                         env=placement_server.env(), timeout=120)
    assert out.returncode == 3, out.stdout + out.stderr
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("minbw: skipped: ")]
    assert line.startswith("minbw: skipped: hypervisor hv2 (host hv2): No resource provider named 'hv2'")
    assert ". Fix: " in line
    assert len(tree(placement, "hv1")) == 3 and not placement.list_providers(name="hv2")
    units = {u["host"]: u for u in json.loads(out.stdout)["units"]}
    assert units["hv1"]["changed"] and not units["hv1"]["skipped"] and units["hv2"]["skipped"] == line.removeprefix("minbw: skipped: ")
    wipe(placement)
    out = cli_forks.run([sys.executable, "-m", "minbw.cli", *args], capture_output=True, text=True,
                         env=placement_server.env(), timeout=120)
    assert out.returncode == 1 and "nothing to sync" in out.stderr and not placement.list_providers(), out.stderr


def test_a_sync_of_unchanged_agent_files_does_not_parse_them_again(placement, tmp_path, monkeypatch):
    """The desired state is kept beside the cache under the digest of its inputs (code, options, each file's
    bytes): unchanged files are not parsed again; a change of content (same size and time), of an option or of the
    code is parsed; a kept file that others may write or that does not load is ignored; check mode and --no-cache
    keep nothing."""
    import os
    from minbw.cache import desired as memo
    from minbw.usecases import providers
    from minbw.usecases.cloud import Cache, NO_CACHE
    make_root(placement)
    ini, cache_file = tmp_path / "ovs.ini", tmp_path / "c.json"
    ini.write_text(OVS_INI)
    kept = memo.memo_path(cache_file)
    cloud = types.SimpleNamespace(placement=placement, progress=None)
    parsed = []
    real = providers.read_agent_units
    monkeypatch.setattr(providers, "read_agent_units", lambda *a, **k: parsed.append(1) or real(*a, **k))

    def sync(**options):
        parsed.clear()
        options = {"agent_configs": (str(ini),), "host": "devstack0", "cache": Cache.at(str(cache_file)), **options}
        return providers.sync(cloud, providers.ProvidersRequest(**options)), len(parsed)

    first, n = sync()
    assert first.changed and n == 1 and kept.exists() and kept.stat().st_mode & 0o777 == 0o600
    second, n = sync()
    assert n == 0 and not second.changed and second.desired == first.desired
    assert [p.to_dict() for p in second.plan.providers] == [p.to_dict() for p in first.plan.providers]
    # another content of the same size and time: parsed, and the change made
    st = ini.stat()
    ini.write_text(OVS_INI.replace("1500:1500", "1600:1600"))
    os.utime(ini, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (ini.stat().st_size, ini.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    third, n = sync()
    assert n == 1 and [op.action for op in third.applied.applied] == ["set_inventories"]
    assert sync()[1] == 0
    assert sync(option="agent_config")[1] == 1  # another option: another key (kept in place of the last)
    monkeypatch.setattr(memo, "_code_digest", lambda modules: b"other code")
    assert sync()[1] == 1
    monkeypatch.undo()
    monkeypatch.setattr(providers, "read_agent_units", lambda *a, **k: parsed.append(1) or real(*a, **k))
    assert sync()[1] == 1 and sync()[1] == 0
    kept.chmod(0o666)  # others may write it: not read (a pickle)
    assert sync()[1] == 1 and kept.stat().st_mode & 0o777 == 0o600 and sync()[1] == 0
    digest = kept.read_bytes().split(b"\n", 1)[0]
    kept.write_bytes(digest + b"\nnot a pickle")
    assert sync()[1] == 1 and sync()[1] == 0
    kept.unlink()
    assert sync(check=True)[1] == 1 and not kept.exists() and sync(check=True)[1] == 1  # check mode keeps nothing
    assert sync(cache=NO_CACHE)[1] == 1 and not kept.exists()
    (tmp_path / "gone.ini").write_text(OVS_INI)
    (tmp_path / "gone.ini").chmod(0)
    if os.getuid() != 0:  # root reads any file
        assert memo.key([str(tmp_path / "gone.ini")], code=(memo,), options={}) is None


def test_the_kept_desired_state_is_the_parsed_one_for_every_kind_of_unit(tmp_path):
    """Seed 003's agents, a skipped unit and OVN chassis options: what is loaded equals what was saved, read-only
    inventories included; another digest loads nothing."""
    from types import MappingProxyType
    from minbw.cache import desired as memo
    from minbw.ops import ovn_chassis
    from minbw.ops.agent_files import read_agent_units
    (tmp_path / "ovs.ini").write_text(OVS_INI)
    (tmp_path / "sriov.ini").write_text(SRIOV_INI)
    (tmp_path / "bad.ini").write_text("[ovs]\nbridge_mappings = physnet0:br-x\nresource_provider_bandwidths = br-y:1:1\n")
    configs, unread = read_agent_units([str(tmp_path / n) for n in ("ovs.ini", "sriov.ini", "bad.ini")],
                                       host="devstack0")
    state = ovn_chassis.desired(configs, skipped=[u for u, _ in unread], isolate=True)
    assert state.skipped and state.providers
    path = tmp_path / "kept"
    assert memo.save(path, "d1", state)
    loaded = memo.load(path, "d1")
    assert loaded == state and loaded.skipped == state.skipped
    assert all(type(p.inventories) is MappingProxyType for p in loaded.providers)
    assert memo.load(path, "d2") is None and memo.load(tmp_path / "none", "d1") is None


def test_the_kept_desired_state_loads_with_the_collector_paused_and_stays_out_of_its_generations(tmp_path):
    """The load pauses the cyclic collector and freezes what it made (gc.freeze), so no full collection scans the
    state while the sync runs; the collector is as it was after it, also when the file does not load; a collector
    turned off by the caller stays off and nothing is frozen."""
    import gc
    from minbw.cache import desired as memo
    from minbw.ops import ovn_chassis
    from minbw.ops.agent_files import read_agent_units
    (tmp_path / "ovs.ini").write_text(OVS_INI)
    configs, _unread = read_agent_units([str(tmp_path / "ovs.ini")], host="devstack0")
    state = ovn_chassis.desired(configs, isolate=True)
    path = tmp_path / "kept"
    assert memo.save(path, "d1", state)
    gc.unfreeze()
    try:
        loaded = memo.load(path, "d1")
        assert loaded == state and gc.isenabled()
        frozen = gc.get_freeze_count()
        assert frozen >= len(state.providers)
        gc.unfreeze()
        gc.disable()
        try:
            assert memo.load(path, "d1") == state and not gc.isenabled() and gc.get_freeze_count() == 0
        finally:
            gc.enable()
        path.write_bytes(b"d1\nnot a pickle")
        assert memo.load(path, "d1") is None and gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
