"""Audit and drift against the real Neutron and Nova (placement plugin on): a clean cloud is clean; a
leaked allocation, a stale binding allocation, a provider over capacity and an edited ini file are found,
and the audit's fix repairs what it can. (The double allocation nova-manage leaves is in
test_heal_beside_nova_manage.py.)"""
from __future__ import annotations

import json
import sys
import uuid
from datetime import datetime
from pathlib import Path

from minbw.ops.audit import apply_fixes, run_audit
from minbw.placement.client import Placement
from minbw.plan.audit import LEAK, OVER_CAPACITY, STALE_BINDING
from tests.conftest import run_drift
from tests.support import cli_forks


BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"
EGR = "NET_BW_EGR_KILOBIT_PER_SEC"
HOST = "devstack0"  # the mini-cloud's agents take their host from the command line, not the ini files
HERE = Path(__file__).resolve().parent


def test_audit_finds_and_fixes_leaks_and_stale_bindings(demo, cloud):
    conn = demo.conn
    api = Placement(conn)
    policy = demo.policy("e2e-audit-bw", bw=[("egress", 1000), ("ingress", 1000)])
    vm = demo.boot("e2e-audit-vm", [demo.port("e2e-audit-p0", policy)])
    assert run_audit(conn, api).ok, run_audit(conn, api).to_dict()

    # a deleted server's bandwidth left behind (as a failed cleanup leaves it), and a port that kept
    # a binding allocation after its server went away
    leaked = str(uuid.uuid4())
    root = api.list_providers(name="devstack0")[0].uuid
    api.put_allocations(leaked, {"allocations": {root: {"resources": {"VCPU": 1}}, BR_TEST: {"resources": {EGR: 100}}},
                                 "project_id": vm.project_id, "user_id": vm.user_id, "consumer_generation": None})
    stray = demo.port("e2e-audit-stray", policy)
    service = cloud.connect(username="nova", password="minicloud-secret", project_name="service")
    service.network.update_port(stray, binding_profile={"allocation": {"g": BR_TEST}})
    plan = run_audit(conn, api)
    assert {(f.kind, f.subject) for f in plan.findings} == {(LEAK, leaked), (STALE_BINDING, stray.id)}

    # admin alone may not clear a binding (Neutron: service role only): that fix fails, clearly, the other is done
    refused = apply_fixes(conn, api, plan)
    assert [(f.op.subject, f.done) for f in refused] == [(leaked, True), (stray.id, False)], refused
    assert "service role" in refused[1].error and "--service-cloud" in refused[1].error, refused
    plan = run_audit(conn, api)
    assert {(f.kind, f.subject) for f in plan.findings} == {(STALE_BINDING, stray.id)}
    done = apply_fixes(conn, api, plan, binding_conn=service)
    assert all(f.done for f in done), done
    left = api.get_allocations(leaked)["allocations"]
    assert {rp: a["resources"] for rp, a in left.items()} == {root: {"VCPU": 1}}  # only bandwidth goes
    assert "allocation" not in (conn.network.get_port(stray.id).binding_profile or {})
    assert run_audit(conn, api).ok
    api.put_allocations(leaked, {"allocations": {}, "project_id": vm.project_id, "user_id": vm.user_id,
                                 "consumer_generation": api.get_allocations(leaked)["consumer_generation"]})


