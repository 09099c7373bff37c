"""Placement leaves a new consumer without allocations when its allocations' write and its clean-up both fail.

Issue 47 (docs/soak.md, "The Galera topology"): under a cut link Placement 16.0.0 committed a new consumer, then
answered 500 on its allocations, and the consumer stayed without allocations. What Placement does, in its code
(``placement/handlers/allocation.py`` of openstack-placement 16.0.0, in .venv-cloud):

1. ``PUT /allocations/{consumer}`` at consumer generation null creates the consumer in a transaction of its own
   (``data_util.ensure_consumer`` -> ``_create_consumer``, committed at once);
2. it writes the allocations in a second transaction (``_update_consumers_and_create_allocations`` ->
   ``alloc_obj.replace_all``);
3. when that raises, it deletes the consumer it created (``delete_consumers([consumer])``), a third transaction,
   whose failure is only logged: ``Got an exception when deleting auto-created consumer with UUID ...``.

When 2 and 3 both fail (a database gone for both, as a cut link does; or a worker killed between them, as uWSGI's
harakiri does: harakiri_probe.py) the consumer stays, and nothing in Placement removes it later:
``consumer.delete_consumers_if_no_allocations`` runs only inside an allocations' write that sets some of the
consumer's allocations to 0 (``objects/allocation.py`` ``_set_allocations``) and in ``DELETE /allocations/{c}``
of a consumer that has allocations (``delete_all``); Placement has no periodic task.

This script makes 2 and 3 fail for real, deterministically, on the production-style Placement (no mock): another
MariaDB session holds the provider's row (``SELECT ... FOR UPDATE``: the allocations' transaction waits in its
UPDATE of the provider's generation), then, once the consumer row is committed, that row too; ``KILL QUERY``
(as MariaDB's root) ends the waiting allocations' statement with MySQL error 1317, which oslo.db does not retry
(not a deadlock), then the clean-up's ``DELETE FROM consumers`` waiting on the held consumer row the same way.
Then it reads what is left, through the API and in SQL, waits ``--wait`` seconds, reads again, and tries each way
the API has to remove a consumer: ``PUT /allocations/{c}`` with ``{}`` at its generation, ``POST /allocations``
with ``{}``, ``DELETE /allocations/{c}``, and an allocation written at generation 0 then freed at 1 (first, for contrast, the
empty ``PUT`` for a consumer Placement never had).

Run against a production-style Placement (``prodplacement.sh up``), with its venv (pymysql, requests)::

    .venv-cloud/bin/python tests/support/prodplacement/repro_empty_consumer.py STATE --url URL --db-port PORT

``--leave`` stops once the consumer is left (tests/prodplacement/test_empty_consumer.py then claims it with
minbw). One line per step; the last is JSON (what tests/prodplacement/test_empty_consumer.py checks). Exit 0 when the
sequence ran as described, 1 when a step did not happen as expected (said on stderr).
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from pathlib import Path

import pymysql
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository's root, run as a script
from tests.support.repro import report  # noqa: E402

H = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39", "Content-Type": "application/json"}


class Repro:
    def __init__(self, state: str, url: str, db_port: int):
        self.state, self.url, self.db_port = state, url, db_port
        self.t0 = time.monotonic()
        self.facts: dict = {}

    def say(self, text: str) -> None:
        print(f"{time.monotonic() - self.t0:6.2f} s  {text}", flush=True)

    def db(self, autocommit: bool = False):
        return pymysql.connect(host="127.0.0.1", port=self.db_port, user="placement", password="prodplacement-db",
                               database="placement", autocommit=autocommit)

    def root(self):
        return pymysql.connect(unix_socket=f"{self.state}/run/mysql.sock", user="root", autocommit=True)

    def call(self, method: str, path: str, body=None) -> requests.Response:
        return requests.request(method, f"{self.url}{path}", headers=H, json=body, timeout=60)

    def consumer_row(self, consumer: str):
        conn = self.db(autocommit=True)
        try:
            with conn.cursor() as c:
                c.execute("SELECT generation FROM consumers WHERE uuid=%s", (consumer,))
                row = c.fetchone()
                c.execute("SELECT COUNT(*) FROM allocations WHERE consumer_id=%s", (consumer,))
                allocs = c.fetchone()[0]
        finally:
            conn.close()
        return (None if row is None else row[0]), allocs

    def state_of(self, consumer: str, label: str) -> dict:
        api = self.call("GET", f"/allocations/{consumer}").json()
        generation, rows = self.consumer_row(consumer)
        self.say(f"{label}: GET /allocations/{consumer} -> {json.dumps(api)}; SQL: consumers row "
                 f"{'absent' if generation is None else f'generation {generation}'}, {rows} allocation rows")
        return {"api": api, "consumer_generation_sql": generation, "allocation_rows": rows}

    def lock_wait(self, root, mine: int, like: str, timeout: float = 60.0):
        """(session id, statement) of Placement's first session running a statement that starts with ``like`` (it
        can only be waiting for the rows the other session holds). The session list, not
        ``information_schema.innodb_trx``: MariaDB showed a transaction waiting there only seconds (up to 50 s)
        after its statement had started waiting."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with root.cursor() as c:
                c.execute("SELECT id, info FROM information_schema.processlist WHERE user='placement' "
                          "AND command='Query' AND id<>%s", (mine,))
                for tid, query in c.fetchall():
                    if (query or "").upper().startswith(like):
                        return tid, " ".join(query.split())
            time.sleep(0.05)
        with root.cursor() as c:
            c.execute("SELECT id, user, command, time, state, info FROM information_schema.processlist")
            procs = c.fetchall()
        raise SystemExit(f"no statement {like}... of Placement's within {timeout:g} s; sessions: {procs}")

    def run(self, wait: float, leave: bool = False) -> dict:
        rp, consumer = str(uuid.uuid4()), str(uuid.uuid4())
        self.call("POST", "/resource_providers", {"name": f"repro-{rp[:8]}", "uuid": rp}).raise_for_status()
        self.call("PUT", f"/resource_providers/{rp}/inventories",
                  {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 64}}}).raise_for_status()
        self.say(f"provider {rp} with VCPU 64; consumer {consumer} is new")
        root, holder = self.root(), self.db()
        with holder.cursor() as c:
            c.execute("SELECT CONNECTION_ID()")
            mine = c.fetchone()[0]
            c.execute("SELECT id FROM resource_providers WHERE uuid=%s FOR UPDATE", (rp,))
        self.say("another session holds the provider's row (SELECT ... FOR UPDATE)")
        body = {"allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u",
                "consumer_generation": None, "consumer_type": "INSTANCE"}
        seen: dict = {}

        def put():
            r = self.call("PUT", f"/allocations/{consumer}", body)
            seen.update(status=r.status_code, code=(r.json().get("errors") or [{}])[0].get("code")
                        if r.content else None, at=round(time.monotonic() - self.t0, 2))

        client = threading.Thread(target=put)
        client.start()
        tid, query = self.lock_wait(root, mine, "UPDATE RESOURCE_PROVIDERS")
        generation, _ = self.consumer_row(consumer)
        self.say(f"PUT /allocations/{consumer} (consumer_generation null) sent; the consumer row is committed "
                 f"(generation {generation}); the allocations' transaction waits: {query}")
        with holder.cursor() as c:
            c.execute("SELECT id FROM consumers WHERE uuid=%s FOR UPDATE", (consumer,))
        self.say("the same session now holds the consumer's row too")
        with root.cursor() as c:
            c.execute(f"KILL QUERY {int(tid)}")
        self.say(f"KILL QUERY {tid}: the allocations' statement fails (MySQL error 1317)")
        tid2, query2 = self.lock_wait(root, mine, "DELETE FROM CONSUMERS")
        self.say(f"Placement's clean-up of the consumer it created waits: {query2}")
        with root.cursor() as c:
            c.execute(f"KILL QUERY {int(tid2)}")
        self.say(f"KILL QUERY {tid2}: the clean-up fails too")
        holder.rollback()
        holder.close()
        root.close()
        self.say("the other session lets both rows go (ROLLBACK)")
        client.join()
        self.say(f"the PUT was answered {seen.get('status')} ({seen.get('code')})")
        facts: dict = {"consumer": consumer, "provider": rp, "put": seen, "first_generation": generation}
        facts["after"] = self.state_of(consumer, "right after")
        time.sleep(wait)
        facts["later"] = {"seconds": wait, **self.state_of(consumer, f"{wait:g} s later")}
        with open(f"{self.state}/log/placement.log", errors="replace") as log:
            warning = [line.strip() for line in log if "auto-created consumer" in line and consumer in line]
        facts["placement_log"] = warning
        self.say("Placement's log: " + (warning[-1] if warning else "(no line about the consumer)"))
        facts["removal"] = {} if leave else self.removals(consumer, rp)
        return facts

    def removals(self, consumer: str, rp: str) -> dict:
        """Each way the API has to remove the consumer, and whether the row is still there after it."""
        out = {}
        owner = {"project_id": "p", "user_id": "u"}
        absent = str(uuid.uuid4())
        steps = [
            # the same PUT for a consumer Placement never had: refused, nothing created (the contrast: the 204 below
            # is the only sign through the API that the consumer exists, GET shows {} either way)
            ("put_empty_absent", "PUT", f"/allocations/{absent}", {"allocations": {}, "consumer_generation": 0,
                                                                     **owner, "consumer_type": "INSTANCE"}),
            ("put_empty", "PUT", f"/allocations/{consumer}", {"allocations": {}, "consumer_generation": 0, **owner,
                                                               "consumer_type": "INSTANCE"}),
            ("post_empty", "POST", "/allocations", {consumer: {"allocations": {}, "consumer_generation": 0, **owner,
                                                               "consumer_type": "INSTANCE"}}),
            ("delete", "DELETE", f"/allocations/{consumer}", None),
            ("put_null", "PUT", f"/allocations/{consumer}", {"allocations": {rp: {"resources": {"VCPU": 1}}},
                                                              "consumer_generation": None, **owner,
                                                              "consumer_type": "INSTANCE"}),
            ("put_at_0", "PUT", f"/allocations/{consumer}", {"allocations": {rp: {"resources": {"VCPU": 1}}},
                                                              "consumer_generation": 0, **owner,
                                                              "consumer_type": "INSTANCE"}),
            ("free_at_1", "PUT", f"/allocations/{consumer}", {"allocations": {}, "consumer_generation": 1, **owner,
                                                               "consumer_type": "INSTANCE"}),
        ]
        for name, method, path, body in steps:
            r = self.call(method, path, body)
            errors = r.json().get("errors") if r.content else None
            generation, rows = self.consumer_row(absent if name == "put_empty_absent" else consumer)
            out[name] = {"status": r.status_code, "code": errors[0].get("code") if errors else None,
                         "detail": " ".join(errors[0].get("detail", "").split())[-120:] if errors else None,
                         "consumer_generation_sql": generation, "allocation_rows": rows}
            self.say(f"{method} {path} {json.dumps(body) if body else ''} -> {r.status_code}"
                     f"{' ' + out[name]['code'] if out[name]['code'] else ''}; consumers row "
                     f"{'absent' if generation is None else f'generation {generation}'}, {rows} allocation rows")
        return out


