"""ML2/OVN end to end on the mini-cloud's OVN variant (tests/support/minicloud/ovn.sh): the real OVN (northd, both
databases, ovn-controller and Open vSwitch per compute) and Neutron's ML2/OVN with its placement extension.

Each compute starts with the bandwidth of seed 003 in its chassis options (``ovn-cms-options``:
br-test 1500/1500 kbps on physnet0, br-ex ingress 1 kbps on public; devstack0 is also a gateway chassis).
First with Neutron's placement plugin off (ML2/OVN then cannot bind a port with an allocation: reproduced),
then on (the cloud restarts neutron-server only).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from minbw.neutron import naming
from minbw.ops import ovn_chassis, server_move, servers
from minbw.ops.audit import apply_fixes, run_audit
from tests.conftest import run_drift
from tests.support import cli_forks
from minbw.ops.heal import heal_servers
from minbw.ops.sync import sync_providers
from minbw.placement.client import Placement
from minbw.plan.audit import LEAK

HERE = Path(__file__).resolve().parent
HOSTS = ("devstack0", "devstack1")
OVN = naming.AGENT_KINDS[naming.OVN]
BW = {"NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}


def br_test(host: str) -> str:
    return naming.device_rp_uuid(OVN, host, "br-test")


def southbound(cloud) -> list:
    return ovn_chassis.read_southbound(cloud.env["MINICLOUD_OVN_SB_DB"])


def ovs_db(cloud, host: str) -> str:
    return cloud.env["MINICLOUD_OVS_DB" if host == HOSTS[0] else "MINICLOUD_OVS_DB_1"]


def vsctl(cloud, host: str, *args: str) -> str:
    return subprocess.run(["ovs-vsctl", f"--db={ovs_db(cloud, host)}", "--no-wait", *args], check=True,
                          capture_output=True, text=True, timeout=30).stdout


def minbw(cloud, *args: str) -> subprocess.CompletedProcess:
    return cli_forks.run([sys.executable, "-m", "minbw.cli", *args], env=cloud.env, capture_output=True, text=True,
                         timeout=300)


def wait(what: str, check, timeout: float = 120):
    end = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(1)


def boot_on(demo, name: str, host: str | None = None):
    policy = demo.policy(f"{name}-qp", bw=[("egress", 1000), ("ingress", 1000)])
    port = demo.port(f"{name}-port", policy)
    server = demo.boot(name, [port], host=host)
    return server, port, port.resource_request["request_groups"][0]["id"]


def holds_on_the_right_bridge(api, conn, server, port, group):
    """The server's bandwidth is on br-test of the host it runs on, and the binding names that provider."""
    host = server.compute_host
    rp = br_test(host)
    assert api.get_provider(rp).name == f"{host}:OVN Controller agent:br-test"
    allocations = api.get_allocations(server.id)["allocations"]
    assert allocations[rp]["resources"] == BW
    bound = conn.network.get_port(port.id)
    assert bound.binding_profile["allocation"] == {group: rp}
    assert bound.binding_host_id == host and bound.binding_vif_type == "ovs"
    verdict = servers.verify(conn, server.id, api).to_dict()
    assert verdict["ok"], verdict["problems"]
    return host


