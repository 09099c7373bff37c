"""Audit and drift against the real Neutron and Nova (placement plugin on): a clean cloud is clean; a
leaked allocation, a stale binding allocation and an edited ini file are found, and the audit's fix
repairs what it can."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid

from minbw.ops.audit import apply_fixes, run_audit
from minbw.placement.client import Placement
from minbw.plan.audit import LEAK, STALE_BINDING
from minbw.usecases.cloud import Cloud
from minbw.usecases.drift import DriftRequest, drift


def run_drift(conn, api, *, agent_configs=(), host=None, neutron=True):
    """The drift use case's rows, on ``api``'s cloud."""
    return list(drift(Cloud(lambda: conn or api.conn), DriftRequest(tuple(agent_configs), host, neutron)).rows)


BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"
EGR = "NET_BW_EGR_KILOBIT_PER_SEC"
HOST = "devstack0"  # the mini-cloud's agents take their host from the command line, not the ini files


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
    assert [(f["subject"], f["done"]) for f in refused] == [(leaked, True), (stray.id, False)], refused
    assert "service role" in refused[1]["error"] and "--service-cloud" in refused[1]["error"], refused
    plan = run_audit(conn, api)
    assert {(f.kind, f.subject) for f in plan.findings} == {(STALE_BINDING, stray.id)}
    done = apply_fixes(conn, api, plan, binding_conn=service)
    assert all(f["done"] for f in done), done
    left = api.get_allocations(leaked)["allocations"]
    assert {rp: a["resources"] for rp, a in left.items()} == {root: {"VCPU": 1}}  # only bandwidth goes
    assert "allocation" not in (conn.network.get_port(stray.id).binding_profile or {})
    assert run_audit(conn, api).ok
    api.put_allocations(leaked, {"allocations": {}, "project_id": vm.project_id, "user_id": vm.user_id,
                                 "consumer_generation": api.get_allocations(leaked)["consumer_generation"]})


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
    out = subprocess.run([sys.executable, "-m", "minbw.cli", "drift", "--agent-config", str(edited), "--host", HOST,
                          "--json"],
                         env=cloud.env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 3 and json.loads(out.stdout)["ok"] is False
