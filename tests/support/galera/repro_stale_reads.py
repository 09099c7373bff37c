"""Does a Galera writer node serve stale reads after it was paused past its eviction and continued? (issue 47)

The Galera soak's violations fell within seconds after the paused writer, node 1 (SIGSTOP), was continued (SIGCONT)
while HAProxy, whose check of the mariadb members was a TCP connect, kept it UP. This script replays that fault on a
cluster of its own (tests/support/galera/server.py: free ports, a state directory under /tmp removed at the end
unless ``--keep``) with SQL alone, and records what every reader saw:

- a table ``minbw_probe`` of one row; a writer connected to node 2 directly (a survivor) adds 1 to it every 0.1 s
  and records when each value was acknowledged (its commit returned);
- readers every 0.05 s (each read with the session's ``wsrep_sync_wait`` set as Placement's connections have it,
  galera.sh's GALERA_SYNC_WAIT): ``pool`` (one connection through HAProxy's mariadb frontend, kept open and opened again
  after an error, as Placement's connection pool), ``new`` (a new connection through HAProxy for each read) and
  ``node1`` (one connection to node 1's port, kept); each read records the value, the node that served it
  (``@@wsrep_node_name``) or the error;
- a sampler every 0.2 s: each node's ``wsrep_local_state_comment``, ``wsrep_cluster_status``, ``wsrep_ready``,
  ``wsrep_last_committed`` (its socket, 0.5 s timeouts: a stopped node does not answer) and HAProxy's status of
  each member.

The sequence: ``--warm`` seconds, SIGSTOP of node 1's mariadbd, SIGCONT ``--pause`` seconds later (12 s: the soak's
PAUSE_AT_LEAST, past the others' eviction of it at about 5 s), then ``--after`` seconds. A read is **stale** when
its value is below one the writer had acknowledged before the read was sent, by more than ``--lag`` seconds (a
Galera node applies others' writes a little later than they commit even when all is well: causal reads need
``wsrep_sync_wait``). The summary: per reader, reads, errors and stale reads (when, how stale, from which node),
the state transitions of each node and of HAProxy's view, node 1's WSREP log lines after the SIGCONT.

    .venv-cloud/bin/python tests/support/galera/repro_stale_reads.py --db-check tcp
    .venv-cloud/bin/python tests/support/galera/repro_stale_reads.py --db-check clustercheck
    .venv-cloud/bin/python tests/support/galera/repro_stale_reads.py --db-check tcp --sync-wait 1

(``--db-check``, ``--sync-wait``: galera.sh's GALERA_DB_CHECK and GALERA_SYNC_WAIT.) It needs PyMySQL: the
mini-cloud's venv (.venv-cloud) has it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pymysql  # noqa: E402  (the mini-cloud's venv)

from tests.support.galera.server import NODES, GaleraPlacement, state_dir_for  # noqa: E402

STATUS = ("wsrep_local_state_comment", "wsrep_cluster_status", "wsrep_ready", "wsrep_last_committed",
          "wsrep_cluster_size")


@dataclass
class Read:
    reader: str
    sent: float          # seconds from the start
    done: float
    value: int | None
    node: str | None
    error: str | None


@dataclass
class Summary:
    settings: dict
    events: dict = field(default_factory=dict)          # stop, cont: seconds from the start
    readers: dict = field(default_factory=dict)         # reader -> counts and its stale reads
    transitions: list = field(default_factory=list)     # (t, what, state) when a node's or HAProxy's state changed
    writes: dict = field(default_factory=dict)
    node1_log: list = field(default_factory=list)


class Clock:
    def __init__(self):
        self.t0 = time.monotonic()

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 3)


def connect(galera: GaleraPlacement, *, node: int | None = None, timeout: float = 1.0, causal: bool = True):
    """placement's user, through HAProxy (node None) or to node ``node``'s port, as Placement's connections are made
    (the cluster's GALERA_SYNC_WAIT as the session's wsrep_sync_wait, ``causal`` False: MariaDB's default);
    autocommit: each read its own snapshot. A causal read may wait as long as the cluster takes to answer it: 10 s
    of read timeout then."""
    port = galera.db_port if node is None else galera.node_ports[node - 1]
    sync_wait = galera.setting("GALERA_SYNC_WAIT") if causal else "0"
    init = f"SET SESSION wsrep_sync_wait = {int(sync_wait)}" if sync_wait not in ("0", "unknown") else None
    read = 10.0 if init else timeout
    return pymysql.connect(host="127.0.0.1", port=port, user="placement", password="galera-db", database="placement",
                           connect_timeout=timeout, read_timeout=read, write_timeout=timeout, autocommit=True,
                           init_command=init)


def placement_sync_wait(galera: GaleraPlacement) -> str:
    """The wsrep_sync_wait of a session made as Placement makes its own: oslo.db's engine of the ``connection`` of
    API process 1's placement.conf (galera.sh puts GALERA_SYNC_WAIT there as pymysql's init_command)."""
    from oslo_db.sqlalchemy import engines

    conf = (galera.state_dir / "etc" / "placement-1" / "placement.conf").read_text()
    url = next(line.split("=", 1)[1].strip() for line in conf.splitlines() if line.startswith("connection ="))
    engine = engines.create_engine(url)
    try:
        with engine.connect() as c:
            return str(c.exec_driver_sql("SELECT @@session.wsrep_sync_wait").scalar())
    finally:
        engine.dispose()


def node_status(galera: GaleraPlacement, n: int) -> dict[str, str] | str:
    try:
        c = pymysql.connect(unix_socket=str(galera.state_dir / "run" / f"mysql-{n}.sock"), user="root",
                            connect_timeout=0.5, read_timeout=0.5)
    except pymysql.MySQLError as e:
        return f"no answer ({type(e).__name__})"
    try:
        with c.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN (%s)" % ",".join(["%s"] * len(STATUS)), STATUS)
            return dict(cur.fetchall())
    except pymysql.MySQLError as e:
        return f"no answer ({type(e).__name__})"
    finally:
        c.close()


def run(galera: GaleraPlacement, *, warm: float = 3.0, pause: float = 12.0, after: float = 20.0,
        lag: float = 0.5) -> Summary:
    """The sequence on a running cluster (single-writer: node 1 the writer); its summary."""
    clock = Clock()
    sync_wait = placement_sync_wait(galera)
    galera.sql(1, "CREATE TABLE IF NOT EXISTS placement.minbw_probe (id INT PRIMARY KEY, v BIGINT NOT NULL); "
                  "REPLACE INTO placement.minbw_probe VALUES (1, 0), (2, 0)")
    time.sleep(1)   # replicated everywhere before the first read
    stop = threading.Event()
    reads: list[Read] = []
    acks: list[tuple[float, int]] = []      # (acknowledged at, value)
    acks1: list[tuple[float, str]] = []     # row 2's increments through HAProxy: (acknowledged at, node)
    samples: list[tuple[float, str, str]] = []
    lock = threading.Lock()

    def writer():
        c = None
        while not stop.is_set():
            try:
                if c is None:
                    c = connect(galera, node=2, causal=False)
                with c.cursor() as cur:
                    cur.execute("UPDATE minbw_probe SET v = v + 1 WHERE id = 1")
                    cur.execute("SELECT v FROM minbw_probe WHERE id = 1")
                    v = cur.fetchone()[0]
                with lock:
                    acks.append((clock.now(), v))
            except pymysql.MySQLError:
                c = None
            time.sleep(0.1)

    def writer1():
        """Row 2 through HAProxy (node 1, the writer), a connection kept as Placement's pool keeps it: each commit
        acknowledged is counted; at the end the survivors' row must hold at least as many."""
        c = None
        while not stop.is_set():
            try:
                if c is None:
                    c = connect(galera, causal=False)
                with c.cursor() as cur:
                    cur.execute("UPDATE minbw_probe SET v = v + 1 WHERE id = 2")
                    cur.execute("SELECT @@wsrep_node_name")
                    served = cur.fetchone()[0]
                with lock:
                    acks1.append((clock.now(), served))
            except (pymysql.MySQLError, OSError):
                try:
                    if c is not None:
                        c.close()
                except Exception:
                    pass
                c = None
            time.sleep(0.1)

    def reader(name: str, node: int | None, keep: bool):
        c = None
        while not stop.is_set():
            sent = clock.now()
            value = served = err = None
            try:
                if c is None:
                    c = connect(galera, node=node)
                with c.cursor() as cur:
                    cur.execute("SELECT v, @@wsrep_node_name FROM minbw_probe WHERE id = 1")
                    value, served = cur.fetchone()
            except (pymysql.MySQLError, OSError) as e:
                err = f"{type(e).__name__} {e.args[0] if e.args else ''}"[:80]
                try:
                    if c is not None:
                        c.close()
                except Exception:
                    pass
                c = None
            if not keep and c is not None:
                c.close()
                c = None
            with lock:
                reads.append(Read(name, sent, clock.now(), value, served, err))
            time.sleep(0.05)

    def sampler():
        while not stop.is_set():
            t = clock.now()
            for n in NODES:
                s = node_status(galera, n)
                state = s if isinstance(s, str) else (
                    f"{s.get('wsrep_local_state_comment')}/{s.get('wsrep_cluster_status')}/"
                    f"ready {s.get('wsrep_ready')}/size {s.get('wsrep_cluster_size')}")
                samples.append((t, f"node{n}", state))
                if not isinstance(s, str):
                    samples.append((t, f"node{n} last_committed", s.get("wsrep_last_committed", "")))
            try:
                servers = galera.haproxy_servers()
                for n in NODES:
                    row = servers[("mariadb", f"node{n}")]
                    samples.append((t, f"haproxy node{n}", f"{row['status']} ({row.get('check_status')})"))
            except OSError as e:
                samples.append((t, "haproxy", f"stats: {e}"))
            time.sleep(max(0.0, 0.2 - (clock.now() - t)))

    threads = [threading.Thread(target=writer, daemon=True), threading.Thread(target=writer1, daemon=True),
               threading.Thread(target=sampler, daemon=True),
               threading.Thread(target=reader, args=("pool", None, True), daemon=True),
               threading.Thread(target=reader, args=("new", None, False), daemon=True),
               threading.Thread(target=reader, args=("node1", 1, True), daemon=True)]
    for t in threads:
        t.start()
    log_at = len(galera.node_log(1))
    pid = galera.pid("galera-1")
    time.sleep(warm)
    t_stop = clock.now()
    os.kill(pid, signal.SIGSTOP)
    time.sleep(pause)
    t_cont = clock.now()
    os.kill(pid, signal.SIGCONT)
    time.sleep(after)
    stop.set()
    for t in threads:
        t.join(timeout=5)
    time.sleep(2)
    kept = {n: int(galera.sql(n, "SELECT v FROM placement.minbw_probe WHERE id = 2").strip()) for n in NODES}
    galera.sql(2, "DROP TABLE IF EXISTS placement.minbw_probe")
    s = summarise(galera.describe(), reads, acks, samples, t_stop, t_cont, lag, galera.node_log(1)[log_at:])
    s.settings["placement_session_wsrep_sync_wait"] = sync_wait
    # acknowledged increments of row 2 (through HAProxy, without causal reads: a write's own reads are what
    # wsrep_sync_wait would hold) and what each node holds at the end: fewer held than acknowledged is a lost write
    s.writes["through_haproxy"] = {
        "acknowledged": len(acks1),
        "acknowledged_in_window": sum(1 for t, _ in acks1 if t_cont - 1 <= t <= t_cont + 8),
        "acknowledged_by": {n: sum(1 for _, m in acks1 if m == n) for n in sorted({m for _, m in acks1})},
        "held_at_end": kept, "lost": len(acks1) - min(kept.values())}
    return s


