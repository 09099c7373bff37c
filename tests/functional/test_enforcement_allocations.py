"""The allocations an enforcement check needs (minbw.ops.enforcement.server_allocations), on a real Placement: one read
of each provider the ports' binding:profile.allocation name, whatever the number of servers on it, giving each
server's amounts there exactly as Placement's own per-consumer read does; a provider that is not there holds nothing."""
from __future__ import annotations

import uuid

import pytest

from minbw.errors import NotFound
from minbw.model.claims import resources_by_provider
from minbw.ops.enforcement import inventories, server_allocations

EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"


def test_one_read_per_named_provider_the_same_amounts_as_each_servers_own(placement):
    api = placement
    bridge, other = str(uuid.uuid4()), str(uuid.uuid4())
    for rp in (bridge, other):
        generation = api.create_provider(rp, f"cmp1:Open vSwitch agent:{rp[:8]}", None).generation
        api.set_inventories(rp, {EGR: {"total": 100000}, IGR: {"total": 100000}}, generation)
    servers = [str(uuid.uuid4()) for _ in range(5)]
    for i, server in enumerate(servers):
        api.put_allocations(server, {"allocations": {bridge: {"resources": {EGR: 1000 + i, IGR: 10}},
                                                     other: {"resources": {EGR: 7}}},
                                     "consumer_generation": None, "project_id": "p", "user_id": "u"})
    gone = str(uuid.uuid4())  # a provider an allocation names that Placement has not (any more)
    named = {s: {bridge} for s in servers[:4]} | {servers[4]: {bridge, gone}}

    api.counter.reset()
    got = server_allocations(api, named)
    assert sorted(api.counter.calls) == sorted([("GET", f"/resource_providers/{bridge}/allocations"),
                                                ("GET", f"/resource_providers/{gone}/allocations")])
    own = {s: resources_by_provider(api.get_allocations(s)["allocations"]) for s in servers}
    assert got == {s: {bridge: own[s][bridge]} for s in servers}
    assert got[servers[4]][bridge] == {EGR: 1004, IGR: 10}


def test_a_provider_that_is_not_there_has_no_inventories(placement):
    """Placement answers a provider's inventories that is not there with 404 and its catch-all code
    (placement.undefined_code): minbw takes the status for it, NotFound, and the check reads no inventory there (an
    agent's PF that nothing synced, as with Neutron's placement plugin off), where it failed the whole check."""
    missing = str(uuid.uuid4())
    with pytest.raises(NotFound) as e:
        placement.get_inventories(missing)
    assert (e.value.status, e.value.code) == (404, "placement.undefined_code")
    assert inventories(placement, missing) is None
