"""sync, claim and free against the real Placement behind the fault-injecting proxy: each fault kind,
what minbw reports, and the end state read from Placement directly (not through the proxy)."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid as uuidlib
from pathlib import Path

import pytest

from minbw.errors import PartialApply, PlacementUnavailable, WrittenUnverified
from minbw.model.requests import ServerRequest
from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.ops import claims, sync as s
from tests.conftest import MINBW
from tests.support import cli_forks
from tests.faults.conftest import SLOW, UNHURRIED
from tests.support.compute_roots import compute_root
from tests.support.faults.proxy import Rule

OVS = "[DEFAULT]\nhost = {host}\n[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = br-test:1500:1500\n"
SRIOV = ("[DEFAULT]\nhost = {host}\n[sriov_nic]\nphysical_device_mappings = physnet0:ens5\n"
         "resource_provider_bandwidths = ens5:100000:100000\n")
FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}
TRAITS = r"/resource_providers/[^/]+/traits$"
INVENTORIES = r"/resource_providers/[^/]+/inventories$"
PROVIDERS = r"^/resource_providers(\?|$)"
ROOT = Path(__file__).resolve().parents[2]


def desired(*hosts):
    return desired_state([load_agent_ini(t.format(host=h), source=f"{h}.ini", host=h)
                          for h in hosts for t in (OVS, SRIOV)])


def root(api, name):
    """A compute node root, as nova-compute makes it."""
    return compute_root(api, name, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 16384}, "DISK_GB": {"total": 100}})


def converged(direct, want, roots) -> None:
    """Placement (read directly) holds exactly the desired providers and the roots: nothing missing,
    nothing half-made (a plan against it is empty), nothing stray."""
    plan = s.make_plan(want, s.observe(direct, want))
    assert plan.ops == (), [op.to_dict() for op in plan.ops]
    assert {p.uuid for p in direct.list_providers()} == {p.uuid for p in want.providers} | set(roots)


@pytest.fixture
def hosts(placement):
    return [root(placement, h) for h in ("hostA", "hostB")]


def test_503_then_answer_is_retried(placement, proxied, hosts):
    proxied.proxy.add(Rule("PUT", TRAITS, "503", nth=(1, 2)), Rule("GET", PROVIDERS, "503"))
    api = proxied.api(timeout=UNHURRIED)
    want = desired("hostA", "hostB")
    plan, result = s.sync_providers(api, want)
    assert result.writes == len(plan.ops) and api.retried == 3 and api.converged == 0
    converged(placement, want, hosts)


def test_injected_409_concurrent_update_is_retried_at_the_new_generation(placement, proxied, hosts):
    proxied.proxy.add(Rule("PUT", INVENTORIES, "409", nth=(1, 3)))
    want = desired("hostA", "hostB")
    plan, result = s.sync_providers(proxied.api(), want)
    assert result.retries == 2 and result.writes == len(plan.ops)
    converged(placement, want, hosts)


def test_real_409_from_a_concurrent_writer(placement, proxied, hosts):
    """Another writer changes the provider between our read and our write: the real Placement's 409."""
    want = desired("hostA")
    s.sync_providers(placement, want)
    br = next(p for p in want.providers if p.name.endswith("br-test"))
    placement.create_trait("CUSTOM_STALE")
    placement.set_provider_traits(br.uuid, {"CUSTOM_STALE"}, placement.get_provider_traits(br.uuid)[1])

    def other_writer():  # a real write to the same provider, straight to Placement
        invs, gen = placement.get_inventories(br.uuid)
        placement.set_inventories(br.uuid, invs, gen)
    proxied.proxy.add(Rule("PUT", f"/resource_providers/{br.uuid}/traits", "call", call=other_writer))
    plan, result = s.sync_providers(proxied.api(), want)
    assert [op.action for op in plan.ops] == ["set_traits"] and result.retries == 1
    statuses = [x.status for x in proxied.proxy.log if x.method == "PUT"]
    assert statuses == [409, 200]   # Placement's own conflict, then our write at the re-read generation
    converged(placement, want, hosts)


