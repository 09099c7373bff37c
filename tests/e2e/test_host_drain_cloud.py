"""``minbw host drain HOST --dry-run`` on the mini-cloud's real Nova (issue 45 item 1): two computes, devstack0 and
devstack1, each with br-test on physnet0 (1500 kbps each way).

devstack1 already holds a server of 600 kbps (900 left each way). On devstack0: ``a`` with two QoS ports of 300
kbps each (600 on br-test), ``b`` with one of 500 and ``c`` with one of 400 (devstack0's br-test full). Drained
together, ``b`` and ``c`` fill devstack1 exactly, and ``a`` cannot move: greedy by size places ``a`` alone (one
server), the exact plan two. The plan is read with the command as a user types it, then one planned move is made
with real Nova (live migration to the planned host, the target given, never forced) and Placement's allocation of the
server must sit on the planned providers. With devstack1's nova-compute disabled, no server has a destination.
docs/maintenance.md's commands ("Plan a window") run here as written and print what the guide shows; the module
host_drain_info (in check mode) plans the same.
"""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from minbw.ops import server_move
from minbw.placement.client import Placement
from tests.conftest import MINBW
from tests.e2e.test_operators_checks import checks, run_checks
from tests.support import cli_forks

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
GUIDE = REPO / "docs" / "maintenance.md"
BR = {"devstack0": "f9c9ce07-679d-5d72-ac5f-31720811629a", "devstack1": "2c881222-ff6e-5230-8402-1c79507d78b3"}
EGRESS, INGRESS = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"


def minbw(env: dict, *args: str) -> subprocess.CompletedProcess:
    """``minbw ARGS`` against the mini-cloud: what ``python -m minbw.cli`` runs, forked from the warm server
    (``tests/support/cli_forks.py``; the guide's commands below run as written, the venv's ``minbw`` in bash)."""
    return cli_forks.run(MINBW + list(args), env=env, capture_output=True, text=True, timeout=300, check=False)


def plan(env: dict, host: str = "devstack0") -> tuple[int, dict]:
    done = minbw(env, "host", "drain", host, "--dry-run", "-f", "json")
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def qos_server(demo, name: str, kbps: tuple[int, ...], host: str):
    ports = []
    for i, rate in enumerate(kbps):
        policy = demo.policy(f"{name}-qp{i}", bw=[("egress", rate), ("ingress", rate)])
        ports.append(demo.port(f"{name}-p{i}", policy))
    return demo.boot(name, ports, host=host)


