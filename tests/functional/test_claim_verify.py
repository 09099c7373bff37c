"""Claims, moves and heal verify what they wrote, against the real (embedded) Placement.

The embedded Placement serves one request at a time, so its server-side retry never overcommits (the race
needs several workers on MariaDB: tests/prodplacement). What a racing claim leaves behind there — one more
allocation than the provider has room for, right after our write was accepted — is made here by another
writer acting at that instant: it raises the inventory for a moment, allocates past the capacity, and puts
the inventory back. The state minbw then reads is real; only its timing is arranged."""
from __future__ import annotations

import dataclasses
import threading
import types
import uuid

import pytest

from minbw.errors import ConcurrentUpdate, ConsumerConflict, NoValidHost, OvercommitUndone, PlacementError
from minbw.ops import claims, allocation_migration, verify
from minbw.ops.heal import _verified
from minbw.placement.client import READERS, Placement
from tests.functional.test_allocation_migration_placement import EGR, allocations, bridge, host, server_request


class Racing(Placement):
    """The real client; right after each of our allocation writes Placement accepted (``times`` of them),
    another consumer (the racer) takes one unit more of ``provider``'s ``rc`` than is left (``then(client,
    consumer)`` acts next). ``restore``: the racer frees its allocation before each of our writes, so that
    Placement accepts every one of them."""

    def __init__(self, conn, provider: str, rc: str = EGR, times: int = 1, restore: bool = False, then=None):
        super().__init__(conn)
        self.provider, self.rc, self.left, self.restore, self.then = provider, rc, times, restore, then
        self.racer = str(uuid.uuid4())
        self.fired = 0

    def _set_total(self, delta: int) -> None:
        invs, gen = self.get_inventories(self.provider)
        inv = invs[self.rc]
        invs[self.rc] = {**inv, "total": inv["total"] + delta, "max_unit": max(inv["max_unit"], inv["total"] + delta)}
        self.set_inventories(self.provider, invs, gen)

    def _before(self, writes: bool) -> None:
        if writes and self.restore:
            claims.free_allocations(self, self.racer)

    def _after(self, writes: bool, consumer: str | None = None) -> None:
        if writes and self.left > 0:
            self.left -= 1
            self.fired += 1
            inv = self.get_inventories(self.provider)[0][self.rc]
            room = inv["total"] - inv.get("reserved", 0) - self.provider_usages(self.provider).get(self.rc, 0)
            self._set_total(room + 1)
            Placement.put_allocations(self, self.racer, {
                "allocations": {self.provider: {"resources": {self.rc: room + 1}}}, "consumer_generation": None,
                "project_id": "racer", "user_id": "racer"})
            self._set_total(-(room + 1))
            if self.then:
                self.then(self, consumer)

    def put_allocations(self, consumer, body):
        writes = bool(body.get("allocations"))
        self._before(writes)
        super().put_allocations(consumer, body)
        self._after(writes, consumer)

    def post_allocations(self, bodies):
        writes = any(b.get("allocations") and b.get("consumer_generation") is not None for b in bodies.values())
        self._before(writes)
        super().post_allocations(bodies)
        self._after(writes)


@pytest.fixture
def hosts(placement, placement_server):
    h1, h2 = host(placement, "h1"), host(placement, "h2")
    return placement, placement_server, h1, h2


def claim(api, req, **kw):
    return claims.claim(api, str(uuid.uuid4()), req, project_id="p", user_id="u", sleep=lambda s: None, **kw)


