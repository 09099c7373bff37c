"""Network-aware scheduling against real Neutron (segments plugin on) and Placement (issue 9, seeds 000/002/004).

The routed network has two segments: rack0 (only devstack0's agents map it) and rack1 (only devstack1's), each with
a small IPv4 subnet, and each host has a br-rack bridge with 1000 kbps each way on its rack physnet (the ``racks``
fixture adds them to the agents' ini files, so the single-host tests see the seed 003 configuration unchanged).

* Neutron's segments plugin reports each segment to Placement (IPV4_ADDRESS, an aggregate with the segment's host):
  minbw predicts exactly that, and where the provider is missing it syncs it (check mode, then 0 writes warm).
* The ports-first workflow (``minbw schedule``): a port without an address yet lands on the segment that still has
  addresses; with every segment exhausted: no valid host, explained; a host whose agent is dead fails the binding
  and the workflow goes on to the other host, leaving nothing bound or claimed behind it.
* A QoS port on this multi-physnet network: Neutron's request names only the first segment's physnet; with
  any-traits the port lands on the other rack when the first is full.
"""
from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from minbw.errors import NoValidHost
from minbw.ops import claims, segments
from minbw.ops.schedule import schedule
from minbw.placement.client import Placement

FLAVOR = {"VCPU": 1, "MEMORY_MB": 128, "DISK_GB": 1}
_vlan = itertools.count(301)


class Routed:
    """A routed network with segments rack0 and rack1, each a /29 (Neutron's pool: 5 addresses; no DHCP)."""

    def __init__(self, demo, name):
        conn = demo.conn
        self.conn = conn
        self.net = conn.network.create_network(name=name, provider_network_type="vlan",
                                               provider_physical_network="rack0", provider_segmentation_id=next(_vlan))
        demo.networks.append(self.net)
        seg0 = next(iter(conn.network.segments(network_id=self.net.id)))
        self.seg = {"rack0": conn.network.update_segment(seg0, name=f"{name}-rack0"),
                    "rack1": conn.network.create_segment(network_id=self.net.id, network_type="vlan",
                                                         physical_network="rack1", segmentation_id=next(_vlan),
                                                         name=f"{name}-rack1")}
        self.subnet = {}
        for i, rack in enumerate(("rack0", "rack1")):
            self.subnet[rack] = conn.network.create_subnet(
                name=f"{name}-{rack}", network_id=self.net.id, segment_id=self.seg[rack].id, ip_version=4,
                cidr=f"10.{60 + i}.{next(_vlan) % 250}.0/29", enable_dhcp=False)
        self.demo = demo

    def fill(self, rack, leave=0):
        """Use up the addresses of ``rack``'s subnet with ports, ``leave`` of them free."""
        sub = self.subnet[rack]
        avail = self.conn.network.get_network_ip_availability(self.net.id)
        mine = next(s for s in avail.subnet_ip_availability if s["subnet_id"] == sub.id)
        for _ in range(mine["total_ips"] - mine["used_ips"] - leave):
            self.demo.ports.append(self.conn.network.create_port(network_id=self.net.id,
                                                                 fixed_ips=[{"subnet_id": sub.id}]))


def _reported(api, seg_ids, hosts):
    """Each segment's (generation, aggregates, IPV4_ADDRESS total) once its provider has IPV4_ADDRESS and every host
    is in one of the segments' aggregates; else why not (a string)."""
    state = {}
    for s in seg_ids:
        try:
            aggs, gen = api.get_provider_aggregates(s)
        except Exception:  # noqa: BLE001 - not created yet
            return f"segment {s}: no provider yet"
        inv = api.get_inventories(s)[0]
        if not aggs or "IPV4_ADDRESS" not in inv:
            return f"segment {s}: provider without {'aggregates' if not aggs else 'IPV4_ADDRESS inventory'} yet"
        state[s] = (gen, sorted(aggs), inv["IPV4_ADDRESS"]["total"])
    for h in hosts:
        root = api.list_providers(name=h)[0].uuid
        if not any(set(a) & api.get_provider_aggregates(root)[0] for _, a, _ in state.values()):
            return f"host {h}: its provider is in no aggregate of the segments yet"
    return state


