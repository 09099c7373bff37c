"""minbw.reports.reader: Neutron's providers recognized from a listing alone, and the sync's record."""
from __future__ import annotations

from minbw.model.providers import Provider
from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.reports.reader import neutron_providers, read_sync_record, record_sync, sync_record_path

OVS = "[DEFAULT]\nhost = compute-1:a\n[ovs]\nbridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:10:10\n"
SRIOV = "[DEFAULT]\nhost = compute-1:a\n[sriov_nic]\nphysical_device_mappings = physnet0:ens5\n"


def test_neutrons_providers_by_name_and_uuid5():
    desired = desired_state([load_agent_ini(OVS, source="ovs.ini"), load_agent_ini(SRIOV, source="sriov.ini")])
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
