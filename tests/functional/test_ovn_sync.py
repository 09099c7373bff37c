"""ML2/OVN chassis options synced into the real embedded Placement: the tree Neutron's OVN extension writes (its
own deferred calls executed with neutron-lib's Placement client) is the tree minbw writes; the CLI reads the
chassis from the files an operator saves from ovn-sbctl / ovs-vsctl; drift against Placement."""
from __future__ import annotations

import json
import sys

from minbw.neutron import naming, ovn
from minbw.ops import ovn_chassis
from minbw.ops import sync as s
from tests.conftest import run_drift
from tests.functional.test_sync import make_root, tree
from tests.support.oracle import neutron_ovn, neutron_sync
from tests.support import cli_forks

OVN = naming.AGENT_KINDS[naming.OVN]
GW = "enable-chassis-as-gw,availability-zones=az1"
CHASSIS = {ovn.BRIDGE_MAPPINGS: "physnet0:br-test,public:br-ex",
           ovn.CMS_OPTIONS: f"{GW},resource_provider_bandwidths=br-test:1500:1500;br-ex::1;br-x:5:5,"
                            "resource_provider_inventory_defaults=min_unit:10;allocation_ratio:2.0,"
                            "resource_provider_hypervisors=br-test:devstack0;br-ex:devstack0"}


def sb_json(**chassis) -> dict:
    """What ``ovn-sbctl --format=json --columns=name,hostname,other_config list Chassis`` prints."""
    return {"headings": ["name", "hostname", "other_config"],
            "data": [[name, host, ["map", sorted(config.items())]] for name, (host, config) in chassis.items()]}


def test_minbw_writes_the_tree_neutrons_ovn_extension_writes(placement, placement_server):
    make_root(placement)
    # Neutron's own calls, executed against the real Placement
    client = neutron_sync.neutron_client(placement_server.url)
    name2uuid = {p.name: p.uuid for p in placement.list_providers()}
    for call in neutron_ovn.deferred(CHASSIS, name2uuid, client=client):
        call.execute()
    theirs = tree(placement)
    assert {v[0] for v in theirs.values()} == {"devstack0:OVN Controller agent",
                                               "devstack0:OVN Controller agent:br-test",
                                               "devstack0:OVN Controller agent:br-ex"}
    # minbw reads the same chassis: nothing to write, and br-x (no hypervisor entry, not mapped) is named
    chassis = ovn.Chassis("c0", "devstack0", CHASSIS[ovn.BRIDGE_MAPPINGS], CHASSIS[ovn.CMS_OPTIONS])
    desired = ovn_chassis.desired(chassis=[chassis])
    assert s.sync_providers(placement, desired, check=True)[0].writes() == 0
    assert any("bridge br-x" in w and "resource_provider_hypervisors" in w for w in desired.warnings)
    # and from an empty Placement, minbw writes what Neutron wrote
    for p in sorted(placement.list_providers(), key=lambda p: -len(p.name)):
        if p.parent_uuid:
            placement.delete_provider(p.uuid)
    s.sync_providers(placement, desired)
    assert tree(placement) == theirs


