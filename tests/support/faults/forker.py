"""A pre-imported ``minbw`` that forks a real process per command (tests/faults/test_kill.py).

Importing openstacksdk costs seconds of CPU per process on a shared machine; forking from a process
that has it imported costs milliseconds, so many ``kill -9`` trials fit in a bounded time. Each child is
a real process running ``minbw.cli.shell.main(argv)`` with its own sockets, killed for real.

Protocol on stdin/stdout, one JSON line each: ``[{"argv": [...], "out": FILE or null}, ...]`` → the
children's pids; then ``go`` (the caller has set up what it needs for those pids: all start at once)
→ their exit codes (``os.waitstatus_to_exitcode``: -9 for a SIGKILL). A child's stdout goes to ``out``.
"""
from __future__ import annotations

import json
import os
import sys

import minbw.cli.shell as cli  # noqa: F401 - imported once, before the forks
import minbw.cli.providers  # noqa: F401 - the command the trials run, imported before the forks
import minbw.ops.sync  # noqa: F401
import openstack.connection  # noqa: F401


def main() -> None:
    for line in sys.stdin:
        runs = json.loads(line)
        go_r, go_w = os.pipe()
        pids = []
        for run in runs:
            pid = os.fork()
            if pid == 0:
                os.close(go_w)
                os.read(go_r, 1)
                out = os.open(run.get("out") or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(out, 1)
                os.dup2(out, 2)
                try:
                    code = cli.main(run["argv"])
                except BaseException:  # noqa: BLE001 - a traceback is in ``out``
                    import traceback
                    traceback.print_exc()
                    code = 99
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
            pids.append(pid)
        os.close(go_r)
        print(json.dumps(pids), flush=True)
        assert sys.stdin.readline().strip() == "go"
        os.write(go_w, b"g" * len(pids))
        os.close(go_w)
        print(json.dumps([os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]), flush=True)


if __name__ == "__main__":
    main()