def test_slow_answer_within_the_timeout(placement, proxied, hosts):
    proxied.proxy.add(Rule("*", "", "slow", nth=(2, 5, 9), delay=0.5))
    want = desired("hostA")
    api = proxied.api(timeout=UNHURRIED)
    s.sync_providers(api, want)
    assert api.retried == 0
    converged(placement, want, hosts)


WRITES = [("POST", PROVIDERS), ("PUT", TRAITS), ("PUT", INVENTORIES)]


@pytest.mark.parametrize("method,path", WRITES)
def test_answer_slower_than_the_timeout_after_placement_applied_it(placement, proxied, hosts, method, path):
    """Placement applied the write, its answer came after the client gave up: re-read, found, done."""
    proxied.proxy.add(Rule(method, path, "slow_after", delay=SLOW))
    want = desired("hostA")
    api = proxied.api()
    plan, result = s.sync_providers(api, want)
    assert api.converged == result.found_applied == 1 and result.writes == len(plan.ops)
    converged(placement, want, hosts)


@pytest.mark.parametrize("method,path", WRITES + [("GET", PROVIDERS)])
@pytest.mark.parametrize("fault", ["reset_before", "reset_after", "500", "500_after"])
def test_connection_reset_or_server_error(placement, proxied, hosts, method, path, fault):
    """A reset, or a 500 (Galera: a commit that failed certification, nothing written; a database node lost after
    the commit, written): the write is re-read, then found or made again."""
    proxied.proxy.add(Rule(method, path, fault, nth=(2,)))
    want = desired("hostA", "hostB")
    api = proxied.api(timeout=UNHURRIED)
    plan, result = s.sync_providers(api, want)
    assert result.writes == len(plan.ops) and api.retried >= 1
    # after the fault the write was re-read: found (the fault came after forwarding) or written again (before)
    assert api.converged == (1 if fault in ("reset_after", "500_after") and method != "GET" else 0)
    converged(placement, want, hosts)


def test_create_answered_409_duplicate_is_read_back(placement, proxied, hosts):
    """Our create's answer lost, and the same provider created meanwhile (a concurrent sync): Placement's
    own 409 placement.duplicate_name on the retry is read back, not reported as a failure."""
    want = desired("hostA")
    agent = next(p for p in want.providers if p.role == "agent")

    def concurrent_create():
        placement.create_provider(agent.uuid, agent.name, hosts[0])
    proxied.proxy.add(Rule("POST", PROVIDERS, "call", call=concurrent_create))
    api = proxied.api()
    plan, result = s.sync_providers(api, want)
    assert proxied.proxy.log[[x.method for x in proxied.proxy.log].index("POST")].status == 409
    assert api.converged == 1 and result.writes == len(plan.ops)
    converged(placement, want, hosts)


def test_unavailable_placement_is_a_partial_apply_naming_what_was_and_was_not_written(placement, proxied, hosts):
    proxied.proxy.add(Rule("PUT", INVENTORIES, "503", nth=None))
    want = desired("hostA", "hostB")
    with pytest.raises(PartialApply) as err:
        s.sync_providers(proxied.api(), want)
    e = err.value
    assert isinstance(e.cause, PlacementUnavailable) and e.cause.status == 503 and e.cause.tries == 4
    assert e.cause.maybe_applied  # a write went out without an answer it could use
    assert e.applied and e.pending and e.pending[0].action == "set_inventories"
    assert len(e.applied) + len(e.pending) == e.planned
    d = e.to_dict()
    assert d["writes_done"] == len(d["applied"]) and d["not_applied"][0]["action"] == "set_inventories"
    assert "not written" in str(e) and "may or may not have been applied" in str(e)
    # what was written first, then the cause (whose own words are about its one call)
    assert str(e).startswith(f"{len(e.applied)} of {e.planned} planned writes succeeded (the last: "), str(e)
    assert str(e).index("planned writes succeeded") < str(e).index("then stopped by: PUT ") < str(e).index("no usable")
    # what Placement holds is exactly what the report says was written
    plan = s.make_plan(want, s.observe(placement, want))
    assert sorted(map(repr, plan.ops)) == sorted(map(repr, e.pending))
    proxied.proxy.clear()
    s.sync_providers(proxied.api(), want)
    converged(placement, want, hosts)


