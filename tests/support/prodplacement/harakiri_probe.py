"""Does uWSGI's harakiri keep a claim's PUT held past the client's timeout from committing later?

The soak's hazard (docs/soak.md, "Found"): a claim's ``PUT /allocations/{consumer}`` is held inside a Placement
worker (a paused worker, a paused or locked database) past the client's timeout; the client gives up or retries,
and the held PUT commits later, when nobody waits for it. Each trial here holds one PUT for ``--hold`` seconds
while the client waits ``--timeout`` seconds, then lets it go, waits, and reads what Placement and its database
hold. Five ways to hold it:

- ``lock``: another session holds the provider's row (``SELECT ... FOR UPDATE``): the PUT waits in its UPDATE;
- ``pause``: MariaDB stopped (SIGSTOP), then continued;
- ``worker``: the provider's row locked, then every uWSGI worker stopped (the soak's ``pause_placement_worker``),
  the lock freed, the workers continued at the end of the hold;
- ``all``: the same with uWSGI's master stopped too (the soak's ``pause_placement``), its group continued at once;
- ``commit``: the consumer holds VCPU 1 already and the PUT asks for 2, one transaction whose COMMIT waits on
  MariaDB's ``BACKUP STAGE BLOCK_COMMIT`` (statements run, commits wait).

A write is "late" when it is in Placement at the end although the client had no answer (``lock``, ``pause``,
``worker``, ``all``: any allocation; ``commit``: VCPU 2). Run against the production-style Placement, in the network
namespace it was started in, with its venv (pymysql, requests), once with ``PRODPLACEMENT_HARAKIRI`` shorter than
``--timeout`` and once without::

    ip netns exec NS env PRODPLACEMENT_STATE=DIR PRODPLACEMENT_WORKERS=2 PRODPLACEMENT_HARAKIRI=3 \\
        tests/support/prodplacement/prodplacement.sh up
    ip netns exec NS .venv-cloud/bin/python tests/support/prodplacement/harakiri_probe.py DIR --trials 3

One JSON line per trial, then one line per mode: trials, late writes, consumers left without allocations.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
import uuid

import pymysql
import requests

MODES = ("lock", "pause", "worker", "all", "commit")
H = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39", "Content-Type": "application/json"}


class Probe:
    def __init__(self, state: str, url: str, db_port: int, timeout: float, hold: float):
        self.state, self.url, self.db_port, self.timeout, self.hold = state, url, db_port, timeout, hold

    def db(self):
        return pymysql.connect(host="127.0.0.1", port=self.db_port, user="placement", password="prodplacement-db",
                               database="placement", autocommit=False)

    def root(self):
        return pymysql.connect(unix_socket=f"{self.state}/run/mysql.sock", user="root")

    def pid(self, name: str) -> int:
        with open(f"{self.state}/run/{name}.pid") as f:
            return int(f.read().strip())

    def provider(self) -> str:
        rp = str(uuid.uuid4())
        r = requests.post(f"{self.url}/resource_providers", headers=H, json={"name": f"probe-{rp[:8]}", "uuid": rp},
                          timeout=30)
        r.raise_for_status()
        r = requests.put(f"{self.url}/resource_providers/{rp}/inventories", headers=H,
                         json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 64}}}, timeout=30)
        r.raise_for_status()
        return rp

    def trial(self, mode: str) -> dict:
        rp, consumer = self.provider(), str(uuid.uuid4())
        body = {"allocations": {rp: {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u",
                "consumer_generation": None, "consumer_type": "INSTANCE"}
        if mode == "commit":
            requests.put(f"{self.url}/allocations/{consumer}", headers=H, json=body, timeout=30).raise_for_status()
            body = {**body, "allocations": {rp: {"resources": {"VCPU": 2}}}, "consumer_generation": 1}
        holder = None
        if mode in ("lock", "worker", "all"):
            holder = self.db()
            with holder.cursor() as c:
                c.execute("SELECT id FROM resource_providers WHERE uuid=%s FOR UPDATE", (rp,))
        elif mode == "commit":
            holder = self.root()
            with holder.cursor() as c:
                c.execute("BACKUP STAGE START")
                c.execute("BACKUP STAGE BLOCK_COMMIT")
        elif mode == "pause":
            os.kill(self.pid("mariadbd"), signal.SIGSTOP)
        t0, seen = time.monotonic(), {}

        def put():
            try:
                a = requests.put(f"{self.url}/allocations/{consumer}", headers=H, json=body, timeout=self.timeout)
                seen["answer"] = a.status_code
            except requests.RequestException as e:
                seen["answer"] = type(e).__name__
            seen["at"] = round(time.monotonic() - t0, 2)

        client = threading.Thread(target=put)
        client.start()
        master = self.pid("placement")
        if mode in ("worker", "all"):
            time.sleep(1)   # the PUT waits in its UPDATE
            workers = [int(x) for x in os.popen(f"pgrep -P {master}").read().split()]
            if mode == "all":
                os.killpg(master, signal.SIGSTOP)
            for w in workers:
                os.kill(w, signal.SIGSTOP)
            holder.rollback()   # type: ignore[union-attr]
            holder.close()   # type: ignore[union-attr]
        time.sleep(self.hold - (1 if mode in ("worker", "all") else 0))
        if mode == "all":
            os.killpg(master, signal.SIGCONT)
        elif mode == "worker":
            for w in workers:
                try:
                    os.kill(w, signal.SIGCONT)
                except ProcessLookupError:
                    pass   # killed meanwhile (harakiri)
        elif mode == "lock":
            holder.rollback()   # type: ignore[union-attr]
            holder.close()   # type: ignore[union-attr]
        elif mode == "commit":
            with holder.cursor() as c:   # type: ignore[union-attr]
                c.execute("BACKUP STAGE END")
            holder.close()   # type: ignore[union-attr]
        else:
            os.kill(self.pid("mariadbd"), signal.SIGCONT)
        client.join()
        time.sleep(5)
        held = requests.get(f"{self.url}/allocations/{consumer}", headers=H, timeout=30).json()["allocations"]
        conn = self.db()
        with conn.cursor() as c:
            c.execute("SELECT generation FROM consumers WHERE uuid=%s", (consumer,))
            row = c.fetchall()
        conn.close()
        vcpu = sum(a["resources"].get("VCPU", 0) for a in held.values())
        late = vcpu == 2 if mode == "commit" else vcpu > 0
        return {"mode": mode, "client": seen, "vcpu_held": vcpu, "late_write": late,
                "consumer_without_allocations": bool(row) and not held}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("state", help="PRODPLACEMENT_STATE of the running Placement")
    p.add_argument("--url", default="http://127.0.0.1:18778")
    p.add_argument("--db-port", type=int, default=13406)
    p.add_argument("--timeout", type=float, default=5.0, help="the client's timeout, s (the soak's: 5)")
    p.add_argument("--hold", type=float, default=10.0, help="how long the PUT is held, s")
    p.add_argument("--trials", type=int, default=1)
    p.add_argument("--modes", default=",".join(MODES))
    args = p.parse_args()
    probe = Probe(args.state, args.url, args.db_port, args.timeout, args.hold)
    results = []
    for _ in range(args.trials):
        for mode in args.modes.split(","):
            results.append(probe.trial(mode))
            print(json.dumps(results[-1]), flush=True)
    for mode in args.modes.split(","):
        mine = [r for r in results if r["mode"] == mode]
        print(f"{mode}: {len(mine)} trials, {sum(r['late_write'] for r in mine)} late writes, "
              f"{sum(r['consumer_without_allocations'] for r in mine)} consumers left without allocations")


if __name__ == "__main__":
    main()
