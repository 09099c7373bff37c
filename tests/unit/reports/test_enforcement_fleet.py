"""minbw.reports.enforcement_fleet: the fleet's outcome from what Ansible registered on each host — real hosts'
reports (minbw.reports.enforcement's, as bandwidth_enforcement_info returns them) beside a module that failed, one
that died, an unreachable host, a skipped task and a host that left the play; and a host's exporter's families of
the same reports (minbw.reports.metrics.enforcement_families)."""
from __future__ import annotations

from minbw.reports import enforcement as e, enforcement_fleet as f, metrics
from tests.unit.reports.test_enforcement import A, ENFORCED_A, QOS1, host, port, qos, queue, switch, tc

GOOD = host([port()], switch(ENFORCED_A))
WRONG = host([port()], switch(qos(QOS1, {5: queue(A, 2_000_000, 5)})), tc(("1:6", 2_000_000)),
             inventory=(25_000_000, 10_000_000))


def registered(report: e.HostReport) -> dict:
    """What the module registers: its result, ``changed`` and the report's document."""
    return {"changed": False, **report.to_dict()}


def test_each_host_read_or_named_in_one_line_and_the_others_still_come():
    outcome = f.fleet({
        "c0": registered(GOOD), "c1": registered(WRONG),
        "c2": {"failed": True, "msg": "host c2: no agent minbw enforcement show reads\nin Neutron's agent list"},
        "c3": {"failed": True, "msg": "MODULE FAILURE\nSee stdout/stderr for the exact error",
               "module_stderr": "Traceback (most recent call last):\n  File \"x\"\nModuleNotFoundError: No module "
                                "named 'ovsdbapp'\n"},
        "c4": {"unreachable": True, "changed": False,
               "msg": "Failed to connect to the host via ssh: ssh: connect to host 192.0.2.4 port 22: refused"},
        "c5": {"skipped": True, "skip_reason": "Conditional result was False"},
        "c6": None})
    (why,) = [c.why for c in WRONG.checks]
    assert "2000000 bit/s programmed" in why
    assert outcome["lines"] == [
        "c0 (Neutron host devstack0), openvswitch: 1 enforced",
        "c1 (Neutron host devstack0), openvswitch: 1 wrong rate",
        f"  wrong rate x2: rule {A}: {why}",
        "  NIC t0 (br-phy): Placement's inventory (25000000 kbps) is above the link's speed (10000000 kbps)",
        "c2: not read: host c2: no agent minbw enforcement show reads",
        "c3: not read: ModuleNotFoundError: No module named 'ovsdbapp'",
        "c4: unreachable: Failed to connect to the host via ssh: ssh: connect to host 192.0.2.4 port 22: refused",
        "c5: not read: the check was skipped (Conditional result was False)",
        f"c6: {f.NOT_RUN}",
        "7 host(s): 2 checked (1 enforced, 1 wrong rate); findings on c1; not read: c2, c3, c4, c5, c6"]
    assert (outcome["ok"], outcome["with_findings"], outcome["unread"]) == (False, ["c1"], ["c2", "c3", "c4", "c5",
                                                                                            "c6"])
    assert outcome["counts"] == {e.ENFORCED: 1, e.MISSING: 0, e.WRONG_RATE: 1, e.PLACEMENT_ONLY: 0, e.ORPHAN: 0}
    assert outcome["hosts"]["c0"] == {"read": True, "host": "devstack0", "backend": "openvswitch", "ok": True,
                                      "counts": GOOD.counts(), "findings": [], "not_checked": []}


def test_a_fleet_with_nothing_to_act_on_is_ok():
    outcome = f.fleet({"devstack0": registered(GOOD)})
    assert outcome["ok"] and outcome["lines"] == ["devstack0, openvswitch: 1 enforced",
                                                  "1 host(s): 1 checked (1 enforced)"]


def test_a_hosts_exporter_serves_its_verdicts_and_nic_sums():
    status = {"enforcement": {"ok": True, "seconds": 0.5, "last_success": 1000.0}}
    fams = {fam.name: fam for fam in metrics.enforcement_families(WRONG, status)}
    on = {"host": "devstack0", "nic": "t0", "bridge": "br-phy"}
    assert {dict(k)["verdict"]: v for k, v in fams["minbw_enforcement_checks"].samples} == {
        e.ENFORCED: 0, e.MISSING: 0, e.WRONG_RATE: 1, e.PLACEMENT_ONLY: 0, e.ORPHAN: 0}
    assert fams["minbw_enforcement_nic_speed_bits_per_second"].value(**on) == 10_000_000_000
    assert fams["minbw_enforcement_nic_admitted_bits_per_second"].value(direction="egress", **on) == 25_000_000_000
    assert fams["minbw_enforcement_nic_enforced_bits_per_second"].value(**on) == 0  # its one rule is wrong
    assert fams["minbw_enforcement_nic_errors"].value(**on) == 1
    assert fams["minbw_report_success"].value(report="enforcement") == 1
    failed = {fam.name: fam for fam in metrics.enforcement_families(None, {"enforcement": {"ok": False}})}
    assert failed["minbw_report_success"].value(report="enforcement") == 0
    assert not any(fam.samples for name, fam in failed.items() if name.startswith("minbw_enforcement_"))