def test_check_reads_only_what_the_write_raised(hosts):
    api, _, h1, _ = hosts
    req = dataclasses.replace(server_request(), in_tree=h1)
    first, mine = claim(api, req), claim(api, req)
    br = bridge(api, "h1")
    assert verify.check(api, mine.allocations) == ()
    # a capacity from older candidates that says "over" is read again from the inventories before it counts
    stale = {br: {EGR: 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}}
    api.counter.reset()
    assert verify.check(api, mine.allocations, capacities=stale) == ()
    assert sum(1 for _, path in api.counter.calls if path.endswith(f"/{br}/inventories")) == 1
    api.counter.reset()    # and summaries that name every class: usages only, no inventory read
    assert verify.check(api, mine.allocations, capacities={br: {EGR: 2000, "NET_BW_IGR_KILOBIT_PER_SEC": 2000},
                                                           first.host: {"VCPU": 8, "MEMORY_MB": 16384,
                                                                        "DISK_GB": 100}}) == ()
    assert sorted(p for _, p in api.counter.calls) == sorted(f"/resource_providers/{rp}/usages"
                                                            for rp in (br, first.host))
    invs, gen = api.get_inventories(br)
    api.set_inventories(br, {**invs, EGR: {**invs[EGR], "total": 1500}}, gen)   # 2000 used, capacity 1500
    excess = verify.check(api, mine.allocations)
    assert [(e.provider, e.resource_class, e.used, e.capacity) for e in excess] == [(br, EGR, 2000, 1500)]
    # a write that did not raise the class (the same allocations again) has nothing to answer for
    assert verify.check(api, mine.allocations, before=mine.allocations) == ()
    verify.undo_put(api, mine.consumer, mine.allocations, project_id="p", user_id="u")
    assert allocations(api, mine.consumer) == {}
    assert allocations(api, first.consumer) == {rp: a["resources"] for rp, a in first.allocations.items()}
    assert api.provider_usages(br)[EGR] == 1000


def test_a_claim_on_current_candidates_is_one_put_and_its_providers_usages(hosts):
    api, _, h1, _ = hosts
    req = dataclasses.replace(server_request(), in_tree=h1)
    cands = claims.get_candidates(api, req)
    api.counter.reset()
    got = claim(api, req, candidates=cands, candidates_current=True)
    raised = sorted(got.allocations)
    assert len(raised) == 2    # the root (VCPU, ...) and the bridge (bandwidth)
    assert api.counter.calls[0] == ("PUT", f"/allocations/{got.consumer}")
    assert sorted(api.counter.calls[1:]) == [("GET", f"/resource_providers/{rp}/usages") for rp in raised]
    # the same candidates not said to be current (a caller's older ones): their inventories are read too
    api.counter.reset()
    older = claim(api, req, candidates=cands)
    assert sorted(api.counter.calls[1:]) == sorted([("GET", f"/resource_providers/{rp}/usages") for rp in raised]
                                                   + [("GET", f"/resource_providers/{rp}/inventories")
                                                      for rp in raised])
    assert older.host == got.host == h1


def test_a_claim_on_current_candidates_found_over_capacity_is_undone(hosts):
    api, server, h1, h2 = hosts
    cands = claims.get_candidates(api, server_request())
    first_host = cands.by_host()[0][0]
    racing = Racing(server.connect(), bridge(api, "h1" if first_host == h1 else "h2"))
    got = claim(racing, server_request(), candidates=cands, candidates_current=True)
    assert racing.fired == 1 and got.host != first_host
    assert [(a.host, a.outcome) for a in got.attempts][0] == (first_host, claims.UNDONE)
    assert racing.provider_usages(racing.provider).get(EGR, 0) == 1001    # the racer's, not ours


def test_a_claim_found_over_capacity_is_undone_and_lands_on_the_next_host(hosts):
    api, server, h1, h2 = hosts
    cands = claims.get_candidates(api, server_request())
    first_host = cands.by_host()[0][0]
    racing = Racing(server.connect(), bridge(api, "h1" if first_host == h1 else "h2"))
    got = claim(racing, server_request(), candidates=cands)
    assert racing.fired == 1
    assert got.host != first_host
    undone = [a for a in got.attempts if a.outcome == claims.UNDONE]
    assert len(undone) == 1 and undone[0].host == first_host
    assert undone[0].to_dict()["excess"] == [{"provider": racing.provider, "resource_class": EGR, "used": 2001,
                                    "capacity": 2000.0}]
    # what came after the undo: Placement refused the same candidate (the capacity is gone), then the next host
    assert [a.outcome for a in got.attempts][-2:] == ["capacity", "claimed"]
    assert racing.provider_usages(racing.provider).get(EGR, 0) == 1001    # the racer's, not ours
    assert sum(r.get(EGR, 0) for r in allocations(api, got.consumer).values()) == 1000
    assert allocations(api, racing.racer) == {racing.provider: {EGR: 1001}}


