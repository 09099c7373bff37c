"""allocation_migration (check mode, the move, idempotency, confirm, revert, a move in progress) run by
ansible-playbook against the embedded Placement; the hosts and the server's claim are made with the core."""
from __future__ import annotations

import dataclasses
import json
import uuid

import openstack.config
from openstack import connection

from minbw.model.requests import ServerRequest
from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.port_request import Segment, build_port_request
from minbw.neutron.provider_tree import desired_state
from minbw.neutron.qos import QosRule
from minbw.ops import claims, sync
from minbw.placement.client import Placement
from tests.support.compute_roots import compute_root

PORT = "99a97b12-6364-4d10-8d8e-c3dab4161691"
CONSUMER = "71cb7e04-3d5a-40f9-a99f-07f0d0831741"
FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}
BW = {"NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}
NO_BW = {"NET_BW_EGR_KILOBIT_PER_SEC": 0, "NET_BW_IGR_KILOBIT_PER_SEC": 0}


def connect(state_dir):
    cfg = openstack.config.OpenStackConfig(config_files=[str(state_dir / "clouds.yaml")])
    return Placement(connection.Connection(config=cfg.get_one(cloud="minbw-local")))


def host(api, name):
    """A compute node root and the OVS agent's br-a on physnet0 (2000 kbps), as in test_allocation_migration_placement.py."""
    root = compute_root(api, name, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 16384}, "DISK_GB": {"total": 100}})
    ini = "[ovs]\nbridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:2000:2000\n"
    sync.sync_providers(api, desired_state([load_agent_ini(ini, source="ovs.ini", host=name)]))
    return root, next(p.uuid for p in api.list_providers() if p.name == f"{name}:Open vSwitch agent:br-a")


def held(api, consumer):
    return {rp: a["resources"] for rp, a in api.get_allocations(consumer)["allocations"].items()}


def test_allocation_migration_cycle(playbook, placement_local, tmp_path):
    port, state_dir = placement_local
    result_file = tmp_path / "result.json"
    rules = [QosRule(f"0000000{i}-0000-4000-8000-000000000000", "minimum_bandwidth", d, 1000)
             for i, d in enumerate(("egress", "ingress"))]
    pr = build_port_request(PORT, rules, [Segment("vlan", "physnet0")], "normal")
    group = pr.groups[0].id
    migration = str(uuid.uuid5(uuid.NAMESPACE_URL, "move-1"))
    base = dict(port=port, state_dir=str(state_dir), result_file=str(result_file), port_id=PORT,
                resource_request=pr.to_neutron(), consumer=CONSUMER, migration=migration,
                start_placement=False)  # the first run starts it

    def run(check=False, diff=False, **extra):
        r = playbook("allocation_migration.yml", dict(base, **extra), check=check, diff=diff)
        assert not r.failed, r.output
        return r, json.loads(result_file.read_text())["move"]

    r, res = run(state="confirmed", start_placement=True)  # starts Placement; nothing to confirm yet
    assert res["changed"] is False and res["written"] is None
    api = connect(state_dir)
    (h1, br1), (h2, br2) = host(api, "h1"), host(api, "h2")
    req = ServerRequest(extra_resources=FLAVOR, ports=(pr,))
    claims.claim(api, CONSUMER, dataclasses.replace(req, in_tree=h1), project_id="p", user_id="u")
    source = held(api, CONSUMER)

    # check mode: the plan, with its diff; nothing written
    r, res = run(check=True, diff=True, state="migrated", target_host="h2")
    assert res["changed"] is True and r.recap["changed"] == 1
    assert res["planned"]["target"] == h2 and res["planned"]["source"] == h1
    (op,) = res["planned"]["ops"]
    assert op["post_allocations"][migration]["consumer_generation"] is None
    assert res["binding_profiles"] == {PORT: {group: br2}} and res["written"] is None
    assert "+        host: h2\n" in r.output  # the diff: the consumer goes to h2 (and the migration holds h1)
    assert api.provider_usages(br2) == NO_BW and api.get_allocations(migration)["allocations"] == {}

    # the move: one POST, exactly the planned body
    r, res = run(state="migrated", target_host="h2")
    assert res["changed"] is True and res["written"] == op["post_allocations"]
    assert res["claim"]["host_name"] == "h2" and res["binding_profiles"] == {PORT: {group: br2}}
    assert [a["outcome"] for a in res["attempts"]] == ["moved"]
    assert held(api, migration) == source
    assert api.provider_usages(br1) == BW and api.provider_usages(br2) == BW

    # again: already on h2 with the migration holding h1 → no change
    r, res = run(state="migrated", target_host="h2")
    assert res["changed"] is False and res["written"] is None and res["binding_profiles"] == {PORT: {group: br2}}

    # confirm: check, real, again
    r, res = run(check=True, state="confirmed")
    assert res["changed"] is True and api.provider_usages(br1) == BW
    r, res = run(state="confirmed")
    assert res["changed"] is True and res["written"][migration]["allocations"] == {}
    assert api.provider_usages(br1) == NO_BW and api.provider_usages(br2) == BW
    r, res = run(state="confirmed")
    assert res["changed"] is False

    # the playbook again after confirm: on h2, nothing held → no change
    r, res = run(state="migrated", target_host="h2")
    assert res["changed"] is False and res["reason"] == "same-host" and res["claim"]["host_name"] == "h2"

    # back to h1 with a new migration record, then revert it: on h2 again, the old binding back
    back = str(uuid.uuid5(uuid.NAMESPACE_URL, "move-2"))
    r, res = run(state="migrated", target_host=h1, migration=back)
    assert res["changed"] is True and res["binding_profiles"] == {PORT: {group: br1}}
    r, res = run(diff=True, state="reverted", migration=back)
    assert res["changed"] is True and res["binding_profiles"] == {PORT: {group: br2}}
    assert res["claim"]["host_name"] == "h2"
    assert api.provider_usages(br1) == NO_BW and api.provider_usages(br2) == BW
    assert api.get_allocations(back)["allocations"] == {}
    r, res = run(state="reverted", migration=back, with_request=False)
    assert res["changed"] is False

    # a move in progress: the migration record holds h2, the consumer is moved to h1 with it, then asked to h2
    r, res = run(state="migrated", target_host="h1", migration=back)
    assert res["changed"] is True
    r, res = run(state="migrated", target_host="h2", migration=back)
    assert res["failed"] and res["reason"] == "in-progress"
    assert "a move is in progress" in res["msg"] and "Confirm it" in res["msg"]
    assert api.provider_usages(br1) == BW and api.provider_usages(br2) == BW  # nothing written
