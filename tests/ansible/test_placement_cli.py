"""`minbw placement serve --daemon`, `stop` and `show`: the process management the role placement_local runs.

Each test drives the real CLI in a subprocess against the real embedded Placement on a free port.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import free_port

MINBW = [sys.executable, "-m", "minbw.cli", "placement"]


def minbw(*args, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(MINBW + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)


def minbw_json(*args) -> dict:
    proc = minbw(*args, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
            return resp.status == 200
    except OSError:
        return False


def alive(pid: int) -> bool:
    """Exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rpartition(b")")[2].split()[0] not in (b"Z", b"X")


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().rstrip("\0").split("\0")


def assert_clear_error(proc: subprocess.CompletedProcess, *texts: str, with_log: bool = False) -> None:
    """Exit 1 and ``minbw: error: ...`` on stderr naming ``texts``; no traceback (but in the server's log)."""
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.startswith("minbw: error: "), proc.stderr
    assert with_log or "Traceback" not in proc.stderr, proc.stderr
    if not with_log:
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for text in texts:
        assert text in proc.stderr, proc.stderr


@pytest.fixture
def instance(tmp_path):
    """A free port and a state dir; whatever was started there is stopped afterwards."""
    port, state_dir = free_port(), tmp_path / "placement"
    yield port, state_dir
    minbw("stop", "--state-dir", state_dir, "--timeout", 10)
    pidfile = state_dir / "placement.pid"
    if pidfile.exists():  # the stop failed: do not leave a server behind
        pid = int(pidfile.read_text())
        if alive(pid) and str(state_dir) in cmdline(pid):
            os.kill(pid, signal.SIGKILL)


def test_start_status_stop_and_their_idempotency(instance):
    port, state_dir = instance
    pidfile = state_dir / "placement.pid"
    url = f"http://127.0.0.1:{port}"

    # nothing there yet: not running, and status creates nothing
    status = minbw_json("show", "--state-dir", state_dir, "--port", port)
    assert status["running"] is False and status["ours"] is False and status["pid"] is None
    assert status["url"] == url and not state_dir.exists()

    started = minbw_json("serve", "--daemon", "--port", port, "--state-dir", state_dir, "--timeout", 120)
    assert started["changed"] is True
    assert started["url"] == url and started["clouds_yaml"] == str(state_dir / "clouds.yaml")
    pid = started["pid"]
    assert int(pidfile.read_text()) == pid
    assert alive(pid) and str(state_dir) in cmdline(pid)   # the server's own pid, with its state dir
    assert os.getsid(pid) == pid                           # its own session: it outlives the caller
    assert answers(port)
    assert f"endpoint: {url}" in (state_dir / "clouds.yaml").read_text()
    assert "placement ready on " + url in (state_dir / "placement.log").read_text()

    again = minbw_json("serve", "--daemon", "--port", port, "--state-dir", state_dir)   # IDEMPOTENCY
    assert again["changed"] is False and again["pid"] == pid and again["url"] == url
    assert int(pidfile.read_text()) == pid

    status = minbw_json("show", "--state-dir", state_dir, "--port", port)
    assert status["running"] is True and status["ours"] is True and status["pid"] == pid and status["url"] == url
    # without --port: the port of the running server
    assert minbw_json("show", "--state-dir", state_dir)["url"] == url
    text = minbw("show", "--state-dir", state_dir)
    assert text.returncode == 0 and f"running on {url} (pid {pid}" in text.stdout

    stopped = minbw_json("stop", "--state-dir", state_dir, "--timeout", 30)
    assert stopped["changed"] is True and stopped["pid"] == pid
    assert not alive(pid) and not pidfile.exists() and not answers(port)

    stopped = minbw_json("stop", "--state-dir", state_dir)                             # IDEMPOTENCY
    assert stopped["changed"] is False and stopped["pid"] is None
    status = minbw_json("show", "--state-dir", state_dir, "--port", port)
    assert status["running"] is False and status["pid"] is None and status["ours"] is False

    # the state dir keeps the database: a restart is a new process on the same data
    restarted = minbw_json("serve", "--daemon", "--port", port, "--state-dir", state_dir)
    assert restarted["changed"] is True and restarted["pid"] != pid and answers(port)


def test_serve_and_stop_without_json_say_what_they_did(instance):
    port, state_dir = instance
    out = minbw("serve", "--daemon", "--port", port, "--state-dir", state_dir)
    assert out.returncode == 0 and f"placement started on http://127.0.0.1:{port}" in out.stdout, out.stderr
    out = minbw("serve", "--daemon", "--port", port, "--state-dir", state_dir)
    assert out.returncode == 0 and "already running" in out.stdout
    out = minbw("stop", "--state-dir", state_dir)
    assert out.returncode == 0 and "placement stopped" in out.stdout
    out = minbw("stop", "--state-dir", state_dir)
    assert out.returncode == 0 and "not running" in out.stdout


