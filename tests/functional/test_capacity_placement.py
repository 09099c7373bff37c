"""minbw capacity show against Placement's own answer: count, then claim servers of that shape one by one
(new consumers, ops.claims.claim) until Placement has no candidate, and compare per host."""
from __future__ import annotations

import collections
import json
import sys
import uuid

import pytest

from minbw.errors import InvalidInput, NoValidHost
from minbw.model.requests import ServerRequest
from minbw.neutron.agentconf import load_agent_ini
from minbw.neutron.provider_tree import desired_state
from minbw.ops import claims, sync
from minbw.neutron.port_request import QosPort
from minbw.reports.capacity.request import CapacityRequest
from minbw.usecases.capacity import capacity_report
from minbw.reports.capacity.request import qos_port as port_of
from tests.conftest import MINBW
from tests.support.compute_roots import compute_root
from tests.support import cli_forks

FLAVOR = {"VCPU": 1, "MEMORY_MB": 256, "DISK_GB": 1}



def qos_port(index, rules, physnet=None, **kw):
    """A port given by its QoS rules (module keys), as capacity builds it."""
    return port_of(index, QosPort.from_dict({"qos_rules": rules, "physical_network": physnet, **kw}, f"port {index}"))

def host(api, name, ovs="", sriov="", vcpu=64):
    """A compute node root (as nova-compute makes it) and its agents' providers (our sync)."""
    root = compute_root(api, name, {"VCPU": {"total": vcpu}, "MEMORY_MB": {"total": 65536}, "DISK_GB": {"total": 1000}})
    texts = [t for t in (ovs and "[ovs]\n" + ovs, sriov and "[sriov_nic]\n" + sriov) if t]
    sync.sync_providers(api, desired_state([load_agent_ini(t, source="agent.ini", host=name) for t in texts]))
    return root


def bw(kbps=1000, ingress=None, pps=None):
    rules = [{"type": "minimum_bandwidth", "direction": "egress", "min_kbps": kbps},
             {"type": "minimum_bandwidth", "direction": "ingress", "min_kbps": kbps if ingress is None else ingress}]
    if pps:
        rules.append({"type": "minimum_packet_rate", "direction": "any", "min_kpps": pps})
    return rules


def shape(*ports, flavor=FLAVOR):
    """ports: (rules, qos_port keyword arguments)."""
    built = [qos_port(i, rules, **kw) for i, (rules, kw) in enumerate(ports)]
    return CapacityRequest(ServerRequest(extra_resources=flavor, ports=tuple(p for p, _ in built)),
                           frozenset().union(*(o for _, o in built)) if built else frozenset())


def claim_until_full(api, server: ServerRequest, limit=200):
    """Claim servers of ``server``'s shape until Placement has no candidate: {host uuid: count}, consumers."""
    per_host, consumers = collections.Counter(), []
    for _ in range(limit):
        try:
            c = claims.claim(api, str(uuid.uuid4()), server, project_id="p", user_id="u", max_hosts=10,
                             diagnose_on_failure=False)
        except NoValidHost:
            return per_host, consumers
        per_host[c.host] += 1
        consumers.append(c.consumer)
    raise AssertionError(f"still claiming after {limit} servers")


def free_all(api, consumers):
    for c in consumers:
        claims.free_allocations(api, c)


def counts(report, physnet=None):
    if physnet is None:
        return {h.uuid: h.fit.fits for h in report.hosts}
    return {h.uuid: n.fit.fits for h in report.hosts for n in h.physnets if n.physnet == physnet}


def agrees(api, req: CapacityRequest, server: ServerRequest, expected_total: int, physnet=None):
    report = capacity_report(api, req)
    computed = {h: n for h, n in counts(report, physnet).items() if n}
    claimed, consumers = claim_until_full(api, server)
    free_all(api, consumers)
    assert dict(claimed) == computed
    assert sum(computed.values()) == expected_total
    return report


def test_one_bridge(placement):
    h1 = host(placement, "h1", "bridge_mappings = physnet0:br-test\nresource_provider_bandwidths = br-test:4500:6000\n")
    # a server already there takes 1000/1000 of the bridge: (4500 - 1000) // 1000 = 3 more
    first = claims.claim(placement, str(uuid.uuid4()), shape((bw(), {"physnet": "physnet0"})).server,
                         project_id="p", user_id="u")
    req = shape((bw(), {"physnet": "physnet0"}))
    report = agrees(placement, req, req.server, 3)
    (h,) = report.hosts
    assert h.uuid == h1 and h.fit.limited_by[0].resource_class == "NET_BW_EGR_KILOBIT_PER_SEC"
    assert h.fit.limited_by[0].free == 3500
    assert [(n.physnet, n.fit.fits) for n in h.physnets] == [("physnet0", 3)]
    claims.free_allocations(placement, first.consumer)


