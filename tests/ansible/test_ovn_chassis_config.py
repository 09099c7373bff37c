"""minbw.openstack.ovn_chassis_config by ansible-playbook on a real Open vSwitch database (an ovsdb-server on a
unix socket of the test's own): check mode and diff write nothing, the deployment's other cms options are kept,
a second run changes nothing, absent removes only the bandwidth options, and what Neutron would skip fails the
task writing nothing. Neutron's own parser reads back what was written."""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from minbw.neutron import ovn
from tests.support.oracle import neutron_ovn

REPO = Path(__file__).resolve().parents[2]
GW = "enable-chassis-as-gw,availability-zones=az1:az2"


@pytest.fixture
def ovs_db(tmp_path):
    """A compute's Open vSwitch database as the packages make it: ovsdb-server, the vswitch schema, init."""
    if not (shutil.which("ovsdb-server") and shutil.which("ovs-vsctl")):
        subprocess.run(["bash", str(REPO / "tests" / "support" / "minicloud" / "cloud.sh"), "install-packages"], check=True,
                       capture_output=True)
    db, sock = tmp_path / "conf.db", tmp_path / "db.sock"
    subprocess.run(["ovsdb-tool", "create", str(db), "/usr/share/openvswitch/vswitch.ovsschema"], check=True)
    server = subprocess.Popen(["ovsdb-server", str(db), f"--remote=punix:{sock}", f"--unixctl={tmp_path}/ctl"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.05)
        url = f"unix:{sock}"
        vsctl(url, "init")
        vsctl(url, "set", "Open_vSwitch", ".", "external_ids:system-id=c1", "external_ids:hostname=compute1",
              "external_ids:ovn-bridge-mappings=physnet1:br-ex", f'external_ids:ovn-cms-options="{GW}"')
        yield url
    finally:
        server.terminate()
        server.wait(10)


def vsctl(db: str, *args: str) -> str:
    return subprocess.run(["ovs-vsctl", f"--db={db}", "--no-wait", *args], check=True, capture_output=True,
                          text=True, timeout=30).stdout.strip()


def cms(db: str) -> str:
    return vsctl(db, "get", "Open_vSwitch", ".", "external_ids:ovn-cms-options").strip('"')


def run(playbook, tmp_path, db, values, **kw):
    """The play, and the task's result (the playbook writes it to result_file)."""
    result = tmp_path / f"r{time.monotonic_ns()}.json"
    play = playbook("ovn_chassis_config.yml", dict(db=db, values=values, result_file=str(result)), **kw)
    return play, json.loads(result.read_text())


VALUES = {"resource_provider_bandwidths": {"br-ex": {"egress": 10000000, "ingress": 10000000}},
          "resource_provider_inventory_defaults": {"min_unit": 1000}}


def test_check_diff_apply_idempotent_absent(playbook, ovs_db, tmp_path):
    planned, result = run(playbook, tmp_path, ovs_db, VALUES, check=True, diff=True)
    assert result["changed"] is True and cms(ovs_db) == GW, planned.output
    assert "+ovn-cms-options=enable-chassis-as-gw,availability-zones=az1:az2,resource_provider_bandwidths=" \
           "br-ex:10000000:10000000" in planned.output

    done, result = run(playbook, tmp_path, ovs_db, VALUES)
    assert result["changed"] is True, done.output
    written = cms(ovs_db)
    assert written == (f"{GW},resource_provider_bandwidths=br-ex:10000000:10000000,"
                       "resource_provider_inventory_defaults=min_unit:1000,resource_provider_hypervisors=br-ex:compute1")
    assert result["chassis"] == {"name": "c1", "hostname": "compute1", "ovn-bridge-mappings": "physnet1:br-ex",
                                 "ovn-cms-options": written}
    _, parsed = neutron_ovn.parse({ovn.CMS_OPTIONS: written})  # Neutron reads back exactly the values
    assert parsed == {"resource_provider_bandwidths": {"br-ex": {"egress": 10000000, "ingress": 10000000}},
                      "resource_provider_inventory_defaults": {"min_unit": 1000},
                      "resource_provider_hypervisors": {"br-ex": "compute1"}}

    _, result = run(playbook, tmp_path, ovs_db, VALUES)
    assert result["changed"] is False and cms(ovs_db) == written

    _, result = run(playbook, tmp_path, ovs_db, {"state": "absent"})
    assert result["changed"] is True and cms(ovs_db) == GW


def test_what_neutron_would_skip_fails_and_writes_nothing(playbook, ovs_db, tmp_path):
    bad = dict(VALUES, resource_provider_bandwidths={"br-other": {"egress": 1}})
    _, result = run(playbook, tmp_path, ovs_db, bad)
    assert result["failed"] is True
    assert "Neutron would not report bridge(s) br-other: not in ovn-bridge-mappings (physnet1:br-ex)" in result["msg"]
    assert cms(ovs_db) == GW
    _, result = run(playbook, tmp_path, "unix:/nonexistent.sock", VALUES)
    assert result["failed"] is True and "ovs-vsctl --db=unix:/nonexistent.sock" in result["msg"]