def test_claims_accepted_over_capacity_every_time_end_in_overcommit_undone(hosts):
    api, server, h1, _ = hosts
    req = dataclasses.replace(server_request(), in_tree=h1)
    racing = Racing(server.connect(), bridge(api, "h1"), times=100, restore=True)
    consumer = str(uuid.uuid4())
    with pytest.raises(OvercommitUndone) as err:
        claims.claim(racing, consumer, req, project_id="p", user_id="u", retries=2, sleep=lambda s: None)
    assert isinstance(err.value, NoValidHost)     # the CLI's exit 4
    assert racing.fired == 3                      # retries + 1 writes on the one candidate, each undone
    text = str(err.value)
    assert "taken by others" in text and "3 of them Placement accepted over capacity" in text, text
    assert "docs/placement-overcommit.md" in text
    assert err.value.excess == ({"provider": racing.provider, "resource_class": EGR, "used": 2001,
                                 "capacity": 2000.0},)
    assert err.value.to_dict()["excess"][0]["used"] == 2001
    assert allocations(api, consumer) == {}
    assert racing.provider_usages(racing.provider).get(EGR, 0) == 1001      # the racer's only


def test_an_undo_never_takes_back_what_someone_else_wrote(hosts):
    api, server, h1, _ = hosts
    req = dataclasses.replace(server_request(), in_tree=h1)
    theirs = {}

    def other_writer(client, consumer):   # someone else rewrites our consumer (2 VCPU) before we undo
        now = client.get_allocations(consumer)
        theirs.update({rp: {"resources": {**a["resources"], **({"VCPU": 2} if rp == h1 else {})}}
                       for rp, a in now["allocations"].items()})
        Placement.put_allocations(client, consumer, {"allocations": theirs, "project_id": "p", "user_id": "u",
                                                     "consumer_generation": now["consumer_generation"]})

    racing = Racing(server.connect(), bridge(api, "h1"), then=other_writer)
    consumer = str(uuid.uuid4())
    with pytest.raises(ConsumerConflict) as err:
        claims.claim(racing, consumer, req, project_id="p", user_id="u", sleep=lambda s: None)
    assert "cannot undo our write without touching someone else's" in str(err.value)
    assert allocations(api, consumer) == {rp: a["resources"] for rp, a in theirs.items()}   # theirs stays
    assert allocations(api, consumer)[h1]["VCPU"] == 2


def test_a_move_found_over_capacity_gives_the_source_back(hosts):
    api, server, h1, h2 = hosts
    req = server_request()
    booted = claims.claim(api, str(uuid.uuid4()), dataclasses.replace(req, in_tree=h1), project_id="p", user_id="u")
    source = allocations(api, booted.consumer)
    racing = Racing(server.connect(), bridge(api, "h2"))
    with pytest.raises(OvercommitUndone) as err:
        allocation_migration.move(racing, booted.consumer, req, "h2", sleep=lambda s: None, diagnose_on_failure=False)
    assert racing.fired == 1
    assert "taken by others" in str(err.value) and "1 of them Placement accepted over capacity" in str(err.value)
    assert allocations(api, booted.consumer) == source          # back on its source, as it was
    migration = [a for a in err.value.attempts if a.outcome == claims.UNDONE]
    assert migration and api.provider_usages(bridge(api, "h2")).get(EGR, 0) == 1001   # the racer's only
    assert api.provider_usages(bridge(api, "h1"))[EGR] == 1000


def test_a_move_undone_once_is_tried_again(hosts):
    api, server, h1, h2 = hosts
    req = server_request()
    booted = claims.claim(api, str(uuid.uuid4()), dataclasses.replace(req, in_tree=h1), project_id="p", user_id="u")
    # the other writer strikes once; the inventory is back before each of our writes, so the second try lands
    racing = Racing(server.connect(), bridge(api, "h2"), times=1, restore=True)
    moved = allocation_migration.move(racing, booted.consumer, req, "h2", sleep=lambda s: None)
    outcomes = [a.outcome for a in moved.attempts]
    assert outcomes == [claims.UNDONE, "moved"], outcomes
    assert api.provider_usages(bridge(api, "h2"))[EGR] == 1000               # ours (the racer freed its own)
    assert allocations(api, moved.migration) and api.provider_usages(bridge(api, "h1"))[EGR] == 1000