def test_two_providers_on_one_physnet_add_up(placement):
    # an OVS bridge and two SR-IOV PFs on physnet0, a direct port: 2 + 3 + 2
    host(placement, "h2", "bridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:2000:2000\n",
         "physical_device_mappings = physnet0:ens5,physnet0:ens6\n"
         "resource_provider_bandwidths = ens5:3000:3000,ens6:2500:2500\n")
    req = shape((bw(), {"physnet": "physnet0", "vnic_type": "direct"}))
    report = agrees(placement, req, req.server, 7)
    (lim,) = [lim for lim in report.hosts[0].fit.limited_by if lim.resource_class == "NET_BW_EGR_KILOBIT_PER_SEC"]
    assert len(lim.providers) == 3 and lim.free == 7500
    # and the root caps them: 5 VCPUs
    placement.set_inventories(report.hosts[0].uuid, {"VCPU": {"total": 5}, "MEMORY_MB": {"total": 65536},
                                                     "DISK_GB": {"total": 1000}},
                              placement.get_provider(report.hosts[0].uuid).generation)
    report = agrees(placement, req, req.server, 5)
    assert [lim.resource_class for lim in report.hosts[0].fit.limited_by] == ["VCPU"]


SRIOV_DEFAULTS = ("physical_device_mappings = physnet0:ens5\nresource_provider_bandwidths = ens5:10000:10000\n"
                  "resource_provider_inventory_defaults = reserved:1000,allocation_ratio:1.5,step_size:500,"
                  "max_unit:4000\n")


@pytest.mark.parametrize("kbps, expected", [(1500, 9), (4000, 3), (1200, 0), (4500, 0)])
def test_sriov_pf_with_inventory_defaults(placement, kbps, expected):
    # capacity int((10000 - 1000) * 1.5) = 13500; 1200 is no multiple of step_size 500; 4500 > max_unit 4000
    host(placement, "h3", sriov=SRIOV_DEFAULTS)
    req = shape((bw(kbps), {"physnet": "physnet0", "vnic_type": "direct"}))
    report = agrees(placement, req, req.server, expected)
    if expected == 0:
        why = {1200: "1200 is not a multiple of step_size 500", 4500: "4500 is above max_unit 4000"}[kbps]
        assert why in report.hosts[0].fit.limited_by[0].reason


def test_trait_mismatch_gives_zero(placement):
    host(placement, "h4", sriov="physical_device_mappings = physnet0:ens5\nresource_provider_bandwidths = ens5:10000:10000\n")
    req = shape((bw(), {"physnet": "physnet0", "vnic_type": "normal"}))
    report = agrees(placement, req, req.server, 0)
    assert "lacks trait(s) CUSTOM_VNIC_TYPE_NORMAL" in report.hosts[0].fit.limited_by[0].reason


def test_packet_rate_on_the_agent(placement):
    host(placement, "h5", "bridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:100000:100000\n"
                          "resource_provider_packet_processing_without_direction = :1000\n")
    req = shape((bw(pps=300), {"physnet": "physnet0"}))
    report = agrees(placement, req, req.server, 3)
    assert report.hosts[0].fit.limited_by[0].resource_class == "NET_PACKET_RATE_KILOPACKET_PER_SEC"


def test_each_physnet_and_any_physnet_on_two_hosts(placement):
    a = host(placement, "ha", "bridge_mappings = physnet0:br-a,physnet1:br-b\n"
                              "resource_provider_bandwidths = br-a:3000:3000,br-b:2000:2000\n", vcpu=4)
    b = host(placement, "hb", "bridge_mappings = physnet1:br-c\nresource_provider_bandwidths = br-c:5000:5000\n")
    req = shape((bw(), {}))  # the port's physnet left open
    report = capacity_report(placement, req)
    assert {h.name: [(n.physnet, n.fit.fits) for n in h.physnets] for h in report.hosts} == {
        "ha": [("physnet0", 3), ("physnet1", 2)], "hb": [("physnet1", 5)]}
    assert {h.name: h.fit.fits for h in report.hosts} == {"ha": 4, "hb": 5}  # ha: 3 + 2 bridges, 4 VCPUs
    assert report.total == 9
    assert [(t["physnet"], t["fits"], t["hosts"]) for t in report.physnet_totals()] == [
        ("physnet0", 3, 1), ("physnet1", 7, 2)]
    for physnet, traits in (("physnet0", ("CUSTOM_PHYSNET_PHYSNET0",)), ("physnet1", ("CUSTOM_PHYSNET_PHYSNET1",))):
        agrees(placement, req, req.for_network(traits), {"physnet0": 3, "physnet1": 7}[physnet], physnet)
    # any physnet (required=in:..., Placement 1.39): a's two bridges add up, capped by its 4 VCPUs
    claimed, consumers = claim_until_full(placement, req.for_network(("CUSTOM_PHYSNET_PHYSNET0",
                                                                      "CUSTOM_PHYSNET_PHYSNET1")))
    free_all(placement, consumers)
    assert dict(claimed) == {a: 4, b: 5}


