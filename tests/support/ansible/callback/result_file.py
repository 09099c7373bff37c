"""The result file of a test's playbook, written by the controller when the run ends.

A test playbook puts what its test asserts on under ``result`` with ``ansible.builtin.set_stats`` (``per_host:
false``, ``aggregate: false``); this callback writes it as JSON to the path the extra var ``result_file`` names
(``tests/support/playbook_runner.py`` enables it). An ``ansible.builtin.copy`` task did that before: two modules
(stat, copy), about 0.7 CPU s a run, where ``set_stats`` runs in the controller for next to nothing.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ansible.module_utils.common.json import AnsibleJSONEncoder
from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: result_file
type: aggregate
short_description: write the playbook's set_stats ``result`` to the extra var ``result_file``
description: minbw's tests' result files (tests/support/playbook_runner.py).
requirements: [enable in configuration]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "result_file"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._path: str | None = None

    def v2_playbook_on_play_start(self, play) -> None:
        self._path = play.get_variable_manager().extra_vars.get("result_file", self._path)

    def v2_playbook_on_stats(self, stats) -> None:
        run = stats.custom.get("_run", {})
        if self._path is None or "result" not in run:
            return
        path = Path(self._path)
        path.write_text(json.dumps(run["result"], cls=AnsibleJSONEncoder, indent=4, sort_keys=True))
        os.chmod(path, 0o600)
