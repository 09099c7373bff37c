"""minbw.dataplane.ovn against a real OVN northbound database (an ovsdb-server on ovn-central's
ovn-nb.ovsschema, tests/support/dataplane/switch.py), its Logical_Switch_Port rows written through ovsdbapp's own
OVN northbound API with the QoS options Neutron computes: neutron 29.0.0's ``_ovn_lsp_rule`` (bit/s), and the
value 21.0.0-25.x wrote (``str(min_kbps)``, read in their ``_ovn_qos_rule``; docs/enforcement.md). And a real
southbound database (ovn-sb.ovsschema), its ``Port_Binding`` rows written through ovsdbapp's OVN southbound API
with the ``qdisc_queue_id`` northd gives a port with QoS options, read back as the ports' queues."""
from __future__ import annotations

import warnings

import pytest

from minbw.dataplane import ovn
from tests.support.dataplane.switch import NB_SCHEMA, SB_SCHEMA, OvsdbServer, unavailable, write_northbound, write_southbound

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from neutron.plugins.ml2.drivers.ovn.mech_driver.ovsdb.extensions.qos import OVNClientQosExtension

NETWORK = "neutron-11111111-1111-4111-8111-111111111111"
NEW = "22222222-2222-4222-8222-222222222222"  # a port Neutron 29 wrote
OLD = "33333333-3333-4333-8333-333333333333"  # the same rule as Neutron < 26.0.0 wrote it
PLAIN = "44444444-4444-4444-8444-444444444444"  # no QoS


def served(tmp_path, schema, name: str) -> OvsdbServer:
    """An ovsdb-server of the test's own on ``schema`` (skipped where ovsdb-server and OVN's schemas cannot be had)."""
    why = unavailable(vswitchd=False)
    if why:
        pytest.skip(why)
    return OvsdbServer(tmp_path, schema, name)


@pytest.fixture
def northbound(tmp_path):
    with served(tmp_path, NB_SCHEMA, "nb") as nb:
        yield nb


def write(remote: str, ports: dict[str, dict]) -> None:
    write_northbound(remote, NETWORK, ports)


def test_the_qos_options_neutron_writes_read_back_in_bit_per_second(northbound):
    rule = {"minimum_bandwidth": {"min_kbps": 1000}, "bandwidth_limit": {"max_kbps": 3000, "max_burst_kbps": 300}}
    options = {k: v for k, v in OVNClientQosExtension._ovn_lsp_rule(rule).items() if v is not None}
    assert options == {"qos_min_rate": "1000000", "qos_max_rate": "3000000", "qos_burst": "300000"}
    write(northbound.remote, {NEW: {"options": options}, OLD: {"options": {"qos_min_rate": "1000"}},
                              PLAIN: {}, "provnet-physnet0": {"type": "localnet",
                                                              "options": {"network_name": "physnet0"}}})

    nb = ovn.read(northbound.remote)
    assert [p.name for p in nb.ports] == [NEW, OLD, PLAIN, "provnet-physnet0"]
    assert {p.switch for p in nb.ports} == {NETWORK}
    new, old, plain = nb.port(NEW), nb.port(OLD), nb.port(PLAIN)
    assert (new.qos_min_rate, new.qos_max_rate, new.qos_burst, new.type) == (1_000_000, 3_000_000, 300_000, "")
    assert (old.qos_min_rate, old.qos_max_rate) == (1000, None)  # 1,000 bit/s for a 1,000 kbps guarantee
    assert (plain.qos_min_rate, dict(plain.options)) == (None, {})
    assert nb.port("provnet-physnet0").type == "localnet" and nb.port("absent") is None

    # a host's ports only: the server sends those rows (conditional monitoring), their switches are not read
    assert [(p.name, p.switch) for p in ovn.read(northbound.remote, ports=[OLD, "absent"]).ports] == [(OLD, None)]
    assert ovn.read(northbound.remote, ports=[]).ports == ()


@pytest.fixture
def southbound(tmp_path):
    with served(tmp_path, SB_SCHEMA, "sb") as sb:
        yield sb


def test_the_ports_queues_read_from_the_southbound(southbound):
    write_southbound(southbound.remote, {NEW: {"qos_min_rate": "1000000", "qdisc_queue_id": "1"},
                                         OLD: {"qos_min_rate": "1000", "qdisc_queue_id": "16"}, PLAIN: {}})
    sb = ovn.queues(southbound.remote, [NEW, OLD, PLAIN, "absent"])
    assert (sb.remote, dict(sb.queues)) == (southbound.remote, {NEW: 1, OLD: 16})
    assert (sb.queue(NEW), sb.queue(PLAIN), sb.queue("absent")) == (1, None, None)
    # the ports asked for only: the server sends those rows (conditional monitoring on logical_port)
    assert dict(ovn.queues(southbound.remote, [OLD]).queues) == {OLD: 16}
    assert ovn.queues(southbound.remote, []).queues == {}
