"""The claim storms' processes (tests/prodplacement, tests/galera, tests/functional/test_claims.py), forked from one
warm process instead of each started afresh.

A claimer process started by multiprocessing's ``spawn`` imports its test module (pytest, openstacksdk, the command
line) and then, in its first claim, loads what openstacksdk imports lazily: 0.8-0.9 CPU s before its first request
is sent, 32 times in the storm of 32. A pool from :func:`warm_pool` forks its processes from multiprocessing's fork
server, which imported all that once (this module, the worker's module and pytest, see :func:`warm_pool`). Each
claimer is still a process of its own that makes its own connections, and the storms start them the same way:
before the round, waiting for the same instant.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import sys
from collections.abc import Callable

import minbw.cli.allocation  # noqa: F401 - `minbw allocation create`, the storms' command
import minbw.cli.connection  # noqa: F401
import minbw.cli.shell as shell
import minbw.ops.claims  # noqa: F401 - what the command runs
import minbw.usecases.allocation  # noqa: F401
import minbw.usecases.server_request  # noqa: F401


def _warm() -> None:
    """Load what a claim's first run would: openstacksdk's lazy modules, a connection's session (no request is
    sent), the auth plugins' loaders osc-lib lists and cliff's formatters (both found by entry points)."""
    import stevedore
    from keystoneauth1 import loading

    for name in shell.LOADED_BEFORE_A_COMMAND:
        if name in sys.modules:
            vars(sys.modules[name])  # any attribute of a lazy module runs its code
    import openstack.connection

    auth = {"endpoint": "http://127.0.0.1:9", "token": "x"}
    _ = openstack.connection.Connection(auth_type="admin_token", auth=auth).session  # made; no request is sent
    loading.get_available_plugin_loaders()
    for namespace in ("cliff.formatter.list", "cliff.formatter.show"):
        stevedore.ExtensionManager(namespace)


_warm()


def warm_pool(processes: int, worker: Callable) -> multiprocessing.pool.Pool:
    """A pool of ``processes`` forked from the fork server, which imports first this module, ``worker``'s module
    (what unpickling ``worker`` imports) and pytest (a child runs ``python -m pytest``'s main module again, as
    ``__mp_main__``). The fork server is one per process and keeps what it preloaded when first started: a second
    pool with another worker imports that worker's module in each child (slower, the same processes)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([m for m in ("pytest", __name__, worker.__module__) if m in sys.modules])
    return ctx.Pool(processes)