def test_cli_from_a_southbound_dump_then_a_bridge_leaves(placement, placement_server, tmp_path):
    make_root(placement)
    make_root(placement, "devstack1")
    dump = tmp_path / "chassis.json"
    other = {ovn.BRIDGE_MAPPINGS: "physnet0:br-test",
             ovn.CMS_OPTIONS: "resource_provider_bandwidths=br-test:100:100,resource_provider_hypervisors=br-test:devstack1"}
    dump.write_text(json.dumps(sb_json(c0=("devstack0", CHASSIS), c1=("devstack1", other))))

    def run(*a):
        return cli_forks.run([sys.executable, "-m", "minbw.cli", *a], capture_output=True, text=True,
                              env=placement_server.env(), timeout=120)
    out = run("provider", "sync", "--ovn-chassis", str(dump), "--no-cache", "--json")
    assert out.returncode == 0, out.stderr
    assert "minbw: warning: chassis c0 (devstack0): Neutron silently reports no bandwidth for bridge br-x" in out.stderr
    assert json.loads(out.stdout)["warnings"] and json.loads(out.stdout)["result"]["writes"] > 0
    br_test1 = naming.device_rp_uuid(OVN, "devstack1", "br-test")
    assert placement.get_inventories(br_test1)[0]["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 100
    # c1's bridge leaves its options: the southbound dump is every chassis, so its provider is stale
    gone = {ovn.BRIDGE_MAPPINGS: "physnet0:br-test", ovn.CMS_OPTIONS: "enable-chassis-as-gw"}
    dump.write_text(json.dumps(sb_json(c0=("devstack0", CHASSIS), c1=("devstack1", gone))))
    rows = run_drift(None, placement, southbound=ovn_chassis.read_chassis_file(str(dump))[0])
    assert [(r.name, r.differences) for r in rows if not r.agree] == [
        ("devstack1:OVN Controller agent:br-test", ("missing from agent",))]
    out = run("provider", "sync", "--ovn-chassis", str(dump), "--no-cache", "--json")
    assert [(op["action"], op["name"]) for op in json.loads(out.stdout)["ops"]] == [
        ("delete_provider", "devstack1:OVN Controller agent:br-test")]
    assert all(r.agree for r in run_drift(None, placement, southbound=ovn_chassis.read_chassis_file(str(dump))[0]))
    drift = run("drift", "show", "--ovn-chassis", str(dump), "--no-neutron", "--json")
    assert drift.returncode == 0 and json.loads(drift.stdout)["ok"], drift.stdout + drift.stderr
    assert "minbw: warning: chassis c0 (devstack0): Neutron silently reports no bandwidth for bridge br-x" in drift.stderr
    # the same chassis from one compute's Open vSwitch row (ovs-vsctl --format=json list Open_vSwitch)
    row = tmp_path / "ovs.json"
    row.write_text(json.dumps({"headings": ["external_ids"], "data": [[["map", sorted(
        {"system-id": "c0", "hostname": "devstack0", **CHASSIS}.items())]]]}))
    assert json.loads(run("provider", "sync", "--dry-run", "--ovn-chassis", str(row), "--json").stdout)["writes"] == 0
    bad = run("provider", "sync", "--dry-run", "--json")
    assert bad.returncode == 1 and "--agent-config FILE" in bad.stderr and "--ovn-sb-db" in bad.stderr


def test_capacity_and_claims_on_ovn_providers(placement):
    """Capacity counts what the OVN bridges hold, and the claims land on the OVN bridge of the port's physnet:
    the analyses read Placement's providers and traits, whatever the backend."""
    from minbw.model.requests import ServerRequest
    from minbw.ops import claims
    from minbw.neutron.port_request import QosPort
    from minbw.reports.capacity.request import CapacityRequest, qos_port
    from minbw.usecases.capacity import capacity_report
    import uuid
    flavor = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}
    root = make_root(placement)
    placement.set_inventories(root, {"VCPU": {"total": 64}, "MEMORY_MB": {"total": 65536},
                                     "DISK_GB": {"total": 1000}}, placement.get_provider(root).generation)
    s.sync_providers(placement, ovn_chassis.desired(chassis=[ovn.Chassis("c0", "devstack0", CHASSIS[ovn.BRIDGE_MAPPINGS],
                                                           CHASSIS[ovn.CMS_OPTIONS])]))
    rules = [{"type": "minimum_bandwidth", "direction": "egress", "min_kbps": 500},
             {"type": "minimum_bandwidth", "direction": "ingress", "min_kbps": 500}]
    port, open_groups = qos_port(0, QosPort.from_dict({"qos_rules": rules, "physical_network": "physnet0"}, "port 0"))
    server = ServerRequest(extra_resources=flavor, ports=(port,))
    report = capacity_report(placement, CapacityRequest(server, frozenset(open_groups))).to_dict()
    assert report["total"] == 6  # br-test: 1500 each way at allocation_ratio 2.0, 500 a server
    br_test = naming.device_rp_uuid(OVN, "devstack0", "br-test")
    held = [claims.claim(placement, str(uuid.uuid4()), server, project_id="p", user_id="u",
                         diagnose_on_failure=False) for _ in range(6)]
    assert all(c.mapping[port.groups[0].id] == [br_test] for c in held), [c.mapping for c in held]
    assert placement.provider_usages(br_test) == {"NET_BW_EGR_KILOBIT_PER_SEC": 3000, "NET_BW_IGR_KILOBIT_PER_SEC": 3000}


def _chassis(host: str, bandwidths: str, hypervisors: str) -> dict:
    return {ovn.BRIDGE_MAPPINGS: "physnet0:br-test",
            ovn.CMS_OPTIONS: f"resource_provider_bandwidths={bandwidths},resource_provider_hypervisors={hypervisors}"}


