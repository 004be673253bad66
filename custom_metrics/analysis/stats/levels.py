"""Metric-human correlation at the three levels of the meta-evaluation literature.

A meta-evaluation table holds one row per (document, system) with metric columns and a
``human`` column; it becomes two ``systems x documents`` matrices ``X`` (metric) and
``Z`` (human) and a mask ``V`` of the cells where both are finite (any other cell is
left out of every level). Levels follow Deutsch, Dror & Roth (TACL 2021) and
``nlpstats``:

* ``summary`` — per document, the correlation across its systems; then the mean over
  documents. A document whose correlation is undefined (fewer than 3 scored systems, or
  the metric or the human scores constant across its systems) is **left out of the
  mean** and counted in ``excluded`` (nlpstats skips them the same way; scipy gives NaN);
* ``system`` — the correlation of the systems' means over their scored documents. Means
  are rounded to 12 significant digits (:func:`.coefficients.round_sig`), so two systems
  whose ratings are the same multiset have equal means and stay tied;
* ``global`` — every scored (document, system) pair pooled (what the FM paper and its
  release report; SummEval's "summary level pooled").

Coefficients: :data:`.coefficients.COEFFICIENTS` (Pearson, Spearman, Kendall tau-b and
tau-c). Every function takes optional resampling multiplicities ``cs`` (``(..., m)``,
systems) and ``cd`` (``(..., n)``, documents), so the bootstrap of :mod:`.resampling`
computes a thousand resamples at once; ``X``/``Z`` may also carry leading batch axes
(the permutation test).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from custom_metrics.analysis.stats.coefficients import COEFFICIENTS, round_sig, weighted_corr

LEVELS = ("summary", "system", "global")


@dataclass(frozen=True)
class Matrices:
    """One metric against the human scores as ``systems x documents`` arrays."""

    X: np.ndarray  #: metric values, 0 where not ``V``
    Z: np.ndarray  #: human values, 0 where not ``V``
    V: np.ndarray  #: True where both are finite
    systems: tuple
    documents: tuple
    dropped: int  #: rows of the table whose metric or human value is not finite


def matrices(df: pd.DataFrame, metric: str, human: str = "human") -> Matrices:
    """``metric`` and ``human`` of the long table ``df`` (``doc_id``, ``system``) as matrices.

    Systems are sorted, documents in order of first appearance; a (document, system)
    absent from the table is an unscored cell like a NaN.
    """
    sys_codes, systems = pd.factorize(df["system"].astype(str), sort=True)
    doc_codes, docs = pd.factorize(df["doc_id"].astype(str), sort=False)
    x = pd.to_numeric(df[metric], errors="coerce").to_numpy(float)
    z = pd.to_numeric(df[human], errors="coerce").to_numpy(float)
    X = np.full((len(systems), len(docs)), np.nan)
    Z = np.full_like(X, np.nan)
    X[sys_codes, doc_codes] = x
    Z[sys_codes, doc_codes] = z
    V = np.isfinite(X) & np.isfinite(Z)
    dropped = int((~(np.isfinite(x) & np.isfinite(z))).sum())
    return Matrices(np.where(V, X, 0.0), np.where(V, Z, 0.0), V, tuple(systems), tuple(docs), dropped)


def _weights(V: np.ndarray, cs: np.ndarray | None, cd: np.ndarray | None) -> np.ndarray:
    w = V.astype(float)
    if cs is not None:
        w = w * cs[..., :, None]
    if cd is not None:
        w = w * cd[..., None, :]
    return w


def system_means(X: np.ndarray, V: np.ndarray, cd: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(tie-safe means per system over its scored documents, weight of scored documents)."""
    wd = _weights(V, None, cd)
    total = wd.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = round_sig((wd * X).sum(-1) / total)
    return np.where(total > 0, means, 0.0), total


