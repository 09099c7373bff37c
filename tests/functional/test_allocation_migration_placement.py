"""Moving a consumer between hosts (Nova's migration pattern), confirming and reverting, against the
real Placement: one atomic POST /allocations per move, real generation conflicts, real capacity."""
from __future__ import annotations

import dataclasses
import json
import sys
import uuid

import pytest

from minbw.errors import ConsumerConflict, MoveRefused, NoValidHost
from minbw.model.claims import CandidateSet
from minbw.model.requests import ServerRequest
from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.port_request import Segment, build_port_request
from minbw.neutron.provider_tree import desired_state
from minbw.neutron.qos import QosRule
from minbw.ops import claims, allocation_migration, sync
from minbw.placement.client import Placement
from minbw.plan.allocation_migration import target_request
from tests.support.compute_roots import compute_root
from tests.support import cli_forks

FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}
EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
PORT = "99a97b12-6364-4d10-8d8e-c3dab4161691"


def host(api, name, ovs_kbps=2000, sriov=""):
    """A compute node root (as nova-compute makes it) with the OVS agent's br-a on physnet0 (our sync)."""
    root = compute_root(api, name, {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 16384}, "DISK_GB": {"total": 100}})
    texts = []
    if ovs_kbps:
        texts.append(f"[ovs]\nbridge_mappings = physnet0:br-a\n"
                     f"resource_provider_bandwidths = br-a:{ovs_kbps}:{ovs_kbps}\n")
    if sriov:
        texts.append("[sriov_nic]\n" + sriov)
    sync.sync_providers(api, desired_state([load_agent_ini(t, source="agent.ini", host=name) for t in texts]))
    return root


def bridge(api, host_name, device="br-a"):
    return next(p.uuid for p in api.list_providers() if p.name.startswith(host_name + ":") and
                p.name.endswith(":" + device))


def server_request(kbps=1000, vnic="normal", port_id=PORT):
    rules = [QosRule(str(uuid.uuid5(uuid.NAMESPACE_URL, port_id + d)), "minimum_bandwidth", d, kbps)
             for d in ("egress", "ingress")]
    pr = build_port_request(port_id, rules, [Segment("vlan", "physnet0")], vnic)
    return ServerRequest(extra_resources=FLAVOR, ports=(pr,))


def boot(api, req, on, consumer=None):
    """A server's claim on the host ``on`` (root uuid)."""
    return claims.claim(api, consumer or str(uuid.uuid4()), dataclasses.replace(req, in_tree=on),
                        project_id="p", user_id="u")


def allocations(api, consumer):
    return {rp: a["resources"] for rp, a in api.get_allocations(consumer)["allocations"].items()}


def totals(api):
    """Every provider's usage, added up per class (what the cloud holds in all)."""
    out = {}
    for p in api.list_providers():
        for rc, n in api.provider_usages(p.uuid).items():
            out[rc] = out.get(rc, 0) + n
    return {rc: n for rc, n in out.items() if n}


ONE_SERVER = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1, EGR: 1000, IGR: 1000}
TWICE = {rc: 2 * n for rc, n in ONE_SERVER.items()}


@pytest.fixture
def two_hosts(placement):
    h1, h2 = host(placement, "h1"), host(placement, "h2")
    req = server_request()
    server = boot(placement, req, h1)
    return placement, req, server, h1, h2


