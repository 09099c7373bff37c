"""minbw.nova against Nova 34's own scheduler code: the Placement query is Nova's, string for string.

The oracle (tests/support/oracle/nova_scheduler.py) runs in the mini-cloud's venv, one process for the session:
a real ``nova.objects.RequestSpec`` for each generated server, Nova's ``request_filter.ALL_REQUEST_FILTERS``
(with its database look-ups answered from the generated aggregates, compute service versions, subnets and
segments) and ``utils.resources_from_request_spec(...).to_querystring()``.

The comparison is of the exact query string: Nova's ``ResourceRequest.to_querystring()`` (which sorts the
(key, value) pairs and urlencodes them) against ``query_string(build_query(query(...).request, ...))``, equal
as strings, nothing normalised; also the microversion (Nova's ``SAME_SUBTREE_VERSION``), the second query Nova
makes for a pinned server, and which filters ran (each filter's return value). Where Nova refuses the input
(an exception), or sends a query that Placement's own parser refuses (400), minbw must refuse too (MinbwError).

Without the mini-cloud's venv (``make cloud-install``) the oracle tests skip, unless CI is set: then they fail.
"""
from __future__ import annotations

import uuid

import os_traits
import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings, strategies as st

from minbw.errors import ConfigError, MinbwError, NoValidHost, RequestError, RequestFilterFailed
from minbw.model.requests import RequestGroup
from minbw.neutron.port_request import Segment, build_port_request
from minbw.neutron.qos import MIN_BW, MIN_PPS, QosRule
from minbw.nova import fields
from minbw.nova.inputs import CloudFacts, ComputeNode, Server, Subnet
from minbw.nova.options import OPTIONS, SchedulerOptions
from minbw.nova.request_filter import ALL_REQUEST_FILTERS
from minbw.nova.scheduler import MICROVERSION, query
from minbw.placement.query import build_query, query_string
from tests.support.oracle.placement_parser import refusal

LATEST = "1.39"
# deterministic and bounded (about 20 s on 2 cores for the generated servers)
NOVA = settings(max_examples=500, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])



# --- the case: JSON for the oracle, minbw's inputs from the same JSON ---------------------------------------

def minbw_inputs(case: dict) -> tuple[Server, SchedulerOptions, CloudFacts]:
    f = case.get("facts", {})
    server = Server(flavor=case["flavor"], image=case.get("image"), ports=case.get("ports", []),
                    availability_zone=case.get("availability_zone"), project_id=case.get("project_id"),
                    boot_from_volume=case.get("is_bfv", False), scheduler_hints=case.get("scheduler_hints", {}),
                    host=case.get("host"), node=case.get("node"),
                    device_profile_groups=[RequestGroup(g["id"], g["resources"], tuple(g.get("required", ())))
                                           for g in case.get("device_profile_groups", [])])
    facts = CloudFacts(f.get("owner_nova", True), aggregates=f.get("aggregates", []),
                       subnets=[Subnet(**s) for s in f.get("subnets", [])],
                       segment_aggregates=f.get("segment_aggregates", {}),
                       compute_nodes=[ComputeNode(**n) for n in f.get("compute_nodes", [])])
    return server, SchedulerOptions.parse(case.get("options", {})), facts


def ours(case: dict):
    """(query string, microversion, fallback query string, ran) as minbw builds them, or the MinbwError."""
    try:
        nq = query(*minbw_inputs(case))
        params, mv = build_query(nq.request, LATEST)
        fallback = query_string(build_query(nq.fallback, LATEST)[0]) if nq.fallback else None
        return query_string(params), mv, fallback, {f.name: f.ran for f in nq.filters}
    except MinbwError as e:
        return e


def check(nova, case: dict):
    """minbw answers as Nova does for ``case``; returns Nova's answer."""
    theirs = nova.ask([case])[0]
    mine = ours(case)
    placement_says = "" if "error" in theirs else refusal(theirs["query"], MICROVERSION)
    # --hypothesis-show-statistics: how many generated servers get a query (about half) and why the others not
    if currently_in_test_context():
        event(f"nova refuses: {theirs['error']['class']}" if "error" in theirs else
              f"placement refuses: {placement_says.split('.')[0]}" if placement_says else "query")
    if "error" in theirs:
        assert isinstance(mine, MinbwError), f"Nova refuses ({theirs['error']}) but minbw sends {mine}"
        return theirs
    if placement_says:
        assert isinstance(mine, MinbwError), (f"Nova sends {theirs['query']}, which Placement refuses "
                                              f"({placement_says}), but minbw sends {mine}")
        return theirs
    assert not isinstance(mine, MinbwError), f"Nova sends {theirs['query']}, minbw refuses: {mine}"
    query_s, mv, fallback, ran = mine
    assert query_s == theirs["query"]
    assert mv == MICROVERSION
    if theirs["fallback"] and not refusal(theirs["fallback"], MICROVERSION):
        assert fallback == theirs["fallback"]
    else:
        assert fallback is None
    assert ran == theirs["ran"]
    return theirs


