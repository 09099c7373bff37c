"""minbw.readers.placement: Neutron's providers recognized from a listing alone, and the sync's record."""
from __future__ import annotations

from minbw.model.providers import Provider
from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.cache.providers import read_sync_record, record_sync, sync_record_path
from minbw.readers.placement import neutron_providers

OVS = "[ovs]\nbridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:10:10\n"
SRIOV = "[sriov_nic]\nphysical_device_mappings = physnet0:ens5\n"


def test_neutrons_providers_by_name_and_uuid5():
    # a host with a colon (a name Neutron may be given, never one an agent's [DEFAULT] host may hold): given apart
    desired = desired_state([load_agent_ini(OVS, source="ovs.ini", host="compute-1:a"),
                             load_agent_ini(SRIOV, source="sriov.ini", host="compute-1:a")])
    listing = [Provider(p.uuid, p.name, 1, "x", "r") for p in desired.providers]
    assert neutron_providers(listing) == {p.uuid for p in desired.providers}
    impostor = Provider("00000000-0000-0000-0000-000000000001", listing[0].name, 1, "x", "r")
    root = Provider("r", "compute-1:a", 1, None, "r")
    assert neutron_providers([impostor, root]) == set()


def test_the_sync_record_keeps_the_last_success(tmp_path):
    cache = tmp_path / "providers-abc.json"
    assert read_sync_record(cache) is None and sync_record_path(cache).name == "sync-abc.json"
    record_sync(cache, ok=True, writes=3, clock=lambda: 100.0)
    record_sync(cache, ok=False, clock=lambda: 200.0)
    assert read_sync_record(cache) == {"time": 200.0, "ok": False, "writes": 0, "last_success": 100.0}


def test_a_cache_entry_without_traits_serves_only_readers_that_need_none(tmp_path):
    from minbw.cache.providers import ProviderCache
    cache = ProviderCache(tmp_path / "c.json", "http://placement")
    prov = Provider.from_api({"uuid": "u1", "name": "h1", "generation": 3, "parent_provider_uuid": None,
                              "root_provider_uuid": "u1"})
    cache.put("u1", 3, "h1", None, None, {"VCPU": {"total": 8}})
    assert cache.candidate(prov) is None  # the sync needs traits: it reads them
    assert cache.candidate(prov, traits=False)["inventories"] == {"VCPU": {"total": 8}}
    cache.put("u1", 3, "h1", None, {"CUSTOM_X"}, {"VCPU": {"total": 8}})
    cache.put("u1", 3, "h1", None, None, {"VCPU": {"total": 8}})  # same generation: the traits read stay
    assert cache.candidate(prov)["traits"] == ["CUSTOM_X"]
    cache.put("u1", 4, "h1", None, None, {"VCPU": {"total": 8}})  # moved: they are unknown again
    assert cache.entries["u1"]["traits"] is None


def test_an_entry_is_due_by_when_it_was_last_confirmed_and_an_old_entry_by_its_full_read(tmp_path):
    from minbw.cache.providers import ProviderCache
    now = [1000.0]
    cache = ProviderCache(tmp_path / "c.json", "http://placement", check_interval=300, clock=lambda: now[0])
    cache.put("u1", 3, "h1", None, {"CUSTOM_X"}, {}, checked=100.0, verified=900.0)
    assert cache.confirmed_at(cache.entries["u1"]) == 900.0
    assert not cache.due(cache.entries["u1"])  # confirmed 100 s ago
    now[0] = 1200.0
    assert cache.due(cache.entries["u1"])  # 300 s ago
    cache.confirm(["u1"])
    assert cache.confirmed_at(cache.entries["u1"]) == 1200.0 and not cache.due(cache.entries["u1"])
    old = {"generation": 3, "name": "h1", "parent": None, "traits": [], "inventories": {}, "checked": 1100.0}
    assert cache.confirmed_at(old) == 1100.0 and not cache.due(old)  # a cache written before "verified" existed
    assert cache.confirmed_at({}) is None and cache.due({})
