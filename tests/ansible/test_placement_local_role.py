"""The role minbw.openstack.placement_local, run by ansible-playbook against the real embedded Placement.

Each step is one ansible-playbook run of playbooks/placement_local.yml: in check mode and for real,
then again to prove idempotency. ``changed`` is read from the PLAY RECAP (ansible-core ships no JSON
stdout callback); the playbook writes the role's facts and an openstacksdk query to a result file.
"""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from tests.support.playbook_runner import run_playbook

HERE = Path(__file__).resolve().parent


def play(tmp_path, port, state_dir, state="started", check=False, **extra):
    extra_vars = dict(placement_local_state=state, placement_local_port=port,
                      placement_local_state_dir=str(state_dir), **extra)
    run = run_playbook(HERE / "playbooks" / "placement_local.yml", extra_vars, check=check,
                       result_file=tmp_path / "result.json")
    return run.recap, run.result, run.output


def answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def test_start_stop_cycle_in_check_mode_and_for_real(tmp_path, placement_local):
    port, state_dir = placement_local
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


def test_stale_pid_file_is_not_trusted(tmp_path, placement_local):
    port, state_dir = placement_local
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


def test_port_taken_by_another_process_fails_fast(tmp_path, placement_local):
    port, state_dir = placement_local
    with socket.socket() as other:
        other.bind(("127.0.0.1", port))
        other.listen()
        recap, _, out = play(tmp_path, port, state_dir, "started")
    assert recap["failed"] == 1, out
    assert f"Port {port} on 127.0.0.1 is in use" in out


def test_server_that_exits_fails_with_its_log(tmp_path, placement_local):
    port, state_dir = placement_local
    # The server itself fails at start-up: it cannot write clouds.yaml where a directory is.
    (state_dir / "clouds.yaml").mkdir(parents=True)

    # a timeout far longer than any start under load: failing well before it means the role saw the exit
    started = time.monotonic()
    recap, _, out = play(tmp_path, port, state_dir, "started", placement_local_timeout=600)
    assert recap["failed"] == 1, out
    assert time.monotonic() - started < 300, "waited for the timeout although the server had exited"
    assert "did not become ready" in out and "Is a directory" in out
    assert not (state_dir / "placement.pid").exists()
    assert not answers(port)
