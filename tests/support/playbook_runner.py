"""ansible-playbook runs for the tests: the PLAY RECAP counts, the output, and the result file
the playbook wrote (ansible-core 2.19 ships no JSON stdout callback, so results go to a file: the playbook's
``set_stats`` ``result``, written by the callback ``tests/support/ansible/callback/result_file.py`` to the path
its extra var ``result_file`` names). The modules of a run on the implicit localhost (no inventory) are forked from
one warm process (``tests/support/module_forks.py``; ``MINBW_MODULE_FORKS=0``: spawned, as Ansible does)."""
from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from tests.support import module_forks

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CALLBACKS = REPO / "tests" / "support" / "ansible" / "callback"
RECAP = re.compile(r"^(\S+)\s+:\s+(ok=.*)$", re.M)
# MINBW_PLAYBOOK_LOG=FILE: one JSON line per run appended to FILE (the test, the playbook, its CPU s with every
# process it started, its wall s, its PLAY RECAP): how many runs a test makes and what each costs
LOG = "MINBW_PLAYBOOK_LOG"


class Run:
    def __init__(self, proc: subprocess.CompletedProcess, result_file: Path | None = None):
        self.output = proc.stdout + proc.stderr
        # per host, and summed over the hosts
        self.recaps = {host: {k: int(v) for k, v in (item.split("=") for item in counts.split())}
                       for host, counts in RECAP.findall(proc.stdout)}
        assert self.recaps, self.output
        self.recap = {k: sum(r[k] for r in self.recaps.values()) for k in next(iter(self.recaps.values()))}
        self.result = json.loads(result_file.read_text()) if result_file and result_file.exists() else None

    @property
    def changed(self) -> bool:
        return self.recap["changed"] > 0

    @property
    def failed(self) -> bool:
        return self.recap["failed"] > 0


def run_playbook(path, extra_vars: dict, *, check: bool = False, diff: bool = False, env: dict | None = None,
                 result_file: Path | None = None, inventory: Path | None = None, local_hosts: bool = False) -> Run:
    """Run ``path`` with the repository's ansible.cfg; ``result_file`` (if given) is passed as an extra var.
    ``local_hosts``: every host of ``inventory`` is this machine's (``ansible_connection=local``, in this network
    namespace), so its modules may be forked too (a host's own ``ansible_python_interpreter`` still wins)."""
    if result_file is not None:
        result_file.unlink(missing_ok=True)
        extra_vars = dict(extra_vars, result_file=str(result_file))
    if inventory is None and "ansible_python_interpreter" not in extra_vars and module_forks.enabled():
        # the implicit localhost's interpreter is a variable (ansible-playbook's own Python), which only another
        # variable overrides: the same Python, its modules forked from the warm server
        extra_vars = dict(extra_vars, ansible_python_interpreter=module_forks.server()[1])
    cmd = [str(BIN / "ansible-playbook"), str(path), "-e", json.dumps(extra_vars)]
    cmd += (["--check"] if check else []) + (["--diff"] if diff else []) + (["-i", str(inventory)] if inventory else [])
    env = dict(env or os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_PLUGINS=str(CALLBACKS), ANSIBLE_CALLBACKS_ENABLED="result_file")
    if inventory is not None and local_hosts and module_forks.enabled():
        # ansible.cfg's interpreter_python for the inventory's hosts that name none (the setting, not a variable)
        env.setdefault("ANSIBLE_PYTHON_INTERPRETER", module_forks.server()[1])
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    run = Run(proc, result_file)
    if os.environ.get(LOG):
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        with open(os.environ[LOG], "a") as log:
            log.write(json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0],
                                  "playbook": Path(path).name, "check": check, "cpu": round(cpu, 2),
                                  "wall": round(time.monotonic() - started, 1), "recap": run.recap}) + "\n")
    return run
