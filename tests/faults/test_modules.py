"""The modules bandwidth_providers and allocation run by ansible-playbook through the fault-injecting
proxy: faults they survive, and the failure they report when Placement stays unavailable."""
from __future__ import annotations

import subprocess
import uuid as uuidlib
from pathlib import Path

import pytest

from tests.faults.conftest import SLOW, TEST_ENV
from tests.support.faults.proxy import Rule
from tests.support.playbook_runner import run_playbook

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module", autouse=True)
def installed_collection():
    subprocess.run([str(HERE.parent / "support" / "ansible" / "install_collection.sh")], check=True, capture_output=True)


def run(proxied, tmp_path, consumer):
    result = tmp_path / "result.json"
    return run_playbook(HERE / "playbooks" / "modules_under_faults.yml",
                        {"clouds_yaml": str(proxied.clouds_yaml), "consumer": consumer,
                         "placement_env": TEST_ENV}, result_file=result)


def test_modules_survive_resets_503_and_lost_answers(placement, proxied, tmp_path):
    proxied.proxy.add(Rule("POST", r"^/resource_providers$", "reset_after", nth=(1, 2)),
                      Rule("PUT", r"/traits$", "503", nth=(1,)),
                      Rule("PUT", r"/inventories$", "slow_after", nth=(2,), delay=SLOW),
                      Rule("PUT", r"^/allocations/", "reset_after", nth=(1, 2)))
    consumer = str(uuidlib.uuid4())
    r = run(proxied, tmp_path, consumer)
    res = r.result
    assert not r.failed and res["sync"]["changed"] and res["claim"]["changed"] and res["free"]["changed"], r.output
    assert not res["claim"].get("failed"), res["claim"]
    assert {x.fault for x in proxied.proxy.log} >= {"reset_after", "503", "slow_after"}
    names = {p.name for p in placement.list_providers()}
    assert names == {"faults0", "faults0:Open vSwitch agent", "faults0:Open vSwitch agent:br-test"}
    assert placement.get_allocations(consumer)["allocations"] == {}
    # idempotent after the faults: a second sync changes nothing
    proxied.proxy.clear()
    again = run(proxied, tmp_path, consumer)
    assert again.result["sync"]["changed"] is False


def test_bandwidth_providers_reports_what_was_and_was_not_written(placement, proxied, tmp_path):
    proxied.proxy.add(Rule("PUT", r"/inventories$", "503", nth=None))
    r = run(proxied, tmp_path, str(uuidlib.uuid4()))
    sync = r.result["sync"]
    assert sync["failed"] and "Traceback" not in sync["msg"]
    assert sync["changed"] is True   # some writes were made before it stopped
    assert sync["msg"].startswith(f"{sync['writes_done']} of {sync['writes_planned']} planned writes succeeded")
    assert "no usable answer from Placement after 4 tries" in sync["msg"] and "not written" in sync["msg"]
    assert sync["writes_done"] == len(sync["applied"]) > 0 and sync["not_applied"]
    assert sync["writes_done"] + len(sync["not_applied"]) == sync["writes_planned"] and sync["maybe_applied"]
    written = {op["uuid"] for op in sync["applied"] if op.get("uuid")}
    assert written <= {p.uuid for p in placement.list_providers()}


def test_allocation_written_not_verified_fails_changed_naming_the_claim(placement, proxied, tmp_path):
    """The claim's PUT is accepted, every read of its verification (usages) gets 503: the task fails with
    ``changed: true`` (it wrote), ``written_unverified`` and the claim ``written``, a message that says first that
    the claim is written; the free after it finds the allocations the claim wrote and frees them."""
    proxied.proxy.add(Rule("GET", r"/usages", "503", nth=None))
    consumer = str(uuidlib.uuid4())
    r = run(proxied, tmp_path, consumer)
    claim, free = r.result["claim"], r.result["free"]
    assert claim["failed"] and claim["changed"] is True and claim["written_unverified"] is True, claim
    assert claim["msg"].startswith(f"the claim of consumer {consumer} is written in Placement"), claim["msg"]
    assert claim["written"]["consumer"] == consumer and claim["written"]["allocations"], claim
    assert claim["writes_done"] == 1 and claim["status"] == 503 and claim["method"] == "GET"
    assert free["changed"] is True and not free.get("failed"), free   # it held what the claim wrote
    assert placement.get_allocations(consumer)["allocations"] == {}