# --- strategies --------------------------------------------------------------------------------------------

AGGS = [str(uuid.UUID(int=i, version=4)) for i in range(1, 7)]
TRAITS = ["CUSTOM_GOLD", "CUSTOM_SILVER", "HW_CPU_X86_AVX2", "STORAGE_DISK_SSD", "CUSTOM_PHYSNET_PHYSNET0"]
RCS = ["VCPU", "PCPU", "MEMORY_MB", "DISK_GB", "CUSTOM_X", "CUSTOM_X1", "CUSTOM_FPGA", "FOO",
       "NET_BW_EGR_KILOBIT_PER_SEC"]
AMOUNTS = ["0", "1", "1", "2", "3", "16"]
SUFFIXES = ["1", "2", "_a", "foo-bar", "s"]
HW_SPECS = {
    "hw:cpu_policy": ["dedicated", "shared", "mixed", "bogus"],
    "hw:cpu_thread_policy": ["prefer", "isolate", "require"],
    "hw:emulator_threads_policy": ["share", "isolate"],
    "hw:cpu_dedicated_mask": ["0", "^0", "0-1", "7"],
    "hw:cpu_realtime": ["yes", "no"],
    "hw:cpu_realtime_mask": ["^0", "0"],
    "hw:virtio_packed_ring": ["true", "false", "yes", "maybe"],
    "hw:ephemeral_encryption": ["true", "false"],
    "hw:ephemeral_encryption_format": ["luks", "plain", "bogus"],
    "hw:sound_model": ["virtio", "ac97", "bogus"],
    "hw:tpm_version": ["1.2", "2.0", "3"],
    "hw:tpm_model": ["tpm-tis", "tpm-crb"],
    "hw:tpm_secret_security": ["user", "host", "deployment", "bogus"],
    "os:secure_boot": ["required", "disabled", "bogus"],
    "hw:maxphysaddr_mode": ["passthrough", "emulate"],
    "hw:pci_numa_affinity_policy": ["socket", "required", "bogus"],
    "hw:pmem": ["SMALL,LARGE,SMALL", " ,x-y"],
    "hw:mem_encryption": ["false", "no"],
}
IMAGE_PROPS = {
    "hw_cdrom_bus": ["ide", "sata", "virtio"], "hw_disk_bus": ["virtio", "scsi", "bogus"],
    "hw_video_model": ["virtio", "qxl", "none"], "hw_vif_model": ["virtio", "e1000", "spapr-vlan"],
    "hw_architecture": ["x86_64", "amd64", "i386", "aarch64", "armv7l", "bogus"],
    "architecture": ["x86_64", "ppc64le"],
    "hw_emulation_architecture": ["x86_64", "aarch64", "i686"], "hw_viommu_model": ["intel", "virtio"],
    "hw_virtio_packed_ring": ["true", "false"], "hw_ephemeral_encryption": ["true", "false"],
    "hw_ephemeral_encryption_format": ["luks", "plain"], "hw_sound_model": ["virtio", "usb"],
    "hw_tpm_version": ["2.0", "1.2"], "hw_tpm_model": ["tpm-crb", "tpm-tis"],
    "os_secure_boot": ["required", "optional"], "hw_maxphysaddr_mode": ["emulate"],
    "hw_firmware_type": ["uefi", "bios"], "hw_firmware_stateless": ["true", "false"],
    "hw_pci_numa_affinity_policy": ["socket", "legacy"], "hw_cpu_policy": ["dedicated", "shared"],
    "hw_cpu_thread_policy": ["isolate", "prefer"], "hw_cpu_realtime_mask": ["^1"],
}
PORT_VNICS = ["normal", "direct", "macvtap", "direct-physical", "baremetal", "virtio-forwarder", "vdpa",
              "remote-managed", "smart-nic"]
SUBNETS = [{"id": "s1", "network_id": "net1", "segment_id": "seg1"},
           {"id": "s2", "network_id": "net1", "segment_id": "seg2"},
           {"id": "s3", "network_id": "net2", "segment_id": None},
           {"id": "s4", "network_id": "net3", "segment_id": "seg3"},
           {"id": "s5", "network_id": "net1", "segment_id": "seg1"}]
