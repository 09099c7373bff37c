"""minbw.dataplane.ovs and minbw.dataplane.netlink against a real Open vSwitch (tests/support/dataplane/switch.py:
Debian's ovsdb-server and ovs-vswitchd on the userspace datapath, the physical bridge's NIC a TAP device, in a
network namespace of its own), holding the rows the OVS agent's own QoS driver writes (neutron 29.0.0,
tests/support/oracle/neutron_ovs_qos.py); the one-line errors of a remote that cannot be read; and
docs/enforcement.md's reproductions, run as the page shows them."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from minbw.dataplane import netlink, ovn, ovs
from minbw.errors import DataPlaneUnreadable
from tests.conftest import REPO, doc_commands, free_port
from tests.support.dataplane.reproduce import PORT_A, PORT_B, agent_run
from tests.support.dataplane.switch import NIC, VSWITCH_SCHEMA, OvsdbServer, Switch, unavailable

OVS_MAX_RATE = 2 ** 35 - 1  # ovs_lib.OVS_MAX_RATE, bit/s
DOC = REPO / "docs" / "enforcement.md"


@pytest.fixture
def vswitchd():
    """ovs-vswitchd can be run here (else the test is skipped with the reason)."""
    why = unavailable()
    if why:
        pytest.skip(why)


@pytest.fixture
def switch(vswitchd, tmp_path):
    with Switch(tmp_path) as s:
        yield s


@pytest.fixture
def vswitch_db(tmp_path):
    why = unavailable(vswitchd=False)
    if why:
        pytest.skip(why)
    with OvsdbServer(tmp_path, VSWITCH_SCHEMA) as db:
        yield db


def test_the_agents_minimum_bandwidth_rows_read_back_and_reach_the_taps_htb_classes(switch):
    switch.plug("vm-a", PORT_A, 5)
    switch.plug("vm-b", PORT_B, 6)
    assert [s["error"] for s in agent_run(switch, f"update:{PORT_A}:5:1000", f"update:{PORT_B}:6:2500")] == [None, None]

    db = ovs.read(switch.remote, bridges=["br-phy", "br-int"])
    assert [b.name for b in db.bridges] == ["br-int", "br-phy"]
    assert {b.datapath_type for b in db.bridges} == {"netdev"}
    vms = {p.name: p.interfaces[0] for p in db.bridge("br-int").ports if p.name.startswith("vm-")}
    assert {n: (i.iface_id, i.ofport, i.type) for n, i in vms.items()} == {"vm-a": (PORT_A, 5, "internal"),
                                                                           "vm-b": (PORT_B, 6, "internal")}
    nic = next(p for p in db.bridge("br-phy").ports if p.name == NIC)
    assert [(i.name, i.type) for i in nic.interfaces] == [(NIC, "")]
    qos = nic.qos
    assert (qos.type, dict(qos.other_config), qos.ports) == ("linux-htb", {"max-rate": str(OVS_MAX_RATE)}, (NIC,))
    assert sorted(qos.external_ids) == ["_type", "id"] and qos.external_ids["_type"] == "minimum_bandwidth"
    assert {n: (q.min_rate, q.max_rate, dict(q.external_ids)) for n, q in qos.queues.items()} == {
        5: (1_000_000, OVS_MAX_RATE, {"port": PORT_A, "type": "minimum_bandwidth", "queue-num": "5"}),
        6: (2_500_000, OVS_MAX_RATE, {"port": PORT_B, "type": "minimum_bandwidth", "queue-num": "6"})}
    assert db.qos == (qos,) and sorted(db.queues, key=lambda q: q.min_rate) == [qos.queues[5], qos.queues[6]]

    # the kernel: queue N is HTB class 1:(N+1) (and 1:1, queue 0, at one MTU: 1500 bytes/s)
    tc = netlink.tc(NIC, switch.netns)
    assert netlink.Qdisc("1:", "root", "htb") in tc.qdiscs
    assert [(c.classid, c.parent, c.rate) for c in tc.classes] == [
        ("1:1", "1:fffe", 12_000), ("1:6", "1:fffe", 1_000_000), ("1:7", "1:fffe", 2_500_000),
        ("1:fffe", "root", 34_359_738_360)]


def test_a_taps_speed_and_vfs(switch):
    assert netlink.speed(NIC, switch.netns) == 10_000  # what the tun driver reports to ethtool
    assert netlink.vfs(NIC, switch.netns) == ()
    with pytest.raises(DataPlaneUnreadable, match=rf"^link nic9 in network namespace {switch.netns}: no such link$"):
        netlink.tc("nic9", switch.netns)
    with pytest.raises(DataPlaneUnreadable, match="^network namespace minbw-none: no such network namespace$"):
        netlink.speed(NIC, "minbw-none")


def test_what_cannot_be_read_is_named_in_one_line(vswitch_db, tmp_path):
    port = free_port()
    for remote, said in [(f"unix:{tmp_path}/none.sock", "cannot connect: no such socket"),
                         (f"tcp:127.0.0.1:{port}", "cannot connect: connection refused (is ovsdb-server running?)"),
                         (str(vswitch_db.socket), "not an OVSDB remote (expected unix:..., tcp:..., ssl:...)"),
                         ("ssl:127.0.0.1:6640", "an ssl: remote needs the client's private key, certificate and CA "
                                                "certificate")]:
        with pytest.raises(DataPlaneUnreadable) as e:
            ovs.read(remote)
        assert str(e.value) == f"{remote}: {said}"
    with pytest.raises(DataPlaneUnreadable, match=r": no bridge 'br-phy' \(bridges: none\)$"):
        ovs.read(vswitch_db.remote, bridges=["br-phy"])
    with pytest.raises(DataPlaneUnreadable, match=r": the server has no OVN_Northbound database$"):
        ovn.read(vswitch_db.remote)


def test_a_socket_without_permission_is_named(vswitch_db):
    """The socket owned by another user (nobody), mode 0700, read by root without its capabilities to override
    file permissions (setpriv, util-linux)."""
    if os.geteuid() != 0:
        pytest.skip("giving the socket to another user needs root")
    vswitch_db.socket.chmod(0o700)
    shutil.chown(vswitch_db.socket, 65534)
    r = subprocess.run(["setpriv", "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-c",
                        "import sys\nfrom minbw.dataplane import ovs\nfrom minbw.errors import DataPlaneUnreadable\n"
                        "try:\n    ovs.read(sys.argv[1])\nexcept DataPlaneUnreadable as e:\n    print(e)",
                        vswitch_db.remote], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == f"{vswitch_db.remote}: cannot connect: permission denied (the socket's mode or owner)", \
        r.stderr


def run_doc(command: str) -> str:
    assert command.startswith(".venv/bin/python -m tests.support.dataplane.reproduce ")
    r = subprocess.run(command.split(), cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_the_documented_reproduction_of_htb_on_a_tap(vswitchd):
    """docs/enforcement.md: ovs-vswitchd on the userspace datapath applies linux-htb to a TAP port."""
    [command] = doc_commands(DOC, "### Does ovs-vswitchd apply it on the userspace datapath?")
    out = run_doc(command)
    assert "QoS of run 1: type linux-htb, external_ids:_type=minimum_bandwidth, queues 5=A, on t0\n" in out
    assert re.search(r"Queue of port A: min-rate 4321000 max-rate 34359738367, external_ids port=\S+, queue-num=5, "
                     r"type=minimum_bandwidth\n", out)
    assert "qdisc htb 1: root\n" in out
    assert "class 1:6 parent 1:fffe rate 4321000 bit/s ceil 34359738360 bit/s\n" in out


def test_the_documented_reproduction_of_an_agent_restart(vswitchd):
    """docs/enforcement.md: each agent start leaves the previous run's QoS row behind, and a port deleted after a
    restart keeps its Queue (referential integrity violation)."""
    [command] = doc_commands(DOC, "### After an agent restart")
    runs = re.split(r"^run \d: ", run_doc(command), flags=re.M)[1:]
    assert runs[0].startswith("update A; update B\n")
    assert "  QoS of run 1: type linux-htb, external_ids:_type=minimum_bandwidth, queues 5=A, 6=B, on t0\n" in runs[0]
    assert "rate 2000000 bit/s" in runs[0] and "class 1:7 " in runs[0]
    assert "  QoS of run 1: type linux-htb, external_ids:_type=minimum_bandwidth, queues 5=A, 6=B, on no port\n" \
           "  QoS of run 2: type linux-htb, external_ids:_type=minimum_bandwidth, queues 5=A, on t0\n" in runs[1]
    assert "class 1:6 " in runs[1] and "class 1:7 " not in runs[1]
    assert re.search(r"  delete A failed: RuntimeError: .*referential integrity violation", runs[2])
    assert "queues 5=A, 6=B, on no port\n" in runs[2] and "queues 5=A, on no port\n" in runs[2]
    assert "  Queue of port A: " in runs[2] and "  Queue of port B: " in runs[2]
    assert "  qdisc htb" not in runs[2] and "class " not in runs[2]


def test_the_documented_ovn_controller_path():
    """docs/enforcement.md: Debian's ovn-controller is older than 23.06 and takes 23.03's path (tc run by itself)."""
    why = unavailable(vswitchd=False)
    if why:
        pytest.skip(why)
    [command] = doc_commands(DOC, "the installed ovn-controller takes the tc path")
    out = run_doc(command)
    assert re.match(r"ovn-host 23\.03\.\S+: before 23\.06\n", out), out
    assert '  ovn-controller holds "linux-noop" (23.03\'s setup_qos): yes\n' in out
    assert '  ovn-controller holds "ovn_qos" (23.06\'s configure_qos): no\n' in out
