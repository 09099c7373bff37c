"""``minbw exporter`` scraped by a real Prometheus (Debian's package, installed by tests/support/prometheus/install.sh) in
front of the session's embedded Placement: PromQL returns the values the test put there, before and after a
claim, an edited ini file and a provider pushed over capacity; every expression of the alert rules and of the
Grafana dashboard evaluates; ``promtool`` accepts the rules and their tests make each alert fire."""
from __future__ import annotations

import subprocess
import uuid

import pytest

from minbw.model.requests import ServerRequest
from minbw.neutron.port_request import QosPort
from minbw.ops import claims
from tests.conftest import MINBW, REPO
from tests.support.prometheus.server import ALERTS, dashboard_exprs, install, scraping
from tests.support import cli_forks

BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"  # devstack0's br-test (Neutron's uuid5)
OVS = """[DEFAULT]
host = devstack0
[ovs]
bridge_mappings = physnet0:br-test
resource_provider_bandwidths = br-test:{kbps}:{kbps}
"""


@pytest.fixture(scope="module")
def promtool():
    return install()


def test_promtool_accepts_the_rules_and_each_alert_fires(promtool):
    checked = subprocess.run([promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True)
    assert checked.returncode == 0 and "SUCCESS: 19 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = subprocess.run([promtool, "test", "rules", "minbw-alerts-test.yml"], capture_output=True, text=True,
                            cwd=REPO / "tests" / "prometheus")
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_prometheus_scrapes_the_exporter(placement, placement_server, promtool, tmp_path):
    env = placement_server.env()
    ini = tmp_path / "openvswitch_agent.ini"
    ini.write_text(OVS.format(kbps=5000))
    sync = cli_forks.run(MINBW + ["provider", "sync", "--agent-config", str(ini), "--create-root",
                                   "--root-inventory", "VCPU=8"], env=env, capture_output=True, text=True)
    assert sync.returncode == 0, sync.stderr
    with scraping(tmp_path, MINBW + ["exporter", "--slow-interval", "1", "--interval", "1", "--agent-config", str(ini),
                                     "--port-size", "small=min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0"],
                  env) as prom:
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
        # a collection after the claim: one listing, br-test's traits, inventories and usage (it moved), and the
        # headroom counted again with the root traits Nova's filters ask about (one listing each:
        # COMPUTE_STATUS_DISABLED, OWNER_NOVA); then a warm one: the listing and br-test's usage (every bandwidth
        # provider's usage is read each collection)
        calls = prom.query("max_over_time(minbw_collection_placement_calls[5s])")[()]
        assert calls <= 6, calls
        prom.wait("minbw_collection_placement_calls", 2)
        assert prom.query("minbw_collection_age_seconds")[()] < 5  # what a scrape serves is at most a cycle old

        # the claim deleted as Nova frees a deleted server (no generation moves): the next collection shows it
        placement.request("delete", f"/allocations/{consumer}", "1.28")
        prom.wait(used, 0)
        prom.wait(headroom, 5)
        claims.claim(placement, consumer, ServerRequest(extra_resources={"VCPU": 1}, ports=(port_req,)),
                     project_id="p", user_id="u")
        prom.wait(used, 1_000_000)

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
        exprs = dashboard_exprs()
        results = {e: prom.query(e) for e in exprs}
        assert results['minbw_cloud_headroom_ports'] == {(("size", "small"), ("vnic_type", "normal")): 0.0}
        # the enforcement panels' series come from a host's exporter (tests/e2e/test_enforcement_fleet_cloud.py)
        assert all(results[e] for e in exprs if "packet_rate" not in e and "> 0" not in e
                   and "minbw_enforcement_" not in e), results
        claims.free_allocations(placement, consumer)


def test_a_failing_report_is_served_as_failed_and_the_scrape_goes_on(placement, tmp_path):
    from minbw.reports.metrics import Family
    from minbw.usecases.cloud import NO_CACHE, Cache, Cloud
    from minbw.usecases.exporter import Exporter, ExporterRequest, PortSize
    said = []
    cloud = Cloud(lambda: placement.conn, say=said.append)
    exporter = Exporter(cloud, ExporterRequest(port_sizes=(PortSize.parse("s=min_bw:egress:1"),),
                                               agent_configs=(str(tmp_path / "missing.ini"),), cache=NO_CACHE))
    status = exporter.run_slow()
    assert status["drift"]["ok"] is False and status["audit"]["ok"] is True and "drift report failed" in said[0]
    fams: dict[str, Family] = {f.name: f for f in exporter.collect()}
    assert fams["minbw_report_success"].value(report="drift") == 0
    assert fams["minbw_drift_findings"].samples == ()  # no findings served from a failed report
    assert fams["minbw_report_success"].value(report="providers") == 1


