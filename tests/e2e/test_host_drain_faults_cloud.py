"""Faults in the middle of a drain, on the mini-cloud's real Nova and Placement (issue 45 item 5): two computes,
devstack0 (drained) and devstack1, each with br-test on physnet0 (1500 kbps each way).

On devstack0: ``b`` with a QoS port of 500 kbps and ``c`` with one of 400; both fit devstack1 together. The drain
moves ``b`` first (largest first), then plans again from fresh reads before it moves ``c``. Between the two (the
drain's ``on_step`` hook, which the command's progress uses too, never a sleep), each test makes one fault:

* (a) devstack1's nova-compute stopped (``cloud.sh stop-compute``, Nova shows it down): the re-plan has no place for
  ``c`` (Nova's ComputeFilter), the drain stops before moving it and says so; started again, a re-run moves ``c``;
* (b) ``b``'s live migration aborted while it runs (Nova's API; the fake driver's rollback): the migration is
  ``cancelled``, ``b`` stays on devstack0, the drain stops before ``c``; a re-run moves ``b``, then ``c`` is put in
  ERROR (Nova's reset-state) before its move: the re-plan says it is ERROR and the drain stops; settled, a re-run
  moves it;
* (c) devstack1's room taken by a boot (700 kbps) once ``b`` moved: the re-plan finds 300 kbps left for ``c``'s 400,
  the drain stops before moving it (which class, on which provider, short by how much) and nothing is overcommitted;
  with the room back, a re-run moves ``c``;
* (d) Placement stopped once ``b`` moved (``cloud.sh stop-placement``): the re-plan fails, the drain stops cleanly
  and says where it stands; Placement started again, a re-run moves ``c``.

Each test checks Nova (where each server runs, its status, the compute's state) and Placement (the allocations, every
provider's usage within its capacity) itself, and leaves devstack0 enabled. docs/maintenance.md's "When a drain
stops" commands run here as written.
"""
from __future__ import annotations

import threading
import time

import pytest

from minbw.ops import server_move
from minbw.placement.client import Placement
from minbw.usecases.cloud import Cloud
from minbw.usecases.drain import DrainRun, DrainStep, HostDrainRequest, drain_host
from tests.e2e.test_host_drain_cloud import BR, EGRESS, INGRESS, GUIDE, qos_server
from tests.e2e.test_operators_checks import checks, run_checks

REASON = "e2e faults"


def drain(cloud, on_step=None, **options) -> tuple[DrainRun, list[str]]:
    """devstack0 drained through the use case (one move at a time), with ``on_step`` called after each step; the
    run and the progress lines it said (the command's: each step's among them)."""
    said: list[str] = []
    run = drain_host(Cloud(cloud.connect, say=said.append),
                     HostDrainRequest("devstack0", reason=REASON, timeout=180, **options), on_step=on_step)
    return run, said


def within_capacity(api: Placement) -> dict[str, dict[str, int]]:
    """Every provider's usage, each class within its capacity ((total - reserved) x allocation_ratio): fails
    otherwise. Returns the usages by provider."""
    usages = {}
    for p in api.list_providers():
        inventories, _generation = api.get_inventories(p.uuid)
        used = api.provider_usages(p.uuid)
        for rc, amount in used.items():
            inv = inventories[rc]
            assert amount <= (inv["total"] - inv["reserved"]) * inv["allocation_ratio"], (p.name, rc, amount, inv)
        usages[p.uuid] = used
    return usages


def on(conn, server) -> tuple[str, str]:
    s = conn.compute.get_server(server.id)
    return s.compute_host, s.status


def bandwidth(api: Placement, consumer: str) -> dict[str, dict[str, int]]:
    """The consumer's allocations on the two br-test providers."""
    held = api.get_allocations(consumer)["allocations"]
    return {h: held[rp]["resources"] for h, rp in BR.items() if rp in held}


def wait_service(conn, host: str, state: str, timeout: float = 150) -> None:
    """Until Nova shows the nova-compute of ``host`` ``state`` (up or down: after service_down_time)."""
    deadline = time.monotonic() + timeout
    while server_move.compute_service(conn, host).state != state:
        assert time.monotonic() < deadline, f"nova-compute on {host} never showed {state}"
        time.sleep(2)


@pytest.fixture
def two(demo_two_hosts, cloud_two_hosts):
    """b (500 kbps) and c (400) on devstack0; devstack0 enabled again after the test, whatever happened."""
    demo = demo_two_hosts
    b = qos_server(demo, "e2e-fault-b", (500,), "devstack0")
    c = qos_server(demo, "e2e-fault-c", (400,), "devstack0")
    yield demo, b, c
    conn = demo.conn
    if server_move.compute_service(conn, "devstack0").status == "disabled":
        conn.compute.enable_service(server_move.compute_service(conn, "devstack0"), "devstack0", "nova-compute")


