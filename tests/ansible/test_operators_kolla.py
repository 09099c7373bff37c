"""docs/operators.md's kolla-ansible play, as written (its kolla_config_dir pointed at a scratch directory): it
merges the bandwidth options into the override file an operator already keeps (every other line stays), creates
the file when there is none, and changes nothing the second time."""
from __future__ import annotations

import re
from pathlib import Path

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


def test_the_play_merges_into_the_overrides_an_operator_keeps(tmp_path):
    kolla = tmp_path / "kolla-config"
    override = kolla / "neutron" / "openvswitch_agent.ini"
    override.parent.mkdir(parents=True)
    override.write_text(KEPT)
    play = kolla_play(tmp_path)
    assert "/etc/kolla/config" in play.read_text()  # the path the operator pastes, overridden here

    run = run_playbook(play, {"kolla_config_dir": str(kolla)})
    assert not run.failed and run.recap["changed"] == 1, run.output
    text = override.read_text()
    assert all(line in text.splitlines() for line in KEPT.splitlines()), text  # nothing of the operator's lost
    ini = ac.read_ini(text)
    assert ini["DEFAULT"] == {"debug": "True"} and ini["agent"] == {"extensions": "qos,fdb"}
    assert ini["ovs"] == {"of_inactivity_probe": "20", "bridge_mappings": "physnet1:br-ex",
                          "resource_provider_bandwidths": "br-ex:10000000:10000000"}

    again = run_playbook(play, {"kolla_config_dir": str(kolla)})
    assert not again.failed and again.recap["changed"] == 0, again.output
    assert override.read_text() == text


def test_the_play_creates_the_override_when_there_is_none(tmp_path):
    kolla = tmp_path / "kolla-config"
    (kolla / "neutron").mkdir(parents=True)
    run = run_playbook(kolla_play(tmp_path), {"kolla_config_dir": str(kolla)})
    assert not run.failed and run.recap["changed"] == 2, run.output
    override = kolla / "neutron" / "openvswitch_agent.ini"
    assert ac.read_ini(override.read_text()) == {"ovs": {"bridge_mappings": "physnet1:br-ex",
                                                         "resource_provider_bandwidths": "br-ex:10000000:10000000"}}
    assert oct(override.stat().st_mode & 0o777) == "0o640"


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
    ML2/OVS, ``ovn-router`` on ML2/OVN (kolla-ansible, openstack-ansible, RHOSO's own list from neutron-operator)."""
    text = OPERATORS.read_text()
    paths = {"Open vSwitch with kolla-ansible": "router", "Open vSwitch with openstack-ansible": "router",
             "OVN with kolla-ansible or openstack-ansible": "ovn-router", "RHOSO (edpm-ansible)": "ovn-router"}
    for heading, router in paths.items():
        lists = _plugin_lists(_section(text, heading))
        assert lists, heading
        for plugins in lists:
            assert {"qos", "placement", router} <= set(plugins), (heading, plugins)
            assert ({"router", "ovn-router"} - {router}).isdisjoint(plugins), (heading, plugins)
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
