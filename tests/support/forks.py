"""What the tests' two fork servers share (``cli_forks.py``: the `minbw` command line; ``module_forks.py``: the
Python of the Ansible modules): a server started once per pytest process that imported what its processes import
before their work, a Unix socket on which a client sends a request (arguments, environment, working directory) with
three descriptors (its standard input, output and error), and for each request a handler forked from the server that
forks the child, sends its pid, waits for it (killing it when the client goes away first) and sends its wait status.

The child takes the request's streams, directory and environment, runs again what the warm imports computed from
the environment and the directory (``IMPORT_TIME``: openstacksdk's clouds.yaml search path, which holds the working
directory and ``~/.config``; stevedore's entry-point cache directory, XDG_CACHE_HOME, which keystoneauth1 reads), by
those libraries' own code, then its work, then what the interpreter does at exit (threads joined, ``atexit``, the
streams flushed), and exits with the code the interpreter would have given it.

The standard library only at import: ``module_forks.py``'s client runs as ``python -I -S`` and imports this file by
its path.
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import sys

# What the warm imports compute from the environment (HOME, XDG_*) and the working directory: run again, as the
# library's own code (from the first line to the last one's end), in each child's.
IMPORT_TIME = (("openstack.config.loader", "PLATFORMDIRS = platformdirs.PlatformDirs(", "\nBOOL_KEYS = "),
               ("stevedore._cache", "\n_c = Cache()\n", None))


def start_server(module: str, args: list[str], prefix: str):
    """``python -m MODULE ARGS... SOCKET`` from the repository's root, once it says it is ready: (Popen, socket
    path, its temporary directory); it is killed and the directory removed when this process exits."""
    import atexit
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    tmp = tempfile.mkdtemp(prefix=prefix)
    path = os.path.join(tmp, "s")
    proc = subprocess.Popen([sys.executable, "-m", module, *args, path], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parents[2])
    ready = proc.stdout.readline() if proc.stdout else b""
    assert ready == b"ready\n", f"the fork server {module} did not start: {ready!r}, exit {proc.poll()}"

    def stop(proc=proc, tmp=tmp):
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    atexit.register(stop)
    return proc, path, tmp


def send_request(sock: socket.socket, argv: list[str], env: dict, fds: list[int]) -> int:
    """Sends a request and its three descriptors; returns the child's pid once it runs."""
    request = json.dumps({"argv": argv, "env": env, "cwd": os.getcwd()}).encode()
    socket.send_fds(sock, [len(request).to_bytes(8, "big") + request], fds)
    return recv_int(sock)


def start_detached(path: str, pidfile: str, argv: list[str]) -> int:
    """A daemon's start through the server at ``path`` (``detach``): ARGV forked with this process's streams,
    directory and environment; its pid written to PIDFILE (as cloud.sh's ``start`` does); 0 once it runs."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        pid = send_request(sock, argv, dict(os.environ), [0, 1, 2])
    if pid <= 0:
        print(f"forks.py: the fork server at {path} could not fork {argv[0]}", file=sys.stderr)
        return 1
    with open(pidfile + ".new", "w") as f:
        f.write(f"{pid}\n")
    os.replace(pidfile + ".new", pidfile)
    return 0


def recv_int(sock: socket.socket) -> int:
    data = b""
    while len(data) < 8:
        chunk = sock.recv(8 - len(data))
        if not chunk:
            raise EOFError("the fork server's handler ended without an answer")
        data += chunk
    return int.from_bytes(data, "big", signed=True)


def client(path: str, argv: list[str], fallback: list[str]) -> None:
    """The client's side: ``argv`` sent with this process's environment, directory and three descriptors to the
    server listening on ``path``, then this process ends as the child did (its code, or the same signal); where the
    server cannot be reached, ``fallback`` runs in its place (``os.execv``). Never returns."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        send_request(sock, argv, dict(os.environ), [0, 1, 2])  # the child runs
    except OSError:  # no server (it stopped, or this runs elsewhere)
        sock.close()
        os.execv(fallback[0], fallback)
    status = recv_int(sock)
    if os.WIFSIGNALED(status):  # as the spawned process would have ended
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    sys.stdout.flush()
    os._exit(os.waitstatus_to_exitcode(status))


def run_script(argv: list[str]) -> None:
    """``argv[0]`` as ``python FILE ARG...`` runs it (``__main__``, ``sys.argv``, ``sys.path[0]`` its directory): a
    child's work."""
    import runpy

    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    runpy.run_path(argv[0], run_name="__main__")


# The server's side.


def serve(path: str, work, detach: bool = False) -> None:
    """Listens on ``path`` (after the caller's warm imports) and runs ``work(request)`` in a child per request.
    ``detach``: the handler ends once it sent the child's pid (no wait status; the child, a daemon such as the
    mini-cloud's Nova services, tests/support/minicloud/nova_service.py, goes on as its client ends, its parent init
    as with ``setsid CMD &``): the child starts a session of its own (as cloud.sh's ``start`` does with setsid, so
    that ``stop`` kills its process group) and shows the command line it stands for (setproctitle, imported then:
    the daemons' virtualenv has it), and the server must not run threads (a fork copies only the forking one)."""
    if detach:
        import threading

        import setproctitle

        assert threading.active_count() == 1, f"threads before forking: {threading.enumerate()}"
        setproctitle.getproctitle()  # set up here: once a child's environment is replaced, setproctitle cannot
        daemon_work = work

        def work(request):
            os.setsid()
            setproctitle.setproctitle(" ".join([sys.executable, *request["argv"]]))  # ps: the command it stands for
            daemon_work(request)

    again = _import_time_again()
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
                _handle(conn, lambda request, fds: _child(request, fds, again, work), detach)
            finally:
                os._exit(0)
        conn.close()


def _import_time_again():
    import importlib
    import inspect

    again = []
    for name, first, after in IMPORT_TIME:
        module = importlib.import_module(name)
        source = inspect.getsource(module)
        start = source.index(first)  # fails on a module of another shape: nothing is forked then
        end = source.index(after, start) if after else len(source)
        again.append((compile(source[start:end], module.__file__, "exec"), vars(module)))
    return again


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


def _handle(conn: socket.socket, child, detach: bool = False) -> None:
    fds: list[int] = []
    size = int.from_bytes(_recv_exactly(conn, 8, fds), "big")
    request = json.loads(_recv_exactly(conn, size, fds))
    pid = os.fork()
    if pid == 0:
        conn.close()
        child(request, fds)
    for fd in fds:
        os.close(fd)
    conn.sendall(pid.to_bytes(8, "big", signed=True))
    if detach:
        return
    pidfd = os.pidfd_open(pid)
    while True:  # the child's end, or the client's (gone: killed, a task's timeout), whichever comes first
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


def _child(request: dict, fds: list[int], again, work) -> None:
    """The child: the request's streams, directory and environment, the import-time paths again, then ``work``;
    exits with its code (never returns)."""
    import atexit
    import threading

    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for compiled, namespace in again:
            exec(compiled, namespace)  # noqa: S102 - the library's own lines, in the child's environment
        try:
            work(request)
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


if __name__ == "__main__":  # python -I -S forks.py start SOCKET PIDFILE ARGV... (the mini-cloud's cloud.sh)
    if len(sys.argv) < 5 or sys.argv[1] != "start":
        sys.exit("usage: forks.py start SOCKET PIDFILE ARGV...")
    sys.exit(start_detached(sys.argv[2], sys.argv[3], sys.argv[4:]))