def acked_before(acks: list[tuple[float, int]], t: float) -> int:
    """The highest value acknowledged at or before ``t`` (0: none)."""
    best = 0
    for at, v in acks:
        if at > t:
            break
        best = max(best, v)
    return best


def summarise(describe: str, reads: list[Read], acks: list[tuple[float, int]], samples, t_stop: float,
              t_cont: float, lag: float, log: str) -> Summary:
    acks = sorted(acks)
    first_ack = {}
    for at, v in acks:
        first_ack.setdefault(v, at)
    s = Summary(settings={"describe": describe, "lag": lag})
    s.events = {"stop": t_stop, "cont": t_cont}
    s.writes = {"acknowledged": len(acks), "last_value": acks[-1][1] if acks else None,
                "none_acknowledged_between": gaps(acks)}
    for name in ("pool", "new", "node1"):
        mine = [r for r in reads if r.reader == name]
        stale = []
        for r in mine:
            if r.value is None:
                continue
            # how stale: since when had a value above the one read been acknowledged
            newer = [first_ack[v] for v in first_ack if v > r.value and first_ack[v] <= r.sent]
            if newer and r.sent - min(newer) > lag:
                stale.append({"sent": r.sent, "since_cont": round(r.sent - t_cont, 3), "value": r.value,
                              "acknowledged": acked_before(acks, r.sent),
                              "stale_s": round(r.sent - min(newer), 3), "node": r.node})
        errors: dict[str, int] = {}
        for r in mine:
            if r.error:
                errors[r.error] = errors.get(r.error, 0) + 1
        served: dict[str, int] = {}
        for r in mine:
            if r.node:
                served[r.node] = served.get(r.node, 0) + 1
        s.readers[name] = {"reads": len(mine), "answered": sum(1 for r in mine if r.value is not None),
                           "errors": errors, "served_by": served, "stale": len(stale),
                           "stale_first": stale[:3], "stale_last": stale[-2:],
                           "stale_max_s": max((x["stale_s"] for x in stale), default=0.0),
                           "stale_span_since_cont": [stale[0]["since_cont"], stale[-1]["since_cont"]] if stale
                           else None}
    last: dict[str, str] = {}
    for t, what, state in samples:
        if what.endswith("last_committed"):
            continue
        if last.get(what) != state:
            s.transitions.append((t, what, state))
            last[what] = state
    s.node1_log = [line[-220:] for line in log.splitlines() if "WSREP" in line][:40]
    return s