def test_move_holds_the_source_under_the_migration_then_confirm_frees_it(two_hosts):
    api, req, server, h1, h2 = two_hosts
    source = allocations(api, server.consumer)
    assert server.binding_profiles == {PORT: {req.ports[0].groups[0].id: bridge(api, "h1")}}

    api.counter.reset()
    moved = allocation_migration.move(api, server.consumer, req, "h2")
    assert api.counter.by_method().get("POST") == 1 and api.counter.writes == 1  # one atomic write
    migration = moved.migration
    assert moved.changed and uuid.UUID(migration)
    # the source is held by the migration consumer, the server is on h2
    assert allocations(api, migration) == source
    assert moved.claim.host == h2 and moved.claim.host_name == "h2"
    assert allocations(api, server.consumer) == {h2: {"DISK_GB": 1, "MEMORY_MB": 256, "VCPU": 1},
                                                 bridge(api, "h2"): {EGR: 1000, IGR: 1000}}
    # the port's binding allocation names h2's bridge now
    assert moved.binding_profiles == {PORT: {req.ports[0].groups[0].id: bridge(api, "h2")}}
    # exactly what was written: both consumers in one body, at their generations
    assert set(moved.written) == {migration, server.consumer}
    assert moved.written[migration]["consumer_generation"] is None
    assert moved.written[server.consumer]["consumer_generation"] == 1
    assert moved.written[migration]["allocations"] == {rp: {"resources": r} for rp, r in source.items()}
    # both hosts hold the server until confirm or revert
    assert api.provider_usages(bridge(api, "h1")) == {EGR: 1000, IGR: 1000}
    assert api.provider_usages(bridge(api, "h2")) == {EGR: 1000, IGR: 1000}
    assert totals(api) == TWICE
    assert moved.diff()["before"]["consumer"]["host"] == "h1" and moved.diff()["after"]["consumer"]["host"] == "h2"
    assert moved.diff()["after"]["migration"]["host"] == "h1"

    # again: already there, the migration holding the source → nothing to do
    again = allocation_migration.move(api, server.consumer, req, h2, migration)
    assert not again.changed and again.written is None
    assert again.binding_profiles == moved.binding_profiles

    confirmed = allocation_migration.confirm(api, migration)
    assert confirmed.changed and confirmed.written == {migration: {
        "allocations": {}, "consumer_generation": 1, "project_id": "p", "user_id": "u"}}
    assert allocations(api, migration) == {}
    assert api.provider_usages(bridge(api, "h1")) == {EGR: 0, IGR: 0}
    assert totals(api) == ONE_SERVER  # settled: no double count
    assert not allocation_migration.confirm(api, migration).changed


def test_revert_restores_the_source_and_the_old_binding(two_hosts):
    api, req, server, h1, h2 = two_hosts
    source = allocations(api, server.consumer)
    moved = allocation_migration.move(api, server.consumer, req, h2)
    reverted = allocation_migration.revert(api, server.consumer, moved.migration, req)
    assert reverted.changed
    assert allocations(api, server.consumer) == source
    assert allocations(api, moved.migration) == {}
    assert reverted.claim.host == h1 and reverted.binding_profiles == server.binding_profiles
    assert set(reverted.written) == {server.consumer, moved.migration}
    assert reverted.written[moved.migration]["allocations"] == {}
    assert api.provider_usages(bridge(api, "h2")) == {EGR: 0, IGR: 0}
    assert totals(api) == ONE_SERVER
    assert reverted.diff()["after"] == {
        "consumer": {"uuid": server.consumer, "host": "h1", "host_uuid": h1,
                     "providers": {"h1": {"DISK_GB": 1, "MEMORY_MB": 256, "VCPU": 1},
                                   "h1:Open vSwitch agent:br-a": {EGR: 1000, IGR: 1000}}},
        "migration": {"uuid": moved.migration, "host": None, "host_uuid": None, "providers": {}}}
    again = allocation_migration.revert(api, server.consumer, moved.migration, req)
    assert not again.changed and again.written is None
    # and the server can move again afterwards, with the same migration record
    assert allocation_migration.move(api, server.consumer, req, h2, moved.migration).changed


def test_check_mode_is_the_plan_and_writes_nothing(two_hosts):
    api, req, server, h1, h2 = two_hosts
    migration = str(uuid.uuid4())
    api.counter.reset()
    planned = allocation_migration.move(api, server.consumer, req, "h2", migration, check=True)
    assert api.counter.writes == 0
    assert planned.changed and planned.check and planned.written is None
    op = planned.plan.ops[0]
    assert op.body[migration]["consumer_generation"] is None and op.target == h2 and op.source == h1
    real = allocation_migration.move(api, server.consumer, req, "h2", migration)
    assert real.written == dict(op.body)  # the real run writes exactly the plan check mode showed
    assert real.binding_profiles == planned.binding_profiles
    api.counter.reset()
    for planned in (allocation_migration.confirm(api, migration, check=True),
                    allocation_migration.revert(api, server.consumer, migration, check=True)):
        assert planned.changed and planned.written is None
    assert api.counter.writes == 0


