"""minbw enforcement's reader and join (minbw.ops.enforcement.read_plane, minbw.reports.enforcement.ovs_host) on a
real Open vSwitch (tests/support/dataplane/switch.py: ovsdb-server and ovs-vswitchd on the userspace datapath, the
physical bridge's NIC a TAP device in a network namespace of its own) holding the rows the OVS agent's own QoS
driver writes (neutron 29.0.0, tests/support/oracle/neutron_ovs_qos.py); Neutron's and Placement's sides given as
the ops layer's inputs. The same against the mini-cloud: tests/e2e/test_enforcement_cloud.py."""
from __future__ import annotations

import subprocess

import pytest

from minbw.dataplane import ovs
from minbw.errors import DataPlaneUnreadable, InvalidInput
from minbw.neutron.qos import QosRule
from minbw.ops.enforcement import (HostPlane, device_providers, read_chassis, read_northbound, read_plane,
                                   read_queues)
from minbw.reports import enforcement as e
from tests.support.dataplane.reproduce import PORT_A, PORT_B, agent_run
from tests.support.dataplane.switch import (NB_SCHEMA, NIC, SB_SCHEMA, VSWITCH_SCHEMA, OvsdbServer, Switch, unavailable,
                                           write_northbound, write_southbound)

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


# ------------------------------------------------------------------ ML2/OVN: the host's Open vSwitch database and the
# northbound one, both real (ovsdb-server on Debian's schemas), written as ovn-controller's host and Neutron 29 write them

OVN_BR_TEST = "027e8cad-f886-586a-b5a7-670a6ff7a840"  # devstack0:OVN Controller agent:br-test (Neutron's uuid5)
NETWORK = "neutron-11111111-1111-4111-8111-111111111111"
OTHER = "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee"  # a port bound elsewhere: its row is not sent


@pytest.fixture
def ovn_host_dbs(tmp_path):
    why = unavailable(vswitchd=False)
    if why:
        pytest.skip(why)
    with OvsdbServer(tmp_path / "host", VSWITCH_SCHEMA) as local, OvsdbServer(tmp_path / "nb", NB_SCHEMA, "nb") as nb:
        def vsctl(*args):
            subprocess.run(["ovs-vsctl", f"--db={local.remote}", "--no-wait", *args], check=True, capture_output=True)
        vsctl("init")
        vsctl("set", "Open_vSwitch", ".", "external_ids:hostname=devstack0", "external_ids:system-id=chassis-0",
              f"external_ids:ovn-bridge-mappings=physnet0:br-test",
              'external_ids:ovn-cms-options="resource_provider_bandwidths=br-test:1500:1500,'
              'resource_provider_hypervisors=br-test:devstack0"')
        vsctl("add-br", "br-int", "--", "add-br", "br-test", "--", "add-port", "br-test", "eth1",
              "--", "add-port", "br-int", "tapa", "--", "set", "Interface", "tapa", f"external_ids:iface-id={PORT_A}")
        yield local, nb, vsctl


def nb_write(remote: str, ports: dict[str, dict]) -> None:
    write_northbound(remote, NETWORK, {name: {"options": options} for name, options in ports.items()})


def neutron29(kbps: int) -> dict:
    from neutron.plugins.ml2.drivers.ovn.mech_driver.ovsdb.extensions.qos import OVNClientQosExtension
    return {k: v for k, v in OVNClientQosExtension._ovn_lsp_rule({"minimum_bandwidth": {"min_kbps": kbps}}).items()
            if v is not None}


def ovn_check(local, nb, *ports: e.BoundPort, bound=None) -> e.HostReport:
    where = HostPlane(local.remote, kernel=False, ovn_nb=nb.remote)
    config, switch = read_chassis(where, "devstack0")
    bridges = {p: d[0] for p, d in config.device_mappings.items()}
    rps = device_providers(config, bridges.values())
    assert rps == {"br-test": (OVN_BR_TEST, "devstack0:OVN Controller agent:br-test")}
    bound = bound or [p.id for p in ports]
    northbound = read_northbound(where, bound)
    provider = e.BridgeProvider(OVN_BR_TEST, rps["br-test"][1], {EGR: {"total": 1500}})
    plane = e.OvnPlane(switch, northbound, bridges, {}, {"br-test": provider})
    held = {SERVER: {OVN_BR_TEST: {EGR: sum(p.rules[0].value for p in ports)}}}
    ports = [e.BoundPort(**{**p.__dict__, "allocation": {"g": OVN_BR_TEST}}) for p in ports]
    return e.ovn_host("devstack0", ports, held, plane, bound=bound)



