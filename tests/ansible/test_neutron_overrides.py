"""The filters neutron_overrides / neutron_ini by ansible-playbook: a kolla-ansible override file that the
project's own ini reader reads back as the input, openstack-ansible override dicts, and a bad value failing
with Neutron's message, naming the option, writing nothing."""
from __future__ import annotations

import json

from minbw.neutron import agentconf as ac

GOOD = {"bridge_mappings": {"physnet0": "br-test"},
        "resource_provider_bandwidths": {"br-test": {"egress": 1500, "ingress": 2500}},
        "resource_provider_packet_processing_without_direction": {"": 1000}}


def test_good_values(playbook, tmp_path):
    dest, result_file = tmp_path / "openvswitch_agent.ini", tmp_path / "osa.json"
    run = playbook("neutron_overrides.yml", dict(values=GOOD, dest=str(dest), result_file=str(result_file)))
    assert not run.failed, run.output
    text = dest.read_text()
    assert ac.read_ini(text) == {"ovs": {"bridge_mappings": "physnet0:br-test",
                                         "resource_provider_bandwidths": "br-test:1500:2500",
                                         "resource_provider_packet_processing_without_direction": ":1000"}}
    assert ac.load_agent_ini(text, source="kolla", host="cmp1") == ac.load_agent_values("openvswitch", GOOD, "cmp1",
                                                                                        source="kolla")
    osa = json.loads(result_file.read_text())
    assert osa == {"neutron_openvswitch_agent_ini_overrides": ac.read_ini(text),
                   "neutron_neutron_conf_overrides": {"DEFAULT": {"service_plugins": "router,metering,qos,placement"}},
                   "neutron_ml2_conf_ini_overrides": {"ml2": {"extension_drivers": "qos"}}}


def test_a_bad_value_fails_and_writes_nothing(playbook, tmp_path):
    dest = tmp_path / "openvswitch_agent.ini"
    bad = dict(GOOD, resource_provider_bandwidths={"br-other": {"egress": 1}})
    run = playbook("neutron_overrides.yml", dict(values=bad, dest=str(dest), result_file=str(tmp_path / "osa.json")))
    assert run.failed
    assert "resource_provider_bandwidths: Invalid resource_provider_bandwidths: Device name br-other is missing " \
           "from device mappings" in run.output
    assert not dest.exists()
