"""minbw enforcement show on the mini-cloud's ML2/OVN variant (tests/support/minicloud/ovn.sh: the real OVN
databases, northd, ovn-controller and Open vSwitch per compute; Neutron 29's ML2/OVN): a server whose port asks a
minimum of 1,000 kbps egress on the VLAN network boots on devstack0; Neutron writes the port's
``options:qos_min_rate`` into the northbound database; the command, run as a user runs it against the real
Neutron, Placement, the northbound and southbound databases, devstack0's Open vSwitch database and the kernel,
puts it beside Placement's reservation. devstack0's br-test has no NIC in this variant: the test gives it one, a TAP device (up) in
ovn-controller's network namespace marked ``external_ids:ovn-egress-iface=true`` (the NIC ovn-controller shapes),
and takes it away after. docs/enforcement.md's OVN example runs as written.

Nova's fake driver plugs no VIF: the port is first missing (not bound by ovn-controller, no class in the kernel;
with ``--no-kernel`` enforced, the northbound row alone). The test then plugs the port on br-int as os-vif does (an
interface with ``external_ids:iface-id``), and follows the guarantee to the kernel, on Debian's ovn-controller (23.03,
the path before 23.06: it runs tc itself, queue N of the port's southbound ``qdisc_queue_id`` as HTB class
``1:(N+1)`` on the TAP): a full recompute leaves no class, which the command finds missing and names as
ovn-controller's recompute bug of OVN 22.06 to 23.03 (the page's example); a change of the port's row makes it.
The change is the fault of Neutron 21.0.0 to 25.x, the kbps number itself in ``qos_min_rate`` (written with
ovn-nbctl as an old Neutron would have), found as a wrong rate with its factor and named as that bug, and on the
wire as one MTU a second; then the value of Neutron 29, its class at the rate asked, found enforced with the
kernel's rate. Then the port's policy changed to one of 1,400 kbps: Neutron moves the reservation and rewrites
``qos_min_rate``, ovn-controller changes the class, and the command finds all three at the new rate. Last, a
northbound remote that is missing or does not answer."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from minbw.dataplane import netlink, ovsdb
from minbw.neutron import naming
from minbw.reports.enforcement import OVN_KBPS_BUG, OVN_RECOMPUTE_BUG, htb_rate
from tests.e2e.test_operators_checks import checks, run_checks
from tests.e2e.test_ovn_cloud import wait
from tests.support import cli_forks

HOST = "devstack0"
NIC = "eth-enf"
PAGE = Path(__file__).resolve().parents[2] / "docs" / "enforcement.md"
BR_TEST = naming.device_rp_uuid(naming.AGENT_KINDS[naming.OVN], HOST, "br-test")


def show(cloud, *options: str) -> tuple[int, dict | None, str]:
    """``minbw enforcement show --host devstack0`` against the cloud's northbound and devstack0's Open vSwitch
    database, as JSON: exit code, document, stderr."""
    r = cli_forks.run([sys.executable, "-m", "minbw.cli", "enforcement", "show", "--host", HOST, "--ovs-db",
                       cloud.env["MINICLOUD_OVS_DB"], "--ovn-nb", cloud.env["MINICLOUD_OVN_NB_DB"], "--json",
                       *options], env=cloud.env, capture_output=True, text=True, timeout=300)
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr


def verdicts(document: dict) -> list[tuple]:
    return [(c["kind"], c["subject"], c["verdict"], c["factor"]) for c in document["checks"]]


def nbctl(cloud, *args: str) -> None:
    subprocess.run(["ovn-nbctl", f"--db={cloud.env['MINICLOUD_OVN_NB_DB']}", "--timeout=20", *args], check=True,
                   capture_output=True, timeout=30)


def vsctl(cloud, *args: str) -> None:
    subprocess.run(["ovs-vsctl", f"--db={cloud.env['MINICLOUD_OVS_DB']}", "--no-wait", "--timeout=20", *args],
                   check=True, capture_output=True, timeout=30)


def queue_id(cloud, port: str) -> int | None:
    """The ``qdisc_queue_id`` northd gives the port in its southbound ``Port_Binding`` (ovn-controller's queue)."""
    def take(tables):
        return [int(r.options["qdisc_queue_id"]) for r in tables["Port_Binding"].rows.values()
                if r.logical_port == port and "qdisc_queue_id" in r.options]
    found = ovsdb.read(cloud.env["MINICLOUD_OVN_SB_DB"], "OVN_Southbound",
                       {"Port_Binding": ("logical_port", "options")}, take,
                       conditions={"Port_Binding": [["logical_port", "==", port]]})
    return found[0] if found else None


def classes(queue: int) -> list[tuple]:
    """The HTB qdisc on the TAP and the queue's class, as the kernel holds them ([]: not shaped; the qdisc the
    kernel gives a link is left out, pfifo_fast or fq_codel as the host's net.core.default_qdisc says)."""
    tc = netlink.tc(NIC)
    return [(q.handle, q.kind) for q in tc.qdiscs if q.kind == "htb"] + [
        (c.classid, c.parent, c.rate) for c in tc.classes if c.classid == f"1:{queue + 1:x}"]


def recompute(cloud) -> None:
    """devstack0's ovn-controller recomputes everything (``ovn-appctl recompute``), and has run it when a second
    command is answered (unixctl commands are served at the start of its main loop, the engine runs after)."""
    (ctl,) = Path(cloud.env["MINICLOUD_STATE"], "ovn", HOST).glob("ovn-controller.*.ctl")
    for command in ("recompute", "connection-status"):
        subprocess.run(["ovn-appctl", "-t", str(ctl), command], check=True, capture_output=True, timeout=30)


def test_an_ovn_ports_guarantee_enforced_then_the_kbps_of_neutron_before_26_found(demo_ovn, cloud_ovn):
    from pyroute2 import IPRoute
    conn = demo_ovn.conn
    assert {a.agent_type for a in conn.network.agents(host=HOST)} == {"OVN Controller Gateway agent"}
    policy = demo_ovn.policy("e2e-enf-ovn-min", bw=[("egress", 1000)])
    port = demo_ovn.port("e2e-enf-ovn-p0", policy)
    server = demo_ovn.boot("e2e-enf-ovn-vm", [port], host=HOST)
    port = conn.network.get_port(port.id)
    assert port.binding_host_id == HOST and set(port.binding_profile["allocation"].values()) == {BR_TEST}

    # the NIC in ovn-controller's own namespace (23.03 runs tc itself, there), and up: a link that is down has the
    # kernel's noop qdisc, which ovn-controller's setup_qos takes for a NIC without QoS (docs/enforcement.md)
    tap = f"tap{port.id[:11]}"  # the name os-vif gives a VIF
    with IPRoute() as ipr:
        ipr.link("add", ifname=NIC, kind="tuntap", mode="tap")
        ipr.link("set", index=ipr.link_lookup(ifname=NIC)[0], state="up")
    try:
        vsctl(cloud_ovn, "add-port", "br-test", NIC, "--", "set", "Interface", NIC,
              "external_ids:ovn-egress-iface=true")

        # the rule, Placement's reservation and Neutron's qos_min_rate agree, and br-test has a NIC to shape, but Nova's
        # fake driver plugs no VIF: ovn-controller has not bound the port, so the kernel has no class for it
        code, document, err = show(cloud_ovn)
        assert code == 3, (err, document)
        assert document["backend"] == "ovn" and verdicts(document) == [("rule", port.id, "missing", None)]
        (check,) = document["checks"]
        assert check["server"] == server.id
        assert check["rule"]["expected"] == 1_000_000 and check["rule"]["expected_unit"] == "bit/s"
        assert check["reserved"] == {"provider": BR_TEST, "name": f"{HOST}:OVN Controller agent:br-test",
                                     "class": "NET_BW_EGR_KILOBIT_PER_SEC", "amount": 1000, "shared_by": []}
        assert check["programmed"] == [{"lsp": port.id, "qos_min_rate": 1_000_000, "qos_max_rate": None,
                                        "qos_burst": None}]
        assert check["why"].endswith("ovn-controller has not bound the port (not plugged), so no NIC shapes it"), check
        assert check["notes"] == [
            "the port is not plugged on br-int (no interface with external_ids:iface-id = the port)"]
        assert [(n["nic"], n["bridge"], n["speed_kbps"], n["inventory_kbps"], n["enforced_kbps"], n["errors"])
                for n in document["nics"]] == [(NIC, "br-test", 10_000_000, 1500, 0, [])]
        # --no-kernel (off the host): the northbound row and the egress NIC alone, as before the kernel was read
        code, document, err = show(cloud_ovn, "--no-kernel")
        assert (code, verdicts(document), document["checks"][0]["kernel"]) == (
            0, [("rule", port.id, "enforced", None)], []), (err, document)

        # the port plugged on br-int as os-vif plugs it (an internal port: ovs-vswitchd runs in a namespace of its
        # own and opens the device there): ovn-controller binds it and northd gives it a queue
        vsctl(cloud_ovn, "add-port", "br-int", tap, "--", "set", "Interface", tap, "type=internal",
              f"external_ids:iface-id={port.id}", f"external_ids:attached-mac={port.mac_address}",
              "external_ids:iface-status=active", f"external_ids:vm-uuid={server.id}")
        queue = wait("the port's qdisc_queue_id", lambda: queue_id(cloud_ovn, port.id))
        # whether ovn-controller 23.03 makes the class now depends on the order its incremental processing met the
        # changes; after a full recompute there is none: binding_run decides whether to gather the ports' QoS
        # before the localnet ports put the egress NIC in its set, which the recompute emptied, and setup_qos then
        # takes the OVN qdisc away (docs/enforcement.md). The command says missing, and names that bug
        recompute(cloud_ovn)
        assert classes(queue) == []
        code, document, err = show(cloud_ovn)
        assert (code, verdicts(document), document["checks"][0]["notes"]) == (
            3, [("rule", port.id, "missing", None)], []), (err, document)
        assert document["checks"][0]["kernel"] == [{"nic": NIC, "class": f"1:{queue + 1:x}", "rate": None}]
        assert document["checks"][0]["why"] == (
            f"its Logical_Switch_Port asks 1000000 bit/s and its queue is {queue} (qdisc_queue_id), but {NIC} has no "
            f"HTB class 1:{queue + 1:x}: {OVN_RECOMPUTE_BUG}")
        assert OVN_RECOMPUTE_BUG == (
            "ovn-controller's full recompute (its start, ovn-appctl recompute) removes the ports' classes from a "
            "localnet bridge's egress NIC until the port's row changes: OVN 22.06 to 23.03, the tc path (gone in "
            "23.06)")
        # the page's example, as written
        run_checks(checks(PAGE.read_text(), "enforcement show ovn"),
                   dict(cloud_ovn.env, HOST=HOST, OVS_DB=cloud_ovn.env["MINICLOUD_OVS_DB"],
                        OVN_NB=cloud_ovn.env["MINICLOUD_OVN_NB_DB"]))

        # a change of the port's row reaches ovn-controller's incremental path, which knows the NIC now: the class
        # is made. Here the port as Neutron 21.0.0 to 25.x wrote it (ovn-nbctl stands for that Neutron): the kbps
        # number, on the wire as one MTU a second (htb_rate)
        nbctl(cloud_ovn, "set", "Logical_Switch_Port", port.id, "options:qos_min_rate=1000")
        wait("the class at the kbps number", lambda: classes(queue) == [
            ("1:", "htb"), (f"1:{queue + 1:x}", "1:fffe", htb_rate(1000))])
        code, document, _ = show(cloud_ovn)
        assert (code, verdicts(document)) == (3, [("rule", port.id, "wrong rate", 0.001)])
        assert document["checks"][0]["why"] == OVN_KBPS_BUG == (
            "qos_min_rate holds the kbps number, 1,000 times too little: ML2/OVN wrote kbps where OVN reads bit/s, "
            "Neutron 21.0.0 to 25.x (fixed in 26.0.0)")
        assert document["checks"][0]["kernel"] == [{"nic": NIC, "class": f"1:{queue + 1:x}", "rate": htb_rate(1000)}]
        # as Neutron 29 writes it: the class at 1,000,000 bit/s, queue N as class 1:(N+1), and the command finds it
        # enforced with the kernel's rate
        nbctl(cloud_ovn, "set", "Logical_Switch_Port", port.id, "options:qos_min_rate=1000000")
        wait("the class at the rate asked", lambda: classes(queue) == [
            ("1:", "htb"), (f"1:{queue + 1:x}", "1:fffe", htb_rate(1_000_000))])
        code, document, err = show(cloud_ovn)
        assert (code, verdicts(document)) == (0, [("rule", port.id, "enforced", None)]), (err, document)
        assert document["checks"][0]["kernel"] == [
            {"nic": NIC, "class": f"1:{queue + 1:x}", "rate": htb_rate(1_000_000)}]
        assert [(n["nic"], n["enforced_kbps"]) for n in document["nics"]] == [(NIC, 1000)]

        # a policy changed on the bound port (item 4's fault on OVN): Neutron moves the reservation to 1,400 kbps
        # (its placement allocation update, within br-test's 1,500: 2,000 is refused with 409, capacity exceeded)
        # and writes the new qos_min_rate; ovn-controller follows on the port's row change, and the command finds
        # the three at the new rate
        faster = demo_ovn.policy("e2e-enf-ovn-min-1400", bw=[("egress", 1400)])
        conn.network.update_port(port, qos_policy_id=faster.id)
        wait("the class at the new policy's rate", lambda: classes(queue) == [
            ("1:", "htb"), (f"1:{queue + 1:x}", "1:fffe", htb_rate(1_400_000))])
        code, document, err = show(cloud_ovn)
        assert (code, verdicts(document)) == (0, [("rule", port.id, "enforced", None)]), (err, document)
        (check,) = document["checks"]
        assert (check["rule"]["expected"], check["reserved"]["amount"], check["programmed"][0]["qos_min_rate"]) == (
            1_400_000, 1400, 1_400_000), check
        assert [(n["nic"], n["enforced_kbps"]) for n in document["nics"]] == [(NIC, 1400)]

        # an ML2/OVN host without its northbound database, and one that does not answer: one line, exit 1
        r = cli_forks.run([sys.executable, "-m", "minbw.cli", "enforcement", "show", "--host", HOST],
                          env=cloud_ovn.env, capture_output=True, text=True, timeout=300)
        assert (r.returncode, r.stderr.splitlines()[-1:]) == (1, [
            f"minbw: error: host {HOST} runs ML2/OVN (OVN Controller Gateway agent in Neutron's agent list): give its "
            f"northbound database with --ovn-nb (tcp:HOST:6641, ssl:HOST:6641 with the client's key and certificates, "
            f"or unix:PATH)"]), r.stderr
        code, _, err = show(cloud_ovn, "--ovn-nb", "tcp:127.0.0.1:1")
        assert (code, err.splitlines()[-1:]) == (1, [
            "minbw: error: tcp:127.0.0.1:1: cannot connect: connection refused (is ovsdb-server running?)"]), err
    finally:
        vsctl(cloud_ovn, "--if-exists", "del-port", "br-int", tap)
        vsctl(cloud_ovn, "--if-exists", "del-port", "br-test", NIC)
        with IPRoute() as ipr:
            ipr.link("del", index=ipr.link_lookup(ifname=NIC)[0])
