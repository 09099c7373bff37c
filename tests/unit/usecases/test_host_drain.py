"""The drain use case's pure parts and the command's table: which servers the planner gets and which are stuck before
it (a state Nova moves nothing from), how a table names request groups and providers, the plan in one line, and the
query's refusal of an empty host. The reads and the whole command run on the mini-cloud
(tests/e2e/test_host_drain_cloud.py)."""
from __future__ import annotations

import pytest

from minbw.cli.host import move_rows, providers_cell, stuck_rows, summary
from minbw.errors import InvalidInput
from minbw.model.requests import PortRequest, RequestGroup, ServerRequest
from minbw.nova.owner import ComputeService
from minbw.ops.drain import COMPUTE_DOWN, DrainFacts, ServerToMove, down_computes, excluded_hosts
from minbw.plan.drain import DrainPlan, Move, Stuck
from minbw.usecases.drain import HostDrain, HostDrainQuery, drain_servers, explained

BW = (("NET_BW_EGR_KILOBIT_PER_SEC", 300),)
TWO_PORTS = ServerRequest.from_flavor(
    {"vcpus": 1, "ram": 256, "disk": 1},
    ports=[PortRequest("p0", (RequestGroup("g0", BW),)),
           PortRequest("p1", (RequestGroup("g1", BW), RequestGroup("g2", (("NET_PACKET_RATE_KILOPACKET_PER_SEC", 1),))))],
)


def server(sid: str, status="ACTIVE", request=TWO_PORTS, **kw) -> ServerToMove:
    return ServerToMove(id=sid, name=f"vm-{sid}", status=status, task_state=None, request=request,
                        port_names={"p0": "web", "p1": "storage"}, **kw)


def test_the_planner_gets_the_movable_servers_and_the_others_are_stuck_with_why():
    facts = DrainFacts("h0", ("r0",), (
        server("a", roots=frozenset({"r1"}), anti_affinity="sg"),
        server("b", status="ERROR", request=None, unmovable="it is ERROR: Nova moves a server only when ..."),
    ), {"r0": "h0", "r1": "h1"}, (), {"h0": False, "h1": False})
    movable, stuck = drain_servers(facts)
    assert [(s.id, s.status, s.roots, s.anti_affinity, dict(s.port_names)) for s in movable] == [
        ("a", "ACTIVE", frozenset({"r1"}), "sg", {"p0": "web", "p1": "storage"})]
    assert movable[0].request is TWO_PORTS and movable[0].kind == "live"
    assert [(s.server_id, s.server_name, s.reason) for s in stuck] == [
        ("b", "vm-b", "it is ERROR: Nova moves a server only when ...")]


def test_a_table_names_each_group_by_its_port_and_each_provider_by_name():
    plan = DrainPlan("h0", (Move("a", "vm-a", "live", "h1", "r1", {}, {"": ("r1",), "g0": ("br1",), "g1": ("br1",),
                                                                          "g2": ("br1",)}),),
                     (Stuck("b", "vm-b", "no room left"),), "exact", 0)
    result = HostDrain(plan, {"a": server("a")}, {"r1": "h1", "br1": "h1:Open vSwitch agent:br-test"})
    doc = result.to_dict()
    assert doc == plan.to_dict() and result.complete is False
    assert move_rows(doc, result) == (("vm-a", "ACTIVE", "live", "h1", "flavor=h1, web=Open vSwitch agent:br-test, "
                                       "storage#1=Open vSwitch agent:br-test, storage#2=Open vSwitch agent:br-test"),)
    assert stuck_rows(doc) == (("vm-b", "no room left"),)
    # a group of no port the server has is shown by its id; without a label, the flavor's group is "flavor"
    assert result.group_label("a", "g9") == "g9" and result.group_label("zz", "g0") == "g0"
    assert providers_cell({"server_id": "a", "host": "h1", "mappings": {"": ["r1"], "g0": ["rX"]}}, {"r1": "h1"}) == \
        "flavor=h1, g0=rX"


def test_the_plan_in_one_line():
    assert summary({"source": "h0", "moves": [], "stuck": [], "method": "greedy"}) == \
        "host h0: no server to move; the drain plan is complete (dry run: nothing was changed)"
    assert summary({"source": "h0", "moves": [{}], "stuck": [{}], "method": "exact"}) == (
        "host h0: 1 server(s) planned (exact), the drain plan is INCOMPLETE: 1 server(s) cannot move (dry run: "
        "nothing was changed)")
    assert summary({"source": "h0", "moves": [{}, {}], "stuck": [], "method": "greedy"}).startswith(
        "host h0: 2 server(s) planned (greedy), the drain plan is complete")


@pytest.mark.parametrize("host", ["", "  ", None])
def test_a_host_must_be_named(host):
    with pytest.raises(InvalidInput, match="HOST: give the compute host to drain"):
        HostDrainQuery(host, host_option="HOST")  # type: ignore[arg-type]


def test_each_host_not_allowed_says_why():
    removed = [{"filter": "compute_status_filter", "reason": "COMPUTE_STATUS_DISABLED: disabled", "hosts": ["h1", "h0"]}]
    roots = {"r0": "h0", "r1": "h1", "r2": "h2", "r3": "h3"}
    assert excluded_hosts(removed, roots, ["h0"], None, {"h2"}, "group sg: never h2") == {
        "h1": "Nova's compute_status_filter removes it (COMPUTE_STATUS_DISABLED: disabled)", "h2": "group sg: never h2"}
    assert excluded_hosts((), roots, ["h0"], frozenset({"h3"}), (), "group db: only h3") == {
        "h1": "group db: only h3", "h2": "group db: only h3"}


def test_a_compute_down_or_forced_down_is_no_destination_nova_s_compute_filter():
    services = [ComputeService("c0"), ComputeService("c1", state="down"), ComputeService("c2", forced_down=True),
                ComputeService("c3", state="up", disabled=True)]
    roots = {"r0": "n0", "r1": "n1", "r1b": "n1b", "r2": "n2", "r3": "n3", "rx": "nx"}
    nodes = {"n0": "c0", "n1": "c1", "n1b": "c1", "n2": "c2", "n3": "c3"}  # nx: a root of no compute node
    [entry] = down_computes(services, roots, nodes)
    assert (entry["filter"], entry["reason"], entry["hosts"], entry["uuids"]) == (
        "ComputeFilter", COMPUTE_DOWN, ["n1", "n1b", "n2"], ["r1", "r1b", "r2"])
    assert excluded_hosts([entry], roots, ["n0"], None, (), "")["n1"] == (
        "Nova's ComputeFilter removes it (its nova-compute service is down: Nova's ComputeFilter sends it nothing "
        "until it reports again)")
    # every compute up (a disabled one is the compute_status_filter's): nothing removed
    assert down_computes([services[0], services[3]], roots, nodes) == []


def test_a_server_with_no_allowed_host_is_stuck_with_each_hosts_reason():
    stuck = Stuck("a", "vm-a", "none allowed")
    blocked = server("a", excluded={"h2": "why 2", "h1": "why 1"})
    assert explained(stuck, blocked).reason == "none allowed: h1: why 1; h2: why 2"
    # a server with some allowed host is stuck for another reason: left as the planner says it
    assert explained(stuck, server("a", roots=frozenset({"r1"}), excluded={"h2": "why"})) is stuck
    assert explained(stuck, None) is stuck