def test_ovn_binding_needs_neutrons_placement_plugin(demo_ovn_plugin_off, cloud_ovn_plugin_off):
    """Reproduction (Neutron 29): with the placement service plugin off, minbw's providers let Nova schedule and
    claim a QoS port on OVN, but ML2/OVN cannot bind it: its ``responsible_for_ports_allocation`` reads the
    chassis through the placement plugin's client (``placement_plugin`` is None: AttributeError in
    ``name2uuid``), so the binding fails on every host and the server ends in ERROR. On ML2/OVN the plugin
    must be loaded; minbw's sync complements its reporting, it cannot replace the plugin."""
    cloud, conn = cloud_ovn_plugin_off, demo_ovn_plugin_off.conn
    api = Placement(conn)
    desired = ovn_chassis.desired(chassis=southbound(cloud), complete=True)
    assert {p.name for p in desired.providers} == {
        name for h in HOSTS for name in (f"{h}:OVN Controller agent", f"{h}:OVN Controller agent:br-test",
                                         f"{h}:OVN Controller agent:br-ex")}
    assert not desired.warnings
    assert not [p for p in api.list_providers() if p.uuid in desired.by_uuid()], "nobody reported providers yet"

    out = minbw(cloud, "provider", "sync", "--ovn-sb-db", cloud.env["MINICLOUD_OVN_SB_DB"], "--no-cache", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["result"]["writes"] > 0
    assert sync_providers(api, desired, check=True)[0].writes() == 0

    policy = demo_ovn_plugin_off.policy("e2e-ovn-off-qp", bw=[("egress", 1000), ("ingress", 1000)])
    port = demo_ovn_plugin_off.port("e2e-ovn-off-port", policy)
    # one host asked for (no alternates to retry on): the claim on its br-test, then the binding fails
    server = demo_ovn_plugin_off.boot("e2e-ovn-off", [port], wait=False, host="devstack0")
    server = conn.compute.wait_for_server(server, status="ERROR", failures=["ACTIVE"], wait=180)
    assert "Exhausted all hosts available" in server.fault["message"], server.fault
    logs = Path(cloud.env["MINICLOUD_LOG_DIR"])
    assert f"Binding failed for port {port.id}" in (logs / "nova-compute.log").read_text()
    neutron = (logs / "neutron-api.log").read_text()
    # the binding carried Nova's allocation (only then does ML2 ask the drivers which one is responsible)
    assert "_infer_driver_from_allocation" in neutron and "responsible_for_ports_allocation" in neutron and \
        "AttributeError: 'NoneType' object has no attribute '_placement_client'" in neutron

    # leave Placement as Neutron found it
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=120)
    _, gone = sync_providers(api, desired, absent=True)
    assert gone.writes == len(desired.providers) and not gone.kept


def test_neutron_reports_the_tree_minbw_computes(cloud_ovn):
    """Neutron's OVN extension (plugin on) builds exactly the providers minbw computes from the chassis
    options: nothing to write, no drift between the chassis options, the southbound and Placement."""
    conn = cloud_ovn.connect()
    api = Placement(conn)
    desired = ovn_chassis.desired(chassis=southbound(cloud_ovn), complete=True)
    plan, _ = sync_providers(api, desired, check=True)
    assert plan.writes() == 0, [str(op) for op in plan.ops]
    assert {p.uuid for p in plan.providers} == set(desired.by_uuid())
    rows = run_drift(conn, api, chassis=[ovn_chassis.read_open_vswitch(ovs_db(cloud_ovn, h)) for h in HOSTS],
                     southbound=southbound(cloud_ovn))
    assert rows and all(r.agree for r in rows), [r.to_dict() for r in rows if not r.agree]
    assert {s for r in rows for s in r.sides} == {"ini", "agent", "placement"}
    # Neutron's agent list: no bandwidth for OVN; the gateway chassis is another agent type, same provider names
    agents = {a.host: a for a in conn.network.agents() if a.agent_type.startswith("OVN Controller")}
    assert (agents["devstack0"].agent_type, agents["devstack1"].agent_type) == (
        "OVN Controller Gateway agent", "OVN Controller agent")
    assert set(agents["devstack0"].configuration) == {"chassis_name", "bridge-mappings"}
    assert api.get_provider(naming.agent_rp_uuid(OVN, "devstack0")).name == "devstack0:OVN Controller agent"


