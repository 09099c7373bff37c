"""The `minbw` command line of the functional tests, forked from one warm process instead of started afresh.

A `minbw` process imports the command line (osc-lib, cliff, openstacksdk, keystoneauth: about 0.65 CPU s) before its
command runs. :func:`run` is ``subprocess.run`` for a `minbw` command line (``tests.conftest.MINBW`` + arguments):
the command is forked from a server that imported what `python -m minbw.cli` imports at its start (once per pytest
process, :func:`server`), with its own arguments, environment, working directory, standard input (``/dev/null``),
output and error (captured), and its exit status. What it runs is ``minbw.cli.shell.main`` as the package's
``__main__`` does, and what the interpreter does at exit (``atexit``, the streams flushed). Any other command line,
or ``MINBW_CLI_FORKS=0``, is run by ``subprocess.run``. What stays a process of its own: the tests of how `minbw`
starts (``tests/functional/test_cli_formats.py`` runs the venv's ``bin/minbw``, the README tour its own venv's), and
the long-running ones a test starts with ``subprocess.Popen`` (the exporter, ``placement serve``).

The server (``python -m tests.support.cli_forks SOCKET``) listens on a Unix socket; for each connection it forks a
handler, which receives the request and its three descriptors, forks the command, sends its pid, waits for it and
sends its wait status. Only the server's first fork is from the warm process; the command is forked from the handler,
which did nothing but read a request.
"""

from __future__ import annotations

import array
import atexit
import importlib
import importlib.util
import json
import os
import runpy
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ENTRY_MODULE = ["-m", "minbw.cli"]
_lock = threading.Lock()
_server: tuple[subprocess.Popen, str] | None = None


def is_minbw(argv) -> bool:
    """``argv`` runs the command line as ``tests.conftest.MINBW`` does: this interpreter, ``-m minbw.cli``."""
    return isinstance(argv, (list, tuple)) and len(argv) >= 3 and argv[0] == sys.executable and list(argv[1:3]) == ENTRY_MODULE


def server() -> str:
    """The socket of this process's server, started on first use and stopped when this process exits."""
    global _server
    with _lock:
        if _server is None or _server[0].poll() is not None:
            tmp = tempfile.mkdtemp(prefix="minbw-cli-forks-")
            path = os.path.join(tmp, "s")
            proc = subprocess.Popen([sys.executable, "-m", __name__, path], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parents[2])
            ready = proc.stdout.readline() if proc.stdout else b""
            assert ready == b"ready\n", f"the minbw fork server did not start: {ready!r}, exit {proc.poll()}"

            def stop(proc=proc, tmp=tmp):
                proc.kill()
                proc.wait()
                shutil.rmtree(tmp, ignore_errors=True)

            atexit.register(stop)
            _server = (proc, path)
        return _server[1]


def run(argv, *, env=None, capture_output=False, text=False, timeout=None, check=False, **kwargs):
    """``subprocess.run(argv, ...)``: forked from the warm server when ``argv`` is a `minbw` command line and only
    these arguments are given, else ``subprocess.run`` itself."""
    if not is_minbw(argv) or kwargs or os.environ.get("MINBW_CLI_FORKS") == "0":
        return subprocess.run(argv, env=env, capture_output=capture_output, text=text, timeout=timeout, check=check,
                              **kwargs)
    argv = [str(a) for a in argv]
    env = dict(os.environ if env is None else env)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, open(os.devnull, "rb") as null, \
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(server())
        request = json.dumps({"argv": argv, "env": env, "cwd": os.getcwd()}).encode()
        fds = [null.fileno(), out.fileno() if capture_output else 1, err.fileno() if capture_output else 2]
        socket.send_fds(sock, [len(request).to_bytes(8, "big") + request], fds)
        pid = _recv_int(sock)
        sock.settimeout(timeout)
        try:
            status = _recv_int(sock)
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)  # as subprocess.run does: the command, then its output so far
            sock.settimeout(None)
            _recv_int(sock)
            stdout, stderr = (_read(out, text), _read(err, text)) if capture_output else (None, None)
            raise subprocess.TimeoutExpired(argv, timeout, stdout, stderr) from None
        code = os.waitstatus_to_exitcode(status)
        stdout, stderr = (_read(out, text), _read(err, text)) if capture_output else (None, None)
    done = subprocess.CompletedProcess(argv, code, stdout, stderr)
    if check:
        done.check_returncode()
    return done