def test_an_ovn_host_read_and_joined(ovn_host_dbs):
    local, nb, vsctl = ovn_host_dbs
    nb_write(nb.remote, {PORT_A: neutron29(1000), PORT_B: neutron29(500), OTHER: neutron29(700)})

    # no interface marked ovn-egress-iface: Neutron's value is right, but ovn-controller has no NIC to shape
    report = ovn_check(local, nb, bound(PORT_A, 1000), bound=[PORT_A, PORT_B])
    assert verdicts(report) == [("rule", PORT_A, e.MISSING, None), ("lsp", PORT_B, e.ORPHAN, None)]
    assert report.checks[0].programmed == ({"lsp": PORT_A, "qos_min_rate": 1_000_000, "qos_max_rate": None,
                                            "qos_burst": None},)
    assert [(n.nic, n.errors) for n in report.nics] == [(None, (
        "no interface of br-test is marked external_ids:ovn-egress-iface=true: Placement admits 1500 kbps egress "
        "there, which ovn-controller enforces on no NIC",))]

    vsctl("set", "Interface", "eth1", "external_ids:ovn-egress-iface=true")
    report = ovn_check(local, nb, bound(PORT_A, 1000), bound(PORT_B, 500))
    assert verdicts(report) == [("rule", PORT_A, e.ENFORCED, None), ("rule", PORT_B, e.ENFORCED, None)]
    assert report.checks[0].notes == () and report.checks[1].notes[-1].startswith("the port is not plugged on br-int")
    assert [(n.nic, n.bridge, n.inventory_kbps, n.enforced_kbps, n.errors) for n in report.nics] == [
        ("eth1", "br-test", 1500, 1500, ())]

    # what Neutron 21.0.0-25.x wrote
    nb_write(nb.remote, {PORT_A: {"qos_min_rate": "1000"}})
    report = ovn_check(local, nb, bound(PORT_A, 1000))
    assert verdicts(report) == [("rule", PORT_A, e.WRONG_RATE, 0.001)] and report.checks[0].why == e.OVN_KBPS_BUG


def test_the_northbound_sends_the_hosts_ports_only(ovn_host_dbs):
    _, nb, _ = ovn_host_dbs
    nb_write(nb.remote, {PORT_A: neutron29(1000), OTHER: neutron29(700)})
    where = HostPlane(ovn_nb=nb.remote)
    assert [(p.name, p.switch) for p in read_northbound(where, [PORT_A, PORT_B]).ports] == [(PORT_A, None)]
    assert read_northbound(where, []).ports == ()
    with pytest.raises(DataPlaneUnreadable) as error:
        read_northbound(HostPlane(ovn_nb="ssl:127.0.0.1:6641"), [PORT_A])
    assert str(error.value) == ("ssl:127.0.0.1:6641: an ssl: remote needs the client's private key, certificate and "
                                "CA certificate")


def test_the_ports_queues_from_the_southbound_ovn_controller_reads(ovn_host_dbs, tmp_path):
    local, _, vsctl = ovn_host_dbs
    where = HostPlane(local.remote)
    _, switch = read_chassis(where, "devstack0")
    with pytest.raises(InvalidInput) as error:  # no ovn-remote: one line, before any southbound read
        read_queues(where, switch, [PORT_A])
    assert str(error.value) == (
        f"the Open vSwitch database {local.remote} has no external_ids:ovn-remote (the southbound database "
        f"ovn-controller reads, where the ports' queue numbers are): is ovn-controller configured there? --no-kernel "
        f"leaves the kernel's side out")
    with OvsdbServer(tmp_path / "sb", SB_SCHEMA, "sb") as sb:
        write_southbound(sb.remote, {PORT_A: {"qdisc_queue_id": "3"}, OTHER: {"qdisc_queue_id": "4"}})
        # a list of remotes, as ovn-controller takes it (a clustered database): the first that answers
        vsctl("set", "Open_vSwitch", ".", f'external_ids:ovn-remote="unix:{tmp_path}/none.sock,{sb.remote}"')
        _, switch = read_chassis(where, "devstack0")
        assert dict(read_queues(where, switch, [PORT_A, PORT_B]).queues) == {PORT_A: 3}
        vsctl("set", "Open_vSwitch", ".", f"external_ids:ovn-remote=unix:{tmp_path}/none.sock")
        _, switch = read_chassis(where, "devstack0")
        with pytest.raises(DataPlaneUnreadable) as error:
            read_queues(where, switch, [PORT_A])
        assert str(error.value) == f"unix:{tmp_path}/none.sock: cannot connect: no such socket"
