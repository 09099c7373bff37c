"""`make demo`'s playbook, run as a person would: it must pass and reproduce seed 003's outcome.

The playbook writes what it showed to ``demo_result_file`` (default ``.state/demo/result.json``);
the values are asserted here, not the layout of its output.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support import module_forks

REPO = Path(__file__).resolve().parents[2]
RESULT = REPO / ".state" / "demo" / "result.json"  # demo_result_file's default

# seed 003: Neutron's names and uuid5 UUIDs of devstack0's bandwidth providers
OVS_AGENT = "89ca1421-5117-5348-acab-6d0e2054239c"
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"
BR_EX = "193134fd-464c-5545-9d20-df7d58c0166f"
SRIOV_AGENT = "4a8a819d-61f9-5822-8c5c-3e9c7cb942d6"
ENS5 = "1c7e83f0-108d-5c35-ada7-7ebebbe43aad"
SEED_003 = {
    OVS_AGENT: ("devstack0:Open vSwitch agent", "root"),
    BR_TEST: ("devstack0:Open vSwitch agent:br-test", OVS_AGENT),
    BR_EX: ("devstack0:Open vSwitch agent:br-ex", OVS_AGENT),
    SRIOV_AGENT: ("devstack0:NIC Switch agent", "root"),
    ENS5: ("devstack0:NIC Switch agent:ens5", SRIOV_AGENT),
}
BW = ("NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC")


def assert_seed_003_tree(providers: list[dict]) -> None:
    by_uuid = {p["uuid"]: p for p in providers}
    roots = [p for p in providers if p["parent_provider_uuid"] is None]
    assert [r["name"] for r in roots] == ["devstack0"], providers
    root = roots[0]["uuid"]
    assert set(by_uuid) == set(SEED_003) | {root}
    for uuid, (name, parent) in SEED_003.items():
        assert by_uuid[uuid]["name"] == name
        assert by_uuid[uuid]["parent_provider_uuid"] == (root if parent == "root" else parent), name
    assert {rc: inv["total"] for rc, inv in by_uuid[BR_TEST]["inventories"].items()} == dict.fromkeys(BW, 1500)
    assert {rc: inv["total"] for rc, inv in by_uuid[BR_EX]["inventories"].items()} == {BW[1]: 1}
    assert {rc: inv["total"] for rc, inv in by_uuid[ENS5]["inventories"].items()} == dict.fromkeys(BW, 100000)
    assert "CUSTOM_PHYSNET_PHYSNET0" in by_uuid[BR_TEST]["traits"]


def test_demo_playbook_reproduces_seed_003():
    RESULT.unlink(missing_ok=True)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    # its modules forked from one warm process (tests/support/module_forks.py), as the other playbook tests' are
    forks = ["-e", f"ansible_python_interpreter={module_forks.server()[1]}"] if module_forks.enabled() else []
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "playbooks/demo.yml", *forks],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    assert "failed=0" in out
    result = json.loads(RESULT.read_text())

    # the sync: writes, then none
    assert result["sync"]["changed"] is True and result["sync"]["writes"] > 0
    assert result["sync"]["again_changed"] is False and result["sync"]["again_writes"] == 0

    # the provider tree: seed 003's names, UUIDs, parents and inventories
    assert_seed_003_tree(result["providers"])

    # vm0 lands on devstack0; its port's one bandwidth group is served by br-test
    assert result["candidates"] == ["devstack0"]
    assert result["claim"]["host_name"] == "devstack0"
    allocation = result["claim"]["binding_allocation"]
    assert list(allocation.values()) == [BR_TEST], allocation
    assert result["br_test_usages_with_vm0"] == dict.fromkeys(BW, 1000)

    # vm1: no valid host, explained by br-test's free bandwidth
    assert "largest free amount is 500" in result["vm1_msg"]
    assert "devstack0:Open vSwitch agent:br-test" in result["vm1_msg"]

    # freeing vm0 brings br-test's usage back to 0
    assert result["br_test_usages_after_free"] == dict.fromkeys(BW, 0)

    # the OVS providers deleted (leaves first), then re-created with the same UUIDs
    assert result["deleted"][-1] == OVS_AGENT and sorted(result["deleted"]) == sorted([OVS_AGENT, BR_TEST, BR_EX])
    assert result["recreated"] == sorted([OVS_AGENT, BR_TEST, BR_EX])
    assert_seed_003_tree(result["providers_after_resync"])
