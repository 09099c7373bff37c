"""playbooks/rolling_maintenance.yml on the mini-cloud's real Nova (issue 45 item 3): devstack0 and devstack1, host by
host (serial 1): drained (the module host_drain), the operator's tasks run while the host is disabled
(tests/e2e/playbooks/maintenance_tasks.yml writes a line per host), enabled again. Check mode plans every host and
changes nothing; a host that cannot drain stops the play there, the next host untouched."""
from __future__ import annotations

from pathlib import Path

from minbw.ops import server_move
from tests.e2e.test_host_drain_cloud import qos_server
from tests.e2e.test_operators_checks import checks, shows
from tests.support.playbook_runner import run_playbook
from tests.support.tour import run_tour

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "playbooks" / "rolling_maintenance.yml"
TASKS = REPO / "tests" / "e2e" / "playbooks" / "maintenance_tasks.yml"
GUIDE = REPO / "docs" / "maintenance.md"


def rolling(cloud_manager, collection, tmp_path):
    """The playbook for real; its tasks delegated to localhost (localhost named in the inventory: its modules
    forked from the warm server, ``local_hosts``; the computes' hosts are this machine too)."""
    inventory = tmp_path / "inventory"
    inventory.write_text("localhost ansible_connection=local\n"
                         "[computes]\ndevstack0 ansible_connection=local\ndevstack1 ansible_connection=local\n")
    log = tmp_path / "maintenance.log"
    env = dict(cloud_manager.current.env, ANSIBLE_COLLECTIONS_PATH=str(collection), OS_CLOUD="minicloud")
    run = run_playbook(BOOK, {"maintenance_tasks": str(TASKS), "maintenance_log": str(log),
                              "maintenance_reason": "e2e rolling"}, env=env, inventory=inventory, local_hosts=True)
    return run, (log.read_text().splitlines() if log.exists() else [])


def test_rolling_maintenance_host_by_host(demo_two_hosts, cloud_two_hosts, cloud_manager, installed_collection,
                                          tmp_path):
    demo, conn = demo_two_hosts, demo_two_hosts.conn
    m = qos_server(demo, "e2e-roll-m", (300,), "devstack0")

    # check mode, as docs/maintenance.md shows it: both hosts planned, nothing changed, the operator's tasks not run
    inventory, log = tmp_path / "inventory", tmp_path / "maintenance.log"
    inventory.write_text("[computes]\ndevstack0 ansible_connection=local\ndevstack1 ansible_connection=local\n")
    env = dict(cloud_manager.current.env, ANSIBLE_COLLECTIONS_PATH=str(installed_collection), OS_CLOUD="minicloud",
               INVENTORY=str(inventory), TASKS=str(TASKS))
    found = checks(GUIDE.read_text(), "rolling check", kind="walk")
    assert [c.split()[0:4] for c, _ in found] == [
        ["ansible-playbook", "-i", '"$INVENTORY"', "playbooks/rolling_maintenance.yml"]]
    [(_, code, output)] = run_tour([found[0][0]], env)
    assert code == 0 and shows(found[0][1], output), output
    assert "devstack0" in output and "devstack1" in output and not log.exists()
    assert "e2e-roll-m" in output and "planned" in output
    assert {server_move.compute_service(conn, h).status for h in ("devstack0", "devstack1")} == {"enabled"}

    # for real: devstack0 drained (m to devstack1), its window, enabled; then devstack1 (m back to devstack0)
    run, log = rolling(cloud_manager, installed_collection, tmp_path)
    assert not run.failed, run.output
    assert log == ["devstack0 True e2e rolling", "devstack1 True e2e rolling"]
    assert conn.compute.get_server(m.id).compute_host == "devstack0"
    assert {server_move.compute_service(conn, h).status for h in ("devstack0", "devstack1")} == {"enabled"}

    # a host that cannot drain stops the play there: 1200 kbps on each host, 1500 each: neither fits the other
    big0 = qos_server(demo, "e2e-roll-big0", (1000,), "devstack0")
    big1 = qos_server(demo, "e2e-roll-big1", (1000,), "devstack1")
    (tmp_path / "maintenance.log").unlink()
    run, log = rolling(cloud_manager, installed_collection, tmp_path)
    assert run.failed and log == [], run.output
    assert "the drain plan is incomplete" in run.output
    assert "devstack1" not in run.recaps or run.recaps["devstack1"]["ok"] == 0, run.recaps
    assert {server_move.compute_service(conn, h).status for h in ("devstack0", "devstack1")} == {"enabled"}
    assert (conn.compute.get_server(big0.id).compute_host, conn.compute.get_server(big1.id).compute_host) == (
        "devstack0", "devstack1")
