"""heal's compute trees read through the reports' reader (minbw.ops.heal.Trees) on the session's embedded
Placement: the same trees as Placement's own reads of each tree, one listing for many hosts, nothing read again
from a warm provider cache, and a tree a heal wrote to read again."""
from __future__ import annotations

import uuid

from minbw.ops.heal import Trees
from minbw.cache.providers import ProviderCache
from minbw.readers.placement import Reader
from tests.conftest import MINBW
from tests.support import cli_forks

OVS = """[DEFAULT]
host = {host}
[ovs]
bridge_mappings = physnet0:br-test
resource_provider_bandwidths = br-test:5000:5000
"""
SRIOV = """[DEFAULT]
host = {host}
[sriov_nic]
physical_device_mappings = physnet1:ens5
resource_provider_bandwidths = ens5:8000:8000
"""
HOSTS = ("ht0", "ht1", "ht2", "ht3")


def direct(api, host: str) -> dict:
    """The tree as heal read it before: Placement's own listing of the tree, each provider's reads."""
    root = api.list_providers(name=host)[0]
    return {d.provider.uuid: {"name": d.provider.name, "traits": sorted(d.traits), "inventories": d.inventories,
                              "usages": d.usages}
            for d in api.provider_details(api.list_providers(in_tree=root.uuid), usages=True)}


def plain(tree: dict) -> dict:
    return {u: {**v, "inventories": {rc: dict(i) for rc, i in v["inventories"].items()}} for u, v in tree.items()}


def test_heal_reads_the_trees_through_the_reader_and_its_cache(placement, placement_server, tmp_path):
    for host in HOSTS:
        files = []
        for name, text in (("ovs.ini", OVS), ("sriov.ini", SRIOV)):
            files += ["--agent-config", str(tmp_path / f"{host}-{name}")]
            (tmp_path / f"{host}-{name}").write_text(text.format(host=host))
        sync = cli_forks.run(MINBW + ["provider", "sync", *files, "--create-root", "--root-inventory", "VCPU=8"],
                              env=placement_server.env(), capture_output=True, text=True)
        assert sync.returncode == 0, sync.stderr
    root = placement.list_providers(name="ht1")[0].uuid
    bridge = next(p.uuid for p in placement.list_providers(in_tree=root) if p.name.endswith("br-test"))
    placement.put_allocations(str(uuid.uuid4()), {
        "allocations": {root: {"resources": {"VCPU": 1}},
                        bridge: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None})
    expected = {h: plain(direct(placement, h)) for h in HOSTS}
    assert len(expected["ht1"]) == 5  # root, two agents, the bridge, the PF

    # few hosts: each one's two listings; many: one listing of every provider
    for hosts, listings in ((HOSTS[:2], 4), (HOSTS, 1)):
        placement.counter.reset()
        trees = Trees(Reader(placement))
        trees.prefetch(hosts)
        kinds = placement.counter.calls
        assert sum(1 for m, path in kinds if path.split("?")[0].endswith("/resource_providers")) == listings, kinds
        assert {h: plain(trees.of(h)) for h in hosts} == {h: expected[h] for h in hosts}

    # a warm cache: the one listing, the cache's safety check and each provider's usage (a generation does not
    # move when allocations are deleted: no usage comes from the cache), no provider's traits or inventories read
    cache = tmp_path / "providers.json"
    filling = Reader(placement, ProviderCache(cache, placement.endpoint()))
    Trees(filling).prefetch(HOSTS)
    filling.save()
    warm = Reader(placement, ProviderCache(cache, placement.endpoint()))
    placement.counter.reset()
    trees = Trees(warm)
    trees.prefetch(HOSTS)
    with_inventory = sum(1 for h in HOSTS for v in expected[h].values() if v["inventories"])
    usage_reads = [path for _, path in placement.counter.calls if path.endswith("/usages")]
    assert warm.read == 0 and warm.usages_read == len(usage_reads) == with_inventory
    assert all(path.split("?")[0].endswith("/resource_providers") or path.endswith("/usages")
               for _, path in placement.counter.calls), placement.counter.calls
    assert {h: plain(trees.of(h)) for h in HOSTS} == expected

    # an allocation deleted (no generation moves): the next warm read has the usage Placement has
    consumer = next(c for c in placement.provider_allocations(bridge))
    placement.request("delete", f"/allocations/{consumer}", "1.28")
    freed = Trees(Reader(placement, ProviderCache(cache, placement.endpoint())))
    assert plain(freed.of("ht1"))[bridge]["usages"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 0, "NET_BW_IGR_KILOBIT_PER_SEC": 0}
    assert plain(freed.of("ht1")) == plain(direct(placement, "ht1"))
    placement.put_allocations(consumer, {
        "allocations": {root: {"resources": {"VCPU": 1}},
                        bridge: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None})

    # a heal wrote to ht2's tree: its tree is listed again and only what moved is read
    root2 = placement.list_providers(name="ht2")[0].uuid
    placement.put_allocations(str(uuid.uuid4()), {"allocations": {root2: {"resources": {"VCPU": 2}}},
                                                   "project_id": "p", "user_id": "u", "consumer_generation": None})
    assert plain(trees.of("ht2")) == expected["ht2"]  # not told: the tree read for this run
    trees.moved("ht2")
    placement.counter.reset()
    again = plain(trees.of("ht2"))
    calls = placement.counter.total
    placement.counter.reset()
    assert again == plain(direct(placement, "ht2")) and again[root2]["usages"] == {"VCPU": 2}
    # the reader trusts the cache after its safety check, or reads the tree when that costs fewer calls
    assert calls <= placement.counter.total, (calls, placement.counter.total)