NODES = [{"host": "h1", "node": "n1", "uuid": AGGS[0]}, {"host": "h1", "node": "n2", "uuid": AGGS[1]},
         {"host": "h2", "node": "n3", "uuid": AGGS[2]}]


@st.composite
def extra_specs(draw) -> dict:
    """resources:/trait: specs, granular groups (numbered and string-suffixed), group_policy; now and then what
    Nova ignores (an unknown class, a bad amount, a bad trait value or policy) or what Placement refuses (a
    group with traits only or zero amounts only, two groups without a policy)."""
    specs = {}
    for _ in range(draw(st.integers(0, 3))):
        specs[f"resources:{draw(st.sampled_from(RCS))}"] = draw(st.sampled_from(AMOUNTS))
    for _ in range(draw(st.integers(0, 2))):
        specs[f"trait:{draw(st.sampled_from(TRAITS))}"] = draw(st.sampled_from(["required", "forbidden"]))
    suffixes = draw(st.lists(st.sampled_from(SUFFIXES), max_size=2, unique=True))
    for suffix in suffixes:
        specs[f"resources{suffix}:{draw(st.sampled_from(RCS))}"] = draw(st.sampled_from(["1", "2", "4"]))
        if draw(st.booleans()):
            specs[f"trait{suffix}:{draw(st.sampled_from(TRAITS))}"] = draw(st.sampled_from(["required", "forbidden"]))
    if len(suffixes) > 1 or draw(st.booleans()):
        specs["group_policy"] = draw(st.sampled_from(["none", "isolate"] * 4 + ["strict", None]))
    if draw(st.integers(0, 5)) == 0:   # what Nova ignores, or sends and Placement refuses
        suffix = draw(st.sampled_from(["", "", "1", "9"]))
        key, value = draw(st.sampled_from([
            (f"resources{suffix}:FOO", "1"), (f"resources{suffix}:VCPU", "-1"), (f"resources{suffix}:VCPU", "abc"),
            (f"resources{suffix}:CUSTOM_X", "0"), (f"trait{suffix}:CUSTOM_GOLD", "preferred"),
            (f"trait{suffix}:CUSTOM_GOLD", "required"), (f"traits:CUSTOM_SILVER", "required")]))
        specs[key] = value
    specs = {k: v for k, v in specs.items() if v is not None}
    for key in draw(st.lists(st.sampled_from(sorted(HW_SPECS)), max_size=3, unique=True)):
        specs[key] = draw(st.sampled_from(weighted(HW_SPECS[key])))
    return specs


def weighted(values: list[str]) -> list[str]:
    """Valid values three times as often as the one Nova refuses ("bogus")."""
    return [v for v in values if v != "bogus"] * 3 + [v for v in values if v == "bogus"]


@st.composite
def images(draw) -> dict:
    props = {}
    for key in draw(st.lists(st.sampled_from(sorted(IMAGE_PROPS)), max_size=3, unique=True)):
        props[key] = draw(st.sampled_from(weighted(IMAGE_PROPS[key])))
    for t in draw(st.lists(st.sampled_from(TRAITS), max_size=2, unique=True)):
        props[f"trait:{t}"] = draw(st.sampled_from(["required", "required", "no"]))
    return {"name": "img", "disk_format": draw(st.sampled_from(["qcow2", "raw", "iso", "", "bogus"])),
            "properties": props}


@st.composite
def ports(draw, n: int) -> list[dict]:
    out = []
    for i in range(n):
        pid = str(draw(st.uuids()))
        kinds = draw(st.sampled_from([[], [(MIN_BW, "egress")], [(MIN_BW, "ingress"), (MIN_BW, "egress")],
                                      [(MIN_PPS, "any")], [(MIN_BW, "egress"), (MIN_PPS, "egress")]]))
        rules = [QosRule(str(draw(st.uuids())), t, d, draw(st.sampled_from([0] + [1000, 2500] * 12)))
                 for t, d in kinds]
        vnic = draw(st.sampled_from(PORT_VNICS))
        pr = build_port_request(pid, rules, [Segment("vlan", "physnet0")], vnic) if rules else None
        rr = pr.to_neutron() if pr else None
        if pr and len(pr.groups) == 1 and all(a for _, a in pr.groups[0].resources) and draw(st.booleans()):
            rr = pr.to_legacy()  # an older Neutron's format (Nova then names the group after the port)
        net = draw(st.sampled_from(["net1", "net2", "net3"]))
        fixed = draw(st.sampled_from([[], [s["id"] for s in SUBNETS if s["network_id"] == net][:1]]))
        out.append({"id": pid, "binding:vnic_type": vnic, "resource_request": rr, "network_id": net,
                    "fixed_ips": [{"subnet_id": s} for s in fixed]})
    return out


