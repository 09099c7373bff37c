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
directory (``IMPORT_TIME`` in ``tests/support/forks.py``, which both fork servers share). The module's own code and the collection's ``module_utils`` (its core) are the
payload's, imported in the child. ``MINBW_MODULE_FORKS=0`` spawns every module as Ansible does.
"""

from __future__ import annotations

import os
import signal
import sys

ENABLED = "MINBW_MODULE_FORKS"
_server = None  # (Popen, socket path, interpreter script) of this process's server


def enabled() -> bool:
    return os.environ.get(ENABLED) != "0"


def server() -> tuple[str, str]:
    """(the socket, the interpreter script) of this process's server, started on first use, stopped at exit."""
    from tests.support import forks

    global _server
    if _server is None or _server[0].poll() is not None:
        proc, path, tmp = forks.start_server("tests.support.module_forks", ["--serve"], "minbw-module-forks-")
        script = os.path.join(tmp, "python")
        with open(script, "w") as f:
            f.write(f"#!/bin/sh\nexec '{sys.executable}' -I -S '{os.path.abspath(__file__)}' --client '{path}' \"$@\"\n")
        os.chmod(script, 0o755)
        _server = (proc, path, script)
    return _server[1], _server[2]


# The client's side (run as `python -I -S module_forks.py --client SOCKET ARG...`: the standard library only).


def _client(path: str, args: list[str]) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # forks.py beside this file (python -I: no path)
    import forks

    forks.client(path, args, [sys.executable, *args])  # no server: the module with this interpreter


# The server's side.

# What a module of the collection imports before its work: Ansible's module_utils (AnsiballZ's loader), and, for one
# that talks to a cloud, openstacksdk (its Connection), keystoneauth's exceptions and os-resource-classes.
WARM = ("ansible.module_utils.basic", "ansible.module_utils._internal._ansiballz._loader", "openstack",
        "openstack.connection", "openstack.exceptions", "keystoneauth1.exceptions", "os_resource_classes")


def _serve(path: str) -> None:
    import ctypes
    import importlib

    from tests.support import forks

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: ended with the pytest process, however it ends
    for name in WARM:
        importlib.import_module(name)
    forks.serve(path, _module)


def _module(request: dict) -> None:
    """The AnsiballZ file as ``python FILE`` runs it, with the request's arguments (in the child:
    tests/support/forks.py)."""
    from tests.support import forks

    forks.run_script(request["argv"])


if __name__ == "__main__":
    if sys.argv[1] == "--client":
        _client(sys.argv[2], sys.argv[3:])
    else:
        _serve(sys.argv[2])
