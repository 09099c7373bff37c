"""Server request -> GET /allocation_candidates query, checked with Placement's own parser.

``placement_parse`` runs the first steps of placement.handlers.allocation_candidate.
list_allocation_candidates (schema of that microversion, RequestWideParams, RequestGroup.
dict_from_request, the group_policy rule) on the query string we would send. That the query is Nova's
own, string for string, is tests/unit/nova/test_scheduler.py's (Nova's code as the oracle).
"""
import uuid

import pytest
import webob
from hypothesis import HealthCheck, assume, given, settings, strategies as st
from placement import microversion as placement_mv

from minbw.errors import MicroversionUnsupported, RequestError
from minbw.model import microversions
from minbw.model.requests import PortRequest, ServerRequest
from minbw.neutron.port_request import Segment, build_port_request
from minbw.neutron.qos import MIN_BW, MIN_PPS, QosRule
from minbw.placement.query import build_query, query_string, required_microversion
from tests.support.oracle.placement_parser import placement_parse as parse_query

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LATEST = placement_mv.max_version_string()

PORT = "9f9d8e59-2b7c-4e4f-8a0e-6c1f7a3b5d21"
PORT2 = "1d2c3b4a-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
BW = [QosRule("2a4c1f8e-0d6b-4b8e-9f3a-5c7d9e1b3a50", MIN_BW, "egress", 1000),
      QosRule("6b8d2e4f-1a3c-4d5e-8f7a-9b0c1d2e3f41", MIN_BW, "ingress", 1000)]
PPS = [QosRule("c0ffee00-1111-4222-8333-444455556666", MIN_PPS, "any", 10)]
PHYSNET0 = [Segment("vlan", "physnet0")]


def placement_parse(params, mv):
    return parse_query(query_string(params), mv)


def assert_same_as_placement(sr: ServerRequest, params, mv):
    groups, rw = placement_parse(params, mv)
    ours = {g.id: g for g in sr.request_groups()}
    assert set(groups) == set(ours)
    for suffix, pg in groups.items():
        g = ours[suffix]
        assert pg.use_same_provider == bool(suffix)
        assert pg.resources == g.resource_dict
        assert sorted(map(sorted, pg.required_traits)) == sorted(
            [[t] for t in g.required] + [list(a) for a in g.required_any])
        assert pg.forbidden_traits == set(g.forbidden)
        if suffix == "":
            assert {frozenset(m) for m in pg.member_of} == {frozenset(m) for m in sr.member_of}
            assert pg.forbidden_aggs == set(sr.forbidden_member_of)
        if sr.in_tree and (suffix == "" or "" not in groups):
            assert pg.in_tree == sr.in_tree
    assert rw.group_policy == sr.effective_group_policy()
    assert rw.limit == (sr.limit or [])  # Placement keeps the empty getall() when absent
    assert (rw.anchor_required_traits or set()) == set(sr.root_required)
    assert (rw.anchor_forbidden_traits or set()) == set(sr.root_forbidden)
    # Nova's form (every port's list) at 1.36 and more; below, the lists that constrain anything
    subtrees = sr.same_subtree() if microversions.parse(mv) >= microversions.SAME_SUBTREE else sr.same_subtrees()
    assert sorted(map(sorted, rw.same_subtrees)) == sorted(map(sorted, subtrees))


# --- strategies -------------------------------------------------------------------------------

TRAITS = ["HW_CPU_X86_AVX2", "CUSTOM_GOLD", "CUSTOM_SILVER", "COMPUTE_STATUS_DISABLED",
          "STORAGE_DISK_SSD"]


@st.composite
def port_requests(draw):
    port = str(draw(st.uuids()))
    kinds = draw(st.sampled_from([[(MIN_BW, "egress")], [(MIN_BW, "ingress"), (MIN_BW, "egress")],
                                  [(MIN_PPS, "any")], [(MIN_BW, "egress"), (MIN_PPS, "egress")],
                                  [(MIN_PPS, "ingress"), (MIN_BW, "ingress")]]))
    rules = [QosRule(str(draw(st.uuids())), t, d, draw(st.integers(0, 10**6))) for t, d in kinds]
    segs = draw(st.lists(st.builds(Segment, st.just("vlan"),
                                   st.one_of(st.none(), st.text(min_size=1, max_size=12))),
                         min_size=1, max_size=3))
    pr = build_port_request(port, rules, segs, draw(st.sampled_from(["normal", "direct"])),
                            any_traits=draw(st.booleans()))
    g = pr.groups[0]
    if (draw(st.booleans()) and len(pr.groups) == 1 and not g.required_any
            and all(a for _, a in g.resources)):
        # the same port as an older Neutron shows it
        pr = PortRequest.from_neutron(pr.to_legacy(), port)
    return pr