def test_reset_before_every_try_reports_maybe_applied_and_nothing_was(placement, proxied, hosts):
    want = desired("hostA")
    s.sync_providers(placement, want)
    br = next(p for p in want.providers if p.name.endswith("br-test"))
    placement.set_provider_traits(br.uuid, set(), placement.get_provider_traits(br.uuid)[1])
    proxied.proxy.add(Rule("PUT", TRAITS, "reset_before", nth=None))
    with pytest.raises(PartialApply) as err:
        s.sync_providers(proxied.api(), want)
    assert err.value.applied == [] and err.value.cause.maybe_applied
    assert placement.get_provider_traits(br.uuid)[0] == set()


def _claim_setup(placement):
    s.sync_providers(placement, desired("hostA"))
    from minbw.neutron.port_request import Segment, build_port_request
    from minbw.neutron.qos import QosRule
    rules = [QosRule(str(uuidlib.uuid4()), "minimum_bandwidth", d, 1000) for d in ("egress", "ingress")]
    port = build_port_request(str(uuidlib.uuid4()), rules, [Segment("vlan", "physnet0")], "normal")
    return ServerRequest(extra_resources=FLAVOR, ports=(port,))


@pytest.mark.parametrize("fault", ["reset_before", "reset_after", "503", "409", "slow_after", "500", "500_after"])
def test_claim_and_free_under_faults(placement, proxied, hosts, fault):
    req = _claim_setup(placement)
    consumer = str(uuidlib.uuid4())
    proxied.proxy.add(Rule("PUT", "/allocations/", fault, nth=(1, 3), delay=SLOW))
    api = proxied.api()
    got = claims.claim(api, consumer, req, project_id="p", user_id="u")
    held = placement.get_allocations(consumer)["allocations"]
    assert {rp: a["resources"] for rp, a in held.items()} == {rp: a["resources"] for rp, a in got.allocations.items()}
    assert claims.free_allocations(api, consumer) is True  # the second PUT (3rd matching: the 1st of free's) faults too
    assert placement.get_allocations(consumer)["allocations"] == {}
    assert claims.free_allocations(api, consumer) is False
    # nothing else was allocated: usage equals the one claim's, now freed
    for p in placement.list_providers():
        assert not any(placement.provider_usages(p.uuid).values())


def test_claim_unavailable_is_reported_and_writes_nothing(placement, proxied, hosts):
    req = _claim_setup(placement)
    consumer = str(uuidlib.uuid4())
    proxied.proxy.add(Rule("PUT", "/allocations/", "503", nth=None))
    with pytest.raises(PlacementUnavailable) as err:
        claims.claim(proxied.api(), consumer, req, project_id="p", user_id="u")
    assert err.value.maybe_applied and err.value.method == "PUT"
    assert placement.get_allocations(consumer)["allocations"] == {}


