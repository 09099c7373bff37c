"""Network-aware scheduling against real Neutron (segments plugin on) and Placement (issue 9, seeds 000/002/004).

The routed network has two segments: rack0 (only devstack0's agents map it) and rack1 (only devstack1's), each with
a small IPv4 subnet, and each host has a br-rack bridge with 1000 kbps each way on its rack physnet (the ``racks``
fixture adds them to the agents' ini files, so the single-host tests see the seed 003 configuration unchanged).

* Neutron's segments plugin reports each segment to Placement (IPV4_ADDRESS, an aggregate with the segment's host):
  minbw predicts exactly that, and where the provider is missing it syncs it (check mode, then 0 writes warm).
* ``reserved`` is Neutron's running count: ports that are not compute or DHCP ports move it, minbw predicts it, a
  sync writes no count, a count written by someone else is shown with its cause and recounted only when asked, and
  Neutron's later deltas then land right; a deferred port bound by a caller that is not Nova is not counted by
  Neutron. Once a Neutron API process has deleted a network it counts segment changes twice (a second notifier):
  those tests start from a new API process, and one shows the double count itself.
* The ports-first workflow (``minbw port schedule``): a port without an address yet lands on the segment that still has
  addresses; with every segment exhausted: no valid host, explained; a host whose agent is dead fails the binding
  and the workflow goes on to the other host, leaving nothing bound or claimed behind it.
* A QoS port on this multi-physnet network: Neutron's request names only the first segment's physnet; with
  any-traits the port lands on the other rack when the first is full.
"""
from __future__ import annotations

import itertools
import json
import re
import sys
import time
import warnings
from pathlib import Path

import pytest

from minbw.errors import NoValidHost, PlacementError
from minbw.ops import claims, segments
from minbw.ops.schedule import schedule_ports
from minbw.placement.client import Placement
from tests.support import cli_forks

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


def wait_segments_gone(api, conn, seg_ids, cloud, since, timeout=60, quiet=10):
    """After the network's deletion: Neutron's notifier removes the segments' providers and Nova aggregates (after
    the port events queued before them). Wait for that, so that no later test's events share a batch with these;
    remove what Neutron left (its notifier died: said in the warning) and return what was left.

    A notifier thread that died on one of these events (``notifier_failures`` since ``since``) lost the rest of its
    batch: what it left does not go however long one waits (the full ``timeout`` was waited for nothing, 60 s, after
    test_segment_providers_are_what_neutron_reports_and_synced_when_missing: ``_delete_nova_inventory`` on an
    aggregate already deleted, 404). Once such a death is logged and nothing changed for ``quiet`` seconds (5 of
    the notifier's 2-second batches: a batch still running would have shown), the wait ends there."""
    deadline = time.monotonic() + timeout
    names = {f"Neutron segment id {s}" for s in seg_ids}

    def left():
        provs = [s for s in seg_ids if api.list_providers(name=f"Neutron segment id {s}")]
        aggs = [a for a in conn.compute.aggregates() if a.name in names]
        return provs, aggs
    provs, aggs = left()
    last, changed = (provs, sorted(a.id for a in aggs)), time.monotonic()
    while (provs or aggs) and time.monotonic() < deadline:
        time.sleep(1)
        provs, aggs = left()
        now = (provs, sorted(a.id for a in aggs))
        if now != last:
            last, changed = now, time.monotonic()
        elif time.monotonic() - changed >= quiet and notifier_failures(cloud, since):
            break  # Neutron gave up on these: removed below, and said
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
def racks(cloud_manager):
    """rackN:br-rack (1000 kbps each way) in devstackN's OVS agent ini; agents restarted where it was missing.
    Where devstack1 is still the spare, its ini is written just before it comes into service (``before_spare`` of
    ``cloud_manager.ensure``), so that its agents start once, with rack1, instead of starting and at once
    restarting. The fixtures and tests that take it name it before ``demo_two_hosts``/``cloud_two_hosts``."""
    import configparser

    def add_rack(cloud, i, host, var) -> bool:
        """rack{i}:br-rack into ``host``'s OVS agent ini; False if it was there."""
        path = Path(cloud.env[var])
        ini = configparser.ConfigParser()
        ini.read(path)
        mappings = ini.get("ovs", "bridge_mappings", fallback="")
        if f"rack{i}:br-rack" in mappings:
            return False
        ini.set("ovs", "bridge_mappings", ",".join(filter(None, [mappings, f"rack{i}:br-rack"])))
        bws = ini.get("ovs", "resource_provider_bandwidths", fallback="")
        ini.set("ovs", "resource_provider_bandwidths", ",".join(filter(None, [bws, "br-rack:1000:1000"])))
        with path.open("w") as f:
            ini.write(f)
        return True

    hosts = (("devstack0", "MINICLOUD_OVS_INI"), ("devstack1", "MINICLOUD_OVS_INI_1"))
    # devstack1 still a spare: its ini written before its agents first start (activate-spare waits for their
    # inventories); then the agents that run without their rack are restarted
    cloud = cloud_manager.ensure(two_hosts=True, before_spare=lambda c: add_rack(c, 1, *hosts[1]))
    for i, (host, var) in enumerate(hosts):
        if add_rack(cloud, i, host, var):
            cloud.cloud_sh("restart-agents", host)
    api = Placement(cloud.connect())
    # restart-agents and activate-spare waited for the new inventories; an agent that had br-rack already is
    # checked here
    deadline = time.monotonic() + 120
    want = {f"devstack{i}:Open vSwitch agent:br-rack" for i in (0, 1)}
    while not want <= (have := {p.name for p in api.list_providers()}):
        assert time.monotonic() < deadline, (
            f"Neutron did not report {sorted(want - have)} in 120 s; its agents: "
            f"{[(a.host, a.agent_type, a.is_alive, a.resources_synced) for a in cloud.connect().network.agents()]}")
        time.sleep(1)


