"""The `minbw` command line of the functional and e2e tests, forked from one warm process instead of started afresh.

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

import importlib
import importlib.util
import os
import runpy
import signal
import socket
import subprocess
import sys
import tempfile
import threading

from tests.support import forks

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
            proc, path, _tmp = forks.start_server(__name__, [], "minbw-cli-forks-")
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
        fds = [null.fileno(), out.fileno() if capture_output else 1, err.fileno() if capture_output else 2]
        pid = forks.send_request(sock, argv, env, fds)
        sock.settimeout(timeout)
        try:
            status = forks.recv_int(sock)
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)  # as subprocess.run does: the command, then its output so far
            sock.settimeout(None)
            forks.recv_int(sock)
            stdout, stderr = (_read(out, text), _read(err, text)) if capture_output else (None, None)
            raise subprocess.TimeoutExpired(argv, timeout, stdout, stderr) from None
        code = os.waitstatus_to_exitcode(status)
        stdout, stderr = (_read(out, text), _read(err, text)) if capture_output else (None, None)
    done = subprocess.CompletedProcess(argv, code, stdout, stderr)
    if check:
        done.check_returncode()
    return done


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
    forks.serve(path, _command)


def _command(request: dict) -> None:
    """What ``python -m minbw.cli`` runs, with the request's arguments (in the child: tests/support/forks.py)."""
    sys.argv = ["-m", *request["argv"][3:]]
    runpy._run_module_as_main("minbw.cli")  # type: ignore[attr-defined] - what `python -m minbw.cli` runs


if __name__ == "__main__":
    _serve(sys.argv[1])