def test_a_claim_whose_own_write_landed_late_is_claimed_not_another_claim_s(placement, proxied, hosts):
    """The soak's finding (docs/soak.md): a claim's PUT whose answer was lost (here: the connection reset) is sent
    again and meets 409 placement.concurrent_update; the client's re-read finds nothing yet, and then the first
    write lands (a paused worker that answers late) before the claim reads the consumer. The consumer then holds
    exactly this claim's allocations: it is this claim, written, so it is claimed (and verified), not "another
    claim for it won" (which left the bandwidth held while the command said it failed). A consumer that holds the
    same allocations without a lost answer of this call is still another claim's (test_consumer_conflict_fails_clearly)."""
    req = _claim_setup(placement)
    probe = claims.claim(proxied.api(), str(uuidlib.uuid4()), req, project_id="p", user_id="u")
    body = {"allocations": {rp: {"resources": dict(a["resources"])} for rp, a in probe.allocations.items()},
            "project_id": "p", "user_id": "u", "consumer_generation": None}
    assert claims.free_allocations(proxied.api(), probe.consumer) is True
    consumer = str(uuidlib.uuid4())
    path = f"/allocations/{consumer}"
    # (each rule counts the requests that reach it: a rule that fires answers, the next rules see the rest)
    proxied.proxy.add(Rule("PUT", path, "reset_before", nth=(1,)))   # the answer lost: the client re-reads, sends again
    proxied.proxy.add(Rule("PUT", path, "409", nth=(1,)))            # the consumer is held (by the first write)
    # the client's re-reads after the reset (1st GET) and after the 409 (2nd) find nothing; the first write lands
    # before the claim reads the consumer (3rd)
    proxied.proxy.add(Rule("GET", path, "call", nth=(3,), call=lambda: placement.put_allocations(consumer, body)))
    got = claims.claim(proxied.api(), consumer, req, project_id="p", user_id="u")
    held = placement.get_allocations(consumer)["allocations"]
    assert {rp: a["resources"] for rp, a in held.items()} == {rp: a["resources"] for rp, a in got.allocations.items()}
    assert claims.free_allocations(proxied.api(), consumer) is True
    for p in placement.list_providers():
        assert not any(placement.provider_usages(p.uuid).values())


def test_claim_whose_lost_answer_cannot_be_re_read_says_it_may_be_written(placement, proxied, hosts):
    """The soak's claim e80b8dd0 (docs/soak.md): the claim's PUT is applied and its answer lost (reset after
    forwarding), then every re-read of the consumer gets 503. The error is the PUT's, "may or may not have been
    applied" (it is), not the re-read's GET with its "nothing was written by this call"."""
    req = _claim_setup(placement)
    consumer = str(uuidlib.uuid4())
    proxied.proxy.add(Rule("PUT", "/allocations/", "reset_after", nth=(1,)),
                      Rule("GET", f"/allocations/{consumer}", "503", nth=None))
    with pytest.raises(PlacementUnavailable) as err:
        claims.claim(proxied.api(), consumer, req, project_id="p", user_id="u")
    said = str(err.value)
    assert err.value.method == "PUT" and err.value.maybe_applied and said.startswith(f"PUT /allocations/{consumer}: ")
    assert "re-reading Placement to find it got no usable answer either (GET /allocations/" in said, said
    assert "this write may or may not have been applied" in said and "nothing was written" not in said, said
    assert isinstance(err.value.__cause__, PlacementUnavailable) and err.value.__cause__.method == "GET"
    assert placement.get_allocations(consumer)["allocations"]   # applied, as "may" allows


def test_claim_answered_500_every_time_says_it_may_be_written_and_why(placement, proxied, hosts):
    """Every PUT of the claim answered 500 (Galera's deadlock at commit): after the retry policy's tries the error
    names Placement's own message and says the write may or may not be there; nothing was written."""
    req = _claim_setup(placement)
    consumer = str(uuidlib.uuid4())
    proxied.proxy.add(Rule("PUT", "/allocations/", "500", nth=None))
    with pytest.raises(PlacementUnavailable) as err:
        claims.claim(proxied.api(), consumer, req, project_id="p", user_id="u")
    assert err.value.maybe_applied and err.value.status == 500 and "1213, 'Deadlock found" in str(err.value)
    assert len(str(err.value).splitlines()) == 1 and "answered 500 (placement.undefined_code): The server" in str(err.value)
    assert placement.get_allocations(consumer)["allocations"] == {}


def test_a_read_never_answered_in_time_is_said_as_a_timeout_not_a_connect_failure(placement, proxied, hosts):
    """keystoneauth raises ConnectTimeout for a read timeout too (Placement took the request and did not answer):
    the error says no answer came within the timeout, once per the policy's tries, and that nothing was written."""
    proxied.proxy.add(Rule("GET", "/allocation_candidates", "slow", nth=None, delay=1.0))
    with pytest.raises(PlacementUnavailable) as err:
        claims.claim(proxied.api(attempts=2, timeout=0.5), str(uuidlib.uuid4()), _claim_setup(placement),
                     project_id="p", user_id="u")
    said = str(err.value)
    assert "after 2 tries, the last: no answer within 0.5 s (Request to " in said and "ConnectTimeout" not in said
    assert not err.value.maybe_applied and err.value.method == "GET"


