"""The filter ovn_cms_options for kolla-ansible: docs/operators.md's deploy-host play writes the globals.d file;
a stand-in for kolla's task (ovn_cms_opts a task variable, the globals.d file extra vars, as kolla-ansible passes
them) gives each chassis its value, which Neutron's own parser reads back; a bad value fails the play, naming
the option, and writes nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from minbw.neutron import ovn
from tests.support.oracle import neutron_ovn

HERE = Path(__file__).resolve().parent
INVENTORY = """[ovn-controller-network]
net1
[ovn-controller-compute]
compute1
compute2
[all:vars]
ansible_connection=local
ansible_python_interpreter={python}
neutron_ovn_availability_zones=["az1", "az2"]
"""


def test_kolla_globals_give_each_chassis_its_options(playbook, tmp_path):
    globals_d = tmp_path / "minbw-ovn-bandwidth.yml"
    run = playbook("ovn_kolla_globals.yml", dict(dest=str(globals_d)))
    assert not run.failed, run.output
    inventory = tmp_path / "inventory"
    inventory.write_text(INVENTORY.format(python=sys.executable))
    out = tmp_path / "out"
    out.mkdir()
    kolla = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                            "-e", f"@{globals_d}", "-e", json.dumps({"out_dir": str(out)}),
                            str(HERE / "playbooks" / "ovn_kolla_standin.yml")],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, ANSIBLE_CONFIG=str(HERE.parents[1] / "ansible.cfg")))
    assert kolla.returncode == 0, kolla.stdout + kolla.stderr
    values = {h: (out / h).read_text() for h in ("net1", "compute1", "compute2")}
    assert values == {"net1": "enable-chassis-as-gw,availability-zones=az1:az2",
                      "compute1": "resource_provider_bandwidths=br-ex:10000000:10000000,"
                                  "resource_provider_inventory_defaults=min_unit:1000,"
                                  "resource_provider_hypervisors=br-ex:compute1",
                      "compute2": ""}
    _, parsed = neutron_ovn.parse({ovn.CMS_OPTIONS: values["compute1"], ovn.BRIDGE_MAPPINGS: "physnet1:br-ex"})
    assert parsed == {"resource_provider_bandwidths": {"br-ex": {"egress": 10000000, "ingress": 10000000}},
                      "resource_provider_inventory_defaults": {"min_unit": 1000},
                      "resource_provider_hypervisors": {"br-ex": "compute1"}}


def test_a_bad_value_fails_naming_the_option(playbook, tmp_path):
    globals_d = tmp_path / "minbw-ovn-bandwidth.yml"
    bad = {"compute1": {"bridge_mappings": {"physnet1": "br-ex"},
                        "resource_provider_bandwidths": {"br-other": {"egress": 1}}}}
    run = playbook("ovn_kolla_globals.yml", dict(dest=str(globals_d), ovn_bandwidth=bad))
    assert run.failed
    assert "ovn_cms_options: resource_provider_bandwidths: Neutron would not report bridge(s) br-other" in run.output
    assert not globals_d.exists()


def test_the_play_docs_show_is_the_one_tested():
    docs = (HERE.parents[1] / "docs" / "operators.md").read_text()
    shown = docs.split("```yaml\n- name: ML2/OVN bandwidth options for kolla-ansible\n", 1)[1].split("```", 1)[0]
    assert "- name: ML2/OVN bandwidth options for kolla-ansible\n" + shown in \
        (HERE / "playbooks" / "ovn_kolla_globals.yml").read_text()
