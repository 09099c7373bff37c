"""Why Galera multi-writer answers 409 to disjoint bulk ``POST /allocations`` (issue 47): the smallest sequence.

``posts`` x ``per_post`` root providers (VCPU 64 each, as nova-compute's roots), then ``posts`` bulk ``POST
/allocations`` at microversion 1.28 (minbw's Placement client, one try: no retry of anything), ``concurrency`` at
once, each for ``per_post`` hosts of its own (no other request names them) with ``consumers`` new consumers per
host (VCPU 1 each, ``consumer_generation`` null, one project and one user): no two requests touch one provider or
one consumer. Every answer is counted by
status, Placement error code and Placement's message; then what Placement logged (its retries, the consumers it
deleted after a failed write), Galera's counters per node (certification failures, brute-force aborts) and the
orphans on each node (tests/support/galera/orphans.py). At the end, tests/support/galera/gap_lock.py: the
first step of the mechanism in SQL alone (a gap lock, a brute-force abort).

    .venv/bin/python tests/support/galera/repro_bulk_409.py --mode multi-writer
    .venv/bin/python tests/support/galera/repro_bulk_409.py --mode multi-writer --run wsrep_sync_wait=3
    .venv/bin/python tests/support/galera/repro_bulk_409.py --mode multi-writer --run tx_isolation=READ-COMMITTED
    .venv/bin/python tests/support/galera/repro_bulk_409.py --mode single-writer

Each ``--run`` runs the sequence once more on the same cluster, the MariaDB globals it names (the others at
:data:`DEFAULTS`) set on every node and Placement's API processes restarted first (new connections take them);
``--run default`` is the nodes' defaults. The cluster is this
script's own (free ports, a state directory under /tmp removed at the end unless ``--keep``). The tests
(tests/galera/test_galera.py) call :func:`run` on theirs.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
for p in (ROOT, ROOT / "python"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from tests.support.galera.orphans import count_orphans_on  # noqa: E402

NODES = (1, 2, 3)
# the MariaDB globals a run may set, at the nodes' defaults (galera-node.cnf.in sets neither)
DEFAULTS = {"wsrep_sync_wait": 0, "tx_isolation": "REPEATABLE-READ"}
# Placement 16.0.0's debug lines (placement/objects/allocation.py, placement/handlers/allocation.py)
RETRY = "Retrying allocations write on resource provider generation conflict"
DELETED_AFTER_FAILURE = "after failed allocation"          # "Deleted auto-created consumer with consumer UUID ..."
DELETE_FAILED = "Got an exception when deleting auto-created consumer"
# MariaDB's wsrep_log_conflicts / cert.log_conflicts lines in a node's error log
CONFLICT_LINE = re.compile(r"cluster conflict|conflict detected|BF-BF|Victim thread|cert failure|"
                           r"Certification failed|WSREP: (?:BF|cert)", re.I)


@dataclass
class Result:
    mode: str
    settings: dict                                    # the MariaDB globals the run had
    posts: int
    answers: dict = field(default_factory=dict)       # "204" / "409 placement.concurrent_update: <message>" -> n
    seconds: float = 0.0
    placement_log: dict = field(default_factory=dict)  # what Placement logged during the run
    galera: dict = field(default_factory=dict)         # node -> its counters' increase
    orphans: dict = field(default_factory=dict)        # node -> Orphans as a dict
    conflict_lines: list = field(default_factory=list)  # the nodes' error-log lines about conflicts (first ones)
    # every POST /allocations of the run whose log says more than its status: what Placement logged for it, in
    # order (:func:`story`) -> how many requests
    stories: dict = field(default_factory=dict)

    @property
    def conflicts(self) -> int:
        return sum(n for k, n in self.answers.items() if k.startswith("409"))


POST_STARTED = re.compile(r'\[None (req-[0-9a-f-]+) [^\]]*\] Starting request: \S+ "POST /allocations"')
DB_RETRY = "Performing DB retry for function placement.objects.allocation._set_allocations"


def story(log: str, request_id: str) -> str:
    """What Placement logged for one request, as a sequence: ``deadlock`` (oslo.db caught MySQL error 1213 in
    ``_set_allocations`` and runs it again), ``rp-generation`` (replace_all's retry on a provider generation
    conflict, the providers re-read), ``consumers-deleted`` (the consumers the request created, deleted after its
    write failed), then ``status NNN``."""
    events = []
    for line in log.splitlines():
        if request_id not in line:
            continue
        if DB_RETRY in line:
            events.append("deadlock")
        elif RETRY in line:
            events.append("rp-generation")
        elif DELETED_AFTER_FAILURE in line:
            if not events or events[-1] != "consumers-deleted":
                events.append("consumers-deleted")
        elif m := re.search(r'"POST /allocations" status: (\d+)', line):
            events.append(f"status {m.group(1)}")
    return " > ".join(events)


def make_hosts(api, names: list[str]) -> list[str]:
    """A root provider per name with nova-compute's VCPU inventory; their UUIDs."""
    uuids = []
    for name in names:
        rp = api.create_provider(str(uuid.uuid4()), name, None)
        api.set_inventories(rp.uuid, {"VCPU": {"total": 64, "allocation_ratio": 4.0}}, rp.generation)
        uuids.append(rp.uuid)
    return uuids


