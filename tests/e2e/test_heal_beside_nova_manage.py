"""Healing QoS port allocations in the real cloud, beside ``nova-manage placement heal_allocations``.

Three ways an upgrade or a failure leaves a server: its allocation lacks the port's bandwidth (a server
from before Nova allocated port resources), its port lost ``binding:profile.allocation`` (cleared with
the service role), or both; the second once with a full provider (1000 of 1500 kbps held, no room for the
request again) and once with room for a second copy (500 of 1500). minbw heals each; what nova-manage does
with the same case is recorded in ``tests/output/heal_comparison.json`` (the table in docs/lifecycle.md
comes from it). With room, nova-manage allocates the port's request a second time (a double allocation,
exit 0), which ``minbw audit`` finds."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minbw.neutron import naming
from minbw.ops import servers
from minbw.ops.audit import run_audit
from minbw.ops.heal import heal_servers
from minbw.placement.client import Placement
from minbw.plan.audit import DOUBLE
from tests.support import cli_forks

OUT = Path(__file__).resolve().parents[2] / "tests" / "output"


def break_allocation(api, server_id):
    """The server's allocation without its ports' bandwidth (as a server from before port allocations)."""
    now = api.get_allocations(server_id)
    kept = {}
    for rp, a in now["allocations"].items():
        res = {rc: n for rc, n in a["resources"].items() if rc not in naming.GUARANTEED_CLASSES}
        if res:
            kept[rp] = {"resources": res}
    api.put_allocations(server_id, {"allocations": kept, "consumer_generation": now["consumer_generation"],
                                    "project_id": now["project_id"], "user_id": now["user_id"]})


def state(api, conn, server_id, port_id):
    """What heal may change: the server's allocated resources per provider and the port's binding allocation."""
    allocs = {rp: a["resources"] for rp, a in api.get_allocations(server_id)["allocations"].items()}
    return allocs, (conn.network.get_port(port_id).binding_profile or {}).get("allocation")


def break_binding(service_conn, port_id):
    port = service_conn.network.get_port(port_id)
    service_conn.network.update_port(port, binding_profile={k: v for k, v in (port.binding_profile or {}).items()
                                                             if k != "allocation"})


def nova_manage(cloud, server_id) -> dict:
    venv = Path(cloud.env["MINICLOUD_VENV"])
    proc = subprocess.run([str(venv / "bin" / "nova-manage"), "--config-file", cloud.env["MINICLOUD_NOVA_CONF"],
                           "placement", "heal_allocations", "--instance", server_id, "--verbose"],
                          capture_output=True, text=True, timeout=300)
    noise = ("eventlet", "Eventlet", "we strongly recommend", "framework.  For more", "migration.html", "# noqa")
    lines = [line for line in (proc.stdout + proc.stderr).splitlines()
             if line.strip() and not any(n in line for n in noise)]
    return {"exit": proc.returncode, "output": "\n".join(lines)[-1500:]}


BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"  # 1500 kbps each way


def bandwidth(allocs: dict) -> dict:
    """The bandwidth part of a server's allocations, per provider."""
    return {rp: b for rp, res in allocs.items() if (b := {rc: n for rc, n in res.items()
                                                           if rc in naming.GUARANTEED_CLASSES})}


# case → (what heal finds, the port's kbps each way)
CASES = {"allocation": ("allocation", 1000), "binding": ("binding", 1000), "both": ("both", 1000),
         "binding-room": ("binding", 500)}


