"""The role minbw.openstack.placement_local, run by ansible-playbook against the real embedded Placement.

Each step is one ansible-playbook run of playbooks/placement_local.yml: in check mode and for real,
then again to prove idempotency. ``changed`` is read from the PLAY RECAP (ansible-core ships no JSON
stdout callback); the playbook writes the role's facts and an openstacksdk query to a result file.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
RECAP = re.compile(r"^localhost\s+:\s+(.*)$", re.M)


@pytest.fixture(scope="session", autouse=True)
def installed_collection():
    subprocess.run([str(HERE / "install_collection.sh")], check=True, capture_output=True)


@pytest.fixture
def placement(tmp_path):
    """Port and state dir of a Placement that is stopped (by pid file) whatever the test did."""
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


def play(tmp_path, port, state_dir, state="started", check=False, **extra):
    result_file = tmp_path / "result.json"
    result_file.unlink(missing_ok=True)
    extra_vars = dict(placement_local_state=state, placement_local_port=port,
                      placement_local_state_dir=str(state_dir), result_file=str(result_file), **extra)
    cmd = [str(BIN / "ansible-playbook"), str(HERE / "playbooks" / "placement_local.yml"),
           "-e", json.dumps(extra_vars)] + (["--check"] if check else [])
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    match = RECAP.search(proc.stdout)
    assert match, proc.stdout + proc.stderr
    recap = {k: int(v) for k, v in (item.split("=") for item in match.group(1).split())}
    result = json.loads(result_file.read_text()) if result_file.exists() else None
    return recap, result, proc.stdout + proc.stderr


def answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def test_start_stop_cycle_in_check_mode_and_for_real(tmp_path, placement):
    port, state_dir = placement
    pidfile = state_dir / "placement.pid"

    def step(state, check=False, changed=None, **extra):
        recap, result, out = play(tmp_path, port, state_dir, state, check, **extra)
        assert recap["failed"] == 0, out
        assert (recap["changed"] > 0) is changed, out
        return result

    # (check) start: predicted, nothing started
    step("started", check=True, changed=True)
    assert not answers(port) and not pidfile.exists()

    result = step("started", changed=True)
    assert answers(port) and pidfile.exists()
    assert result["placement_local_cloud"] == "minbw-local"
    assert result["placement_local_url"] == f"http://127.0.0.1:{port}"
    assert result["placement_local_clouds_yaml"] == str(state_dir / "clouds.yaml")
    assert "minbw-local" in (state_dir / "clouds.yaml").read_text()
    pid = int(pidfile.read_text())

    step("started", changed=False)                   # start - IDEMPOTENCY
    step("started", check=True, changed=False)       # (check) start - IDEMPOTENCY
    assert int(pidfile.read_text()) == pid

    # openstacksdk through the role's facts: a write and a read
    result = step("started", changed=False, provider="rp-test")
    assert result["providers"] == ["rp-test"]

    step("stopped", check=True, changed=True)        # (check) stop: predicted, still running
    assert answers(port) and int(pidfile.read_text()) == pid

    step("stopped", changed=True)
    assert not answers(port) and not pidfile.exists()
    assert not Path(f"/proc/{pid}/cmdline").exists() or not Path(f"/proc/{pid}/cmdline").read_bytes()

    step("stopped", changed=False)                   # stop - IDEMPOTENCY
    step("stopped", check=True, changed=False)       # (check) stop - IDEMPOTENCY

    # The state dir keeps the database: a restart finds the provider again.
    result = step("started", changed=True, provider="rp-test")
    assert result["providers"] == ["rp-test"]
    step("stopped", changed=True)


def test_stale_pid_file_is_not_trusted(tmp_path, placement):
    port, state_dir = placement
    state_dir.mkdir(parents=True)
    # The pid of a live process that is not a Placement (this test's own).
    (state_dir / "placement.pid").write_text(f"{os.getpid()}\n")

    recap, _, out = play(tmp_path, port, state_dir, "stopped")
    assert recap["failed"] == 0 and recap["changed"] == 0, out
    assert not (state_dir / "placement.pid").exists()

    recap, _, out = play(tmp_path, port, state_dir, "started")
    assert recap["failed"] == 0 and recap["changed"] > 0, out
    assert int((state_dir / "placement.pid").read_text()) != os.getpid()
    recap, _, out = play(tmp_path, port, state_dir, "stopped")
    assert recap["failed"] == 0 and recap["changed"] > 0, out


def test_port_taken_by_another_process_fails_fast(tmp_path, placement):
    port, state_dir = placement
    with socket.socket() as other:
        other.bind(("127.0.0.1", port))
        other.listen()
        recap, _, out = play(tmp_path, port, state_dir, "started")
    assert recap["failed"] == 1, out
    assert f"Port {port} on 127.0.0.1 is in use" in out


def test_server_that_exits_fails_with_its_log(tmp_path, placement):
    port, state_dir = placement
    failing = tmp_path / "minbw"
    failing.write_text("#!/bin/sh\necho 'cannot serve: broken configuration' >&2\nexit 3\n")
    failing.chmod(0o755)

    started = time.monotonic()
    recap, _, out = play(tmp_path, port, state_dir, "started", placement_local_minbw=str(failing),
                         placement_local_timeout=60)
    assert recap["failed"] == 1, out
    assert time.monotonic() - started < 30, "waited for the timeout although the server had exited"
    assert "did not become ready" in out and "cannot serve: broken configuration" in out
    assert not (state_dir / "placement.pid").exists()
