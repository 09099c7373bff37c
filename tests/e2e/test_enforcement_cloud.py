"""minbw enforcement show on the mini-cloud: a server whose port has a minimum egress rule boots on devstack0, then
a switch of the test's own (tests/support/dataplane/switch.py: ovsdb-server and ovs-vswitchd on the userspace
datapath, a TAP device as each physical bridge's NIC, in a network namespace of its own) stands for devstack0's
data plane, with the physical bridges of devstack0's OVS agent as Neutron's agent list reports them. The agent's real
QoS driver (neutron 29.0.0, tests/support/oracle/neutron_ovs_qos.py) programs the port's queue, as the OVS agent
would; the command, run as a user runs it against the real Neutron and Placement, finds it enforced with Placement's
reservation beside it. Then faults, written with ovs-vsctl, each found and named: the queue's min-rate set wrong, the
QoS row detached from the NIC, the queue destroyed, and, after an agent restart, a queue left for a port that no
longer exists and the previous run's QoS row. docs/enforcement.md's example runs as written.

In the plugin-off cloud, devstack0 runs the real neutron-openvswitch-agent on an Open vSwitch of its own, and
nova-compute plugs the VIFs through os-vif (tests/support/minicloud/ovs_agent.sh, os_vif_driver.py): there the
daemon's own queues are checked, through a policy change on a bound port, an agent restart and a server deleted
after it (docs/enforcement.md, "With the real agent and Nova's VIF plugging")."""
from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from openstack.exceptions import HttpException

from minbw.dataplane import ovs
from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.ops.sync import sync_providers
from minbw.placement.client import Placement
from tests.e2e.test_operators_checks import checks, run_checks
from tests.support import cli_forks
from tests.support.dataplane.reproduce import agent_run
from tests.support.dataplane.switch import Switch, unavailable

HOST = "devstack0"
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"  # devstack0:Open vSwitch agent:br-test
REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "enforcement.md"


def show(cloud, switch: Switch, *options: str) -> tuple[int, dict | None, str]:
    """``minbw enforcement show --host devstack0 --backend openvswitch`` on the switch (devstack0 has the SR-IOV
    agent's emulator too), as JSON: exit code, document, stderr."""
    r = cli_forks.run([sys.executable, "-m", "minbw.cli", "enforcement", "show", "--host", HOST, "--backend",
                       "openvswitch", "--ovs-db", switch.remote, "--netns", switch.netns, "--json", *options],
                      env=cloud.env,
                      capture_output=True, text=True, timeout=300)
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr


@contextlib.contextmanager
def agent_switch(conn, path: Path) -> Iterator[Switch]:
    """A switch of the test's own in ``path`` standing for devstack0's data plane: the physical bridges of its OVS
    agent as Neutron's agent list reports them (the test skipped where no switch can be made here)."""
    why = unavailable()
    if why:
        pytest.skip(why)
    (agent,) = [a for a in conn.network.agents(host=HOST) if a.agent_type == "Open vSwitch agent"]
    mappings = agent.configuration["bridge_mappings"]
    assert mappings == {"physnet0": "br-test", "public": "br-ex"}
    with Switch(path, physical_bridges=sorted(mappings.values())) as switch:
        yield switch


def verdicts(document: dict) -> list[tuple]:
    return [(c["kind"], c["subject"], c["verdict"], c["factor"]) for c in document["checks"]]


