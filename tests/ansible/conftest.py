"""Shared by the playbook tests: the collection installed once per session, and a playbook runner."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
RECAP = re.compile(r"^localhost\s+:\s+(.*)$", re.M)


@pytest.fixture(scope="session", autouse=True)
def installed_collection():
    subprocess.run([str(HERE / "install_collection.sh")], check=True, capture_output=True)


class Run:
    """One ansible-playbook run: the PLAY RECAP counts and the whole output."""

    def __init__(self, proc: subprocess.CompletedProcess):
        self.output = proc.stdout + proc.stderr
        match = RECAP.search(proc.stdout)
        assert match, self.output
        self.recap = {k: int(v) for k, v in (item.split("=") for item in match.group(1).split())}

    @property
    def changed(self) -> bool:
        return self.recap["changed"] > 0

    @property
    def failed(self) -> bool:
        return self.recap["failed"] > 0


@pytest.fixture
def playbook():
    """``playbook(name, extra_vars, check=False, diff=False)`` runs tests/ansible/playbooks/NAME with
    the repository's ansible.cfg and returns a :class:`Run`."""
    def run(name: str, extra_vars: dict, check: bool = False, diff: bool = False) -> Run:
        cmd = [str(BIN / "ansible-playbook"), str(HERE / "playbooks" / name), "-e", json.dumps(extra_vars)]
        cmd += (["--check"] if check else []) + (["--diff"] if diff else [])
        env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
        return Run(subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
                                  check=False))
    return run


@pytest.fixture
def placement_local(tmp_path):
    """A free port and a state dir for the role placement_local; the Placement a playbook started
    there is stopped afterwards (by its pid file, only if that pid is still this Placement)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    state_dir = tmp_path / "placement"
    yield port, state_dir
    pidfile = state_dir / "placement.pid"
    if pidfile.exists():
        pid = int(pidfile.read_text())
        cmdline = Path(f"/proc/{pid}/cmdline")
        if cmdline.exists() and str(state_dir).encode() in cmdline.read_bytes().split(b"\0"):
            os.kill(pid, signal.SIGTERM)