def notifier_failures(cloud, since: float) -> list[str]:
    """Neutron's segment notifier (neutron-api's BatchNotifier) runs each batch of events in a thread that dies on the
    first event that raises (its callback only catches PlacementEndpointNotFound): the rest of that batch is lost,
    and events queued meanwhile wait for the next event. Those deaths since ``since``, from neutron-api's output."""
    out = Path(cloud.env["MINICLOUD_LOG_DIR"]) / "neutron-api.out"
    text = out.read_text(errors="replace") if out.exists() else ""
    found = []
    for m in re.finditer(r"^Exception in thread [^\n]*synced_send\):\n(.*?)(?=^\[pid|^Exception in thread|\Z)", text,
                         re.M | re.S):
        stamp = re.findall(r"\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]", text[:m.start()])
        when = time.mktime(time.strptime(stamp[-1], "%a %b %d %H:%M:%S %Y")) if stamp else 0
        if when >= since - 2:
            last = [line for line in m.group(1).splitlines() if line and not line.startswith(" ")][-1:]
            found.append(f"after the request of {stamp[-1] if stamp else '?'}: {last[0] if last else m.group(1)[-300:]}")
    return found


def wait_reported(api, seg_ids, hosts, cloud, since, timeout=120, quiet=10):
    """Neutron reports segment providers asynchronously (its Nova notifier batches every 2 s, and a later batch may go
    over a segment again): wait until every provider is complete and nothing changed for ``quiet`` seconds. When that
    does not come, say what is missing and whether Neutron's notifier lost the events (``notifier_failures``)."""
    deadline = time.monotonic() + timeout
    last, since_change = None, time.monotonic()
    while time.monotonic() < deadline:
        try:
            now = _reported(api, seg_ids, hosts)
        except Exception as e:  # noqa: BLE001 - not there yet
            now = repr(e)
        if now != last:
            last, since_change = now, time.monotonic()
        elif isinstance(now, dict) and time.monotonic() - since_change >= quiet:
            return now
        time.sleep(1)
    lost = notifier_failures(cloud, since)
    pytest.fail(f"Neutron did not report the segment providers in {timeout}s: {last}. "
                + (f"Neutron's segment notifier died on an event, losing the rest of its batch: {lost}" if lost else
                   "Neutron's segment notifier reported no failure (neutron-api.out)"), pytrace=False)


def wait_segments_gone(api, conn, seg_ids, cloud, since, timeout=60):
    """After the network's deletion: Neutron's notifier removes the segments' providers and Nova aggregates (after
    the port events queued before them). Wait for that, so that no later test's events share a batch with these;
    remove what Neutron left (its notifier died: said in the warning) and return what was left."""
    deadline = time.monotonic() + timeout
    names = {f"Neutron segment id {s}" for s in seg_ids}

    def left():
        provs = [s for s in seg_ids if api.list_providers(name=f"Neutron segment id {s}")]
        aggs = [a for a in conn.compute.aggregates() if a.name in names]
        return provs, aggs
    provs, aggs = left()
    while (provs or aggs) and time.monotonic() < deadline:
        time.sleep(1)
        provs, aggs = left()
    for a in aggs:
        for h in a.hosts or []:
            conn.compute.remove_host_from_aggregate(a, h)
        conn.compute.delete_aggregate(a, ignore_missing=True)
    for s in provs:
        try:
            api.delete_provider(s)
        except Exception:  # noqa: BLE001 - gone meanwhile
            pass
    if provs or aggs:
        warnings.warn(f"Neutron left segment providers {provs} / aggregates {[a.name for a in aggs]} after the "
                      f"network's deletion (removed here); its notifier: {notifier_failures(cloud, since)}")
    return provs, aggs