def test_minbw_sync_alone_when_neutron_does_not_report(demo_ovn, cloud_ovn):
    """Neutron reports a chassis when its API worker starts and when the options change, never again: providers
    lost meanwhile (here: deleted) stay missing and a QoS boot finds no host. minbw's sync alone, from the
    southbound database, brings them back; the server then holds its bandwidth on the right OVN bridge."""
    conn = demo_ovn.conn
    api = Placement(conn)
    desired = ovn_chassis.desired(chassis=southbound(cloud_ovn), complete=True)
    _, gone = sync_providers(api, desired, absent=True)
    assert gone.writes == len(desired.providers)
    time.sleep(5)
    assert not [p for p in api.list_providers() if p.uuid in desired.by_uuid()], "Neutron re-created them"
    out = minbw(cloud_ovn, "drift", "show", "--ovn-sb-db", cloud_ovn.env["MINICLOUD_OVN_SB_DB"], "--json")
    assert out.returncode == 3 and {r["name"] for r in json.loads(out.stdout)["providers"] if not r["agree"]} == {
        p.name for p in desired.providers}

    out = minbw(cloud_ovn, "provider", "sync", "--ovn-sb-db", cloud_ovn.env["MINICLOUD_OVN_SB_DB"], "--no-cache")
    assert out.returncode == 0, out.stderr
    server, port, group = boot_on(demo_ovn, "e2e-ovn-sync")
    assert server.status == "ACTIVE"
    holds_on_the_right_bridge(api, conn, server, port, group)
    assert minbw(cloud_ovn, "drift", "show", "--ovn-sb-db", cloud_ovn.env["MINICLOUD_OVN_SB_DB"]).returncode == 0


def test_boot_migrate_heal_audit_on_ovn(demo_ovn, cloud_ovn):
    """A QoS server on OVN holds its bandwidth on the right OVN Controller agent bridge; moved to the other
    compute (cold migration, confirmed), the bandwidth and the binding follow; heal and audit work on it."""
    conn = demo_ovn.conn
    api = Placement(conn)
    server, port, group = boot_on(demo_ovn, "e2e-ovn-move", host="devstack0")
    assert holds_on_the_right_bridge(api, conn, server, port, group) == "devstack0"

    server_move.migrate(conn, server.id)
    server_move.confirm(conn, server.id)
    moved = conn.compute.get_server(server.id)
    assert holds_on_the_right_bridge(api, conn, moved, port, group) == "devstack1"
    assert api.provider_usages(br_test("devstack0")) == {rc: 0 for rc in BW}

    # heal: the port lost its binding allocation (cleared with the service role); heal writes it back
    service = cloud_ovn.connect(username="nova", password="minicloud-secret", project_name="service")
    service.network.update_port(port.id, binding_profile={})
    assert not servers.verify(conn, server.id, api).ok
    done = heal_servers(conn, api, [server.id], binding_conn=service)[0].to_dict()
    assert done["healed"] is True, done
    holds_on_the_right_bridge(api, conn, moved, port, group)

    # audit: a leaked allocation on an OVN bridge provider is found and freed
    assert run_audit(conn, api).ok, run_audit(conn, api).to_dict()
    leaked = "5f2a3d1c-8d4e-4f7a-9b6c-0e1d2c3b4a59"
    api.put_allocations(leaked, {"allocations": {br_test("devstack0"): {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 100}}},
                                 "project_id": moved.project_id, "user_id": moved.user_id, "consumer_generation": None})
    plan = run_audit(conn, api)
    assert {(f.kind, f.subject) for f in plan.findings} == {(LEAK, leaked)}
    assert all(f.done for f in apply_fixes(conn, api, plan))
    assert run_audit(conn, api).ok