def test_the_headroom_is_counted_again_only_when_a_provider_moved(placement, placement_server, tmp_path):
    """A long-running exporter keeps the last headroom while no provider's listing, inventories or usage changed,
    and counts it again (right) after a claim, an inventory change, a freed claim, and a claim deleted with
    ``DELETE /allocations/{consumer}`` (which moves no generation: docs/placement-generations.md)."""
    from minbw.exporter import collector as exporter_mod
    from minbw.usecases.cloud import NO_CACHE, Cache, Cloud
    from minbw.usecases.exporter import Exporter, ExporterRequest, PortSize
    ini = tmp_path / "openvswitch_agent.ini"
    ini.write_text(OVS.format(kbps=5000))
    sync = cli_forks.run(MINBW + ["provider", "sync", "--agent-config", str(ini), "--create-root",
                                   "--root-inventory", "VCPU=8"], env=placement_server.env(), capture_output=True,
                          text=True)
    assert sync.returncode == 0, sync.stderr
    counted = []
    real_capacity = exporter_mod.count_capacity

    def counting(*args, **kwargs):
        counted.append(1)
        return real_capacity(*args, **kwargs)

    exporter = Exporter(Cloud(lambda: placement.conn), ExporterRequest(
        port_sizes=(PortSize.parse("small=min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0"),), cache=NO_CACHE))

    def headroom():
        fams = {f.name: f for f in exporter.collect()}
        samples = fams["minbw_headroom_ports"].samples
        return next((v for k, v in samples if ("host", "devstack0") in k and ("physnet", "physnet0") in k), samples)

    exporter_mod.count_capacity = counting
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
        claims.free_allocations(placement, consumer)
        assert headroom() == 3 and headroom() == 3 and len(counted) == 4
        claims.claim(placement, consumer, ServerRequest(extra_resources={"VCPU": 1}, ports=(port_req,)),
                     project_id="p", user_id="u")
        assert headroom() == 2 and len(counted) == 5
        placement.request("delete", f"/allocations/{consumer}", "1.28")  # as Nova frees a deleted server
        assert headroom() == 3 and len(counted) == 6
    finally:
        exporter_mod.count_capacity = real_capacity


def _sync_hosts(placement_server, tmp_path, hosts, kbps=5000):
    """Each host's OVS agent (br-test on physnet0) and compute root, by minbw's sync; host → br-test's uuid."""
    from minbw.neutron import naming
    for host in hosts:
        ini = tmp_path / f"{host}.ini"
        ini.write_text(OVS.format(kbps=kbps).replace("devstack0", host))
        sync = cli_forks.run(MINBW + ["provider", "sync", "--agent-config", str(ini), "--create-root",
                                       "--root-inventory", "VCPU=8"], env=placement_server.env(),
                              capture_output=True, text=True)
        assert sync.returncode == 0, sync.stderr
    return {h: naming.device_rp_uuid(naming.AGENT_KINDS[naming.OVS], h, "br-test") for h in hosts}


# what changes from one scrape to the next whatever moved
_VOLATILE = ("minbw_collection_", "minbw_placement_calls", "minbw_report_")