@pytest.fixture
def racks(cloud_two_hosts):
    """rackN:br-rack (1000 kbps each way) in devstackN's OVS agent ini; agents restarted where it was missing."""
    import configparser
    api = Placement(cloud_two_hosts.connect())
    for i, (host, var) in enumerate((("devstack0", "MINICLOUD_OVS_INI"), ("devstack1", "MINICLOUD_OVS_INI_1"))):
        path = Path(cloud_two_hosts.env[var])
        ini = configparser.ConfigParser()
        ini.read(path)
        mappings = ini.get("ovs", "bridge_mappings", fallback="")
        if f"rack{i}:br-rack" in mappings:
            continue
        ini.set("ovs", "bridge_mappings", ",".join(filter(None, [mappings, f"rack{i}:br-rack"])))
        bws = ini.get("ovs", "resource_provider_bandwidths", fallback="")
        ini.set("ovs", "resource_provider_bandwidths", ",".join(filter(None, [bws, "br-rack:1000:1000"])))
        with path.open("w") as f:
            ini.write(f)
        cloud_two_hosts.cloud_sh("restart-agents", host)
    # restart-agents waited for the new inventories; an agent that had br-rack already is checked here
    deadline = time.monotonic() + 120
    want = {f"devstack{i}:Open vSwitch agent:br-rack" for i in (0, 1)}
    while not want <= (have := {p.name for p in api.list_providers()}):
        assert time.monotonic() < deadline, (
            f"Neutron did not report {sorted(want - have)} in 120 s; its agents: "
            f"{[(a.host, a.agent_type, a.is_alive, a.resources_synced) for a in cloud_two_hosts.connect().network.agents()]}")
        time.sleep(1)


@pytest.fixture
def routed(demo_two_hosts, racks, cloud_two_hosts):
    since = time.time()
    r = Routed(demo_two_hosts, f"e2e-routed-{next(_vlan)}")
    api = Placement(r.conn)
    seg_ids = [s.id for s in r.seg.values()]
    wait_reported(api, seg_ids, ["devstack0", "devstack1"], cloud_two_hosts, since)
    yield r
    # Neutron deletes the segment providers and aggregates itself when the network goes, after the events of the
    # ports deleted before it: wait for that before anything of them is removed here (a provider removed under
    # Neutron's queued port event makes its notifier die and lose the rest of the batch, maybe the next test's)
    since = time.time()
    for p in r.demo.ports:
        r.conn.network.delete_port(p, ignore_missing=True)
    r.demo.ports.clear()
    r.conn.network.delete_network(r.net, ignore_missing=True)
    wait_segments_gone(api, r.conn, seg_ids, cloud_two_hosts, since)


@pytest.fixture
def service(cloud_two_hosts):
    return cloud_two_hosts.connect(username="nova", password="minicloud-secret", project_name="service")


def cloud_env(routed):
    return routed.demo.env


