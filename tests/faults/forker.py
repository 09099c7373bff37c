"""A pre-imported ``minbw`` that forks a real process per command (tests/faults/test_kill.py).

Importing openstacksdk costs seconds of CPU per process on a shared machine; forking from a process
that has it imported costs milliseconds, so many ``kill -9`` trials fit in a bounded time. Each child is
a real process running ``minbw.cli.main.main(argv)`` with its own sockets, killed for real.

Protocol on stdin/stdout, one line each: ``<json argv>`` → ``<pid>``; then ``go`` (the caller has set
up what it needs for that pid) → ``<exit status as os.waitstatus_to_exitcode>``.
"""
from __future__ import annotations

import json
import os
import sys

import minbw.cli.main as cli  # noqa: F401 - imported once, before the forks
import minbw.ops.sync  # noqa: F401
import openstack.connection  # noqa: F401


def main() -> None:
    for line in sys.stdin:
        argv = json.loads(line)
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(go_w)
            os.read(go_r, 1)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            try:
                code = cli.main(argv)
            except BaseException:  # noqa: BLE001
                code = 99
            os._exit(code)
        os.close(go_r)
        print(pid, flush=True)
        assert sys.stdin.readline().strip() == "go"
        os.write(go_w, b"g")
        os.close(go_w)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    main()
