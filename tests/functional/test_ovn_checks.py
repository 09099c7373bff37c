"""OVN parity of the checks, against the real embedded Placement and the OVN southbound dumps of
tests/functional/test_ovn_sync.py: ``drift show`` reads the southbound with ``--ovn-sb-db`` (ovn-sbctl replaced by a
script printing the dump); a drift with nothing to compare fails (exit 1, the options to give) instead of exiting 0;
the exporter's drift report takes the same chassis options and counts OVN providers (and says when it compared
nothing: the report failed, with the reason)."""
from __future__ import annotations

import json
import sys

import pytest

from minbw.errors import NothingCompared
from minbw.neutron import ovn
from minbw.usecases import drift as drift_uc
from tests.functional.test_bad_input_modules import cloud, collection  # noqa: F401 - fixtures
from tests.functional.test_ovn_sync import CHASSIS, sb_json
from tests.functional.test_sync import make_root
from tests.support import cli_forks

OTHER = {ovn.BRIDGE_MAPPINGS: "physnet0:br-test",
         ovn.CMS_OPTIONS: "resource_provider_bandwidths=br-test:100:100,resource_provider_hypervisors=br-test:devstack1"}
NO_BANDWIDTH = {ovn.BRIDGE_MAPPINGS: "physnet0:br-test", ovn.CMS_OPTIONS: "enable-chassis-as-gw"}


def run(placement_server, *a):
    return cli_forks.run([sys.executable, "-m", "minbw.cli", *a], capture_output=True, text=True,
                          env=placement_server.env(), timeout=120)


@pytest.fixture
def southbound(tmp_path):
    """A fake ovn-sbctl printing the dump (``write`` replaces it): what ``--ovn-sb-db`` reads."""
    dump = tmp_path / "sb.json"
    sbctl = tmp_path / "ovn-sbctl"
    sbctl.write_text(f"#!/bin/sh\ncat {dump}\n")
    sbctl.chmod(0o755)

    def write(**chassis):
        dump.write_text(json.dumps(sb_json(**chassis)))
    write(c0=("devstack0", CHASSIS), c1=("devstack1", OTHER))
    return write, str(sbctl), dump


def synced(placement, placement_server, dump):
    make_root(placement)
    make_root(placement, "devstack1")
    out = run(placement_server, "provider", "sync", "--ovn-chassis", str(dump), "--no-cache")
    assert out.returncode == 0, out.stderr


def test_drift_reads_the_southbound_with_ovn_sb_db(placement, placement_server, southbound):
    write, sbctl, dump = southbound
    synced(placement, placement_server, dump)
    same = run(placement_server, "drift", "show", "--ovn-sb-db", "--ovn-sbctl", sbctl, "--no-neutron", "--json")
    assert same.returncode == 0, same.stderr
    doc = json.loads(same.stdout)
    assert doc["ok"] and {p["name"] for p in doc["providers"]} >= {"devstack1:OVN Controller agent:br-test",
                                                                   "devstack0:OVN Controller agent:br-test"}
    assert all(set(p) >= {"agent", "placement"} and "ini" not in p for p in doc["providers"])
    write(c0=("devstack0", CHASSIS), c1=("devstack1", NO_BANDWIDTH))  # c1's bridge leaves its options
    gone = run(placement_server, "drift", "show", "--ovn-sb-db", "--ovn-sbctl", sbctl, "--no-neutron")
    assert gone.returncode == 3, gone.stdout + gone.stderr
    assert "devstack1:OVN Controller agent:br-test" in gone.stdout and "missing from agent" in gone.stdout