def test_a_ports_guarantee_enforced_then_each_fault_found(demo, cloud, tmp_path):
    conn = demo.conn
    with agent_switch(conn, tmp_path) as switch:
        nic = switch.nics["br-test"]
        if not list(conn.network.ports(binding_host_id=HOST)):  # an earlier test of the lane may leave one bound
            # read all the same: nothing programmed, nothing to act on
            code, document, err = show(cloud, switch)
            assert (code, document["checks"]) == (0, []), (document, err)

        policy = demo.policy("e2e-enf-min", bw=[("egress", 1000)])
        port = demo.port("e2e-enf-p0", policy)
        server = demo.boot("e2e-enf-vm", [port])
        port = conn.network.get_port(port.id)
        assert port.binding_host_id == HOST and set(port.binding_profile["allocation"].values()) == {BR_TEST}
        switch.plug("vm-enf", port.id, 5)  # as os-vif plugs it: br-int, external_ids:iface-id, ofport 5
        assert [s["error"] for s in agent_run(switch, f"update:{port.id}:5:1000")] == [None]

        # enforced: the rule, Placement's reservation, the queue in OVSDB and the HTB class in the kernel agree
        code, document, err = show(cloud, switch)
        assert code == 0, (err, document)
        assert verdicts(document) == [("rule", port.id, "enforced", None)]
        (check,) = document["checks"]
        assert check["server"] == server.id
        assert check["rule"] == {"type": "minimum_bandwidth", "direction": "egress", "value": 1000, "unit": "kbps",
                                 "expected": 1_000_000, "expected_unit": "bit/s", "policy": policy.id,
                                 "policy_of": "port"}
        assert check["reserved"] == {"provider": BR_TEST, "name": f"{HOST}:Open vSwitch agent:br-test",
                                     "class": "NET_BW_EGR_KILOBIT_PER_SEC", "amount": 1000, "shared_by": []}
        assert [(p["nic"], p["queue"], p["min_rate"]) for p in check["programmed"]] == [(nic, 5, 1_000_000)]
        assert check["kernel"] == [{"nic": nic, "class": "1:6", "rate": 1_000_000}]
        assert {n["bridge"]: (n["nic"], n["speed_kbps"], n["inventory_kbps"], n["ingress_inventory_kbps"],
                              n["enforced_kbps"], n["errors"]) for n in document["nics"]} == {
            "br-test": (nic, 10_000_000, 1500, 1500, 1000, []),
            "br-ex": (switch.nics["br-ex"], 10_000_000, None, 1, 0, [])}
        # the page's example, as written
        run_checks(checks(PAGE.read_text(), "enforcement show"),
                   dict(cloud.env, HOST=HOST, OVS_DB=switch.remote, NETNS=switch.netns))

        queue = next(q for q in ovs.read(switch.remote).queues if q.external_ids["port"] == port.id)
        qos = next(q for q in ovs.read(switch.remote).qos if q.ports)

        # the queue's min-rate set wrong: OVSDB and the kernel hold twice the rule
        switch.vsctl("set", "Queue", queue.uuid, "other_config:min-rate=2000000")
        code, document, _ = show(cloud, switch)
        assert (code, verdicts(document)) == (3, [("rule", port.id, "wrong rate", 2.0)])
        assert "1000000 bit/s expected, 2000000 bit/s programmed" in document["checks"][0]["why"]
        switch.vsctl("set", "Queue", queue.uuid, "other_config:min-rate=1000000")

        # the QoS row detached from the port's NIC (br-ex's NIC keeps it, as the agent puts it on every NIC)
        switch.vsctl("clear", "Port", nic, "qos")
        code, document, _ = show(cloud, switch)
        assert (code, verdicts(document)) == (3, [("rule", port.id, "missing", None)])
        assert document["checks"][0]["why"] == (
            f"1000 kbps asked: {nic} has no QoS row (its port's qos column is empty); its Queue row {queue.uuid} "
            f"(min-rate 1000000) is in {qos.uuid} on {switch.nics['br-ex']}")
        switch.vsctl("set", "Port", nic, f"qos={qos.uuid}")

        # the queue destroyed (taken out of the QoS row first: the row holds it)
        switch.vsctl("remove", "QoS", qos.uuid, "queues", "5", "--", "destroy", "Queue", queue.uuid)
        code, document, _ = show(cloud, switch)
        assert (code, verdicts(document)) == (3, [("rule", port.id, "missing", None)])
        assert f"the QoS row on {nic} ({qos.uuid}) has no queue for it; no Queue row names it" in \
            document["checks"][0]["why"]

        # the agent restarts and programs the port again, and a port it had a queue for is deleted meanwhile: that
        # queue and the first run's QoS row stay
        gone = demo.port("e2e-enf-gone", policy)
        switch.plug("vm-gone", gone.id, 6)
        assert [s["error"] for s in agent_run(switch, f"update:{port.id}:5:1000", f"update:{gone.id}:6:500")] == \
            [None, None]
        conn.network.delete_port(gone)
        code, document, _ = show(cloud, switch)
        assert (code, verdicts(document)) == (3, [("rule", port.id, "enforced", None),
                                                  ("queue", gone.id, "orphan", None), ("qos", qos.uuid, "orphan", None)])
        orphan = document["checks"][1]
        assert orphan["why"] == f"port {gone.id} is not bound to {HOST} (deleted, or moved away) and its queue " \
                                f"stayed; it reaches {switch.nics['br-ex']}, {nic}"
        assert [k["rate"] for k in orphan["kernel"]] == [500_000, 500_000]
        assert document["checks"][2]["why"].startswith("a minimum bandwidth QoS row on no port (queues: none): left "
                                                       "by an earlier agent run")

        # what cannot be read is one line naming it
        code, _, err = show(cloud, switch, "--ovs-db", f"unix:{tmp_path}/none.sock")
        assert (code, err.splitlines()[-1:]) == (1, [f"minbw: error: unix:{tmp_path}/none.sock: cannot connect: no "
                                                     f"such socket"]), err
        code, _, err = show(cloud, switch, "--host", "nosuchhost")
        assert (code, err.splitlines()[-1:]) == (1, [
            "minbw: error: host nosuchhost: no Open vSwitch agent in Neutron's agent list (agents there: none); backend "
            "openvswitch checks the Open vSwitch agent"]), err
        # devstack0 has the SR-IOV agent's emulator beside the OVS agent: without --backend, the choice is asked for
        r = cli_forks.run([sys.executable, "-m", "minbw.cli", "enforcement", "show", "--host", HOST], env=cloud.env,
                          capture_output=True, text=True, timeout=300)
        assert (r.returncode, r.stderr.splitlines()[-1:]) == (1, [
            f"minbw: error: host {HOST} has Open vSwitch agent and NIC Switch agent: choose the data plane to check "
            f"with --backend openvswitch or sriov"]), r.stderr