def level_corr(X: np.ndarray, Z: np.ndarray, V: np.ndarray, level: str, coefficient: str,
               cs: np.ndarray | None = None, cd: np.ndarray | None = None) -> np.ndarray:
    """The ``coefficient`` of ``X`` vs ``Z`` at ``level``; one value per resample (batch axes)."""
    if level == "global":
        w = _weights(V, cs, cd)
        flat = w.shape[:-2] + (-1,)
        return weighted_corr(X.reshape(X.shape[:-2] + (-1,)), Z.reshape(Z.shape[:-2] + (-1,)),
                             w.reshape(flat), coefficient)
    if level == "system":
        mx, total = system_means(X, V, cd)
        mz, _ = system_means(Z, V, cd)
        ws = (total > 0).astype(float) * (1.0 if cs is None else cs)
        return weighted_corr(mx, mz, ws, coefficient)
    if level != "summary":
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    w = _weights(V, cs, None)
    per_doc = weighted_corr(np.swapaxes(X, -1, -2), np.swapaxes(Z, -1, -2), np.swapaxes(w, -1, -2), coefficient)
    if cd is not None:
        per_doc = np.broadcast_to(per_doc, np.broadcast_shapes(per_doc.shape, cd.shape))
    dw = np.ones(per_doc.shape) if cd is None else np.broadcast_to(cd, per_doc.shape)
    ok = np.isfinite(per_doc)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.where(ok, per_doc, 0.0) * dw).sum(-1) / (ok * dw).sum(-1)


def level_counts(m: Matrices, level: str, coefficient: str) -> tuple[int, int]:
    """(n, excluded): documents averaged and documents left out (summary level), scored
    systems (system level) or scored pairs (global level); ``excluded`` is 0 but at the
    summary level."""
    if level == "global":
        return int(m.V.sum()), 0
    if level == "system":
        return int(m.V.any(1).sum()), 0
    per_doc = weighted_corr(m.X.T, m.Z.T, m.V.T.astype(float), coefficient)
    scored = m.V.any(0)
    return int(np.isfinite(per_doc).sum()), int((scored & ~np.isfinite(per_doc)).sum())


def correlation_table(df: pd.DataFrame, metrics: Sequence[str], *, n_boot: int = 1000, seed: int = 0,
                      resampling: str = "both", human: str = "human", levels: Sequence[str] = LEVELS,
                      coefficients: Sequence[str] = COEFFICIENTS, progress: bool | None = False) -> pd.DataFrame:
    """Every metric vs ``human`` at every level with every coefficient, one row each.

    Columns: ``metric``, ``level``, ``coefficient``, ``r``, ``ci_low``/``ci_high`` (the
    percentile 95% bootstrap interval, :func:`.resampling.bootstrap_ci`, resampling
    ``resampling``: ``systems``, ``documents`` or ``both``), ``n`` and ``excluded``
    (:func:`level_counts`), ``n_pairs`` (scored pairs), ``dropped_pairs`` (rows with a
    non-finite metric or human value) and ``resampling``. All metrics and levels share
    the resamples of ``seed`` (paired intervals).
    """
    from custom_metrics.analysis.stats.resampling import bootstrap_ci, bootstrap_counts, kept_heap
    from custom_metrics.progress import bar

    rows = []
    cs = cd = None
    with bar(len(metrics) * len(levels) * len(coefficients), "meta-eval: correlations", unit="coef",
             enabled=progress) as ticks, kept_heap():
        for metric in metrics:
            m = matrices(df, metric, human)
            if cs is None and n_boot > 0:
                cs, cd = bootstrap_counts(len(m.systems), len(m.documents), n_boot, resampling, seed)
            for level in levels:
                for coef in coefficients:
                    r = float(level_corr(m.X, m.Z, m.V, level, coef))
                    n, excluded = level_counts(m, level, coef)
                    lo, hi = bootstrap_ci(m, level, coef, cs, cd) if n_boot > 0 and np.isfinite(r) \
                        else (float("nan"), float("nan"))
                    rows.append({"metric": metric, "level": level, "coefficient": coef, "r": r, "ci_low": lo,
                                 "ci_high": hi, "n": n, "excluded": excluded, "n_pairs": int(m.V.sum()),
                                 "dropped_pairs": m.dropped, "resampling": resampling if n_boot > 0 else "none"})
                    ticks.update(1)
    return pd.DataFrame(rows)


def metric_matrix(df: pd.DataFrame, columns: Sequence[str], level: str = "global",
                  coefficient: str = "pearson") -> pd.DataFrame:
    """``coefficient`` at ``level`` between every two of ``columns`` (a heat map's numbers).

    The default, global Pearson, is the FM paper's Figure 3 (its release computes
    ``numpy.corrcoef`` over all (paper, system) pairs).
    """
    cols = list(columns)
    out = pd.DataFrame(np.nan, index=cols, columns=cols)
    for a in cols:
        for b in cols:
            m = matrices(df, a, b)
            out.loc[a, b] = float(level_corr(m.X, m.Z, m.V, level, coefficient))
    return out


__all__ = ["COEFFICIENTS", "LEVELS", "Matrices", "correlation_table", "level_corr", "level_counts",
           "matrices", "metric_matrix", "system_means"]