def test_heal_puts_back_what_the_server_had(hosts):
    api, server, h1, _ = hosts
    booted = claims.claim(api, str(uuid.uuid4()), dataclasses.replace(server_request(), in_tree=h1),
                          project_id="p", user_id="u")
    before = {rp: {"resources": dict(a["resources"])} for rp, a in booted.allocations.items()}
    br = bridge(api, "h1")
    healed = {rp: {"resources": {rc: n * (2 if rp == br else 1) for rc, n in a["resources"].items()}}
              for rp, a in before.items()}
    now = api.get_allocations(booted.consumer)
    api.put_allocations(booted.consumer, {"allocations": healed, "consumer_generation": now["consumer_generation"],
                                          "project_id": "p", "user_id": "u"})
    invs, gen = api.get_inventories(br)
    api.set_inventories(br, {**invs, EGR: {**invs[EGR], "total": 1500}}, gen)
    srv = types.SimpleNamespace(id=booted.consumer, name="vm")
    with pytest.raises(OvercommitUndone) as err:
        _verified(api, srv, healed, before, {"project_id": "p", "user_id": "u"})
    assert "put back the allocation the server had" in str(err.value)
    assert allocations(api, booted.consumer) == {rp: a["resources"] for rp, a in before.items()}


def test_a_consumer_row_left_without_allocations_is_claimed(placement, placement_server):
    """Placement creates a new consumer's row (generation 0) before it writes the allocations and deletes it when
    the write fails; a process killed in between (seen on Galera, a node killed mid-storm: docs/galera.md) keeps
    the row, and Placement then refuses every PUT at consumer generation null for that consumer (409
    placement.concurrent_update, its allocations still empty). minbw's claim used to end "No valid host: every
    candidate was taken by others"; it now claims the consumer at generation 0. The row is made here in the
    embedded Placement's own database, as the interrupted write leaves it."""
    import sqlite3
    host(placement, "h1")
    consumer = str(uuid.uuid4())
    db = sqlite3.connect(placement_server.state_dir / "placement.sqlite")
    with db:
        project = db.execute("insert into projects (external_id) values ('orphan-p')").lastrowid
        user = db.execute("insert into users (external_id) values ('orphan-u')").lastrowid
        db.execute("insert into consumers (uuid, project_id, user_id, generation) values (?, ?, ?, 0)",
                   (consumer, project, user))
    db.close()
    req = server_request(1000)
    with pytest.raises(ConcurrentUpdate):  # what Placement answers a new-consumer claim for it
        placement.put_allocations(consumer, {"allocations": {}, "project_id": "p", "user_id": "u",
                                             "consumer_generation": None})
    got = claims.claim(placement, consumer, req, project_id="p", user_id="u")
    held = placement.get_allocations(consumer)
    assert {rp: a["resources"] for rp, a in held["allocations"].items()} == \
        {rp: a["resources"] for rp, a in got.allocations.items()}
    assert held["consumer_generation"] == 1


def test_a_few_providers_usages_are_read_through_the_clients_kept_threads(placement):
    roots = [placement.create_provider(str(uuid.uuid4()), f"usage-{i}", None).uuid for i in range(3)]
    before = threading.active_count()
    first = placement.usages_of(roots)
    pool = placement._readers
    assert first == {rp: {} for rp in roots} and pool is not None
    for _attempt in range(5):    # every verification after the first: the same threads, none started
        assert placement.usages_of(reversed(roots)) == first
    assert placement._readers is pool and threading.active_count() <= before + READERS - 1
    gone = str(uuid.uuid4())
    assert placement.usages_of([roots[0], gone, roots[1]], missing_ok=True) == {roots[0]: {}, roots[1]: {}}
    with pytest.raises(PlacementError) as err:    # a failed read in a kept thread reaches the caller
        placement.usages_of([roots[0], gone])
    assert err.value.status == 404
