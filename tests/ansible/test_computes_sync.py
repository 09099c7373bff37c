"""Computes with only Python and Ansible (issue 11): two local-connection "computes" whose Python has no
minbw package and no openstacksdk edit their own ini files (bandwidth_agent → agent_config) and read them
(bandwidth_report → agent_config_info); the sync runs delegated to localhost, against the embedded
Placement. The computes' Python is a bare venv of this machine's Python 3.11 (Debian has no 3.9/3.10);
that the shipped code is 3.9 code is tests/unit/test_shipped_core.py's job."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.playbook_runner import run_playbook

PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "computes_sync.yml"
OVS_INI = """[DEFAULT]
host = {host}

[ovs]
bridge_mappings = physnet0:br-test
# kept as it is
local_ip = 192.168.2.{n}
"""


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory):
    """A Python with the standard library only: a venv of the base interpreter, without pip."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    for lib in ("minbw", "openstack", "keystoneauth1", "os_traits"):
        found = subprocess.run([str(python), "-c", f"import {lib}"], capture_output=True, check=False)
        assert found.returncode != 0, f"{lib} is importable by {python}: not a bare compute"
    return python


def computes(tmp_path: Path, python: Path, bandwidths: dict) -> Path:
    lines = ["[computes]"]
    for n, host in enumerate(bandwidths, start=1):
        ini = tmp_path / host / "openvswitch_agent.ini"
        ini.parent.mkdir(exist_ok=True)
        if not ini.exists():
            ini.write_text(OVS_INI.format(host=host, n=n))
        lines.append(f"{host} ansible_connection=local ansible_python_interpreter={python} ovs_ini={ini} "
                     f"bandwidths='{json.dumps(bandwidths[host])}'")
    # the controller: the Python that runs ansible-playbook (with minbw), as ansible.cfg says
    lines += ["[controller]", "localhost ansible_connection=local"]
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("\n".join(lines) + "\n")
    return inventory


def test_read_on_computes_sync_from_the_controller(tmp_path, bare_python, placement, placement_server):
    wanted = {"compute-a": {"br-test": {"egress": 1000, "ingress": 2000}},
              "compute-b": {"br-test": {"egress": 3000, "ingress": 4000}}}
    inventory = computes(tmp_path, bare_python, wanted)
    result_file = tmp_path / "result.json"

    def run(**kw):
        # local_hosts: the controller's modules forked (tests/support/module_forks.py); the computes keep their bare
        # Python (their ansible_python_interpreter)
        return run_playbook(PLAYBOOK, dict(clouds_yaml=str(placement_server.clouds_yaml)), env=placement_server.env(),
                            result_file=result_file, inventory=inventory, local_hosts=True, **kw)

    first = run()
    assert not first.failed, first.output
    assert set(first.recaps) == {"compute-a", "compute-b"}
    for host in wanted:  # agent_config edited each file in place, on the bare Python
        text = (tmp_path / host / "openvswitch_agent.ini").read_text()
        bw = wanted[host]["br-test"]
        assert f"resource_provider_bandwidths = br-test:{bw['egress']}:{bw['ingress']}" in text
        assert "# kept as it is" in text
    results = first.result
    assert all(results[h]["changed"] and results[h]["writes"] > 0 for h in wanted)

    by_name = {p.name: p for p in placement.list_providers()}
    for host, bws in wanted.items():
        device = by_name[f"{host}:Open vSwitch agent:br-test"]
        inv, _ = placement.get_inventories(device.uuid)
        assert device.parent_uuid == by_name[f"{host}:Open vSwitch agent"].uuid
        assert inv["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == bws["br-test"]["egress"]
        assert inv["NET_BW_IGR_KILOBIT_PER_SEC"]["total"] == bws["br-test"]["ingress"]

    again = run()
    assert not again.failed and not again.changed, again.output
    assert all(again.result[h]["writes"] == 0 for h in wanted)


def test_a_bad_value_fails_that_compute_only(tmp_path, bare_python, placement, placement_server):
    wanted = {"compute-a": {"br-test": {"egress": 1000}},
              "compute-b": {"br-nope": {"egress": 1000}}}  # not in bridge_mappings
    inventory = computes(tmp_path, bare_python, wanted)
    before = (tmp_path / "compute-b" / "openvswitch_agent.ini").read_text()
    run = run_playbook(PLAYBOOK, dict(clouds_yaml=str(placement_server.clouds_yaml)), env=placement_server.env(),
                       result_file=tmp_path / "result.json", inventory=inventory, local_hosts=True)
    assert run.recaps["compute-b"]["failed"] == 1 and run.recaps["compute-a"]["failed"] == 0, run.output
    assert "Device name br-nope is missing from device mappings" in run.output
    assert (tmp_path / "compute-b" / "openvswitch_agent.ini").read_text() == before
    assert "compute-a:Open vSwitch agent:br-test" in {p.name for p in placement.list_providers()}
