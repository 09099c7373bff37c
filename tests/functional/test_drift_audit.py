"""Drift and audit against the real embedded Placement (the Neutron/Nova sides are in tests/e2e)."""
from __future__ import annotations

import json
import subprocess
import sys

from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.ops import sync
from minbw.ops.audit import bandwidth_allocations
from minbw.plan.audit import LEAK, audit
from minbw.usecases.cloud import Cloud
from minbw.usecases.drift import DriftRequest, drift


def run_drift(conn, api, *, agent_configs=(), host=None, neutron=True):
    """The drift use case's rows, on ``api``'s cloud."""
    return list(drift(Cloud(lambda: conn or api.conn), DriftRequest(tuple(agent_configs), host, neutron)).rows)


OVS = """[DEFAULT]
host = devstack0
[ovs]
bridge_mappings = physnet0:br-test,public:br-ex
resource_provider_bandwidths = br-test:1500:1500,br-ex::1
"""
BR_TEST = "f9c9ce07-679d-5d72-ac5f-31720811629a"
EGR = "NET_BW_EGR_KILOBIT_PER_SEC"


def setup(placement, tmp_path):
    ini = tmp_path / "openvswitch_agent.ini"
    ini.write_text(OVS)
    sync.sync(placement, desired_state([load_agent_ini(OVS, source=str(ini))]), create_root=True,
              root_inventories={"VCPU": {"total": 8}})
    return ini


def test_drift_ini_against_placement(placement, tmp_path):
    ini = setup(placement, tmp_path)
    rows = run_drift(None, placement, agent_configs=[str(ini)], neutron=False)
    assert len(rows) == 3 and all(r.agree for r in rows) and {s for r in rows for s in r.sides} == {"ini", "placement"}
    inv, gen = placement.get_inventories(BR_TEST)
    placement.set_inventories(BR_TEST, {rc: {**i, "total": 900} for rc, i in inv.items()}, gen)
    rows = {r.uuid: r for r in run_drift(None, placement, agent_configs=[str(ini)], neutron=False)}
    assert [r.uuid for r in rows.values() if not r.agree] == [BR_TEST]
    assert list(rows[BR_TEST].differences) == ["NET_BW_EGR_KILOBIT_PER_SEC total: ini 1500, Placement 900",
                                         "NET_BW_IGR_KILOBIT_PER_SEC total: ini 1500, Placement 900"]


def test_audit_reads_the_bandwidth_allocations(placement, tmp_path):
    setup(placement, tmp_path)
    root = placement.list_providers(name="devstack0")[0].uuid
    body = {"allocations": {root: {"resources": {"VCPU": 1}}, BR_TEST: {"resources": {EGR: 700}}},
            "project_id": "p", "user_id": "u", "consumer_generation": None}
    placement.put_allocations("4ee7e0ae-0a80-4a3a-8f5c-9c7e8e0b5a11", body)
    allocations, names = bandwidth_allocations(placement)
    assert allocations[BR_TEST] == {"4ee7e0ae-0a80-4a3a-8f5c-9c7e8e0b5a11": {EGR: 700}}
    assert root not in allocations  # only providers with a bandwidth inventory
    plan = audit(allocations, servers=[], migrations=[], ports=[], names=names)
    assert [(f.kind, f.subject) for f in plan.findings] == [(LEAK, "4ee7e0ae-0a80-4a3a-8f5c-9c7e8e0b5a11")]


def test_cli_drift_exit_codes(placement, placement_server, tmp_path):
    ini = setup(placement, tmp_path)

    def run(*a):
        return subprocess.run([sys.executable, "-m", "minbw.cli", *a], capture_output=True, text=True,
                              env=placement_server.env(), timeout=120)
    same = run("drift", "--agent-config", str(ini), "--no-neutron", "--json")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["ok"] is True
    inv, gen = placement.get_inventories(BR_TEST)
    placement.set_inventories(BR_TEST, {rc: {**i, "reserved": 5} for rc, i in inv.items()}, gen)
    differs = run("drift", "--agent-config", str(ini), "--no-neutron")
    assert differs.returncode == 3 and "NET_BW_EGR_KILOBIT_PER_SEC reserved: ini 0, Placement 5" in differs.stdout
