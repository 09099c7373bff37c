"""The Placement client's retry policy: defaults, the environment, the waits (docs/reliability.md)."""
from __future__ import annotations

import pytest

from minbw.errors import InvalidInput
from minbw.placement.client import RetryPolicy


def test_defaults_and_environment():
    assert RetryPolicy.from_env({}) == RetryPolicy(attempts=4, backoff=0.5, max_backoff=8.0, timeout=None)
    got = RetryPolicy.from_env({"MINBW_PLACEMENT_ATTEMPTS": "2", "MINBW_PLACEMENT_BACKOFF": "0.1",
                                "MINBW_PLACEMENT_MAX_BACKOFF": "1", "MINBW_PLACEMENT_TIMEOUT": "30",
                                "MINBW_PLACEMENT_OTHER": "x"})
    assert got == RetryPolicy(attempts=2, backoff=0.1, max_backoff=1.0, timeout=30.0)


@pytest.mark.parametrize("var,value", [("MINBW_PLACEMENT_ATTEMPTS", "0"), ("MINBW_PLACEMENT_ATTEMPTS", "1.5"),
                                       ("MINBW_PLACEMENT_BACKOFF", "-1"), ("MINBW_PLACEMENT_TIMEOUT", "0"),
                                       ("MINBW_PLACEMENT_TIMEOUT", "soon")])
def test_bad_environment_names_the_variable(var, value):
    with pytest.raises(InvalidInput) as err:
        RetryPolicy.from_env({var: value})
    assert str(err.value).startswith(f"{var}={value!r}: expected")


def test_pauses_double_up_to_the_cap_jittered_down_to_half():
    p = RetryPolicy(backoff=0.5, max_backoff=3.0)
    for attempt, top in ((1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (9, 3.0)):
        waits = [p.pause(attempt) for _ in range(200)]
        assert all(top / 2 <= w <= top for w in waits) and max(waits) > top * 0.9
    assert all(0 <= p.pause(3, conflict=True) <= 0.15 for _ in range(200))