@st.composite
def server_requests(draw):
    vcpus, mem, disk = draw(st.integers(0, 8)), draw(st.integers(0, 4096)), draw(st.integers(0, 50))
    extra = draw(st.dictionaries(st.sampled_from(["VCPU", "PCPU", "CUSTOM_FPGA", "DISK_GB"]),
                                 st.integers(0, 4), max_size=2))
    ports = draw(st.lists(port_requests(), max_size=3))
    probe = ServerRequest(vcpus, mem, disk, extra)
    has_flavor = bool(probe.flavor_resources())
    assume(has_flavor or any(a for p in ports for g in p.groups for _, a in g.resources))
    traits = draw(st.permutations(TRAITS))
    n_req, n_forb = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    root = draw(st.permutations(TRAITS))
    n_rr, n_rf = draw(st.integers(0, 2)), draw(st.integers(0, 1))
    return ServerRequest(
        vcpus, mem, disk, extra,
        required=traits[:n_req] if has_flavor else (),
        forbidden=traits[n_req:n_req + n_forb] if has_flavor else (),
        ports=tuple(ports),
        group_policy=draw(st.sampled_from([None, "none", "isolate"])),
        root_required=root[:n_rr], root_forbidden=root[n_rr:n_rr + n_rf],
        member_of=tuple(tuple(map(str, m)) for m in draw(
            st.lists(st.lists(st.uuids(), min_size=1, max_size=2), max_size=2))) if has_flavor else (),
        forbidden_member_of=tuple(map(str, draw(st.lists(st.uuids(), max_size=2)))) if has_flavor else (),
        in_tree=draw(st.one_of(st.none(), st.uuids().map(str))),
        limit=draw(st.one_of(st.none(), st.integers(1, 1000))),
    )


def previous(mv):
    major, minor = microversions.parse(mv)
    return f"{major}.{minor - 1}"


@FAST
@given(sr=server_requests())
def test_placement_parses_every_query_to_the_same_request(sr):
    params, mv = build_query(sr, LATEST)
    assert_same_as_placement(sr, params, mv)
    need, _ = required_microversion(sr)
    assert mv == microversions.format(max(need, microversions.NOVA_CANDIDATES))  # Nova's 1.36, or more
    # also at the lowest microversion we claim, and nothing lower expresses it
    params_low, mv_low = build_query(sr, LATEST, mappings=False)
    assert mv_low == microversions.format(need)
    assert_same_as_placement(sr, params_low, mv_low)
    if need > microversions.NESTED_CANDIDATES:
        try:
            assert_same_as_placement(sr, params_low, previous(mv_low))
        except (webob.exc.HTTPBadRequest, AssertionError):
            pass
        else:
            pytest.fail(f"{mv_low} is not the lowest microversion for {params_low}")


# --- fixed cases ------------------------------------------------------------------------------

def test_seed_003_query():
    port = build_port_request(PORT, BW, PHYSNET0, "normal", "openvswitch")
    gid = port.groups[0].id
    sr = ServerRequest(vcpus=1, memory_mb=256, disk_gb=1, ports=(port,))
    params, mv = build_query(sr, "1.39")
    assert mv == "1.36"  # Nova's (report.SAME_SUBTREE_VERSION)
    assert params == {
        "resources": "DISK_GB:1,MEMORY_MB:256,VCPU:1",
        f"resources{gid}": "NET_BW_EGR_KILOBIT_PER_SEC:1000,NET_BW_IGR_KILOBIT_PER_SEC:1000",
        f"required{gid}": "CUSTOM_PHYSNET_PHYSNET0,CUSTOM_VNIC_TYPE_NORMAL",
        "same_subtree": gid,  # Neutron's same_subtree of the port, one group or more: Nova sends it as it is
    }
    # below Nova's microversion (an older Placement, or no mappings asked): the one-group same_subtree, always
    # true, is left out and the request needs no more than 1.33
    assert build_query(sr, "1.39", mappings=False) == ({k: v for k, v in params.items() if k != "same_subtree"},
                                                       "1.33")
    assert build_query(sr, "1.35")[1] == "1.34"
    assert build_query(sr, "1.33")[1] == "1.33"
    with pytest.raises(MicroversionUnsupported, match=r"string group suffixes .* needs 1.33"):
        build_query(sr, "1.32")


