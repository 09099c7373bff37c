"""Usage is never trusted to a provider generation: ``DELETE /allocations/{consumer}`` (how Nova frees a deleted
server by default) frees usage without moving any generation (docs/placement-generations.md), and every reader that
answers with usage or headroom shows the freed amount in its next answer, with the provider cache warm: the
capacity count, heal's compute trees (tests/functional/test_heal_trees.py), the audit's over-capacity check, and
the exporter (tests/functional/test_exporter.py, tests/faults/test_exporter_collection.py)."""
from __future__ import annotations

import uuid

import pytest

from minbw.model.requests import ServerRequest
from minbw.neutron.port_request import QosPort
from minbw.ops import claims
from minbw.ops.audit import read_placement
from minbw.plan.audit import OVER_CAPACITY, judge_audit
from minbw.reports.capacity.request import capacity_request
from minbw.cache.providers import ProviderCache
from minbw.readers.placement import Reader
from minbw.usecases.capacity import capacity_report
from tests.functional.test_capacity_placement import host

PORT = "min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0"
OVS = "bridge_mappings = physnet0:br-d\nresource_provider_bandwidths = br-d:5000:5000\n"


def _claim(placement, consumer: str) -> None:
    port = QosPort.parse(PORT, "test").request(str(uuid.uuid4()))
    claims.claim(placement, consumer, ServerRequest(extra_resources={"VCPU": 1}, ports=(port,)),
                 project_id="p", user_id="u")


def _delete(placement, consumer: str) -> None:
    placement.request("delete", f"/allocations/{consumer}", "1.28")  # as Nova frees a deleted server


def test_capacity_counts_what_a_delete_freed_with_the_cache_warm(placement, tmp_path):
    host(placement, "hd0", ovs=OVS)
    req = capacity_request({"VCPU": 1}, qos_ports=(QosPort.parse(PORT, "test"),))
    cache = tmp_path / "providers.json"

    def count() -> int:
        reader = Reader(placement, ProviderCache(cache, placement.endpoint()))
        total = capacity_report(reader, req).total
        reader.save()
        return total

    consumers = [str(uuid.uuid4()) for _ in range(3)]
    for c in consumers:
        _claim(placement, c)
    assert count() == 2 and count() == 2  # 5 ports' worth, 3 taken; the second count from the warm cache
    generations = {p.uuid: p.generation for p in placement.list_providers()}
    _delete(placement, consumers[0])
    assert {p.uuid: p.generation for p in placement.list_providers()} == generations  # nothing moved
    assert count() == 3  # the freed port's room, at the next count


def test_the_audit_sees_a_provider_back_within_capacity_after_a_delete(placement, tmp_path):
    root = host(placement, "hd1", ovs=OVS)
    bridge = next(p.uuid for p in placement.list_providers(in_tree=root) if p.name.endswith(":br-d"))
    consumers = [str(uuid.uuid4()) for _ in range(3)]
    for c in consumers:
        _claim(placement, c)
    inv, gen = placement.get_inventories(bridge)  # 3,000 used: capacity lowered to 2,500
    placement.set_inventories(bridge, {rc: {**i, "reserved": 2500} for rc, i in inv.items()}, gen)
    cache = tmp_path / "providers.json"

    def over() -> set[str]:
        reader = Reader(placement, ProviderCache(cache, placement.endpoint()))
        seen = read_placement(reader)
        reader.save()
        plan = judge_audit(seen.allocations, servers=[], migrations=[], ports=[], names=seen.names,
                     inventories=seen.inventories, hosts=seen.hosts)
        return {f.subject for f in plan.findings if f.kind == OVER_CAPACITY}

    assert over() == {bridge} and over() == {bridge}
    _delete(placement, consumers[0])
    assert over() == set()


def test_usage_show_finds_the_providers_with_inventory_by_their_inventories_alone(placement):
    """``usage show`` (minbw.usecases.usage) reads each provider of the tree's inventories to find those with
    inventory (not their traits and usages too), and the allocations of each of those, their usages summed from them:
    2 calls for the tree (the root by its name, the tree), one per provider, one more per provider with inventory."""
    from minbw.usecases.cloud import Cloud
    from minbw.usecases.usage import UsageRequest, usage

    root = host(placement, "hu0", ovs=OVS)
    tree = placement.list_providers(in_tree=root)
    stocked = [p.uuid for p in tree if placement.get_inventories(p.uuid)[0]]
    assert 0 < len(stocked) < len(tree)  # the agent's provider has none
    cloud = Cloud(lambda: placement.conn)
    result = usage(cloud, UsageRequest(hypervisor="hu0"))
    assert sorted(u.provider.uuid for u in result.providers) == sorted(stocked)
    assert result.providers[0].provider.uuid == root  # tree order: the root first
    assert cloud.placement.calls == 2 + len(tree) + len(stocked)


