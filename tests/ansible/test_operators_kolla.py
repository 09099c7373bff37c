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
