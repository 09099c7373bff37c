"""host_separation (through the role bandwidth_host_separation) and the separation option of
allocation_candidates_info, run by ansible-playbook against the embedded Placement: check mode, diff,
the real run, idempotency, absent."""
from __future__ import annotations

import json
import os
import subprocess
import sys

PORT = "99a97b12-6364-4d10-8d8e-c3dab4161691"
OVS = "[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = br-test:1500:1500\n"
TRAIT = "CUSTOM_MINBW_QOS_HOST"


def test_host_separation_role_and_module(playbook, placement_local, tmp_path):
    port, state_dir = placement_local
    result_file = tmp_path / "result.json"
    base = dict(port=port, state_dir=str(state_dir), result_file=str(result_file), reserve=["devstack1"],
                state="present", port_requests=[], start_placement=False)  # the first run starts it

    def run(check=False, diff=False, **extra):
        r = playbook("host_separation.yml", dict(base, **extra), check=check, diff=diff)
        assert not r.failed, r.output
        return r, json.loads(result_file.read_text())

    def minbw(*args):
        env = dict(os.environ, OS_CLIENT_CONFIG_FILE=str(state_dir / "clouds.yaml"), OS_CLOUD="minbw-local")
        return subprocess.run([sys.executable, "-m", "minbw.cli", *args], check=True, env=env,
                              capture_output=True, text=True).stdout

    def hosts(result):
        return sorted({c["host_name"] for c in result["candidates"]})

    run(state="absent", reserve=[], start_placement=True)  # starts Placement; nothing reserved yet
    ovs = tmp_path / "ovs.ini"
    ovs.write_text(OVS)
    for name in ("devstack0", "devstack1"):
        minbw("provider", "sync", "--agent-config", str(ovs), "--host", name, "--create-root",
              "--root-inventory", "VCPU=8", "--root-inventory", "MEMORY_MB=16384", "--root-inventory", "DISK_GB=100")
    request = json.loads(minbw("request", "show", "--port-id", PORT, "--qos-port", "min_bw:egress:1000", "--json"))
    qos = [{"port_id": PORT, "resource_request": request["resource_request"]}]

    r, res = run(check=True, diff=True, port_requests=qos)
    assert res["separation"]["changed"] is True
    assert [op["action"] for op in res["separation"]["ops"]] == ["create_trait", "reserve"]
    assert "2 writes planned" in r.output and f"+            - {TRAIT}" in r.output  # the summary, the diff
    assert hosts(res["plain"]) == ["devstack0", "devstack1"]  # check mode wrote nothing

    r, res = run(port_requests=qos)
    assert res["separation"]["changed"] is True and res["separation"]["writes"] == 2
    assert hosts(res["plain"]) == ["devstack0"]
    assert hosts(res["qos"]) == ["devstack1"]
    # Nova's owner_nova_filter's and compute_status_filter's root traits (the fixture's roots are made as
    # nova-compute makes them), then the separation's
    assert res["plain"]["query"]["root_required"] == f"OWNER_NOVA,!COMPUTE_STATUS_DISABLED,!{TRAIT}"

    r, res = run(port_requests=qos)
    assert res["separation"]["changed"] is False and res["separation"]["ops"] == []  # idempotent
    assert r.recap["changed"] == 0

    bad = playbook("host_separation.yml", dict(base, reserve=["devstack1", "devstack9"]))
    assert bad.failed and "hosts: no root provider named 'devstack9' in Placement. Fix: " in bad.output

    r, res = run(state="absent", reserve=[])
    assert [(op["action"], op["host"]) for op in res["separation"]["ops"]] == [("release", "devstack1")]
    assert hosts(res["plain"]) == ["devstack0", "devstack1"]
