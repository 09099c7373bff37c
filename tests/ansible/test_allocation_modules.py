"""allocation (check mode, claim, idempotency, free, failure with diagnosis), allocation_candidates_info
and port_resource_request_info, run by ansible-playbook against the embedded Placement."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PORT = "99a97b12-6364-4d10-8d8e-c3dab4161691"
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"
OVS = "[ovs]\nbridge_mappings = public:br-ex,physnet0:br-test\nresource_provider_bandwidths = br-test:1500:1500,br-ex::1\n"


def test_allocation_cycle(playbook, placement_local, tmp_path):
    port, state_dir = placement_local
    result_file = tmp_path / "result.json"
    base = dict(port=port, state_dir=str(state_dir), result_file=str(result_file), port_id=PORT,
                consumer="71cb7e04-3d5a-40f9-a99f-07f0d0831741", start_placement=False)  # the first run starts it

    def run(check=False, diff=False, **extra):
        r = playbook("allocation_cycle.yml", dict(base, **extra), check=check, diff=diff)
        assert not r.failed, r.output
        return r, json.loads(result_file.read_text())

    run(state="absent", start_placement=True)  # starts Placement; nothing to free yet
    ovs = tmp_path / "ovs.ini"
    ovs.write_text(OVS)
    env = dict(__import__("os").environ, OS_CLIENT_CONFIG_FILE=str(state_dir / "clouds.yaml"), OS_CLOUD="minbw-local")
    subprocess.run([sys.executable, "-m", "minbw.cli", "provider", "sync", "--agent-config", str(ovs), "--host",
                    "devstack0", "--create-root", "--root-inventory", "VCPU=8", "--root-inventory", "MEMORY_MB=16384", "--root-inventory", "DISK_GB=100"],
                   check=True, env=env, capture_output=True)

    r, res = run(check=True, diff=True, state="present")
    assert res["request"]["resource_request"]["request_groups"][0]["required"] == [
        "CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"]
    assert res["candidates"]["count"] == 1 and res["candidates"]["candidates"][0]["host_name"] == "devstack0"
    assert res["allocation"]["changed"] is True and r.recap["changed"] == 1
    assert "claimed: true" in r.output  # the diff
    usage = json.loads(subprocess.run([sys.executable, "-m", "minbw.cli", "usage", "show", "--provider", BR_TEST, "--json"],
                                      env=env, capture_output=True, text=True, check=True).stdout)
    assert sum(usage[0]["usages"].values()) == 0  # check mode claimed nothing

    r, res = run(state="present")
    claim = res["allocation"]["claim"]
    assert res["allocation"]["changed"] and claim["host_name"] == "devstack0"
    assert list(claim["binding_profiles"][PORT].values()) == [BR_TEST]

    r, res = run(state="present")
    assert res["allocation"]["changed"] is False  # idempotent: the existing claim satisfies the request
    assert res["allocation"]["claim"]["binding_profiles"] == claim["binding_profiles"]

    r, res = run(state="present", consumer="0d4b5cf1-6a3c-4a4e-9a52-3b0c1e7f7a11")
    failed = res["allocation"]
    assert failed["failed"] and "largest free amount is 500" in failed["msg"]
    assert [d["fits_alone"] for d in failed["diagnosis"]] == [True, False]

    r, res = run(check=True, state="absent")
    assert res["allocation"]["changed"] is True
    r, res = run(state="absent")
    assert res["allocation"]["changed"] is True
    r, res = run(state="absent")
    assert res["allocation"]["changed"] is False


def test_rules_without_ids_request_what_the_cli_requests(playbook, placement_local, tmp_path):
    """port_resource_request_info takes QoS rules without ids (rules not created yet), as `minbw request show`
    does: the same port id and rules give the same request, group ids included."""
    port, state_dir = placement_local
    result_file = tmp_path / "result.json"
    rules = [{"type": "minimum_bandwidth", "direction": "egress", "min_kbps": 1000},
             {"type": "minimum_bandwidth", "direction": "ingress", "min_kbps": 1000},
             {"type": "bandwidth_limit", "max_kbps": 5000}]  # not a minimum rule: left out, as Neutron does
    r = playbook("allocation_cycle.yml", dict(port=port, state_dir=str(state_dir), result_file=str(result_file),
                                              port_id=PORT, consumer="71cb7e04-3d5a-40f9-a99f-07f0d0831741",
                                              state="absent", rules=rules))
    assert not r.failed, r.output
    module = json.loads(result_file.read_text())["request"]["resource_request"]
    cli = json.loads(subprocess.run([sys.executable, "-m", "minbw.cli", "request", "show", "--port-id", PORT, "--qos-port",
                                     "min_bw:egress:1000,min_bw:ingress:1000"],
                                    capture_output=True, text=True, check=True).stdout)["resource_request"]
    assert module == cli and module["request_groups"][0]["resources"] == {
        "NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}
