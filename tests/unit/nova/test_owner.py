"""Whether Nova adds ``root_required=OWNER_NOVA``: minbw's two readings (minbw.nova.owner) against Nova 34's own
``request_filter._should_filter_by_owner``, run for real (tests/support/oracle/nova_scheduler.py, op "owner": the
services written in real cell databases, read by Nova's ``get_minimum_version_all_cells``).

Each generated cloud is in some stage of a rolling upgrade to Nova 34: nova-compute services in two cells at
service versions 60, 72 (older), 73 or 74 (upgraded), some deleted (their compute node's provider left in Placement
or not), some forced down, some with no compute node or two (Ironic), some upgraded whose resource tracker has not
yet run. Placement holds each compute node's root as the resource tracker leaves it: ``COMPUTE_NODE``, and
``OWNER_NOVA`` from version 73 once the tracker ran.

- Nova's API reading (:func:`from_nova`) answers as Nova does wherever what decides Nova's answer shows in the
  API and Placement; where it does not (a service with no compute node, a tracker that has not run), it asks
  for nothing, the direction that never drops a compute Nova places servers on.
- Placement's reading (:func:`from_placement`) answers as Nova does unless a deleted or forced-down older compute
  left its root behind (then it asks for nothing), a counted service has no compute node, or no service is
  counted at all (every one forced down or deleted) while their roots remain.
"""
from __future__ import annotations

import uuid

from hypothesis import HealthCheck, event, given, settings, strategies as st

from minbw.nova import fields
from minbw.nova.owner import SOURCE_NOVA, SOURCE_PLACEMENT, ComputeService, from_nova, from_placement, given as said

CLOUDS = settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def services(draw):
    out = []
    for i in range(draw(st.integers(0, 6))):
        out.append({"host": f"cmp{i}", "cell": draw(st.sampled_from(["cell1", "cell2"])),
                    "version": draw(st.sampled_from([60, 72, 73, 74])),
                    "deleted": draw(st.booleans()) and draw(st.booleans()),
                    "forced_down": draw(st.booleans()) and draw(st.booleans()),
                    "nodes": draw(st.sampled_from([1, 1, 1, 2, 0])),
                    "tracked": draw(st.booleans()) or draw(st.booleans()),   # the resource tracker ran since
                    "left_behind": draw(st.booleans())})                      # a deleted one's provider stays
    return out


def cloud(case: list[dict]):
    """What minbw reads of the case: Nova's services and compute nodes (the API shows no deleted service, nor its
    compute nodes), and Placement's roots (name → traits; the uuids that have OWNER_NOVA)."""
    svcs, nodes, roots, owned = [], [], {}, set()
    for s in case:
        for n in range(s["nodes"]):
            node = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{s['host']}-{n}"))
            if not s["deleted"]:
                nodes.append((s["host"], node))
            elif not s["left_behind"]:
                continue
            traits = {fields.COMPUTE_NODE}
            if s["version"] >= 73 and s["tracked"]:
                traits.add(fields.OWNER_NOVA)
                owned.add(node)
            roots[f"{s['host']}-{n}"] = traits
        if not s["deleted"]:
            svcs.append(ComputeService(s["host"], s["forced_down"]))
    roots["cyborg-fpga"] = {"CUSTOM_FPGA"}  # a root no nova-compute made
    return svcs, nodes, roots, owned


def unseen(case: list[dict]) -> dict[str, bool]:
    """The states whose effect on Nova's answer shows in neither Nova's API nor Placement."""
    counted = [s for s in case if not s["deleted"] and not s["forced_down"]]
    return {"nodeless": any(s["nodes"] == 0 for s in counted),
            "none_counted": not counted and any(s["nodes"] for s in case),
            "untracked": any(s["version"] >= 73 and not s["tracked"] and s["nodes"] for s in counted),
            "older_left": any(s["version"] < 73 and s["nodes"] and (s["forced_down"] or s["deleted"] and
                                                                    s["left_behind"]) for s in case)}


@given(services())
@CLOUDS
def test_both_readings_against_novas_own_decision_mid_upgrade(nova, case):
    theirs = nova.ask([{"op": "owner", "services": case}])[0]["filter"]
    svcs, nodes, roots, owned = cloud(case)
    by_nova, by_placement = from_nova(svcs, nodes, owned), from_placement(roots)
    assert by_nova.source == SOURCE_NOVA and by_placement.source == SOURCE_PLACEMENT
    hidden = unseen(case)
    counted = {s["version"] >= 73 for s in case if not s["deleted"] and not s["forced_down"]}
    event(f"nova: {theirs}; mixed: {counted == {True, False}}; " + ", ".join(k for k, v in hidden.items() if v))
    if hidden["nodeless"] or hidden["untracked"]:
        assert by_nova.applies is False, (case, by_nova)  # asks for nothing: never drops Nova's computes
    else:
        assert by_nova.applies is theirs, (case, by_nova, theirs)
    if not any(hidden.values()):
        assert by_placement.applies is theirs, (case, by_placement, theirs)
    elif hidden["older_left"] and not (hidden["nodeless"] or hidden["untracked"]):
        assert by_placement.applies is False, (case, by_placement)


def test_the_rolling_upgrade_of_issue_41(nova):
    """One compute upgraded to Nova 34, one not: Nova adds nothing, and the old compute stays a candidate; minbw's
    two readings say the same, naming the old compute. Then both upgraded: OWNER_NOVA, from either reading."""
    case = [{"host": "new", "version": 73, "nodes": 1, "tracked": True, "deleted": False, "forced_down": False,
             "left_behind": False, "cell": "cell1"},
            {"host": "old", "version": 72, "nodes": 1, "tracked": True, "deleted": False, "forced_down": False,
             "left_behind": False, "cell": "cell2"}]
    assert nova.ask([{"op": "owner", "services": case}])[0] == {"filter": False, "minimum": 72}
    svcs, nodes, roots, owned = cloud(case)
    by_nova, by_placement = from_nova(svcs, nodes, owned), from_placement(roots)
    assert not by_nova.applies and "nova-compute on old is older than service version 73" in by_nova.why
    assert not by_placement.applies and "old-0 lack OWNER_NOVA" in by_placement.why
    case[1]["version"] = 73
    assert nova.ask([{"op": "owner", "services": case}])[0] == {"filter": True, "minimum": 73}
    svcs, nodes, roots, owned = cloud(case)
    assert from_nova(svcs, nodes, owned).applies and from_placement(roots).applies
    # the old compute deleted, its provider left in Placement: Nova counts it no more; the Placement reading does
    case[1].update(version=72, deleted=True, left_behind=True)
    assert nova.ask([{"op": "owner", "services": case}])[0]["filter"] is True
    svcs, nodes, roots, owned = cloud(case)
    assert from_nova(svcs, nodes, owned).applies and not from_placement(roots).applies


def test_no_compute_and_the_callers_own_answer():
    assert not from_nova([], [], set()).applies and not from_placement({}).applies
    assert "no root provider in Placement has COMPUTE_NODE" in from_placement({"x": {"CUSTOM_X"}}).why
    assert said(False).to_dict() == {"applies": False, "source": "given", "why": "as given (--owner-nova no)"}
