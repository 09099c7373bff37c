"""The guarantee on the Galera Placement, measured (docs/galera.md): rounds of N concurrent ``minbw allocation create``
processes (3 claims each, all starting at one instant, for twice the bandwidth there is on 2 hosts), on the Galera
Placement in one mode or, for the single-node figure beside it, on the production-style Placement
(tests/support/prodplacement: one uWSGI server, one MariaDB), in the same conditions.

Per claimer count: providers over capacity after each round (goal 0: minbw's claims verify what they wrote), claims
accepted (exit 0), refused (exit 4: no valid host), failed (any other exit), writes accepted over capacity and
undone by minbw, claims per second (the round's claims over its wall time); and what Galera's certification did to
Placement's retry loop: from Placement's logs (allocation writes retried on a generation conflict, retry limits
exhausted, oslo.db's deadlock retries, log lines naming a deadlock, HTTP 500 answers) and Galera's counters
(wsrep_local_cert_failures, wsrep_local_bf_aborts).

    .venv/bin/python tests/support/galera/sweep.py --target galera --mode single-writer [--patched]
    .venv/bin/python tests/support/galera/sweep.py --target prod [--patched]
    .venv/bin/python tests/support/galera/sweep.py --target galera --mode single-writer --kill-node --claimers 16 32

With ``--kill-node`` a Galera node is killed (kill -9) in each round, as soon as the round's first claim is in
Placement (single-writer: node 1, the one HAProxy sends every connection to; multi-writer: node 2) and started again after the round (it rejoins by IST or
SST before the next one); every claim is then read back (tests/galera/test_galera.py's ``tally``: each accepted
claim holds exactly its bandwidth, each refused one nothing, each failed one said its cause in one line and, if its
consumer holds an allocation, that its write may have been applied). The row adds the failures' messages and how
the node rejoined.

Prints one Markdown table row per claimer count (and appends it to --out when given). Starts and stops its own
servers on free ports; runs as root (the Galera Placement's set-up: apt, rsync as nobody).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from minbw.ops import claims  # noqa: E402
from minbw.placement.client import Placement  # noqa: E402
from tests.conftest import wipe  # noqa: E402
from tests.prodplacement.test_prod_placement import (FLAVOR, KBPS, PORT_ID, _cli_claimer, make_hosts,  # noqa: E402
                                                     no_overcommit, request_json)

HEADER = ("| system | claimers | rounds | over capacity after each round | accepted | refused | failed | undone | "
          "claims/s per round | Placement: retries / limit / db retries / deadlock lines / 500 | "
          "Galera: cert failures / bf aborts |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def counts(server) -> tuple[dict, dict]:
    if hasattr(server, "log_counts"):
        return server.log_counts(), server.certification()
    text = (server.state_dir / "log" / "placement.log").read_text(errors="replace")
    from tests.support.galera.server import DB_RETRY, DEADLOCK, RETRY, RETRY_LIMIT
    req = (server.state_dir / "log" / "placement.out").read_text(errors="replace")
    import re
    return ({"retries": text.count(RETRY), "retry_limit": text.count(RETRY_LIMIT), "db_retries": text.count(DB_RETRY),
             "deadlocks": sum(1 for line in text.splitlines() if DEADLOCK.search(line)),
             "http_500": len(re.findall(r"\(HTTP/1\.[01] 5\d\d\)", req)), "requests": 0}, {})


KILL_HEADER = ("| system | claimers | rounds | node killed in each round (after its first claim), s in | over capacity after each round | "
               "accepted | refused | failed | failed claims holding an allocation | the failures' messages (count) | "
               "Placement's 500s | claims/s per round | node rejoined by, in s |\n| --- | --- | --- | --- | --- | --- | "
               "--- | --- | --- | --- | --- | --- | --- |")


def sweep(server, claimer_counts, rounds, pool, tmp: Path, name: str, out: Path | None,
          kill: int | None = None) -> None:
    api = Placement(server.connect())
    port = request_json(tmp)
    args = ["--project-id", "p", "--user-id", "u", *FLAVOR, "--port-request", f"{PORT_ID}={port}"]
    if kill:
        return kill_sweep(server, api, claimer_counts, rounds, pool, args, name, out, kill)
    print(HEADER, flush=True)
    for n in claimer_counts:
        wipe(api)
        demand = 3 * n
        fits = demand // 2
        make_hosts(api, ["sweep-0", "sweep-1"], fits // 2 * KBPS)
        logs0, cert0 = counts(server)
        over, rates, acc, ref, fail, undone = [], [], 0, 0, 0, 0
        for rnd in range(rounds):
            consumers = [str(uuid.uuid4()) for _ in range(demand)]
            start_at = time.time() + (8 if rnd == 0 else 3)
            jobs = [(str(server.clouds_yaml), server.cloud, consumers[i::n], start_at, args) for i in range(n)]
            results = [r for chunk in pool.map(_cli_claimer, jobs, chunksize=1) for r in chunk]
            rates.append(demand / (time.time() - start_at))
            over.append(len(no_overcommit(api)))
            for c, rc, stdout, err in results:
                acc += rc == 0
                ref += rc == 4
                fail += rc not in (0, 4)
                if rc not in (0, 4):
                    last = (err.strip().splitlines() or ["(no stderr)"])[-1]
                    print(f"  failed claim, exit {rc}: {last[:300]}", file=sys.stderr, flush=True)
                try:
                    undone += sum(a["outcome"] == claims.UNDONE for a in json.loads(stdout)["attempts"])
                except (ValueError, KeyError, TypeError):
                    pass
            for c, rc, _, _ in results:
                if rc == 0:
                    claims.free_allocations(api, c)
        logs1, cert1 = counts(server)
        lg = "/".join(str(logs1[k] - logs0[k]) if cert1 or k in ("deadlocks", "http_500") else "n/a"  # debug off
                      for k in ("retries", "retry_limit", "db_retries", "deadlocks", "http_500"))
        ct = "/".join(str(cert1[k] - cert0[k]) for k in cert1) if cert1 else "-"
        row = (f"| {name} | {n} | {rounds} | {' '.join(map(str, over))} | {acc} | {ref} | {fail} | {undone} | "
               f"{' '.join(f'{r:.1f}' for r in rates)} | {lg} | {ct} |")
        print(row, flush=True)
        if out:
            with out.open("a") as f:
                f.write(row + "\n")


def kill_sweep(server, api, claimer_counts, rounds, pool, args, name: str, out: Path | None, victim: int) -> None:
    """:func:`sweep`'s rounds with Galera node ``victim`` killed in each, once its first claim is in Placement, and
    started again after it."""
    from tests.galera.test_galera import tally
    print(KILL_HEADER, flush=True)
    for n in claimer_counts:
        wipe(api)
        demand = 3 * n
        make_hosts(api, ["sweep-0", "sweep-1"], demand // 2 // 2 * KBPS)
        roots = [p.uuid for h in ("sweep-0", "sweep-1") for p in api.list_providers(name=h)]
        logs0, _ = counts(server)
        over, rates, rejoins, messages, kills = [], [], [], {}, []
        total = {"accepted": 0, "refused": 0, "failed": 0, "leftover": 0}
        for rnd in range(rounds):
            consumers = [str(uuid.uuid4()) for _ in range(demand)]
            start_at = time.time() + (8 if rnd == 0 else 3)
            jobs = [(str(server.clouds_yaml), server.cloud, consumers[i::n], start_at, args) for i in range(n)]
            pending = pool.map_async(_cli_claimer, jobs, chunksize=1)
            time.sleep(max(0.0, start_at - time.time()))
            # the kill lands in the storm: once the first claim is in Placement (the claimers' Python takes
            # seconds to start on 2 cores; a fixed delay can kill the node before any claim reaches it)
            end = time.time() + 120
            while time.time() < end and not any(any(api.provider_usages(r).values()) for r in roots):
                time.sleep(0.2)
            server.kill_node(victim)
            kills.append(time.time() - start_at)
            results = [r for chunk in pending.get(timeout=900) for r in chunk]
            rates.append(demand / (time.time() - start_at))
            over.append(len(no_overcommit(api)))
            got = tally(api, results)  # raises on a claim that broke its promise
            for k in total:
                total[k] += got[k]
            for m, c in got["messages"].items():
                messages[m] = messages.get(m, 0) + c
            for c, rc, _, _ in results:
                if rc != 4:
                    claims.free_allocations(api, c)
            since = len(server.node_log(victim))
            t = time.time()
            server.start_node(victim)
            rejoins.append(f"{server.rejoined_by(victim, since)} {time.time() - t:.0f}")
        logs1, _ = counts(server)
        said = "; ".join(f"{m.removeprefix('minbw: error: ')} ({c})" for m, c in messages.items()) or "-"
        row = (f"| {name} | {n} | {rounds} | node {victim}, {', '.join(f'{k:.1f}' for k in kills)} s in | "
               f"{' '.join(map(str, over))} | {total['accepted']} | "
               f"{total['refused']} | {total['failed']} | {total['leftover']} | {said} | "
               f"{logs1['http_500'] - logs0['http_500']} | {' '.join(f'{r:.1f}' for r in rates)} | "
               f"{', '.join(rejoins)} |")
        print(row, flush=True)
        if out:
            with out.open("a") as f:
                f.write(row + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", choices=["galera", "prod"], default="galera")
    p.add_argument("--mode", choices=["single-writer", "multi-writer"], default="single-writer")
    p.add_argument("--patched", action="store_true", help="Placement with patches/placement/*.patch")
    p.add_argument("--claimers", type=int, nargs="+", default=[8, 16, 32])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", type=Path, help="append the rows to this file")
    p.add_argument("--kill-node", action="store_true",
                   help="with --target galera: kill a node in each round once its first claim is in Placement, start "
                        "it again after the round")
    a = p.parse_args(argv)
    if a.kill_node and a.target != "galera":
        p.error("--kill-node needs --target galera")
    from tests.support.galera.server import GaleraPlacement, state_dir_for
    state = state_dir_for("minbw-sweep-")
    if a.target == "galera":
        server = GaleraPlacement(state, mode=a.mode, patched=a.patched)
        name = f"Galera {a.mode}, {'patched' if a.patched else 'stock'}"
    else:
        from tests.support.prodplacement.server import ProdPlacement
        server = ProdPlacement(state, workers=4, patched=a.patched)
        name = f"single MariaDB, {'patched' if a.patched else 'stock'}"
    t0 = time.time()
    try:
        server.start()
        print(f"{server.describe()}: up in {time.time() - t0:.0f} s", flush=True)
        with multiprocessing.get_context("spawn").Pool(max(a.claimers)) as pool:
            sweep(server, a.claimers, a.rounds, pool, state, name, a.out,
                  kill=(1 if a.mode == "single-writer" else 2) if a.kill_node else None)
    finally:
        server.stop()
        shutil.rmtree(state, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
