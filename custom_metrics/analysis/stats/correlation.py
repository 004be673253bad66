"""Correlation of two lists of numbers: the pair rule, Pearson, and tests with p-values.

Why here: ``domsum correlate`` (DomainSum Table 4: domain measures vs performance)
correlates two lists of numbers, and
``domsum meta-eval``'s batched coefficients (:mod:`.coefficients`) share the same rule
for when a coefficient is undefined (:data:`MIN_PAIRS`, a side that does not vary).

* :func:`correlation_test` — Pearson r and Spearman rho with their two-sided p-values,
  and why they are undefined when they are.

CCSBench's length PCC has its own plain-Python Pearson beside its formula
(:func:`custom_metrics.families.ccs.pearson`): a metric module imports no analysis.

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
           "undefined_because"]
