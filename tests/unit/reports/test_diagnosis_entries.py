"""The "no valid host" diagnosis is typed (reports.diagnosis.Diagnosis) to the edge: each kind's dict is today's, keys
in the same order; NoValidHost renders them; the summary line, the target's reading and Nova's filters read them."""
from minbw.errors import NoValidHost
from minbw.ops.allocation_migration import on_target
from minbw.reports.diagnosis import NOVA, SEGMENTS, TOGETHER, Diagnosis, summary
from minbw.usecases.server_request import nova_diagnosis

FLAVOR = Diagnosis("", "flavor", (), True, ("h1", "h2"), resources={"VCPU": 1})
PORT = Diagnosis("g0", "port p bandwidth group g0", ("NET_BW_EGR_KILOBIT_PER_SEC: needs 1000",), False, (),
                 resources={"NET_BW_EGR_KILOBIT_PER_SEC": 1000}, required=("CUSTOM_PHYSNET_A",),
                 required_any=(("CUSTOM_X", "CUSTOM_Y"),))
TOGETHER_ENTRY = Diagnosis("*", "all groups together", ("on h1 the groups need VCPU=1 together",), False, ("h1",),
                           kind=TOGETHER)


def test_each_kinds_keys_in_order():
    assert PORT.to_dict() == {"group": "g0", "label": "port p bandwidth group g0",
                              "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}, "required": ["CUSTOM_PHYSNET_A"],
                              "required_any": [["CUSTOM_X", "CUSTOM_Y"]], "fits_alone": False, "hosts": [],
                              "problems": ["NET_BW_EGR_KILOBIT_PER_SEC: needs 1000"]}
    assert list(PORT.to_dict()) == ["group", "label", "resources", "required", "required_any", "fits_alone", "hosts",
                                    "problems"]
    assert list(TOGETHER_ENTRY.to_dict()) == ["group", "label", "fits_alone", "problems", "hosts"]
    segments = Diagnosis("member_of", "the ports' segments", ("host h is not in segment(s) s",), kind=SEGMENTS)
    assert segments.to_dict() == {"group": "member_of", "label": "the ports' segments",
                                  "problems": ["host h is not in segment(s) s"]}
    assert list(Diagnosis("nova", "Nova's request filters", (), kind=NOVA).to_dict()) == [
        "group", "label", "fits_alone", "hosts", "problems"]


def test_no_valid_host_renders_its_diagnosis_and_the_summary_names_the_problems():
    err = NoValidHost("No valid host: none.", [FLAVOR, PORT])
    assert err.to_dict()["diagnosis"] == [FLAVOR.to_dict(), PORT.to_dict()] and err.diagnosis == [FLAVOR, PORT]
    assert summary([FLAVOR, PORT, TOGETHER_ENTRY]) == (
        "port p bandwidth group g0: NET_BW_EGR_KILOBIT_PER_SEC: needs 1000 | "
        "all groups together: on h1 the groups need VCPU=1 together")
    assert summary([FLAVOR]) == ""
    assert on_target([FLAVOR, PORT, TOGETHER_ENTRY], "h2") == [
        "port p bandwidth group g0: NET_BW_EGR_KILOBIT_PER_SEC: needs 1000"]


def test_nova_filters_come_first_and_explain_the_groups_together():
    removed = [{"filter": "compute_status_filter", "hosts": ["h1"], "reason": "disabled"}]
    got = nova_diagnosis(removed, [FLAVOR, TOGETHER_ENTRY])
    assert got[0].to_dict() == {"group": "nova", "label": "Nova's request filters", "fits_alone": None,
                                "hosts": ["h1"], "problems": ["compute_status_filter removes h1 (disabled)"]}
    assert got[1] == FLAVOR and got[2].problems == (
        "every group fits on h1, which Nova's request filters remove (above): the server fits on no other host",)
    assert nova_diagnosis([], [FLAVOR]) == [FLAVOR]