def test_hypervisor_filter_and_unknown_hypervisor(placement):
    host(placement, "h1", "bridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:3000:3000\n")
    host(placement, "h2", "bridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:1000:1000\n")
    req = shape((bw(), {"physnet": "physnet0"}))
    report = capacity_report(placement, req, "h2")
    assert [(h.name, h.fit.fits) for h in report.hosts] == [("h2", 1)]
    with pytest.raises(InvalidInput) as err:
        capacity_report(placement, req, "h9", option="--hypervisor")
    assert str(err.value).startswith("--hypervisor: no compute node (root resource provider) named 'h9'")
    assert "h1, h2" in str(err.value)
    with pytest.raises(InvalidInput, match="is not a compute node"):
        capacity_report(placement, req, "h1:Open vSwitch agent")


# ---------------------------------------------------------------- the command

def run(placement_server, *args):
    return cli_forks.run(MINBW + ["capacity", "show", *args], env=placement_server.env(), capture_output=True, text=True)


def test_cli_table_json_and_picture(placement, placement_server, tmp_path):
    host(placement, "h1", "bridge_mappings = physnet0:br-a,physnet1:br-b\n"
                          "resource_provider_bandwidths = br-a:3000:3000,br-b:2000:2000\n"
                          "resource_provider_packet_processing_without_direction = :1000\n", vcpu=4)
    claims.claim(placement, str(uuid.uuid4()), shape((bw(), {"physnet": "physnet0"})).server,
                 project_id="p", user_id="u")
    spec = ["--resource", "VCPU=1", "--resource", "MEMORY_MB=256", "--resource", "DISK_GB=1",
            "--qos-port", "min_bw:egress:1000,min_bw:ingress:1000"]
    r = run(placement_server, *spec)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    cells = [[c.strip() for c in line.split("|")[1:4]] for line in lines]
    assert ["h1", "physnet0", "2"] in cells, r.stdout
    assert ["h1", "physnet1", "2"] in cells, r.stdout
    assert ["h1", "(any)", "3"] in cells, r.stdout
    assert "total: 3 more server(s)" in r.stdout

    png, html = tmp_path / "cap.png", tmp_path / "cap.html"
    r = run(placement_server, *spec, "--json", "--png", str(png), "--html", str(html))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["total"] == 3 and [(p["physnet"], p["fits"]) for p in out["physnets"]] == [("physnet0", 2), ("physnet1", 2)]
    (h,) = out["hosts"]
    assert h["fits"] == 3 and h["limited_by"][0]["resource_class"] == "VCPU"
    used = {(p["provider"].split(":")[-1], p["resource_class"]): (p["used"], p["free"]) for p in out["providers"]}
    assert used[("br-a", "NET_BW_EGR_KILOBIT_PER_SEC")] == (1000, 2000)
    assert used[("Open vSwitch agent", "NET_PACKET_RATE_KILOPACKET_PER_SEC")] == (0, 1000)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000
    from PIL import Image
    with Image.open(png) as im:
        im.verify()
    text = html.read_text()
    assert "data:image/png;base64," in text and "<td>physnet0</td>" in text


@pytest.mark.parametrize("args, code, message", [
    # malformed values: usage errors (2) naming the option, before anything is read
    (["--resource", "VCPUS=1"], 2, "argument --resource: unknown resource class 'VCPUS'. Did you mean VCPU?"),
    (["--resource", "VCPU=-1"], 2, "argument --resource: VCPU: the amount must be a whole number >= 0, got '-1'"),
    (["--resource", "VCPU"], 2, "argument --resource: expected CLASS=AMOUNT, e.g. VCPU=1"),
    (["--resource", "VCPU=1", "--qos-port", "min_bw:up:10"], 2, "argument --qos-port: a minimum_bandwidth rule"),
    (["--resource", "VCPU=1", "--qos-port", "min_bw:up:10"], 2, "direction must be one of egress, ingress, got 'up'"),
    (["--resource", "VCPU=1", "--qos-port", "fast"], 2, "argument --qos-port: 'fast' is not a rule; expected "
                                                         "min_bw:DIRECTION:KBPS[:RULE_ID]"),
    # what only Placement can tell: errors (1)
    (["--resource", "VCPU=1", "--hypervisor", "nowhere"], 1, "minbw: error: --hypervisor: no compute node"),
    ([], 1, "minbw: error: nothing to count"),
])
def test_cli_bad_input(placement, placement_server, args, code, message):
    host(placement, "h1", "bridge_mappings = physnet0:br-a\nresource_provider_bandwidths = br-a:3000:3000\n")
    r = run(placement_server, *args)
    assert r.returncode == code and "Traceback" not in r.stderr
    assert message in r.stderr, r.stderr
    assert r.stderr.startswith("minbw: error: " if code == 1 else "usage: minbw capacity show"), r.stderr


def test_a_missing_matplotlib_names_the_extra(monkeypatch, tmp_path, capsys):
    from minbw.cli.shell import main
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    assert main(["capacity", "show", "--resource", "VCPU=1", "--png", str(tmp_path / "x.png")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("minbw: error: --png/--html draw with matplotlib") and "pip install matplotlib" in err
    assert not (tmp_path / "x.png").exists()
