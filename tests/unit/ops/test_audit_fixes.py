"""apply_fixes: each fix tried, one FixResult each; a failed one reported (its error), the others still made."""
from __future__ import annotations

from types import SimpleNamespace

from minbw.errors import ConsumerConflict
from minbw.ops.audit import apply_fixes
from minbw.plan.audit import FixOp, FixResult

EGR = "NET_BW_EGR_KILOBIT_PER_SEC"


class Api:
    def __init__(self):
        self.put = {}

    def get_allocations(self, consumer):
        if consumer == "busy":
            raise ConsumerConflict("busy kept changing")
        return {"allocations": {"rp": {"resources": {EGR: 10, "VCPU": 1}}}, "consumer_generation": 1}

    def put_allocations(self, consumer, body):
        self.put[consumer] = body


def test_each_fix_reported_the_failed_one_with_its_error():
    trim, busy = FixOp("trim_consumer", subject="vm", classes=(EGR,)), FixOp("trim_consumer", subject="busy")
    api = Api()
    got = apply_fixes(SimpleNamespace(), api, SimpleNamespace(ops=(busy, trim)))
    assert got == [FixResult(busy, False, "ConsumerConflict: busy kept changing"), FixResult(trim, True)]
    assert api.put["vm"]["allocations"] == {"rp": {"resources": {"VCPU": 1}}}
    assert [f.to_dict() for f in got] == [
        {"action": "trim_consumer", "subject": "busy", "done": False, "error": "ConsumerConflict: busy kept changing"},
        {"action": "trim_consumer", "subject": "vm", "classes": [EGR], "done": True, "error": None}]
