"""minbw.nova.moves: the server Nova's scheduler gets for a move (from the API's view of it), how a server of each
status moves, what its server group leaves it, and the roots it may go to."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minbw.errors import RequestError
from minbw.nova.inputs import Flavor
from minbw.nova.moves import ServerGroup, allowed_roots, group_hosts, move_kind, moving_server
from minbw.nova.options import SchedulerOptions
from minbw.nova.inputs import CloudFacts
from minbw.nova.scheduler import query

FLAVOR = {"original_name": "m1", "vcpus": 2, "ram": 512, "disk": 1, "ephemeral": 0, "swap": 0,
          "extra_specs": {"trait:CUSTOM_FAST": "required"}}
PORT = {"id": "p0", "binding_vnic_type": "normal", "network_id": "n0", "fixed_ips": [],
        "resource_request": {"request_groups": [{"id": "g0", "required": ["CUSTOM_PHYSNET_PHYSNET0",
                                                                          "CUSTOM_VNIC_TYPE_NORMAL"],
                                                 "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}],
                             "same_subtree": ["g0"]}}


def view(**over):
    return {"id": "s0", "flavor": FLAVOR, "image": {"id": "i0"}, "project_id": "prj",
            "pinned_availability_zone": None, "scheduler_hints": {}, **over}


def test_the_move_asks_for_the_embedded_flavor_the_ports_and_the_pinned_zone():
    server = moving_server(view(pinned_availability_zone="az1", scheduler_hints={"group": "sg"}), [PORT],
                           {"id": "i0", "disk_format": "raw", "hw_vif_model": "virtio"})
    assert server.flavor == Flavor.from_api(dict(FLAVOR, name="m1"))
    assert (server.availability_zone, server.project_id, server.boot_from_volume) == ("az1", "prj", False)
    assert server.scheduler_hints == ("group",)
    assert server.image.disk_format == "raw" and server.image.props["hw_vif_model"] == "virtio"
    assert [p.id for p in server.ports] == ["p0"]
    request = query(server, SchedulerOptions(), CloudFacts(every_compute_reports_owner_nova=False)).request
    groups = {g.id: dict(g.resources) for g in request.request_groups()}
    assert groups == {"": {"VCPU": 2, "MEMORY_MB": 512, "DISK_GB": 1}, "g0": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}
    assert "CUSTOM_FAST" in request.required and "COMPUTE_STATUS_DISABLED" in request.root_forbidden


def test_a_server_booted_from_a_volume_asks_no_root_disk():
    server = moving_server(view(image=""), [], None)
    assert server.boot_from_volume is True
    request = query(server, SchedulerOptions(), CloudFacts(every_compute_reports_owner_nova=False)).request
    assert dict(request.request_groups()[0].resources) == {"VCPU": 2, "MEMORY_MB": 512}


def test_a_flavor_not_embedded_is_refused():
    with pytest.raises(RequestError, match="2.47"):
        moving_server(view(flavor={"original_name": "m1"}), [], None)


@pytest.mark.parametrize("status,kind", [("ACTIVE", "live"), ("PAUSED", "live"), ("SHUTOFF", "cold"),
                                         ("ERROR", None), ("VERIFY_RESIZE", None), ("SHELVED_OFFLOADED", None),
                                         ("BUILD", None)])
def test_how_each_status_moves(status, kind):
    assert move_kind(status) == kind


HOSTS = {"s0": "h0", "s1": "h1", "s2": "h2", "s3": None}


def test_anti_affinity_refuses_the_hosts_of_the_other_members():
    group = ServerGroup.from_api({"id": "g", "name": "web", "policy": "anti-affinity", "member_ids": ["s0", "s1", "s2"]})
    only, never, why = group_hosts("s0", group, HOSTS, "h0")
    assert (only, never) == (None, frozenset({"h1", "h2"}))
    assert "web (anti-affinity, 1 per host): never h1, h2" in why


def test_max_server_per_host_counts_the_members_a_host_holds():
    group = ServerGroup.from_api({"id": "g", "name": "web", "policy": "anti-affinity", "rules": {"max_server_per_host": 2},
                                  "members": ["s0", "s1", "s2", "s4"]})
    only, never, _why = group_hosts("s0", group, dict(HOSTS, s4="h1"), "h0")
    assert (only, never) == (None, frozenset({"h1"}))


def test_affinity_allows_only_the_hosts_of_the_other_members():
    group = ServerGroup.from_api({"id": "g", "name": "db", "policies": ["affinity"], "members": ["s0", "s1"]})
    assert group_hosts("s0", group, HOSTS, "h0")[:2] == (frozenset({"h1"}), frozenset())
    alone = ServerGroup("g", "db", "affinity", ("s0", "s5"))
    only, _never, why = group_hosts("s0", alone, dict(HOSTS, s5="h0"), "h0")
    assert only == frozenset() and "no host is left" in why


@pytest.mark.parametrize("policy", ["soft-anti-affinity", "soft-affinity"])
def test_soft_policies_only_weigh(policy):
    assert group_hosts("s0", ServerGroup("g", "x", policy, ("s0", "s1")), HOSTS, "h0") == (None, frozenset(), "")
    assert group_hosts("s0", None, HOSTS, "h0") == (None, frozenset(), "")


def test_a_rule_that_is_no_number_is_refused():
    with pytest.raises(RequestError, match="max_server_per_host"):
        ServerGroup.from_api({"id": "g", "policy": "anti-affinity", "rules": {"max_server_per_host": "two"}})


def test_the_allowed_roots():
    roots = {"r0": "h0", "r1": "h1", "r2": "h2", "r3": "h3"}
    assert allowed_roots(roots, removed={"r3"}, source_roots=["r0"]) == frozenset({"r1", "r2"})
    assert allowed_roots(roots, removed=(), source_roots=["r0"], never={"h1"}) == frozenset({"r2", "r3"})
    assert allowed_roots(roots, removed=(), source_roots=["r0"], only=frozenset({"h2", "h0"})) == frozenset({"r2"})
    assert allowed_roots(roots, removed=(), source_roots=["r0"], only=frozenset()) == frozenset()


# ---- against Nova's own server group filters (the oracle: tests/support/oracle/nova_scheduler.py, op "group")

GROUP_HOSTS = ("h0", "h1", "h2", "h3")


@st.composite
def group_cases(draw):
    policy = draw(st.sampled_from(["affinity", "anti-affinity"]))
    others = draw(st.lists(st.sampled_from(GROUP_HOSTS), max_size=5))
    most = draw(st.integers(1, 3)) if policy == "anti-affinity" else 1
    return policy, others, most


@settings(max_examples=60, deadline=None)
@given(group_cases())
def test_the_group_filters_are_novas(nova, case):
    """A member on h0 moves: the hosts Nova's filters let it go to are those group_hosts and allowed_roots leave."""
    policy, others, most = case
    hosts = {"s0": "h0", **{f"m{i}": h for i, h in enumerate(others)}}
    rules = {"max_server_per_host": most} if policy == "anti-affinity" and most > 1 else {}
    theirs = nova.ask([{"op": "group", "policy": policy, "server": "s0", "hosts": hosts, "rules": rules,
                        "candidates": list(GROUP_HOSTS[1:])}])[0]["passes"]
    group = ServerGroup.from_api({"id": "g", "name": "g", "policy": policy, "members": list(hosts), "rules": rules})
    only, never, _why = group_hosts("s0", group, hosts, "h0")
    ours = allowed_roots({h: h for h in GROUP_HOSTS}, (), ["h0"], only, never)
    assert ours == {h for h, ok in theirs.items() if ok}, (case, theirs)
