"""The one place minbw calls a MIP solver: HiGHS through highspy (PyPI), for the capacity count
(:mod:`minbw.reports.capacity.solver`) and the drain plan (:mod:`minbw.plan.drain`). Pure: no I/O.

A problem here is always ``maximise sum(cost[j] * x[j])`` over non-negative integers ``x[j] <= upper[j]``
subject to rows ``sum(coef * x[col]) <= rhs``. The solve is deterministic (one thread, a fixed seed), bounded
in time, and says whether it proved its answer optimal and the best bound it proved.

highspy is imported inside :func:`maximise` (the collection's core imports PyPI libraries lazily: python/README.md)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from minbw.errors import MissingDependency

TIME_LIMIT = 30.0  # seconds, per solve, unless the caller says otherwise
SEED = 0


@dataclass(frozen=True)
class Row:
    """One constraint: ``sum(coefs[i] * x[cols[i]]) <= rhs``."""

    cols: tuple[int, ...]
    coefs: tuple[float, ...]
    rhs: float


@dataclass(frozen=True)
class MipResult:
    """A solve's answer: ``values`` the integer value of each column (the best solution found; the start or all
    zeros when none), its ``objective``, the ``bound`` proven (no solution is better), whether it is ``optimal``
    (within the gap asked for), HiGHS's ``status`` in words, and whether the ``time_limit`` stopped it."""

    values: tuple[int, ...]
    objective: float
    bound: float
    optimal: bool
    status: str
    time_limit_hit: bool


def _highs():
    """A silent HiGHS instance. highspy's ``Highs()`` turns on its callbacks at construction, which prints HiGHS's
    banner on stdout once per process before any option can be set (highspy 1.16); its base class ``_Highs`` is the
    same solver without them, so the options are set before anything is logged."""
    try:
        import highspy
    except ImportError as e:
        raise MissingDependency(
            f"the solver library highspy is not installed ({e}). Fix: pip install 'highspy>=1.7' "
            "(HiGHS, from PyPI) where minbw runs."
        ) from None
    highs = getattr(highspy, "_Highs", highspy.Highs)()
    highs.setOptionValue("output_flag", False)
    return highspy, highs


def maximise(
    costs: Sequence[float],
    upper: Sequence[float],
    rows: Sequence[Row],
    *,
    start: Sequence[int] | None = None,
    time_limit: float = TIME_LIMIT,
    abs_gap: float = 1e-6,
) -> MipResult:
    """Maximise ``costs @ x`` over integers ``0 <= x <= upper`` with every row's ``<= rhs``; ``start``: a feasible
    solution to begin from (HiGHS checks it; an infeasible one is ignored). Stops when the proven bound is within
    ``abs_gap`` of the best solution (a count: any gap below 1 proves it) or after ``time_limit`` seconds.
    Returns a :class:`MipResult`. Raises MissingDependency when highspy is not installed; ValueError when a row
    names a column that does not exist."""
    n = len(costs)
    if len(upper) != n:
        raise ValueError(f"{len(upper)} upper bounds for {n} columns")
    if n == 0:
        return MipResult((), 0.0, 0.0, True, "Optimal", False)
    for r in rows:
        if any(c < 0 or c >= n for c in r.cols):
            raise ValueError(f"a row names a column outside 0..{n - 1}: {r.cols}")
    highspy, highs = _highs()
    for option, value in (
        ("threads", 1),
        ("random_seed", SEED),
        ("time_limit", float(time_limit)),
        ("mip_rel_gap", 0.0),
        ("mip_abs_gap", float(abs_gap)),
    ):
        highs.setOptionValue(option, value)
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = len(rows)
    lp.col_cost_ = [float(c) for c in costs]
    lp.col_lower_ = [0.0] * n
    lp.col_upper_ = [float(u) for u in upper]
    lp.row_lower_ = [-highspy.kHighsInf] * len(rows)
    lp.row_upper_ = [float(r.rhs) for r in rows]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = list(itertools.accumulate((len(r.cols) for r in rows), initial=0))
    lp.a_matrix_.index_ = [c for r in rows for c in r.cols]
    lp.a_matrix_.value_ = [float(v) for r in rows for v in r.coefs]
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n
    lp.sense_ = highspy.ObjSense.kMaximize
    highs.passModel(lp)
    if start is not None:
        given = highspy.HighsSolution()
        given.col_value = [float(v) for v in start]
        given.value_valid = True
        highs.setSolution(given)
    highs.run()
    status = highs.getModelStatus()
    info = highs.getInfo()
    solution = highs.getSolution()
    found = info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
    if found:
        values = tuple(int(round(v)) for v in solution.col_value)
    else:
        values = tuple(int(v) for v in start) if start is not None else (0,) * n
    objective = float(sum(c * v for c, v in zip(costs, values)))
    optimal = status == highspy.HighsModelStatus.kOptimal
    dual = float(info.mip_dual_bound)
    bound = max(dual, objective) if math.isfinite(dual) else (objective if optimal else math.inf)
    return MipResult(
        values,
        objective,
        bound,
        optimal,
        highs.modelStatusToString(status),
        status == highspy.HighsModelStatus.kTimeLimit,
    )