@pytest.mark.parametrize("case", list(CASES))
def test_heal_each_case_and_compare_with_nova_manage(demo, cloud, case):
    conn = demo.conn
    api = Placement(conn)
    service = cloud.connect(username="nova", password="minicloud-secret", project_name="service")
    status, kbps = CASES[case]
    policy = demo.policy(f"e2e-heal-{case}", bw=[("egress", kbps), ("ingress", kbps)])
    port = demo.port(f"e2e-heal-{case}", policy)
    vm = demo.boot(f"e2e-heal-{case}", [port])
    healthy = state(api, conn, vm.id, port.id)
    assert healthy[1], healthy
    healthy_bw = bandwidth(healthy[0])
    assert healthy_bw == {BR_TEST: {rc: kbps for rc in healthy_bw.get(BR_TEST, {})}} and healthy_bw[BR_TEST], healthy

    def damage():
        if status in ("allocation", "both"):
            break_allocation(api, vm.id)
        if status in ("binding", "both"):
            break_binding(service, port.id)
        assert not servers.verify(conn, vm.id, api).ok

    damage()
    broken = state(api, conn, vm.id, port.id)
    assert broken != healthy
    planned = heal_servers(conn, api, [vm.id], check=True)[0].to_dict()
    assert planned["plan"]["healable"] and planned["plan"]["ops"], planned
    assert [g["status"] for g in planned["plan"]["groups"]] == [status]
    assert state(api, conn, vm.id, port.id) == broken  # check mode wrote nothing
    if status != "allocation":
        # admin alone may not write binding:profile (Neutron: service role only): nothing is left half-healed
        refused = heal_servers(conn, api, [vm.id])[0].to_dict()
        assert refused["healed"] is False and "service role" in refused["error"], refused
        assert state(api, conn, vm.id, port.id) == broken
        if status == "both":  # the allocation written first was rolled back
            assert refused["rolled_back"] and "NOT undone" not in " ".join(refused["rolled_back"]), refused
    done = heal_servers(conn, api, [vm.id], binding_conn=service)[0].to_dict()
    assert done["healed"] is True and done["error"] is None, done
    assert servers.verify(conn, vm.id, api).ok, servers.verify(conn, vm.id, api).to_dict()["problems"]
    assert state(api, conn, vm.id, port.id) == healthy
    assert heal_servers(conn, api, [vm.id])[0].to_dict()["plan"]["ops"] == []  # healed: nothing left to do

    # the same damage, healed by nova-manage: record what it did
    damage()
    allocs_before = state(api, conn, vm.id, port.id)[0]
    ran = nova_manage(cloud, vm.id)
    after = servers.verify(conn, vm.id, api).to_dict()
    allocs_after, binding_after = state(api, conn, vm.id, port.id)
    audit_after = [f.to_dict() for f in run_audit(conn, api).findings if f.subject == vm.id]
    final = heal_servers(conn, api, [vm.id], binding_conn=service)[0].to_dict()
    record = {"case": case, "kbps": kbps, "nova_manage_exit": ran["exit"], "guarantee_holds_after": after["ok"],
              "allocation_as_healthy": allocs_after == healthy[0], "binding_as_healthy": binding_after == healthy[1],
              "bandwidth_before": bandwidth(allocs_before), "bandwidth_after": bandwidth(allocs_after),
              "binding_after": binding_after, "problems_after": after["problems"], "output": ran["output"],
              "audit_after": [{k: f[k] for k in ("kind", "detail")} for f in audit_after],
              "minbw_after_nova_manage": {"healed": final.get("healed"), "error": final.get("error"),
                                          "guarantee_holds": servers.verify(conn, vm.id, api).ok}}
    OUT.mkdir(exist_ok=True)
    path = OUT / "heal_comparison.json"
    table = json.loads(path.read_text()) if path.exists() else {}
    table[case] = record
    path.write_text(json.dumps(table, indent=2, sort_keys=True))
    if case == "binding-room":
        # nova 34 (nova/cmd/manage.py): the port has a request and no binding allocation, so it asks Placement
        # for the request again inside the server's tree, finds room, merges a second copy into the server's
        # allocation (_merge_allocations), writes the binding and exits 0: a silent double allocation
        assert ran["exit"] == 0, record
        assert bandwidth(allocs_after) == {BR_TEST: {rc: 2 * n for rc, n in healthy_bw[BR_TEST].items()}}, record
        assert binding_after == healthy[1], record
        group = next(iter(healthy[1]))
        (double,) = audit_after
        assert double["kind"] == DOUBLE and double["provider"] == BR_TEST, double
        assert double["extra"] == double["keep"] == healthy_bw[BR_TEST], double
        assert double["bound"] == [{"port": port.id, "group": group, "resources": healthy_bw[BR_TEST]}], double
        assert "twice the request" in double["detail"], double
        cli = cli_forks.run([sys.executable, "-m", "minbw.cli", "audit", "--json"], env=cloud.env,
                            capture_output=True, text=True, timeout=300)
        assert cli.returncode == 3, cli.stderr
        assert [(f["kind"], f["provider"], f["extra"]) for f in json.loads(cli.stdout)["findings"]
                if f["subject"] == vm.id] == [(DOUBLE, BR_TEST, healthy_bw[BR_TEST])], cli.stdout
    else:
        assert not [f for f in audit_after if f["kind"] == DOUBLE], audit_after


@pytest.mark.parametrize("fault", ["reset_after", "503"])
def test_heal_undoes_everything_when_neutron_gives_no_usable_answer(demo, cloud, fault):
    """The binding write goes through a fault-injecting proxy in front of the real Neutron: with
    ``reset_after`` Neutron applies it and the answer is lost (keystoneauth's ConnectFailure, which is no
    SDKException), with ``503`` no answer can be trusted. Either way the write may have been applied, so heal
    undoes the allocation it wrote *and* puts the binding back; it reports both, and the server is as before."""
    from tests.support.faults.proxy import FaultProxy, Rule

    conn = demo.conn
    api = Placement(conn)
    auth = dict(username="nova", password="minicloud-secret", project_name="service")
    service = cloud.connect(**auth)
    policy = demo.policy(f"e2e-heal-{fault}", bw=[("egress", 1000), ("ingress", 1000)])
    port = demo.port(f"e2e-heal-{fault}", policy)
    vm = demo.boot(f"e2e-heal-{fault}", [port])
    break_allocation(api, vm.id)
    break_binding(service, port.id)
    broken = state(api, conn, vm.id, port.id)
    neutron = service.network.get_endpoint().split("/v2.0")[0]
    proxy = FaultProxy(neutron, seed=3).start()
    try:
        proxy.add(Rule("PUT", rf"/ports/{port.id}$", fault, nth=(1,)))
        # the service user, its Neutron calls through the proxy
        proxied = cloud.connect({"network_endpoint_override": proxy.url}, **auth)
        got = heal_servers(conn, api, [vm.id], binding_conn=proxied)[0].to_dict()
        assert [x.status for x in proxy.log if x.fault] == ([200] if fault == "reset_after" else [None])
    finally:
        proxy.stop()
    assert got["healed"] is False and got["error"], got
    undone = got["rolled_back"]
    assert len(undone) == 2 and not any("NOT undone" in u for u in undone), got
    assert state(api, conn, vm.id, port.id) == broken  # nothing half-healed: the allocation and the binding as before
    done = heal_servers(conn, api, [vm.id], binding_conn=service)[0].to_dict()
    assert done["healed"] is True, done
    assert servers.verify(conn, vm.id, api).ok
