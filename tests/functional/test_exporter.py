"""``minbw exporter`` scraped by a real Prometheus (Debian's package, installed by tests/support/prometheus/install.sh) in
front of the session's embedded Placement: PromQL returns the values the test put there, before and after a
claim, an edited ini file and a provider pushed over capacity; every expression of the alert rules and of the
Grafana dashboard evaluates; ``promtool`` accepts the rules and their tests make each alert fire."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

from minbw.model.requests import ServerRequest
from minbw.neutron.port_request import QosPort
from minbw.ops import claims
from tests.conftest import REPO, free_port

MINBW = [sys.executable, "-m", "minbw.cli"]
ROLE_FILES = REPO / "roles" / "bandwidth_exporter" / "files"
ALERTS = ROLE_FILES / "minbw-alerts.yml"
DASHBOARD = ROLE_FILES / "minbw-dashboard.json"
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"  # devstack0's br-test (Neutron's uuid5)
OVS = """[DEFAULT]
host = devstack0
[ovs]
bridge_mappings = physnet0:br-test
resource_provider_bandwidths = br-test:{kbps}:{kbps}
"""


@pytest.fixture(scope="module")
def promtool():
    subprocess.run(["bash", str(REPO / "tests" / "support" / "prometheus" / "install.sh")], check=True, timeout=900)
    return "promtool"


def test_promtool_accepts_the_rules_and_each_alert_fires(promtool):
    checked = subprocess.run([promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True)
    assert checked.returncode == 0 and "SUCCESS: 15 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = subprocess.run([promtool, "test", "rules", "minbw-alerts-test.yml"], capture_output=True, text=True,
                            cwd=REPO / "tests" / "prometheus")
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


class Prometheus:
    def __init__(self, state: Path, target: str):
        self.port = free_port()
        config = state / "prometheus.yml"
        config.write_text(json.dumps({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(ALERTS)],
            "scrape_configs": [{"job_name": "minbw", "static_configs": [{"targets": [target]}]}]}))
        self.log = open(state / "prometheus.log", "w")
        self.proc = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={state / 'data'}",
                                      f"--web.listen-address=127.0.0.1:{self.port}"],
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def api(self, path: str, **params) -> dict:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read())

    def query(self, expr: str) -> dict:
        """``{labels as a sorted tuple: value}`` of an instant query."""
        body = self.api("query", query=expr)
        assert body["status"] == "success", body
        return {tuple(sorted((k, v) for k, v in r["metric"].items() if k not in ("instance", "job", "__name__"))):
                float(r["value"][1]) for r in body["data"]["result"]}

    def wait(self, expr: str, expected, timeout: float = 40):
        """Poll the instant query until its one value (or, for a dict, every labelled value) is ``expected``."""
        deadline, got = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            try:
                got = self.query(expr)
            except OSError:
                got = None
            if got is not None:
                values = list(got.values())
                if (values == [expected]) if not isinstance(expected, dict) else got == expected:
                    return got
            time.sleep(0.5)
        raise AssertionError(f"{expr}: expected {expected}, got {got}")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.log.close()


def test_prometheus_scrapes_the_exporter(placement, placement_server, promtool, tmp_path):
    env = placement_server.env()
    ini = tmp_path / "openvswitch_agent.ini"
    ini.write_text(OVS.format(kbps=5000))
    sync = subprocess.run(MINBW + ["providers", "sync", "--agent-config", str(ini), "--create-root",
                                   "--root-inventory", "VCPU=8"], env=env, capture_output=True, text=True)
    assert sync.returncode == 0, sync.stderr
    port = free_port()
    exporter_log = open(tmp_path / "exporter.log", "w")
    exporter = subprocess.Popen(MINBW + ["exporter", "--listen-port", str(port), "--slow-interval", "1",
                                         "--agent-config", str(ini), "--port-size",
                                         "small=min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0"],
                                env=env, stdout=exporter_log, stderr=subprocess.STDOUT)
    prom = Prometheus(tmp_path, f"127.0.0.1:{port}")
    try:
        headroom = 'minbw_headroom_ports{size="small",host="devstack0",physnet="physnet0"}'
        used = 'minbw_bandwidth_used_bits_per_second{provider="devstack0:Open vSwitch agent:br-test",direction="egress"}'
        prom.wait(headroom, 5)
        prom.wait(used, 0)
        prom.wait('minbw_physnet_headroom_ports{size="small",physnet="physnet0"}', 5)
        prom.wait('minbw_bandwidth_inventory_bits_per_second{provider="devstack0:Open vSwitch agent:br-test",'
                  'direction="ingress"}', 5_000_000)
        prom.wait('minbw_sync_last_run_success', 1)
        assert 0 <= prom.query("time() - minbw_sync_last_success_timestamp_seconds")[()] < 600
        prom.wait('sum(minbw_drift_findings)', 0)
        # on a cloud of Placement alone the audit checks what Placement tells: providers over capacity
        prom.wait('minbw_audit_findings', {(("kind", "over-capacity"),): 0.0})

        # a claim: 1000 kbps each way on br-test
        port_req = QosPort.parse("min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0", "test").request(
            str(uuid.uuid4()))
        consumer = str(uuid.uuid4())
        claims.claim(placement, consumer, ServerRequest(extra_resources={"VCPU": 1}, ports=(port_req,)),
                     project_id="p", user_id="u")
        prom.wait(used, 1_000_000)
        prom.wait(headroom, 4)
        prom.wait('host:minbw_bandwidth_used_bits_per_second:sum{host="devstack0",direction="ingress"}', 1_000_000)
        # a warm scrape: one listing, and a read of what moved (br-test, once)
        calls = prom.query("max_over_time(minbw_scrape_placement_calls[5s])")[()]
        assert calls <= 4, calls
        prom.wait("minbw_scrape_placement_calls", 1)

        # the ini file edited: it no longer agrees with Placement
        ini.write_text(OVS.format(kbps=6000))
        prom.wait('minbw_drift_findings{host="devstack0"}', 1)

        # the bridge's inventory lowered under its allocation: over capacity, and no more headroom
        inv, gen = placement.get_inventories(BR_TEST)
        placement.set_inventories(BR_TEST, {rc: {**i, "total": 500} for rc, i in inv.items()}, gen)
        prom.wait('minbw_audit_findings{kind="over-capacity"}', 1)
        prom.wait(headroom, 0)
        prom.wait('ALERTS{alertname="MinbwProviderOverCapacity",alertstate="pending"}', 1)

        # every expression of the rules and of the dashboard evaluates (an error would fail the query)
        groups = prom.api("rules")["data"]["groups"]
        assert {g["name"] for g in groups} == {"minbw-aggregates", "minbw-alerts"}
        assert all(r["health"] == "ok" for g in groups for r in g["rules"]), groups
        exprs = [t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p["targets"]]
        results = {e: prom.query(e) for e in exprs}
        assert results['minbw_cloud_headroom_ports'] == {(("size", "small"), ("vnic_type", "normal")): 0.0}
        assert all(results[e] for e in exprs if "packet_rate" not in e and "> 0" not in e), results
        claims.free(placement, consumer)
    finally:
        prom.stop()
        exporter.terminate()
        exporter.wait(timeout=20)
        exporter_log.close()
    assert exporter.returncode == 0, (tmp_path / "exporter.log").read_text()


def test_a_failing_report_is_served_as_failed_and_the_scrape_goes_on(placement, tmp_path):
    from minbw.reports.metrics import Family
    from minbw.usecases.cloud import Cloud
    from minbw.usecases.exporter import Exporter, ExporterRequest, PortSize
    said = []
    cloud = Cloud(lambda: placement.conn, say=said.append)
    exporter = Exporter(cloud, ExporterRequest(port_sizes=(PortSize.parse("s=min_bw:egress:1"),),
                                               agent_configs=(str(tmp_path / "missing.ini"),), cache=None))
    status = exporter.run_slow()
    assert status["drift"]["ok"] is False and status["audit"]["ok"] is True and "drift report failed" in said[0]
    fams: dict[str, Family] = {f.name: f for f in exporter.scrape()}
    assert fams["minbw_report_success"].value(report="drift") == 0
    assert fams["minbw_drift_findings"].samples == ()  # no findings served from a failed report
    assert fams["minbw_report_success"].value(report="providers") == 1


def test_the_headroom_is_counted_again_only_when_a_provider_moved(placement, placement_server, tmp_path):
    """A long-running exporter keeps the last headroom while no provider's generation moved, and counts it again
    (right) after a claim, an inventory change and a freed claim."""
    from minbw.usecases import exporter as exporter_mod
    from minbw.usecases.cloud import Cloud
    from minbw.usecases.exporter import Exporter, ExporterRequest, PortSize
    ini = tmp_path / "openvswitch_agent.ini"
    ini.write_text(OVS.format(kbps=5000))
    sync = subprocess.run(MINBW + ["providers", "sync", "--agent-config", str(ini), "--create-root",
                                   "--root-inventory", "VCPU=8"], env=placement_server.env(), capture_output=True,
                          text=True)
    assert sync.returncode == 0, sync.stderr
    counted = []
    real_capacity = exporter_mod.capacity

    def counting(*args, **kwargs):
        counted.append(1)
        return real_capacity(*args, **kwargs)

    exporter = Exporter(Cloud(lambda: placement.conn), ExporterRequest(
        port_sizes=(PortSize.parse("small=min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0"),), cache=None))

    def headroom():
        fams = {f.name: f for f in exporter.scrape()}
        samples = fams["minbw_headroom_ports"].samples
        return next((v for k, v in samples if ("host", "devstack0") in k and ("physnet", "physnet0") in k), samples)

    exporter_mod.capacity = counting
    try:
        assert headroom() == 5 and len(counted) == 1
        assert headroom() == 5 and headroom() == 5 and len(counted) == 1  # nothing moved: the last count

        port_req = QosPort.parse("min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0", "test").request(
            str(uuid.uuid4()))
        consumer = str(uuid.uuid4())
        claims.claim(placement, consumer, ServerRequest(extra_resources={"VCPU": 1}, ports=(port_req,)),
                     project_id="p", user_id="u")
        assert headroom() == 4 and len(counted) == 2
        inv, gen = placement.get_inventories(BR_TEST)
        placement.set_inventories(BR_TEST, {rc: {**i, "total": 3000} for rc, i in inv.items()}, gen)
        assert headroom() == 2 and len(counted) == 3
        claims.free(placement, consumer)
        assert headroom() == 3 and headroom() == 3 and len(counted) == 4
    finally:
        exporter_mod.capacity = real_capacity