@st.composite
def aggregates(draw) -> list[dict]:
    out = []
    for agg in draw(st.lists(st.sampled_from(AGGS), max_size=4, unique=True)):
        meta = {}
        for key, value in draw(st.lists(st.sampled_from([
                ("availability_zone", "az1"), ("availability_zone", "az2"), ("filter_tenant_id", "p1"),
                ("filter_tenant_id", "p2"), ("filter_tenant_id:2", "p1"), ("other", "p1"),
                ("trait:CUSTOM_GOLD", "required"), ("trait:CUSTOM_SILVER", "required"),
                ("trait:HW_CPU_X86_AVX2", "optional"), ("TRAIT:CUSTOM_GOLD", "required")]), max_size=3)):
            meta[key] = value
        out.append({"uuid": agg, "name": f"agg-{agg[-2:]}", "metadata": meta})
    return out


@st.composite
def cases(draw) -> dict:
    specs = draw(extra_specs())
    case = {
        "flavor": {"vcpus": draw(st.integers(1, 4)), "ram": draw(st.sampled_from([1, 512, 2048])),
                   "disk": draw(st.sampled_from([0, 1, 10])),
                   "OS-FLV-EXT-DATA:ephemeral": draw(st.sampled_from([0, 0, 2])),
                   "swap": draw(st.sampled_from(["", 0, 512, 1500])), "extra_specs": specs, "name": "f"},
        "image": draw(images()),
        "ports": draw(ports(draw(st.sampled_from([0, 1, 1, 2, 3])))),
        "availability_zone": draw(st.sampled_from([None, "az1", "az2"])),
        "project_id": draw(st.sampled_from(["p1", "p2"])),
        "is_bfv": draw(st.booleans()),
        "scheduler_hints": {h: "x" for h in draw(st.lists(st.sampled_from(
            ["group", "same_host", "different_host", "build_near_host_ip"]), max_size=1))},
        "options": {f"{OPTIONS[name][0]}.{name}": draw(st.booleans()) for name in OPTIONS
                    if OPTIONS[name][1] is bool and name not in ("pci_in_placement",
                                                                 "placement_aggregate_required_for_tenants")},
        "facts": {"owner_nova": draw(st.booleans()), "aggregates": draw(aggregates()), "subnets": SUBNETS,
                  "segment_aggregates": draw(st.sampled_from([
                      {"seg1": [AGGS[3]], "seg2": [AGGS[4], AGGS[3]], "seg3": [AGGS[5]]}] * 4 + [
                      {"seg1": [AGGS[3]], "seg2": [AGGS[4]]}])),
                  "compute_nodes": NODES},
    }
    case["options"]["scheduler.max_placement_results"] = draw(st.sampled_from([1000, 1000, 50, None]))
    case["options"]["scheduler.placement_aggregate_required_for_tenants"] = draw(st.integers(0, 9)) == 0
    if draw(st.integers(0, 7)) == 0:
        case["host"], case["node"] = draw(st.sampled_from([("h1", None), ("h1", "n2"), (None, "n3"), ("h9", None)]))
    if specs.get("hw:cpu_realtime") is None and draw(st.integers(0, 9)) == 0:
        specs["accel:device_profile"] = "dp"
        case["device_profile_groups"] = [{"id": "dp0", "resources": {"FPGA": 1}, "required": ["CUSTOM_FPGA_X"]}]
    return case


@NOVA
@given(case=cases())
def test_the_query_is_novas(nova, case):
    """Generated servers: flavors with every extra-spec form, images, 0-3 QoS ports of each vnic type (both
    Neutron formats), AZs, aggregates, each option on and off, OWNER_NOVA reported or not."""
    check(nova, case)


# --- examples ----------------------------------------------------------------------------------------------

PORT = "9f9d8e59-2b7c-4e4f-8a0e-6c1f7a3b5d21"
BW = QosRule("2a4c1f8e-0d6b-4b8e-9f3a-5c7d9e1b3a50", MIN_BW, "egress", 1000)


def qos_port(vnic="normal", rules=(BW,), pid=PORT) -> dict:
    pr = build_port_request(pid, rules, [Segment("vlan", "physnet0")], vnic)
    return {"id": pid, "binding:vnic_type": vnic, "resource_request": pr.to_neutron(), "network_id": "net1",
            "fixed_ips": []}


def base_case(**kw) -> dict:
    case = {"flavor": {"vcpus": 1, "ram": 512, "disk": 1, "swap": "", "extra_specs": {}},
            "image": {"name": "cirros", "disk_format": "qcow2", "properties": {}},
            "ports": [qos_port()], "project_id": "p1", "options": {},
            "facts": {"owner_nova": True, "aggregates": []}}
    case.update(kw)
    return case


