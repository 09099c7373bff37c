"""The Nova oracle's client: tests/support/oracle/nova_scheduler.py (Nova 34's own code) run by the mini-cloud's
venv as one long-lived process, JSON lines in and out; :func:`start` for a test session (skips without the
mini-cloud's venv, fails under CI)."""
from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CLOUD_PYTHON = REPO / ".venv-cloud" / "bin" / "python"
ORACLE = REPO / "tests" / "support" / "oracle" / "nova_scheduler.py"


class Oracle:
    """Nova's scheduler in the mini-cloud's venv: one process, JSON lines in and out."""

    def __init__(self):
        self.proc = subprocess.Popen([str(CLOUD_PYTHON), str(ORACLE)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
                                     cwd=str(REPO))
        first = self.proc.stdout.readline()
        if not first or not json.loads(first).get("ready"):
            raise RuntimeError(f"the Nova oracle did not start ({ORACLE} under {CLOUD_PYTHON})")

    def ask(self, requests: list[dict]) -> list[dict]:
        """Answers to ``requests``, in order (written by a thread while the answers are read)."""
        writer = threading.Thread(target=lambda: (self.proc.stdin.writelines(
            json.dumps(r) + "\n" for r in requests), self.proc.stdin.flush()))
        writer.start()
        answers = [json.loads(self.proc.stdout.readline()) for _ in requests]
        writer.join()
        for a in answers:
            assert "oracle_error" not in a, a["oracle_error"]
        return answers

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)



def start() -> Oracle:
    """The oracle for a session: skipped without ``.venv-cloud`` (``make cloud-install``), unless CI is set."""
    if not CLOUD_PYTHON.exists():
        reason = ".venv-cloud (Nova 34) is missing: `make cloud-install` makes it"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; under CI the Nova oracle must run")
        pytest.skip(reason)
    return Oracle()
