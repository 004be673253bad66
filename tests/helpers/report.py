"""Helpers shared by the unit and integration tests of report (tests/unit, tests/integration)."""

from __future__ import annotations


import numpy as np
from scipy import stats as sstats


def _scipy_paired(a, b, statistic, n_resamples=10_000):
    """scipy's paired permutation test on document indices, so any corpus statistic works."""
    items = list(a) + list(b)
    n = len(a)

    def stat(x, y):
        return statistic([items[int(i)] for i in x]) - statistic([items[int(i)] for i in y])

    res = sstats.permutation_test((np.arange(n), np.arange(n, 2 * n)), stat, permutation_type="samples",
                                  n_resamples=n_resamples, vectorized=False, alternative="two-sided")
    return res.pvalue


def holm_adjusted(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out here from its definition (Holm 1979), so a
    test's expected corrected p-values never come from the report's own function."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out