def nova_query(case: dict):
    nq = query(*minbw_inputs(case))
    return nq, query_string(build_query(nq.request, LATEST)[0])


def test_the_issue_disabled_computes_and_owner_nova(nova):
    """Issue 27: COMPUTE_STATUS_DISABLED forbidden on the root, always; root_required=OWNER_NOVA once every
    nova-compute reports it (and not before)."""
    case = base_case()
    theirs = check(nova, case)
    nq, q = nova_query(case)
    assert "root_required=OWNER_NOVA%2C%21COMPUTE_STATUS_DISABLED" in theirs["query"]
    assert "compute_status_filter: root_forbidden COMPUTE_STATUS_DISABLED (always)" in nq.explain()
    assert any(line.startswith("owner_nova_filter: root_required OWNER_NOVA") for line in nq.explain())
    assert nq.request.limit == 1000 and "limit=1000" in q
    older = base_case(facts={"owner_nova": False, "aggregates": []})
    theirs = check(nova, older)
    assert "root_required=%21COMPUTE_STATUS_DISABLED" in theirs["query"]
    assert not theirs["ran"]["owner_nova_filter"]


def test_an_availability_zone_is_its_aggregates(nova):
    aggs = [{"uuid": AGGS[0], "metadata": {"availability_zone": "az1"}},
            {"uuid": AGGS[1], "metadata": {"availability_zone": "az1", "other": "x"}},
            {"uuid": AGGS[2], "metadata": {"availability_zone": "az2"}}]
    case = base_case(availability_zone="az1", facts={"owner_nova": True, "aggregates": aggs})
    theirs = check(nova, case)
    assert f"member_of=in%3A{AGGS[0]}%2C{AGGS[1]}" in theirs["query"]
    nq, _ = nova_query(case)
    assert nq.request.member_of == ((AGGS[0], AGGS[1]),)
    assert str(nq.applied[0]).startswith(f"map_az_to_placement_aggregate: member_of in:{AGGS[0]},{AGGS[1]}")
    # a zone no aggregate names: no member_of (Nova 34 has no option for this filter)
    assert "member_of" not in check(nova, base_case(availability_zone="nowhere"))["query"]


def test_tenant_isolation(nova):
    aggs = [{"uuid": AGGS[0], "metadata": {"filter_tenant_id": "p1"}},
            {"uuid": AGGS[1], "metadata": {"filter_tenant_id:7": "p1", "x": "p2"}},
            {"uuid": AGGS[2], "metadata": {"filter_tenant_id": "p2", "other": "p1"}}]
    on = {"scheduler.limit_tenants_to_placement_aggregate": True}
    theirs = check(nova, base_case(options=on, facts={"owner_nova": True, "aggregates": aggs}))
    assert f"member_of=in%3A{AGGS[0]}%2C{AGGS[1]}" in theirs["query"]
    # a project with no aggregate: any host, or no valid host when every tenant must have one
    lone = base_case(project_id="p3", options=on, facts={"owner_nova": True, "aggregates": aggs})
    assert "member_of" not in check(nova, lone)["query"]
    lone["options"] = {**on, "scheduler.placement_aggregate_required_for_tenants": True}
    assert check(nova, lone)["error"]["class"] == "RequestFilterFailed"
    with pytest.raises(RequestFilterFailed, match="require_tenant_aggregate .* No hosts available for tenant"):
        query(*minbw_inputs(lone))


def test_image_type_support(nova):
    on = {"scheduler.query_placement_for_image_type_support": True}
    assert "root_required=COMPUTE_IMAGE_TYPE_QCOW2" in check(nova, base_case(options=on))["query"]
    assert "COMPUTE_IMAGE_TYPE" not in check(nova, base_case(options=on, is_bfv=True))["query"]


def test_isolated_aggregates(nova):
    aggs = [{"uuid": AGGS[0], "metadata": {"trait:CUSTOM_GOLD": "required"}},
            {"uuid": AGGS[1], "metadata": {"trait:CUSTOM_SILVER": "required"}}]
    case = base_case(options={"scheduler.enable_isolated_aggregate_filtering": True},
                     facts={"owner_nova": True, "aggregates": aggs})
    case["flavor"]["extra_specs"] = {"trait:CUSTOM_GOLD": "required"}
    assert f"member_of=%21in%3A{AGGS[1]}" in check(nova, case)["query"]