def gaps(acks: list[tuple[float, int]], longer: float = 1.0) -> list[list[float]]:
    return [[a[0], b[0]] for a, b in zip(acks[:-1], acks[1:], strict=True) if b[0] - a[0] > longer]


def said(s: Summary) -> str:
    out = [f"{s.settings['describe']}; Placement's sessions: wsrep_sync_wait "
           f"{s.settings.get('placement_session_wsrep_sync_wait')}; node1 SIGSTOP at {s.events['stop']:.1f} s, "
           f"SIGCONT at {s.events['cont']:.1f} s"]
    out.append(f"writes to node2: {s.writes['acknowledged']} acknowledged (last value {s.writes['last_value']}), "
               f"gaps over 1 s: {s.writes['none_acknowledged_between']}")
    w = s.writes.get("through_haproxy", {})
    out.append(f"increments through HAProxy: {w.get('acknowledged')} acknowledged (by {w.get('acknowledged_by')}; "
               f"{w.get('acknowledged_in_window')} from 1 s before to 8 s after the SIGCONT), each node holds "
               f"{w.get('held_at_end')} at the end: {w.get('lost')} acknowledged and lost")
    for name, r in s.readers.items():
        span = r["stale_span_since_cont"]
        out.append(f"reader {name}: {r['reads']} reads, {r['answered']} answered (served by {r['served_by']}), "
                   f"errors {r['errors']}; stale (> {s.settings['lag']} s): {r['stale']}"
                   + (f", from {span[0]:+.2f} s to {span[1]:+.2f} s after SIGCONT, at most {r['stale_max_s']:.2f} s "
                      f"stale, first {r['stale_first'][0]}" if span else ""))
    out.append("transitions (s from start, what, state):")
    out += [f"  {t:7.2f}  {what:<15} {state}" for t, what, state in s.transitions]
    out.append("node1's WSREP log lines after the stop:")
    out += [f"  {line}" for line in s.node1_log]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db-check", choices=("tcp", "mysql", "clustercheck"), default=None,
                    help="HAProxy's check of the mariadb members (galera.sh's GALERA_DB_CHECK; default: its default)")
    ap.add_argument("--sync-wait", type=int, default=None,
                    help="the nodes' wsrep_sync_wait (galera.sh's GALERA_SYNC_WAIT; default: its default)")
    ap.add_argument("--warm", type=float, default=3.0)
    ap.add_argument("--pause", type=float, default=12.0)
    ap.add_argument("--after", type=float, default=20.0)
    ap.add_argument("--lag", type=float, default=0.5)
    ap.add_argument("--keep", action="store_true", help="keep the cluster's state directory (logs)")
    ap.add_argument("--json-out", type=Path)
    a = ap.parse_args(argv)
    galera = GaleraPlacement(state_dir_for("minbw-stale-"), db_check=a.db_check, sync_wait=a.sync_wait)
    try:
        galera.start()
        print(f"{galera.describe()}; state {galera.state_dir}", flush=True)
        s = run(galera, warm=a.warm, pause=a.pause, after=a.after, lag=a.lag)
        print(said(s), flush=True)
        print(json.dumps(asdict(s)), flush=True)
        if a.json_out:
            a.json_out.write_text(json.dumps(asdict(s), indent=1))
    finally:
        galera.stop()
        if not a.keep:
            shutil.rmtree(galera.state_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
