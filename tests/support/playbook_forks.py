"""ansible-lint's syntax checks (``ansible-playbook --syntax-check``), forked from one warm process instead of started
afresh.

``tests/support/ansible/lint.sh`` runs ansible-lint, which runs ``ansible-playbook --syntax-check -vv FILE`` for
every playbook and role of the checkout (44), each about 0.7 CPU s of which about 0.45 is Python importing
ansible-core. lint.sh puts a directory first on ansible-lint's ``PATH`` whose ``ansible-playbook`` runs this file as a
client (``python -I -S``: the standard library only). The first client starts the server (``--serve``) with its own
environment and working directory, in which the server imports ansible-core's playbook command line
(``ansible.constants`` reads ansible.cfg and the ``ANSIBLE_*`` variables when imported: the same ones, since every
syntax check of a run gets the same environment and directory from ansible-lint); each client then sends its
arguments and three descriptors, and the server forks a child that runs the virtualenv's ``ansible-playbook`` script
as the interpreter runs it (``__main__``, ``sys.argv``, ``sys.path[0]`` its directory), then what the interpreter does
at exit (tests/support/forks.py, which the tests' other fork servers share). The client exits as the child did.
A client whose environment or directory is not the server's, or whose command is not a syntax check, or that finds no
server, runs the virtualenv's ``ansible-playbook`` itself. ``MINBW_PLAYBOOK_FORKS=0`` (lint.sh) forks nothing.

What a forked syntax check does not share with a spawned one: its hash seed (the server's) and the modules loaded
before its work (the same ansible-core, imported in the same environment and directory). The server ends when lint.sh
removes the directory (its exit), within a second.

    python -I -S tests/support/playbook_forks.py --client DIR ARG...    (DIR/ansible-playbook runs this)
"""

from __future__ import annotations

import json
import os
import sys

# What the venv's ansible-playbook script imports before its work (ansible.cli.playbook: the CLI, the executor, the
# playbook objects, the plugin loader, ansible.constants and the display)
WARM = ("ansible.cli.playbook", "ansible.executor.playbook_executor", "ansible.inventory.manager",
        "ansible.parsing.dataloader", "ansible.playbook", "ansible.plugins.loader", "ansible.vars.manager")


def _real() -> str:
    """The virtualenv's ansible-playbook script (beside this interpreter)."""
    return os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def _here() -> dict:
    return {"env": dict(os.environ), "cwd": os.getcwd()}


# The client's side (run as `python -I -S playbook_forks.py --client DIR ARG...`: the standard library only).


def _client(directory: str, args: list[str]) -> None:
    import fcntl
    import subprocess

    real = _real()
    if "--syntax-check" not in args:
        os.execv(real, [real, *args])
    sock_path, started = os.path.join(directory, "s"), os.path.join(directory, "server.json")
    with open(os.path.join(directory, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(started):
            # its error output to a file: ansible-lint reads this client's until every writer has closed it
            with open(os.path.join(directory, "server.log"), "w") as log:
                server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", directory],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                          start_new_session=True)
            ready = server.stdout.readline() if server.stdout else b""
            with open(started, "w") as f:
                json.dump(_here() if ready == b"ready\n" else {}, f)
    with open(started) as f:
        if json.load(f) != _here():  # not the server's environment and directory (or no server)
            os.execv(real, [real, *args])
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # forks.py beside this file (python -I: no path)
    import forks

    forks.client(sock_path, [real, *args], [real, *args])  # the server gone: the venv's ansible-playbook itself


# The server's side.


def _serve(directory: str) -> None:
    import importlib
    import threading
    import time

    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
    from tests.support import forks

    def ends_with_its_directory():
        while os.path.isdir(directory):
            time.sleep(0.5)
        os._exit(0)

    for name in WARM:
        importlib.import_module(name)
    threading.Thread(target=ends_with_its_directory, daemon=True).start()
    # each child: the venv's ansible-playbook script as the interpreter runs it, with the request's arguments
    forks.serve(os.path.join(directory, "s"), lambda request: forks.run_script(request["argv"]))


if __name__ == "__main__":
    if sys.argv[1] == "--client":
        _client(sys.argv[2], sys.argv[3:])
    else:
        _serve(sys.argv[2])