def test_packet_rate_port_needs_same_subtree():
    port = build_port_request(PORT, BW + PPS, PHYSNET0, "normal", "openvswitch")
    sr = ServerRequest(vcpus=1, memory_mb=256, ports=(port,))
    params, mv = build_query(sr, "1.36")
    assert mv == "1.36"
    assert params["same_subtree"] == ",".join(sorted(port.same_subtree))
    assert params["group_policy"] == "none"  # two numbered groups, Nova's default
    with pytest.raises(MicroversionUnsupported, match="same_subtree"):
        build_query(sr, "1.35")


def test_two_ports_group_policy():
    p1 = build_port_request(PORT, BW, PHYSNET0, "normal")
    p2 = build_port_request(PORT2, BW, PHYSNET0, "normal")
    assert build_query(ServerRequest(vcpus=1, ports=(p1, p2)), LATEST)[0]["group_policy"] == "none"
    params, _ = build_query(ServerRequest(vcpus=1, ports=(p1, p2), group_policy="isolate"), LATEST)
    assert params["group_policy"] == "isolate"
    assert "group_policy" not in build_query(ServerRequest(vcpus=1, ports=(p1,)), LATEST)[0]
    with pytest.raises(RequestError, match="appears in port"):
        build_query(ServerRequest(vcpus=1, ports=(p1, p1)), LATEST)
    # two ports with packet rate: one same_subtree each, repeated
    q1 = build_port_request(PORT, BW + PPS, PHYSNET0, "normal")
    q2 = build_port_request(PORT2, BW + PPS, PHYSNET0, "normal")
    params, _ = build_query(ServerRequest(vcpus=1, ports=(q1, q2)), LATEST)
    assert sorted(params["same_subtree"]) == sorted(",".join(sorted(q.same_subtree)) for q in (q1, q2))


def test_any_traits_needs_1_39_and_never_degrades():
    segs = PHYSNET0 + [Segment("vlan", "physnet1")]
    port = build_port_request(PORT, BW, segs, "normal", any_traits=True)
    sr = ServerRequest(vcpus=1, ports=(port,))
    params, mv = build_query(sr, "1.39")
    gid = port.groups[0].id
    assert mv == "1.39"
    assert params[f"required{gid}"] == ["CUSTOM_VNIC_TYPE_NORMAL",
                                        "in:CUSTOM_PHYSNET_PHYSNET0,CUSTOM_PHYSNET_PHYSNET1"]
    with pytest.raises(MicroversionUnsupported, match="any-traits"):
        build_query(sr, "1.38")
    # the caller's fallback: Neutron's request
    fallback = build_port_request(PORT, BW, segs, "normal", any_traits=False)
    assert build_query(ServerRequest(vcpus=1, ports=(fallback,)), "1.38")[1] == "1.36"


def test_flavor_rules_like_nova():
    sr = ServerRequest(vcpus=4, memory_mb=512, disk_gb=0, extra_resources={"PCPU": 2, "MEMORY_MB": 0})
    assert sr.flavor_resources() == {"PCPU": 2}
    sr = ServerRequest(vcpus=4, memory_mb=512, extra_resources={"VCPU": 1, "CUSTOM_FPGA": 1})
    assert sr.flavor_resources() == {"CUSTOM_FPGA": 1, "MEMORY_MB": 512, "VCPU": 1}
    with pytest.raises(RequestError, match="traits but no resources"):
        build_query(ServerRequest(required=("CUSTOM_GOLD",),
                                  ports=(build_port_request(PORT, BW, PHYSNET0, "normal"),)), LATEST)
    with pytest.raises(RequestError, match="no resources at all"):
        build_query(ServerRequest(), LATEST)


def test_request_wide_options():
    tree = str(uuid.uuid4())
    aggs = (str(uuid.uuid4()), str(uuid.uuid4()))
    sr = ServerRequest(vcpus=1, required=("CUSTOM_GOLD",), forbidden=("CUSTOM_SILVER",),
                       root_required=("COMPUTE_STATUS_ENABLED",), root_forbidden=("CUSTOM_X",),
                       member_of=(aggs, aggs[:1]), in_tree=tree, limit=5)
    params, mv = build_query(sr, LATEST, mappings=False)
    assert mv == "1.35"
    assert params["required"] == "CUSTOM_GOLD,!CUSTOM_SILVER"
    assert params["root_required"] == "COMPUTE_STATUS_ENABLED,!CUSTOM_X"
    assert sorted(params["member_of"]) == sorted(["in:" + ",".join(sorted(aggs)), "in:" + aggs[0]])  # Nova: in:
    assert params["in_tree"] == tree and params["limit"] == "5"
    assert_same_as_placement(sr, params, mv)
    # no flavor group: in_tree goes on every port group
    port = build_port_request(PORT, BW + PPS, PHYSNET0, "normal")
    params, _ = build_query(ServerRequest(ports=(port,), in_tree=tree), LATEST)
    assert all(params[f"in_tree{g.id}"] == tree for g in port.groups)
    with pytest.raises(RequestError, match="member_of"):
        build_query(ServerRequest(ports=(port,), member_of=(aggs,)), LATEST)


