"""Each kind of tests/support/galera/faults.py's injector, once, on one single-writer Galera Placement (each node's
datadir a file system of its own of 256 MB, for fill_disk): 12 ``minbw allocation create`` claims by 4 claimers
start, the fault is put in place 1 s into them (inject returns once it is observably in place), 12 more claims start
then, the fault is healed once they have ended or after HOLD s (heal returns once the cluster is whole); every
claim then accounted for (accepted with exactly its bandwidth, or failed with one line naming its cause: tally),
none over capacity, the cluster whole, and 2 claims made after the heal succeed.

The targets are drawn from a seed (MINBW_GALERA_SEED, else a random one), printed with each result for replay.
drop_link needs the cluster in a network namespace of the tests' own: ``make galera`` runs this suite under
``unshare --net --mount`` (tests/support/netns.py); elsewhere that kind is skipped, saying why. Only with
MINBW_GALERA=1 (``make galera``): 4-6 minutes on the shared 2-core machine, its cluster start included; not part
of ``make test``'s reduced form."""
from __future__ import annotations

import os
import random
import time
import uuid

import pytest

from tests.galera.test_galera import api, claims_after, free_claims, pool, tally  # noqa: F401
from tests.prodplacement.test_prod_placement import (FLAVOR, KBPS, PORT_ID, _cli_claimer, make_hosts,
                                                     no_overcommit, request_json)
from tests.support.galera.faults import KINDS, GaleraFaults

pytestmark = pytest.mark.skipif(os.environ.get("MINBW_GALERA") != "1",
                                reason="the Galera fault injector's kinds: `make galera` runs these (MINBW_GALERA=1)")

SEED = int(os.environ.get("MINBW_GALERA_SEED") or random.SystemRandom().randrange(1 << 32))
HOLD = 20.0         # seconds at most the fault stays in place after inject returned, if the claims met then have
                    # not ended (pause_node: heal holds it 12 s at least)
CLAIMERS, PER_CLAIMER = 4, 3


@pytest.fixture(scope="module")
def galera():
    from tests.support.galera.server import running
    with running(mode="single-writer", datadir_size_mb=256) as server:
        yield server


def _warm(_):
    """A claimer process's imports (the CLI, openstacksdk), done before the claims that time the faults."""
    import minbw.cli.shell  # noqa: F401
    time.sleep(1)


@pytest.fixture(scope="module")
def faults(galera, pool):
    pool.map(_warm, range(8), chunksize=1)     # each of the pool's 8 processes (1 s each: one task apiece)
    injector = GaleraFaults(galera)
    yield injector
    injector.heal_all()


@pytest.mark.parametrize("kind", KINDS)
def test_a_fault_of_each_kind_during_claims_then_healed(kind, api, galera, faults, tmp_path, pool, monkeypatch):
    if kind not in faults.kinds:
        pytest.skip(f"{kind}: {faults.unavailable[kind]}")
    rng = random.Random(f"{SEED}:{kind}")
    demand = CLAIMERS * PER_CLAIMER
    # room for every claim (two waves, then 2): a failure is the fault's, not capacity's
    make_hosts(api, [f"{kind}-0", f"{kind}-1"], 2 * demand * KBPS)
    port = request_json(tmp_path)
    args = ["--project-id", "p", "--user-id", "u", *FLAVOR, "--port-request", f"{PORT_ID}={port}"]
    # two waves of claims: the first meets the fault as it is put in place (it starts 1 s before), the second
    # meets it in place (it starts once inject returned); heal once the second has ended or HOLD s passed
    waves, ended = [], {}
    for wave in (1, 2):
        consumers = [str(uuid.uuid4()) for _ in range(demand)]
        start_at = time.time() + (8 if wave == 1 else 0)
        jobs = [(str(galera.clouds_yaml), galera.cloud, consumers[i::CLAIMERS], start_at, args)
                for i in range(CLAIMERS)]
        waves.append((start_at, pool.map_async(_cli_claimer, jobs, chunksize=1,
                                               callback=lambda _, wave=wave: ended.setdefault(wave, time.time()))))
        if wave == 1:
            time.sleep(max(0.0, start_at - time.time()) + 1)
            injected = faults.inject(kind, rng)
            in_place, t_in_place = time.monotonic() - injected.started, time.time()
    waves[1][1].wait(HOLD)
    t_heal = time.time()
    faults.heal(injected)
    t_healed = time.time()
    healed = faults.healed[-1]
    assert (healed.kind, healed.target) == (kind, injected.target)
    results = [r for _, pending in waves for chunk in pending.get(timeout=900) for r in chunk]
    assert len(results) == 2 * demand
    got = tally(api, results)
    assert no_overcommit(api) == []
    assert faults.missing() == []
    assert faults.active is None
    after = claims_after(galera, args, monkeypatch, n=2)

    def when(wave):
        start_at, t = waves[wave - 1][0], ended[wave]
        return (f"wave {wave} {t - start_at:.0f} s long, ended {t - t_in_place:+.0f} s from in place, "
                f"{t - t_heal:+.0f} s from heal's start, {t - t_healed:+.0f} s from its end")
    print(f"\nseed {SEED}: {kind} on {injected.target}: in place {in_place:.1f} s after inject ({injected.detail}); "
          f"healed in {healed.seconds:.1f} s ({healed.detail or 'nothing restarted'}); {2 * demand} claims by "
          f"{CLAIMERS} claimers in two waves ({when(1)}; {when(2)}): {got['accepted']} accepted, "
          f"{got['refused']} refused {got['refusals']}, "
          f"{got['failed']} failed ({got['leftover']} of them left an allocation; messages: {got['messages']}); "
          f"0 overcommit; {len(after)} claims after the heal succeeded")
    free_claims(api, results, after)
