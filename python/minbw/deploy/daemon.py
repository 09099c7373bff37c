"""The embedded Placement in the background: ``minbw placement serve --daemon``, ``stop`` and ``status``.

One instance per state directory, with a pid file (the server's own pid) and a log file, by default
``STATE_DIR/placement.pid`` and ``STATE_DIR/placement.log``. Whether the pid file names *our* live
server is decided in one place, :func:`our_process`: the process exists, is not a zombie, and its
command line is a ``placement serve`` with ``--state-dir`` naming this state directory (a pid file
left behind and a pid reused by another program are both "not ours").

Running = ours and answering HTTP on its port. Start and stop are idempotent and serialised per
state directory (an exclusive ``flock`` on the directory), so two callers never start two servers.
Needs Linux's ``/proc``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import http.client
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from typing import Literal

from minbw.deploy.serve import CLOUD_NAME, ready_marker
from minbw.errors import DaemonError, InvalidInput

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8780
PID_FILE = "placement.pid"
LOG_FILE = "placement.log"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0
TAIL_LINES = 40
_POLL = 0.2


@dataclass(frozen=True)
class Paths:
    """Where one instance keeps its files (absolute, spelled as given: the server's command line carries them)."""

    state_dir: str
    pid_file: str
    log_file: str

    @classmethod
    def of(cls, state_dir, pid_file=None, log_file=None) -> "Paths":
        if not str(state_dir or "").strip():
            raise InvalidInput("--state-dir: a directory path is required")
        state = os.path.abspath(os.fspath(state_dir))
        return cls(
            state,
            os.path.abspath(pid_file) if pid_file else os.path.join(state, PID_FILE),
            os.path.abspath(log_file) if log_file else os.path.join(state, LOG_FILE),
        )

    @property
    def clouds_yaml(self) -> str:
        return os.path.join(self.state_dir, "clouds.yaml")


_STATE_KEYS = {
    "start": ("url", "clouds_yaml", "pid_file", "log_file", "state_dir", "cloud", "changed", "pid"),
    "stop": ("changed", "pid", "pid_file", "state_dir"),
    "status": ("running", "pid", "ours", "url", "port", "port_in_use", "state_dir", "pid_file", "clouds_yaml", "cloud"),
}


@dataclass(frozen=True)
class PlacementState:
    """What ``start``, ``stop`` or ``status`` (``action``) found or did to a state directory's Placement: whether it
    changed anything, whether it runs (ours and answering), its pid (None when nothing of ours runs), url, port,
    whether the port is in use, its paths and the cloud's name in its clouds.yaml."""

    action: Literal["start", "stop", "status"]
    state_dir: str
    pid_file: str
    pid: int | None
    changed: bool = False
    running: bool = False
    ours: bool = False
    url: str | None = None
    port: int | None = None
    port_in_use: bool = False
    clouds_yaml: str | None = None
    log_file: str | None = None
    cloud: str = CLOUD_NAME

    def to_dict(self) -> dict:
        """The JSON-ready dict of its action: start gives url, clouds_yaml, pid_file, log_file, state_dir, cloud,
        changed, pid; stop gives changed, pid, pid_file, state_dir; status gives running, pid, ours, url, port,
        port_in_use, state_dir, pid_file, clouds_yaml, cloud."""
        return {key: getattr(self, key) for key in _STATE_KEYS[self.action]}


@dataclass(frozen=True)
class Process:
    """Our live server: its pid and the port its command line names."""

    pid: int
    port: int


def url_of(host: str, port: int) -> str:
    return f"http://{host}:{port}"


def server_command(port: int, state_dir: str, host: str = DEFAULT_HOST) -> list[str]:
    """The foreground server that ``--daemon`` runs detached (the Python running this, so the same minbw)."""
    cmd = [sys.executable, "-m", "minbw.cli", "placement", "serve", "--port", str(port), "--state-dir", state_dir]
    return cmd + (["--host", host] if host != DEFAULT_HOST else [])


# ------------------------------------------------------------------ is it ours and alive


def read_pid(pid_file: str) -> int | None:
    """The pid in the pid file; None when there is no pid file or it holds no pid."""
    try:
        with open(pid_file) as f:
            text = f.read(64).strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise InvalidInput(f"pid file {pid_file}: {e.strerror}") from None
    return int(text) if text.isdigit() and int(text) > 0 else None


def _live_argv(pid: int) -> list[str] | None:
    """The command line of a live process; None when it is gone or a zombie (or a kernel thread)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[:1]
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    if not state or state[0] in (b"Z", b"X", b"x") or not raw:
        return None
    return [a.decode(errors="surrogateescape") for a in raw.rstrip(b"\0").split(b"\0")]


def _option(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.removeprefix(name + "=")
    return None


def our_process(paths: Paths) -> Process | None:
    """The live ``placement serve`` of this state directory that the pid file names, or None.

    The one check behind ``serve --daemon``, ``stop`` and ``status``.
    """
    pid = read_pid(paths.pid_file)
    if pid is None:
        return None
    argv = _live_argv(pid)
    if not argv or "serve" not in argv:
        return None
    named = _option(argv, "--state-dir")
    if named is None:
        return None
    if not os.path.isabs(named):
        try:
            named = os.path.join(os.readlink(f"/proc/{pid}/cwd"), named)
        except OSError:
            return None
    if os.path.realpath(named) != os.path.realpath(paths.state_dir):
        return None
    port = _option(argv, "--port")
    return Process(pid, int(port) if port and port.isdigit() else DEFAULT_PORT)


def _alive(pid: int) -> bool:
    return _live_argv(pid) is not None


# ------------------------------------------------------------------ the port


def answers(host: str, port: int, timeout: float = 5.0) -> bool:
    """Placement answers ``GET /`` (its version document) on the port."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", "/", headers={"Accept": "application/json"})
        return conn.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def port_free(host: str, port: int) -> bool:
    """Could the server bind the port? (The same SO_REUSEADDR bind it makes: a listener or a bound
    socket elsewhere makes it fail, a connection in TIME_WAIT does not.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise DaemonError(f"Cannot check port {port} on {host}: {e.strerror}", port=port) from None
    return True


def _check_port(port) -> int:
    if not isinstance(port, int) or not 0 < port < 65536:
        raise InvalidInput(f"--port: expected a TCP port between 1 and 65535, got {port!r}")
    return port


def _check_timeout(timeout) -> float:
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise InvalidInput(f"--timeout: expected a positive number of seconds, got {timeout!r}")
    return float(timeout)


# ------------------------------------------------------------------ helpers


@contextlib.contextmanager
def _locked(state_dir: str):
    """Serialise start/stop of one instance: an exclusive flock on its state directory."""
    fd = os.open(state_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _remove(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as e:
        raise DaemonError(f"Cannot remove the pid file {path}: {e.strerror}") from None


def _write_pid(pid_file: str, pid: int) -> None:
    tmp = f"{pid_file}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(f"{pid}\n")
        os.replace(tmp, pid_file)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _log_size(log_file: str) -> int:
    try:
        return os.path.getsize(log_file)
    except OSError:
        return 0


def _log_since(log_file: str, offset: int) -> str:
    try:
        with open(log_file, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL)
    return True


def _terminate(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """Stop a child we started (and reap it)."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _make_dir(path: str, what: str) -> None:
    if os.path.exists(path) and not os.path.isdir(path):
        hint = " (it holds the database, clouds.yaml, the pid file and the log)" if what == "--state-dir" else ""
        raise InvalidInput(f"{what} {path} exists and is not a directory: give a directory{hint}")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise InvalidInput(f"{what} {path}: cannot create it: {e.strerror}") from None


