"""The soak run as docs/soak.md shows it: one section's command, run as written, and what every documented run must
hold (its seed said first, no invariant violated, exit 0, every fault injected healed). The tests of each topology
(tests/prodplacement/test_soak.py, tests/e2e/test_soak_cloud.py) add what their workload must have done."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import doc_commands

ROOT = Path(__file__).resolve().parents[3]


def run_as_documented(section: str, prefix: str, topology: str, env: dict, timeout: int,
                      tail: int) -> tuple[dict, Path]:
    """Run the one command under ``section`` of docs/soak.md (it starts with ``prefix``) with ``env``; its report
    (report.json) and its directory, once the checks every run must pass have passed. ``tail``: characters of its
    output printed."""
    commands = doc_commands(ROOT / "docs" / "soak.md", section)
    assert len(commands) == 1 and commands[0].startswith(prefix), commands
    seed = commands[0].split("--seed ")[1].split()[0]
    out = ROOT / ".state" / "soak" / f"{topology}-{seed}"
    env = {**env, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "PYTHONPATH": f"{ROOT / 'python'}:{ROOT}"}
    t0 = time.time()
    r = subprocess.run(["bash", "-c", commands[0]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    print(f"\n{commands[0]} ({time.time() - t0:.0f} s):\n{r.stdout[-tail:]}{r.stderr[-3000:]}")
    assert f"seed {seed}" in r.stdout.splitlines()[0]
    rep = json.loads((out / "report.json").read_text())
    bad = {k: v["examples"] for k, v in rep["invariants"].items() if v["violations"]}
    assert rep["violations"] == 0 and not bad, bad
    assert r.returncode == 0, r.stderr[-3000:]
    # faults were injected, and each kind injected was healed
    assert rep["faults"] and all(v["injected"] == v["healed"] for v in rep["faults_by_kind"].values()), rep["faults"]
    return rep, out
