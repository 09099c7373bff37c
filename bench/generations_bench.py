"""Section ``delete_generation``: the reproducer of docs/placement-generations.md
(``patches/placement/reproduce_delete_generation.py``) run, exactly as the page shows it, against a fresh Placement
of this run's kind — with ``--placement prod`` the production-style one (uWSGI workers on MariaDB), stock, or
patched with patches/placement/0001-0003 when ``PRODPLACEMENT_PATCHED=1``.

Expected: stock openstack-placement 16.0.0 reproduces (exit 1: a ``DELETE /allocations/{consumer}``, and a move
off a provider, free usage without moving the provider's generation); with the patches it does not (exit 0). The
reproducer's whole output is kept in the section (its notes), as printed.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import REPO, BenchError, Column, Context, Section, Table, Target, loadavg, progress

SCRIPT = REPO / "patches" / "placement" / "reproduce_delete_generation.py"


def run(ctx: Context) -> Section:
    patched = ctx.servers.kind == "prod" and os.environ.get("PRODPLACEMENT_PATCHED") == "1"
    server = ctx.servers.start("delete-generation")
    try:
        # as the page runs it: `python3 patches/placement/reproduce_delete_generation.py --os-cloud NAME`, with
        # OS_CLIENT_CONFIG_FILE naming the server's clouds.yaml; python3 this venv's (openstacksdk)
        env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(server.clouds_yaml),
               "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        env.pop("OS_CLOUD", None)
        command = f"python3 patches/placement/reproduce_delete_generation.py --os-cloud {server.cloud}"
        progress(f"delete_generation: {command} ({'patched' if patched else 'stock'})")
        t = time.perf_counter()
        r = subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        seconds = time.perf_counter() - t
    finally:
        ctx.servers.stop(server)
    if r.returncode == 2 or "Traceback" in r.stderr:
        raise BenchError(f"the reproducer could not run (exit {r.returncode}):\n{r.stdout}\n{r.stderr}")
    expected = 0 if patched else 1
    row = {"placement": ctx.servers.describe(), "exit": r.returncode, "expected": expected,
           "verdict": "reproduced" if r.returncode == 1 else "not reproduced", "s": seconds, "load": loadavg()}
    progress(f"delete_generation: exit {r.returncode} ({row['verdict']}), {seconds:.1f} s")
    table = Table("The delete-generation reproducer (docs/placement-generations.md) against this Placement",
                  [Column("placement", "placement"), Column("exit", "exit"), Column("expected", "expected exit"),
                   Column("verdict", "verdict"), Column("s", "s", "{:.1f}"), Column("load", "load")], [row])
    target = Target(f"reproducer's exit status ({'patched: must not reproduce' if patched else 'stock: reproduces'})",
                    "patched" if patched else "stock", r.returncode, "==", expected)
    notes = [f"command: {command} (OS_CLIENT_CONFIG_FILE: the server's clouds.yaml)",
             "the reproducer's output:\n" + r.stdout.rstrip() + (("\n(stderr)\n" + r.stderr.rstrip())
                                                                    if r.stderr.strip() else "")]
    return Section("delete_generation", "Placement's generations after DELETE /allocations (the reproducer)",
                   [table], [target], notes=notes,
                   data={"row": row, "stdout": r.stdout, "stderr": r.stderr, "command": command, "patched": patched})