def first_moved_then_stopped(run: DrainRun, b, c, outcome: str) -> DrainStep:
    """The run moved b (verified) and stopped at c: its step, with ``outcome``."""
    assert run.state == "stopped" and not run.ok, run.to_dict()
    [moved, stopped] = run.steps
    assert (moved.server_id, moved.outcome, moved.host) == (b.id, "moved", "devstack1")
    assert (stopped.server_id, stopped.outcome) == (c.id, outcome)
    assert run.compute.disabled and run.compute.reason == REASON
    return stopped


def resumed(cloud, api, conn, servers, b, c, walk: str = "") -> None:
    """A re-run moves what is left (``walk``: the guide's commands of that name, as written); then b and c run on
    devstack1, each holding its bandwidth there, within capacity; devstack0's br-test holds nothing."""
    if walk:
        run_checks(checks(GUIDE.read_text(), walk, kind="walk"), dict(cloud.env))
    else:
        run, said = drain(cloud)
        assert run.state == "drained" and run.ok, run.to_dict()
        assert [s.server_id for s in run.steps] == [s.id for s in servers]
        assert all(s.outcome == "moved" for s in run.steps)
        assert [line for line in said if "moved and verified" in line] == [
            f"drain devstack0: {s.name} moved and verified" for s in servers]
    for server, rate in ((b, 500), (c, 400)):
        assert on(conn, server) == ("devstack1", "ACTIVE")
        assert bandwidth(api, server.id) == {"devstack1": {EGRESS: rate, INGRESS: rate}}
    usages = within_capacity(api)
    assert usages[BR["devstack1"]] == {EGRESS: 900, INGRESS: 900}
    assert not any(usages[BR["devstack0"]].values())
    assert server_move.compute_service(conn, "devstack0").status == "disabled"


def test_a_destination_compute_stopped_mid_drain(two, cloud_two_hosts):
    demo, b, c = two
    conn, api = demo.conn, Placement(demo.conn)
    stopped = []

    def stop_devstack1(step: DrainStep) -> None:
        if step.server_id == b.id and not stopped:
            cloud_two_hosts.cloud_sh("stop-compute", "devstack1")
            stopped.append(True)
            wait_service(conn, "devstack1", "down")

    try:
        run, said = drain(cloud_two_hosts, on_step=stop_devstack1)
        step = first_moved_then_stopped(run, b, c, "no place")
        assert step.error == (
            "Nova's prefilters and filters allow none of the 1 destination hosts: devstack1: Nova's ComputeFilter "
            "removes it (its nova-compute service is down: Nova's ComputeFilter sends it nothing until it reports "
            "again)"), step.error
        assert run.message.startswith(
            "host devstack0: drain stopped: e2e-fault-c was not moved: the re-plan before its move found no place "
            "for it: Nova's prefilters"), run.message
        assert "1 server(s) moved and verified, 1 not started; devstack0 is disabled" in run.message
        assert said[-1].startswith("drain devstack0: e2e-fault-c not moved: the re-plan found no place for it")
        # Nova and Placement: c untouched on devstack0, b on devstack1, nothing overcommitted
        assert on(conn, c) == ("devstack0", "ACTIVE") and on(conn, b)[0] == "devstack1"
        assert bandwidth(api, c.id) == {"devstack0": {EGRESS: 400, INGRESS: 400}}
        within_capacity(api)
        assert server_move.compute_service(conn, "devstack0").status == "disabled"
        run_checks(checks(GUIDE.read_text(), "stopped: compute down", kind="walk"), dict(cloud_two_hosts.env))
    finally:
        if stopped:
            cloud_two_hosts.cloud_sh("start-compute", "devstack1")
    wait_service(conn, "devstack1", "up")
    resumed(cloud_two_hosts, api, conn, [c], b, c)