def wait_for_trait(api: Placement, root: str, trait: str, present: bool, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while (trait in api.get_provider_traits(root)[0]) != present:
        assert time.monotonic() < deadline, f"{trait} {'never came' if present else 'stayed'} on {root}"
        time.sleep(0.5)


def test_plan_a_drain_then_prove_a_move_with_nova(demo_two_hosts, cloud_two_hosts, playbook):
    demo, conn = demo_two_hosts, demo_two_hosts.conn
    api = Placement(conn)
    env = dict(cloud_two_hosts.env)
    qos_server(demo, "e2e-drain-x", (600,), "devstack1")
    a = qos_server(demo, "e2e-drain-a", (300, 300), "devstack0")
    b = qos_server(demo, "e2e-drain-b", (500,), "devstack0")
    c = qos_server(demo, "e2e-drain-c", (400,), "devstack0")
    roots = {h: api.list_providers(name=h)[0].uuid for h in BR}

    code, got = plan(env)
    assert code == 4, got  # incomplete: exit 4, as --help says
    assert (got["source"], got["complete"], got["method"], got["greedy_moves"]) == ("devstack0", False, "exact", 1)
    moves = {m["server_name"]: m for m in got["moves"]}
    assert sorted(moves) == ["e2e-drain-b", "e2e-drain-c"]
    for name, rate in (("e2e-drain-b", 500), ("e2e-drain-c", 400)):
        m = moves[name]
        assert (m["kind"], m["host"], m["root"]) == ("live", "devstack1", roots["devstack1"])
        assert m["allocations"][BR["devstack1"]] == {EGRESS: rate, INGRESS: rate}
        assert m["allocations"][roots["devstack1"]] == {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}
    [stuck] = got["stuck"]
    assert (stuck["server_id"], stuck["server_name"]) == (a.id, "e2e-drain-a")
    assert "devstack1: NET_BW_" in stuck["reason"] and "on devstack1:Open vSwitch agent:br-test (0 free, 600 needed" \
        in stuck["reason"], stuck["reason"]
    assert {(lim["resource_class"], tuple(lim["providers"]), lim["needs"], lim["free"]) for lim in stuck["limits"]} \
        <= {(rc, ("devstack1:Open vSwitch agent:br-test",), 600, 0) for rc in (EGRESS, INGRESS)}

    # the module plans the same, in check mode too (it changes nothing)
    run = playbook(HERE / "playbooks" / "host_drain.yml", {"host": "devstack0"}, check=True)
    assert not run.failed, run.output
    module = run.result
    assert (module["changed"], module["complete"], module["source"], module["method"]) == (
        False, False, "devstack0", "exact")
    assert {m["server_name"]: (m["host"], m["allocations"]) for m in module["moves"]} == {
        name: (m["host"], m["allocations"]) for name, m in moves.items()}
    assert [s["server_name"] for s in module["stuck"]] == ["e2e-drain-a"]

    # the guide's commands, as written, on this very cloud
    run_checks(checks(GUIDE.read_text(), "plan a window", kind="walk"), env)

    # one planned move made with real Nova: the target host given (a hint the scheduler still checks), never forced
    planned = moves["e2e-drain-b"]
    done = server_move.live_migrate(conn, b.id, host=planned["host"])
    assert (done.migration.status, done.migration.dest_compute) == ("completed", "devstack1")
    held = {rp: a_["resources"] for rp, a_ in api.get_allocations(b.id)["allocations"].items()}
    assert held == planned["allocations"]

    # planned again: c still fits devstack1 (400 left), a still does not
    code, again = plan(env)
    assert code == 4 and [m["server_name"] for m in again["moves"]] == ["e2e-drain-c"]
    assert [s["server_name"] for s in again["stuck"]] == ["e2e-drain-a"]
    assert again["moves"][0]["allocations"] == moves["e2e-drain-c"]["allocations"]

    # a disabled compute is never a destination (Nova's compute_status_filter)
    service = server_move.compute_service(conn, "devstack1")
    conn.compute.disable_service(service, "devstack1", "nova-compute", disabled_reason="e2e drain")
    try:
        wait_for_trait(api, roots["devstack1"], "COMPUTE_STATUS_DISABLED", True)
        code, disabled = plan(env)
        assert code == 4 and disabled["moves"] == [], disabled
        assert {s["server_name"]: s["reason"] for s in disabled["stuck"]} == {
            name: "Nova's prefilters and filters allow none of the 1 destination hosts: devstack1: Nova's "
                  "compute_status_filter removes it (COMPUTE_STATUS_DISABLED: its nova-compute service is disabled "
                  "('openstack compute service set --enable HOST nova-compute' brings it back))"
            for name in ("e2e-drain-a", "e2e-drain-c")}
    finally:
        conn.compute.enable_service(server_move.compute_service(conn, "devstack1"), "devstack1", "nova-compute")
        wait_for_trait(api, roots["devstack1"], "COMPUTE_STATUS_DISABLED", False)


def test_what_the_command_refuses(cloud_two_hosts):
    env = dict(cloud_two_hosts.env)
    unknown = minbw(env, "host", "drain", "nohost", "--dry-run")
    assert unknown.returncode == 1
    assert "host 'nohost': no nova-compute service runs on it. Fix: name one of the compute hosts: devstack0, " \
           "devstack1" in unknown.stderr, unknown.stderr
    both = minbw(env, "host", "drain", "devstack0", "--undo", "--dry-run")
    assert both.returncode == 1 and "--undo enables the host and --dry-run plans its drain: give one" in both.stderr
    bound = minbw(env, "host", "drain", "devstack0", "--parallel", "0")
    assert bound.returncode == 1 and "parallel: the number of moves in flight at once must be a whole number of 1 " \
        "or more, got 0" in bound.stderr, bound.stderr
    assert server_move.compute_service(cloud_two_hosts.connect(), "devstack0").status == "enabled"
    # a host without servers: an empty plan, complete
    code, empty = plan(env, "devstack1")
    assert (code, empty["complete"], empty["moves"], empty["stuck"]) == (0, True, [], [])


def test_anti_affinity_keeps_a_server_off_the_hosts_of_its_group(demo_two_hosts, cloud_two_hosts):
    """A member of an anti-affinity group on devstack0 cannot go where another member is (devstack1): Nova's
    ServerGroupAntiAffinityFilter, read from the group's members."""
    demo, conn = demo_two_hosts, demo_two_hosts.conn
    group = conn.compute.create_server_group(name="e2e-drain-sg", policy="anti-affinity")
    try:
        members = []
        for name, host in (("e2e-drain-m1", "devstack1"), ("e2e-drain-m0", "devstack0")):
            port = demo.port(f"{name}-p0")
            server = conn.compute.create_server(name=name, flavor_id=demo.flavor.id, image_id=demo.image.id,
                                                networks=[{"port": port.id}], host=host,
                                                scheduler_hints={"group": group.id})
            demo.servers.append(server)
            members.append(demo.wait_active(server))
        assert [conn.compute.get_server(m.id).compute_host for m in members] == ["devstack1", "devstack0"]
        code, got = plan(dict(cloud_two_hosts.env))
        assert code == 4 and got["moves"] == [], got
        assert [(s["server_name"], s["reason"]) for s in got["stuck"]] == [
            ("e2e-drain-m0", "Nova's prefilters and filters allow none of the 1 destination hosts: devstack1: server "
                             "group e2e-drain-sg (anti-affinity, 1 per host): never devstack1")]
    finally:
        demo.cleanup()
        demo.servers.clear()
        conn.compute.delete_server_group(group, ignore_missing=True)


def drain(env: dict, *args: str) -> tuple[int, dict, str]:
    done = minbw(env, "host", "drain", *args, "-f", "json")
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def test_drain_a_host_for_real_then_resume_then_undo(demo_two_hosts, cloud_two_hosts, playbook):
    """devstack0 drained with real Nova: ``b`` (500 kbps) and ``c`` (250) ACTIVE, ``d`` (150) SHUTOFF. With 1100 kbps
    taken on devstack1 (400 left: c and d fit exactly, b does not) the plan is incomplete and the drain refuses to start (exit 4): nothing moved, the host left
    enabled. Once devstack1 has room, the drain disables devstack0 with the reason, moves b and c live and d cold
    (confirmed), two at a time, each verified here again against Placement and Neutron; a re-run changes nothing;
    --undo enables devstack0. The module host_drain then disables and enables the empty host, idempotently."""
    demo, conn = demo_two_hosts, demo_two_hosts.conn
    api = Placement(conn)
    env = dict(cloud_two_hosts.env)
    x = qos_server(demo, "e2e-drain-x", (1100,), "devstack1")
    b = qos_server(demo, "e2e-drain-b", (500,), "devstack0")
    c = qos_server(demo, "e2e-drain-c", (250,), "devstack0")
    d = qos_server(demo, "e2e-drain-d", (150,), "devstack0")
    conn.compute.stop_server(d)
    conn.compute.wait_for_server(d, status="SHUTOFF", interval=1, wait=120)
    roots = {h: api.list_providers(name=h)[0].uuid for h in BR}

    # an incomplete plan: nothing is moved, the host stays enabled (exit 4, as the dry run); the guide's command
    run_checks(checks(GUIDE.read_text(), "drain refused", kind="walk"), env)
    code, refused, _err = drain(env, "devstack0", "--reason", "e2e window")
    assert code == 4, refused
    assert (refused["state"], refused["changed"], refused["steps"]) == ("refused", False, [])
    assert [s["server_name"] for s in refused["plan"]["stuck"]] == ["e2e-drain-b"]
    assert server_move.compute_service(conn, "devstack0").status == "enabled"
    assert {conn.compute.get_server(s.id).compute_host for s in (b, c, d)} == {"devstack0"}

    conn.compute.delete_server(x)
    conn.compute.wait_for_delete(x, interval=1, wait=120)
    code, planned = plan(env)
    assert code == 0 and [m["server_name"] for m in planned["moves"]] == ["e2e-drain-b", "e2e-drain-c", "e2e-drain-d"]
    by_name = {m["server_name"]: m for m in planned["moves"]}

    # the drain, as the guide runs it: b and c live, d cold (confirmed), two at a time, each verified
    run_checks(checks(GUIDE.read_text(), "drain", kind="walk"), env)
    service = server_move.compute_service(conn, "devstack0")
    assert (service.status, service.disabled_reason) == ("disabled", "e2e window")
    # each move checked again here: the planned providers, the ports' bindings, the source freed
    for server, rate in ((b, 500), (c, 250), (d, 150)):
        state = server_move.read_move_state(conn, server.id, api,
                                            expect_allocations=by_name[server.name]["allocations"])
        assert state.ok, state.to_dict()["problems"]
        doc = state.to_dict()
        assert doc["server"]["compute_host"] == "devstack1"
        assert doc["server"]["status"] == ("SHUTOFF" if server is d else "ACTIVE")
        assert doc["migration"]["migration_type"] == ("migration" if server is d else "live-migration")
        assert doc["allocations"][server.id][BR["devstack1"]] == {EGRESS: rate, INGRESS: rate}
        assert doc["allocations"][server.id][roots["devstack1"]] == {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}
        bound = [rp for a in doc["binding_allocations"].values() for rp in (a.values() if isinstance(a, dict) else [a])]
        assert bound and set(bound) == {BR["devstack1"]}, doc["binding_allocations"]
        migration = doc["consumers"]["migration"]
        assert migration and api.get_allocations(migration)["allocations"] == {}
    assert not any(api.provider_usages(BR["devstack0"]).values())  # the source freed

    # a re-run reads again: nothing on devstack0, already disabled: nothing to do
    run_checks(checks(GUIDE.read_text(), "resume", kind="walk"), env)
    code, again, _err = drain(env, "devstack0", "--reason", "e2e window")
    assert code == 0 and (again["state"], again["changed"], again["steps"]) == ("drained", False, []), again
    assert again["compute"] == {"host": "devstack0", "id": service.id, "disabled": True, "reason": "e2e window"}

    # --undo enables it, once
    run_checks(checks(GUIDE.read_text(), "undo", kind="walk"), env)
    assert server_move.compute_service(conn, "devstack0").status == "enabled"
    code, undo, _err = drain(env, "devstack0", "--undo")
    assert code == 0 and (undo["state"], undo["changed"], undo["compute"]["disabled"]) == ("enabled", False, False)

    # the module: check mode plans (changes nothing), then drained (disabled), idempotent, then enabled
    book = HERE / "playbooks" / "host_drain_state.yml"
    run = playbook(book, {"host": "devstack0", "state": "drained"}, check=True, diff=True)
    assert not run.failed, run.output
    assert (run.result["changed"], run.result["state"]) == (True, "planned")
    assert server_move.compute_service(conn, "devstack0").status == "enabled"
    run = playbook(book, {"host": "devstack0", "state": "drained"})
    assert not run.failed and run.result["changed"] is True and run.result["compute"]["disabled"] is True
    run = playbook(book, {"host": "devstack0", "state": "drained"})
    assert not run.failed and run.result["changed"] is False
    run = playbook(book, {"host": "devstack0", "state": "enabled"})
    assert not run.failed and run.result["changed"] is True and run.result["compute"]["disabled"] is False
    assert server_move.compute_service(conn, "devstack0").status == "enabled"
