"""Reproduce openstack-placement's DELETE /allocations/{consumer} freeing usage without moving the provider generation.

    python3 patches/placement/reproduce_delete_generation.py --os-cloud NAME

Needs only openstacksdk (``pip install openstacksdk``) and a clouds.yaml entry whose user may write resource
providers and allocations (admin). Every request is a raw HTTP request through the SDK's session, at microversion
1.28 (consumer generations). What it does, the same exact sequence every time:

1. one resource provider ``delete-generation-repro-<uuid>`` with an inventory of 8 units of the custom resource
   class CUSTOM_DELETE_GENERATION_REPRO (nobody else asks for it: the scheduler never sees it);
2. a new consumer claims 2 units (``PUT /allocations/{consumer}``, ``consumer_generation: null``); the provider's
   generation and usage are read (``GET /resource_providers/{uuid}/usages``); the consumer's allocations are
   deleted (``DELETE /allocations/{consumer}``, as Nova frees a deleted server's); generation and usage again;
3. for contrast, the same with a second consumer freed by ``PUT /allocations/{consumer}`` with ``allocations: {}``
   at its consumer generation (as ``minbw free`` and Nova with ``reclaim_instance_interval > 0`` do);
4. the provider and the class deleted.

Exit status: 1 when the DELETE freed the usage and left the provider's generation where it was (reproduced), 0 when
it moved the generation, 2 on a set-up error or an unexpected answer (the usage not freed, the contrast's ``PUT``
not moving the generation). openstack-placement 16.0.0 exits 1; with
patches/placement/0002-*.patch applied, 0. docs/placement-generations.md tells the whole story.
"""
from __future__ import annotations

import argparse
import sys
import uuid
import warnings

RC = "CUSTOM_DELETE_GENERATION_REPRO"
MV = "1.28"          # consumer generations: PUT with empty allocations frees a consumer
TOTAL = 8
UNITS = 2
OWNER = {"project_id": "delete-generation-repro", "user_id": "delete-generation-repro"}


class ReproError(Exception):
    """A set-up or unexpected answer: exit 2."""


def connect(args):
    import openstack
    return openstack.connect(cloud=args.os_cloud)


def check(resp, what: str, ok=(200, 201, 204)):
    if resp.status_code not in ok:
        raise ReproError(f"{what}: HTTP {resp.status_code} {resp.text[:300]}")
    return resp


def state(placement, rp: str) -> tuple[int, int]:
    """The provider's generation and its usage of RC, from one ``GET /resource_providers/{uuid}/usages``."""
    body = check(placement.get(f"/resource_providers/{rp}/usages", microversion=MV, raise_exc=False),
                 "reading the usage").json()
    return body["resource_provider_generation"], body["usages"].get(RC, 0)


def step(what: str, generation: int, usage: int) -> None:
    print(f"  {what:<58} generation {generation}, usage {usage}", flush=True)


def claim(placement, rp: str, consumer: str) -> tuple[int, int]:
    body = {"allocations": {rp: {"resources": {RC: UNITS}}}, "consumer_generation": None, **OWNER}
    check(placement.put(f"/allocations/{consumer}", json=body, microversion=MV, raise_exc=False),
          f"claiming {UNITS} units for consumer {consumer}")
    return state(placement, rp)


def free_by_delete(placement, rp: str) -> tuple[int, int, int, int]:
    """Claim, then DELETE: (generation, usage) after the claim and after the delete."""
    consumer = str(uuid.uuid4())
    g1, u1 = claim(placement, rp, consumer)
    step(f"PUT /allocations/{{consumer 1}} ({UNITS} units)", g1, u1)
    check(placement.delete(f"/allocations/{consumer}", microversion=MV, raise_exc=False),
          f"DELETE /allocations/{consumer}")
    g2, u2 = state(placement, rp)
    step("DELETE /allocations/{consumer 1}", g2, u2)
    return g1, u1, g2, u2


def free_by_put(placement, rp: str) -> tuple[int, int, int, int]:
    """Claim, then PUT {} at the consumer generation: (generation, usage) after the claim and after the PUT."""
    consumer = str(uuid.uuid4())
    g1, u1 = claim(placement, rp, consumer)
    step(f"PUT /allocations/{{consumer 2}} ({UNITS} units)", g1, u1)
    current = check(placement.get(f"/allocations/{consumer}", microversion=MV, raise_exc=False),
                    f"GET /allocations/{consumer}").json()
    body = {"allocations": {}, "consumer_generation": current["consumer_generation"], **OWNER}
    check(placement.put(f"/allocations/{consumer}", json=body, microversion=MV, raise_exc=False),
          f"PUT /allocations/{consumer} with empty allocations")
    g2, u2 = state(placement, rp)
    step(f"PUT /allocations/{{consumer 2}} {{}} (consumer generation {current['consumer_generation']})", g2, u2)
    return g1, u1, g2, u2


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    p.add_argument("--os-cloud", required=True, help="the clouds.yaml entry to use (an admin of Placement)")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    try:
        return run(args)
    except ReproError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - openstacksdk, keystoneauth: no such cloud, no Placement there
        print(f"error: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}", file=sys.stderr)
        return 2


def run(args) -> int:
    admin = connect(args)
    placement = admin.placement
    root = check(placement.get("/", microversion=MV, raise_exc=False), "reading Placement's versions").json()
    print(f"Placement {placement.get_endpoint()} (max microversion {root['versions'][0]['max_version']}), "
          f"resource class {RC}, microversion {MV}", flush=True)
    check(placement.put(f"/resource_classes/{RC}", microversion=MV, raise_exc=False), "creating the class")
    rp = str(uuid.uuid4())
    check(placement.post("/resource_providers", json={"uuid": rp, "name": f"delete-generation-repro-{rp}"},
                         microversion=MV, raise_exc=False), "creating the provider")
    try:
        check(placement.put(f"/resource_providers/{rp}/inventories", microversion=MV, raise_exc=False, json={
            "resource_provider_generation": 0, "inventories": {RC: {"total": TOTAL}}}), "setting the inventory")
        print(f"provider delete-generation-repro-{rp}", flush=True)
        step(f"PUT /resource_providers/{{uuid}}/inventories ({TOTAL} units)", *state(placement, rp))
        print("freeing with DELETE /allocations/{consumer}:", flush=True)
        d1, du1, d2, du2 = free_by_delete(placement, rp)
        print("freeing with PUT /allocations/{consumer} {\"allocations\": {}} at its consumer generation:", flush=True)
        p1, pu1, p2, pu2 = free_by_put(placement, rp)
    finally:
        placement.delete(f"/resource_providers/{rp}", microversion=MV, raise_exc=False)
        placement.delete(f"/resource_classes/{RC}", microversion=MV, raise_exc=False)
    if du1 - du2 != UNITS or pu1 - pu2 != UNITS:
        raise ReproError(f"the usage was not freed: {du1} -> {du2} by DELETE, {pu1} -> {pu2} by PUT {{}}")
    if p2 == p1:
        raise ReproError(f"PUT /allocations/{{consumer}} {{}} did not move the generation either ({p1})")
    put = f"PUT {{}} freed {UNITS} units and moved it from {p1} to {p2}"
    if d2 == d1:
        print(f"DELETE freed {UNITS} units and left the generation at {d1}; {put}: reproduced")
        return 1
    print(f"DELETE freed {UNITS} units and moved the generation from {d1} to {d2}; {put}: not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
