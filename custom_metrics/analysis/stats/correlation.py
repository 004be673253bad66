"""Correlation of two lists of numbers: the pair rule, Pearson, and tests with p-values.

Why here: CCSBench's length PCC (a corpus metric) and ``domsum correlate`` (DomainSum
Table 4: domain measures vs performance) correlate two lists of numbers, and
``domsum meta-eval``'s batched coefficients (:mod:`.coefficients`) share the same rule
for when a coefficient is undefined (:data:`MIN_PAIRS`, a side that does not vary).

* :func:`correlation_test` — Pearson r and Spearman rho with their two-sided p-values,
  and why they are undefined when they are.
* :func:`pearson` — plain-Python Pearson r, NaN below 2 values or for a constant side;
  the corpus function of CCSBench's ``length_pcc`` (no scipy import on the scoring path).

scipy is imported inside the functions: ``import custom_metrics`` stays free of it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: fewer finite pairs than this give no coefficient (two points always correlate +-1)
MIN_PAIRS = 3


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Pearson correlation r = cov(x, y) / (sd(x) sd(y)); NaN when n < 2 or a side is constant.

    Agrees with ``scipy.stats.pearsonr`` (which warns and returns NaN for constant input).
    """
    n = len(xs)
    if n != len(ys):
        raise ValueError(f"pearson: {n} vs {len(ys)} values")
    if n < 2:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return float("nan")
    return sxy / math.sqrt(sxx * syy)


def finite_pairs(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of ``x`` and ``y`` where both values are finite (NaN / inf drop the pair)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    return x[ok], y[ok]


def undefined_because(x: np.ndarray, y: np.ndarray) -> str:
    """Why no coefficient is computed on these finite pairs: ``"few"`` (below
    :data:`MIN_PAIRS`), ``"constant"`` (a side does not vary), or ``""`` (it is)."""
    if len(x) < MIN_PAIRS:
        return "few"
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return "constant"
    return ""


@dataclass(frozen=True)
class CorrelationTest:
    """Pearson and Spearman over the finite pairs, with two-sided p-values (NaN when undefined)."""

    n: int
    pearson_r: float = math.nan
    pearson_p: float = math.nan
    spearman_rho: float = math.nan
    spearman_p: float = math.nan
    #: :func:`undefined_because`: "" when the coefficients were computed
    undefined: str = ""


def correlation_test(x: Sequence[float], y: Sequence[float]) -> CorrelationTest:
    """Pearson r and Spearman rho of ``x`` and ``y`` with their p-values
    (``scipy.stats.pearsonr`` / ``spearmanr``) over the finite pairs."""
    x, y = finite_pairs(x, y)
    why = undefined_because(x, y)
    if why:
        return CorrelationTest(n=int(len(x)), undefined=why)
    from scipy import stats as sps

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r, p = sps.pearsonr(x, y)
        rho, sp = sps.spearmanr(x, y)
    return CorrelationTest(n=int(len(x)), pearson_r=float(r), pearson_p=float(p),
                           spearman_rho=float(rho), spearman_p=float(sp))


__all__ = ["MIN_PAIRS", "CorrelationTest", "correlation_test", "finite_pairs",
           "pearson", "undefined_because"]
