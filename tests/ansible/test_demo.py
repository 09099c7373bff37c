"""`make demo`'s playbook, run as a person would: it must pass and show seed 003's outcome."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_demo_playbook_reproduces_seed_003():
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "playbooks/demo.yml"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    assert "failed=0" in out
    # the providers table with seed 003's UUIDs, the claim on br-test, vm1's diagnosis, usage back to 0
    for text in ("| f9c9ce07-679d-5d72-ac5f-31720811629a | devstack0:Open vSwitch agent:br-test |",
                 "| 1c7e83f0-108d-5c35-ada7-7ebebbe43aad | devstack0:NIC Switch agent:ens5      |",
                 "binding:profile.allocation of port-normal-qos: {'",
                 "the largest free amount is 500 on devstack0:Open vSwitch agent:br-test",
                 "| NET_BW_EGR_KILOBIT_PER_SEC |     0 |",
                 "done: delete provider devstack0:Open vSwitch agent (89ca1421-5117-5348-acab-6d0e2054239c)"):
        assert text in out, text
