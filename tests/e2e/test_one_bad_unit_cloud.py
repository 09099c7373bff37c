"""One failing unit costs that unit only (issue 29), for the commands that write to many units of a real cloud: each
test has one bad unit among good ones and checks the good units' outcome, the bad unit's message (one
``minbw: skipped: ...`` line on stderr and its entry in the JSON result) and the exit code (3: partial; 1: every
unit failed).

* ``segments --sync``: three segments of a routed network whose ``IPV4_ADDRESS`` inventories are gone; the middle
  segment's provider is deleted in Placement after the sync planned and before its writes (the fault made real:
  the test deletes it). The next sync makes it again.
* ``audit --fix``: two leaked allocations and a stale binding allocation, fixed without the service role: Neutron's
  policy refuses the binding fix (a real refusal), the leaks are trimmed. Again, only the refused fix left: exit 1.
* ``heal``: three servers needing heal; the fault proxy in front of Neutron (as in
  test_heal_beside_nova_manage.py) answers 409 to the middle server's port update: that server's allocation is
  rolled back, the servers before and after it are healed.
"""
from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

import yaml

from minbw.placement.client import Placement
from minbw.plan.audit import LEAK, STALE_BINDING
from tests.conftest import MINBW
from tests.e2e.test_heal_beside_nova_manage import BR_TEST, break_allocation, break_binding, state
from tests.e2e.test_routed_scheduling import _vlan, wait_reported, wait_segments_gone
from tests.support import cli_forks

SERVICE = dict(username="nova", password="minicloud-secret", project_name="service")
EGR = "NET_BW_EGR_KILOBIT_PER_SEC"


def minbw(env: dict, *args: str) -> subprocess.CompletedProcess:
    return cli_forks.run(MINBW + [*args, "--json"], env=env, capture_output=True, text=True, timeout=600)


def skipped(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("minbw: skipped: ")]


def test_segments_sync_a_segment_provider_deleted_mid_run_costs_that_segment_only(demo, cloud, monkeypatch, capsys):
    conn, api = demo.conn, Placement(demo.conn)
    since, n = time.time(), next(_vlan)
    net = conn.network.create_network(name=f"e2e-onebad-{n}", provider_network_type="vlan",
                                      provider_physical_network="rack0", provider_segmentation_id=n)
    demo.networks.append(net)
    first = next(iter(conn.network.segments(network_id=net.id)))
    segs = [conn.network.update_segment(first, name=f"{net.name}-a"),
            conn.network.create_segment(network_id=net.id, network_type="vlan", physical_network="rack1",
                                        segmentation_id=next(_vlan), name=f"{net.name}-b"),
            conn.network.create_segment(network_id=net.id, network_type="flat", physical_network=f"e2e-flat-{n}",
                                        name=f"{net.name}-c")]
    for i, seg in enumerate(segs):
        conn.network.create_subnet(name=seg.name, network_id=net.id, segment_id=seg.id, ip_version=4,
                                   cidr=f"10.{70 + i}.{n % 250}.0/29", enable_dhcp=False)
    ids = [s.id for s in segs]
    try:
        wait_reported(api, ids, [], cloud, since)  # Neutron's segments plugin made each provider
        for s in ids:  # their inventories lost (as when Neutron could not reach Placement): a write each
            api.set_inventories(s, {}, api.get_inventories(s)[1])
        bad = segs[1]

        from minbw.cli.shell import main  # in process: the deletion runs between this sync's plan and its writes
        from minbw.ops import segments as seg_ops
        planned_then_deleted = seg_ops.apply_segments

        def deleted_before_the_writes(placement, plan, labels=None):
            assert {op.uuid for op in plan.ops} == set(ids), plan.ops
            placement.delete_provider(bad.id)
            return planned_then_deleted(placement, plan, labels)
        monkeypatch.setattr(seg_ops, "apply_segments", deleted_before_the_writes)
        for var in ("OS_CLIENT_CONFIG_FILE", "OS_CLOUD"):
            monkeypatch.setenv(var, cloud.env[var])
        capsys.readouterr()
        code = main(["segment", "sync", "--network", net.id, "--json"])
        out, err = capsys.readouterr()
        assert code == 3, out + err
        for seg in (segs[0], segs[2]):  # the good segments: written
            assert api.get_inventories(seg.id)[0]["IPV4_ADDRESS"]["total"] == 6, seg.name
        assert api.list_providers(name=f"Neutron segment id {bad.id}") == []
        (failed,) = json.loads(out)["failed_segments"]
        assert failed["segment"] == bad.id and failed["label"] == f"segment {bad.name} (rack1)", failed
        assert f"No resource provider with uuid {bad.id} found (status 404" in failed["error"], failed
        assert [op["action"] for op in failed["pending"]] == ["set_inventories"], failed
        (line,) = skipped(err)
        assert line.startswith(f"minbw: skipped: segment {bad.name} (rack1): GET /resource_providers/{bad.id}"), err
        assert "1 of its writes not made (the first: set_inventories on " in line and "sync again resumes" in line

        monkeypatch.setattr(seg_ops, "apply_segments", planned_then_deleted)
        assert main(["segment", "sync", "--network", net.id, "--json"]) == 0  # the next sync makes it again
        again = json.loads(capsys.readouterr().out)
        assert again["failed_segments"] == [] and {op["action"] for op in again["plan"]["ops"]} == {
            "create_provider", "set_inventories", "set_aggregates"}, again["plan"]
        assert api.get_inventories(bad.id)[0]["IPV4_ADDRESS"]["total"] == 6
    finally:
        since = time.time()
        conn.network.delete_network(net, ignore_missing=True)
        wait_segments_gone(api, conn, ids, cloud, since)


