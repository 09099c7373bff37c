"""The skipped units of a providers sync (issue 29): every kind of unit (an agent ini file, an agent given as
option values, an OVN chassis) that gets no writes has one line of one format, ``<unit kind> <unit name> (host
<host>): <what is wrong>. Fix: <the fix>``, the lines sorted by unit name; no warning is about a skipped unit."""
from __future__ import annotations

import re

from minbw.neutron import naming, ovn
from minbw.ops import ovn_chassis
from minbw.ops.agent_files import read_agent_units

LINE = re.compile(r"^(ini file|agent|chassis) (\S+) \(host ([^)]+)\): (.+?)\. Fix: (.+)$")
OVS = "[DEFAULT]\nhost = {host}\n[ovs]\nbridge_mappings = physnet0:br-test\nresource_provider_bandwidths = {bw}\n"


def chassis(name: str, host: str, options: str, source: str = "southbound") -> ovn.Chassis:
    return ovn.Chassis(name=name, hostname=host, bridge_mappings="physnet0:br-test", cms_options=options,
                       source=source)


def good(name: str, host: str, hypervisor: str | None = None, bridge: str = "br-test",
         source: str = "southbound") -> ovn.Chassis:
    return chassis(name, host, f"resource_provider_bandwidths={bridge}:1000:1000,"
                               f"resource_provider_hypervisors={bridge}:{hypervisor or host}", source)


def sync_units(tmp_path, ini: dict[str, str], agents: list[dict], chassis_list: list[ovn.Chassis]):
    paths = []
    for name, text in ini.items():
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    configs, unread = read_agent_units(paths, agents)
    return ovn_chassis.desired(configs, chassis_list, complete=True, skipped=[u for u, _ in unread], isolate=True)


def test_every_skipped_unit_has_one_line_of_one_format_sorted_by_name(tmp_path):
    ini = {"z-unreadable.ini": "[DEFAULT\n",  # does not parse
           "hv9.ini": OVS.format(host="hv9", bw="br-test:5000:5000"),  # good
           "hv1.ini": OVS.format(host="hv1", bw="br-test:5000:5000")
           + "resource_provider_inventory_defaults = reserved:9000\n"}  # Placement would refuse it
    agents = [{"agent_type": naming.OVS, "host": "hv3", "bridge_mappings": {"physnet0": "br-test"},
               "resource_provider_bandwidths": {"br-test": {"egress": 10, "ingress": 10}}},  # good
              {"agent_type": naming.OVS, "host": "hv2", "bridge_mappings": {"physnet0": "br-test"},
               "resource_provider_bandwidths": {"br-nope": {"egress": 10, "ingress": 10}}}]  # not mapped
    chassis_list = [chassis("c10", "compute10", "resource_provider_bandwidths=br-test:1:2:3"),  # does not parse
                    good("c7", "compute7", hypervisor="compute5"),  # c5's bridge provider too
                    good("c5", "compute5"),
                    good("c2", "compute2"), good("c2", "compute2", source="file.json"),  # given twice
                    good("c4", "compute4")]
    desired = sync_units(tmp_path, ini, agents, chassis_list)
    lines = [u.skipped for u in desired.skipped]
    parsed = [LINE.match(x) for x in lines]
    assert all(parsed), lines
    assert [(m[1], m[2], m[3]) for m in parsed] == [
        ("agent", "agents[1]", "hv2"),
        ("chassis", "c2", "compute2"), ("chassis", "c2", "compute2"),
        ("chassis", "c5", "compute5"), ("chassis", "c7", "compute7"), ("chassis", "c10", "compute10"),
        ("ini file", str(tmp_path / "hv1.ini"), "hv1"),
        ("ini file", str(tmp_path / "z-unreadable.ini"), "unknown")], lines
    by = {(m[2], i): m for i, m in enumerate(parsed)}
    assert by["agents[1]", 0][4].startswith("resource_provider_bandwidths: ") and "br-nope" in by["agents[1]", 0][4]
    assert by["c2", 1][4] == "given more than once (this one from file.json, also from southbound)"
    assert by["c2", 2][4] == "given more than once (this one from southbound, also from file.json)"
    assert by["c5", 3][4].startswith("it and chassis c7 (host compute7) describe the same device provider "
                                     "compute5:OVN Controller agent:br-test")
    assert by["c7", 4][5].startswith("give each bridge of hypervisor compute5 in one chassis only")
    assert by["c10", 5][4].startswith("ovn-cms-options resource_provider_bandwidths: ")
    hv1 = by[str(tmp_path / "hv1.ini"), 6]
    assert hv1[4] == ("resource_provider_inventory_defaults: Placement would refuse the NET_BW_EGR_KILOBIT_PER_SEC "
                      "inventory of device br-test: reserved (9000) is greater than total (5000)")
    assert hv1[5] == "correct resource_provider_inventory_defaults or the egress value"
    # the good ones are planned
    assert {u.host for u in desired.units if not u.skipped} == {"hv9", "hv3", "compute4"}


def test_a_skipped_pair_gets_no_warning_about_the_agent_provider_it_shares():
    """c0 and c1 describe compute0's br-test (both skipped); they also report into compute0's agent provider, as
    does c2 with another bridge: the warning names the chassis really sharing it (c2 and c3), never c0 or c1."""
    pair = [good("c1", "compute1", hypervisor="compute0"), good("c0", "compute0")]
    desired = ovn_chassis.desired([], pair, isolate=True)
    assert [u.name for u in desired.skipped] == ["chassis c0 (southbound)", "chassis c1 (southbound)"]
    assert not [w for w in desired.warnings if "share the agent provider" in w], desired.warnings
    shared = [good("c2", "compute2", hypervisor="compute9", bridge="br-a"),
              good("c3", "compute3", hypervisor="compute9", bridge="br-b")]
    desired = ovn_chassis.desired([], pair + shared, isolate=True)
    (warning,) = [w for w in desired.warnings if "share the agent provider" in w]
    assert warning.startswith("chassis c2 (southbound) and chassis c3 (southbound) all report to hypervisor "
                              "compute9") and "c0" not in warning and "c1" not in warning


def test_the_sweep_warning_names_the_kind_as_users_know_it():
    broken = chassis("c1", "compute1", "resource_provider_bandwidths=br-test:1:2:3")
    desired = ovn_chassis.desired([], [good("c0", "compute0"), broken], complete=True, isolate=True)
    (warning,) = desired.warnings
    assert warning.startswith("the OVN agent providers that no configuration describes are kept this run: "
                              "chassis c1 (southbound) could not be read"), warning
    assert naming.OVN not in desired.sweep_kinds
