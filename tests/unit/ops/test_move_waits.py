"""How often the waits for a move read Nova (:func:`minbw.ops.server_move.wait_for`): the migration record every poll,
the server (Nova's heavier read) at the first poll, once the migration has ended or failed, at the deadline and
otherwise every ``server_every`` seconds; and :func:`minbw.ops.servers.find_server` reading a server given by its id
once. Nova is stood in for by a script of what each read returns at each second of a fake clock."""
from __future__ import annotations

import types

import pytest

from minbw.errors import NovaMoveFailed
from minbw.ops import server_move
from minbw.ops.servers import find_server


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def server(status="ACTIVE", task_state=None, fault=None):
    return types.SimpleNamespace(id="s-1", name="vm", status=status, task_state=task_state, vm_state="active",
                                 flavor={}, fault=fault, compute_host="h1", hypervisor_hostname="h1")


def migration(status, uuid="m-2"):
    return types.SimpleNamespace(to_dict=lambda computed=False: {"uuid": uuid, "server_id": "s-1", "status": status,
                                                                 "created_at": "2026-12-07T12:00:00"})


class Compute:
    """``servers(t)`` and ``migrations(t)``: what Nova shows at second ``t``; every read counted."""

    def __init__(self, clock, servers, migrations):
        self.clock, self._servers, self._migrations = clock, servers, migrations
        self.server_reads: list[float] = []
        self.migration_reads: list[float] = []

    def get_server(self, server_id):
        self.server_reads.append(self.clock.now)
        return self._servers(self.clock.now)

    def migrations(self, server_id):
        self.migration_reads.append(self.clock.now)
        return self._migrations(self.clock.now)

    def find_server(self, name_or_id, ignore_missing=True, **_):
        self.server_reads.append(self.clock.now)  # found by id: GET /servers/ID; by name: a listing
        return self._servers(self.clock.now) if name_or_id in ("s-1", "vm") else None


def live_migration(clock, servers, migrations, **kwargs):
    compute = Compute(clock, servers, migrations)
    conn = types.SimpleNamespace(compute=compute)
    got = server_move.wait_for(conn, "s-1", "live_migrate", statuses={"ACTIVE"}, migration_statuses={"completed"},
                               since="m-1", sleep=clock.sleep, clock=clock, **kwargs)
    return got, compute


def test_a_live_migration_reads_its_record_each_second_and_the_server_every_five_and_at_the_end():
    clock = Clock()
    got, compute = live_migration(
        clock,
        lambda t: server("ACTIVE", "migrating" if t < 12 else None),
        lambda t: [migration("running" if t < 12 else "completed"), migration("completed", "m-1")],
        timeout=60)
    assert (got.migration.status, got.server["status"]) == ("completed", "ACTIVE")
    assert compute.migration_reads == [float(t) for t in range(13)]
    assert compute.server_reads == [0.0, 5.0, 10.0, 12.0]


def test_the_server_is_read_each_poll_once_the_migration_has_ended_until_its_task_is_done():
    clock = Clock()
    got, compute = live_migration(
        clock,
        lambda t: server("ACTIVE", "migrating" if t < 4 else None),
        lambda t: [migration("running" if t < 2 else "completed")],
        timeout=60)
    assert got.server["status"] == "ACTIVE" and got.migration.status == "completed"
    assert compute.server_reads == [0.0, 2.0, 3.0, 4.0]


def test_a_server_in_error_whose_migration_runs_on_is_seen_at_the_next_server_read():
    clock = Clock()
    with pytest.raises(NovaMoveFailed) as e:
        live_migration(clock, lambda t: server("ERROR" if t >= 3 else "ACTIVE", fault={"message": "boom"}),
                       lambda t: [migration("running")], timeout=60)
    assert "is ERROR: boom; migration m-2 is running" in str(e.value)
    assert clock.now == 5.0


def test_a_failed_migration_reads_the_server_for_what_it_says():
    clock = Clock()
    with pytest.raises(NovaMoveFailed) as e:
        live_migration(clock, lambda t: server("ACTIVE", "migrating" if t < 2 else None),
                       lambda t: [migration("running" if t < 2 else "error")], timeout=60)
    assert str(e.value) == ("live_migrate: migration m-2 of server vm (s-1) is error; the server is ACTIVE (task None)")
    assert clock.now == 2.0


def test_the_timeout_names_the_server_as_read_at_the_deadline():
    clock = Clock()
    with pytest.raises(NovaMoveFailed) as e:
        live_migration(clock, lambda t: server("ACTIVE", "migrating" if t < 7 else "post-migrating"),
                       lambda t: [migration("running")], timeout=7)
    assert "it is ACTIVE (task post-migrating), migration m-2 is running" in str(e.value), str(e.value)
    assert e.value.timed_out


def test_a_wait_without_a_migration_reads_the_server_each_poll():
    clock = Clock()
    compute = Compute(clock, lambda t: server("SHUTOFF" if t < 3 else "ACTIVE"), lambda t: [])
    got = server_move.wait_for(types.SimpleNamespace(compute=compute), "s-1", "start", statuses={"ACTIVE"},
                               timeout=60, sleep=clock.sleep, clock=clock)
    assert got.server["status"] == "ACTIVE"
    assert compute.server_reads == [0.0, 1.0, 2.0, 3.0] and compute.migration_reads == []


def test_find_server_reads_a_server_given_by_its_id_once_and_one_given_by_name_in_full():
    clock = Clock()
    compute = Compute(clock, lambda t: server(), lambda t: [])
    conn = types.SimpleNamespace(compute=compute)
    assert find_server(conn, "s-1").id == "s-1"
    assert len(compute.server_reads) == 1
    assert find_server(conn, "vm").id == "s-1"
    assert len(compute.server_reads) == 3
