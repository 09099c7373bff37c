"""The filter edpm_ovn_vars for RHOSO: docs/operators.md's play writes the OpenStackDataPlaneNodeSet merge patch;
edpm-ansible's own rendering (its edpm_ovn tasks, copied unchanged: tests/ansible/playbooks/edpm_ovn_standin.yml),
run on a node's ansibleVars from that patch, gives the ovn-cms-options that Neutron's own parser reads back as the
values given: the same as the filter ovn_cms_options and the module ovn_chassis_config give for those values. A bad
value fails the play, naming the option, and writes nothing."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from minbw.neutron import ovn
from tests.support.oracle import neutron_ovn

HERE = Path(__file__).resolve().parent
NODE = "edpm-compute-0"
HYPERVISOR = "edpm-compute-0.ctlplane.example.com"
VALUES = {"bridge_mappings": {"datacentre": "br-ex"},
          "resource_provider_bandwidths": {"br-ex": {"egress": 10000000, "ingress": 10000000}},
          "resource_provider_inventory_defaults": {"min_unit": 1000},
          "resource_provider_default_hypervisor": HYPERVISOR}


def edpm_renders(playbook, tmp_path: Path, ansible_vars: dict, **more) -> dict:
    """edpm_ovn's ovn-cms-options and ovn-bridge-mappings for a node with these ansibleVars."""
    out = tmp_path / f"edpm-{len(list(tmp_path.iterdir()))}.json"
    run = playbook("edpm_ovn_standin.yml", dict(ansible_vars, out_file=str(out), **more))
    assert not run.failed, run.output
    return json.loads(out.read_text())


def test_the_patch_gives_edpm_what_neutron_reads_as_the_values(playbook, tmp_path):
    patch = tmp_path / "nodeset-ovn-bandwidth.yaml"
    run = playbook("edpm_nodeset_vars.yml", dict(dest=str(patch)))
    assert not run.failed, run.output
    ansible_vars = yaml.safe_load(patch.read_text())["spec"]["nodes"][NODE]["ansible"]["ansibleVars"]
    assert ansible_vars == {
        "edpm_ovn_resource_provider_bandwidths": {"br-ex": {"egress": 10000000, "ingress": 10000000}},
        "edpm_ovn_resource_provider_inventory_defaults": {"min_unit": 1000},
        "edpm_ovn_resource_provider_hypervisors": {"br-ex": HYPERVISOR},
        "edpm_ovn_bridge_mappings": ["datacentre:br-ex"]}

    chassis = edpm_renders(playbook, tmp_path, ansible_vars)
    # the hypervisor is the one given, not edpm's default (the FQDN Ansible sees)
    assert chassis == {"ovn-cms-options": "resource_provider_bandwidths=br-ex:10000000:10000000,"
                                          f"resource_provider_hypervisors=br-ex:{HYPERVISOR},"
                                          "resource_provider_inventory_defaults=min_unit:1000",
                       "ovn-bridge-mappings": "datacentre:br-ex"}
    _, parsed = neutron_ovn.parse({ovn.CMS_OPTIONS: chassis["ovn-cms-options"],
                                   ovn.BRIDGE_MAPPINGS: chassis["ovn-bridge-mappings"]})
    assert parsed == {"resource_provider_bandwidths": {"br-ex": {"egress": 10000000, "ingress": 10000000}},
                      "resource_provider_inventory_defaults": {"min_unit": 1000},
                      "resource_provider_hypervisors": {"br-ex": HYPERVISOR}}
    # the same reading as the options the other paths write for these values
    _, other_paths = neutron_ovn.parse({ovn.CMS_OPTIONS: ovn.cms_options_override("", VALUES),
                                        ovn.BRIDGE_MAPPINGS: "datacentre:br-ex"})
    assert parsed == other_paths


@pytest.mark.parametrize("values", [
    # one direction only, several bridges, a tunnelled-networks device, an allocation ratio, a gateway node
    {"bridge_mappings": {"datacentre": "br-ex", "tenant": "br-tenant"},
     "resource_provider_bandwidths": {"br-ex": {"egress": 5000}, "br-tenant": {"ingress": 7000},
                                      "rp_tunnelled": {"egress": 100, "ingress": 100}},
     "resource_provider_inventory_defaults": {"allocation_ratio": 1.5, "reserved": 10},
     "resource_provider_hypervisors": {"br-tenant": "other-name"}},
    {"bridge_mappings": {"datacentre": "br-ex"}, "resource_provider_bandwidths": {"br-ex": {}}},
])
def test_edpm_renders_every_shape_as_neutron_reads_it(playbook, tmp_path, values):
    rendered = tmp_path / "vars.json"
    run = playbook("edpm_nodeset_vars.yml", dict(dest=str(rendered), ovn_bandwidth={NODE: dict(
        values, resource_provider_default_hypervisor=HYPERVISOR)}))
    assert not run.failed, run.output
    ansible_vars = yaml.safe_load(rendered.read_text())["spec"]["nodes"][NODE]["ansible"]["ansibleVars"]
    chassis = edpm_renders(playbook, tmp_path, ansible_vars, edpm_enable_chassis_gw=True,
                           edpm_ovn_availability_zones=["az1"])
    assert chassis["ovn-cms-options"].startswith("enable-chassis-as-gw,availability-zones=az1,")
    got = neutron_ovn.parse({ovn.CMS_OPTIONS: chassis["ovn-cms-options"],
                             ovn.BRIDGE_MAPPINGS: chassis["ovn-bridge-mappings"]})
    want = neutron_ovn.parse({ovn.CMS_OPTIONS: ovn.cms_options_override(
        "", dict(values, resource_provider_default_hypervisor=HYPERVISOR)),
        ovn.BRIDGE_MAPPINGS: ovn.render_bridge_mappings(values["bridge_mappings"])})
    assert got == want


@pytest.mark.parametrize("bad, message", [
    ({"resource_provider_bandwidths": {"br-other": {"egress": 1}}},
     "edpm_ovn_vars: resource_provider_bandwidths: Neutron would not report bridge(s) br-other"),
    ({"resource_provider_inventory_defaults": {"min_units": 1}},
     "edpm_ovn_vars: resource_provider_inventory_defaults: Cannot parse inventory_defaults. Unexpected options: "
     "min_units"),
    ({"resource_provider_bandwidths": {"br-ex": {"egress": -1}}},
     "expected a non-negative whole number of kbps, got -1"),
])
def test_a_bad_value_fails_naming_the_option(playbook, tmp_path, bad, message):
    patch = tmp_path / "nodeset-ovn-bandwidth.yaml"
    run = playbook("edpm_nodeset_vars.yml", dict(dest=str(patch), ovn_bandwidth={NODE: dict(VALUES, **bad)}))
    assert run.failed and message in run.output, run.output
    assert not patch.exists()


def test_the_play_docs_show_is_the_one_tested():
    docs = (HERE.parents[1] / "docs" / "operators.md").read_text()
    head = "- name: ML2/OVN bandwidth variables for an OpenStackDataPlaneNodeSet\n"
    shown = docs.split("```yaml\n" + head, 1)[1].split("```", 1)[0]
    assert head + shown in (HERE / "playbooks" / "edpm_nodeset_vars.yml").read_text()