def expected(facts: dict) -> list[str]:
    """What did not happen as this script's docstring says (empty: the whole sequence as described)."""
    checks = [
        (facts["first_generation"] == 0, "the consumer row was committed at generation 0 before the allocations"),
        (facts["put"].get("status") == 500, "the PUT was answered 500"),
        (facts["after"]["consumer_generation_sql"] == 0 and facts["after"]["allocation_rows"] == 0,
         "the consumer was left at generation 0 without allocations"),
        (facts["later"]["consumer_generation_sql"] == 0, "it was still there later"),
        (bool(facts["placement_log"]), "Placement logged its failed clean-up"),
    ]
    r = facts["removal"]
    if r:   # not with --leave
        checks += [
            (r["put_empty_absent"]["status"] == 409 and r["put_empty_absent"]["consumer_generation_sql"] is None,
             "PUT {} at generation 0 of a consumer Placement never had was refused (409) and created nothing"),
            (r["put_empty"]["status"] == 204 and r["put_empty"]["consumer_generation_sql"] == 0,
             "PUT {} at generation 0 answered 204 and left the consumer"),
            (r["post_empty"]["status"] == 204 and r["post_empty"]["consumer_generation_sql"] == 0,
             "POST /allocations {} at generation 0 answered 204 and left the consumer"),
            (r["delete"]["status"] == 404 and r["delete"]["consumer_generation_sql"] == 0,
             "DELETE answered 404 and left the consumer"),
            (r["put_null"]["status"] == 409 and r["put_null"]["code"] == "placement.concurrent_update",
             "a claim at generation null was refused (409 placement.concurrent_update)"),
            (r["put_at_0"]["status"] == 204 and r["put_at_0"]["allocation_rows"] == 1,
             "a claim at generation 0 took it"),
            (r["free_at_1"]["status"] == 204 and r["free_at_1"]["consumer_generation_sql"] is None,
             "freeing that claim at generation 1 deleted the consumer"),
        ]
    return [what for ok, what in checks if not ok]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("state", help="PRODPLACEMENT_STATE of the running Placement")
    p.add_argument("--url", default="http://127.0.0.1:18778")
    p.add_argument("--db-port", type=int, default=13406)
    p.add_argument("--wait", type=float, default=10.0, help="seconds between the two reads of what is left")
    p.add_argument("--leave", action="store_true", help="stop there: leave the consumer without allocations (for a "
                   "client to meet it), not trying the ways to remove it")
    args = p.parse_args()
    facts = Repro(args.state, args.url, args.db_port).run(args.wait, leave=args.leave)
    report(facts, expected(facts))


if __name__ == "__main__":
    main()
