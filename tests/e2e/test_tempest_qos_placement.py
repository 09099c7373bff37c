"""tempest's own QoS-placement scenario suite (tempest.scenario.test_network_qos_placement, written upstream) against
the mini-cloud with Neutron's placement plugin off and minbw's provider sync reporting both hosts' providers.

docs/tempest.md lists every test of the module with its outcome (passed, or skipped and why) and its time; this
test runs them (``MINBW_TEMPEST=full``, what ``make tempest`` sets: the whole module) or the reduced form that
``make test`` runs (``REDUCED``: the two fastest tests that move a server), and fails when a test's outcome
is not the one listed or a listed test is missing from tempest's run.
"""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEMPEST_SH = REPO / "tests" / "support" / "tempest" / "tempest.sh"
DOC = REPO / "docs" / "tempest.md"
MODULE = "tempest.scenario.test_network_qos_placement"
# the reduced form: the two fastest tests that move a server: a resize with bandwidth (38 s) and a live migration to
# the other host with bandwidth and packet rate (50 s); docs/tempest.md has every test's time
REDUCED = (
    "MinBwAllocationPlacementTest.test_resize_with_qos_min_bw_allocation",
    "QoSBandwidthAndPacketRateTests.test_server_live_migrate",
)
ROW = re.compile(r"^\| `(\w+\.\w+)` \| (passed|skipped) \| ([^|]*)\|")


def expected_outcomes(text: str) -> dict[str, str]:
    """docs/tempest.md's table: 'Class.test' -> 'passed' or 'skipped'."""
    return {m.group(1): m.group(2) for m in map(ROW.match, text.splitlines()) if m}


def outcomes(csv_text: str) -> dict[str, str]:
    """subunit2csv's rows: 'Class.test' -> 'passed', 'skipped' or 'failed' ('success'/'skip'/'fail' in the stream;
    tempest's setUpClass fixtures are left out)."""
    names = {"success": "passed", "skip": "skipped", "fail": "failed"}
    out = {}
    for row in csv.DictReader(io.StringIO(csv_text)):
        test = row["test"].split("[")[0]
        if test.startswith(MODULE + "."):
            out[test[len(MODULE) + 1 :]] = names.get(row["status"], row["status"])
        elif row["status"] == "fail":  # a class that could not set up: its tests never ran
            out[test] = "failed"
    return out


def test_the_doc_table_parses():
    table = expected_outcomes(DOC.read_text())
    assert set(REDUCED) <= set(table) and len(table) >= 20, table
    assert outcomes(
        "test,status,start_time,stop_time\n"
        f'"{MODULE}.A.test_x[id-1,compute]",success,,\n{MODULE}.A.test_y[id-2],skip,,\n'
        "setUpClass (tempest.scenario.x.B),fail,,\n"
    ) == {"A.test_x": "passed", "A.test_y": "skipped", "setUpClass (tempest.scenario.x.B)": "failed"}


def test_tempest_qos_placement_scenarios(cloud_tempest):
    full = os.environ.get("MINBW_TEMPEST") == "full"
    table = expected_outcomes(DOC.read_text())
    wanted = table if full else {t: table[t] for t in REDUCED}
    regex = MODULE if full else "|".join(f"{MODULE}.{t}" for t in REDUCED).replace(".", r"\.")
    env = dict(cloud_tempest.env, MINBW_VENV=os.environ.get("MINBW_VENV", str(REPO / ".venv")))
    for args, timeout in ((["config"], 300), (["run", regex], 3600)):
        proc = subprocess.run(
            ["bash", str(TEMPEST_SH), *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert proc.returncode == 0, f"tempest.sh {args[0]}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    workspace = Path(env["MINICLOUD_STATE"] + "-tempest")
    got = outcomes((workspace / "last.csv").read_text())
    assert got == wanted, (
        f"tempest's outcomes differ from docs/tempest.md's:\n{proc.stdout[-6000:]}\n(log: {workspace}/logs/tempest.log)"
    )
