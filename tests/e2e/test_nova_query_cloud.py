"""Answers Nova honours, on the mini-cloud with two computes (Nova 34): nova-compute on devstack1 disabled as an
operator disables it (``openstack compute service set --disable``), Nova's resource tracker puts
COMPUTE_STATUS_DISABLED on its root, and Nova's scheduler forbids that trait on every request
(compute_status_filter). ``minbw capacity show --flavor`` counts 0 there and names the filter, ``minbw candidate list`` leaves
it out, a QoS server boots on devstack0, and the diagnosis of a server that fits only on devstack1 names the filter
instead of bandwidth. Enabled again, the answers come back. Every query minbw sends here is the one Nova sends
(root_required=OWNER_NOVA,!COMPUTE_STATUS_DISABLED: Nova 34's computes report OWNER_NOVA)."""
from __future__ import annotations

import json
import subprocess
import sys
import time

from minbw.placement.client import Placement
from tests.support import cli_forks

EGR = "NET_BW_EGR_KILOBIT_PER_SEC"
DISABLED = "COMPUTE_STATUS_DISABLED"


def _minbw(env, *args) -> subprocess.CompletedProcess:
    return cli_forks.run([sys.executable, "-m", "minbw.cli", *args], env=env, capture_output=True, text=True,
                         timeout=300)


