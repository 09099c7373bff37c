"""bandwidth_providers with `agents` (values instead of ini files) and `state: absent`."""
from __future__ import annotations

import json

OVS = {"89ca1421-5117-5348-acab-6d0e2054239c", "f9c9ce07-679d-5d72-ac5f-31720811629a",
       "193134fd-464c-5545-9d20-df7d58c0166f"}


def test_values_present_then_absent(playbook, placement_local, tmp_path):
    port, state_dir = placement_local
    result_file = tmp_path / "result.json"
    base = dict(port=port, state_dir=str(state_dir), result_file=str(result_file))

    def run(state, check=False, start_placement=False):  # the first run starts it
        r = playbook("bandwidth_providers_values.yml", dict(base, state=state, start_placement=start_placement),
                     check=check, diff=True)
        assert not r.failed, r.output
        res = json.loads(result_file.read_text())
        return res["sync"], {p["uuid"] for p in res["providers"]}

    sync, uuids = run("absent", start_placement=True)  # starts the embedded Placement (a check-mode run would not)
    assert not sync["changed"] and not uuids & OVS
    sync, uuids = run("present", check=True)
    assert sync["changed"] and not uuids & OVS
    sync, uuids = run("present")
    assert sync["changed"] and OVS <= uuids
    sync, uuids = run("present")
    assert not sync["changed"] and sync["writes"] == 0
    sync, uuids = run("absent", check=True)
    assert sync["changed"] and sync["writes"] == 3 and OVS <= uuids
    sync, uuids = run("absent")
    assert sync["changed"] and not uuids & OVS
    sync, uuids = run("absent")
    assert not sync["changed"]


def test_one_bad_agent_is_skipped_and_named_the_good_one_synced(playbook, placement_local, tmp_path):
    port, state_dir = placement_local
    result_file = tmp_path / "result.json"
    base = dict(port=port, state_dir=str(state_dir), result_file=str(result_file))
    r = playbook("bandwidth_providers_partial.yml", dict(base, fail_on_skipped=False))
    assert not r.failed, r.output
    sync = json.loads(result_file.read_text())
    assert not sync.get("failed") and sync["changed"], sync
    (line,) = sync["skipped"]
    assert line.startswith("agent agents[1] (host devstack1): resource_provider_bandwidths: ") and "br-nope" in line
    assert ". Fix: " in line
    assert [(u["unit"], u["host"], bool(u["skipped"]), u["changed"]) for u in sync["units"]] == [
        ("agents[1]", "devstack1", True, False), ("agents[0]", "devstack0", False, True)]
    assert {p["name"] for p in sync["providers"]} == {"devstack0:Open vSwitch agent",
                                                      "devstack0:Open vSwitch agent:br-test"}
    r = playbook("bandwidth_providers_partial.yml", dict(base, fail_on_skipped=True))
    sync = json.loads(result_file.read_text())
    assert sync["failed"] and "1 of 2 configurations skipped (the others synced)" in sync["msg"], sync
    assert not sync["changed"] and sync["skipped"] == [line]  # devstack0 already synced: nothing to write