# ---- the real neutron-openvswitch-agent (the plugin-off cloud's devstack0: tests/support/minicloud/ovs_agent.sh)

REAL_BACKEND = ("--backend", "openvswitch")  # devstack0 there has the SR-IOV agent (the emulator) too


def real_switch(cloud) -> SimpleNamespace:
    """devstack0's own Open vSwitch in the plugin-off cloud: its database and the namespace of its NICs."""
    return SimpleNamespace(remote=cloud.env["MINICLOUD_OVS_DB"], netns=cloud.env["MINICLOUD_OVS_NETNS"])


def show_until(cloud, switch, done, what: str, timeout: float = 60) -> dict:
    """``enforcement show`` again every second until ``done(document)``; fails with the last document."""
    deadline = time.monotonic() + timeout
    while True:
        code, document, err = show(cloud, switch, *REAL_BACKEND)
        if document and "checks" in document and done(document):
            return document
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s; last (exit {code}): {document} {err}"
        time.sleep(1)


def by_subject(document: dict) -> dict:
    return {c["subject"]: c for c in document["checks"]}


def test_the_real_ovs_agent_enforces_follows_a_policy_change_and_leaves_its_rows_at_a_restart(demo_plugin_off,
                                                                                             cloud_plugin_off):
    """The real agent (neutron 29.0.0, its qos extension) and nova-compute plugging the VIFs through os-vif: the
    queue it programs is found enforced; a policy changed on a bound port moves Placement's allocation and the
    queue's min-rate with it; a restart leaves the previous run's QoS row (docs/enforcement.md, "After an agent
    restart", now with the daemon), and a port deleted after it keeps its queue."""
    demo, conn, cloud = demo_plugin_off, demo_plugin_off.conn, cloud_plugin_off
    switch = real_switch(cloud)
    api = Placement(conn)
    (agent,) = [a for a in conn.network.agents(host=HOST) if a.agent_type == "Open vSwitch agent"]
    assert (agent.binary, agent.configuration["datapath_type"], agent.configuration["extensions"]) == (
        "neutron-openvswitch-agent", "netdev", ["qos"])
    # what Placement's providers are made of is what the emulator reports from the same ini
    emulator = REPO / "tests" / "support" / "minicloud" / "agent_emulator.py"
    emulated = json.loads(subprocess.run(
        [f"{cloud.env['MINICLOUD_VENV']}/bin/python", str(emulator),
         "--kind", "openvswitch", "--host", HOST, "--config-file", cloud.env["MINICLOUD_NEUTRON_CONF"],
         "--config-file", str(cloud.ovs_ini), "--print-config"], capture_output=True, text=True, check=True,
        timeout=120).stdout)["configurations"]
    placement_keys = ("bridge_mappings", "resource_provider_bandwidths", "resource_provider_inventory_defaults",
                      "resource_provider_hypervisors", "resource_provider_packet_processing_without_direction",
                      "resource_provider_packet_processing_with_direction",
                      "resource_provider_packet_processing_inventory_defaults")
    assert {k: agent.configuration[k] for k in placement_keys} == {k: emulated[k] for k in placement_keys}

    # Neutron's placement plugin is off here: minbw's sync makes the providers (undone at the end, as the cloud's
    # next test expects none)
    desired = desired_state([load_agent_ini(cloud.ovs_ini.read_text(), source=str(cloud.ovs_ini), host=HOST)])
    before = {p.uuid for p in api.list_providers()}
    sync_providers(api, desired)
    # what an earlier run left in the switch (none in a fresh cloud) is not this test's
    db = ovs.read(switch.remote)
    left = {q.uuid for q in db.qos} | {q.external_ids.get("port") for q in db.queues}

    def found(document: dict) -> list[tuple]:
        return sorted(v for v in verdicts(document) if v[1] not in left)
    try:
        a_policy = demo.policy("e2e-real-1000", bw=[("egress", 1000)])
        b_policy = demo.policy("e2e-real-300", bw=[("egress", 300)])
        a, b = demo.port("e2e-real-a", a_policy), demo.port("e2e-real-b", b_policy)
        vm_a, vm_b = demo.boot("e2e-real-a", [a]), demo.boot("e2e-real-b", [b])
        for port in (a, b):  # the agent reports the port up once it has handled it
            deadline = time.monotonic() + 60
            while (bound := conn.network.get_port(port.id)).status != "ACTIVE":
                assert time.monotonic() < deadline, f"port {port.id}: {bound.status} 60 s after the boot"
                time.sleep(0.5)
            assert (bound.binding_vif_type, bound.binding_vif_details["datapath_type"]) == ("ovs", "netdev")
        # os-vif's port on br-int, named as nova names it, and the queue numbered after its ofport
        plugged = {i.external_ids.get("iface-id"): (i.name, i.ofport)
                   for br in ovs.read(switch.remote).bridges if br.name == "br-int" for p in br.ports
                   for i in p.interfaces}
        assert plugged[a.id][0] == f"tap{a.id[:11]}" and plugged[b.id][0] == f"tap{b.id[:11]}", plugged
        document = show_until(cloud, switch, lambda d: found(d) == sorted(
            [("rule", a.id, "enforced", None), ("rule", b.id, "enforced", None)]), "both queues enforced")
        check = by_subject(document)[a.id]
        nic = check["programmed"][0]["nic"]
        assert [(p["queue"], p["min_rate"]) for p in check["programmed"]] == [(plugged[a.id][1], 1_000_000)]
        assert check["kernel"] == [{"nic": nic, "class": f"1:{plugged[a.id][1] + 1}", "rate": 1_000_000}]
        assert check["reserved"]["amount"] == 1000

        # the rule itself cannot change under a bound port: Neutron refuses (HTTP 501)
        (rule,) = conn.network.qos_minimum_bandwidth_rules(a_policy)
        with pytest.raises(HttpException, match="Cannot update QoS policies/rules backed by resources tracked in "
                                                "Placement") as refused:
            conn.network.update_qos_minimum_bandwidth_rule(rule, a_policy, min_kbps=1200)
        assert refused.value.status_code == 501
        # a policy changed on the bound port: Neutron moves the allocation, the agent the queue's min-rate
        conn.network.update_port(a, qos_policy_id=demo.policy("e2e-real-1200", bw=[("egress", 1200)]).id)
        assert api.get_allocations(vm_a.id)["allocations"][BR_TEST]["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1200}
        document = show_until(cloud, switch, lambda d: by_subject(d)[a.id]["verdict"] == "enforced" and [
            p["min_rate"] for p in by_subject(d)[a.id]["programmed"]] == [1_200_000], "the queue at 1200 kbps")
        assert by_subject(document)[a.id]["reserved"]["amount"] == 1200
        assert by_subject(document)[a.id]["kernel"][0]["rate"] == 1_200_000
        first_run = {q.uuid for q in ovs.read(switch.remote).qos if q.ports} - left
        assert len(first_run) == 1

        # the agent restarts: it programs both ports again under a QoS row of its new run; the first run's stays
        cloud.cloud_sh("restart-agents", HOST)
        (old,) = first_run
        document = show_until(cloud, switch, lambda d: found(d) == sorted(
            [("rule", a.id, "enforced", None), ("rule", b.id, "enforced", None), ("qos", old, "orphan", None)]),
            "both enforced again and the first run's QoS row left")
        assert {q.uuid for q in ovs.read(switch.remote).qos if q.ports} - first_run

        # then a server is deleted: os-vif unplugs its port, and the agent cannot remove the port's queue (the first
        # run's QoS row still holds it), so the queue stays
        (queue_b,) = [q.uuid for q in ovs.read(switch.remote).queues if q.external_ids.get("port") == b.id]
        conn.compute.delete_server(vm_b)
        conn.compute.wait_for_delete(vm_b, interval=0.5, wait=120)
        # neutron's ovs_lib logs the failed delete, naming the row that holds the queue
        log, said = Path(cloud.env["MINICLOUD_LOG_DIR"], "agent-ovs.log"), f"Queue {queue_b} was still in use by " \
            f"the following QoS rules: {old}"
        deadline = time.monotonic() + 60
        while said not in log.read_text():
            assert time.monotonic() < deadline, f"the agent did not log {said!r} within 60 s of the unplug"
            time.sleep(0.5)
        document = show_until(cloud, switch, lambda d: found(d) == sorted(
            [("rule", a.id, "enforced", None), ("queue", b.id, "orphan", None), ("qos", old, "orphan", None)]),
            "the deleted server's queue left")
        assert b.id not in {i.external_ids.get("iface-id") for br in ovs.read(switch.remote).bridges
                            for p in br.ports for i in p.interfaces}
        # the page's example, as written
        run_checks(checks(PAGE.read_text(), "enforcement show, real agent"),
                   dict(cloud.env, HOST=HOST, OVS_DB=switch.remote, NETNS=switch.netns))
    finally:
        demo.cleanup()
        for provider in reversed(desired.providers):
            if provider.uuid not in before:
                api.delete_provider(provider.uuid)