COUNTERS = ("wsrep_local_cert_failures", "wsrep_local_bf_aborts", "wsrep_local_commits", "wsrep_local_replays")


def counters(galera) -> dict[int, dict[str, int]]:
    out = {}
    for n in NODES:
        if galera.node_alive(n):
            w = galera.wsrep(n)
            out[n] = {k: int(w.get(k, 0)) for k in COUNTERS}
    return out


def run(galera, *, per_post: int = 5, consumers: int = 20, posts: int = 40,
        concurrency: int = 4, settings: dict | None = None, tag: str = "", cleanup: bool = True) -> Result:
    """The sequence on a running GaleraPlacement (``settings``: MariaDB globals set first, the others of
    :data:`DEFAULTS` with them; None leaves the nodes as they are). ``cleanup``: afterwards (once the orphans are
    counted) the allocations written are removed, by bulk POSTs of empty allocations, and the providers deleted."""
    from minbw.errors import PlacementError
    from minbw.placement.client import Placement, RetryPolicy

    if settings is not None:
        galera.set_globals({**DEFAULTS, **settings})
    current = dict(zip(DEFAULTS, galera.sql(1, "SELECT " + ", ".join(f"@@GLOBAL.{k}" for k in DEFAULTS))
                       .strip().split("\t")))
    api = Placement(galera.connect(), retry=RetryPolicy(attempts=1))
    prefix = f"repro{tag}-{uuid.uuid4().hex[:6]}"
    names = [f"{prefix}-{i:04d}" for i in range(posts * per_post)]
    with ThreadPoolExecutor(concurrency) as pool:   # the roots, ``concurrency`` at once (not counted)
        roots = [rp for chunk in pool.map(lambda i: make_hosts(Placement(galera.connect()), names[i::concurrency]),
                                          range(concurrency)) for rp in chunk]
    groups = [roots[i:i + per_post] for i in range(0, len(roots), per_post)]
    logs0 = {a: len(galera.placement_log(a)) for a in (1, 2)}
    errlogs0 = {n: len(galera.node_log(n)) for n in NODES}
    c0 = counters(galera)
    answers: Counter = Counter()
    written: list[list[str]] = []   # the consumers of each request answered 204
    lock = threading.Lock()
    local = threading.local()

    def post(i: int) -> None:
        if not hasattr(local, "api"):   # one connection (keystoneauth session) per thread
            local.api = Placement(galera.connect(), retry=RetryPolicy(attempts=1))
        group = groups[i]   # request i: hosts of its own, new consumers
        bodies = {str(uuid.uuid4()): {"allocations": {rp: {"resources": {"VCPU": 1}}},
                                      "project_id": "repro", "user_id": "repro", "consumer_generation": None}
                  for rp in group for _ in range(consumers)}
        try:
            local.api.post_allocations(bodies)
            key = "204"
            with lock:
                written.append(list(bodies))
        except PlacementError as e:
            key = f"{e.status} {e.code}: {e.detail.strip()[:200]}"
        with lock:
            answers[key] += 1

    t0 = time.time()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(post, range(posts)))
    seconds = time.time() - t0
    c1 = counters(galera)
    logs = "".join(galera.placement_log(a)[logs0[a]:] for a in (1, 2))
    conflict_lines = []
    for n in NODES:
        for line in galera.node_log(n)[errlogs0[n]:].splitlines():
            if CONFLICT_LINE.search(line):
                conflict_lines.append(f"node{n}: {line.strip()}")
    alive = [n for n in NODES if galera.node_alive(n)]
    result = Result(
        mode=galera.mode, settings=current, posts=posts, answers=dict(answers), seconds=round(seconds, 1),
        placement_log={"retries": logs.count(RETRY),
                       "consumers_deleted_after_failure": logs.count(DELETED_AFTER_FAILURE),
                       "consumer_deletes_failed": logs.count(DELETE_FAILED),
                       "deadlocks": len(re.findall(r"\(1213,", logs))},
        galera={n: {k: c1[n][k] - c0.get(n, {}).get(k, 0) for k in COUNTERS} for n in c1},
        orphans={n: asdict(o) for n, o in zip(alive, count_orphans_on([galera.db_url(n) for n in alive]))},
        conflict_lines=conflict_lines[:40],
        stories=dict(Counter(s for r in POST_STARTED.findall(logs) if (s := story(logs, r)) != "status 204")))
    if cleanup:
        remove(api, written, roots)
    return result


