"""Shared by the playbook tests: the collection installed once per session, and a playbook runner."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from tests.support.playbook_runner import Run, run_playbook

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session", autouse=True)
def installed_collection():
    subprocess.run([str(HERE.parent / "support" / "ansible" / "install_collection.sh")], check=True, capture_output=True)


@pytest.fixture
def playbook():
    """``playbook(name, extra_vars, check=False, diff=False)`` runs tests/ansible/playbooks/NAME with
    the repository's ansible.cfg and returns a :class:`tests.support.playbook_runner.Run`."""
    def run(name: str, extra_vars: dict, check: bool = False, diff: bool = False) -> Run:
        return run_playbook(HERE / "playbooks" / name, extra_vars, check=check, diff=diff)
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