def test_drift_after_the_chassis_options_change_on_one_compute(cloud_ovn, playbook):
    """devstack1's chassis options edited by the module ovn_chassis_config (check mode, then for real; its
    idempotence: tests/ansible/test_ovn_chassis_config.py): ovn-controller copies them to the southbound, Neutron's extension updates Placement
    (br-test's new bandwidth, br-ex's provider deleted) and drift agrees. Then a hypervisor name whose provider
    appears only after Neutron read the options: Neutron never reports it (it does not retry), drift shows
    it, and bandwidth_providers with the chassis the module returned fills it."""
    conn = cloud_ovn.connect()
    api = Placement(conn)
    sb, db = cloud_ovn.env["MINICLOUD_OVN_SB_DB"], ovs_db(cloud_ovn, "devstack1")
    before = vsctl(cloud_ovn, "devstack1", "get", "Open_vSwitch", ".", "external_ids:ovn-cms-options").strip()
    faster = {"bandwidths": {"br-test": {"egress": 3000, "ingress": 3000}}, "db": db}
    try:
        planned = playbook(HERE / "playbooks" / "ovn_chassis.yml", faster, check=True, diff=True)
        assert planned.result["chassis"]["changed"] and not planned.failed, planned.output
        assert "resource_provider_bandwidths=br-test:3000:3000" in planned.output  # the diff
        assert vsctl(cloud_ovn, "devstack1", "get", "Open_vSwitch", ".", "external_ids:ovn-cms-options").strip() == before
        done = playbook(HERE / "playbooks" / "ovn_chassis.yml", faster)
        assert done.result["chassis"]["changed"] and not done.failed, done.output
        assert done.result["chassis"]["external_ids"]["ovn-cms-options"] == (
            "resource_provider_bandwidths=br-test:3000:3000,resource_provider_hypervisors=br-test:devstack1")

        wait("Neutron's update of devstack1's br-test", lambda: api.get_inventories(br_test("devstack1"))[0].get(
            "NET_BW_EGR_KILOBIT_PER_SEC", {}).get("total") == 3000)
        br_ex = naming.device_rp_uuid(OVN, "devstack1", "br-ex")
        wait("Neutron's deletion of devstack1's br-ex", lambda: br_ex not in {p.uuid for p in api.list_providers()})
        out = minbw(cloud_ovn, "drift", "show", "--ovs-db", db, "--ovn-sb-db", sb, "--json")
        assert out.returncode == 0, out.stdout + out.stderr

        # a hypervisor name whose provider does not exist yet: Neutron skips the bridge, silently
        moved = dict(faster, hypervisors={"br-test": "devstack9"})
        chassis = playbook(HERE / "playbooks" / "ovn_chassis.yml", moved).result["chassis"]["chassis"]
        wait("the southbound copy", lambda: "devstack9" in {
            c.name: c.cms_options for c in southbound(cloud_ovn)}["chassis-devstack1"])
        plan, _ = sync_providers(api, ovn_chassis.desired(chassis=southbound(cloud_ovn), complete=True), check=True)
        assert any("no resource provider named 'devstack9'" in w for w in plan.warnings), plan.warnings
        api.create_provider("0b5bc8b8-5a1c-4a7e-9d1b-2b2f1c1e0a99", "devstack9", None)
        time.sleep(5)  # Neutron had its chance: it reads a chassis on create and on option changes only
        missing = naming.device_rp_uuid(OVN, "devstack9", "br-test")
        assert missing not in {p.uuid for p in api.list_providers()}
        out = minbw(cloud_ovn, "drift", "show", "--ovn-sb-db", sb, "--json")
        assert out.returncode == 3, out.stdout + out.stderr
        rows = {r["uuid"]: r for r in json.loads(out.stdout)["providers"]}
        assert rows[missing]["placement"] is None and rows[missing]["agent"]["name"] == (
            "devstack9:OVN Controller agent:br-test")
        # Neutron left the bridge's provider under devstack1 (the bridge did not leave the bandwidths): stale
        assert rows[br_test("devstack1")]["agent"] is None and rows[br_test("devstack1")]["placement"]
        synced = playbook(HERE / "playbooks" / "ovn_chassis.yml", dict(moved, sync=True, sb=sb))
        assert synced.result["providers"]["changed"], synced.output
        assert synced.result["drift"]["ok"] is True, synced.result["drift"]
        assert {op["name"] for op in synced.result["providers"]["ops"] if op["action"] == "delete_provider"} == {
            "devstack1:OVN Controller agent:br-test"}
        assert minbw(cloud_ovn, "drift", "show", "--ovn-sb-db", sb, "--json").returncode == 0
    finally:
        vsctl(cloud_ovn, "devstack1", "set", "Open_vSwitch", ".", f"external_ids:ovn-cms-options={before}")
        for p in sorted(api.list_providers(), key=lambda p: -len(p.name)):  # devices, agent, root
            if p.name.startswith("devstack9"):
                api.delete_provider(p.uuid)
        # the restored options are an update event: Neutron puts devstack1's providers back
        wait("Neutron's providers of the restored options", lambda: sync_providers(
            api, ovn_chassis.desired(chassis=southbound(cloud_ovn), complete=True), check=True)[0].writes() == 0)