def test_image_metadata_prefilter(nova):
    case = base_case(options={"scheduler.image_metadata_prefilter": True})
    case["image"]["properties"] = {"hw_disk_bus": "virtio", "hw_architecture": "amd64", "hw_vif_model": "e1000"}
    theirs = check(nova, case)
    assert "COMPUTE_NET_VIF_MODEL_E1000%2CCOMPUTE_STORAGE_BUS_VIRTIO%2CHW_ARCH_X86_64" in theirs["query"]
    # a property whose trait os-traits lacks: Nova adds none of them
    case["image"]["properties"]["hw_viommu_model"] = "intel"
    theirs = check(nova, case)
    assert "HW_ARCH" not in theirs["query"] and not theirs["ran"]["transform_image_metadata"]


def test_routed_networks(nova):
    facts = {"owner_nova": True, "aggregates": [], "subnets": SUBNETS,
             "segment_aggregates": {"seg1": [AGGS[3]], "seg2": [AGGS[4]]}}
    case = base_case(options={"scheduler.query_placement_for_routed_network_aggregates": True}, facts=facts)
    assert f"member_of=in%3A{AGGS[3]}%2C{AGGS[3]}%2C{AGGS[4]}" in check(nova, case)["query"]  # s1, s2, s5
    case["ports"][0]["fixed_ips"] = [{"subnet_id": "s2"}]
    assert f"member_of=in%3A{AGGS[4]}" in check(nova, case)["query"]
    case["ports"][0]["network_id"], case["ports"][0]["fixed_ips"] = "net3", []   # seg3: no aggregate
    assert check(nova, case)["error"]["class"] == "RequestFilterFailed"


def test_property_gated_filters(nova):
    for specs, trait in [({"hw:virtio_packed_ring": "true"}, "COMPUTE_NET_VIRTIO_PACKED"),
                         ({"hw:ephemeral_encryption": "yes", "hw:ephemeral_encryption_format": "luks"},
                          "COMPUTE_EPHEMERAL_ENCRYPTION_LUKS"),
                         ({"hw:sound_model": "virtio"}, "COMPUTE_SOUND_MODEL_VIRTIO"),
                         ({"hw:tpm_version": "2.0", "hw:tpm_secret_security": "host"},
                          "COMPUTE_SECURITY_TPM_SECRET_SECURITY_HOST")]:
        case = base_case()
        case["flavor"]["extra_specs"] = specs
        assert trait in check(nova, case)["query"]
    remote = base_case(ports=[qos_port("remote-managed")])
    assert "COMPUTE_REMOTE_MANAGED_PORTS" in check(nova, remote)["query"]
    accel = base_case(device_profile_groups=[{"id": "dp0", "resources": {"FPGA": 1}}])
    accel["flavor"]["extra_specs"] = {"accel:device_profile": "dp"}
    assert "COMPUTE_ACCELERATORS" in check(nova, accel)["query"]


def test_granular_flavor_groups_and_group_policy(nova):
    case = base_case()
    case["flavor"]["extra_specs"] = {"resources1:CUSTOM_X": "1", "trait1:CUSTOM_GOLD": "required",
                                     "resources_fpga:CUSTOM_FPGA": "2", "group_policy": "isolate"}
    assert "group_policy=isolate" in check(nova, case)["query"]
    # two flavor groups and no policy: Nova sends none and Placement refuses; minbw says why
    del case["flavor"]["extra_specs"]["group_policy"]
    theirs = check(nova, case)
    assert "group_policy" not in theirs["query"]
    with pytest.raises(RequestError, match="group_policy"):
        nova_query(case)
    # one flavor group and a port: Nova defaults to none
    case["flavor"]["extra_specs"] = {"resources1:CUSTOM_X": "1"}
    assert "group_policy=none" in check(nova, case)["query"]


def test_resources_are_sorted_as_nova_sorts_them(nova):
    """Nova sorts the "CLASS:AMOUNT" strings: CUSTOM_X1:1 before CUSTOM_X:1 (a digit sorts before ':')."""
    case = base_case()
    case["flavor"]["extra_specs"] = {"resources:CUSTOM_X": "1", "resources:CUSTOM_X1": "1"}
    assert "resources=CUSTOM_X1%3A1%2CCUSTOM_X%3A1%2CDISK_GB" in check(nova, case)["query"]


def test_a_zero_minimum_is_refused_as_placement_refuses_novas_query(nova):
    case = base_case(ports=[qos_port(rules=(QosRule(BW.id, MIN_BW, "egress", 0),))])
    theirs = check(nova, case)
    assert refusal(theirs["query"], MICROVERSION)  # Nova sends resources<group>= (empty)
    with pytest.raises(RequestError, match="Placement refuses"):
        nova_query(case)