def _routed_network(demo, cloud):
    since = time.time()
    r = Routed(demo, f"e2e-routed-{next(_vlan)}")
    api = Placement(r.conn)
    seg_ids = [s.id for s in r.seg.values()]
    wait_reported(api, seg_ids, ["devstack0", "devstack1"], cloud, since)
    yield r
    # Neutron deletes the segment providers and aggregates itself when the network goes, after the events of the
    # ports deleted before it: wait for that before anything of them is removed here (a provider removed under
    # Neutron's queued port event makes its notifier die and lose the rest of the batch, maybe the next test's)
    since = time.time()
    for p in r.demo.ports:
        r.conn.network.delete_port(p, ignore_missing=True)
    r.demo.ports.clear()
    r.conn.network.delete_network(r.net, ignore_missing=True)
    wait_segments_gone(api, r.conn, seg_ids, cloud, since)


@pytest.fixture
def routed(racks, demo_two_hosts, cloud_two_hosts):
    yield from _routed_network(demo_two_hosts, cloud_two_hosts)


@pytest.fixture
def neutron_api_fresh(cloud_two_hosts):
    """A new Neutron API process. Neutron 29 makes a second segments notifier in a process when it first deletes a
    network (services/segments/db.py ``_delete_segments_for_network``), and then counts segment changes once or
    twice as its two threads race: the tests of Neutron's single count start in a process that deleted none."""
    cloud_two_hosts.cloud_sh("restart-neutron-api")


@pytest.fixture
def routed_single(racks, neutron_api_fresh, demo_two_hosts, cloud_two_hosts):
    """The routed network, made in a Neutron API process with one segments notifier."""
    yield from _routed_network(demo_two_hosts, cloud_two_hosts)


@pytest.fixture
def service(cloud_two_hosts):
    return cloud_two_hosts.connect(username="nova", password="minicloud-secret", project_name="service")


def cloud_env(routed):
    return routed.demo.env


