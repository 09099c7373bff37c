"""minbw.reports.metrics: the exporter's families from what the reports found (pure)."""
from __future__ import annotations

import re

import pytest

from minbw.errors import InvalidInput
from minbw.model.providers import Provider, ProviderDetail
from minbw.plan.audit import LEAK, OVER_CAPACITY, Finding
from minbw.reports import metrics
from minbw.reports.capacity.report import count_capacity
from minbw.reports.capacity.request import capacity_request
from minbw.reports.drift import DriftRow
from minbw.usecases.exporter import ExporterRequest, PortSize

E, I, PPS = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC", "NET_PACKET_RATE_KILOPACKET_PER_SEC"
NORMAL, DIRECT, PN0 = "CUSTOM_VNIC_TYPE_NORMAL", "CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_PHYSNET_PHYSNET0"


def rp(uuid, name, parent=None, root=None, traits=(), inv=None, used=None):
    return ProviderDetail(Provider(uuid, name, 1, parent, root or uuid), frozenset(traits),
                          {rc: {"total": v} if isinstance(v, int) else v for rc, v in (inv or {}).items()},
                          dict(used or {}), True)


TREE = [rp("h1", "h1"), rp("a", "h1:agent", "h1", "h1", (NORMAL, DIRECT), {PPS: 1000}, {PPS: 100}),
        rp("b", "h1:agent:br", "a", "h1", (PN0, NORMAL), {E: {"total": 5000, "reserved": 1000, "allocation_ratio": 1.5},
                                                         I: 5000}, {E: 2000}),
        rp("p", "h1:sriov:ens5", "a", "h1", (PN0, DIRECT), {E: 3000})]
HOSTS = {"h1": "h1", "a": "h1", "b": "h1", "p": "h1"}


def by_name(families):
    return {f.name: f for f in families}


def test_names_follow_prometheus_conventions():
    fams = metrics.families(details=TREE, hosts=HOSTS, findings=(), drift_rows=(), stats={"calls": 1})
    for f in fams:
        assert re.fullmatch(r"minbw_[a-z_]+", f.name), f.name
        assert not f.name.endswith("_total"), f.name  # prometheus_client adds _total to counters
        assert f.type in ("gauge", "counter") and f.help
        units = ("_bits_per_second", "_packets_per_second", "_ratio", "_seconds", "_ports", "_findings", "_calls",
                 "_read", "_providers", "_success", "_writes")
        assert f.name.endswith(units) or f.name in ("minbw_providers", "minbw_bandwidth_providers"), f.name


def test_per_provider_and_per_vnic_type_values():
    fams = by_name(metrics.families(details=TREE, hosts=HOSTS))
    br = dict(host="h1", provider="h1:agent:br", physnet="physnet0", vnic_types="normal", direction="egress")
    assert fams["minbw_bandwidth_inventory_bits_per_second"].value(**br) == 5_000_000
    assert fams["minbw_bandwidth_reserved_bits_per_second"].value(**br) == 1_000_000
    assert fams["minbw_bandwidth_used_bits_per_second"].value(**br) == 2_000_000
    assert fams["minbw_bandwidth_allocation_ratio"].value(**br) == 1.5
    agent = dict(host="h1", provider="h1:agent", physnet="", vnic_types="direct,normal", direction="any")
    assert fams["minbw_packet_rate_used_packets_per_second"].value(**agent) == 100_000
    inv = fams["minbw_vnic_type_bandwidth_inventory_bits_per_second"]
    assert inv.value(vnic_type="normal", physnet="physnet0", direction="egress") == 5_000_000
    assert inv.value(vnic_type="direct", physnet="physnet0", direction="egress") == 3_000_000