def test_the_usages_summed_from_the_allocations_are_placement_s_usages(placement):
    """Upstream is the oracle of :func:`minbw.model.providers.usages_of` (``usage show`` sums the allocations it
    reads instead of asking Placement's usages): for every provider of a tree with allocations of several consumers
    and classes, before and after a ``DELETE /allocations`` (which moves no generation), the sum is Placement's
    answer, in its order, each class of the inventories with 0 when nothing holds it; and ``usage show`` shows it.
    A provider without inventory holds no allocation (its allocations are not read): Placement refuses an allocation
    of a class the provider has no inventory of, and the removal of an inventory that holds allocations."""
    from minbw.errors import InventoryInUse, UndefinedCode
    from minbw.model.providers import usages_of
    from minbw.usecases.cloud import Cloud
    from minbw.usecases.usage import UsageRequest, usage

    root = host(placement, "hu1", ovs=OVS)
    consumers = [str(uuid.uuid4()) for _ in range(3)]
    for c in consumers:
        _claim(placement, c)
    tree = placement.list_providers(in_tree=root)

    def compare() -> dict:
        summed = {}
        for p in tree:
            inventories, _generation = placement.get_inventories(p.uuid)
            summed[p.uuid] = usages_of(inventories, placement.provider_allocations(p.uuid))
            assert list(summed[p.uuid].items()) == list(placement.provider_usages(p.uuid).items())
        shown = usage(Cloud(lambda: placement.conn), UsageRequest(hypervisor="hu1"))
        assert {u.provider.uuid: list(u.usages.items()) for u in shown.providers} == {
            u: list(used.items()) for u, used in summed.items() if used
        }
        return summed

    before = compare()
    assert before[root] == {"VCPU": 3, "MEMORY_MB": 0, "DISK_GB": 0}
    _delete(placement, consumers[0])
    assert compare()[root] == {"VCPU": 2, "MEMORY_MB": 0, "DISK_GB": 0}

    bare = next(p.uuid for p in tree if not before[p.uuid])  # the agent's provider: no inventory
    with pytest.raises(UndefinedCode) as refused:  # 409, Placement's catch-all code
        placement.put_allocations(str(uuid.uuid4()), {"allocations": {bare: {"resources": {"VCPU": 1}}},
                                                       "project_id": "p", "user_id": "u", "consumer_generation": None})
    assert refused.value.status == 409
    bridge = next(u for u, used in before.items() if any(used.values()) and u != root)
    with pytest.raises(InventoryInUse):
        placement.set_inventories(bridge, {}, placement.get_inventories(bridge)[1])


def test_usage_show_reads_again_a_provider_whose_generation_moved_between_its_reads(placement):
    """A write between a provider's inventories and its allocations (here the root's VCPU total changed, as a
    concurrent writer would) moves its generation: ``usage show`` reads it again and shows one generation's
    inventories, not the listing's beside the new allocations."""
    from minbw.usecases.cloud import Cloud
    from minbw.usecases.usage import UsageRequest, usage

    root = host(placement, "hu2", ovs=OVS)
    cloud = Cloud(lambda: placement.conn)
    api = cloud.placement
    read = api.provider_allocations
    moved: list[int] = []

    def allocations_after_a_write(uuid: str, with_generation: bool = False):
        if uuid == root and not moved:
            inventories, generation = placement.get_inventories(root)
            placement.set_inventories(root, {**inventories, "VCPU": {**inventories["VCPU"], "total": 65}}, generation)
            moved.append(generation)
        return read(uuid, with_generation=with_generation)

    api.provider_allocations = allocations_after_a_write  # type: ignore[method-assign]
    shown = next(u for u in usage(cloud, UsageRequest(hypervisor="hu2")).providers if u.provider.uuid == root)
    assert moved and shown.provider.generation == moved[0] + 1
    assert shown.inventories["VCPU"]["total"] == 65 and shown.usages["VCPU"] == 0
