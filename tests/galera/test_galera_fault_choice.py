"""The pure parts of tests/support/galera/faults.py (no cluster: runs in every run of the suite, in milliseconds):
targets drawn from a seed (the same seed, the same schedule), what keeps a cluster from being whole, tc's
commands, and the guard that keeps drop_link off the machine's own loopback."""
from __future__ import annotations

import os
import random

import pytest

from tests.support.galera.clustercheck import verdict
from tests.support.galera.faults import (KINDS, disk_full_lines, drop_commands, number, pick_target,
                                         private_netns_problem, schedule, whole_missing)

SYNCED = {"wsrep_local_state_comment": "Synced", "wsrep_cluster_size": "3", "wsrep_cluster_status": "Primary"}
UP = {"status": "UP", "check_status": "L4OK"}
SERVERS = {("mariadb", f"node{n}"): UP for n in (1, 2, 3)} | {("placement_api", f"api{a}"): UP for a in (1, 2)}


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    first = schedule(random.Random(47), KINDS, 40)
    assert first == schedule(random.Random(47), KINDS, 40)
    assert first != schedule(random.Random(48), KINDS, 40)
    assert {k for k, _ in first} == set(KINDS)          # 40 draws of 6 kinds: each drawn
    for kind, target in first:
        assert target in (("api1", "api2") if kind == "kill_api" else ("node1", "node2", "node3")), (kind, target)
    # a kind's targets: every one drawn, in the proportions of a uniform choice
    drawn = [pick_target("pause_node", random.Random(i)) for i in range(300)]
    assert all(60 < drawn.count(f"node{n}") < 140 for n in (1, 2, 3)), drawn
    assert {pick_target("kill_api", random.Random(i)) for i in range(50)} == {"api1", "api2"}
    assert number("node3") == 3 and number("api1") == 1


def test_an_unknown_kind_is_refused_naming_the_kinds():
    with pytest.raises(ValueError, match="unknown fault kind 'kill_haproxy': one of kill_node, kill_api"):
        pick_target("kill_haproxy", random.Random(1))


def test_what_keeps_the_cluster_from_being_whole():
    assert whole_missing({n: SYNCED for n in (1, 2, 3)}, SERVERS, {1: None, 2: None}) == []
    evicted = {**SYNCED, "wsrep_cluster_size": "1", "wsrep_cluster_status": "non-Primary",
               "wsrep_local_state_comment": "Initialized"}
    servers = {**SERVERS, ("mariadb", "node2"): {"status": "DOWN", "check_status": "L4TOUT", "last_chk": ""},
               ("placement_api", "api1"): {"status": "UP 1/2", "check_status": "L7OK", "last_chk": "200"}}
    assert whole_missing({1: SYNCED, 2: evicted, 3: "mariadbd is not running"}, servers,
                         {1: None, 2: "no answer (refused)"}) == [
        "node2: Initialized, cluster size 1, non-Primary", "node3: mariadbd is not running",
        "haproxy mariadb/node2: DOWN (check L4TOUT, no detail)", "haproxy placement_api/api1: UP 1/2 (check L7OK, 200)",
        "api2: no answer (refused)"]
    assert whole_missing({n: SYNCED for n in (1, 2, 3)}, "its stats socket: refused", {1: None, 2: None}) == \
        ["haproxy: its stats socket: refused"]


def test_drop_link_drops_both_ways_of_the_sql_port_only():
    cmds = drop_commands(23307)
    assert cmds[0] == ["tc", "qdisc", "add", "dev", "lo", "root", "handle", "4747:", "htb"]
    assert ["pfifo", "limit", "0"] == cmds[2][-3:]
    filters = [c for c in cmds if c[1] == "filter"]
    assert [c[c.index("match") + 2:c.index("match") + 4] for c in filters] == [["dport", "23307"],
                                                                              ["sport", "23307"]]
    assert all(c[3:5] == ["dev", "lo"] for c in cmds)


def test_drop_link_drops_the_clustercheck_port_too_when_given():
    filters = [c for c in drop_commands(23307, 24598) if c[1] == "filter"]
    assert [c[c.index("match") + 2:c.index("match") + 4] for c in filters] == [
        ["dport", "23307"], ["sport", "23307"], ["dport", "24598"], ["sport", "24598"]]


@pytest.mark.parametrize("status, code", [
    ({"wsrep_local_state": "4", "wsrep_local_state_comment": "Synced", "wsrep_ready": "ON",
      "wsrep_cluster_status": "Primary"}, 200),
    ({"wsrep_local_state": "4", "wsrep_local_state_comment": "Synced", "wsrep_ready": "OFF",
      "wsrep_cluster_status": "Primary"}, 503),
    ({"wsrep_local_state": "0", "wsrep_local_state_comment": "Initialized", "wsrep_ready": "OFF",
      "wsrep_cluster_status": "non-Primary"}, 503),
    ({"wsrep_local_state": "2", "wsrep_local_state_comment": "Donor/Desynced", "wsrep_ready": "ON",
      "wsrep_cluster_status": "Primary"}, 503),
    ({"wsrep_local_state": "3", "wsrep_local_state_comment": "Joined", "wsrep_ready": "ON",
      "wsrep_cluster_status": "Primary"}, 503),
    ({}, 503),
])
def test_clustercheck_answers_200_only_for_a_synced_ready_node(status, code):
    got, body = verdict(status)
    assert got == code, body
    assert body.startswith("Galera node is synced: " if code == 200 else "Galera node is not synced: ")
    assert status.get("wsrep_local_state_comment", "?") in body


def test_drop_link_refuses_the_namespace_this_test_runs_in_unless_it_has_only_lo():
    names = [line.split(":", 1)[0].strip() for line in open("/proc/self/net/dev").read().splitlines()[2:]]
    why = private_netns_problem(os.getpid())
    if names == ["lo"]:
        assert why is None
    else:
        assert why is not None and ("not one of its own" in why or "machine's network namespace" in why), why


def test_a_nodes_lines_about_a_full_disk():
    log = ("2026-12-06 21:30:01 0 [Note] WSREP: Synchronized with group, ready for connections\n"
           "2026-12-06 21:30:02 5 [ERROR] InnoDB: Disk is full writing './placement/allocations.ibd'\n"
           "2026-12-06 21:30:02 5 [ERROR] mariadbd: Error writing file './placement/x' (Errcode: 28 \"No space left on "
           "device\")\n2026-12-06 21:30:03 5 [ERROR] mariadbd: The table 'allocations' is full\n")
    assert [line[20:33] for line in disk_full_lines(log)] == ["5 [ERROR] Inn", "5 [ERROR] mar", "5 [ERROR] mar"]
    assert disk_full_lines("2026-12-06 21:30:01 0 [Note] WSREP: Shifting JOINED -> SYNCED (TO: 53)\n") == []