# ------------------------------------------------------------------ the three commands


def status(state_dir, port: int | None = None, pid_file=None, host: str = DEFAULT_HOST) -> PlacementState:
    """Read-only: is this state directory's Placement running? (A missing state directory: not running.)"""
    paths = Paths.of(state_dir, pid_file)
    proc = our_process(paths)
    if port is None:
        port = proc.port if proc else DEFAULT_PORT
    _check_port(port)
    running = proc is not None and proc.port == port and answers(host, port)
    return PlacementState(
        "status",
        paths.state_dir,
        paths.pid_file,
        proc.pid if proc else None,
        running=running,
        ours=proc is not None,
        url=url_of(host, port),
        port=port,
        port_in_use=running or not port_free(host, port),
        clouds_yaml=paths.clouds_yaml,
    )


def start(
    state_dir,
    port: int = DEFAULT_PORT,
    pid_file=None,
    log_file=None,
    timeout: float = START_TIMEOUT,
    host: str = DEFAULT_HOST,
) -> PlacementState:
    """Start the server detached unless ours already runs; return when it answers.

    Fails (:class:`DaemonError`) when the port is held by another process, or when the server exits or
    does not become ready in ``timeout`` seconds: then it is stopped, its pid file removed, and the
    error carries the end of its log.
    """
    port, timeout = _check_port(port), _check_timeout(timeout)
    paths = Paths.of(state_dir, pid_file, log_file)
    url = url_of(host, port)
    if our_process(paths) is None:
        _require_free_port(paths, host, port)  # before creating anything
    _make_dir(paths.state_dir, "--state-dir")
    _make_dir(os.path.dirname(paths.pid_file), "the pid file's directory")
    _make_dir(os.path.dirname(paths.log_file), "the log file's directory")
    result = PlacementState(
        "start", paths.state_dir, paths.pid_file, None, url=url, clouds_yaml=paths.clouds_yaml, log_file=paths.log_file
    )

    with _locked(paths.state_dir):
        proc = our_process(paths)
        if proc is not None:
            if proc.port != port:
                raise DaemonError(
                    f"The Placement of {paths.state_dir} already runs on port {proc.port} (pid {proc.pid}), "
                    f"not on {port}: use --port {proc.port}, or stop it first "
                    f"(minbw placement stop --state-dir {shlex.quote(paths.state_dir)})",
                    port=port,
                    pid=proc.pid,
                )
            deadline = time.monotonic() + timeout
            while _alive(proc.pid):
                if answers(host, port):
                    return replace(result, pid=proc.pid)
                if time.monotonic() >= deadline:
                    raise DaemonError(
                        f"The Placement of {paths.state_dir} (pid {proc.pid}) runs but does not answer on {url} "
                        f"after {timeout:g}s: stop it (minbw placement stop --state-dir "
                        f"{shlex.quote(paths.state_dir)}) and start it again",
                        port=port,
                        pid=proc.pid,
                    )
                time.sleep(_POLL)
            # it exited while we looked: start a new one
        _require_free_port(paths, host, port)
        _remove(paths.pid_file)  # stale: names no live server of ours
        return replace(result, changed=True, pid=_spawn(paths, port, host, url, timeout))