def test_target_without_bandwidth_is_no_valid_host_and_nothing_is_written(placement):
    h1, h2 = host(placement, "h1", ovs_kbps=1000), host(placement, "h2", ovs_kbps=500)
    req = server_request()
    server = boot(placement, req, h1)
    before = placement.get_allocations(server.consumer)
    migration = str(uuid.uuid4())
    placement.counter.reset()
    with pytest.raises(NoValidHost) as err:
        allocation_migration.move(placement, server.consumer, req, "h2", migration)
    assert placement.counter.writes == 0
    text = str(err.value)
    assert f"target host h2 ({h2}) has no allocation candidate" in text, text
    assert "NET_BW_EGR_KILOBIT_PER_SEC: needs 1000, the largest free amount is 500 on " \
           "h2:Open vSwitch agent:br-a (capacity 500, used 0)" in text, text
    assert [e.fits_alone for e in err.value.diagnosis] == [True, False]
    assert placement.get_allocations(server.consumer) == before
    assert placement.get_allocations(migration)["allocations"] == {}


def test_the_diagnosis_says_when_a_group_fits_elsewhere_but_not_on_the_target(placement):
    h1, h2 = host(placement, "h1", ovs_kbps=3000), host(placement, "h2", ovs_kbps=500)
    req = server_request()
    server = boot(placement, req, h1)
    with pytest.raises(NoValidHost) as err:
        allocation_migration.move(placement, server.consumer, req, h2)
    text = str(err.value)
    assert f"No valid host: target host h2 ({h2}) has no allocation candidate for this request. On h2: port " \
           f"99a97b12-6364-4d10-8d8e-c3dab4161691 bandwidth group {req.ports[0].groups[0].id} fits alone on h1, " \
           f"not on h2." == text, text
    # the diagnosis itself is the whole cloud's, as claims report it
    assert [(e.group, e.fits_alone, e.hosts) for e in err.value.diagnosis] == [
        ("", True, ("h1", "h2")), (req.ports[0].groups[0].id, True, ("h1",)), ("*", False, ("h1",))]


class Racing(Placement):
    """The real client, with another writer changing the consumer's allocations (for real, through the
    API) between our plan and our POST: ``times`` POSTs are raced."""

    def __init__(self, conn, consumer, times=1):
        super().__init__(conn)
        self.consumer, self.times, self.posts = consumer, times, 0

    def post_allocations(self, bodies):
        self.posts += 1
        if self.posts <= self.times:
            current = self.get_allocations(self.consumer)
            grown = {rp: {"resources": {rc: n + 1 if rc == "VCPU" else n for rc, n in a["resources"].items()}}
                     for rp, a in current["allocations"].items()}
            self.put_allocations(self.consumer, {"allocations": grown, "project_id": "p", "user_id": "u",
                                                 "consumer_generation": current["consumer_generation"]})
        return super().post_allocations(bodies)


def test_a_concurrent_writer_is_retried_and_the_move_converges(two_hosts):
    api, req, server, h1, h2 = two_hosts
    racing = Racing(api.conn, server.consumer)
    sleeps = []
    moved = allocation_migration.move(racing, server.consumer, req, h2, sleep=sleeps.append)
    assert racing.posts == 2 and len(sleeps) == 1
    assert [a.outcome for a in moved.attempts] == ["generation-conflict", "moved"]
    # the re-read saw the writer's change: the migration holds the grown source (VCPU 2), the server is on h2
    assert allocations(api, moved.migration)[h1]["VCPU"] == 2
    assert allocations(api, server.consumer)[h2]["VCPU"] == 1
    assert moved.written[server.consumer]["consumer_generation"] == 2
    assert allocation_migration.confirm(api, moved.migration).changed
    assert set(allocations(api, server.consumer)) == {h2, bridge(api, "h2")}
    assert totals(api) == ONE_SERVER


