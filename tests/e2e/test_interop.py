"""Interoperability with the real Neutron and Nova (placement plugin on): the providers Neutron creates, the
resource_request it computes, and the provider Nova picks are what minbw predicts."""
from __future__ import annotations

from minbw.ops import claims
from minbw.ops import neutron
from minbw.ops import servers
from minbw.neutron.agentconf import load_agent_ini
from minbw.placement.mapping import mapping_from_candidate
from minbw.placement.client import Placement
from minbw.neutron.provider_tree import desired_state
from minbw.model.requests import ServerRequest
from minbw.ops.sync import sync_providers

HYPERVISOR = "devstack0"


def predicted(cloud):
    return desired_state([load_agent_ini(path.read_text(), source=str(path), host=HYPERVISOR)
                          for path in (cloud.ovs_ini, cloud.sriov_ini)])


def test_neutron_creates_the_tree_minbw_predicts(cloud):
    api = Placement(cloud.connect())
    desired = predicted(cloud)
    root = api.list_providers(name=HYPERVISOR)[0]
    assert {p.role for p in desired.providers} == {"agent", "device"}
    for spec in desired.providers:
        got = api.get_provider(spec.uuid)  # raises if Neutron did not create this UUID
        assert got.name == spec.name
        assert got.parent_uuid == (spec.parent_uuid or root.uuid)
        assert got.root_uuid == root.uuid
        assert api.get_provider_traits(spec.uuid)[0] == set(spec.traits), spec.name
        inventories = api.get_inventories(spec.uuid)[0]
        assert inventories == {rc: dict(inv) for rc, inv in spec.inventories.items()}, spec.name
    # nothing under the agents that we would not create
    agents = {p.uuid for p in desired.providers if p.role == "agent"}
    children = {p.uuid for p in api.list_providers(in_tree=root.uuid) if p.parent_uuid in agents}
    assert children == {p.uuid for p in desired.providers if p.role == "device"}
    # and our sync would write nothing to that Placement
    plan, applied = sync_providers(api, desired, check=True)
    assert plan.writes() == 0 and applied is None, [op.to_dict() for op in plan.ops]
    # seed 003's UUIDs
    assert api.get_provider("f9c9ce07-679d-5d72-ac5f-31720811629a").name == "devstack0:Open vSwitch agent:br-test"
    assert api.get_provider("89ca1421-5117-5348-acab-6d0e2054239c").name == "devstack0:Open vSwitch agent"


def test_computed_resource_request_equals_neutrons(demo):
    conn = demo.conn
    multi = conn.network.create_network(name="e2e-multiseg", segments=[
        {"provider:network_type": "vlan", "provider:physical_network": "physnet0", "provider:segmentation_id": 150},
        {"provider:network_type": "flat", "provider:physical_network": "public"}])
    demo.networks.append(multi)
    bw = demo.policy("e2e-bw", bw=[("egress", 1000), ("ingress", 2000)])
    pps_any = demo.policy("e2e-bw-pps-any", bw=[("egress", 100)], pps=[("any", 1000)])
    pps_dir = demo.policy("e2e-pps-directed", pps=[("egress", 10), ("ingress", 20)])
    cases = [("normal", bw, None), ("direct", bw, None), ("normal", pps_any, None), ("normal", pps_dir, None),
             ("normal", bw, multi), ("direct", pps_any, multi)]
    for i, (vnic, policy, network) in enumerate(cases):
        port = demo.port(f"e2e-rr-{i}", policy, vnic, network)
        facts = neutron.port_facts(conn, port.id)
        theirs = facts.port["resource_request"]
        assert theirs and theirs["request_groups"], (vnic, policy.name)
        ours = neutron.computed_request(facts)
        assert ours.to_neutron() == theirs, (vnic, policy.name, network and network.name)
        assert neutron.reported_request(facts) == ours
        if network is multi:
            assert ours.notes, "the first-segment-only request says what it excludes"


def test_nova_picks_one_of_our_candidates_and_our_mapping_agrees(demo):
    conn = demo.conn
    api = Placement(conn)
    policy = demo.policy("e2e-pick", bw=[("egress", 300), ("ingress", 300)])
    port = demo.port("e2e-pick", policy)
    port_req = neutron.reported_request(neutron.port_facts(conn, port.id))
    req = ServerRequest.from_flavor(demo.flavor.to_dict(computed=False), ports=[port_req])
    cands = claims.get_candidates(api, req)
    assert cands.allocation_requests, "the request fits before the boot"
    ours = [{rp: a["resources"] for rp, a in ar["allocations"].items()} for ar in cands.allocation_requests]

    server = demo.boot("e2e-pick", [port])
    allocs = api.get_allocations(server.id)["allocations"]
    claimed = {rp: a["resources"] for rp, a in allocs.items()}
    assert claimed in ours, f"Nova claimed {claimed}, not one of our candidates {ours}"

    # our mapping of the candidate Nova took (Placement's mappings) and of the claim (our exact solver) ...
    taken = cands.allocation_requests[ours.index(claimed)]
    by_placement = mapping_from_candidate(taken, cands.provider_summaries, req).group_providers()
    claim = claims.existing_claim(api, server.id, servers.request_of_server(server, [servers.port_state(conn, port.id)]))
    assert claim.mapping_source == "solver"
    # ... agree with each other and with what Nova wrote on the port
    binding = conn.network.get_port(port.id).binding_profile["allocation"]
    assert binding == claim.binding_profiles[port.id] == {g.id: by_placement[g.id] for g in port_req.groups}
    assert binding == {port_req.groups[0].id: "f9c9ce07-679d-5d72-ac5f-31720811629a"}  # br-test