def test_pinned_servers_get_novas_second_query(nova):
    case = base_case()
    case["flavor"]["extra_specs"] = {"hw:cpu_policy": "dedicated", "hw:emulator_threads_policy": "isolate"}
    theirs = check(nova, case)
    assert "PCPU%3A2" in theirs["query"] and "VCPU%3A1" in theirs["fallback"]
    case["options"] = {"workarounds.disable_fallback_pcpu_query": True}
    assert check(nova, case)["fallback"] is None


def test_requested_host(nova):
    case = base_case(host="h1", node="n2", facts={"owner_nova": True, "aggregates": [], "compute_nodes": NODES})
    assert f"in_tree={AGGS[1]}" in check(nova, case)["query"]
    case["node"] = None   # two nodes: no in_tree, no limit
    assert "limit" not in check(nova, case)["query"]
    case["host"] = "h9"
    assert check(nova, case)["error"]["class"] == "NoValidHost"
    with pytest.raises(NoValidHost, match="No such host"):
        nova_query(case)


def test_what_minbw_does_not_reproduce_is_refused():
    facts = CloudFacts(True)
    with pytest.raises(RequestError, match="memory encryption"):
        query(Server(flavor={"vcpus": 1, "ram": 1, "extra_specs": {"hw:mem_encryption": "true"}}), None, facts)
    with pytest.raises(RequestError, match="Cyborg"):
        query(Server(flavor={"vcpus": 1, "ram": 1, "extra_specs": {"accel:device_profile": "dp"}}), None, facts)
    with pytest.raises(RequestError, match="Cyborg"):
        query(Server(flavor={"vcpus": 1, "ram": 1}, ports=[qos_port("accelerator-direct")]), None, facts)
    with pytest.raises(RequestError, match="pci_passthrough:alias"):
        query(Server(flavor={"vcpus": 1, "ram": 1, "extra_specs": {"pci_passthrough:alias": "a:1"}}),
              SchedulerOptions(pci_in_placement=True), facts)
    with pytest.raises(RequestError, match="AZ:HOST"):
        Server(flavor={"vcpus": 1, "ram": 1}, availability_zone="nova:host1")


# --- options -----------------------------------------------------------------------------------------------

def test_options_by_novas_names():
    opts = SchedulerOptions.parse(["scheduler.image_metadata_prefilter=Yes", "scheduler.max_placement_results=5",
                                   "workarounds.disable_fallback_pcpu_query=on"])
    assert opts.image_metadata_prefilter and opts.max_placement_results == 5 and opts.disable_fallback_pcpu_query
    assert opts.changed() == {"scheduler.image_metadata_prefilter": True, "scheduler.max_placement_results": 5,
                              "workarounds.disable_fallback_pcpu_query": True}
    with pytest.raises(ConfigError, match=r"scheduler.imagemetadata_prefilter.*Fix: give one of .*"
                                          r"scheduler.image_metadata_prefilter"):
        SchedulerOptions.parse(["scheduler.imagemetadata_prefilter=true"])
    with pytest.raises(ConfigError, match=r"\[filter_scheduler\] section.*filter_scheduler.pci_in_placement=true"):
        SchedulerOptions.parse(["scheduler.pci_in_placement=true"])
    with pytest.raises(ConfigError, match="not a boolean"):
        SchedulerOptions.parse(["scheduler.image_metadata_prefilter=sure"])
    with pytest.raises(ConfigError, match="minimum 1"):
        SchedulerOptions.parse(["scheduler.max_placement_results=0"])
    with pytest.raises(ConfigError, match="section.option=value"):
        SchedulerOptions.parse(["image_metadata_prefilter"])


CONF_LINES = st.sampled_from([
    "[scheduler]", "[filter_scheduler]", "[workarounds]", "[DEFAULT]", "[api]",
    "max_placement_results = 7", "max_placement_results =", "max_placement_results = 0",
    "max_placement_results = x", "image_metadata_prefilter = True", "image_metadata_prefilter = off",
    "image_metadata_prefilter = maybe", "limit_tenants_to_placement_aggregate = yes",
    "enable_isolated_aggregate_filtering = 1", "pci_in_placement = true", "disable_fallback_pcpu_query = True",
    "query_placement_for_routed_network_aggregates=true", "workers = 4", "# a comment",
])


@settings(max_examples=150, deadline=None, derandomize=True)
@given(lines=st.lists(CONF_LINES, max_size=8))
def test_nova_conf_is_read_as_oslo_config_reads_it(nova, lines):
    text = "\n".join(lines) + "\n"
    theirs = nova.ask([{"op": "conf", "text": text}])[0]
    try:
        mine = SchedulerOptions.from_nova_conf(text).to_dict()
    except ConfigError as e:
        mine = e
    if "error" in theirs:
        assert isinstance(mine, ConfigError), f"oslo.config refuses ({theirs['error']}), minbw reads {mine}"
    else:
        assert mine == theirs["values"]