def minbw(env, *args, exit_code=0):
    proc = cli_forks.run([sys.executable, "-m", "minbw.cli", *args, "--json"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert proc.returncode == exit_code, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def release(service, api, result):
    claims.free_allocations(api, result["consumer"])
    for b in result["bindings"]:
        service.network.update_port(b["port"], binding_host_id="", binding_profile={})


def test_segment_providers_are_what_neutron_reports_and_synced_when_missing(routed_single, playbook):
    routed = routed_single
    conn, api = routed.conn, Placement(routed.conn)
    report = segments.report_segments(conn, api, [routed.net.id]).to_dict()
    by_name = {s["name"]: s for s in report["segments"]}
    for i, rack in enumerate(("rack0", "rack1")):
        seg = by_name[f"{routed.net.name}-{rack}"]
        assert seg["hosts"] == [f"devstack{i}"]
        # Neutron's default pool of a /29: 5 addresses, plus the gateway (counted and reserved)
        assert (seg["provider"]["inventories"]["IPV4_ADDRESS"]["total"],
                seg["provider"]["inventories"]["IPV4_ADDRESS"]["reserved"]) == (6, 1)
        assert seg["placement"]["hosts_in_aggregate"] == [f"devstack{i}"]
        assert api.get_provider(seg["id"]).name == f"Neutron segment id {seg['id']}"
        assert counts(api, seg["id"]) == (6, 1)  # Neutron's own count, one notifier: the prediction
    assert report["in_sync"] and report["differences"] == [], report

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
    assert segments.report_segments(conn, api, [routed.net.id]).in_sync


def counts(api, seg_id):
    """(total, reserved) of the segment provider's IPV4_ADDRESS; None while Neutron has not made it."""
    try:
        inv = api.get_inventories(seg_id)[0].get("IPV4_ADDRESS")
    except PlacementError as e:  # not made yet: Placement answers 404 (with the code placement.undefined_code)
        if e.status != 404:
            raise
        return None
    return None if inv is None else (inv["total"], inv["reserved"])


def settled(api, seg_id, quiet=8, timeout=120):
    """The segment provider's (total, reserved) once Neutron's deltas stopped coming for ``quiet`` seconds (its
    notifier sends in batches, 2 s apart)."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        now = counts(api, seg_id)
        if now != last:
            last, since = now, time.monotonic()
        elif now is not None and time.monotonic() - since >= quiet:
            return now
        time.sleep(1)
    pytest.fail(f"the count of segment {seg_id} kept moving (or never came) for {timeout}s: {last}")


def minbw_text(env, *args):
    proc = cli_forks.run([sys.executable, "-m", "minbw.cli", *args], env=env, capture_output=True, text=True,
                         timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def test_reserved_is_neutrons_running_count_minbw_predicts_it_and_recounts_only_when_asked(routed_single,
                                                                                           cloud_two_hosts):
    """The issue's sequence on the full Neutron: ports move reserved, minbw predicts it, a sync writes no count, a
    count written by another tool is shown and recounted, and Neutron's later deletes land right."""
    routed, conn = routed_single, routed_single.conn
    api, env = Placement(conn), dict(cloud_two_hosts.env, OS_CLOUD="minicloud")
    seg0, sub0, net = routed.seg["rack0"].id, routed.subnet["rack0"].id, routed.net.id

    def port(**kw):
        p = conn.network.create_port(network_id=net, fixed_ips=[{"subnet_id": sub0}], **kw)
        routed.demo.ports.append(p)
        return p

    plain = [port() for _ in range(3)]
    router = port(device_owner="network:router_interface")
    assert settled(api, seg0) == (6, 5)  # the gateway, and one per port: Neutron's count
    out = minbw(env, "segment", "list", "--network", net)
    rack0 = next(s for s in out["segments"] if s["id"] == seg0)
    assert out["in_sync"] and rack0["provider"]["inventories"]["IPV4_ADDRESS"]["reserved"] == 5
    assert sorted(p["id"] for p in rack0["reserved_ports"]) == sorted(p.id for p in plain + [router])
    out = minbw(env, "segment", "sync", "--network", net)
    assert out["plan"]["writes"] == 0 and counts(api, seg0) == (6, 5)

    # another tool writes the subnets' count alone (what minbw's sync did before): shown, never rewritten by a sync
    inv, gen = api.get_inventories(seg0)
    api.set_inventories(seg0, {"IPV4_ADDRESS": {**inv["IPV4_ADDRESS"], "reserved": 1}}, gen)
    out = minbw(env, "segment", "list", "--network", net, exit_code=3)
    (why,) = out["unresolved"]
    assert "IPV4_ADDRESS reserved is 1 in Placement, 5 by Neutron's count" in why
    assert "which leaves -3, 4 fewer than the subnets reserve (Placement refuses a count below 0" in why
    out = minbw(env, "segment", "sync", "--network", net, exit_code=3)
    assert out["plan"]["writes"] == 0 and out["unresolved"] == [why] and counts(api, seg0) == (6, 1)
    out = minbw(env, "segment", "sync", "--network", net, "--dry-run", "--recount")
    assert [op["action"] for op in out["plan"]["ops"]] == ["recount"] and counts(api, seg0) == (6, 1)
    rc, text = minbw_text(env, "segment", "sync", "--network", net, "--recount")
    assert rc == 0 and f"recount IPV4_ADDRESS of Neutron segment id {seg0}: reserved 1 -> 5" in text, text
    assert counts(api, seg0) == (6, 5)
    for p in plain[:2]:
        conn.network.delete_port(p)
    assert settled(api, seg0) == (6, 3)  # Neutron's deltas land on what the two ports left hold
    assert minbw(env, "segment", "list", "--network", net)["in_sync"]

    # a port made without an address (deferred) and bound by a caller that is not Nova: Neutron does not count
    # the address the binding gives it
    late = conn.network.create_port(network_id=net, name="e2e-deferred-plain")
    routed.demo.ports.append(late)
    assert not late.fixed_ips and late.ip_allocation == "deferred"
    late = conn.network.update_port(late, binding_host_id="devstack0")
    assert [ip["subnet_id"] for ip in late.fixed_ips] == [sub0]
    assert settled(api, seg0) == (6, 3)
    out = minbw(env, "segment", "list", "--network", net, exit_code=3)
    (why,) = out["unresolved"]
    assert "reserved is 3 in Placement, 4 by Neutron's count" in why
    assert f"(ip_allocation deferred): {late.id};" in why
    minbw(env, "segment", "sync", "--network", net, "--recount")
    assert counts(api, seg0) == (6, 4)
    conn.network.delete_port(late)
    assert settled(api, seg0) == (6, 3)  # without the recount: 2, one below what the subnet and ports hold
    assert minbw(env, "segment", "list", "--network", net)["in_sync"]


def neutron_api_notifiers(log: Path) -> set[str]:
    """The segments notifiers (their objects) subscribed to subnet creations in the newest Neutron API process."""
    lines = log.read_text(errors="replace").splitlines()
    start = max(i for i, line in enumerate(lines) if "Loading core plugin" in line)
    pid = lines[start].split()[2]
    found = set()
    for line in lines[start:]:
        if line.split()[2:3] == [pid] and "Subscribe: <bound method NovaSegmentNotifier._notify_subnet_created" in line:
            found.add(line.split(" object at ")[1].split(">")[0])
    return found


def test_neutron_counts_a_subnet_twice_once_its_api_process_deleted_a_network(racks, demo_two_hosts,
                                                                              cloud_two_hosts, playbook):
    """Neutron 29: the first network deleted in an API process makes a second segments plugin there
    (``_delete_segments_for_network``), whose notifier adds every segment change again when its write does not
    overlap the first one's. A routed network's subnets then show twice their addresses, now and then."""
    conn, api = demo_two_hosts.conn, Placement(demo_two_hosts.conn)
    env = dict(cloud_two_hosts.env, OS_CLOUD="minicloud")
    log = Path(cloud_two_hosts.env["MINICLOUD_LOG_DIR"]) / "neutron-api.log"
    conn.network.delete_network(conn.network.create_network(name="e2e-deleted"))
    assert len(neutron_api_notifiers(log)) == 2
    seen = []
    for _ in range(8):  # the two notifiers race: twice when the second one's read comes after the first's write
        r = Routed(demo_two_hosts, f"e2e-twice-{next(_vlan)}")
        got = {rack: settled(api, s.id) for rack, s in r.seg.items()}
        seen.append(got)
        assert set(got.values()) <= {(6, 1), (12, 2)}, seen
        if (12, 2) in got.values():
            break
        conn.network.delete_network(r.net)
    else:
        pytest.fail(f"no subnet counted twice in 8 routed networks: {seen}")
    out = minbw(env, "segment", "list", "--network", r.net.id, exit_code=3)
    why = next(w for w in out["unresolved"] if "IPV4_ADDRESS total is 12 in Placement, 6 by Neutron's count" in w)
    assert "a change counted twice: once a Neutron server process has deleted a network" in why
    # the module recounts too (a sync without recount leaves it: the CLI test above)
    path = Path(__file__).resolve().parent / "playbooks" / "segment_providers.yml"
    done = playbook(path, {"networks": [r.net.id], "recount": True})
    assert not done.failed and done.result["changed"] and done.result["unresolved"] == [], done.output
    assert {op["action"] for op in done.result["plan"]["ops"]} == {"recount"}
    assert {rack: counts(api, s.id) for rack, s in r.seg.items()} == {"rack0": (6, 1), "rack1": (6, 1)}


def test_a_port_lands_on_the_segment_with_addresses_left_and_none_left_is_explained(routed, service, cloud_two_hosts,
                                                                                   playbook):
    conn, api = routed.conn, Placement(routed.conn)
    routed.demo.env = dict(cloud_two_hosts.env, OS_CLOUD="minicloud")
    routed.fill("rack0")
    port = conn.network.create_port(network_id=routed.net.id, name="e2e-deferred")
    routed.demo.ports.append(port)
    assert not port.fixed_ips  # routed network, no host yet: Neutron defers the address
    result = schedule_ports(conn, api, [port.id], FLAVOR, service_conn=service).to_dict()
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

    # minbw candidate list --port: the same segment filter, never devstack0 (its segment has no address left)
    probe = conn.network.create_port(network_id=routed.net.id, name="e2e-deferred-probe")
    routed.demo.ports.append(probe)
    out = minbw(cloud_env(routed), "candidate", "list", "--port", probe.id, "--resource", "VCPU=1", "--resource", "MEMORY_MB=128", "--resource", "DISK_GB=1")
    roots = {p["root_provider_uuid"] for ar in out["allocation_requests"] for rp in ar["allocations"]
             for p in [out["provider_summaries"][rp]]}
    assert roots == {api.list_providers(name="devstack1")[0].uuid}, out
    assert "free IPv4 addresses" in out["segments"][0]["excluded"][0]["why"]
    # Nova's own routed_networks_filter (the mini-cloud's nova.conf turns it on): member_of every segment of the
    # port's network (no address yet), from Neutron's subnets and the segments' aggregates in Placement; minbw's
    # own member_of (rack1 only: rack0 has no address left) is sent beside it, not instead of it
    shape = ["--port", probe.id, "--resource", "VCPU=1", "--resource", "MEMORY_MB=128", "--resource", "DISK_GB=1"]
    nova = minbw(cloud_env(routed), "candidate", "list", *shape, "--nova-option",
                 "scheduler.query_placement_for_routed_network_aggregates=true")
    aggs = {name: sorted(api.get_provider_aggregates(seg.id)[0]) for name, seg in routed.seg.items()}
    assert all(aggs.values()), aggs
    (routed_filter,) = [f for f in nova["nova_filters"] if f.startswith("routed_networks_filter")]
    assert f"member_of in:{','.join(sorted(aggs['rack0'] + aggs['rack1']))}" in routed_filter, routed_filter
    sent = json.dumps(nova["query"]["member_of"])
    assert ",".join(sorted(aggs["rack0"] + aggs["rack1"])) in sent and f"in:{','.join(aggs['rack1'])}" in sent, sent
    assert {p["root_provider_uuid"] for ar in nova["allocation_requests"] for rp in ar["allocations"]
            for p in [nova["provider_summaries"][rp]]} == {api.list_providers(name="devstack1")[0].uuid}
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
        out = minbw(cloud_env(routed), "candidate", "list", "--port", taken.id, "--resource", "VCPU=1", "--resource", "MEMORY_MB=128", "--resource", "DISK_GB=1",
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
        schedule_ports(conn, api, [late.id], FLAVOR, service_conn=service)
    assert not conn.network.get_port(late.id).binding_host_id


def test_a_dead_agent_fails_the_binding_and_the_workflow_lands_on_the_other_host(demo_two_hosts, cloud_two_hosts,
                                                                                 service):
    conn, api = demo_two_hosts.conn, Placement(demo_two_hosts.conn)
    pol = demo_two_hosts.policy("e2e-sched-300", bw=[("egress", 300)])
    port = demo_two_hosts.port("e2e-sched-port", pol)
    first = schedule_ports(conn, api, [port.id], FLAVOR, check=True).host
    other = {"devstack0": "devstack1", "devstack1": "devstack0"}[first]
    cloud_two_hosts.cloud_sh("stop-agents", first)
    try:
        # Neutron marks an agent dead agent_down_time (25 s in the mini-cloud) after its last heartbeat
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and any(a.is_alive for a in conn.network.agents(host=first)):
            time.sleep(1)
        alive = [(a.agent_type, a.last_heartbeat_at) for a in conn.network.agents(host=first) if a.is_alive]
        assert not alive, f"Neutron still sees {first}'s agents alive 150 s after they stopped (last heartbeats): {alive}"

        # one host allowed: the binding fails there, nothing is left bound or claimed
        consumer = "6d1f4a2c-5b3e-4c7d-9e8f-0a1b2c3d4e5f"
        with pytest.raises(NoValidHost, match=rf"{first}: port e2e-sched-port: binding failed \(vif_type "
                                              rf"binding_failed\).*Nothing is left bound or claimed") as err:
            schedule_ports(conn, api, [port.id], FLAVOR, consumer=consumer, max_hosts=1, service_conn=service)
        assert [a.outcome for a in err.value.attempts] == ["binding-failed"]
        left = conn.network.get_port(port.id)
        assert not left.binding_host_id and not (left.binding_profile or {}).get("allocation")
        assert not api.get_allocations(consumer).get("allocations")

        # alternates: the binding fails on the dead host, the port is unbound, the other host takes it all
        result = schedule_ports(conn, api, [port.id], FLAVOR, consumer=consumer, service_conn=service).to_dict()
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


def test_a_qos_port_on_a_multi_physnet_network_uses_any_segment_with_any_traits(routed, service, cloud_two_hosts):
    conn, api = routed.conn, Placement(routed.conn)
    demo = routed.demo
    pol = demo.policy("e2e-rack-600", bw=[("egress", 600)])
    a = demo.port("e2e-rack-a", pol, network=routed.net)
    b = demo.port("e2e-rack-b", pol, network=routed.net)
    # Neutron's request: only the first segment's physnet, so devstack0 (rack0)
    ra = schedule_ports(conn, api, [a.id], FLAVOR, service_conn=service).to_dict()
    try:
        assert ra["host"] == "devstack0"
        assert ra["ports"][0]["mode"] == "neutron"
        assert "only the first (CUSTOM_PHYSNET_RACK0) is requested" in " ".join(ra["ports"][0]["notes"])
        with pytest.raises(NoValidHost):
            schedule_ports(conn, api, [b.id], FLAVOR, service_conn=service)  # rack0 has 400 left, rack1 is not asked
        assert not conn.network.get_port(b.id).binding_host_id
        # the command, as an operator runs it: minbw schedules, binds and claims (Nova's query with the port's
        # any-traits group kept, noted: Nova never sees it); issue 41: it was refused
        rb = minbw(dict(cloud_two_hosts.env, OS_CLOUD="minicloud"), "port", "schedule", "--port", b.id, "--any-traits", "--service-cloud",
                   "minicloud-nova", *[a for rc, n in FLAVOR.items() for a in ("--resource", f"{rc}={n}")])
        try:
            assert rb["host"] == "devstack1" and rb["ports"][0]["mode"] == "any-traits"
            assert "Neutron itself would use only the first" in " ".join(rb["ports"][0]["notes"])
            assert any("Nova never sees it" in n for n in rb["nova_filters"]), rb["nova_filters"]
            assert api.get_allocations(rb["consumer"])["allocations"][
                rb["bindings"][0]["binding_profile"]["allocation"][rb["ports"][0]["resource_request"][
                    "request_groups"][0]["id"]]]["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 600}
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
    flavor = demo_two_hosts.flavor  # the consumer's own resources are a Nova flavor's, as Nova's query has them
    extra = {"ports": [port.id], "consumer": "7e2f5b3d-6c4f-4d8e-8f90-1b2c3d4e5f60", "flavor": flavor.name}
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
        root = api.list_providers(name=done.result["host"])[0].uuid
        wanted = {"VCPU": flavor.vcpus, "MEMORY_MB": flavor.ram, "DISK_GB": flavor.disk}
        assert done.result["allocations"][root]["resources"] == {k: v for k, v in wanted.items() if v}
        again = playbook(path, extra)
        assert not again.failed and not again.result["changed"], again.output
    finally:
        release(service, api, {"consumer": extra["consumer"], "bindings": [{"port": port.id}]})