def test_one_chassis_s_typo_costs_that_chassis_only(placement, placement_server, tmp_path):
    """Every chassis of the cloud from one southbound dump. c1's resource_provider_hypervisors names devstack0 by
    mistake, so c0 and c1 both describe devstack0's br-test; c3's options do not parse. Those three get no writes
    and one line each (chassis, hostname, option, fix); c2 is synced exactly as Neutron's OVN extension writes it;
    the providers c1 wrote before the typo are left as they were; exit 3 (partial). The module's result says the
    same per chassis, and fails on request."""
    for host in ("devstack0", "devstack1", "devstack2"):
        make_root(placement, host)
    good = {"c0": ("devstack0", _chassis("devstack0", "br-test:1000:1000", "br-test:devstack0")),
            "c1": ("devstack1", _chassis("devstack1", "br-test:2000:2000", "br-test:devstack1")),
            "c2": ("devstack2", _chassis("devstack2", "br-test:3000:3000", "br-test:devstack2"))}
    dump = tmp_path / "chassis.json"
    dump.write_text(json.dumps(sb_json(**good)))

    def run(*a):
        return cli_forks.run([sys.executable, "-m", "minbw.cli", *a], capture_output=True, text=True,
                              env=placement_server.env(), timeout=120)
    out = run("provider", "sync", "--ovn-chassis", str(dump), "--no-cache", "--json")
    assert out.returncode == 0, out.stderr
    before = {h: tree(placement, h) for h in ("devstack0", "devstack1")}
    # c2's bridge grows, c1 gets a typo, c3 (hostname devstack2 too) cannot be parsed
    broken = {"c0": good["c0"],
              "c1": ("devstack1", _chassis("devstack1", "br-test:2500:2500", "br-test:devstack0")),
              "c2": ("devstack2", _chassis("devstack2", "br-test:4000:4000", "br-test:devstack2")),
              "c3": ("devstack2", {ovn.BRIDGE_MAPPINGS: "physnet1:br-y",
                                   ovn.CMS_OPTIONS: "resource_provider_bandwidths=br-y:1:2:3"})}
    dump.write_text(json.dumps(sb_json(**dict(reversed(broken.items())))))  # c3 first: the lines are sorted
    out = run("provider", "sync", "--ovn-chassis", str(dump), "--no-cache", "--json")
    assert out.returncode == 3, out.stdout + out.stderr
    lines = [x for x in out.stderr.splitlines() if x.startswith("minbw: skipped: ")]
    # one line per chassis, in the order of their names, each: chassis NAME (host HOST): what. Fix: the fix
    assert [x.split(" (host ")[0] for x in lines] == [f"minbw: skipped: chassis {c}" for c in ("c0", "c1", "c3")]
    by_chassis = dict(zip(("c0", "c1", "c3"), lines))
    assert by_chassis["c1"].startswith("minbw: skipped: chassis c1 (host devstack1): it and chassis c0 (host "
                                       "devstack0) describe the same device provider")
    assert "devstack0:OVN Controller agent:br-test" in by_chassis["c1"] and ". Fix: " in by_chassis["c1"]
    assert "resource_provider_hypervisors" in by_chassis["c1"].split(". Fix: ")[1]
    assert by_chassis["c3"].startswith("minbw: skipped: chassis c3 (host devstack2): ovn-cms-options "
                                       "resource_provider_bandwidths: ") and ". Fix: write " in by_chassis["c3"]
    assert by_chassis["c0"].startswith("minbw: skipped: chassis c0 (host devstack0): ") and ". Fix: " in by_chassis["c0"]
    # the two chassis both skipped share no agent provider: no warning says they do
    assert "share the agent provider" not in out.stderr, out.stderr
    result = json.loads(out.stdout)
    units = {u["unit"].split(" (")[0]: u for u in result["units"]}
    assert {c: bool(u["skipped"]) for c, u in units.items()} == {
        "chassis c0": True, "chassis c1": True, "chassis c2": False, "chassis c3": True}
    assert units["chassis c2"]["changed"] is True and units["chassis c0"]["changed"] is False
    # the skipped chassis' providers are as they were (c1's not swept, though no chassis describes them now)
    assert {h: tree(placement, h) for h in ("devstack0", "devstack1")} == before
    # c2: what Neutron's OVN extension writes for it
    name2uuid = {p.name: p.uuid for p in placement.list_providers()}
    theirs = neutron_ovn.tree(neutron_ovn.deferred(broken["c2"][1], name2uuid))
    mine = tree(placement, "devstack2")
    assert {u: (v[0], v[1]) for u, v in mine.items()} == theirs["providers"]
    assert {u: set(v[2]) for u, v in mine.items()} == theirs["provider_traits"]
    assert {u: {rc: {k: i[k] for k in ("total",)} for rc, i in v[3].items()} for u, v in mine.items() if v[3]} == {
        u: {rc: {"total": i["total"]} for rc, i in inv.items()} for u, inv in theirs["inventories"].items()}
    # nothing at all can be synced: an error, nothing written
    dump.write_text(json.dumps(sb_json(c1=broken["c1"], c0=broken["c0"])))
    out = run("provider", "sync", "--ovn-chassis", str(dump), "--no-cache", "--json")
    assert out.returncode == 1 and "nothing to sync" in out.stderr, out.stdout + out.stderr
    assert {h: tree(placement, h) for h in ("devstack0", "devstack1")} == before