def test_audit_finds_a_provider_over_capacity_youngest_server_first(demo, cloud, playbook):
    """Two servers' bandwidth on br-test, then br-test's capacity lowered under it: Placement accepts an
    inventory update that leaves the usage above capacity (tests/functional/test_drift_audit.py), the state
    Placement's race under concurrent claims leaves. The ages are Nova's: the server booted second is moved."""
    conn = demo.conn
    api = Placement(conn)
    policy = demo.policy("e2e-audit-cap", bw=[("egress", 500), ("ingress", 500)])
    older = demo.boot("e2e-audit-cap-old", [demo.port("e2e-audit-cap-p0", policy)])
    newer = demo.boot("e2e-audit-cap-new", [demo.port("e2e-audit-cap-p1", policy)])
    assert datetime.fromisoformat(older.created_at) < datetime.fromisoformat(newer.created_at)
    assert not [f for f in run_audit(conn, api).findings if f.kind == OVER_CAPACITY]
    inv, gen = api.get_inventories(BR_TEST)
    used = api.provider_usages(BR_TEST)
    # 100 kbps short each way: reserved so that capacity = used - 100 (Neutron's plugin does not resync an
    # agent in sync, and the inventory is put back below)
    lowered = {rc: {**i, "reserved": i["total"] - (used[rc] - 100)} if rc in used else i for rc, i in inv.items()}
    api.set_inventories(BR_TEST, lowered, gen)
    try:
        (over,) = [f.to_dict() for f in run_audit(conn, api).findings
                   if (f.kind, f.subject) == (OVER_CAPACITY, BR_TEST)]
        assert over["host"] == HOST and {rc: c["over"] for rc, c in over["classes"].items()} == \
            {rc: 100 for rc in used}, over
        ours = [c for c in over["consumers"] if c["consumer"] in (older.id, newer.id)]
        assert [(c["consumer"], c["type"], c["name"]) for c in ours] == [
            (newer.id, "server", "e2e-audit-cap-new"), (older.id, "server", "e2e-audit-cap-old")], over
        assert [datetime.fromisoformat(c["since"]) for c in ours] == [
            datetime.fromisoformat(newer.created_at), datetime.fromisoformat(older.created_at)]
        assert over["move"] == [newer.id], over  # 500 freed each way covers the 100 over
        assert f"move (migrate) or delete server e2e-audit-cap-new {newer.id}" in over["detail"]

        cli = cli_forks.run([sys.executable, "-m", "minbw.cli", "audit", "--json"], env=cloud.env,
                            capture_output=True, text=True, timeout=300)
        assert cli.returncode == 3, cli.stderr
        assert [f["move"] for f in json.loads(cli.stdout)["findings"] if f["subject"] == BR_TEST] == [[newer.id]]
        run = playbook(HERE / "playbooks" / "audit.yml", {})
        assert not run.failed and not run.changed, run.output
        assert run.result["ok"] is False
        assert [f["move"] for f in run.result["findings"] if f["subject"] == BR_TEST] == [[newer.id]], run.result
    finally:
        api.set_inventories(BR_TEST, inv, api.get_inventories(BR_TEST)[1])
    assert not [f for f in run_audit(conn, api).findings if f.kind == OVER_CAPACITY]


def test_drift_between_ini_agent_report_and_placement(cloud, tmp_path):
    conn = cloud.connect()
    api = Placement(conn)
    inis = [str(cloud.ovs_ini), str(cloud.sriov_ini)]
    rows = run_drift(conn, api, agent_configs=inis, host=HOST)
    assert rows and all(r.agree for r in rows), [r.to_dict() for r in rows if not r.agree]
    assert {s for r in rows for s in r.sides} == {"ini", "agent", "placement"}
    # the file is edited but the agent was not restarted: the file differs from the agent and Placement
    edited = tmp_path / "openvswitch_agent.ini"
    text = cloud.ovs_ini.read_text()
    assert "br-test:1500:1500" in text.replace(" ", "")
    edited.write_text(text.replace("br-test:1500:1500", "br-test:1800:1500"))
    rows = {r.uuid: r for r in run_drift(conn, api, agent_configs=[str(edited), str(cloud.sriov_ini)], host=HOST)}
    assert [u for u, r in rows.items() if not r.agree] == [BR_TEST]
    assert rows[BR_TEST].differences[0] == "NET_BW_EGR_KILOBIT_PER_SEC total: ini 1800, agent 1500, Placement 1500"
    out = cli_forks.run([sys.executable, "-m", "minbw.cli", "drift", "show", "--agent-config", str(edited), "--host", HOST,
                         "--json"],
                        env=cloud.env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 3 and json.loads(out.stdout)["ok"] is False
