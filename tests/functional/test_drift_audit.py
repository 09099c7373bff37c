"""Drift and audit against the real embedded Placement (the Neutron/Nova sides are in tests/e2e)."""
from __future__ import annotations

import collections
import json
import sys

import pytest

from minbw.errors import InventoryInUse
from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.ops import sync
from minbw.ops.audit import read_placement
from minbw.plan.audit import LEAK, OVER_CAPACITY, judge_audit
from tests.conftest import run_drift
from tests.support import cli_forks


OVS = """[DEFAULT]
host = devstack0
[ovs]
bridge_mappings = physnet0:br-test,public:br-ex
resource_provider_bandwidths = br-test:1500:1500,br-ex::1
"""
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"
EGR = "NET_BW_EGR_KILOBIT_PER_SEC"


def setup(placement, tmp_path):
    ini = tmp_path / "openvswitch_agent.ini"
    ini.write_text(OVS)
    sync.sync_providers(placement, desired_state([load_agent_ini(OVS, source=str(ini))]), create_root=True,
              root_inventories={"VCPU": {"total": 8}})
    return ini


def test_drift_ini_against_placement(placement, tmp_path):
    ini = setup(placement, tmp_path)
    rows = run_drift(None, placement, agent_configs=[str(ini)], neutron=False)
    assert len(rows) == 3 and all(r.agree for r in rows) and {s for r in rows for s in r.sides} == {"ini", "placement"}
    inv, gen = placement.get_inventories(BR_TEST)
    placement.set_inventories(BR_TEST, {rc: {**i, "total": 900} for rc, i in inv.items()}, gen)
    rows = {r.uuid: r for r in run_drift(None, placement, agent_configs=[str(ini)], neutron=False)}
    assert [r.uuid for r in rows.values() if not r.agree] == [BR_TEST]
    assert list(rows[BR_TEST].differences) == ["NET_BW_EGR_KILOBIT_PER_SEC total: ini 1500, Placement 900",
                                         "NET_BW_IGR_KILOBIT_PER_SEC total: ini 1500, Placement 900"]


def test_audit_reads_the_bandwidth_providers_and_the_full_roots(placement, tmp_path):
    setup(placement, tmp_path)
    root = placement.list_providers(name="devstack0")[0].uuid
    body = {"allocations": {root: {"resources": {"VCPU": 1}}, BR_TEST: {"resources": {EGR: 700}}},
            "project_id": "p", "user_id": "u", "consumer_generation": None}
    placement.put_allocations("4ee7e0ae-0a80-4a3a-8f5c-9c7e8e0b5a11", body)
    placement.counter.reset()
    seen = read_placement(placement)
    # the cost docs/benchmarks.md gives without a cache: one listing, a ?resources=CLASS:1 listing per bandwidth
    # class and per class of the roots (VCPU), the inventories of the Neutron providers no listing shows with room
    # (the agent: it may hold packet rate) and of the root, one allocation read per bandwidth provider (br-test,
    # br-ex: both listed with room in each class they hold allocations of, so neither can be over capacity and
    # neither's inventory is read)
    kinds = collections.Counter(path.split("?")[0].split("/")[-1] for _, path in placement.counter.calls)
    assert kinds == {"resource_providers": 1 + 5 + 1, "inventories": 2, "allocations": 2}
    assert not seen.inventories
    assert seen.allocations[BR_TEST] == {"4ee7e0ae-0a80-4a3a-8f5c-9c7e8e0b5a11": {EGR: 700}}
    assert root not in seen.allocations  # it has room: its allocations are not read
    assert seen.hosts[BR_TEST] == seen.hosts[root] == "devstack0"
    plan = judge_audit(seen.allocations, servers=[], migrations=[], ports=[], names=seen.names,
                 inventories=seen.inventories, hosts=seen.hosts)
    assert [(f.kind, f.subject) for f in plan.findings] == [(LEAK, "4ee7e0ae-0a80-4a3a-8f5c-9c7e8e0b5a11")]


