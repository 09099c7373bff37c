"""Reproduce openstack-placement's overcommit under concurrent claims against any Placement you can reach.

    python3 patches/placement/reproduce_overcommit.py --os-cloud NAME [--claimers 16] [--capacity 24] [--rounds 5]

Needs only openstacksdk (``pip install openstacksdk``) and a clouds.yaml entry whose user may write
resource providers and allocations (admin). What it does, each round, the same exact sequence:

1. one resource provider ``overcommit-repro-<uuid>`` with an inventory of ``--capacity`` units of the
   custom resource class CUSTOM_OVERCOMMIT_REPRO (nobody else asks for it: the scheduler never sees it);
2. ``--claimers`` threads, each with its own connection, released at the same instant; each claims
   1 unit for a new consumer (``PUT /allocations/{uuid}``, microversion 1.28, consumer_generation null)
   again and again until Placement refuses one for capacity (409 ``placement.undefined_code``); a
   provider generation conflict (409 ``placement.concurrent_update``) is sent again at once, as a client
   retries it. Twice the capacity is asked for in all;
3. the provider's usage (``GET /resource_providers/{uuid}/usages``) against its capacity
   ``(total - reserved) * allocation_ratio``, then every consumer and the provider deleted.

Exit status: 1 when a round ended over capacity (reproduced), 0 when none did, 2 on a usage or set-up error.
On openstack-placement 16.0.0 with MySQL/MariaDB and the default ``[placement]
allocation_conflict_retry_count = 10`` most rounds end over capacity; with the retry count at 1, or with
patches/placement/0001-*.patch applied, none does. Several API workers are needed (uWSGI processes):
one worker serving one request at a time never races. docs/placement-overcommit.md tells the whole story.
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
import warnings

RC = "CUSTOM_OVERCOMMIT_REPRO"
MV = "1.28"          # consumer generations; errors carry their codes
CONFLICT_TRIES = 100


class ReproError(Exception):
    """A set-up or unexpected answer: exit 2."""


def connect(args):
    import openstack
    return openstack.connect(cloud=args.os_cloud)


def code_of(resp) -> str | None:
    try:
        return resp.json()["errors"][0].get("code")
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def check(resp, what: str, ok=(200, 201, 204)):
    if resp.status_code not in ok:
        raise ReproError(f"{what}: HTTP {resp.status_code} {resp.text[:300]}")
    return resp


def claimer(conn, provider: str, barrier: threading.Barrier, out: list, lock: threading.Lock, quota: list,
            errors: list) -> None:
    try:
        claim_until_full(conn, provider, barrier, out, lock, quota)
    except Exception as e:  # reported by the main thread
        errors.append(f"{type(e).__name__}: {e}")
        barrier.abort()


def claim_until_full(conn, provider, barrier, out, lock, quota) -> None:
    """Claim 1 unit per new consumer until refused for capacity or the shared quota is used up."""
    placement = conn.placement
    placement.get("/", microversion=MV)  # connect (and authenticate) before the start
    barrier.wait()
    while True:
        with lock:
            if quota[0] <= 0:
                return
            quota[0] -= 1
        consumer = str(uuid.uuid4())
        body = {"allocations": {provider: {"resources": {RC: 1}}}, "project_id": "overcommit-repro",
                "user_id": "overcommit-repro", "consumer_generation": None}
        for _attempt in range(CONFLICT_TRIES):
            r = placement.put(f"/allocations/{consumer}", json=body, microversion=MV, raise_exc=False)
            if r.status_code == 409 and code_of(r) == "placement.concurrent_update":
                continue
            break
        if r.status_code == 204:
            with lock:
                out.append(consumer)
            continue
        if r.status_code == 409:
            return  # refused for capacity: this claimer is done
        raise ReproError(f"PUT /allocations/{consumer}: HTTP {r.status_code} {r.text[:300]}")


def one_round(args, admin, n: int) -> int:
    """Run one round; returns by how much the provider ended over capacity (0: not)."""
    placement = admin.placement
    rp = str(uuid.uuid4())
    check(placement.post("/resource_providers", json={"uuid": rp, "name": f"overcommit-repro-{rp}"},
                         microversion=MV, raise_exc=False), "creating the provider")
    accepted: list[str] = []
    try:
        check(placement.put(f"/resource_providers/{rp}/inventories", microversion=MV, raise_exc=False, json={
            "resource_provider_generation": 0, "inventories": {RC: {"total": args.capacity}}}), "setting the inventory")
        conns = [connect(args) for _claimer in range(args.claimers)]
        barrier = threading.Barrier(args.claimers)
        lock = threading.Lock()
        quota = [2 * args.capacity]
        errors: list[str] = []
        threads = [threading.Thread(target=claimer, args=(c, rp, barrier, accepted, lock, quota, errors))
                   for c in conns]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.monotonic() - t0
        if errors:
            raise ReproError(f"{len(errors)} claimers failed, the first: {errors[0]}")
        inv = check(placement.get(f"/resource_providers/{rp}/inventories", microversion=MV, raise_exc=False),
                    "reading the inventory").json()["inventories"][RC]
        cap = (inv["total"] - inv["reserved"]) * inv["allocation_ratio"]
        used = check(placement.get(f"/resource_providers/{rp}/usages", microversion=MV, raise_exc=False),
                     "reading the usage").json()["usages"].get(RC, 0)
        over = max(0, used - int(cap))
        verdict = f"OVERCOMMITTED by {over}" if over else "within capacity"
        print(f"round {n}: {args.claimers} claimers asked for {2 * args.capacity} units of {int(cap)}: "
              f"{len(accepted)} claims accepted, usage {used} of capacity {int(cap)}: {verdict} ({seconds:.1f} s)",
              flush=True)
        return over
    finally:
        for c in accepted:
            placement.delete(f"/allocations/{c}", microversion=MV, raise_exc=False)
        placement.delete(f"/resource_providers/{rp}", microversion=MV, raise_exc=False)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    p.add_argument("--os-cloud", required=True, help="the clouds.yaml entry to use (an admin of Placement)")
    p.add_argument("--claimers", type=int, default=16, help="concurrent claimers (default 16)")
    p.add_argument("--capacity", type=int, default=24, help="units of the provider's inventory (default 24)")
    p.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    args = p.parse_args(argv)
    if args.claimers < 2 or args.capacity < 1 or args.rounds < 1:
        p.error("--claimers must be >= 2, --capacity and --rounds >= 1")
    warnings.filterwarnings("ignore")
    try:
        return run(args)
    except ReproError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def run(args) -> int:
    admin = connect(args)
    root = check(admin.placement.get("/", microversion=MV, raise_exc=False), "reading Placement's versions").json()
    print(f"Placement {admin.placement.get_endpoint()} (max microversion "
          f"{root['versions'][0]['max_version']}), resource class {RC}", flush=True)
    check(admin.placement.put(f"/resource_classes/{RC}", microversion=MV, raise_exc=False), "creating the class")
    overs = [one_round(args, admin, n) for n in range(1, args.rounds + 1)]
    admin.placement.delete(f"/resource_classes/{RC}", microversion=MV, raise_exc=False)
    bad = sum(1 for o in overs if o)
    print(f"{bad} of {args.rounds} rounds ended over capacity" + (": reproduced" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