def minbw(env, *args, exit_code=0):
    proc = subprocess.run([sys.executable, "-m", "minbw.cli", *args, "--json"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == exit_code, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def release(service, api, result):
    claims.free(api, result["consumer"])
    for b in result["bindings"]:
        service.network.update_port(b["port"], binding_host_id="", binding_profile={})


def test_segment_providers_are_what_neutron_reports_and_synced_when_missing(routed, playbook):
    conn, api = routed.conn, Placement(routed.conn)
    report = segments.report(conn, api, [routed.net.id])
    by_name = {s["name"]: s for s in report["segments"]}
    neutron_totals = {}
    for i, rack in enumerate(("rack0", "rack1")):
        seg = by_name[f"{routed.net.name}-{rack}"]
        assert seg["hosts"] == [f"devstack{i}"]
        # Neutron's default pool of a /29: 5 addresses, plus the gateway (counted and reserved)
        assert (seg["provider"]["inventories"]["IPV4_ADDRESS"]["total"],
                seg["provider"]["inventories"]["IPV4_ADDRESS"]["reserved"]) == (6, 1)
        assert seg["placement"]["hosts_in_aggregate"] == [f"devstack{i}"]
        assert api.get_provider(seg["id"]).name == f"Neutron segment id {seg['id']}"
        neutron_totals[rack] = api.get_inventories(seg["id"])[0]["IPV4_ADDRESS"]["total"]
    # Neutron 29 counts a subnet twice when it is not the network's first (its notifier gets the subnet's
    # create and an update "from no segment", treated as a create): seen as 12 for rack1; minbw reports it
    assert set(neutron_totals.values()) <= {6, 12}, neutron_totals
    assert report["in_sync"] == (set(neutron_totals.values()) == {6}), report["plan"]

    # the rack1 provider lost (as when Neutron could not reach Placement or Nova): the module puts it back
    gone = routed.seg["rack1"].id
    api.delete_provider(gone)
    path = Path(__file__).resolve().parent / "playbooks" / "segment_providers.yml"
    check = playbook(path, {"networks": [routed.net.id]}, check=True)
    assert not check.failed and check.result["changed"], check.output
    assert {"create_provider", "set_inventories", "set_aggregates"} <= {op["action"] for op in check.result["plan"]["ops"]}
    with pytest.raises(Exception):
        api.get_provider(gone)  # check mode wrote nothing
    done = playbook(path, {"networks": [routed.net.id]})
    assert not done.failed and done.result["changed"], done.output
    assert {s.id: api.get_inventories(s.id)[0]["IPV4_ADDRESS"]["total"] for s in routed.seg.values()} == \
        {s.id: 6 for s in routed.seg.values()}
    warm = playbook(path, {"networks": [routed.net.id]})
    assert not warm.failed and not warm.result["changed"] and warm.result["plan"]["writes"] == 0, warm.output
    assert segments.report(conn, api, [routed.net.id])["in_sync"]


def test_a_port_lands_on_the_segment_with_addresses_left_and_none_left_is_explained(routed, service, cloud_two_hosts,
                                                                                   playbook):
    conn, api = routed.conn, Placement(routed.conn)
    routed.demo.env = dict(cloud_two_hosts.env, OS_CLOUD="minicloud")
    routed.fill("rack0")
    port = conn.network.create_port(network_id=routed.net.id, name="e2e-deferred")
    routed.demo.ports.append(port)
    assert not port.fixed_ips  # routed network, no host yet: Neutron defers the address
    result = schedule(conn, api, [port.id], FLAVOR, service_conn=service)
    try:
        assert result["host"] == "devstack1", result
        (choice,) = result["segments"]
        assert choice["segments"] == [routed.seg["rack1"].id]
        assert "no host in its aggregate has free IPv4 addresses" in choice["excluded"][0]["why"]
        bound = conn.network.get_port(port.id)
        assert bound.binding_host_id == "devstack1" and bound.binding_vif_type == "ovs"
        assert [ip["subnet_id"] for ip in bound.fixed_ips] == [routed.subnet["rack1"].id]
        root1 = api.list_providers(name="devstack1")[0].uuid
        assert set(api.get_allocations(result["consumer"])["allocations"]) == {root1}
    finally:
        release(service, api, result)

    # minbw candidates --port: the same segment filter, never devstack0 (its segment has no address left)
    probe = conn.network.create_port(network_id=routed.net.id, name="e2e-deferred-probe")
    routed.demo.ports.append(probe)
    out = minbw(cloud_env(routed), "candidates", "--port", probe.id, "--resources", "VCPU:1,MEMORY_MB:128,DISK_GB:1")
    roots = {p["root_provider_uuid"] for ar in out["allocation_requests"] for rp in ar["allocations"]
             for p in [out["provider_summaries"][rp]]}
    assert roots == {api.list_providers(name="devstack1")[0].uuid}, out
    assert "free IPv4 addresses" in out["segments"][0]["excluded"][0]["why"]
    # the module takes the same ports: the same filter
    run = playbook(Path(__file__).resolve().parent / "playbooks" / "candidates_ports.yml", {"ports": [probe.id]})
    assert not run.failed and run.result["count"] >= 1, run.output
    assert {c["host_name"] for c in run.result["candidates"]} == {"devstack1"}, run.result["candidates"]
    assert "member_of" in run.result["query"], run.result["query"]

    # a port with an address in rack0 and a filter only devstack1 passes: no candidate, and the hosts with room
    # are named as outside the port's segment
    root1 = api.list_providers(name="devstack1")[0].uuid
    traits, gen = api.get_provider_traits(root1)
    api.create_trait("CUSTOM_E2E_RACK1_ONLY")
    api.set_provider_traits(root1, traits | {"CUSTOM_E2E_RACK1_ONLY"}, gen)
    try:
        taken = next(p for p in routed.demo.ports if p.fixed_ips and
                     p.fixed_ips[0]["subnet_id"] == routed.subnet["rack0"].id)
        out = minbw(cloud_env(routed), "candidates", "--port", taken.id, "--resources", "VCPU:1,MEMORY_MB:128,DISK_GB:1",
                    "--root-required", "CUSTOM_E2E_RACK1_ONLY", exit_code=4)
        assert out["allocation_requests"] == []
        problems = [p for d in out["diagnosis"] if d["group"] == "member_of" for p in d["problems"]]
        assert problems == [f"host devstack1 is not in segment(s) {routed.seg['rack0'].id} of the ports' network"], out
    finally:
        traits, gen = api.get_provider_traits(root1)
        api.set_provider_traits(root1, traits - {"CUSTOM_E2E_RACK1_ONLY"}, gen)

    routed.fill("rack1")
    late = conn.network.create_port(network_id=routed.net.id, name="e2e-deferred-late")
    routed.demo.ports.append(late)
    with pytest.raises(NoValidHost, match=r"no segment of its network can take it: segment .*-rack0 \(rack0\): no "
                                          r"host in its aggregate has free IPv4 addresses"):
        schedule(conn, api, [late.id], FLAVOR, service_conn=service)
    assert not conn.network.get_port(late.id).binding_host_id


def test_a_dead_agent_fails_the_binding_and_the_workflow_lands_on_the_other_host(demo_two_hosts, cloud_two_hosts,
                                                                                 service):
    conn, api = demo_two_hosts.conn, Placement(demo_two_hosts.conn)
    pol = demo_two_hosts.policy("e2e-sched-300", bw=[("egress", 300)])
    port = demo_two_hosts.port("e2e-sched-port", pol)
    first = schedule(conn, api, [port.id], FLAVOR, check=True)["host"]
    other = {"devstack0": "devstack1", "devstack1": "devstack0"}[first]
    cloud_two_hosts.cloud_sh("stop-agents", first)
    try:
        # Neutron marks an agent dead agent_down_time (75 s) after its last heartbeat
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and any(a.is_alive for a in conn.network.agents(host=first)):
            time.sleep(1)
        alive = [(a.agent_type, a.last_heartbeat_at) for a in conn.network.agents(host=first) if a.is_alive]
        assert not alive, f"Neutron still sees {first}'s agents alive 150 s after they stopped (last heartbeats): {alive}"

        # one host allowed: the binding fails there, nothing is left bound or claimed
        consumer = "6d1f4a2c-5b3e-4c7d-9e8f-0a1b2c3d4e5f"
        with pytest.raises(NoValidHost, match=rf"{first}: port e2e-sched-port: binding failed \(vif_type "
                                              rf"binding_failed\).*Nothing is left bound or claimed") as err:
            schedule(conn, api, [port.id], FLAVOR, consumer=consumer, max_hosts=1, service_conn=service)
        assert [a["outcome"] for a in err.value.attempts] == ["binding-failed"]
        left = conn.network.get_port(port.id)
        assert not left.binding_host_id and not (left.binding_profile or {}).get("allocation")
        assert not api.get_allocations(consumer).get("allocations")

        # alternates: the binding fails on the dead host, the port is unbound, the other host takes it all
        result = schedule(conn, api, [port.id], FLAVOR, consumer=consumer, service_conn=service)
        try:
            assert [a["outcome"] for a in result["attempts"]] == ["binding-failed", "claimed"], result["attempts"]
            assert result["host"] == other
            bound = conn.network.get_port(port.id)
            assert bound.binding_host_id == other and bound.binding_vif_type == "ovs"
            (group,) = port_groups = list(bound.binding_profile["allocation"])
            rp = bound.binding_profile["allocation"][group]
            assert api.get_provider(rp).name == f"{other}:Open vSwitch agent:br-test"
            allocs = api.get_allocations(consumer)["allocations"]
            assert allocs[rp]["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 300}, port_groups
        finally:
            release(service, api, result)
    finally:
        cloud_two_hosts.cloud_sh("restart-agents", first)


def test_a_qos_port_on_a_multi_physnet_network_uses_any_segment_with_any_traits(routed, service):
    conn, api = routed.conn, Placement(routed.conn)
    demo = routed.demo
    pol = demo.policy("e2e-rack-600", bw=[("egress", 600)])
    a = demo.port("e2e-rack-a", pol, network=routed.net)
    b = demo.port("e2e-rack-b", pol, network=routed.net)
    # Neutron's request: only the first segment's physnet, so devstack0 (rack0)
    ra = schedule(conn, api, [a.id], FLAVOR, service_conn=service)
    try:
        assert ra["host"] == "devstack0"
        assert ra["ports"][0]["mode"] == "neutron"
        assert "only the first (CUSTOM_PHYSNET_RACK0) is requested" in " ".join(ra["ports"][0]["notes"])
        with pytest.raises(NoValidHost):
            schedule(conn, api, [b.id], FLAVOR, service_conn=service)  # rack0 has 400 left, rack1 is not asked
        assert not conn.network.get_port(b.id).binding_host_id
        rb = schedule(conn, api, [b.id], FLAVOR, service_conn=service, any_traits=True)
        try:
            assert rb["host"] == "devstack1" and rb["ports"][0]["mode"] == "any-traits"
            assert "Neutron itself would use only the first" in " ".join(rb["ports"][0]["notes"])
            rp = next(iter(conn.network.get_port(b.id).binding_profile["allocation"].values()))
            assert api.get_provider(rp).name == "devstack1:Open vSwitch agent:br-rack"
        finally:
            release(service, api, rb)
    finally:
        release(service, api, ra)


def test_the_module_plans_in_check_mode_binds_and_claims_then_is_idempotent(demo_two_hosts, service, playbook):
    conn, api = demo_two_hosts.conn, Placement(demo_two_hosts.conn)
    pol = demo_two_hosts.policy("e2e-sched-mod", bw=[("egress", 200)])
    port = demo_two_hosts.port("e2e-sched-mod-port", pol)
    path = Path(__file__).resolve().parent / "playbooks" / "placement_schedule.yml"
    extra = {"ports": [port.id], "consumer": "7e2f5b3d-6c4f-4d8e-8f90-1b2c3d4e5f60"}
    check = playbook(path, extra, check=True)
    assert not check.failed and check.result["changed"] and check.result["host"] in ("devstack0", "devstack1")
    assert not conn.network.get_port(port.id).binding_host_id  # check mode binds nothing
    assert not api.get_allocations(extra["consumer"]).get("allocations")
    done = playbook(path, extra)
    try:
        assert not done.failed and done.result["changed"], done.output
        bound = conn.network.get_port(port.id)
        assert bound.binding_host_id == done.result["host"]
        assert bound.binding_profile == done.result["bindings"][0]["binding_profile"]
        assert set(api.get_allocations(extra["consumer"])["allocations"]) == set(done.result["allocations"])
        again = playbook(path, extra)
        assert not again.failed and not again.result["changed"], again.output
    finally:
        release(service, api, {"consumer": extra["consumer"], "bindings": [{"port": port.id}]})