def test_a_consumer_that_keeps_changing_is_a_consumer_conflict_naming_it(two_hosts):
    api, req, server, h1, h2 = two_hosts
    racing = Racing(api.conn, server.consumer, times=99)
    migration = str(uuid.uuid4())
    with pytest.raises(ConsumerConflict, match=f"consumer {server.consumer} kept changing") as err:
        allocation_migration.move(racing, server.consumer, req, h2, migration, retries=2, sleep=lambda s: None)
    assert racing.posts == 3 and "3 consumer generation conflicts" in str(err.value)
    assert migration not in str(err.value)  # the migration did not move: only the consumer is named
    assert set(allocations(api, server.consumer)) == {h1, bridge(api, "h1")}  # nothing of ours was written
    assert allocations(api, migration) == {}


def test_a_move_in_progress_is_refused(two_hosts):
    api, req, server, h1, h2 = two_hosts
    moved = allocation_migration.move(api, server.consumer, req, h2)
    on_h2 = api.get_allocations(server.consumer)
    for target in ("h1", h1):
        with pytest.raises(MoveRefused) as err:
            allocation_migration.move(api, server.consumer, req, target, moved.migration)
        assert err.value.reason == "in-progress"
        assert f"migration {moved.migration} already holds allocations on h1: a move is in progress" in str(err.value)
        assert "Confirm it" in str(err.value) and "revert it" in str(err.value)
    other = boot(api, req, h1)  # another server cannot use that migration record either
    with pytest.raises(MoveRefused, match="a move is in progress"):
        allocation_migration.move(api, other.consumer, req, h2, moved.migration)
    assert api.get_allocations(server.consumer) == on_h2
    with pytest.raises(MoveRefused) as err:
        allocation_migration.move(api, server.consumer, req, "h2")  # a fresh migration: the server is on h2 already
    assert err.value.reason == "same-host"
    with pytest.raises(MoveRefused) as err:  # reverting onto a consumer that holds nothing: a wrong UUID
        allocation_migration.revert(api, str(uuid.uuid4()), moved.migration)
    assert err.value.reason == "no-allocations" and "confirm" in str(err.value)


def test_revert_refuses_a_consumer_of_another_project(two_hosts):
    api, req, server, h1, h2 = two_hosts
    moved = allocation_migration.move(api, server.consumer, req, h2)
    stranger = claims.claim(api, str(uuid.uuid4()), ServerRequest(extra_resources={"VCPU": 1}, in_tree=h2),
                            project_id="other", user_id="u")
    with pytest.raises(MoveRefused) as err:
        allocation_migration.revert(api, stranger.consumer, moved.migration)
    assert err.value.reason == "mismatch"
    assert allocations(api, stranger.consumer) == {h2: {"VCPU": 1}}


def test_capacity_taken_on_the_target_moves_to_its_next_candidate(placement):
    pfs = ("physical_device_mappings = physnet0:ens5,physnet0:ens6\n"
           "resource_provider_bandwidths = ens5:1000:1000,ens6:1000:1000\n")
    h1, h2 = host(placement, "h1", ovs_kbps=0, sriov=pfs), host(placement, "h2", ovs_kbps=0, sriov=pfs)
    req = server_request(vnic="direct")
    server = boot(placement, req, h1)
    stale = claims.get_candidates(placement, target_request(req, h2))
    assert len(stale.allocation_requests) == 2
    first = CandidateSet(stale.allocation_requests[:1], stale.provider_summaries, stale.params, stale.microversion)
    taken = claims.claim(placement, str(uuid.uuid4()), server_request(vnic="direct", port_id=str(uuid.uuid4())),
                         project_id="p", user_id="u", candidates=first)  # someone takes the first PF meanwhile
    moved = allocation_migration.move(placement, server.consumer, req, h2, candidates=stale)
    assert [a.outcome for a in moved.attempts] == ["capacity", "moved"]
    (taken_pf,) = taken.binding_profiles.values()
    (moved_pf,) = moved.binding_profiles.values()
    assert set(taken_pf.values()) | set(moved_pf.values()) == {bridge(placement, "h2", "ens5"),
                                                               bridge(placement, "h2", "ens6")}
    # and with both PFs taken, the stale candidates end in NoValidHost, nothing written
    reverted = allocation_migration.revert(placement, server.consumer, moved.migration)
    assert reverted.changed
    claims.claim(placement, str(uuid.uuid4()), server_request(vnic="direct", port_id=str(uuid.uuid4())),
                 project_id="p", user_id="u", candidates=CandidateSet(
                     stale.allocation_requests[1:], stale.provider_summaries, stale.params, stale.microversion))
    back = allocations(placement, server.consumer)
    with pytest.raises(NoValidHost, match="every candidate on target host h2 .* was taken by others"):
        allocation_migration.move(placement, server.consumer, req, h2, candidates=stale, diagnose_on_failure=False)
    assert allocations(placement, server.consumer) == back and h1 in back


