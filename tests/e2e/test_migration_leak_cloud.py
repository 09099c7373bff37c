"""Issue 47: Nova 34 leaves a failed cold migration's source allocation on its migration record once the server is
deleted (tests/support/minicloud/repro_migration_leak.py, docs/soak.md "Nova's migration leak, reproduced alone"),
on the two-host mini-cloud; ``minbw audit`` reports it, ``minbw audit --fix`` and ``nova-manage placement audit
--delete`` remove it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPRO = ROOT / "tests" / "support" / "minicloud" / "repro_migration_leak.py"
ON_SOURCE = {"devstack0": {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1},
             "devstack0:Open vSwitch agent:br-test": {"NET_BW_EGR_KILOBIT_PER_SEC": 500,
                                                      "NET_BW_IGR_KILOBIT_PER_SEC": 500}}


def test_a_cold_migration_failed_with_placement_down_leaves_the_source_allocation_to_the_migration(
        cloud_two_hosts):
    """devstack1's nova-compute paused while the conductor moves the server's allocation to the migration and the
    scheduler claims devstack1; Placement stopped; prep_resize then fails on devstack1 and neither its revert nor the
    conductor's reschedule can give the allocation back. After the server's delete the migration (no longer listed
    by Nova) still holds it; minbw audit names it, its fix takes the bandwidth, and nova-manage's audit of the
    source's root provider the rest."""
    cmd = [sys.executable, str(REPRO), "--state", cloud_two_hosts.env["MINICLOUD_STATE"], "--kbps", "500",
           "--remove", "minbw-fix"]
    r = subprocess.run(cmd, cwd=ROOT, env={**cloud_two_hosts.env, "PYTHONPATH": f"{ROOT / 'python'}:{ROOT}"},
                       capture_output=True, text=True, timeout=400, check=False)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    facts = json.loads(r.stdout.splitlines()[-1])
    mig = facts["migration"]
    assert facts["not_as_described"] == []
    assert facts["booted"] == ON_SOURCE
    assert facts["during"]["migration"] == ON_SOURCE  # the conductor's move, before devstack1 ran prep_resize
    assert [m["status"] for m in facts["failed"]["migrations"]] == ["error"]
    assert facts["failed"]["server"]["status"] == "ERROR"
    # devstack1's prep_resize: its read of the migration's allocation failed, taken for "none", so no revert; then
    # the conductor's reschedule failed on Placement too
    log = "\n".join(facts["logs"]["devstack1"])
    assert f"Did not find resource allocations for migration {mig}" in log, log
    assert "Error trying to reschedule" in log and "ConnectFailure" in log, log
    assert facts["after_delete"]["server"] == {}
    assert facts["after_delete"]["migrations_listed"] == []
    assert facts["after_delete"]["migration"] == ON_SOURCE
    leaks = [f for f in facts["audit"]["findings"] if f["subject"] == mig]
    assert facts["audit"]["exit"] == 3 and [f["kind"] for f in leaks] == ["leaked-allocation"], facts["audit"]
    assert leaks[0]["fix"] == {"action": "trim_consumer", "subject": mig,
                               "classes": ["NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"]}
    # minbw's fix trims the bandwidth; nova-manage's audit of the source's root provider deletes the rest
    assert facts["minbw_fix"]["exit"] == 0 and any("trim_consumer" in line for line in facts["minbw_fix"]["lines"])
    assert facts["minbw_fix"]["migration_holds"] == {"devstack0": ON_SOURCE["devstack0"]}
    (run,) = facts["nova_manage"]
    assert (run["provider"], run["exit"], run["migration_holds"]) == ("devstack0", 4, {}), run
    assert any(f"Deleted allocations for consumer UUID {mig}" in line for line in run["lines"]), run
