"""The Python that runs the tests' Ansible modules, forked from one warm process instead of started afresh.

A module of the collection that talks to a cloud imports openstacksdk, keystoneauth and Ansible's ``basic`` before
its work. ``tests/support/playbook_runner.py`` gives an ``ansible-playbook`` run on the implicit localhost the
interpreter :func:`server` names (the extra var ``ansible_python_interpreter``): a shell script that runs this file as a
client (``python -I -S``: the standard library only, about 0.02 CPU s) with Ansible's command line (the AnsiballZ
file). The client sends its arguments, environment, working directory and three descriptors to the server (once per
pytest process, :func:`server`), which imported what a module imports before its work; the server forks, and the
child takes the client's streams, environment, directory and ``sys.argv`` and runs the AnsiballZ file as the
interpreter runs a script (``__main__``, ``sys.path[0]`` its directory), then what the interpreter does at exit.
The client exits as the child did (its code, or the same signal); when the client is killed (a task's timeout) the
child is killed too. Where the server cannot be reached, the client runs the file with its own interpreter (the
same virtualenv's Python).

What a forked module does not share with a spawned one: its hash seed (the server's), and the modules loaded
before its work: ``ansible.module_utils`` comes from the virtualenv's ansible-core (the controller's own, the
version that built the payload) rather than from the payload, and what those compute from the environment when
imported (openstacksdk's clouds.yaml search path, which holds the working directory and ``~/.config``; stevedore's
entry-point cache directory, XDG_CACHE_HOME) is computed again, by their own code, in the child's environment and
directory (``IMPORT_TIME``). The module's own code and the collection's ``module_utils`` (its core) are the
payload's, imported in the child. ``MINBW_MODULE_FORKS=0`` spawns every module as Ansible does.
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import sys

ENABLED = "MINBW_MODULE_FORKS"
_server = None  # (Popen, socket path, interpreter script) of this process's server


def enabled() -> bool:
    return os.environ.get(ENABLED) != "0"


def server() -> tuple[str, str]:
    """(the socket, the interpreter script) of this process's server, started on first use, stopped at exit."""
    import atexit
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    global _server
    if _server is None or _server[0].poll() is not None:
        tmp = tempfile.mkdtemp(prefix="minbw-module-forks-")
        path = os.path.join(tmp, "s")
        proc = subprocess.Popen([sys.executable, "-m", "tests.support.module_forks", "--serve", path],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                cwd=Path(__file__).resolve().parents[2])
        ready = proc.stdout.readline() if proc.stdout else b""
        assert ready == b"ready\n", f"the module fork server did not start: {ready!r}, exit {proc.poll()}"
        script = os.path.join(tmp, "python")
        with open(script, "w") as f:
            f.write(f"#!/bin/sh\nexec '{sys.executable}' -I -S '{os.path.abspath(__file__)}' --client '{path}' \"$@\"\n")
        os.chmod(script, 0o755)

        def stop(proc=proc, tmp=tmp):
            proc.kill()
            proc.wait()
            shutil.rmtree(tmp, ignore_errors=True)

        atexit.register(stop)
        _server = (proc, path, script)
    return _server[1], _server[2]


# The client's side (run as `python -I -S module_forks.py --client SOCKET ARG...`: the standard library only).


def _client(path: str, args: list[str]) -> None:
    request = json.dumps({"argv": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        socket.send_fds(sock, [len(request).to_bytes(8, "big") + request], [0, 1, 2])
        _recv_int(sock)  # the child's pid: it runs
    except OSError:  # no server (it stopped, or this runs elsewhere): the module with this interpreter
        sock.close()
        os.execv(sys.executable, [sys.executable, *args])
    status = _recv_int(sock)
    if os.WIFSIGNALED(status):  # as the spawned module would have ended
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    sys.stdout.flush()
    os._exit(os.waitstatus_to_exitcode(status))


def _recv_int(sock: socket.socket) -> int:
    data = b""
    while len(data) < 8:
        chunk = sock.recv(8 - len(data))
        if not chunk:
            raise EOFError("the module fork server's handler ended without an answer")
        data += chunk
    return int.from_bytes(data, "big", signed=True)


# The server's side.

# What a module of the collection imports before its work: Ansible's module_utils (AnsiballZ's loader), and, for one
# that talks to a cloud, openstacksdk (its Connection), keystoneauth's exceptions and os-resource-classes.
WARM = ("ansible.module_utils.basic", "ansible.module_utils._internal._ansiballz._loader", "openstack",
        "openstack.connection", "openstack.exceptions", "keystoneauth1.exceptions", "os_resource_classes")
# What those imports compute from the environment (HOME, XDG_*) and the working directory: run again, as the
# library's own code (from the first line to the last one's end), in each child's. openstacksdk's paths (the
# clouds.yaml search path); stevedore's entry-point cache (its directory: XDG_CACHE_HOME), which keystoneauth1 reads
IMPORT_TIME = (("openstack.config.loader", "PLATFORMDIRS = platformdirs.PlatformDirs(", "\nBOOL_KEYS = "),
               ("stevedore._cache", "\n_c = Cache()\n", None))


def _serve(path: str) -> None:
    import ctypes
    import importlib
    import inspect

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: ended with the pytest process, however it ends
    for name in WARM:
        importlib.import_module(name)
    again = []
    for name, first, after in IMPORT_TIME:
        module = importlib.import_module(name)
        source = inspect.getsource(module)
        start = source.index(first)  # fails on a module of another shape: nothing is forked then
        end = source.index(after, start) if after else len(source)
        again.append((compile(source[start:end], module.__file__, "exec"), vars(module)))

    def paths():
        for code, namespace in again:
            exec(code, namespace)  # noqa: S102 - the library's own lines, in the child's environment
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
                _handle(conn, paths)
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


def _handle(conn: socket.socket, paths) -> None:
    fds: list[int] = []
    size = int.from_bytes(_recv_exactly(conn, 8, fds), "big")
    request = json.loads(_recv_exactly(conn, size, fds))
    pid = os.fork()
    if pid == 0:
        conn.close()
        _module(request, fds, paths)
    for fd in fds:
        os.close(fd)
    conn.sendall(pid.to_bytes(8, "big", signed=True))
    pidfd = os.pidfd_open(pid)
    while True:  # the child's end, or the client's (killed: a task's timeout), whichever comes first
        ready, _, _ = select.select([pidfd, conn], [], [])
        if pidfd in ready:
            break
        if not conn.recv(1):
            os.kill(pid, signal.SIGKILL)
            break
    _, status = os.waitpid(pid, 0)
    try:
        conn.sendall(status.to_bytes(8, "big", signed=True))
    except OSError:  # the client is gone
        pass


def _module(request: dict, fds: list[int], paths) -> None:
    """The child: the request's streams, environment, directory and arguments, then the AnsiballZ file as
    ``python FILE`` runs it; exits with its code (never returns)."""
    import atexit
    import runpy
    import threading

    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        paths()
        script = request["argv"][0]
        sys.argv = list(request["argv"])
        sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python FILE` has it
        try:
            runpy.run_path(script, run_name="__main__")
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
    if sys.argv[1] == "--client":
        _client(sys.argv[2], sys.argv[3:])
    else:
        _serve(sys.argv[2])
