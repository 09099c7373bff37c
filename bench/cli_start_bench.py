"""Section ``cli_start``: the command line's start (issue 46 item 4), ``minbw --help`` and ``minbw usage show``
beside the peer ``openstack resource provider list`` (osc-placement), each a fresh process against the same embedded
Placement holding 10 providers with inventory, measured in the same run, interleaved (one of each in turn), after
two runs of each that are not counted (Python's bytecode and stevedore's entry-point cache written; the commands run
without ``PYTHONDONTWRITEBYTECODE``, as users run them).

Wall seconds (best and median of ``RUNS``) and the CPU seconds of the process (user + system, median): on a shared
machine the wall time waits for a CPU, the CPU time less so. The ratio is the median wall time over the peer's.
The peer needs osc-placement installed beside python-openstackclient (``pip install osc-placement``); without it the
section says so and times minbw's commands alone. Standalone: ``python bench/cli_start_bench.py [RUNS]``.
"""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Column, Section, Table, Target, progress  # noqa: E402

RUNS = 10
WARMUPS = 2
PROVIDERS = 10
GOAL_S = 0.3  # issue 46: --help and usage show within 0.3 s
BIN = Path(sys.executable).parent


def commands() -> dict[str, list[str]]:
    """The timed commands by label; the peer's label is ``peer``."""
    return {"minbw --help": [str(BIN / "minbw"), "--help"],
            "minbw usage show": [str(BIN / "minbw"), "usage", "show"],
            "peer": [str(BIN / "openstack"), "resource", "provider", "list"]}


def populate(server) -> None:
    """``PROVIDERS`` providers with a VCPU and MEMORY_MB inventory, through the raw API."""
    conn = server.connect()
    for i in range(PROVIDERS):
        rp = str(uuid.uuid4())
        conn.placement.post("/resource_providers", json={"name": f"host{i:02d}", "uuid": rp},
                            microversion="1.20").raise_for_status()
        conn.placement.put(f"/resource_providers/{rp}/inventories", json={
            "resource_provider_generation": 0,
            "inventories": {"VCPU": {"total": 64}, "MEMORY_MB": {"total": 262144}}}).raise_for_status()


def once(argv: list[str], env: dict, cwd: Path) -> tuple[float, float, subprocess.CompletedProcess]:
    """One run: wall seconds, the child's CPU seconds (user + system), the process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc


def measure(env: dict, cwd: Path, runs: int | None = None) -> tuple[list[dict], str | None]:
    """One row per command (label, runs, best/median wall, median CPU, ratio to the peer) and why the peer was left
    out (None: it ran). Raises RuntimeError when one of minbw's commands fails."""
    runs = runs or RUNS
    # as users run them: bytecode written by the runs not counted and read by the others (PYTHONDONTWRITEBYTECODE,
    # set in some shells and CI, makes every start compile the modules whose bytecode is missing or stale)
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmds = commands()
    peer = once(cmds["peer"], env, cwd)[2]
    missing = None
    if peer.returncode != 0 or "host00" not in peer.stdout:
        missing = (f"the peer `openstack resource provider list` did not run (exit {peer.returncode}: "
                   f"{(peer.stderr.strip().splitlines() or [''])[-1][:160]}); osc-placement installed?")
        del cmds["peer"]
    times: dict[str, list[tuple[float, float]]] = {label: [] for label in cmds}
    for i in range(WARMUPS + runs):
        for label, argv in cmds.items():
            wall, cpu, proc = once(argv, env, cwd)
            if proc.returncode != 0 or not proc.stdout:
                raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-400:]}")
            if label == "minbw usage show" and "host00" not in proc.stdout:
                raise RuntimeError(f"usage show did not list the providers: {proc.stdout[:400]}")
            if i >= WARMUPS:
                times[label].append((wall, cpu))
    rows = []
    for label, ts in times.items():
        walls = [w for w, _c in ts]
        rows.append({"command": " ".join(["openstack resource provider list"] if label == "peer" else [label]),
                     "label": label, "runs": len(ts), "best_s": min(walls), "median_s": statistics.median(walls),
                     "cpu_s": statistics.median(c for _w, c in ts)})
    peer_row = next((r for r in rows if r["label"] == "peer"), None)
    for r in rows:
        r["ratio"] = r["median_s"] / peer_row["median_s"] if peer_row else None
        r["cpu_ratio"] = r["cpu_s"] / peer_row["cpu_s"] if peer_row else None
        progress(f"cli_start: {r}")
    return rows, missing


def run(ctx) -> Section:
    server = ctx.servers.start("cli_start")
    populate(server)
    cwd = ctx.state_dir / "cli_start-cwd"
    cwd.mkdir(exist_ok=True)
    rows, missing = measure(server.env(), cwd)
    ctx.servers.stop(server)
    table = Table(f"the command line's start: fresh processes, the embedded Placement with {PROVIDERS} providers, "
                  f"{RUNS} runs each (interleaved, after {WARMUPS} not counted)", [
                      Column("command", "command"), Column("best_s", "best s", "{:.3f}"),
                      Column("median_s", "median s", "{:.3f}"), Column("cpu_s", "CPU s (median)", "{:.3f}"),
                      Column("ratio", "÷ peer (median wall)", "{:.2f}×"),
                      Column("cpu_ratio", "÷ peer (CPU)", "{:.2f}×")], rows)
    targets = [Target(f"{r['label']} (median wall)", f"{PROVIDERS} providers", r["median_s"], "<=", GOAL_S, "s")
               for r in rows if r["label"] != "peer"]
    notes = [missing] if missing else []
    notes.append(f"Python {sys.version.split()[0]}; {os.cpu_count()} CPUs; the wall time includes waiting for a CPU "
                 "on a shared machine (the CPU column does not)")
    return Section("cli_start", "The command line's start (issue 46)", [table], targets, notes, data={"rows": rows})


if __name__ == "__main__":
    import tempfile

    from bench.common import Context, Servers

    with tempfile.TemporaryDirectory(prefix="minbw-cli-start-") as tmp:
        servers = Servers(Path(tmp))
        ctx = Context(sizes=[PROVIDERS], servers=servers, state_dir=Path(tmp))
        if len(sys.argv) > 1:
            RUNS = int(sys.argv[1])
        try:
            print(run(ctx).render())
        finally:
            servers.stop_all()
