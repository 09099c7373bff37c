"""Reproduce openstack-placement's DELETE /allocations/{consumer}, and a PUT moving a consumer off a provider, freeing
usage without moving the provider generation.

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
   at its consumer generation (as ``minbw allocation delete`` and Nova with ``reclaim_instance_interval > 0`` do);
4. a third consumer claims 2 units and is moved to a second provider (8 units of the same class) by ``PUT
   /allocations/{consumer}`` naming only that one, at its consumer generation (as Nova's resize revert and a
   migration's source clean-up move allocations off a provider); the first provider's generation and usage before
   and after the move, then the second provider's;
5. the consumers' allocations, the providers and the class deleted.

Exit status: 1 when any part reproduced, i.e. a freed provider's generation did not move (the DELETE of 2., or the
move of 4. on the provider left), 0 when none did, 2 on a set-up error or an unexpected answer (the usage not
freed, the contrast's ``PUT`` or the provider moved to not moving the generation). openstack-placement 16.0.0 exits
1 (both parts reproduce); with patches/placement/0002-*.patch applied, 1 (the move still reproduces); with 0002 and
0003, 0. docs/placement-generations.md tells the whole story.
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


def move_by_put(placement, rp: str, rp2: str) -> tuple[int, int, int, int, int, int, int, int]:
    """Claim on rp, then PUT the same claim on rp2 alone at the consumer generation: (generation, usage) of rp after
    the claim and after the move, and of rp2 before and after the move. The consumer's allocations are deleted
    at the end, whatever happened."""
    consumer = str(uuid.uuid4())
    try:
        g1, u1 = claim(placement, rp, consumer)
        step(f"PUT /allocations/{{consumer 3}} ({UNITS} units)", g1, u1)
        b1, bu1 = state(placement, rp2)
        step("provider 2, before the move", b1, bu1)
        current = check(placement.get(f"/allocations/{consumer}", microversion=MV, raise_exc=False),
                        f"GET /allocations/{consumer}").json()
        body = {"allocations": {rp2: {"resources": {RC: UNITS}}},
                "consumer_generation": current["consumer_generation"], **OWNER}
        check(placement.put(f"/allocations/{consumer}", json=body, microversion=MV, raise_exc=False),
              f"PUT /allocations/{consumer} on provider 2")
        g2, u2 = state(placement, rp)
        step(f"PUT /allocations/{{consumer 3}} ({UNITS} units on provider 2)", g2, u2)
        b2, bu2 = state(placement, rp2)
        step("provider 2, after the move", b2, bu2)
    finally:
        placement.delete(f"/allocations/{consumer}", microversion=MV, raise_exc=False)
    return g1, u1, g2, u2, b1, bu1, b2, bu2


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
    rp2 = str(uuid.uuid4())
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
        print(f"moving off the provider with PUT /allocations/{{consumer}} to provider 2, "
              f"delete-generation-repro-{rp2} ({TOTAL} units):", flush=True)
        check(placement.post("/resource_providers", json={"uuid": rp2, "name": f"delete-generation-repro-{rp2}"},
                             microversion=MV, raise_exc=False), "creating the second provider")
        check(placement.put(f"/resource_providers/{rp2}/inventories", microversion=MV, raise_exc=False, json={
            "resource_provider_generation": 0, "inventories": {RC: {"total": TOTAL}}}),
            "setting the second provider's inventory")
        m1, mu1, m2, mu2, b1, bu1, b2, bu2 = move_by_put(placement, rp, rp2)
    finally:
        placement.delete(f"/resource_providers/{rp2}", microversion=MV, raise_exc=False)
        placement.delete(f"/resource_providers/{rp}", microversion=MV, raise_exc=False)
        placement.delete(f"/resource_classes/{RC}", microversion=MV, raise_exc=False)
    if du1 - du2 != UNITS or pu1 - pu2 != UNITS:
        raise ReproError(f"the usage was not freed: {du1} -> {du2} by DELETE, {pu1} -> {pu2} by PUT {{}}")
    if mu1 - mu2 != UNITS or bu2 - bu1 != UNITS:
        raise ReproError(f"the move did not move the usage: {mu1} -> {mu2} on the provider, {bu1} -> {bu2} on "
                         f"provider 2")
    if p2 == p1:
        raise ReproError(f"PUT /allocations/{{consumer}} {{}} did not move the generation either ({p1})")
    if b2 == b1:
        raise ReproError(f"PUT /allocations/{{consumer}} did not move provider 2's generation either ({b1})")
    put = f"PUT {{}} freed {UNITS} units and moved it from {p1} to {p2}"
    if d2 == d1:
        print(f"DELETE freed {UNITS} units and left the generation at {d1}; {put}: reproduced")
    else:
        print(f"DELETE freed {UNITS} units and moved the generation from {d1} to {d2}; {put}: not reproduced")
    moved = f"provider 2's moved from {b1} to {b2}"
    if m2 == m1:
        print(f"the move freed {UNITS} units and left the generation at {m1} ({moved}): reproduced")
    else:
        print(f"the move freed {UNITS} units and moved the generation from {m1} to {m2} ({moved}): not reproduced")
    return 1 if d2 == d1 or m2 == m1 else 0


if __name__ == "__main__":
    sys.exit(main())
