"""The metric-human correlation table: every metric at every level with every coefficient,
each with its bootstrap interval.

Why a module above :mod:`.levels` and :mod:`.resampling`: it uses both (the
coefficients at a level, and the resamples shared by every metric), while the
resampling computes its distributions from the levels' functions; one table module on
top keeps the two free of each other.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from custom_metrics.analysis.stats.coefficients import COEFFICIENTS
from custom_metrics.analysis.stats.levels import LEVELS, level_corr, level_counts, matrices
from custom_metrics.analysis.stats.resampling import bootstrap_ci, bootstrap_counts, kept_heap
from custom_metrics.progress import bar


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


__all__ = ["correlation_table"]