def _wait_for_trait(api: Placement, root: str, present: bool, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (DISABLED in api.get_provider_traits(root)[0]) == present:
            return
        time.sleep(0.5)
    raise AssertionError(f"nova-compute did not {'set' if present else 'remove'} {DISABLED} on {root} in "
                         f"{timeout} s: its traits are {sorted(api.get_provider_traits(root)[0])}")


def test_a_disabled_compute_is_left_out_as_nova_leaves_it_out(demo_two_hosts, cloud_two_hosts):
    demo, conn, env = demo_two_hosts, demo_two_hosts.conn, cloud_two_hosts.env
    api = Placement(conn)
    roots = {h: api.list_providers(name=h)[0].uuid for h in ("devstack0", "devstack1")}
    assert all({"COMPUTE_NODE", "OWNER_NOVA"} <= api.get_provider_traits(r)[0] for r in roots.values())
    shape = ["--flavor", demo.flavor.name, "--qos-port", "min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0"]

    def capacity() -> dict:
        out = _minbw(env, "capacity", "show", *shape, "--json")
        assert out.returncode == 0, out.stderr
        return {h["host"]: h for h in json.loads(out.stdout)["hosts"]}

    def candidate_hosts() -> set[str]:
        out = _minbw(env, "candidate", "list", *shape, "-f", "value", "-c", "host")
        assert out.returncode in (0, 4), out.stderr
        return set(out.stdout.split())

    before = capacity()
    assert before["devstack1"]["fits"] > 0 and candidate_hosts() == {"devstack0", "devstack1"}
    (service,) = list(conn.compute.services(binary="nova-compute", host="devstack1"))
    conn.compute.disable_service(service, "devstack1", "nova-compute", disabled_reason="minbw e2e")
    try:
        _wait_for_trait(api, roots["devstack1"], True)
        counted = capacity()
        assert counted["devstack1"]["fits"] == 0 and counted["devstack0"]["fits"] == before["devstack0"]["fits"]
        said = json.dumps(counted["devstack1"])
        assert DISABLED in said and "compute_status_filter" in said, said
        assert candidate_hosts() == {"devstack0"}
        shown = json.loads(_minbw(env, "candidate", "list", *shape, "--json").stdout)
        assert "compute_status_filter: root_forbidden COMPUTE_STATUS_DISABLED (always)" in shown["nova_filters"]
        assert shown["query"]["root_required"] == "OWNER_NOVA,!COMPUTE_STATUS_DISABLED"

        policy = demo.policy("e2e-novaq-bw", bw=[("egress", 1000), ("ingress", 1000)])
        # the ports-first workflow, for a server of the same flavor: Nova's query, so devstack0 only (planned, not
        # bound: the server below takes devstack0's room)
        spare = demo.port("e2e-novaq-sched-p0", policy)
        for _ in range(3):
            plan = _minbw(env, "port", "schedule", "--flavor", demo.flavor.name, "--port", spare.id, "--dry-run", "--json")
            assert plan.returncode == 0, plan.stdout + plan.stderr
            planned = json.loads(plan.stdout)
            assert planned["host"] == "devstack0", planned
            held = planned["plan"]["ops"][0]["allocations"][roots["devstack0"]]["resources"]
            assert held["VCPU"] == demo.flavor.vcpus and held["MEMORY_MB"] == demo.flavor.ram, held
        vm = demo.boot("e2e-novaq-vm", [demo.port("e2e-novaq-p0", policy)])
        assert vm.compute_host == "devstack0"  # Nova put it on the enabled compute, as minbw said

        # a port that fits only on devstack1's bridge now: more than devstack0's has free
        bridges = {h: next(p.uuid for p in api.list_providers(in_tree=r) if p.name.endswith(":br-test"))
                   for h, r in roots.items()}
        free = {}
        for h, b in bridges.items():
            inv = api.get_inventories(b)[0][EGR]
            free[h] = int((inv["total"] - inv.get("reserved", 0)) * inv.get("allocation_ratio", 1.0)) - \
                api.provider_usages(b).get(EGR, 0)
        need = free["devstack0"] + 1
        assert free["devstack1"] >= need, free
        big = ["--flavor", demo.flavor.name, "--qos-port", f"min_bw:egress:{need},physnet=physnet0"]
        none = _minbw(env, "candidate", "list", *big)
        assert none.returncode == 4, none.stdout + none.stderr
        assert "compute_status_filter removes devstack1" in none.stdout, none.stdout
        assert "which Nova's request filters remove" in none.stdout, none.stdout
        conn.compute.delete_server(vm)
        conn.compute.wait_for_delete(vm, interval=0.5, wait=120)
        demo.servers.remove(next(s for s in demo.servers if s.id == vm.id))
    finally:
        conn.compute.enable_service(service, "devstack1", "nova-compute")
    _wait_for_trait(api, roots["devstack1"], False)
    assert candidate_hosts() == {"devstack0", "devstack1"}
    assert capacity()["devstack1"]["fits"] == before["devstack1"]["fits"]


def test_an_availability_zone_counts_and_lists_only_its_hosts_as_nova_does(demo_two_hosts, cloud_two_hosts):
    """A host aggregate with ``availability_zone`` metadata holding devstack0: Nova mirrors it into Placement on
    devstack0's compute node, and its scheduler asks a server in that zone for ``member_of`` the aggregate
    (map_az_to_placement_aggregate, no option). ``minbw capacity show --availability-zone`` counts devstack1 0 naming the
    filter, ``candidates`` leaves devstack1 out, and a QoS server asked into the zone boots on devstack0. Then devstack0
    unmapped: in Nova's aggregate, not in Placement's copy of it: both leave it out (Nova: no valid host)."""
    demo, conn, env = demo_two_hosts, demo_two_hosts.conn, cloud_two_hosts.env
    api = Placement(conn)
    zone = "az-minbw-e2e"
    shape = ["--flavor", demo.flavor.name, "--qos-port", "min_bw:egress:1000,min_bw:ingress:1000,physnet=physnet0"]
    aggregate = conn.compute.create_aggregate(name="minbw-e2e-az", availability_zone=zone)
    try:
        conn.compute.add_host_to_aggregate(aggregate, "devstack0")
        root0 = api.list_providers(name="devstack0")[0].uuid
        assert aggregate.uuid in api.get_provider_aggregates(root0)[0]  # Nova mirrored it into Placement
        out = _minbw(env, "capacity", "show", *shape, "--availability-zone", zone, "--json")
        assert out.returncode == 0, out.stderr
        counted = {h["host"]: h for h in json.loads(out.stdout)["hosts"]}
        assert counted["devstack1"]["fits"] == 0 and counted["devstack0"]["fits"] > 0, counted
        said = json.dumps(counted["devstack1"])
        assert "map_az_to_placement_aggregate" in said and aggregate.uuid in said, said
        everywhere = json.loads(_minbw(env, "capacity", "show", *shape, "--json").stdout)
        assert {h["host"]: h["fits"] for h in everywhere["hosts"]}["devstack1"] > 0  # no zone: both count
        hosts = _minbw(env, "candidate", "list", *shape, "--availability-zone", zone, "-f", "value", "-c", "host")
        assert set(hosts.stdout.split()) == {"devstack0"}, hosts.stdout + hosts.stderr
        shown = json.loads(_minbw(env, "candidate", "list", *shape, "--availability-zone", zone, "--json").stdout)
        assert f"in:{aggregate.uuid}" in json.dumps(shown["query"].get("member_of")), shown["query"]
        policy = demo.policy("e2e-novaq-az", bw=[("egress", 1000), ("ingress", 1000)])
        vm = demo.boot("e2e-novaq-az-vm", [demo.port("e2e-novaq-az-p0", policy)], availability_zone=zone)
        assert vm.compute_host == "devstack0"
        conn.compute.delete_server(vm)
        conn.compute.wait_for_delete(vm, interval=0.5, wait=120)
        demo.servers.remove(next(s for s in demo.servers if s.id == vm.id))

        # devstack0 in Nova's aggregate, not in Placement's copy of it (a host added before its compute node's
        # provider existed; `nova-manage placement sync_aggregates` mends it): Nova's query, and minbw's, leave it
        # out, and the zone has no host; Nova finds no valid host
        held, generation = api.get_provider_aggregates(root0)
        api.set_provider_aggregates(root0, held - {aggregate.uuid}, generation)
        none = _minbw(env, "candidate", "list", *shape, "--availability-zone", zone)
        assert none.returncode == 4 and "map_az_to_placement_aggregate removes devstack0" in none.stdout, \
            none.stdout + none.stderr
        counted = {h["host"]: h["fits"] for h in json.loads(_minbw(env, "capacity", "show", *shape,
                                                                   "--availability-zone", zone, "--json").stdout)["hosts"]}
        assert counted == {"devstack0": 0, "devstack1": 0}, counted
        vm = demo.boot("e2e-novaq-az-vm2", [demo.port("e2e-novaq-az-p1", policy)], availability_zone=zone, wait=False)
        vm = conn.compute.wait_for_server(vm, status="ERROR", failures=["ACTIVE"], interval=0.5, wait=180)
        assert "No valid host" in (vm.fault or {}).get("message", ""), vm.fault
        conn.compute.delete_server(vm)
        conn.compute.wait_for_delete(vm, interval=0.5, wait=120)
        demo.servers.remove(next(s for s in demo.servers if s.id == vm.id))
        held, generation = api.get_provider_aggregates(root0)
        api.set_provider_aggregates(root0, held | {aggregate.uuid}, generation)  # mirrored again
        hosts = _minbw(env, "candidate", "list", *shape, "--availability-zone", zone, "-f", "value", "-c", "host")
        assert set(hosts.stdout.split()) == {"devstack0"}, hosts.stdout + hosts.stderr
    finally:
        aggregate = conn.compute.get_aggregate(aggregate)
        for host in aggregate.hosts or ():
            _remove_host(conn, aggregate, host)
        conn.compute.delete_aggregate(aggregate)


def _remove_host(conn, aggregate, host: str, timeout: float = 120) -> None:
    """``host`` out of the zone's aggregate once no instance is left on it. Nova refuses (409) while one is, and a
    deleted server still counts until nova-compute destroys its row: openstacksdk's wait_for_delete returns as soon
    as the server shows status DELETED, before that (seen in CI, 2026-11-28)."""
    from openstack import exceptions
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.compute.remove_host_from_aggregate(aggregate, host)
            return
        except exceptions.ConflictException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_owner_nova_is_read_from_novas_services_through_a_rolling_upgrade(demo_two_hosts, cloud_two_hosts):
    """Issue 41 on the real Nova 34: whether Nova adds ``root_required=OWNER_NOVA`` is read from Nova's nova-compute
    services and compute nodes (``GET /os-services``, ``GET /os-hypervisors``) and each node's root in Placement
    (minbw.nova.owner). An older compute (its root without OWNER_NOVA, as nova-compute before service version 73
    leaves it): Nova asks for nothing, and neither does minbw, which names it; that compute forced down: Nova counts
    it no more (``service_get_minimum_version`` leaves forced-down services out), and OWNER_NOVA is asked for again,
    leaving out its root. The one state minbw cannot see is shown too: devstack1 really runs Nova 34, so the real
    Nova still asks for OWNER_NOVA and refuses devstack1 while its root lacks the trait (taken off by hand here; an
    upgraded compute before its resource tracker writes it): minbw counts such a host, Nova does not."""
    from minbw.ops.nova_query import read_owner_nova
    demo, conn, env = demo_two_hosts, demo_two_hosts.conn, cloud_two_hosts.env
    api = Placement(conn)
    root = api.list_providers(name="devstack1")[0].uuid
    shape = ["--flavor", demo.flavor.name, "--qos-port", "min_bw:egress:1000,physnet=physnet0"]

    def candidate_hosts() -> set[str]:
        out = _minbw(env, "candidate", "list", *shape, "-f", "value", "-c", "host")
        assert out.returncode in (0, 4), out.stderr
        return set(out.stdout.split())

    def set_owner(present: bool) -> None:
        traits, generation = api.get_provider_traits(root)
        api.set_provider_traits(root, traits | {"OWNER_NOVA"} if present else traits - {"OWNER_NOVA"}, generation)

    decided = read_owner_nova(api, conn)
    assert (decided.applies, decided.source) == (True, "nova"), decided
    assert decided.why == "the compute nodes of all 2 nova-compute services have OWNER_NOVA", decided
    (service,) = list(conn.compute.services(binary="nova-compute", host="devstack1"))
    set_owner(False)  # devstack1's root as a nova-compute before service version 73 leaves it
    try:
        decided = read_owner_nova(api, conn)
        assert not decided.applies and "nova-compute on devstack1 is older than service version 73" in decided.why
        assert candidate_hosts() == {"devstack0", "devstack1"}  # Nova asks for nothing: the older compute stays
        # what minbw cannot see: devstack1 really runs Nova 34 (service version 73 or later), so the real Nova still
        # asks for OWNER_NOVA and finds no valid host there (compute API 2.74: the scheduler checks the host asked
        # for) until its resource tracker writes the trait again; minbw counts the host meanwhile, never the reverse
        policy = demo.policy("e2e-novaq-owner", bw=[("egress", 1000)])
        for attempt in range(2):
            vm = demo.boot(f"e2e-novaq-owner-vm{attempt}", [demo.port(f"e2e-novaq-owner-p{attempt}", policy)],
                           wait=False, host="devstack1")
            _settled(conn, vm)
            vm = conn.compute.get_server(vm.id)
            if vm.status == "ACTIVE":
                # placed: only fair when nova-compute's resource tracker wrote the trait back meanwhile (it re-reads
                # Placement's view of its root at each association refresh and puts its traits again); once more
                assert "OWNER_NOVA" in api.get_provider_traits(root)[0], "Nova placed a server on devstack1 while " \
                    "its root lacked OWNER_NOVA"
                assert attempt == 0, "nova-compute wrote OWNER_NOVA back during both attempts"
                set_owner(False)
            conn.compute.delete_server(vm)
            conn.compute.wait_for_delete(vm, interval=0.5, wait=120)
            demo.servers.remove(next(s for s in demo.servers if s.id == vm.id))
            if vm.status == "ERROR":
                break
        assert "No valid host" in (vm.fault or {}).get("message", ""), vm.fault
        conn.compute.update_service_forced_down(service, "devstack1", "nova-compute", forced=True)
        try:
            decided = read_owner_nova(api, conn)
            assert decided.applies, decided  # Nova leaves the forced-down service out of its minimum
            assert candidate_hosts() == {"devstack0"}
        finally:
            conn.compute.update_service_forced_down(service, "devstack1", "nova-compute", forced=False)
    finally:
        set_owner(True)
    assert read_owner_nova(api, conn).applies and candidate_hosts() == {"devstack0", "devstack1"}


def _settled(conn, vm, wait: float = 180) -> str:
    """The server's status once it has left BUILD: ACTIVE or ERROR."""
    deadline = time.monotonic() + wait
    while (status := conn.compute.get_server(vm.id).status) not in ("ACTIVE", "ERROR"):
        assert time.monotonic() < deadline, f"server {vm.id}: {status} after {wait} s"
        time.sleep(0.5)
    return status