def test_zero_minimum_is_stripped_beyond_nova():
    """A zero minimum: the amount is stripped and the group kept in its same_subtree (1.36), which Placement
    accepts. Nova sends resources<group>= (empty) instead, which Placement refuses: minbw.nova refuses such a
    server (tests/unit/nova/test_scheduler.py); this is the form for requests built by hand."""
    zero = [QosRule(BW[0].id, MIN_BW, "egress", 0)]
    port = build_port_request(PORT, zero, PHYSNET0, "normal")
    assert port.groups[0].resource_dict == {"NET_BW_EGR_KILOBIT_PER_SEC": 0}  # Neutron's value
    sr = ServerRequest(vcpus=1, ports=(port,))
    params, mv = build_query(sr, LATEST)
    gid = port.groups[0].id
    assert f"resources{gid}" not in params and mv == "1.36"
    assert params["same_subtree"] == gid  # a group without resources must be in same_subtree
    assert_same_as_placement(sr, params, mv)
    legacy = PortRequest.from_neutron(port.to_legacy(), PORT)
    with pytest.raises(RequestError, match="no resources"):
        build_query(ServerRequest(vcpus=1, ports=(legacy,)), LATEST)


@pytest.mark.parametrize("kwargs, match", [
    ({"group_policy": "strict"}, "group_policy"),
    ({"limit": 0}, "limit"),
    ({"required": ("custom_gold",)}, "not a trait name"),
    ({"extra_resources": {"NET,BW": 1}}, "not a resource class"),
    ({"required": ("CUSTOM_A",), "forbidden": ("CUSTOM_A",)}, "both required and forbidden"),
    ({"in_tree": "not-a-uuid"}, "not a UUID"),
])
def test_request_errors(kwargs, match):
    with pytest.raises(RequestError, match=match):
        build_query(ServerRequest(vcpus=1, **kwargs), LATEST)


def test_too_old_placement():
    with pytest.raises(MicroversionUnsupported, match="nested providers"):
        build_query(ServerRequest(vcpus=1), "1.28")
    assert build_query(ServerRequest(vcpus=1), "1.29") == ({"resources": "VCPU:1"}, "1.29")
    assert build_query(ServerRequest(vcpus=1), "1.30", mappings=True)[1] == "1.29"


def test_microversions():
    assert microversions.parse("1.36") == (1, 36)
    assert microversions.parse("placement 1.9") == (1, 9)
    assert microversions.parse((1, 2)) == (1, 2)
    assert microversions.format((1, 39)) == "1.39"
    assert microversions.at_least("1.10", "1.9") and not microversions.at_least("1.9", "1.10")
    with pytest.raises(ValueError):
        microversions.parse("latest")


def test_from_nova_flavor():
    flavor = {"vcpus": 2, "ram": 512, "disk": 10, "OS-FLV-EXT-DATA:ephemeral": 1, "swap": 1500,
              "extra_specs": {"resources:CUSTOM_FPGA": "1", "trait:CUSTOM_GOLD": "required",
                              "trait:CUSTOM_SILVER": "forbidden", "group_policy": "isolate",
                              "hw:cpu_policy": "shared"}}
    sr = ServerRequest.from_flavor(flavor, limit=3)
    assert sr.flavor_resources() == {"CUSTOM_FPGA": 1, "DISK_GB": 13, "MEMORY_MB": 512, "VCPU": 2}
    assert (sr.required, sr.forbidden, sr.group_policy, sr.limit) == (
        ("CUSTOM_GOLD",), ("CUSTOM_SILVER",), "isolate", 3)
    assert ServerRequest.from_flavor(flavor, boot_from_volume=True).disk_gb == 3
    with pytest.raises(RequestError, match="suffixed"):
        ServerRequest.from_flavor({"extra_specs": {"resources1:VCPU": "1"}})
    with pytest.raises(RequestError, match="'required' or 'forbidden'"):
        ServerRequest.from_flavor({"extra_specs": {"trait:CUSTOM_X": "preferred"}})
