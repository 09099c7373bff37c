"""Sharing providers (MISC_SHARES_VIA_AGGREGATE: DISK_GB from a pool shared by an aggregate) in ``capacity`` and
``candidates``, against the real embedded Placement: its allocation candidates are the oracle (claim servers one
by one until it has none; every candidate's host is the tree it is anchored on, its flavor group every provider
it draws from)."""
from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings, strategies as st

from minbw.model.providers import NOVA_ROOT_TRAITS
from minbw.model.requests import ServerRequest
from minbw.ops import claims
from minbw.reports.capacity.request import CapacityRequest
from minbw.usecases.capacity import capacity_report
from tests.conftest import MINBW, wipe
from tests.functional.test_capacity_placement import claim_until_full, free_all
from tests.support import cli_forks

SHARES = "MISC_SHARES_VIA_AGGREGATE"
E = "NET_BW_EGR_KILOBIT_PER_SEC"


def provider(api, name, parent=None, inventories=None, traits=(), aggregates=()):
    u = str(uuid.uuid5(uuid.NAMESPACE_DNS, name))
    gen = api.create_provider(u, name, parent).generation
    if inventories:
        gen = api.set_inventories(u, {rc: {"total": n} for rc, n in inventories.items()}, gen)
    if traits:
        for t in traits:
            if t.startswith("CUSTOM_"):
                api.create_trait(t)
        gen = api.set_provider_traits(u, traits, gen)
    if aggregates:
        api.set_provider_aggregates(u, aggregates, gen)
    return u


def seed_001(api):
    """A compute (VCPU, MEMORY_MB; Nova's root traits), its br-test bridge (1000 kbps) and a sharing DISK_GB pool
    in its aggregate (a pool is no compute node: no Nova root traits)."""
    agg = str(uuid.uuid5(uuid.NAMESPACE_DNS, "agg-ceph"))
    h1 = provider(api, "h1", inventories={"VCPU": 8, "MEMORY_MB": 4096}, traits=NOVA_ROOT_TRAITS, aggregates=[agg])
    provider(api, "h1:br-test", h1, {E: 1000}, ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"])
    ceph = provider(api, "ceph", inventories={"DISK_GB": 30}, traits=[SHARES], aggregates=[agg])
    return h1, ceph


FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 10}


def test_seed_001_capacity_and_candidates(placement, placement_server):
    h1, ceph = seed_001(placement)
    req = CapacityRequest(ServerRequest(extra_resources=FLAVOR))
    report = capacity_report(placement, req)
    assert [(h.name, h.fit.fits) for h in report.hosts] == [("h1", 3)] and report.total == 3
    assert report.hosts[0].fit.limited_by[0].providers == ("ceph",)
    cands = claims.get_candidates(placement, req.server)
    (ar,) = cands.allocation_requests
    assert set(ar["allocations"]) == {h1, ceph} and cands.host_of(ar) == h1
    env = placement_server.env()
    out = cli_forks.run(MINBW + ["candidate", "list", "--resource", "VCPU=1", "--resource", "MEMORY_MB=256",
                                  "--resource", "DISK_GB=10", "-f", "value"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1 h1 flavor ceph, h1"  # the flavor's group: every provider it draws from
    out = cli_forks.run(MINBW + ["capacity", "show", "--resource", "VCPU=1", "--resource", "MEMORY_MB=256",
                                  "--resource", "DISK_GB=10", "--json"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    claimed, consumers = claim_until_full(placement, req.server)
    free_all(placement, consumers)
    assert dict(claimed) == {h1: 3}


topologies = st.fixed_dictionaries({
    "hosts": st.lists(st.fixed_dictionaries({
        "vcpu": st.integers(1, 4),
        "disk": st.sampled_from([None, None, 20]),
        "bridge": st.booleans(),
        "aggregate_on": st.sampled_from(["root", "bridge"]),
    }), min_size=1, max_size=3),
    "pools": st.lists(st.fixed_dictionaries({
        "disk": st.sampled_from([10, 30, 50]),
        "serves": st.lists(st.integers(0, 2), unique=True, max_size=3),
    }), min_size=1, max_size=2),
    "disk": st.sampled_from([10, 20]),
})


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(topologies)
def test_capacity_with_sharing_providers_agrees_with_placement(placement, topo):
    wipe(placement)
    trees = {}
    for i, h in enumerate(topo["hosts"]):
        root = provider(placement, f"g{i}", inventories={"VCPU": h["vcpu"], **({"DISK_GB": h["disk"]} if h["disk"] else {})},
                        traits=NOVA_ROOT_TRAITS)
        bridge = provider(placement, f"g{i}:br", root, {E: 1000}, ["CUSTOM_PHYSNET_PHYSNET0"]) if h["bridge"] else None
        trees[i] = (root, bridge if h["aggregate_on"] == "bridge" and bridge else root)
    for j, pool in enumerate(topo["pools"]):
        agg = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"agg{j}"))
        provider(placement, f"pool{j}", inventories={"DISK_GB": pool["disk"]}, traits=[SHARES], aggregates=[agg])
        for i in pool["serves"]:
            if i in trees:
                member = trees[i][1]
                have, gen = placement.get_provider_aggregates(member)
                placement.set_provider_aggregates(member, have | {agg}, gen)
    req = CapacityRequest(ServerRequest(extra_resources={"VCPU": 1, "DISK_GB": topo["disk"]}))
    report = capacity_report(placement, req)
    cands = claims.get_candidates(placement, req.server)
    names = placement.provider_names()
    roots = {u for u, n in names.items() if not n.startswith("pool") and ":" not in n}
    # every candidate is anchored on a compute node, and draws its disk from the tree or a pool it is tied to
    assert {cands.host_of(ar) for ar in cands.allocation_requests} == {
        h.uuid for h in report.hosts if h.fit.fits and h.uuid in roots}
    claimed, consumers = claim_until_full(placement, req.server)
    free_all(placement, consumers)
    fits = {h.uuid: h.fit.fits for h in report.hosts}
    assert all(n <= fits[h] for h, n in claimed.items())
    assert report.total_first_fit <= sum(claimed.values()) <= report.total
    if report.total_first_fit == report.total:
        assert sum(claimed.values()) == report.total
