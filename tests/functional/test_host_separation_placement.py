"""Hosts reserved for QoS ports, against the real Placement: two compute roots, devstack1 reserved; a
server without QoS ports never gets devstack1, one with a QoS port can (strict: must)."""
from __future__ import annotations

import json
import uuid

import pytest

from minbw.errors import NoValidHost
from minbw.model.requests import ServerRequest
from minbw.ops import claims
from minbw.ops import separation as ops
from minbw.plan import separation as sp
from tests.conftest import MINBW
from tests.functional.test_claims import FLAVOR, SEED_OVS, host, port_request
from tests.support import cli_forks

T = sp.DEFAULT_TRAIT
# what the resource tracker sets (ResourceTracker._get_traits: the driver's, COMPUTE_NODE and OWNER_NOVA)
NOVA_TRAITS = {"COMPUTE_NET_ATTACH_INTERFACE", "COMPUTE_VOLUME_EXTEND", "COMPUTE_NODE", "OWNER_NOVA"}


@pytest.fixture
def two_hosts(placement):
    # each test starts before any separation: the trait is not there yet (the session's Placement keeps traits)
    placement.request("delete", f"/traits/{T}", "1.6", ok=(204, 404))
    roots = {}
    for name in ("devstack0", "devstack1"):
        roots[name] = host(placement, name, SEED_OVS, vcpu=2)
        gen = placement.get_provider_traits(roots[name])[1]
        placement.set_provider_traits(roots[name], NOVA_TRAITS, gen)
    placement.counter.reset()
    return roots


def hosts_of(api, req):
    """The names of the hosts (roots) of ``req``'s allocation candidates."""
    cands = claims.get_candidates(api, req)
    names = api.provider_names()
    return {names[cands.provider_summaries[rp]["root_provider_uuid"]]
            for ar in cands.allocation_requests for rp in ar["allocations"]}


PLAIN = ServerRequest(extra_resources=FLAVOR)


def qos():
    return ServerRequest(extra_resources=FLAVOR, ports=(port_request(kbps=100),))


def test_reserve_check_mode_idempotency_and_nova_traits_kept(placement, two_hosts):
    sep = sp.Separation("avoid")
    planned = ops.set_separation(placement.conn, sep, ["devstack1"], check=True)
    assert [op.action for op in planned.ops] == ["create_trait", "reserve"]
    assert placement.counter.writes == 0
    done = ops.set_separation(placement.conn, sep, ["devstack1"])
    assert done.ops == planned.ops  # check mode predicted the writes...
    assert placement.counter.writes == planned.writes() == 2  # ...and their number
    assert placement.get_provider_traits(two_hosts["devstack1"])[0] == NOVA_TRAITS | {T}
    assert placement.get_provider_traits(two_hosts["devstack0"])[0] == NOVA_TRAITS
    placement.counter.reset()
    again = ops.set_separation(placement.conn, sep, ["devstack1"])
    assert again.ops == () and placement.counter.writes == 0

    # exclusive moves the reservation; absent releases everything; Nova's traits stay throughout
    moved = ops.set_separation(placement.conn, sep, ["devstack0"], exclusive=True)
    assert [(op.action, op.host) for op in moved.ops] == [("reserve", "devstack0"), ("release", "devstack1")]
    assert placement.get_provider_traits(two_hosts["devstack1"])[0] == NOVA_TRAITS
    gone = ops.set_separation(placement.conn, sep, absent=True)
    assert [(op.action, op.host) for op in gone.ops] == [("release", "devstack0")]
    assert all(placement.get_provider_traits(r)[0] == NOVA_TRAITS for r in two_hosts.values())


def test_a_concurrent_writer_is_re_read_and_kept(placement, two_hosts):
    """nova-compute updating the root's traits between our read and our write: the write conflicts,
    the root is re-read, and our trait is added to what Nova wrote."""
    sep = sp.Separation("avoid")
    api = placement
    observed = ops.observe_hosts(api, sep, ["devstack1"])
    plan = sp.combine(sep, sp.plan_hosts(sep, ["devstack1"], observed), sp.plan_flavors(sep, [], [], {}))
    root = two_hosts["devstack1"]
    traits, gen = api.get_provider_traits(root)
    api.set_provider_traits(root, traits | {"COMPUTE_STATUS_DISABLED"}, gen)  # the other writer
    placement.counter.reset()
    ops.apply(api, None, plan, observed)
    calls = list(placement.counter.calls)
    assert api.get_provider_traits(root)[0] == NOVA_TRAITS | {"COMPUTE_STATUS_DISABLED", T}
    # the refused write, a re-read, the write again
    assert [c for c in calls if c[1] == f"/resource_providers/{root}/traits"] == [
        ("PUT", f"/resource_providers/{root}/traits"), ("GET", f"/resource_providers/{root}/traits"),
        ("PUT", f"/resource_providers/{root}/traits")]


def test_unknown_host_writes_nothing(placement, two_hosts):
    with pytest.raises(Exception, match="hosts: no root provider named 'devstack9'"):
        ops.set_separation(placement.conn, sp.Separation("avoid"), ["devstack1", "devstack9"])
    assert placement.counter.writes == 0