# --- what minbw copies from Nova ---------------------------------------------------------------------------

def test_novas_constants(nova):
    theirs = nova.ask([{"op": "facts"}])[0]
    assert [f.__name__ for f in ALL_REQUEST_FILTERS] == theirs["filters"]
    assert SchedulerOptions().to_dict() == theirs["defaults"]
    assert MICROVERSION == theirs["microversion"]
    enums = theirs["enums"]
    assert (fields.DISK_BUS, fields.VIDEO_MODEL, fields.VIF_MODEL, fields.ARCHITECTURE, fields.VIOMMU_MODEL,
            fields.SOUND_MODEL, fields.TPM_VERSION, fields.TPM_MODEL, fields.EPHEMERAL_ENCRYPTION_FORMAT,
            fields.SECURE_BOOT, fields.MAXPHYSADDR_MODE, fields.PCI_NUMA_AFFINITY_POLICY, fields.CPU_POLICY,
            fields.CPU_THREAD_POLICY, fields.EMULATOR_THREADS_POLICY, fields.FIRMWARE_TYPE) == tuple(
        tuple(enums[n]) for n in ("DiskBus", "VideoModel", "VIFModel", "Architecture", "VIOMMUModel",
                                  "SoundModelType", "TPMVersion", "TPMModel", "BlockDeviceEncryptionFormatType",
                                  "SecureBoot", "MaxPhyAddrMode", "PCINUMAAffinityPolicy", "CPUAllocationPolicy",
                                  "CPUThreadAllocationPolicy", "CPUEmulatorThreadsPolicy", "FirmwareType"))
    assert sorted(fields.VNIC_TYPES) == sorted(theirs["vnic_types"])
    from minbw.nova import request_filter, resource_request
    assert request_filter.MIN_COMPUTE_VERSION_OWNER_TRAIT == theirs["min_compute_version_owner_trait"]
    assert request_filter.TENANT_METADATA_KEY == theirs["tenant_metadata_key"]
    assert resource_request.XS_KEYPAT.pattern == theirs["xs_keypat"]
    assert fields.COMPUTED_TRAITS == {t for ts in theirs["traits"].values() for t in ts}
    assert fields.NAMED_TRAITS <= set(theirs["all_traits"])


def test_the_traits_are_os_traits():
    """Without the oracle: the copied trait families and names against os-traits in this venv."""
    assert fields.COMPUTED_TRAITS == {t for p in fields.COMPUTED_TRAIT_PREFIXES for t in os_traits.get_traits(p)}
    assert all(hasattr(os_traits, t) for t in fields.NAMED_TRAITS)


@pytest.mark.filterwarnings("ignore:The _compute_attributes method is deprecated")  # openstacksdk's to_dict()
def test_the_inputs_read_what_openstacksdk_returns():
    """A use case passes conn.compute.get_flavor(...), conn.image.get_image(...), conn.network.get_port(...)
    as to_dict(): openstacksdk's names (ephemeral, needs_secure_boot, binding_vnic_type) are Nova's again."""
    from openstack.compute.v2.flavor import Flavor as SdkFlavor
    from openstack.image.v2.image import Image as SdkImage
    from openstack.network.v2.port import Port as SdkPort
    flavor = SdkFlavor(id="f1", name="m1", vcpus=2, ram=512, disk=1, swap="", extra_specs={"hw:sound_model": "virtio"},
                       **{"OS-FLV-EXT-DATA:ephemeral": 3})
    image = SdkImage(id="i1", name="cirros", disk_format="qcow2", os_secure_boot="required",
                     **{"trait:CUSTOM_GOLD": "required"})
    port = SdkPort(**qos_port("direct"))
    server = Server(flavor=flavor.to_dict(), image=image.to_dict(), ports=[port.to_dict()])
    assert (server.flavor.ephemeral, server.flavor.swap, server.ports[0].vnic_type) == (3, 0, "direct")
    assert server.image.props["os_secure_boot"] == "required"
    nq = query(server, None, CloudFacts(True))
    assert nq.request.flavor_resources() == {"DISK_GB": 4, "MEMORY_MB": 512, "VCPU": 2}
    assert set(nq.request.required) == {"CUSTOM_GOLD", "COMPUTE_SECURITY_UEFI_SECURE_BOOT"}
    assert "COMPUTE_SOUND_MODEL_VIRTIO" in nq.request.root_required
