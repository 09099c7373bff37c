"""HealResult over typed per-server heals: what changed, what is left, what every front end says of it."""
from __future__ import annotations

from minbw.plan.heal import GroupHeal, HealOp, HealPlan, ServerHeal
from minbw.usecases.heal import HealResult

WRITES = HealPlan(ops=(HealOp("update_binding", port="p1", binding={"g": "rp"}),), server="a",
                  groups=(GroupHeal("p1", "g", "binding", "rp"),))
NOTHING = HealPlan(ops=(), server="b", groups=(GroupHeal("p2", "g", "ok", "rp"),))


def test_healed_one_and_one_rolled_back():
    result = HealResult((ServerHeal("a", "A", WRITES, healed=True, writes=1),
                         ServerHeal("b", "B", NOTHING),
                         ServerHeal("c", "C", WRITES, error="refused", rolled_back=("put_allocations c",))), False)
    assert [s.server for s in result.needed] == ["a", "c"]
    assert result.changed and not result.none_made
    assert [s.server for s in result.pending] == ["c"] and result.unhealed == ["c"]
    assert result.failed == ["server C (c): refused (rolled back: put_allocations c)"]
    assert result.to_dict() == [s.to_dict() for s in result.servers]


def test_check_mode_and_every_write_failed():
    check = HealResult((ServerHeal("a", "A", WRITES), ServerHeal("x", "X", error="gone")), True)
    assert check.changed and [s.server for s in check.pending] == ["a", "x"] and check.unhealed == ["x"]
    failed = HealResult((ServerHeal("c", "C", WRITES, error="refused", rolled_back=()),), False)
    assert failed.none_made and not failed.changed and failed.failed == ["server C (c): refused"]
