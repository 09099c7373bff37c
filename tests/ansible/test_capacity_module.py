"""bandwidth_capacity_info run by ansible-playbook against the embedded Placement (role placement_local)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

OVS = ("[ovs]\nbridge_mappings = physnet0:br-test,physnet1:br-ex\n"
       "resource_provider_bandwidths = br-test:3500:3500,br-ex:2000:2000\n")
SRIOV = "[sriov_nic]\nphysical_device_mappings = physnet0:ens5\nresource_provider_bandwidths = ens5:4000:4000\n"


def test_capacity_module(playbook, placement_local, tmp_path):
    port, state_dir = placement_local
    result_file = tmp_path / "result.json"
    base = dict(port=port, state_dir=str(state_dir), result_file=str(result_file))
    r = playbook("capacity.yml", base)  # starts Placement; it has no provider yet
    assert r.failed, r.output  # hypervisor devstack0 does not exist yet (the bad-input tasks are ignored)
    assert "no compute node (root resource provider) named 'devstack0'" in r.output
    ini = [tmp_path / "ovs.ini", tmp_path / "sriov.ini"]
    ini[0].write_text(OVS)
    ini[1].write_text(SRIOV)
    env = dict(os.environ, OS_CLIENT_CONFIG_FILE=str(state_dir / "clouds.yaml"), OS_CLOUD="minbw-local")
    subprocess.run([sys.executable, "-m", "minbw.cli", "provider", "sync", "--agent-config", str(ini[0]),
                    "--agent-config", str(ini[1]), "--host", "devstack0", "--create-root",
                    "--root-inventory", "VCPU=8", "--root-inventory", "MEMORY_MB=16384", "--root-inventory", "DISK_GB=100"], check=True, env=env, capture_output=True)

    r = playbook("capacity.yml", base)
    assert not r.failed and r.recap["changed"] == 0, r.output
    res = json.loads(result_file.read_text())

    each = res["each"]
    (h,) = each["hosts"]
    # normal ports: physnet0 only on br-test (ens5 is SR-IOV: direct only), physnet1 on br-ex
    assert [(n["physnet"], n["fits"]) for n in h["physnets"]] == [("physnet0", 3), ("physnet1", 2)]
    assert h["host"] == "devstack0" and h["fits"] == 5 and each["total"] == 5
    assert [(p["physnet"], p["fits"], p["hosts"]) for p in each["physnets"]] == [("physnet0", 3, 1), ("physnet1", 2, 1)]
    assert h["physnets"][0]["limited_by"][0]["resource_class"] == "NET_BW_EGR_KILOBIT_PER_SEC"
    assert each["changed"] is False

    # direct ports on physnet0: br-test (OVS advertises direct) and ens5 add up: 3 + 4, capped by 8 VCPUs
    direct = res["direct"]
    assert direct["total"] == 7 and direct["physnets"][0]["physnet"] == "physnet0"
    assert direct["hosts"][0]["limited_by"][0]["providers"] == [  # the root's children by name
        "devstack0:NIC Switch agent:ens5", "devstack0:Open vSwitch agent:br-test"]

    assert res["reported"]["total"] == 3

    for key, words in (("bad_class", "resources: unknown resource class 'VCPUS'. Did you mean VCPU?"),
                       ("bad_amount", "resources: VCPU: the amount must be a whole number >= 0, got -1"),
                       ("bad_host", "hypervisor: no compute node (root resource provider) named 'nowhere'"),
                       ("bad_rule", "qos_ports[0]: a minimum_bandwidth rule: min_kbps must be an integer")):
        assert res[key]["failed"] and words in res[key]["msg"], res[key]
        assert "Traceback" not in res[key].get("module_stderr", "")
