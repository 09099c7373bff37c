"""The guarantee on the wire, fleet-wide, on the mini-cloud: devstack0's data plane is a switch of the test's own
(tests/support/dataplane/switch.py) whose queue the OVS agent's real QoS driver programs for a booted server's port,
as tests/e2e/test_enforcement_cloud.py sets it up. Then:

- the calls one host's check makes, and those of the fleet's read of Neutron and Placement at 250 hosts (the role's
  first task, once on the controller), counted on the wire (the numbers docs/enforcement.md, "The fleet", gives); the
  host's check from the fleet's read is the same report as its own, and makes no call;
- the role bandwidth_enforcement through the shipped playbook, run as docs/enforcement.md shows it, over three
  computes: devstack0 (enforced), devstack1 whose reader fails (the spare compute: no agent in Neutron) and one
  that cannot be reached: one summary, the two named with their one-line errors, the run failed; then with a fault (the
  queue's min-rate doubled) and ``bandwidth_enforcement_fail: false``, the finding in the fleet's outcome;
- a host's exporter (``minbw exporter --enforcement-host``), a real process scraped by a real Prometheus with the
  role's rules: the verdict counts and the per-NIC sums, the fault's alert pending, then enforced again once the
  fault is mended; every expression of the dashboard's enforcement panels evaluates; the page's ``--once`` example
  as written, and a check that fails served as failed."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from minbw.dataplane import ovs
from tests.conftest import free_port
from tests.e2e.test_enforcement_cloud import HOST, PAGE, agent_switch
from tests.e2e.test_operators_checks import checks, run_checks
from tests.functional.test_bad_input_cli import Sent
from tests.support import cli_forks
from tests.support.dataplane.reproduce import agent_run
from tests.support.dataplane.switch import Switch
from tests.support.playbook_runner import run_playbook
from tests.support.prometheus.server import dashboard_exprs, install, scraping

PLAYBOOK = PAGE.parents[1] / "playbooks" / "enforcement.yml"


def inventory(tmp_path: Path, switch: Switch) -> Path:
    """devstack0 on the switch (its Open vSwitch agent's data plane: the emulated SR-IOV agent is there too);
    devstack1, the spare compute, which has no agent in Neutron; ``gone``, which ssh cannot reach (a port nothing
    listens on)."""
    path = tmp_path / "inventory.ini"
    path.write_text("[computes]\n"
                    f"devstack0 ansible_connection=local bandwidth_enforcement_ovs_db={switch.remote} "
                    f"bandwidth_enforcement_netns={switch.netns} bandwidth_enforcement_backend=openvswitch\n"
                    "devstack1 ansible_connection=local\n"
                    f"gone ansible_connection=ssh ansible_host=127.0.0.1 ansible_port={free_port()} "
                    f"ansible_ssh_common_args='-o ConnectTimeout=5 -o BatchMode=yes'\n")
    return path


def test_the_fleet_checked_host_by_host_compared_in_one_place_and_exported(demo, cloud, installed_collection,
                                                                          tmp_path):
    from minbw.usecases.cloud import Cloud
    from minbw.usecases.enforcement import EnforcementRequest, read_enforcement_fleet, show_enforcement
    with agent_switch(demo.conn, tmp_path / "switch") as switch:
        nic = switch.nics["br-test"]
        port = demo.port("e2e-fleet-p0", demo.policy("e2e-fleet-min", bw=[("egress", 1000)]))
        demo.boot("e2e-fleet-vm", [port])
        switch.plug("vm-fleet", port.id, 5)
        assert [s["error"] for s in agent_run(switch, f"update:{port.id}:5:1000")] == [None]

        # one inventory read per bridge (the Open vSwitch agent's br-test, br-ex) and PF (the emulated SR-IOV
        # agent's) of devstack0's agents, as Neutron's agent list has them
        devices = {(a.agent_type, d) for a in demo.conn.network.agents(host=HOST) for d in [
            *(a.configuration.get("bridge_mappings") or {}).values(),
            *(pf for pfs in (a.configuration.get("device_mappings") or {}).values() for pf in pfs)]}
        inventories = ["GET :8778 /resource_providers/<id>/inventories"] * len(devices)
        assert len(devices) >= 3, devices
        # one host's check, its calls counted on the wire (a fresh connection: its token and discovery included)
        with Sent() as sent:
            report = show_enforcement(Cloud(cloud.connect), EnforcementRequest(
                HOST, ovs_db=switch.remote, netns=switch.netns, backend="openvswitch")).report
        assert report.counts()["enforced"] == 1 and report.ok, report
        # docs/enforcement.md, "The fleet": a token (and Keystone's and Placement's discovery), 4 Neutron listings,
        # an inventory read per physical bridge or PF, the allocations of br-test's provider (the port's allocation)
        assert sorted(sent.calls) == sorted([
            "GET :5000 /v3", "POST :5000 /v3/auth/tokens", "GET :8778 /", "GET :9696 /v2.0/agents",
            "GET :9696 /v2.0/ports", "GET :9696 /v2.0/qos/policies", "GET :9696 /v2.0/networks", *inventories,
            "GET :8778 /resource_providers/<id>/allocations"]), sent.calls

        # the fleet's read at 250 hosts (devstack0, devstack1 and 248 Neutron has nothing of): the agents and the
        # bound ports listed 100 hosts a call, the policies and networks once, the allocations on the one
        # provider the ports' allocations name, the inventory of each bridge and PF its agents name; then devstack0's check from it, no call
        fleet = [HOST, "devstack1", *(f"absent-{i:03}" for i in range(248))]
        with Sent() as sent:
            read = read_enforcement_fleet(Cloud(cloud.connect), fleet).to_dict()
        reads = json.loads(json.dumps(read))["neutron_reads"]  # as the module's result carries it
        assert len(reads[HOST]["inventories"]) == len(devices), reads[HOST]
        assert sorted(sent.calls) == sorted([
            "GET :5000 /v3", "POST :5000 /v3/auth/tokens", "GET :8778 /", *["GET :9696 /v2.0/agents"] * 3,
            *["GET :9696 /v2.0/ports"] * 3, "GET :9696 /v2.0/qos/policies", "GET :9696 /v2.0/networks",
            *inventories, "GET :8778 /resource_providers/<id>/allocations"]), sent.calls
        assert sorted(reads) == sorted(fleet) and reads["absent-000"]["ports"] == [] == reads["devstack1"]["agents"]
        with Sent() as sent:
            again = show_enforcement(Cloud(cloud.connect), EnforcementRequest(
                HOST, ovs_db=switch.remote, netns=switch.netns, backend="openvswitch",
                neutron_reads=reads[HOST])).report
        assert sent.calls == [] and again == report, (sent.calls, again)

        # the role over three computes, as the page runs the shipped playbook
        hosts = inventory(tmp_path, switch)
        env = dict(cloud.env, ANSIBLE_COLLECTIONS_PATH=str(installed_collection), INVENTORY=str(hosts))
        run_checks(checks(PAGE.read_text(), "enforcement fleet"), env)

        # a fault (the queue's min-rate doubled) and bandwidth_enforcement_fail false: reported, not failed
        queue = next(q for q in ovs.read(switch.remote).queues if q.external_ids["port"] == port.id)
        switch.vsctl("set", "Queue", queue.uuid, "other_config:min-rate=2000000")
        outcome = tmp_path / "fleet.json"
        run = run_playbook(PLAYBOOK, {"enforcement_result_file": str(outcome), "bandwidth_enforcement_fail": False},
                           env=env, inventory=hosts)
        assert not run.failed and run.recaps["devstack0"]["ok"] > 0, run.output
        fleet = json.loads(outcome.read_text())
        assert (fleet["ok"], fleet["with_findings"], fleet["unread"]) == (False, ["devstack0"], ["devstack1", "gone"])
        assert fleet["counts"] == {"enforced": 0, "missing": 0, "wrong rate": 1, "placement-only": 0, "orphan": 0}
        assert fleet["hosts"]["devstack0"]["findings"] == [
            f"wrong rate x2: rule {port.id}: 1000 kbps asked: 1000000 bit/s expected, 2000000 bit/s programmed "
            f"(queue on {nic})"]
        assert fleet["hosts"]["devstack1"] == {"read": False, "error": (
            "not read: host devstack1: no agent minbw enforcement show reads in Neutron's agent list (agents there: "
            "none); it checks the Open vSwitch agent, the NIC Switch agent (SR-IOV) and OVN Controller agents")}
        assert fleet["hosts"]["gone"]["error"].startswith("unreachable: "), fleet["hosts"]["gone"]
        assert len(fleet["hosts"]["gone"]["error"].splitlines()) == 1

        # a host's exporter, scraped by Prometheus with the role's rules; the fault is still there
        config = tmp_path / "exporter.yaml"
        config.write_text(json.dumps({"enforcement": {"ovs_db": switch.remote, "netns": switch.netns,
                                                      "backend": "openvswitch"}}))
        install()
        with scraping(tmp_path, [sys.executable, "-m", "minbw.cli", "exporter", "--enforcement-host", HOST, "--config",
                                 str(config), "--interval", "1"], cloud.env) as prom:
            checked = {(("backend", "openvswitch"), ("host", HOST), ("verdict", v)): n for v, n in (
                ("enforced", 0.0), ("missing", 0.0), ("wrong rate", 1.0), ("placement-only", 0.0), ("orphan", 0.0))}
            prom.wait("minbw_enforcement_checks", checked)
            prom.wait('ALERTS{alertname="MinbwGuaranteeNotEnforced",alertstate="pending"}', 1)
            on = (("bridge", "br-test"), ("host", HOST), ("nic", nic))
            assert prom.query("minbw_enforcement_nic_speed_bits_per_second")[on] == 10_000_000_000
            assert prom.query("minbw_enforcement_nic_admitted_bits_per_second") == {
                (("bridge", "br-test"), ("direction", d), ("host", HOST), ("nic", nic)): 1_500_000 for d in
                ("egress", "ingress")} | {(("bridge", "br-ex"), ("direction", "ingress"), ("host", HOST),
                                           ("nic", switch.nics["br-ex"])): 1000}
            assert prom.query("minbw_enforcement_nic_enforced_bits_per_second")[on] == 0  # its only rule is wrong
            assert prom.query("minbw_enforcement_nic_errors")[on] == 0
            assert prom.query('minbw_report_success{report="enforcement"}') == {(("report", "enforcement"),): 1}
            results = {e: prom.query(e) for e in dashboard_exprs() if "minbw_enforcement_" in e}
            assert len(results) == 4 and all(results.values()), results

            # mended: enforced at the next check
            switch.vsctl("set", "Queue", queue.uuid, "other_config:min-rate=1000000")
            prom.wait('minbw_enforcement_checks{verdict="enforced"}', 1)
            prom.wait('minbw_enforcement_checks{verdict="wrong rate"}', 0)
            prom.wait(f'minbw_enforcement_nic_enforced_bits_per_second{{nic="{nic}"}}', 1_000_000)

        # the page's --once example as written; and a check that fails, served as failed
        run_checks(checks(PAGE.read_text(), "enforcement exporter"), dict(cloud.env, HOST=HOST, CONFIG=str(config)))
        config.write_text(json.dumps({"enforcement": {"ovs_db": f"unix:{tmp_path}/none.sock",
                                                      "backend": "openvswitch"}}))
        once = cli_forks.run([sys.executable, "-m", "minbw.cli", "exporter", "--enforcement-host", HOST, "--config",
                              str(config), "--once"], env=cloud.env, capture_output=True, text=True, timeout=120)
        assert once.returncode == 0, once.stderr
        assert 'minbw_report_success{report="enforcement"} 0.0' in once.stdout, once.stdout
        assert "minbw_enforcement_checks{" not in once.stdout, once.stdout
        assert f"the enforcement check failed: DataPlaneUnreadable: unix:{tmp_path}/none.sock: cannot connect: " \
               f"no such socket" in once.stderr, once.stderr