def _recv_int(sock: socket.socket) -> int:
    data = b""
    while len(data) < 8:
        chunk = sock.recv(8 - len(data))
        if not chunk:
            raise RuntimeError("the minbw fork server's handler ended without an answer")
        data += chunk
    return int.from_bytes(data, "big", signed=True)


def _read(f, text: bool):
    f.seek(0)
    data = f.read()
    return data.decode(errors="strict") if text else data


# The server's side.


# What a command loads lazily (minbw.cli.shell's _deferred) and the server loads before: openstacksdk (its package and
# the Connection every command but Placement's own makes), osc-lib's log lines' strutils, the API calls' metrics. Not
# osprofiler's web and profiler modules, whose laziness is what a request's trace headers depend on.
WARM = ("openstack.connection", "oslo_utils.strutils", "prometheus_client")


def _serve(path: str) -> None:
    # sys.argv[0] as `python -m minbw.cli` has it when cliff is imported (cliff's App.NAME and its logger's name)
    sys.argv[0] = os.path.join(importlib.util.find_spec("minbw.cli").submodule_search_locations[0], "__main__.py")
    import minbw.cli.shell  # what `python -m minbw.cli` imports before main() runs

    shell = minbw.cli.shell.MinbwShell()  # what making its shell loads
    for _name, entry_point in shell.command_manager:  # each command's module, as its run imports it
        entry_point.load()
    for name in WARM:
        vars(importlib.import_module(name))  # any attribute of a lazy module runs its code
    importlib.import_module("openstack").connect  # noqa: B018 - its __init__ runs for an attribute not a submodule
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the handlers are reaped by the kernel
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _handle(conn)
            finally:
                os._exit(0)
        conn.close()


def _recv_exactly(conn: socket.socket, n: int, fds: list[int]) -> bytes:
    data = b""
    while len(data) < n:
        msg, anc, _flags, _addr = conn.recvmsg(n - len(data), socket.CMSG_SPACE(3 * array.array("i").itemsize))
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(array.array("i", payload[: len(payload) - len(payload) % 4]))
        if not msg:
            raise EOFError("the request ended early")
        data += msg
    return data


def _handle(conn: socket.socket) -> None:
    fds: list[int] = []
    size = int.from_bytes(_recv_exactly(conn, 8, fds), "big")
    request = json.loads(_recv_exactly(conn, size, fds))
    pid = os.fork()
    if pid == 0:
        conn.close()
        _command(request, fds)
    for fd in fds:
        os.close(fd)
    conn.sendall(pid.to_bytes(8, "big", signed=True))
    _, status = os.waitpid(pid, 0)
    conn.sendall(status.to_bytes(8, "big", signed=True))


def _command(request: dict, fds: list[int]) -> None:
    """The child: the request's streams, environment, directory and arguments, then what ``python -m minbw.cli``
    runs; exits with its code (never returns)."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["-m", *request["argv"][3:]]
        try:
            runpy._run_module_as_main("minbw.cli")  # type: ignore[attr-defined] - what `python -m minbw.cli` runs
            code = 0
        except SystemExit as stop:  # as the interpreter treats it
            code = _exit_code(stop.code)
        except BaseException:  # noqa: BLE001 - as the interpreter: its traceback, exit code 1
            sys.excepthook(*sys.exc_info())
            code = 1
        threading._shutdown()  # type: ignore[attr-defined] - as the interpreter at exit: its threads joined,
        atexit._run_exitfuncs()  # then its exit functions
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001, S110 - a closed stream: nothing more to write
                pass
        os._exit(code)


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    _serve(sys.argv[1])