def test_a_drift_with_nothing_to_compare_fails_and_names_the_options(placement, placement_server, tmp_path):
    out = run(placement_server, "drift", "show", "--no-neutron")
    assert out.returncode == 1, out.stdout + out.stderr
    line = out.stderr.strip()
    assert line.startswith("minbw: error: drift compared nothing: no agent ini files given (--agent-config FILE); "
                           "Neutron's agents not read (--no-neutron); no OVN chassis given. Fix: on ML2/OVN give the "
                           "chassis options: --ovn-sb-db [DB]"), line
    assert "--ovn-chassis FILE or --ovs-db [DB]" in line
    as_json = run(placement_server, "drift", "show", "--no-neutron", "-f", "json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["error"]["nothing_compared"] is True
    # chassis that report no bandwidth: nothing to compare either
    dump = tmp_path / "sb.json"
    dump.write_text(json.dumps(sb_json(c1=("devstack1", NO_BANDWIDTH))))
    none = run(placement_server, "drift", "show", "--ovn-chassis", str(dump), "--no-neutron")
    assert none.returncode == 1 and "the OVN chassis read report no bandwidth" in none.stderr, none.stderr


def test_an_ovn_cloud_without_chassis_options_is_named(placement, monkeypatch):
    """Neutron's agent list with OVN controller agents and no OVS/SR-IOV agent reporting bandwidth (an ML2/OVN
    cloud drift was not given the chassis of): the error counts the chassis and names the options."""
    from minbw.usecases.cloud import Cloud
    monkeypatch.setattr(drift_uc, "agent_reports", lambda conn, hosts: ([], ["compute0", "compute1"]))
    cloud = Cloud(lambda: placement.conn)
    monkeypatch.setattr(cloud, "require", lambda *a, **k: None)  # the embedded Placement has no Neutron
    with pytest.raises(NothingCompared) as raised:
        drift_uc.drift(cloud, drift_uc.DriftRequest(options={"ovn_sb_db": "ovn_sb_db", "ovs_db": None}))
    message = str(raised.value)
    assert "Neutron's agent list shows 2 OVN chassis (compute0, compute1): ML2/OVN reports bandwidth in the chassis " \
           "options" in message and "give the chassis options: ovn_sb_db (every chassis" in message
    assert "ovs_db" not in message and raised.value.to_dict()["ovn_chassis"] == 2


def test_the_exporters_drift_reads_the_ovn_chassis(placement, placement_server, southbound):
    from minbw.usecases.cloud import NO_CACHE, Cloud
    from minbw.usecases.exporter import Exporter, ExporterRequest
    write, sbctl, dump = southbound
    synced(placement, placement_server, dump)
    request = ExporterRequest.from_config({"ovn_sb_db": "", "ovn_sbctl": [sbctl], "neutron": False, "audit": False,
                                           "cache": False})
    assert request.cache == NO_CACHE
    exporter = Exporter(Cloud(lambda: placement.conn), request)
    assert exporter.run_slow()["drift"]["ok"] is True
    fams = {f.name: f for f in exporter.collect()}
    assert fams["minbw_drift_providers"].value() >= 2
    assert {dict(k)["host"]: v for k, v in fams["minbw_drift_findings"].samples} == {"devstack0": 0, "devstack1": 0}
    write(c0=("devstack0", CHASSIS), c1=("devstack1", NO_BANDWIDTH))
    exporter.run_slow()
    fams = {f.name: f for f in exporter.collect()}
    assert {dict(k)["host"]: v for k, v in fams["minbw_drift_findings"].samples} == {"devstack0": 0, "devstack1": 1}


def test_the_exporters_drift_with_nothing_to_compare_is_a_failed_report(placement, tmp_path):
    from minbw.usecases.cloud import Cloud
    from minbw.usecases.exporter import Exporter, ExporterRequest
    dump = tmp_path / "sb.json"
    dump.write_text(json.dumps(sb_json(c1=("devstack1", NO_BANDWIDTH))))
    said = []
    exporter = Exporter(Cloud(lambda: placement.conn, say=said.append), ExporterRequest.from_config(
        {"ovn_chassis": [str(dump)], "neutron": False, "audit": False, "cache": False}))
    status = exporter.run_slow()
    assert status["drift"]["ok"] is False and "drift compared nothing" in status["drift"]["error"]
    assert "ovn_sb_db (--ovn-sb-db)" in status["drift"]["error"]
    assert any("the drift report failed: NothingCompared: drift compared nothing" in s for s in said), said
    fams = {f.name: f for f in exporter.collect()}
    assert fams["minbw_report_success"].value(report="drift") == 0


def test_the_drift_module_fails_with_nothing_to_compare_and_reads_the_southbound(
        collection, cloud, placement, placement_server, southbound):
    """bandwidth_drift_info, in process against the embedded Placement: nothing to compare fails the task with
    ``nothing_compared`` and the module's option names; with ``ovn_sb_db`` the chassis are compared."""
    from tests.functional.test_bad_input_modules import run_module
    result, writes = run_module("bandwidth_drift_info", {"cloud": cloud, "neutron": False})
    assert result["failed"] and result["nothing_compared"] is True and writes == 0, result
    assert "ovn_sb_db (every chassis" in result["msg"] and "neutron: false" in result["msg"], result["msg"]
    assert "ovs_db" not in result["msg"] and "ovn_chassis (minbw.openstack.ovn_chassis_config)" in result["msg"]
    write, sbctl, dump = southbound
    synced(placement, placement_server, dump)
    result, _ = run_module("bandwidth_drift_info", {"cloud": cloud, "neutron": False, "ovn_sb_db": "",
                                                    "ovn_sbctl": [sbctl]})
    assert not result.get("failed") and result["ok"] is True and len(result["providers"]) >= 4, result