def remove(api, written: list[list[str]], roots: list[str]) -> None:
    """Each request's consumers' allocations removed in one POST (empty allocations at their generation, 1: one
    write made them), tried again on a 409 (this page's 409 meets these too), then the providers deleted."""
    from minbw.errors import ConcurrentUpdate
    for consumers in written:
        body = {c: {"allocations": {}, "project_id": "repro", "user_id": "repro", "consumer_generation": 1}
                for c in consumers}
        for attempt in range(1, 6):
            try:
                api.post_allocations(body)
                break
            except ConcurrentUpdate:
                if attempt == 5:
                    raise
                time.sleep(0.2 * attempt)
    for rp in roots:
        api.delete_provider(rp)


def said(i: int, r: Result) -> str:
    """A run in one line: its settings, the answers, what Placement and Galera did, the orphans."""
    settings = ", ".join(f"{k}={v}" for k, v in r.settings.items())
    answers = ", ".join(f"{n} x {k.split(':')[0]}" for k, n in sorted(r.answers.items()))
    aborts = sum(c["wsrep_local_bf_aborts"] for c in r.galera.values())
    failures = sum(c["wsrep_local_cert_failures"] for c in r.galera.values())
    orphans = sum(sum(o.values()) for o in r.orphans.values())
    return (f"run {i} ({settings}): {r.posts} bulk POST /allocations in {r.seconds} s: {answers}; Placement: "
            f"{r.placement_log['deadlocks']} deadlock lines, {r.placement_log['retries']} provider-generation "
            f"retries, {r.placement_log['consumers_deleted_after_failure']} consumers deleted after a failed write; "
            f"Galera: {aborts} brute-force aborts, {failures} certification failures; {orphans} orphans")


def gap_lock(galera) -> dict:
    """tests/support/galera/gap_lock.py on nodes 1 and 2 (in the mini-cloud's venv, which has PyMySQL)."""
    import subprocess
    from tests.support.galera.orphans import CLOUD_PYTHON
    r = subprocess.run([str(CLOUD_PYTHON), str(Path(__file__).with_name("gap_lock.py")), galera.db_url(1),
                        galera.db_url(2)], capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise RuntimeError(f"gap_lock.py failed: {r.stderr[-3000:]}")
    return json.loads(r.stdout)


def parse_settings(spec: str) -> dict:
    """``NAME=VALUE[,NAME=VALUE]`` of :data:`DEFAULTS`' names (ValueError naming what is wrong)."""
    out = {}
    for part in spec.split(","):
        name, sep, value = part.partition("=")
        if not sep or name not in DEFAULTS:
            raise ValueError(f"--run {spec!r}: expected NAME=VALUE with NAME one of {sorted(DEFAULTS)}")
        out[name] = int(value) if isinstance(DEFAULTS[name], int) else value
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("single-writer", "multi-writer"), default="multi-writer")
    ap.add_argument("--run", action="append", metavar="NAME=VALUE[,NAME=VALUE]",
                    help="one run with these MariaDB globals (the others at their defaults); 'default': none; "
                         "repeat for more runs on the same cluster (default: one run, 'default')")
    ap.add_argument("--per-post", type=int, default=5, help="hosts per request, none shared with another")
    ap.add_argument("--consumers", type=int, default=20, help="new consumers per host and request")
    ap.add_argument("--posts", type=int, default=40)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--patched", action="store_true",
                    help="Placement with patches/placement/*.patch (GaleraPlacement's patched)")
    ap.add_argument("--keep", action="store_true", help="keep the cluster's state directory (logs)")
    ap.add_argument("--json-out", type=Path)
    a = ap.parse_args(argv)
    from tests.support.galera.server import GaleraPlacement, state_dir_for
    galera = GaleraPlacement(state_dir_for("minbw-repro409-"), mode=a.mode, patched=a.patched)
    results = []
    try:
        galera.start()
        print(f"{galera.describe()}; state {galera.state_dir}", flush=True)
        for i, spec in enumerate(a.run or ["default"]):
            settings = dict(DEFAULTS) if spec == "default" else parse_settings(spec)
            r = run(galera, per_post=a.per_post, consumers=a.consumers, posts=a.posts,
                    concurrency=a.concurrency, settings=None if i == 0 and spec == "default" else settings,
                    tag=str(i))
            results.append(r)
            print(said(i + 1, r), flush=True)
            print(json.dumps({**asdict(r), "conflicts": r.conflicts}), flush=True)
        locks = gap_lock(galera)
        for name, got in locks.items():
            print(f"gap lock, {name}: " + ", ".join(f"{k} {v}" for k, v in got.items()), flush=True)
        print(json.dumps({"gap_lock": locks}), flush=True)
    finally:
        galera.stop()
        if not a.keep:
            shutil.rmtree(galera.state_dir, ignore_errors=True)
    if a.json_out:
        a.json_out.write_text(json.dumps([{**asdict(r), "conflicts": r.conflicts} for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
