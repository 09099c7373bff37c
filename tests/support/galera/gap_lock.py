"""The first step of docs/galera.md's 409 on disjoint bulk writes, in SQL alone: a gap lock taken on one Galera
node brute-force aborts that node's transaction when another node's insert into the gap is applied there.

Placement's ``_set_allocations`` (placement 16.0.0, placement/objects/allocation.py) starts with
``DELETE FROM allocations WHERE consumer_id = <the consumer>``; for a new consumer that deletes nothing, but under
REPEATABLE READ InnoDB locks the gap of the index ``allocations_consumer_id_idx`` where the consumer would be.
Another request's ``INSERT INTO allocations`` for another consumer whose UUID falls in that gap (other providers,
other consumers: nothing shared) needs that gap:

- ``same-node``: both transactions on node 1: the insert waits for the lock (here: until its 2 s
  ``innodb_lock_wait_timeout``, error 1205), and the deleting transaction goes on;
- ``two-nodes``: the insert commits on node 2; node 1's applier (given 1 s) cannot wait for a local transaction,
  so it aborts it (``wsrep_local_bf_aborts`` + 1 on node 1): the transaction's next statement fails with error 1213, the
  "Deadlock found" oslo.db retries;
- ``two-nodes-read-committed``: the same under READ COMMITTED, where such a delete locks no gap: nothing aborted.

Run by the mini-cloud's venv (PyMySQL): ``.venv-cloud/bin/python tests/support/galera/gap_lock.py URL1 URL2``
(each node's SQLAlchemy URL: ``GaleraPlacement.db_url(n)``) prints the three cases as JSON;
repro_bulk_409.py runs it. The rows it inserts are deleted at the end; the consumers' UUIDs sort after any
random one (``ffffffff-...``), so the gap is the last one of the index.
"""
from __future__ import annotations

import json
import sys
import time

from orphans import connect_args

MINE = "ffffffff-ffff-ffff-ffff-fffffffffff0"     # the deleting transaction's consumer (no allocation)
OTHER = "ffffffff-ffff-ffff-ffff-fffffffffff1"    # the inserting one's, in the same gap
INSERT = ("INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used, created_at) "
          "VALUES (999999, %s, 0, 1, NOW())")


def bf_aborts(conn) -> int:
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep_local_bf_aborts'")
        return int(cur.fetchone()[1])


def case(url_a: str, url_b: str, isolation: str) -> dict:
    """A (on url_a) deletes MINE's allocations in an open transaction; B (on url_b, autocommit) inserts one of
    OTHER's; 1 s later A runs one more statement and commits. What each got."""
    import pymysql
    a = pymysql.connect(**connect_args(url_a), autocommit=False)
    b = pymysql.connect(**connect_args(url_b), autocommit=True)
    out = {"isolation": isolation}
    try:
        before = bf_aborts(a)
        with a.cursor() as ca, b.cursor() as cb:
            ca.execute(f"SET SESSION TRANSACTION ISOLATION LEVEL {isolation}")
            cb.execute("SET SESSION innodb_lock_wait_timeout = 2")
            ca.execute("BEGIN")
            ca.execute("DELETE FROM allocations WHERE consumer_id = %s", (MINE,))
            try:
                cb.execute(INSERT, (OTHER,))
                out["insert"] = "committed"
            except pymysql.err.OperationalError as e:
                out["insert"] = f"error {e.args[0]}: {e.args[1]}"
            time.sleep(1)   # node 1's applier applies B's writeset (replication is synchronous, applying is not)
            try:
                ca.execute("SELECT COUNT(*) FROM allocations WHERE consumer_id = %s", (MINE,))
                ca.fetchall()
                ca.execute("COMMIT")
                out["deleting_transaction"] = "committed"
            except pymysql.err.OperationalError as e:
                out["deleting_transaction"] = f"error {e.args[0]}: {e.args[1]}"
                a.rollback()
        a2 = pymysql.connect(**connect_args(url_a), autocommit=True)
        try:
            out["bf_aborts_on_its_node"] = bf_aborts(a2) - before
        finally:
            a2.close()
    finally:
        with b.cursor() as cb:
            cb.execute("DELETE FROM allocations WHERE consumer_id = %s", (OTHER,))
        a.close()
        b.close()
    return out


def main(url1: str, url2: str) -> dict:
    return {"same-node": case(url1, url1, "REPEATABLE READ"),
            "two-nodes": case(url1, url2, "REPEATABLE READ"),
            "two-nodes-read-committed": case(url1, url2, "READ COMMITTED")}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: gap_lock.py NODE1_URL NODE2_URL")
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
