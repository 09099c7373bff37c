"""minbw enforcement show on the mini-cloud: a server whose port has a minimum egress rule boots on devstack0, then
a switch of the test's own (tests/support/dataplane/switch.py: ovsdb-server and ovs-vswitchd on the userspace
datapath, a TAP device as each physical bridge's NIC, in a network namespace of its own) stands for devstack0's
data plane, with the physical bridges of devstack0's OVS agent as Neutron's agent list reports them. The agent's real
QoS driver (neutron 29.0.0, tests/support/oracle/neutron_ovs_qos.py) programs the port's queue, as the OVS agent
would; the command, run as a user runs it against the real Neutron and Placement, finds it enforced with Placement's
reservation beside it. Then faults, written with ovs-vsctl, each found and named: the queue's min-rate set wrong, the
QoS row detached from the NIC, the queue destroyed, and, after an agent restart, a queue left for a port that no
longer exists and the previous run's QoS row. docs/enforcement.md's example runs as written."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minbw.dataplane import ovs
from tests.e2e.test_operators_checks import checks, run_checks
from tests.support.dataplane.reproduce import agent_run
from tests.support.dataplane.switch import Switch, unavailable

HOST = "devstack0"
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"  # devstack0:Open vSwitch agent:br-test
PAGE = Path(__file__).resolve().parents[2] / "docs" / "enforcement.md"


def show(cloud, switch: Switch, *options: str) -> tuple[int, dict | None, str]:
    """``minbw enforcement show --host devstack0`` on the switch, as JSON: exit code, document, stderr."""
    r = subprocess.run([sys.executable, "-m", "minbw.cli", "enforcement", "show", "--host", HOST, "--ovs-db",
                        switch.remote, "--netns", switch.netns, "--json", *options], env=cloud.env,
                       capture_output=True, text=True, timeout=300)
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr


def verdicts(document: dict) -> list[tuple]:
    return [(c["kind"], c["subject"], c["verdict"], c["factor"]) for c in document["checks"]]


def test_a_ports_guarantee_enforced_then_each_fault_found(demo, cloud, tmp_path):
    why = unavailable()
    if why:
        pytest.skip(why)
    conn = demo.conn
    (agent,) = [a for a in conn.network.agents(host=HOST) if a.agent_type == "Open vSwitch agent"]
    mappings = agent.configuration["bridge_mappings"]
    assert mappings == {"physnet0": "br-test", "public": "br-ex"}
    with Switch(tmp_path, physical_bridges=sorted(mappings.values())) as switch:
        nic = switch.nics["br-test"]
        if not list(conn.network.ports(binding_host_id=HOST)):  # an earlier test of the lane may leave one bound
            code, _, err = show(cloud, switch)
            assert (code, err.splitlines()[-1:]) == (1, [f"minbw: error: host {HOST}: no port is bound to it in "
                                                         f"Neutron (binding:host_id {HOST})"]), err

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
            "minbw: error: host nosuchhost: no Open vSwitch agent in Neutron's agent list (agents there: none); minbw "
            "enforcement show checks the Open vSwitch agent's data plane"]), err
