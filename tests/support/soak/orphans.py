"""Read-only SQL over Placement's database, for the soak's invariants (tests/support/soak/runner.py).

``count_orphans(db_url)`` is the Galera suite's (tests/support/galera/orphans.py: consumers without allocations,
allocations whose consumer has no record), its SQL and connection arguments too.
``over_capacity(db_url)``: every (provider, class) whose allocations exceed (total - reserved) * allocation_ratio.
``providers(db_url)``: how many resource providers there are; ``consumers(db_url)``: those holding allocations.

pymysql is Placement's own driver: it is in the cloud's venv (.venv-cloud), not in .venv; run as a script there,
``python orphans.py DB_URL INTERVAL``, it samples all three every INTERVAL seconds, one JSON line each, until its
stdin closes (the runner holds it open).
"""
from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.support.galera.orphans import (  # noqa: E402 - run as a script in .venv-cloud too
    ALLOCATIONS_WITHOUT_CONSUMER,
    CONSUMERS_WITHOUT_ALLOCATIONS,
    connect_args,
    count_orphans,  # noqa: F401 - the soak's invariants and the Galera suite count orphans one way
)


def _connect(db_url: str, timeout: float = 5.0):
    import pymysql
    args = connect_args(db_url)
    args.update(connect_timeout=timeout, read_timeout=timeout, write_timeout=timeout, autocommit=True)
    return pymysql.connect(**args)


ORPHANS_SQL = f"SELECT ({CONSUMERS_WITHOUT_ALLOCATIONS}), ({ALLOCATIONS_WITHOUT_CONSUMER})"
# Placement writes a new consumer's record, then its allocations, in two transactions: between them the consumer has
# none. The samples name them, so that only one still empty a while later counts (the runner's no_orphans).
EMPTY_CONSUMERS_SQL = ("SELECT c.uuid FROM consumers c WHERE NOT EXISTS "
                       "(SELECT 1 FROM allocations a WHERE a.consumer_id = c.uuid) LIMIT 50")
OVER_SQL = (
    "SELECT rp.name, i.resource_class_id, SUM(a.used), (i.total - i.reserved) * i.allocation_ratio "
    "FROM allocations a JOIN inventories i ON i.resource_provider_id = a.resource_provider_id "
    "AND i.resource_class_id = a.resource_class_id JOIN resource_providers rp ON rp.id = a.resource_provider_id "
    "GROUP BY a.resource_provider_id, a.resource_class_id, i.total, i.reserved, i.allocation_ratio, rp.name "
    "HAVING SUM(a.used) > (i.total - i.reserved) * i.allocation_ratio"
)


def _one(db_url: str, sql: str):
    conn = _connect(db_url)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()
    finally:
        conn.close()


def over_capacity(db_url: str) -> list[tuple[str, int, int, float]]:
    return [(r[0], int(r[1]), int(r[2]), float(r[3])) for r in _one(db_url, OVER_SQL)]


def consumers(db_url: str) -> list[str]:
    """Every consumer that holds allocations (the cloud topology's owner check)."""
    return sorted(r[0] for r in _one(db_url, "SELECT DISTINCT consumer_id FROM allocations"))


def providers(db_url: str) -> int:
    return int(_one(db_url, "SELECT COUNT(*) FROM resource_providers")[0][0])


def sample(db_url: str) -> dict:
    t = time.monotonic()
    try:
        conn = _connect(db_url, timeout=3.0)
        try:
            with conn.cursor() as cur:
                cur.execute(OVER_SQL)
                over = [[r[0], int(r[1]), int(r[2]), float(r[3])] for r in cur.fetchall()]
                cur.execute(ORPHANS_SQL)
                orphans = [int(x) for x in cur.fetchone()]
                cur.execute(EMPTY_CONSUMERS_SQL)
                empty = [r[0] for r in cur.fetchall()]
                cur.execute("SELECT COUNT(*) FROM resource_providers")
                count = int(cur.fetchone()[0])
        finally:
            conn.close()
        return {"t": t, "ok": True, "over": over, "orphans": orphans, "providers": count, "empty_consumers": empty}
    except Exception as e:  # the database down or stopped: a sample missed, said so
        return {"t": t, "ok": False, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}


def main(argv: list[str]) -> int:
    db_url, interval = argv[0], float(argv[1])
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    while not done.is_set():
        print(json.dumps(sample(db_url)), flush=True)
        done.wait(interval)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
