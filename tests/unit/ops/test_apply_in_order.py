"""ops.apply_in_order: a plan's writes in order, and what was and was not written when one fails."""
from __future__ import annotations

import pytest


def test_apply_in_order_names_what_was_and_was_not_written():
    from minbw.errors import PartialApply, PlacementError
    from minbw.ops import apply_in_order

    def run(op):
        if op == "c":
            raise PlacementError("boom", status=503)
    with pytest.raises(PartialApply) as e:
        apply_in_order(["a", "b", "c", "d"], run)
    d = e.value.to_dict()
    assert (d["writes_done"], d["writes_planned"], d["applied"], d["not_applied"]) == (2, 4, ["a", "b"], ["c", "d"])
    assert "not written: c and 1 more" in str(e.value)
    with pytest.raises(PlacementError):  # nothing written: the error as it is, not a PartialApply
        apply_in_order(["c", "d"], run)


def test_apply_in_order_reports_a_transport_failure_after_writes_as_partial():
    """keystoneauth's connection failures are not SDKExceptions: they too end in a PartialApply, not a
    bare traceback with the earlier writes unreported; and their outcome is unknown (a 4xx's is not)."""
    from keystoneauth1 import exceptions as ksa
    from openstack import exceptions as sdk

    from minbw.errors import PartialApply
    from minbw.ops import apply_in_order, outcome_unknown

    def run(op):
        if op == "b":
            raise ksa.ConnectFailure("reset by peer")
    with pytest.raises(PartialApply) as e:
        apply_in_order(["a", "b"], run)
    assert e.value.applied == ["a"] and e.value.pending == ["b"]
    assert outcome_unknown(ksa.ConnectFailure("x")) and outcome_unknown(ksa.ConnectTimeout("x"))
    assert outcome_unknown(sdk.HttpException("x", http_status=503))
    assert not outcome_unknown(sdk.HttpException("x", http_status=409))
    assert not outcome_unknown(sdk.ForbiddenException("x", http_status=403))