def test_requests_keep_off_or_onto_the_reserved_host(placement, two_hosts):
    avoid, strict = sp.Separation("avoid"), sp.Separation("strict")
    # before anything is reserved the trait does not exist: forbidding it excludes nothing
    assert hosts_of(placement, sp.separate(PLAIN, avoid)) == {"devstack0", "devstack1"}
    ops.set_separation(placement.conn, avoid, ["devstack1"])
    assert hosts_of(placement, PLAIN) == {"devstack0", "devstack1"}            # off
    assert hosts_of(placement, sp.separate(PLAIN, avoid)) == {"devstack0"}
    assert hosts_of(placement, sp.separate(qos(), avoid)) == {"devstack0", "devstack1"}
    assert hosts_of(placement, sp.separate(qos(), strict)) == {"devstack1"}
    # the flavor extra specs Nova reads ask Placement the same (Nova's query: the flavor's group)
    nova_plain = ServerRequest.from_flavor({"vcpus": 1, "ram": 256, "disk": 1,
                                            "extra_specs": {f"trait:{T}": "forbidden"}})
    nova_qos = ServerRequest.from_flavor({"vcpus": 1, "ram": 256, "disk": 1,
                                          "extra_specs": {f"trait:{T}": "required"}}, ports=qos().ports)
    assert hosts_of(placement, nova_plain) == {"devstack0"}
    assert hosts_of(placement, nova_qos) == {"devstack1"}


def test_claims_never_put_a_plain_server_on_the_reserved_host(placement, two_hosts):
    avoid = sp.Separation("avoid")
    ops.set_separation(placement.conn, avoid, ["devstack1"])
    plain = sp.separate(ServerRequest(extra_resources={**FLAVOR, "VCPU": 1}), avoid)
    got = [claims.with_host_name(placement, claims.claim(placement, str(uuid.uuid4()), plain, project_id="p", user_id="u"))
           for _ in range(2)]
    assert {c.host_name for c in got} == {"devstack0"}
    # devstack0 is full (2 VCPUs): the next plain server has no valid host, though devstack1 is empty
    with pytest.raises(NoValidHost, match=f"root_required=!{T} rule it out"):
        claims.claim(placement, str(uuid.uuid4()), plain, project_id="p", user_id="u")
    strict = claims.with_host_name(placement, claims.claim(placement, str(uuid.uuid4()), sp.separate(qos(), sp.Separation("strict")),
                                                  project_id="p", user_id="u"))
    assert strict.host_name == "devstack1"


def test_aggregate_variant(placement, two_hosts):
    agg = str(uuid.uuid4())
    sep = sp.Separation("avoid", aggregate=agg)
    plan = ops.set_separation(placement.conn, sep, ["devstack1"])
    assert [op.to_dict()["aggregate"] for op in plan.ops] == [agg]
    assert placement.get_provider_aggregates(two_hosts["devstack1"])[0] == {agg}
    assert placement.get_provider_traits(two_hosts["devstack1"])[0] == NOVA_TRAITS
    assert ops.set_separation(placement.conn, sep, ["devstack1"]).ops == ()
    assert hosts_of(placement, sp.separate(PLAIN, sep)) == {"devstack0"}
    assert hosts_of(placement, sp.separate(qos(), sp.Separation("strict", aggregate=agg))) == {"devstack1"}
    ops.set_separation(placement.conn, sep, absent=True)
    assert placement.get_provider_aggregates(two_hosts["devstack1"])[0] == set()


def test_cli(placement, placement_server, two_hosts, tmp_path):
    def minbw(*args):
        return cli_forks.run(MINBW + list(args), env=placement_server.env(), capture_output=True, text=True)
    dry = minbw("separation", "set", "--hosts", "devstack1", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert [op["action"] for op in json.loads(dry.stdout)["ops"]] == ["create_trait", "reserve"]
    assert placement.get_provider_traits(two_hosts["devstack1"])[0] == NOVA_TRAITS
    run = minbw("separation", "set", "--hosts", "devstack1")
    assert run.returncode == 0 and "add trait CUSTOM_MINBW_QOS_HOST to devstack1" in run.stdout
    assert "0 writes" in minbw("separation", "set", "--hosts", "devstack1").stdout
    out = minbw("candidate", "list", "--resource", "VCPU=1", "--resource", "MEMORY_MB=256", "--resource", "DISK_GB=1", "--separation", "avoid", "--json")
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    # Nova's owner_nova_filter's and compute_status_filter's root traits, then the separation's
    assert body["query"]["root_required"] == f"OWNER_NOVA,!COMPUTE_STATUS_DISABLED,!{T}"
    assert "compute_status_filter: root_forbidden COMPUTE_STATUS_DISABLED (always)" in body["nova_filters"]
    assert {body["provider_summaries"][rp]["root_provider_uuid"] for a in body["allocation_requests"]
            for rp in a["allocations"]} == {two_hosts["devstack0"]}
    bad = minbw("separation", "set", "--hosts", "devstack1", "--trait", "QOS")
    assert bad.returncode == 1 and "not a custom trait name. Fix: CUSTOM_" in bad.stderr