def _series(text: str, openmetrics: bool) -> dict:
    """(name, labels) → value of an exposition, parsed by prometheus_client's parsers."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
    from prometheus_client.parser import text_string_to_metric_families as parse_text
    parsed = (parse_om if openmetrics else parse_text)(text)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in parsed for s in f.samples
            if not s.name.startswith(_VOLATILE)}


@pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])
def test_a_provider_that_moved_is_the_only_one_rebuilt_and_every_value_stays_right(
        placement, placement_server, tmp_path, openmetrics):
    """A long-running exporter keeps what it built and rendered while no provider moved; after a claim on one
    host's bridge it rebuilds that provider's part alone (every provider's lines are made at each publication): only the series of that provider, of its host's
    headroom and of the sums over it change, and every value is the one a new exporter, reading everything,
    serves (after the claim, after an edited ini, after the claim is freed)."""
    from minbw.cache.providers import ProviderCache
    from minbw.usecases.cloud import NO_CACHE, Cache, Cloud
    from minbw.usecases.exporter import Exporter, ExporterRequest, PortSize
    hosts = [f"hx{i}" for i in range(3)]
    bridges = _sync_hosts(placement_server, tmp_path, hosts)
    size = PortSize.parse("small=min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0")
    cache = tmp_path / "providers.json"
    exporter = Exporter(Cloud(lambda: placement.conn), ExporterRequest(port_sizes=(size,), cache=Cache.at(str(cache))))

    def fresh() -> dict:  # a new exporter without a cache: it reads every provider
        new = Exporter(Cloud(lambda: placement.conn), ExporterRequest(port_sizes=(size,), cache=NO_CACHE))
        new.collect()
        return _series(new.exposition(openmetrics=openmetrics), openmetrics)

    def scrape() -> dict:  # a collection, then what a scrape gets
        exporter.collect()
        return _series(exporter.exposition(openmetrics=openmetrics), openmetrics)

    first = scrape()
    assert first == fresh()
    saved = cache.stat().st_mtime_ns  # the first collection's safety check saved the cache...
    families_of = exporter.collector.provider_families
    built = families_of.built
    families = exporter.collect()
    assert scrape() == first
    assert families_of.built == built  # nothing moved: no provider's part built again
    kept = {f.name: f for f in families}
    again = {f.name: f for f in exporter.collect()}
    assert again["minbw_bandwidth_used_bits_per_second"] is kept["minbw_bandwidth_used_bits_per_second"]

    # a claim on hx1's bridge (and its root): hx1's bridge is the one provider rebuilt
    consumer = str(uuid.uuid4())
    root = placement.list_providers(name="hx1")[0].uuid
    placement.put_allocations(consumer, {"allocations": {root: {"resources": {"VCPU": 1}},
                                                         bridges["hx1"]: {"resources": {
                                                             "NET_BW_EGR_KILOBIT_PER_SEC": 1000,
                                                             "NET_BW_IGR_KILOBIT_PER_SEC": 1000}}},
                                         "project_id": "p", "user_id": "u", "consumer_generation": None})
    built, read = families_of.built, exporter.collector.reader.read
    after = scrape()
    assert families_of.built == built + 1 and exporter.collector.reader.read == read + 1  # the bridge
    changed = {k for k in first.keys() | after.keys() if first.get(k) != after.get(k)}
    bridge = "hx1:Open vSwitch agent:br-test"
    sums = ("minbw_vnic_type_bandwidth_used_bits_per_second", "minbw_physnet_headroom_ports",
            "minbw_cloud_headroom_ports")
    theirs = {k for k in changed if dict(k[1]).get("provider") == bridge or k[0] in sums
              or (k[0] == "minbw_headroom_ports" and dict(k[1])["host"] == "hx1")}
    assert changed == theirs, changed - theirs
    assert {k[0] for k in changed if dict(k[1]).get("provider") == bridge} == {
        "minbw_bandwidth_used_bits_per_second"}  # its usage, nothing else of it
    assert {k[0] for k in changed} == {"minbw_bandwidth_used_bits_per_second", "minbw_headroom_ports", *sums}
    assert after[("minbw_headroom_ports", (("host", "hx1"), ("physnet", "physnet0"), ("size", "small"),
                                           ("vnic_type", "normal")))] == 4
    assert after == fresh()

    # an edited ini: hx2's bridge gets 3000 kbps each way
    _sync_hosts(placement_server, tmp_path, ["hx2"], kbps=3000)
    edited = scrape()
    assert edited == fresh() and edited[("minbw_headroom_ports", (("host", "hx2"), ("physnet", "physnet0"),
                                                                  ("size", "small"), ("vnic_type", "normal")))] == 3
    # the claim freed
    claims.free_allocations(placement, consumer)
    assert scrape() == fresh()
    assert cache.stat().st_mtime_ns == saved  # ...and the collections between two checks do not write it
    assert ProviderCache(cache, placement.endpoint()).entries


def test_the_headroom_follows_a_fleet_upgraded_to_nova_34_within_one_safety_check(placement, placement_server,
                                                                                  tmp_path):
    """Nova asks for ``root_required=OWNER_NOVA`` once every nova-compute reports it (owner_nova_filter). The
    exporter decides that again at each safety check (``slow_interval``): while a compute node lacks OWNER_NOVA
    (an older nova-compute: Nova asks for nothing) every host has headroom, a root no nova-compute made included;
    once every compute node has it, that root has none (Nova would not pick it), from the next check on;
    ``owner_nova`` given (``--owner-nova no``) is not read."""
    from minbw.usecases.cloud import NO_CACHE, Cache, Cloud
    from minbw.usecases.exporter import Exporter, ExporterRequest, PortSize
    roots = {}
    for host in ("devstack0", "devstack1", "devstack2"):
        ini = tmp_path / f"{host}.ini"
        ini.write_text(OVS.format(kbps=5000).replace("devstack0", host))
        sync = cli_forks.run(MINBW + ["provider", "sync", "--agent-config", str(ini), "--create-root",
                                       "--root-inventory", "VCPU=8"], env=placement_server.env(),
                              capture_output=True, text=True)
        assert sync.returncode == 0, sync.stderr
        roots[host] = placement.list_providers(name=host)[0].uuid
    for host, uuid_ in roots.items():  # computes older than Nova 34: COMPUTE_NODE only; devstack2 not Nova's
        traits, gen = placement.get_provider_traits(uuid_)
        assert "OWNER_NOVA" in traits  # --create-root makes a root as Nova 34 does
        placement.set_provider_traits(uuid_, traits - {"OWNER_NOVA"} - ({"COMPUTE_NODE"} if host == "devstack2"
                                                                         else set()), gen)
    now = [1000.0]
    size = PortSize.parse("small=min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0")

    def headroom(exporter):
        fams = {f.name: f for f in exporter.collect()}
        return {dict(k)["host"]: v for k, v in fams["minbw_headroom_ports"].samples if ("physnet", "physnet0") in k}

    def upgrade(host):  # its nova-compute upgraded: the resource tracker writes OWNER_NOVA
        traits, gen = placement.get_provider_traits(roots[host])
        placement.set_provider_traits(roots[host], traits | {"OWNER_NOVA"}, gen)

    exporter = Exporter(Cloud(lambda: placement.conn), ExporterRequest(port_sizes=(size,), cache=NO_CACHE),
                        clock=lambda: now[0])
    pinned = Exporter(Cloud(lambda: placement.conn), ExporterRequest(port_sizes=(size,), cache=NO_CACHE,
                                                                     owner_nova=False), clock=lambda: now[0])
    every = {"devstack0": 5, "devstack1": 5, "devstack2": 5}
    assert headroom(exporter) == every
    upgrade("devstack0")
    now[0] += 301  # the default slow_interval is 300 s
    assert headroom(exporter) == every  # mid-upgrade: devstack1's nova-compute is older, Nova asks for nothing
    upgrade("devstack1")
    assert headroom(exporter) == every  # no safety check yet: the last decision
    now[0] += 301
    assert headroom(exporter) == {"devstack0": 5, "devstack1": 5, "devstack2": 0}
    assert headroom(pinned) == every


def test_a_hosts_exporter_takes_the_checks_options_and_refuses_the_clouds():
    """``--enforcement-host`` / the config's ``enforcement``: ``enforcement show``'s request, checked every 300 s by
    default; the cloud exporter's options, a check's unknown or wrong option, or no host are refused, named."""
    from minbw.errors import InvalidInput
    from minbw.usecases.enforcement import EnforcementRequest
    from minbw.usecases.exporter import ExporterRequest
    req = ExporterRequest.from_config({"enforcement": {"host": "c0", "ovs_db": "tcp:127.0.0.1:6640",
                                                       "backend": "openvswitch", "kernel": False}},
                                      enforcement_host="compute-1")
    assert (req.enforcement, req.interval, req.port_sizes) == (
        EnforcementRequest("compute-1", ovs_db="tcp:127.0.0.1:6640", backend="openvswitch", kernel=False), 300.0, ())
    assert ExporterRequest.from_config({}, enforcement_host="c1", interval=60).interval == 60
    assert ExporterRequest.from_config({}).enforcement is None
    for config, overrides, said in [
        ({"enforcement": {"host": "c1"}, "port_sizes": {"small": "min_bw:egress:1"}, "slow_interval": 60}, {},
         "the exporter's config: port_sizes, slow_interval: not with enforcement"),
        ({}, {"enforcement_host": "c1", "agent_configs": ("a.ini",)}, "agent_configs: not with enforcement"),
        ({"enforcement": {}}, {}, "enforcement: host: the compute host to check"),
        ({"enforcement": {"host": "c1", "ovs": "x"}}, {}, "enforcement: unknown key(s) ovs; known: host, ovs_db"),
        ({"enforcement": {"host": "c1", "backend": "linuxbridge"}}, {},
         "enforcement: backend: expected one of openvswitch, sriov, ovn, got 'linuxbridge'"),
        ({"enforcement": {"host": "c1", "kernel": "yes"}}, {}, "enforcement: kernel: expected true or false"),
        ({"enforcement": ["c1"]}, {}, "enforcement: expected a mapping of enforcement show's options")]:
        with pytest.raises(InvalidInput) as e:
            ExporterRequest.from_config(config, **overrides)
        assert said in str(e.value), (config, str(e.value))
