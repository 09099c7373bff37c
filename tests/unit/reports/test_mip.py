"""The one HiGHS wrapper (minbw.reports.capacity.mip): answers checked by hand and by brute force, deterministic,
silent on stdout (the CLI's JSON goes there), bounded in time."""
from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from minbw.reports.capacity.mip import Row, maximise


def test_a_small_knapsack_by_hand():
    # 2x + 3y <= 7, x, y integers in 0..10: the most x + y is 3 (x=3, y=0)
    result = maximise([1.0, 1.0], [10, 10], [Row((0, 1), (2.0, 3.0), 7.0)])
    assert result.values == (3, 0) and result.objective == 3.0 and result.optimal and not result.time_limit_hit
    assert result.bound == pytest.approx(3.0)


def test_nothing_to_solve_and_bad_rows():
    assert maximise([], [], []).values == ()
    with pytest.raises(ValueError, match="outside 0..1"):
        maximise([1.0, 1.0], [1, 1], [Row((0, 2), (1.0, 1.0), 1.0)])
    with pytest.raises(ValueError, match="1 upper bounds for 2 columns"):
        maximise([1.0, 1.0], [1], [])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=4).flatmap(lambda w: st.tuples(
    st.just(w), st.lists(st.lists(st.integers(0, 5), min_size=len(w), max_size=len(w)), min_size=1, max_size=3),
    st.lists(st.integers(0, 12), min_size=3, max_size=3))))
def test_agrees_with_a_brute_force(instance):
    costs, matrix, rhs = instance
    rows = [Row(tuple(range(len(costs))), tuple(float(a) for a in coefs), float(b)) for coefs, b in zip(matrix, rhs)]
    result = maximise([float(c) for c in costs], [3] * len(costs), rows)
    best = max(sum(c * x for c, x in zip(costs, xs)) for xs in itertools.product(range(4), repeat=len(costs))
               if all(sum(a * x for a, x in zip(coefs, xs)) <= b for coefs, b in zip(matrix, rhs)))
    assert result.optimal and result.objective == best
    assert all(sum(a * x for a, x in zip(coefs, result.values)) <= b for coefs, b in zip(matrix, rhs))


def test_silent_on_stdout():
    # highspy 1.16's Highs() prints HiGHS's banner on stdout at construction, before any option can be set;
    # maximise must not (a CLI's -f json output goes to stdout)
    code = ("from minbw.reports.capacity.mip import Row, maximise\n"
            "maximise([1.0, 1.0], [5, 5], [Row((0, 1), (2.0, 3.0), 7.0)])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == ""