def _require_free_port(paths: Paths, host: str, port: int) -> None:
    if not port_free(host, port):
        raise DaemonError(
            f"Port {port} on {host} is in use, but not by the Placement of {paths.state_dir}: stop the "
            f"process that holds it (ss -ltnp 'sport = :{port}' names it) or choose another port (--port)",
            port=port,
        )


def _spawn(paths: Paths, port: int, host: str, url: str, timeout: float) -> int:
    cmd = server_command(port, paths.state_dir, host)
    offset = _log_size(paths.log_file)
    try:
        out = open(paths.log_file, "ab")  # append: placement's own logging writes there too
    except OSError as e:
        raise InvalidInput(f"log file {paths.log_file}: {e.strerror}") from None
    with out:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, close_fds=True
        )
    try:
        try:
            _write_pid(paths.pid_file, proc.pid)
        except OSError as e:
            raise InvalidInput(f"pid file {paths.pid_file}: {e.strerror}; the server was stopped") from None
        reason = _wait_ready(proc, paths.log_file, offset, host, port, url, timeout)
    except BaseException:
        _terminate(proc)
        _remove(paths.pid_file)
        raise
    if reason is None:
        return proc.pid
    _terminate(proc)
    _remove(paths.pid_file)
    raise DaemonError(
        f"Placement did not become ready on {url} ({reason}); nothing is left running.\nCommand: {shlex.join(cmd)}",
        port=port,
        pid=proc.pid,
        log_file=paths.log_file,
        log_tail=_tail(_log_since(paths.log_file, offset)),
    )


def _wait_ready(
    proc: subprocess.Popen, log_file: str, offset: int, host: str, port: int, url: str, timeout: float
) -> str | None:
    """None once the ready line is in the log and the port answers; else why not."""
    marker = ready_marker(url)
    deadline = time.monotonic() + timeout
    while True:
        ready = marker in _log_since(log_file, offset)
        if ready and answers(host, port, timeout=max(0.5, min(5.0, deadline - time.monotonic()))):
            return None
        code = proc.poll()
        if code is not None:
            return f"the server exited with status {code}"
        if time.monotonic() >= deadline:
            return (
                f"it printed its ready line but does not answer after {timeout:g}s"
                if ready
                else f"no ready line after {timeout:g}s"
            )
        time.sleep(_POLL)


def stop(state_dir, pid_file=None, timeout: float = STOP_TIMEOUT) -> PlacementState:
    """SIGTERM our server and wait until it exits (SIGKILL after ``timeout``); remove the pid file.

    Nothing running (no pid file, a stale one, a missing state directory): changed False.
    """
    timeout = _check_timeout(timeout)
    paths = Paths.of(state_dir, pid_file)
    lock = _locked(paths.state_dir) if os.path.isdir(paths.state_dir) else contextlib.nullcontext()
    with lock:
        proc = our_process(paths)
        if proc is None:
            _remove(paths.pid_file)  # a stale pid file names nothing of ours
            return PlacementState("stop", paths.state_dir, paths.pid_file, None)
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        except PermissionError:
            raise DaemonError(
                f"Not allowed to stop Placement (pid {proc.pid}) of {paths.state_dir}: "
                f"it runs as another user; stop it as that user",
                pid=proc.pid,
            ) from None
        if not _wait_gone(proc.pid, timeout):
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            if not _wait_gone(proc.pid, 10.0):
                raise DaemonError(
                    f"Placement (pid {proc.pid}) of {paths.state_dir} did not exit after SIGTERM "
                    f"and SIGKILL; the pid file {paths.pid_file} is kept",
                    pid=proc.pid,
                )
        _remove(paths.pid_file)
        return PlacementState("stop", paths.state_dir, paths.pid_file, proc.pid, changed=True)