def test_headroom_audit_drift_sync_and_scrape():
    req = capacity_request(qos_ports=(PortSize.parse("small=min_bw:egress:1000").port,))
    report = count_capacity(TREE, req)
    leak = Finding(LEAK, "c1", "leaked")
    rows = [DriftRow("b", "h1:agent:br", {"ini": {}, "placement": {}}, ("total differs",)),
            DriftRow("p", "h1:sriov:ens5", {"ini": {}, "placement": {}}, ())]
    fams = by_name(metrics.families(
        details=TREE, hosts=HOSTS, sizes=[("small", "normal", report)], findings=[leak, leak], drift_rows=rows,
        status={"audit": {"ok": True, "seconds": 1.5, "last_success": 100.0}, "drift": {"ok": False}},
        sync_record={"time": 50.0, "ok": False, "writes": 0, "last_success": 40.0},
        stats={"seconds": 0.2, "calls": 1, "read": 0, "listed": 4, "bandwidth": 3}, calls_total=17))
    # br: (5000 - 1000) * 1.5 - 2000 = 4000 egress free: 4 ports of 1000 kbps (egress only)
    assert fams["minbw_headroom_ports"].value(size="small", vnic_type="normal", host="h1", physnet="physnet0") == 4
    assert fams["minbw_cloud_headroom_ports"].value(size="small", vnic_type="normal") == 4
    assert fams["minbw_audit_findings"].value(kind=LEAK) == 2
    assert fams["minbw_audit_findings"].value(kind=OVER_CAPACITY) == 0
    assert fams["minbw_drift_findings"].value(host="h1") == 1 and fams["minbw_drift_providers"].value() == 2
    assert fams["minbw_report_success"].value(report="drift") == 0
    assert fams["minbw_report_last_success_timestamp_seconds"].value(report="audit") == 100.0
    assert fams["minbw_sync_last_run_success"].value() == 0
    assert fams["minbw_sync_last_success_timestamp_seconds"].value() == 40.0
    assert fams["minbw_placement_calls"].type == "counter" and fams["minbw_placement_calls"].value() == 17


def test_a_report_that_has_not_run_has_no_samples():
    fams = by_name(metrics.families(details=TREE, hosts=HOSTS))
    assert fams["minbw_audit_findings"].samples == () and fams["minbw_drift_findings"].samples == ()
    kinds = by_name(metrics.families(findings=(), audit_kinds=(OVER_CAPACITY,)))["minbw_audit_findings"]
    assert [dict(k)["kind"] for k, _ in kinds.samples] == [OVER_CAPACITY]  # only what was checked


@pytest.mark.parametrize("text, message", [
    ("min_bw:egress:1000", "expected NAME="),
    ("a b=min_bw:egress:1000", "expected NAME="),
    ("small=min_bw:sideways:1", "direction"),
])
def test_bad_port_sizes(text, message):
    with pytest.raises(InvalidInput, match=message):
        PortSize.parse(text)


def test_config_and_options():
    req = ExporterRequest.from_config({"port_sizes": {"small": "min_bw:egress:1000"}, "listen_port": 9900,
                                       "slow_interval": 60}, port=9901)
    assert (req.port, req.slow_interval, [s.name for s in req.port_sizes]) == (9901, 60.0, ["small"])
    with pytest.raises(InvalidInput, match="unknown key"):
        ExporterRequest.from_config({"port_size": {}})
    assert req.owner_nova is None  # decided at each safety check
    assert ExporterRequest.from_config({"owner_nova": False}).owner_nova is False
    assert ExporterRequest.from_config({"owner_nova": "no"}, owner_nova="yes").owner_nova is True  # the option wins
    assert ExporterRequest.from_config({"owner_nova": "no"}, owner_nova="auto").owner_nova is False
    with pytest.raises(InvalidInput, match="owner_nova: expected auto, yes or no"):
        ExporterRequest.from_config({"owner_nova": "maybe"})
    with pytest.raises(InvalidInput, match="given twice"):
        ExporterRequest(port_sizes=(PortSize.parse("a=min_bw:egress:1"), PortSize.parse("a=min_bw:egress:2")))