def test_claim_whose_verification_cannot_read_says_the_claim_is_written(placement, proxied, hosts):
    """The claim's PUT is accepted, then every read of its verification (usages) gets 503: the claim stays
    written and the error says so first (a WrittenUnverified naming the consumer, its host and how to free it),
    then the read's cause, whose own "nothing was written by this call" is about the read alone."""
    req = _claim_setup(placement)
    consumer = str(uuidlib.uuid4())
    proxied.proxy.add(Rule("GET", "/usages", "503", nth=None))
    with pytest.raises(WrittenUnverified) as err:
        claims.claim(proxied.api(), consumer, req, project_id="p", user_id="u")
    assert isinstance(err.value, PartialApply)
    assert isinstance(err.value.cause, PlacementUnavailable) and err.value.cause.method == "GET"
    said = str(err.value)
    held = placement.get_allocations(consumer)["allocations"]
    assert held   # written, as said
    host = err.value.written["host"]
    assert said.startswith(f"the claim of consumer {consumer} is written in Placement (its allocations on host {host}), "
                           "not verified: its verification's read (which writes nothing) failed: GET "), said
    assert said.index("is written in Placement") < said.index("nothing was written by this call")
    assert f"minbw allocation delete --consumer {consumer}" in said and len(said.splitlines()) == 1
    assert err.value.written["allocations"] == {rp: {"resources": a["resources"]} for rp, a in held.items()}
    assert err.value.to_dict()["written_unverified"] is True and err.value.applied and err.value.to_dict()["writes_done"] == 1


CLAIM_CLI = ["allocation", "create", "--project-id", "p", "--user-id", "u", "--resource", "VCPU=1",
             "--qos-port", "min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0"]


