"""The drain plan (minbw.plan.drain) against the real embedded Placement: the trees are read from Placement, the plan
made, then proven there. Each planned move, in the plan's order, is among the allocation candidates Placement offers
for that server's request (minbw's query, the same allocations and mappings), and is claimed for a fresh consumer
with no 409: the moves together fit. Where greedy-by-size fails, its sequence of claims leaves a server without a
candidate, while the exact plan's claims all succeed."""
from __future__ import annotations

import random
import uuid

from minbw.model.requests import PortRequest, RequestGroup, ServerRequest
from minbw.ops import claims
from minbw.plan.allocations import ClaimOp
from minbw.plan.drain import DrainServer, plan_drain
from minbw.reports.capacity.report import trees
from tests.functional.test_capacity_placement import free_all, host

E, I = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
PPS = "NET_PACKET_RATE_KILOPACKET_PER_SEC"
PN0, PN1 = "CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_PHYSNET_PHYSNET1"
NORMAL = "CUSTOM_VNIC_TYPE_NORMAL"


def destinations(api):
    details = list(api.provider_details(api.list_providers(), usages=True))
    found, notes = trees(details)
    assert notes == []
    return found


def server(i, *ports, vcpus=1, status="ACTIVE"):
    """Server ``i`` with ports (egress, ingress, physnet trait); each port's group asks its physnet and vnic type."""
    built = tuple(PortRequest(str(uuid.uuid5(uuid.NAMESPACE_URL, f"port-{i}-{j}")), (RequestGroup(
        str(uuid.uuid5(uuid.NAMESPACE_URL, f"group-{i}-{j}")), ((E, egress), (I, ingress)), (physnet, NORMAL)),))
        for j, (egress, ingress, physnet) in enumerate(ports))
    return DrainServer(str(uuid.uuid5(uuid.NAMESPACE_URL, f"server-{i}")), f"vm{i}", status,
                       ServerRequest(vcpus=vcpus, memory_mb=512, disk_gb=1, ports=built))


def allocations_of(move):
    return {rp: {"resources": dict(res)} for rp, res in move.allocations.items()}


def prove(api, plan, servers):
    """Each move, in order: among Placement's candidates for its server (allocations and mappings), then claimed
    with no 409. Returns the consumers claimed."""
    by_id = {s.id: s for s in servers}
    consumers = []
    for move in plan.moves:
        cands = claims.get_candidates(api, by_id[move.server_id].request)
        offered = [(ar["allocations"], {g: sorted(rps) for g, rps in ar["mappings"].items()})
                   for ar in cands.allocation_requests]
        planned = (allocations_of(move), {g: sorted(rps) for g, rps in move.mappings.items()})
        assert planned in offered, f"{move.server_name}: {planned} is not among Placement's {len(offered)} candidates"
        consumer = str(uuid.uuid4())
        op = ClaimOp("claim", consumer=consumer, host=move.host, allocations=allocations_of(move))
        assert claims.put_claim_op(api, op, project_id="p", user_id="u") == "claimed", move.server_name
        consumers.append(consumer)
    return consumers


def test_greedy_fails_where_the_exact_plan_fits_and_placement_agrees(placement):
    # the instance hypothesis found (tests/unit/plan/test_drain.py, GREEDY_FAILS): bridges of 1200 and 700 kbps;
    # servers of 600, 600 and 700. Greedy puts the 700 on host0 first, then one 600 on host1, the other nowhere.
    host(placement, "host0", "bridge_mappings = physnet0:br-ex\nresource_provider_bandwidths = br-ex:1200:1200\n")
    host(placement, "host1", "bridge_mappings = physnet0:br-ex\nresource_provider_bandwidths = br-ex:700:700\n")
    servers = [server(0, (600, 600, PN0)), server(1, (600, 600, PN0)), server(2, (700, 700, PN0))]
    dest = destinations(placement)
    greedy = plan_drain("src", servers, dest, method="greedy")
    assert ([m.server_name for m in greedy.moves], [s.server_name for s in greedy.stuck]) == (["vm2", "vm0"], ["vm1"])
    consumers = prove(placement, greedy, servers)
    # Placement agrees: after greedy's claims, vm1 has no candidate anywhere
    assert claims.get_candidates(placement, servers[1].request).allocation_requests == ()
    free_all(placement, consumers)
    plan = plan_drain("src", servers, destinations(placement))
    assert plan.complete and plan.method == "exact" and plan.greedy_moves == 2
    assert {m.server_name: m.host for m in plan.moves} == {"vm0": "host0", "vm1": "host0", "vm2": "host1"}
    consumers = prove(placement, plan, servers)
    # and the hosts are full: no candidate left for one more 100 kbps port
    assert claims.get_candidates(placement, server(9, (100, 100, PN0)).request).allocation_requests == ()
    free_all(placement, consumers)


def test_a_mixed_drain_is_feasible_move_by_move(placement):
    """Three hosts, two physnets (a bridge each), 60-90 % used, servers of one or two ports on either physnet:
    the exact plan (forced) and the greedy one both prove out against Placement."""
    rng = random.Random(45)
    for n in range(3):
        ovs = ("bridge_mappings = physnet0:br-a,physnet1:br-b\n"
               f"resource_provider_bandwidths = br-a:{rng.randrange(20, 40) * 100}:{rng.randrange(20, 40) * 100},"
               f"br-b:{rng.randrange(20, 40) * 100}:{rng.randrange(20, 40) * 100}\n")
        host(placement, f"host{n}", ovs, vcpu=rng.randrange(6, 12))
    # the hosts' current servers: 60-90 % of each bridge
    dest = destinations(placement)
    residents = []
    for t in dest:
        for rp in t.order:
            stock = t.stocks.get((rp, E))
            if stock is None:
                continue
            share = rng.uniform(0.6, 0.9)
            resident = str(uuid.uuid4())
            placement.put_allocations(resident, {"allocations": {rp: {"resources": {
                E: int(stock.capacity * share), I: int(t.stocks[(rp, I)].capacity * share)}}},
                "project_id": "p", "user_id": "u", "consumer_generation": None})
            residents.append(resident)
    servers = [server(i, *[(rng.randrange(1, 8) * 100, rng.randrange(1, 8) * 100, rng.choice([PN0, PN1]))
                           for _port in range(rng.choice([1, 1, 2]))]) for i in range(12)]
    dest = destinations(placement)
    for method in ("exact", "greedy", "auto"):
        plan = plan_drain("src", servers, dest, method=method)
        assert plan.moves, "the instance moves nothing: make it roomier"
        assert len(plan.moves) >= plan.greedy_moves
        consumers = prove(placement, plan, servers)
        free_all(placement, consumers)
    exact = plan_drain("src", servers, dest, method="exact")
    # this seed's instance: greedy-by-size moves 3, the joint plan 5 (and Placement took all 5 above)
    assert (len(exact.moves), exact.greedy_moves, exact.optimal) == (5, 3, True)
    # what stays is stuck for bandwidth, said with the provider and how much short
    for s in exact.stuck:
        assert "NET_BW_" in s.reason and "short" in s.reason, s.reason
    free_all(placement, residents)
