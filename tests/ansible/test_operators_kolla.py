"""docs/operators.md's kolla-ansible play, as written (its kolla_config_dir pointed at a scratch directory): it
merges the bandwidth options into each compute's own override file, keeping what an operator already has there
(every other line stays), creates the file when there is none, and changes nothing the second time."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from minbw.neutron import agentconf as ac
from tests.support.playbook_runner import run_playbook

REPO = Path(__file__).resolve().parents[2]
OPERATORS = REPO / "docs" / "operators.md"

KEPT = """# the operator's own overrides, kept by kolla-ansible reconfigure
[DEFAULT]
debug = True

[ovs]
# tuned for this cloud
of_inactivity_probe = 20

[agent]
extensions = qos,fdb
"""


def kolla_play(tmp_path: Path) -> Path:
    m = re.search(r"<!-- playbook: kolla -->\s*```yaml\n(.*?)```", OPERATORS.read_text(), re.S)
    assert m, "docs/operators.md has no <!-- playbook: kolla --> block"
    play = tmp_path / "kolla.yml"
    play.write_text(m.group(1))
    return play


def test_the_play_merges_into_each_computes_override_and_creates_the_missing_ones(tmp_path):
    """compute1 has an override file of the operator's (every line kept), compute2 none (created, mode 0640); the
    shared file that every agent gets, network nodes included, is not written."""
    kolla = tmp_path / "kolla-config"
    override = kolla / "neutron" / "compute1" / "openvswitch_agent.ini"
    override.parent.mkdir(parents=True)
    override.write_text(KEPT)
    play = kolla_play(tmp_path)
    assert "/etc/kolla/config" in play.read_text()  # the path the operator pastes, overridden here

    run = run_playbook(play, {"kolla_config_dir": str(kolla)})
    assert not run.failed and run.recap["changed"] == 3, run.output
    text = override.read_text()
    assert all(line in text.splitlines() for line in KEPT.splitlines()), text  # nothing of the operator's lost
    ini = ac.read_ini(text)
    assert ini["DEFAULT"] == {"debug": "True"} and ini["agent"] == {"extensions": "qos,fdb"}
    assert ini["ovs"] == {"of_inactivity_probe": "20", "bridge_mappings": "physnet1:br-ex",
                          "resource_provider_bandwidths": "br-ex:10000000:10000000"}
    created = kolla / "neutron" / "compute2" / "openvswitch_agent.ini"
    assert ac.read_ini(created.read_text()) == {"ovs": {"bridge_mappings": "physnet1:br-ex",
                                                        "resource_provider_bandwidths": "br-ex:25000000:25000000"}}
    assert oct(created.stat().st_mode & 0o777) == "0o640"
    assert not (kolla / "neutron" / "openvswitch_agent.ini").exists()

    again = run_playbook(play, {"kolla_config_dir": str(kolla)})
    assert not again.failed and again.recap["changed"] == 0, again.output
    assert override.read_text() == text


def _section(text: str, heading: str) -> str:
    """The text of the ``## heading`` section of docs/operators.md, up to the next ``## ``."""
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, f"docs/operators.md has no section {heading!r}"
    return m.group(1)


def _plugin_lists(text: str) -> list[list[str]]:
    """Every neutron-server plugin list the text gives: ``service_plugins = ...`` lines and ``neutron_plugin_base``."""
    lists = [line.split(",") for line in re.findall(r"^\s*service_plugins = (\S+)\s*$", text, re.M)]
    lists += [[p.strip() for p in m.split(",")] for m in re.findall(r"^\s*neutron_plugin_base: \[(.*)\]$", text, re.M)]
    return lists


def test_every_path_loads_placement_with_its_own_router_plugin():
    """Each path's neutron-server plugin list has qos and placement and the L3 plugin of its back end: ``router`` on
    ML2/OVS, ``ovn-router`` on ML2/OVN (openstack-ansible, RHOSO's own list from neutron-operator). kolla-ansible's
    paths restate no list: they extend the one kolla computes (globals.yml, rendered by kolla's own role in
    tests/ansible/test_operators_deployment_tools.py)."""
    text = OPERATORS.read_text()
    paths = {"Open vSwitch with openstack-ansible": "router", "RHOSO (edpm-ansible)": "ovn-router"}
    ovn = _section(text, "OVN with kolla-ansible or openstack-ansible")
    lists = _plugin_lists(ovn)
    assert lists == [["ovn-router", "qos", "placement"]], lists  # openstack-ansible's; kolla's refers to step 1
    for heading, router in paths.items():
        lists = _plugin_lists(_section(text, heading))
        assert lists, heading
        for plugins in lists:
            assert {"qos", "placement", router} <= set(plugins), (heading, plugins)
            assert ({"router", "ovn-router"} - {router}).isdisjoint(plugins), (heading, plugins)
    assert not _plugin_lists(_section(text, "Open vSwitch with kolla-ansible"))
    assert "the same two lines in `/etc/kolla/globals.yml`" in ovn
    rhoso = _plugin_lists(_section(text, "RHOSO (edpm-ansible)"))
    # neutron-operator's own OVN list (templates/neutronapi/config/01-neutron.conf) with placement added
    assert rhoso == [["qos", "ovn-router", "trunk", "segments", "port_forwarding", "log", "placement"]]


def test_every_path_sets_placements_retry_count_to_one():
    """docs/placement-overcommit.md: the default 10 overcommits, 1 does not; each tool's way of setting it says 1."""
    text = OPERATORS.read_text()
    for heading in ("Open vSwitch with kolla-ansible", "Open vSwitch with openstack-ansible", "RHOSO (edpm-ansible)"):
        values = re.findall(r"allocation_conflict_retry_count(?: =|:) *(\d+)", _section(text, heading))
        assert values == ["1"], (heading, values)
    assert "(placement-overcommit.md)" in _section(text, "Prerequisites, whichever path")


def test_a_computes_hypervisor_name_goes_into_its_file(tmp_path):
    """The guide: where `openstack hypervisor list` names a compute otherwise, its values take
    resource_provider_default_hypervisor; the others' files get none."""
    kolla = tmp_path / "kolla-config"
    (kolla / "neutron").mkdir(parents=True)
    play = kolla_play(tmp_path)
    bandwidth = yaml.safe_load(play.read_text())[0]["vars"]["bandwidth"]
    bandwidth["compute2"]["resource_provider_default_hypervisor"] = "compute2.example.com"
    run = run_playbook(play, {"kolla_config_dir": str(kolla), "bandwidth": bandwidth})
    assert not run.failed, run.output
    ini = {h: ac.read_ini((kolla / "neutron" / h / "openvswitch_agent.ini").read_text())["ovs"] for h in bandwidth}
    assert ini["compute2"]["resource_provider_default_hypervisor"] == "compute2.example.com"
    assert "resource_provider_default_hypervisor" not in ini["compute1"]