def test_cli_claim_written_not_verified_exits_5_and_says_so(placement, proxied, hosts):
    """``minbw allocation create`` whose claim Placement accepted and whose verification read failed: exit 5 (a
    script can tell it from a failure that wrote nothing, exit 1), one line that says first that the claim is
    written, and ``-f json`` with ``claimed`` and ``written_unverified`` true and the claim written. Run again, the
    command finds the consumer holding it (exit 0, unchanged); ``minbw allocation delete`` frees it."""
    _claim_setup(placement)
    consumer = str(uuidlib.uuid4())
    proxied.proxy.add(Rule("GET", "/usages", "503", nth=None))
    out = cli_forks.run(MINBW + [*CLAIM_CLI, "--consumer", consumer, "-f", "json"], env=proxied.env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 5, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr
    assert out.stderr.startswith(f"minbw: error: the claim of consumer {consumer} is written in Placement"), out.stderr
    doc = json.loads(out.stdout)
    held = placement.get_allocations(consumer)["allocations"]
    assert doc["claimed"] is True and doc["written_unverified"] is True and doc["consumer"] == consumer
    assert doc["written"]["allocations"] == {rp: {"resources": a["resources"]} for rp, a in held.items()} != {}
    assert doc["code"] is None and doc["status"] == 503 and doc["method"] == "GET"   # the cause's fields
    proxied.proxy.clear()
    again = cli_forks.run(MINBW + [*CLAIM_CLI, "--consumer", consumer], env=proxied.env(), capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0 and again.stdout.startswith(f"unchanged: consumer {consumer} already holds"), again
    freed = cli_forks.run(MINBW + ["allocation", "delete", "--consumer", consumer], env=proxied.env(),
                           capture_output=True, text=True, timeout=120)
    assert freed.returncode == 0 and placement.get_allocations(consumer)["allocations"] == {}, freed


def test_cli_claim_made_whose_names_cannot_be_read_is_made(placement, proxied, hosts):
    """The claim is written and verified, then the reads of its host's name and its providers' names (for the
    table) get 503: the claim is reported made (exit 0, ``claimed`` true, no host name), each failed read named on
    stderr, never an error whose "nothing was written by this call" would hide the claim."""
    _claim_setup(placement)
    consumer = str(uuidlib.uuid4())
    proxied.proxy.add(Rule("GET", r"^/resource_providers/[0-9a-f-]{36}$", "503", nth=None),
                      Rule("GET", r"^/resource_providers\?.*in_tree=", "503", nth=None))
    out = cli_forks.run(MINBW + [*CLAIM_CLI, "--consumer", consumer, "-f", "json"], env=proxied.env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (out.returncode, out.stderr)
    doc = json.loads(out.stdout)
    held = placement.get_allocations(consumer)["allocations"]
    assert doc["claimed"] is True and doc["host_name"] is None and set(doc["allocations"]) == set(held) != set()
    said = out.stderr.splitlines()
    assert len(said) == 2 and "Traceback" not in out.stderr, said
    assert said[0].startswith(f"minbw: claimed for consumer {consumer} on host {doc['host']}; its name could not "
                              "be read: GET /resource_providers/"), said
    assert said[1].startswith(f"minbw: the names of host {doc['host']}'s providers could not be read: GET "), said


def test_soak_claimer_records_a_claim_written_not_verified_as_its_own_outcome(placement, proxied, hosts, tmp_path):
    """The soak's claimer (tests/support/soak/workload.py) running ``minbw allocation create`` as the soak does: a
    claim that exits 5 is recorded "written-unverified" with ``claimed`` true (the soak's end judges it by
    claims_present, as a claim made), not "failed"; its consumer holds the claim. The claim's PUT makes the stop
    file, so the claimer makes this one claim only."""
    _claim_setup(placement)
    ledger, stop = tmp_path / "ops.jsonl", tmp_path / "stop"
    proxied.proxy.add(Rule("GET", "/usages", "503", nth=None),
                      Rule("PUT", "/allocations/", "call", nth=(1,), call=stop.touch))
    r = subprocess.run([sys.executable, "-m", "tests.support.soak.workload", "claimer", "--ledger", str(ledger),
                        "--stop", str(stop), "--seed", "5", "--cloud", "minbw-local",
                        "--qos-port", "min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0"],
                       env=proxied.env(), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (entry,) = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert entry["kind"] == "claim" and entry["rc"] == 5 and entry["outcome"] == "written-unverified", entry
    assert entry["claimed"] is True and entry["stderr_lines"] == 1 and not entry["traceback"], entry
    assert entry["cause"].startswith(f"minbw: error: the claim of consumer {entry['consumer']} is written"), entry
    assert placement.get_allocations(entry["consumer"])["allocations"]


def test_cli_sync_reports_what_was_and_was_not_written(placement, proxied, hosts, tmp_path):
    files = []
    for h in ("hostA", "hostB"):
        for name, t in (("ovs", OVS), ("sriov", SRIOV)):
            f = tmp_path / f"{h}-{name}.ini"
            f.write_text(t.format(host=h))
            files += ["--agent-config", str(f)]
    proxied.proxy.add(Rule("PUT", INVENTORIES, "503", nth=None))
    out = cli_forks.run(MINBW + ["provider", "sync", *files, "--json"], env=proxied.env(), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "minbw: error:" in out.stderr and "planned writes succeeded" in out.stderr and "not written" in out.stderr
    error = json.loads(out.stdout)["error"]
    assert error["writes_done"] == len(error["applied"]) > 0 and error["not_applied"]
    assert error["writes_done"] + len(error["not_applied"]) == error["writes_planned"]
    proxied.proxy.clear()
    again = cli_forks.run(MINBW + ["provider", "sync", *files, "--json"], env=proxied.env(), capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["result"]["writes"] == len(error["not_applied"])
    converged(placement, desired("hostA", "hostB"), hosts)
