"""minbw enforcement's reader and join (minbw.ops.enforcement.read_plane, minbw.reports.enforcement.ovs_host) on a
real Open vSwitch (tests/support/dataplane/switch.py: ovsdb-server and ovs-vswitchd on the userspace datapath, the
physical bridge's NIC a TAP device in a network namespace of its own) holding the rows the OVS agent's own QoS
driver writes (neutron 29.0.0, tests/support/oracle/neutron_ovs_qos.py); Neutron's and Placement's sides given as
the ops layer's inputs. The same against the mini-cloud: tests/e2e/test_enforcement_cloud.py."""
from __future__ import annotations

import pytest

from minbw.dataplane import ovs
from minbw.errors import DataPlaneUnreadable
from minbw.neutron.qos import QosRule
from minbw.ops.enforcement import HostPlane, read_plane
from minbw.reports import enforcement as e
from tests.support.dataplane.reproduce import PORT_A, PORT_B, agent_run
from tests.support.dataplane.switch import NIC, Switch, unavailable

SERVER = "5e5e5e5e-0000-4000-8000-000000000001"
RP = "f9c9ce07-679d-5d72-ac5f-31720811629a"
EGR = "NET_BW_EGR_KILOBIT_PER_SEC"
BRIDGES = {"physnet0": "br-phy"}


@pytest.fixture
def switch(tmp_path):
    why = unavailable()
    if why:
        pytest.skip(why)
    with Switch(tmp_path) as s:
        s.plug("vm-a", PORT_A, 5)
        s.plug("vm-b", PORT_B, 6)
        yield s


def bound(port: str, kbps: int) -> e.BoundPort:
    return e.BoundPort(port, SERVER, "normal", "physnet0", (QosRule("r", "minimum_bandwidth", "egress", kbps),),
                       allocation={"g": RP})


def check(switch: Switch, *ports: e.BoundPort) -> e.HostReport:
    db, kernel, speeds = read_plane(HostPlane(switch.remote, switch.netns), BRIDGES, "br-int")
    provider = e.BridgeProvider(RP, "h:Open vSwitch agent:br-phy", {EGR: {"total": 10_000}})
    held = {SERVER: {RP: {EGR: sum(p.rules[0].value for p in ports)}}}
    return e.ovs_host("h", ports, held, e.OvsPlane(db, BRIDGES, kernel, speeds, {"br-phy": provider}))


def verdicts(report: e.HostReport) -> list[tuple]:
    return [(c.kind, c.subject, c.verdict, c.factor) for c in report.checks]


def test_what_the_agent_programs_is_enforced_and_its_faults_are_named(switch):
    assert [s["error"] for s in agent_run(switch, f"update:{PORT_A}:5:1000", f"update:{PORT_B}:6:2500")] == [None] * 2
    report = check(switch, bound(PORT_A, 1000), bound(PORT_B, 2500))
    assert verdicts(report) == [("rule", PORT_A, e.ENFORCED, None), ("rule", PORT_B, e.ENFORCED, None)]
    a = report.checks[0]
    assert [(p["nic"], p["queue"], p["min_rate"]) for p in a.programmed] == [(NIC, 5, 1_000_000)]
    assert a.kernel == ({"nic": NIC, "class": "1:6", "rate": 1_000_000},)
    assert a.reserved["amount"] == 3500 and a.reserved["shared_by"] == [PORT_B] and a.notes == ()
    assert [(n.nic, n.speed_kbps, n.inventory_kbps, n.enforced_kbps, n.errors) for n in report.nics] == [
        (NIC, 10_000_000, 10_000, 3500, ())]  # a TAP reports 10,000 Mb/s
    assert report.ok

    # a min-rate set by hand: OVSDB and the kernel (ovs-vswitchd applies it) hold twice the rule
    queue = next(q for q in ovs.read(switch.remote).queues if q.external_ids["port"] == PORT_B)
    switch.vsctl("set", "Queue", queue.uuid, "other_config:min-rate=5000000")
    report = check(switch, bound(PORT_A, 1000), bound(PORT_B, 2500))
    assert verdicts(report)[1] == ("rule", PORT_B, e.WRONG_RATE, 2.0)
    assert report.checks[1].kernel == ({"nic": NIC, "class": "1:7", "rate": 5_000_000},)
    assert not report.ok

    # the agent restarts (a new QoS row, A only) after port B was deleted: B's queue and run 1's QoS row stay
    agent_run(switch, f"update:{PORT_A}:5:1000")
    report = check(switch, bound(PORT_A, 1000))
    first = next(q.uuid for q in ovs.read(switch.remote).qos if not q.ports)
    assert verdicts(report) == [("rule", PORT_A, e.ENFORCED, None), ("queue", PORT_B, e.ORPHAN, None),
                                ("qos", first, e.ORPHAN, None)]
    assert report.checks[1].why == f"port {PORT_B} is not bound to h (deleted, or moved away) and its queue stayed; " \
                                   f"it is in no QoS row on a NIC"
    assert report.nics[0].enforced_kbps == 1000


def test_a_bridge_or_namespace_that_is_not_there_is_one_line(switch):
    with pytest.raises(DataPlaneUnreadable) as error:
        read_plane(HostPlane(switch.remote, switch.netns), {"physnet0": "br-test"}, "br-int")
    assert str(error.value) == f"{switch.remote}: no bridge 'br-test' (bridges: br-int, br-phy)"
    with pytest.raises(DataPlaneUnreadable) as error:
        read_plane(HostPlane(switch.remote, "minbw-none"), BRIDGES, "br-int")
    assert str(error.value) == "network namespace minbw-none: no such network namespace"
