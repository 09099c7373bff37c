"""tests/support/playbook_forks.py (the syntax checks of tests/support/ansible/lint.sh's ansible-lint): a syntax check
forked from the warm server ends as the same command spawned (exit code, output, error), for a playbook that parses
and for ones that do not; a client in another environment, or with another command, runs the virtualenv's
ansible-playbook itself; the server ends when its directory goes."""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REAL = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
PLAYS = {
    "parses.yml": "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - name: Say\n"
                  "      ansible.builtin.debug:\n        msg: hi\n",
    "keyword.yml": "- hosts: localhost\n  tasks:\n    - name: A keyword no task has\n      ansible.builtin.debug:\n"
                   "        msg: hi\n      bogus_keyword: 1\n",
    "module.yml": "- hosts: localhost\n  tasks:\n    - name: No such module\n      no.such.module_x: {}\n",
}


def run(argv, env):
    """(exit code, output, error) of ``argv`` as ansible-lint runs it (cwd the checkout), and its CPU seconds (its
    own process tree's: a forked check's are the server's)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, stdin=subprocess.PIPE, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.returncode, r.stdout, r.stderr), after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def test_a_forked_syntax_check_ends_as_a_spawned_one(tmp_path):
    forks = tmp_path / "forks"
    forks.mkdir()
    client = forks / "ansible-playbook"
    client.write_text(f"#!/bin/sh\nexec '{sys.executable}' -I -S '{REPO}/tests/support/playbook_forks.py' "
                      f"--client '{forks}' \"$@\"\n")
    client.chmod(0o755)
    # ansible-lint's environment for its syntax checks (ansiblelint/runner.py) adds these two
    env = dict(os.environ, PYTHONWARNINGS="ignore", ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED="False")
    try:
        _check(tmp_path, forks, client, env)
    finally:
        shutil.rmtree(forks, ignore_errors=True)  # the server ends with it


def _check(tmp_path, forks, client, env):
    codes = {}
    for i, (name, text) in enumerate(PLAYS.items()):
        (tmp_path / name).write_text(text)
        argv = ["--syntax-check", "-vv", str(tmp_path / name)]
        (forked, client_cpu), (spawned, spawned_cpu) = run([str(client), *argv], env), run([REAL, *argv], env)
        assert forked == spawned, name
        if i:  # the first client started the server: the others' checks ran in the server's children, not theirs
            assert client_cpu < spawned_cpu / 2, (name, client_cpu, spawned_cpu)
        codes[name] = forked[0]
    assert codes["parses.yml"] == 0 and all(codes[n] != 0 for n in PLAYS if n != "parses.yml"), codes
    # the server started with the first client's environment and directory
    assert json.loads((forks / "server.json").read_text()) == {"env": env, "cwd": str(REPO)}
    server = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p)[-2:] == ["--serve", str(forks)]]
    assert len(server) == 1
    # another environment, or another command: the virtualenv's ansible-playbook itself
    other = dict(env, ANSIBLE_FORCE_COLOR="1")
    argv = ["--syntax-check", "-vv", str(tmp_path / "module.yml")]
    assert run([str(client), *argv], other)[0] == run([REAL, *argv], other)[0]
    assert run([str(client), "--version"], env)[0] == run([REAL, "--version"], env)[0]
    shutil.rmtree(forks)
    deadline = time.monotonic() + 30
    while _running(server[0]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _running(server[0]), "the server outlived its directory"


def _cmdline(proc: Path) -> list[str]:
    try:
        return (proc / "cmdline").read_bytes().decode().split("\0")[:-1]
    except OSError:
        return []


def _running(proc: Path) -> bool:
    """Not ended (a zombie has: its parent, the first client, is gone, and whoever adopted it may reap it late)."""
    try:
        return (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