def test_a_live_migration_that_fails(two, cloud_two_hosts):
    """b's live migration aborted while it runs (the fake driver's migration takes about 5 s; Nova's abort makes
    it roll back): the migration ``cancelled``, b back on devstack0 with its allocation, the drain stopped."""
    demo, b, c = two
    conn, api = demo.conn, Placement(demo.conn)
    aborted: list[str] = []
    done = threading.Event()

    def abort_b() -> None:
        watcher = cloud_two_hosts.connect()
        while not done.is_set() and not aborted:
            for mig in watcher.compute.server_migrations(b.id):
                if mig.status == "running":
                    watcher.compute.abort_server_migration(mig, b.id)
                    aborted.append(mig.id)
                    return
            time.sleep(0.2)

    thread = threading.Thread(target=abort_b, daemon=True)
    thread.start()
    try:
        run, said = drain(cloud_two_hosts)
    finally:
        done.set()
        thread.join(30)
    assert aborted, "the live migration was never seen running"
    assert run.state == "stopped" and not run.ok, run.to_dict()
    [failed] = run.steps
    assert (failed.server_id, failed.outcome, failed.host) == (b.id, "failed", "devstack1")
    assert "of server e2e-fault-b" in failed.error and "is cancelled; the server is " in failed.error, failed.error
    assert [m.server_id for m in run.pending] == [c.id]
    assert run.message.startswith("host devstack0: drain stopped: e2e-fault-b (live to devstack1) failed: "
                                  "live_migrate: migration "), run.message
    assert "0 server(s) moved and verified, 1 not started; devstack0 is disabled" in run.message
    # Nova rolled it back: b ACTIVE on devstack0, its allocation there, the migration consumer empty
    deadline = time.monotonic() + 60
    while on(conn, b) != ("devstack0", "ACTIVE") or conn.compute.get_server(b.id).task_state:
        assert time.monotonic() < deadline, on(conn, b)
        time.sleep(1)
    assert bandwidth(api, b.id) == {"devstack0": {EGRESS: 500, INGRESS: 500}}
    mig = server_move.latest_migration(conn, b.id)
    assert mig.status == "cancelled" and api.get_allocations(mig.uuid)["allocations"] == {}
    within_capacity(api)

    # the re-run moves b; then c goes to ERROR before its move (Nova's reset-state): the re-plan finds it unmovable
    def error_c(step: DrainStep) -> None:
        if step.server_id == b.id:
            conn.compute.reset_server_state(c, "error")

    again, _said = drain(cloud_two_hosts, on_step=error_c)
    step = first_moved_then_stopped(again, b, c, "no place")
    assert step.error.startswith("it is ERROR: Nova moves a server only when it is ACTIVE or PAUSED"), step.error
    assert on(conn, c) == ("devstack0", "ERROR") and bandwidth(api, c.id) == {"devstack0": {EGRESS: 400,
                                                                                            INGRESS: 400}}
    conn.compute.reset_server_state(c, "active")  # settled: it runs (the fake driver never stopped it)
    resumed(cloud_two_hosts, api, conn, [c], b, c)


def test_room_taken_between_the_plan_and_the_move(two, cloud_two_hosts):
    demo, b, c = two
    conn, api = demo.conn, Placement(demo.conn)
    taken = []

    def boot_on_devstack1(step: DrainStep) -> None:
        if step.server_id == b.id and not taken:
            taken.append(qos_server(demo, "e2e-fault-x", (700,), "devstack1"))

    run, said = drain(cloud_two_hosts, on_step=boot_on_devstack1)
    step = first_moved_then_stopped(run, b, c, "no place")
    assert step.error.startswith("no room left on the 1 host(s) it could use once the others are placed; nearest "
                                 "devstack1: NET_BW_"), step.error
    assert "on devstack1:Open vSwitch agent:br-test (300 free, 400 needed, 100 short" in step.error, step.error
    assert run.message.startswith("host devstack0: drain stopped: e2e-fault-c was not moved: the re-plan before its "
                                  "move found no place for it: no room left"), run.message
    # never overcommitted: devstack1's br-test holds b and x (1200 of 1500), c still on devstack0
    usages = within_capacity(api)
    assert usages[BR["devstack1"]] == {EGRESS: 1200, INGRESS: 1200}
    assert on(conn, c) == ("devstack0", "ACTIVE") and bandwidth(api, c.id) == {"devstack0": {EGRESS: 400,
                                                                                              INGRESS: 400}}
    assert run.message in GUIDE.read_text(), run.message  # the guide shows this very line
    # the guide's dry run, as written: c has no place (exit 4)
    run_checks(checks(GUIDE.read_text(), "stopped: no room", kind="walk"), dict(cloud_two_hosts.env))
    conn.compute.delete_server(taken[0])
    conn.compute.wait_for_delete(taken[0], interval=1, wait=120)
    resumed(cloud_two_hosts, api, conn, [c], b, c)


def test_placement_stopped_mid_drain(two, cloud_two_hosts):
    demo, b, c = two
    conn, api = demo.conn, Placement(demo.conn)
    stopped = []

    def stop_placement(step: DrainStep) -> None:
        if step.server_id == b.id and not stopped:
            cloud_two_hosts.cloud_sh("stop-placement")
            stopped.append(True)

    try:
        run, said = drain(cloud_two_hosts, on_step=stop_placement)
        assert run.state == "stopped" and not run.ok, run.to_dict()
        [moved] = run.steps
        assert (moved.server_id, moved.outcome) == (b.id, "moved")
        assert [m.server_id for m in run.pending] == [c.id]
        assert run.message.startswith("host devstack0: drain stopped: the re-plan before the next move failed: "), \
            run.message
        assert "Placement" in run.message and "1 server(s) moved and verified, 1 not started; devstack0 is " \
            "disabled" in run.message, run.message
        # Nova: nothing moved after b
        assert on(conn, c) == ("devstack0", "ACTIVE") and on(conn, b) == ("devstack1", "ACTIVE")
    finally:
        if stopped:
            cloud_two_hosts.cloud_sh("start-placement")
    # Placement, back: b's allocation on devstack1, c's on devstack0, within capacity
    assert bandwidth(api, b.id) == {"devstack1": {EGRESS: 500, INGRESS: 500}}
    assert bandwidth(api, c.id) == {"devstack0": {EGRESS: 400, INGRESS: 400}}
    within_capacity(api)
    resumed(cloud_two_hosts, api, conn, [c], b, c, walk="resumed")
