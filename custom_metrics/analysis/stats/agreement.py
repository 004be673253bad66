"""Inter-annotator agreement: Cohen's kappa (unweighted and weighted) between two
annotators, and Krippendorff's alpha (interval and ordinal) over any number.

Why here and not in meta-eval: kappa is a statistic of two rating lists like any
correlation; meta-eval's ``--kappa`` and ``--ratings`` tables call it, and so can any
analysis of two annotators. Items either annotator left empty (None / NaN) are left out;
categories are the ratings both gave, compared after rounding to 6 decimals (so 0.1 + 0.2
and 0.3 are one category).

Why alpha beside kappa: kappa compares two fixed annotators who rated every item;
Krippendorff's alpha takes any number of annotators, items rated by only some of them,
and a level of measurement (interval: the size of a disagreement counts; ordinal: only
the ranks between the two values do), which is what 1-5 summary ratings by three experts
or five crowd workers are. It is computed by the ``krippendorff`` package (Castro's
implementation of Krippendorff 2011).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def _both_rated(a: Sequence[Any], b: Sequence[Any]) -> list[tuple[Any, Any]]:
    """The (a, b) rating pairs where neither side is None or NaN."""
    return [(x, y) for x, y in zip(a, b)
            if x is not None and y is not None and not (isinstance(x, float) and math.isnan(x))
            and not (isinstance(y, float) and math.isnan(y))]


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> tuple[float, int]:
    """Unweighted Cohen's kappa over the items both annotators rated; (kappa, n)."""
    pairs = _both_rated(a, b)
    n = len(pairs)
    if n == 0:
        return float("nan"), 0
    cats = sorted({round(float(v), 6) for p in pairs for v in p})
    idx = {c: i for i, c in enumerate(cats)}
    m = np.zeros((len(cats), len(cats)))
    for x, y in pairs:
        m[idx[round(float(x), 6)], idx[round(float(y), 6)]] += 1
    return kappa_of_table(m), n


def kappa_of_table(table: np.ndarray) -> Any:
    """Cohen's kappa of a square table of counts (rows: one annotator's category, columns:
    the other's, in the same category order): ``(p_o - p_e) / (1 - p_e)`` with ``p_o`` the
    diagonal's share and ``p_e`` the sum over categories of the product of the two
    marginal shares (Cohen 1960). NaN for an empty table or when ``p_e`` is 1 (both gave one
    category only). A stack of tables (``(..., k, k)``) gives an array of kappas. Why a
    function of the table: a bootstrap over documents sums per-document tables and needs
    no item list (:mod:`custom_metrics.analysis.rankings`)."""
    m = np.asarray(table, dtype=float)
    n = m.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(m, axis1=-2, axis2=-1) / n
        pe = (m.sum(-2) * m.sum(-1)).sum(-1) / n ** 2
        kappa = np.where((n == 0) | (pe == 1), np.nan, (po - pe) / (1 - pe))
    return float(kappa) if kappa.ndim == 0 else kappa


def weighted_kappa(a: Sequence[Any], b: Sequence[Any], weights: str = "quadratic") -> tuple[float, int]:
    """Cohen's kappa with ``"quadratic"`` or ``"linear"`` disagreement weights; (kappa, n).

    kappa_w = 1 - sum(w * O) / sum(w * E), O the observed and E the chance
    (outer product of marginals) joint distribution over the sorted categories both
    annotators used, w_ij = (|i - j| / (k - 1))^p with p = 2 (quadratic) or 1.
    """
    pairs = [(float(x), float(y)) for x, y in _both_rated(a, b)]
    n = len(pairs)
    if n == 0:
        return float("nan"), 0
    cats = sorted({round(v, 6) for p in pairs for v in p})
    k = len(cats)
    if k < 2:
        return float("nan"), n
    idx = {c: i for i, c in enumerate(cats)}
    obs = np.zeros((k, k))
    for x, y in pairs:
        obs[idx[round(x, 6)], idx[round(y, 6)]] += 1
    obs /= n
    exp = np.outer(obs.sum(1), obs.sum(0))
    power = 2 if weights == "quadratic" else 1
    grid = np.arange(k)
    w = (np.abs(grid[:, None] - grid[None, :]) / (k - 1)) ** power
    denom = float((w * exp).sum())
    return (float("nan") if denom == 0 else 1.0 - float((w * obs).sum()) / denom), n


def krippendorff_alpha(reliability: Sequence[Sequence[Any]] | np.ndarray, level: str = "interval") -> float:
    """Krippendorff's alpha of a reliability matrix: one row per annotator, one column
    per item, NaN / None where an annotator did not rate the item.

    ``level`` is ``"interval"`` or ``"ordinal"`` (or ``"nominal"`` / ``"ratio"``).
    Items with fewer than two ratings carry no pairable value and are ignored. NaN
    when nothing is pairable or every rating has the same value (alpha is then 0/0).
    """
    import krippendorff

    data = np.array([[np.nan if v is None else float(v) for v in row] for row in reliability], dtype=float) \
        if not isinstance(reliability, np.ndarray) else reliability.astype(float)
    if data.ndim != 2 or data.shape[0] < 2:
        return float("nan")
    pairable = (np.isfinite(data).sum(0) >= 2)
    values = data[:, pairable]
    if values.size == 0 or len(np.unique(values[np.isfinite(values)])) < 2:
        return float("nan")
    return float(krippendorff.alpha(reliability_data=values, level_of_measurement=level))


__all__ = ["cohen_kappa", "kappa_of_table", "krippendorff_alpha", "weighted_kappa"]
