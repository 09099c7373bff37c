"""Orphans in Placement's database: consumers with no allocation, allocations with no consumer.

``count_orphans(db_url)`` reads them with two SELECTs in one read-only transaction (one consistent snapshot) over
PyMySQL, on the database a SQLAlchemy URL names: the ``[placement_database] connection`` of a placement.conf
(``mysql+pymysql://user:password@host:port/placement``), HAProxy's frontend or one Galera node's own port
(``GaleraPlacement.db_url(n)``), or the single-node production-style Placement's MariaDB. It writes nothing.

Placement deletes a consumer once its allocations are emptied (in the same transaction), and a consumer it
created for a write that then failed (handlers/allocation.py ``delete_consumers``), so a consumer with no
allocation is expected only in the narrow window between a request's creating it and its writing the
allocations (placement/handlers/util.py ``ensure_consumer`` commits the consumer on its own). Allocations
reference their consumer by UUID with no foreign key, so nothing in the schema prevents the second kind.

Where the running Python has no PyMySQL (the tests' .venv), the count runs in the mini-cloud's venv, which has
it (``.venv-cloud/bin/python`` this file ``URL...``: it prints each URL's two counts as JSON).
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CLOUD_PYTHON = ROOT / ".venv-cloud" / "bin" / "python"

CONSUMERS_WITHOUT_ALLOCATIONS = ("SELECT COUNT(*) FROM consumers c "
                                 "WHERE NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.uuid)")
ALLOCATIONS_WITHOUT_CONSUMER = ("SELECT COUNT(*) FROM allocations a "
                                "WHERE NOT EXISTS (SELECT 1 FROM consumers c WHERE c.uuid = a.consumer_id)")


@dataclass(frozen=True)
class Orphans:
    """``consumers_without_allocations``: rows of ``consumers`` no row of ``allocations`` names;
    ``allocations_without_consumer``: rows of ``allocations`` whose ``consumer_id`` no consumer has."""

    consumers_without_allocations: int
    allocations_without_consumer: int


def connect_args(db_url: str) -> dict:
    """PyMySQL's connect() arguments for a SQLAlchemy MySQL URL; ValueError naming the URL's problem."""
    from sqlalchemy.engine import make_url
    try:
        url = make_url(db_url)
    except Exception as e:   # sqlalchemy's ArgumentError: not a URL at all
        raise ValueError(f"not a SQLAlchemy URL: {db_url!r} ({e})") from None
    if url.get_backend_name() not in ("mysql", "mariadb") or url.get_driver_name() not in ("pymysql", "mysqldb"):
        raise ValueError(f"{url.render_as_string(hide_password=True)}: expected a MySQL/MariaDB URL "
                         "(mysql+pymysql://user:password@host:port/database), as placement.conf's connection")
    if not url.database:
        raise ValueError(f"{url.render_as_string(hide_password=True)}: names no database")
    args = {"user": url.username, "password": url.password or "", "database": url.database,
            "connect_timeout": 10, "read_timeout": 60}
    socket = url.query.get("unix_socket")
    if socket:
        args["unix_socket"] = socket if isinstance(socket, str) else socket[0]
    else:
        args["host"] = url.host or "localhost"
        args["port"] = url.port or 3306
    return args


def _count_here(db_url: str) -> Orphans:
    import pymysql
    conn = pymysql.connect(**connect_args(db_url))
    try:
        with conn.cursor() as cur:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            cur.execute(CONSUMERS_WITHOUT_ALLOCATIONS)
            consumers = int(cur.fetchone()[0])
            cur.execute(ALLOCATIONS_WITHOUT_CONSUMER)
            allocations = int(cur.fetchone()[0])
            cur.execute("COMMIT")
    finally:
        conn.close()
    return Orphans(consumers_without_allocations=consumers, allocations_without_consumer=allocations)


def count_orphans(db_url: str) -> Orphans:
    """The orphans in the Placement database ``db_url`` names (read-only; see the module's docstring)."""
    return count_orphans_on([db_url])[0]


def count_orphans_on(db_urls: list[str]) -> list[Orphans]:
    """:func:`count_orphans` of each URL (one after the other), in one process: where PyMySQL is not here, one
    start of the mini-cloud's Python for them all (about 0.7 CPU s each start)."""
    for url in db_urls:
        connect_args(url)   # a bad URL fails here, in the caller's process
    try:
        import pymysql  # noqa: F401
        here = True
    except ImportError:
        here = False
    if here:
        return [_count_here(url) for url in db_urls]
    if not CLOUD_PYTHON.exists():
        raise RuntimeError(f"no PyMySQL here and no {CLOUD_PYTHON} (make cloud-install makes it)")
    r = subprocess.run([str(CLOUD_PYTHON), __file__, *db_urls], capture_output=True, text=True, timeout=120)
    if r.returncode:
        where = ", ".join(url.split("@")[-1] for url in db_urls)
        raise RuntimeError(f"counting orphans in {where} failed: {r.stderr.strip()[-2000:]}")
    return [Orphans(**o) for o in json.loads(r.stdout)]


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: orphans.py SQLALCHEMY_URL...")
    print(json.dumps([asdict(_count_here(url)) for url in sys.argv[1:]]))
