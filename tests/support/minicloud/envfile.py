"""The mini-cloud's ``env`` file, read as the shell reads it.

cloud.sh ``up`` writes ``$MINICLOUD_STATE/env`` from templates/env.in (and env-ovn.in, env-real-ovs.in) for
``source``: ``export NAME=VALUE`` lines, a value quoted where it may hold spaces (``MINICLOUD_HYPERVISORS="devstack0
devstack1"``, ``MINICLOUD_REAL_OVS_AGENT``). Its readers (the e2e suite's MiniCloud, tempest's config.py) take each
value as bash sets it: quotes removed.
"""

from __future__ import annotations

import shlex
from pathlib import Path


def read_env(path: Path) -> dict[str, str]:
    """Every ``export NAME=VALUE`` of ``path`` as bash's ``source`` sets it: NAME -> VALUE with its shell quoting
    undone (``export X="a b"`` is ``a b``); comments and other lines are passed over."""
    env = {}
    for line in path.read_text().splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] != ["export"]:
            continue
        for word in words[1:]:
            name, assigned, value = word.partition("=")
            if assigned:
                env[name] = value
    return env