@pytest.mark.parametrize("listen", [True, False], ids=["listening", "bound"])
def test_port_held_by_another_process_is_a_clear_error(instance, listen):
    port, state_dir = instance
    with socket.socket() as other:
        other.bind(("127.0.0.1", port))
        if listen:
            other.listen()
        started = time.monotonic()
        proc = minbw("serve", "--daemon", "--port", port, "--state-dir", state_dir, "--timeout", 60)
        assert time.monotonic() - started < 20
        assert_clear_error(proc, f"Port {port} on 127.0.0.1 is in use, but not by the Placement of {state_dir}",
                              "--port")
        status = minbw_json("show", "--state-dir", state_dir, "--port", port)
    assert status["running"] is False and status["ours"] is False and status["port_in_use"] is True
    # nothing started, nothing written
    assert not state_dir.exists()


def test_start_in_a_state_dir_that_is_a_file_fails_clearly(instance):
    port, state_dir = instance
    state_dir.write_text("not a directory\n")
    proc = minbw("serve", "--daemon", "--port", port, "--state-dir", state_dir)
    assert_clear_error(proc, f"--state-dir {state_dir} exists and is not a directory")
    assert not answers(port)
    # status and stop: not running (and they leave the file alone)
    assert minbw_json("show", "--state-dir", state_dir, "--port", port)["running"] is False
    assert minbw_json("stop", "--state-dir", state_dir)["changed"] is False
    assert state_dir.read_text() == "not a directory\n"


def test_server_that_exits_fails_with_its_log_and_leaves_nothing(instance):
    port, state_dir = instance
    (state_dir / "clouds.yaml").mkdir(parents=True)  # the server cannot write its clouds.yaml
    started = time.monotonic()
    proc = minbw("serve", "--daemon", "--port", port, "--state-dir", state_dir, "--timeout", 60, "--json")
    assert time.monotonic() - started < 30, "waited for the timeout although the server had exited"
    assert_clear_error(proc, f"Placement did not become ready on http://127.0.0.1:{port}",
                          "the server exited with status 1", f"Log {state_dir / 'placement.log'}",
                          "IsADirectoryError", with_log=True)
    error = json.loads(proc.stdout)["error"]
    assert error["port"] == port and "IsADirectoryError" in error["log_tail"]
    assert len(error["log_tail"].splitlines()) <= 40
    assert not alive(error["pid"])
    assert not (state_dir / "placement.pid").exists()


def test_server_not_ready_in_time_is_stopped(instance):
    port, state_dir = instance
    proc = minbw("serve", "--daemon", "--port", port, "--state-dir", state_dir, "--timeout", 0.2, "--json")
    assert_clear_error(proc, "did not become ready", "no ready line after 0.2s", with_log=True)
    error = json.loads(proc.stdout)["error"]
    assert not alive(error["pid"]) and not answers(port)
    assert not (state_dir / "placement.pid").exists()


def test_stale_pid_file_is_not_trusted(instance):
    port, state_dir = instance
    state_dir.mkdir()
    pidfile = state_dir / "placement.pid"
    pidfile.write_text(f"{os.getpid()}\n")   # a live process that is not this state dir's Placement

    status = minbw_json("show", "--state-dir", state_dir, "--port", port)
    assert status["running"] is False and status["ours"] is False and status["pid"] is None
    assert pidfile.exists()                  # status is read-only

    stopped = minbw_json("stop", "--state-dir", state_dir)
    assert stopped["changed"] is False and not pidfile.exists()   # the stale pid file is removed

    pidfile.write_text("garbage\n")
    started = minbw_json("serve", "--daemon", "--port", port, "--state-dir", state_dir)
    assert started["changed"] is True and started["pid"] != os.getpid()
    assert int(pidfile.read_text()) == started["pid"]


def test_stop_kills_a_server_that_ignores_sigterm(instance):
    port, state_dir = instance
    state_dir.mkdir()
    # looks like ours (a `serve` with this --state-dir) but ignores SIGTERM
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                 "print('up', flush=True)\ntime.sleep(120)", "serve", "--state-dir", str(state_dir)],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert stubborn.stdout.readline() == "up\n"
        (state_dir / "placement.pid").write_text(f"{stubborn.pid}\n")
        assert minbw_json("show", "--state-dir", state_dir, "--port", port)["ours"] is True
        started = time.monotonic()
        stopped = minbw_json("stop", "--state-dir", state_dir, "--timeout", 1)
        assert stopped["changed"] is True and stopped["pid"] == stubborn.pid
        assert time.monotonic() - started < 15
        assert stubborn.wait(10) == -signal.SIGKILL
        assert not (state_dir / "placement.pid").exists()
    finally:
        stubborn.kill()
        stubborn.wait()


def test_missing_state_dir_is_not_running(tmp_path):
    missing = tmp_path / "nowhere"
    assert minbw_json("show", "--state-dir", missing)["running"] is False
    stopped = minbw_json("stop", "--state-dir", missing)
    assert stopped["changed"] is False and stopped["pid"] is None
    assert not missing.exists()


def test_bad_input_is_one_line_without_traceback(tmp_path):
    proc = minbw("serve", "--port", free_port(), "--state-dir", tmp_path, "--json")
    assert_clear_error(proc, "only with --daemon")
    proc = minbw("serve", "--daemon", "--port", 0, "--state-dir", tmp_path / "pl")
    # a usage error, refused by the argument parser (exit 2) before anything starts
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "argument --port: expected a TCP port number 1-65535, got '0'" in proc.stderr
    assert not (tmp_path / "pl").exists()
    proc = minbw("stop", "--state-dir", tmp_path, "--timeout", "-1")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--timeout" in proc.stderr