def test_audit_fix_makes_the_good_fixes_and_names_the_refused_one(demo, cloud):
    conn, api = demo.conn, Placement(demo.conn)
    service = cloud.connect(**SERVICE)
    policy = demo.policy("e2e-onebad-audit", bw=[("egress", 100), ("ingress", 100)])
    vm = demo.boot("e2e-onebad-audit", [demo.port("e2e-onebad-audit-p0", policy)])
    root = api.list_providers(name="devstack0")[0].uuid
    leaks = [str(uuid.uuid4()) for _ in range(2)]
    try:
        for c in leaks:  # deleted servers' bandwidth left behind
            api.put_allocations(c, {"allocations": {root: {"resources": {"VCPU": 1}},
                                                    BR_TEST: {"resources": {EGR: 100}}},
                                    "project_id": vm.project_id, "user_id": vm.user_id, "consumer_generation": None})
        stray = demo.port("e2e-onebad-audit-stray", policy)
        service.network.update_port(stray, binding_profile={"allocation": {"g": BR_TEST}})

        # as admin only: Neutron's policy refuses the binding fix; the leaks are trimmed
        cli = minbw(cloud.env, "audit", "--fix")
        assert cli.returncode == 3, cli.stdout + cli.stderr
        report = json.loads(cli.stdout)
        assert {(f["kind"], f["subject"]) for f in report["findings"]} == {(LEAK, c) for c in leaks} | {
            (STALE_BINDING, stray.id)}, report["findings"]
        fixes = {f["subject"]: f for f in report["fixes"]}
        assert [(fixes[c]["done"], fixes[c]["error"]) for c in leaks] == [(True, None)] * 2, fixes
        assert fixes[stray.id]["done"] is False and "service role" in fixes[stray.id]["error"], fixes
        for c in leaks:
            assert {rp: a["resources"] for rp, a in api.get_allocations(c)["allocations"].items()} == {
                root: {"VCPU": 1}}  # only the bandwidth went
        (line,) = skipped(cli.stderr)
        assert line.startswith(f"minbw: skipped: fix clear_binding {stray.id}: BindingNotAllowed: ") and \
            "--service-cloud" in line, cli.stderr

        # the refused fix alone: nothing could be fixed, exit 1; with the service user it is made, exit 0
        alone = minbw(cloud.env, "audit", "--fix")
        assert alone.returncode == 1, alone.stdout + alone.stderr
        assert [(f["subject"], f["done"]) for f in json.loads(alone.stdout)["fixes"]] == [(stray.id, False)]
        done = minbw(cloud.env, "audit", "--fix", "--service-cloud", "minicloud-nova")
        assert done.returncode == 0 and skipped(done.stderr) == [], done.stdout + done.stderr
        assert "allocation" not in (conn.network.get_port(stray.id).binding_profile or {})
    finally:
        for c in leaks:
            api.put_allocations(c, {"allocations": {}, "project_id": vm.project_id, "user_id": vm.user_id,
                                    "consumer_generation": api.get_allocations(c).get("consumer_generation")})