def test_audit_with_the_cache_reads_one_allocation_per_bandwidth_provider(placement, tmp_path):
    from minbw.cache.providers import ProviderCache
    from minbw.readers.placement import Reader
    setup(placement, tmp_path)
    # four more hosts: with fewer providers re-reading them costs less than the cache's safety check, and it does
    more = [load_agent_ini(OVS.replace("devstack0", f"devstack{i}"), source="x.ini") for i in range(1, 5)]
    sync.sync_providers(placement, desired_state(more), create_root=True, root_inventories={"VCPU": {"total": 8}})
    cache = ProviderCache(tmp_path / "cache.json", placement.endpoint())
    read_placement(Reader(placement, cache))
    placement.counter.reset()
    cache = ProviderCache(tmp_path / "cache.json", placement.endpoint())
    seen = read_placement(Reader(placement, cache))
    gets = collections.Counter(path.split("?")[0].split("/")[-1] for _, path in placement.counter.calls)
    assert gets["allocations"] == 10 and not gets["traits"] and not gets["inventories"] and not gets["usages"]
    # the cache holds what the first read read: the five agents (no inventory: no allocation read) and the roots
    # (their classes); the bridges are listed with room, so neither read holds their inventories
    assert cache.stats["trusted"] == 5 and cache.stats["checks"] == gets["resource_providers"] - 1 - 5 - 1 == 0
    assert not seen.inventories and len(seen.allocations) == 10 and BR_TEST in seen.allocations
    # a root over capacity is found by its listing, then read with its allocations
    root = placement.list_providers(name="devstack0")[0].uuid
    placement.put_allocations(A, {"allocations": {root: {"resources": {"VCPU": 8}}}, "project_id": "p",
                                  "user_id": "u", "consumer_generation": None})
    inv, gen = placement.get_inventories(root)
    placement.set_inventories(root, {"VCPU": {**inv["VCPU"], "total": 6}}, gen)
    seen = read_placement(Reader(placement, ProviderCache(tmp_path / "cache.json", placement.endpoint())))
    plan = judge_audit(seen.allocations, servers=[], migrations=[], ports=[], names=seen.names, ignore=[A],
                 inventories=seen.inventories, hosts=seen.hosts)
    assert [(f.kind, f.subject) for f in plan.findings] == [(OVER_CAPACITY, root)]


# How a provider ends over capacity in a real Placement without a race: Placement 16 accepts an inventory
# update that leaves the usage above the new capacity (objects/resource_provider.py
# _update_inventory_for_provider only logs "is now over-capacity"); only deleting an inventory in use is
# refused (placement.inventory.inuse). For the audit the state is the same as the one concurrent claims
# leave: allocations summing above (total - reserved) * allocation_ratio; it reads nothing else.
A, B, C = ("0b5cf6a4-1b52-4c44-9b53-7d3c7e5d1f0" + x for x in "abc")


@pytest.mark.parametrize("change, capacity", [
    ({"total": 1200}, 1200),                      # an agent's bandwidth lowered in its ini file
    ({"reserved": 300}, 1200),                    # part of the NIC kept back
    ({"allocation_ratio": 0.8}, 1200),            # the ratio lowered
])
def test_audit_finds_a_provider_over_capacity_and_what_to_move(placement, tmp_path, change, capacity):
    setup(placement, tmp_path)
    for consumer, amount in ((A, 1000), (B, 300), (C, 200)):  # 1500 used of 1500
        placement.put_allocations(consumer, {"allocations": {BR_TEST: {"resources": {EGR: amount}}},
                                             "project_id": "p", "user_id": "u", "consumer_generation": None})
    inv, gen = placement.get_inventories(BR_TEST)
    with pytest.raises(InventoryInUse):  # Placement refuses only to take an inventory in use away
        placement.set_inventories(BR_TEST, {rc: i for rc, i in inv.items() if rc != EGR}, gen)
    inv, gen = placement.get_inventories(BR_TEST)
    placement.set_inventories(BR_TEST, {**inv, EGR: {**inv[EGR], **change}}, gen)  # accepted while in use
    assert placement.provider_usages(BR_TEST)[EGR] == 1500
    seen = read_placement(placement)
    plan = judge_audit(seen.allocations, servers=[], migrations=[], ports=[], names=seen.names, ignore=[A, B, C],
                 inventories=seen.inventories, hosts=seen.hosts)
    (found,) = plan.findings
    d = found.to_dict()
    assert (found.kind, found.subject, found.fix, d["host"]) == (OVER_CAPACITY, BR_TEST, None, "devstack0")
    assert d["classes"][EGR]["capacity"] == capacity and d["classes"][EGR]["over"] == 1500 - capacity
    # none of them is Nova's: no age, listed by uuid, moved in that order until 300 are freed
    assert [(c["consumer"], c["since"]) for c in d["consumers"]] == [(A, None), (B, None), (C, None)]
    assert d["move"] == [A]


def test_cli_drift_exit_codes(placement, placement_server, tmp_path):
    ini = setup(placement, tmp_path)

    def run(*a):
        return cli_forks.run([sys.executable, "-m", "minbw.cli", *a], capture_output=True, text=True,
                              env=placement_server.env(), timeout=120)
    same = run("drift", "show", "--agent-config", str(ini), "--no-neutron", "--json")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["ok"] is True
    inv, gen = placement.get_inventories(BR_TEST)
    placement.set_inventories(BR_TEST, {rc: {**i, "reserved": 5} for rc, i in inv.items()}, gen)
    differs = run("drift", "show", "--agent-config", str(ini), "--no-neutron")
    assert differs.returncode == 3 and "NET_BW_EGR_KILOBIT_PER_SEC reserved: ini 0, Placement 5" in differs.stdout