def test_bad_input_is_refused_before_anything_is_read(placement):
    with pytest.raises(Exception, match="consumer: 'vm0' is not a UUID"):
        allocation_migration.move(placement, "vm0", server_request(), "h2")
    c = str(uuid.uuid4())
    with pytest.raises(Exception, match="is the consumer itself"):
        allocation_migration.move(placement, c, server_request(), "h2", c)
    host(placement, "h1")
    with pytest.raises(Exception, match="no resource provider is named 'nowhere'"):
        allocation_migration.move(placement, c, server_request(), "nowhere")
    with pytest.raises(Exception, match="is not a host but a provider inside one. Fix: name its root provider 'h1'"):
        allocation_migration.move(placement, c, server_request(), "h1:Open vSwitch agent")
    with pytest.raises(MoveRefused, match=f"consumer {c} has no allocations: nothing to move"):
        allocation_migration.move(placement, c, server_request(), "h1")


def test_cli_move_dry_run_move_confirm_and_revert(two_hosts, placement_server, tmp_path):
    api, req, server, h1, h2 = two_hosts
    port = tmp_path / "port.json"
    port.write_text(json.dumps(req.ports[0].to_neutron()))

    def run(*a):
        return cli_forks.run([sys.executable, "-m", "minbw.cli", *a], capture_output=True, text=True,
                              env=placement_server.env(), timeout=120)
    common = ["--consumer", server.consumer, "--resource", "VCPU=1", "--resource", "MEMORY_MB=256", "--resource", "DISK_GB=1",
              "--port-request", f"{PORT}={port}"]
    dry = run("allocation", "migrate", *common, "--target-host", "h2", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "plan (nothing written): move consumer" in dry.stdout and "h1 → h2" in dry.stdout, dry.stdout
    assert f"port {PORT} binding:profile.allocation" in dry.stdout
    assert set(allocations(api, server.consumer)) == {h1, bridge(api, "h1")}

    done = run("allocation", "migrate", *common, "--target-host", "h2", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    migration = out["migration"]
    assert out["changed"] and out["claim"]["host_name"] == "h2" and set(out["written"]) == {migration, server.consumer}

    conf = run("allocation", "migrate", "confirm", "--migration", migration)
    assert conf.returncode == 0 and "released" in conf.stdout, conf.stdout + conf.stderr
    assert totals(api) == ONE_SERVER

    back = run("allocation", "migrate", *common, "--target-host", "h1", "--migration", migration, "--json")
    assert back.returncode == 0, back.stderr
    rev = run("allocation", "migrate", "revert", "--consumer", server.consumer, "--migration", migration, "--resource",
              "VCPU=1", "--resource", "MEMORY_MB=256", "--resource", "DISK_GB=1", "--port-request", f"{PORT}={port}", "--json")
    assert rev.returncode == 0, rev.stderr
    assert json.loads(rev.stdout)["binding_profiles"] == {PORT: {req.ports[0].groups[0].id: bridge(api, "h2")}}
    assert set(allocations(api, server.consumer)) == {h2, bridge(api, "h2")}

    refused = run("allocation", "migrate", *common, "--target-host", "h2", "--json")
    assert refused.returncode == 1 and json.loads(refused.stdout)["error"]["reason"] == "same-host"
    assert "minbw: error: consumer" in refused.stderr
    usage = run("allocation", "migrate", "--target-host", "h2")
    assert usage.returncode == 1 and "--consumer is required" in usage.stderr