def test_heal_of_three_servers_one_port_refused_by_neutron_heals_the_other_two(demo, cloud, tmp_path):
    from tests.support.faults.proxy import FaultProxy, Rule

    conn, api = demo.conn, Placement(demo.conn)
    service = cloud.connect(**SERVICE)
    policy = demo.policy("e2e-onebad-heal", bw=[("egress", 300), ("ingress", 300)])
    ports = [demo.port(f"e2e-onebad-heal-{i}", policy) for i in range(3)]
    vms = [demo.boot(f"e2e-onebad-heal-{i}", [p]) for i, p in enumerate(ports)]
    healthy = [state(api, conn, vm.id, p.id) for vm, p in zip(vms, ports)]
    for vm, p in zip(vms, ports):  # each lost its port's allocation and its binding allocation
        break_allocation(api, vm.id)
        break_binding(service, p.id)
    broken = [state(api, conn, vm.id, p.id) for vm, p in zip(vms, ports)]
    bad = 1
    # the service user's clouds.yaml entry, its Neutron calls through the proxy
    clouds = yaml.safe_load(Path(cloud.env["OS_CLIENT_CONFIG_FILE"]).read_text())
    proxy = FaultProxy(service.network.get_endpoint().split("/v2.0")[0], seed=3).start()
    try:
        proxy.add(Rule("PUT", rf"/ports/{ports[bad].id}$", "409", nth=None))
        clouds["clouds"]["proxied"] = dict(clouds["clouds"]["minicloud-nova"], network_endpoint_override=proxy.url)
        (tmp_path / "clouds.yaml").write_text(yaml.safe_dump(clouds))
        env = dict(cloud.env, OS_CLIENT_CONFIG_FILE=str(tmp_path / "clouds.yaml"))
        cli = minbw(env, "server", "heal", "--service-cloud", "proxied", *[a for vm in vms for a in ("--server", vm.id)])
        refused = [x for x in proxy.log if x.fault]
    finally:
        proxy.stop()
    assert cli.returncode == 3, cli.stdout + cli.stderr
    assert [(x.method, x.status) for x in refused] == [("PUT", None)], refused  # one refusal, never forwarded
    out = {r["server"]: r for r in json.loads(cli.stdout)}
    for i in (0, 2):  # before and after the bad one: healed
        assert out[vms[i].id]["healed"] is True and out[vms[i].id]["error"] is None, out[vms[i].id]
        assert state(api, conn, vms[i].id, ports[i].id) == healthy[i]
    got = out[vms[bad].id]
    assert got["healed"] is False and "409" in got["error"] and "undone: put_allocations" in got["error"], got
    assert got["rolled_back"] == [f"put_allocations {vms[bad].id}"], got  # the allocation it wrote: undone
    assert state(api, conn, vms[bad].id, ports[bad].id) == broken[bad]  # nothing half-healed
    (line,) = skipped(cli.stderr)
    assert line.startswith(f"minbw: skipped: server e2e-onebad-heal-1 ({vms[bad].id}): ") and \
        f"(rolled back: put_allocations {vms[bad].id})" in line, cli.stderr

    # every server's writes refused: nothing could be healed, exit 1; without the fault it is healed
    all_refused = minbw(cloud.env, "server", "heal", "--server", vms[bad].id)  # admin only: Neutron's policy refuses
    assert all_refused.returncode == 1, all_refused.stdout + all_refused.stderr
    assert state(api, conn, vms[bad].id, ports[bad].id) == broken[bad]
    done = minbw(cloud.env, "server", "heal", "--service-cloud", "minicloud-nova", "--server", vms[bad].id)
    assert done.returncode == 0, done.stdout + done.stderr
    assert state(api, conn, vms[bad].id, ports[bad].id) == healthy[bad]
