"""Seeded percentile bootstrap over documents: one resampling rule for every report.

Why one module: ``domsum report`` (the brackets of its tables), ``domsum
rescore`` (an interval for every key of a re-scored file) and ``domsum meta-eval`` (the
interval of every metric-human correlation, :mod:`.levels`) must draw resamples the same
way, so that the same per-document scores, seed and resample count give the same
interval wherever it is printed. Resamples are rows of
``numpy.random.default_rng(seed).integers(0, n, size=(n_boot, n))``, drawn in chunks
of rows (the generator fills row by row, so chunking changes no number, only the
memory a large corpus needs); every statistic of one call, and every key scored with
the same seed, sees the same resamples, so the intervals of two keys are paired.

The interval is the percentile interval (``alpha / 2`` and ``1 - alpha / 2``
quantiles of the resampled statistic, numpy's default linear interpolation), as in
``scipy.stats.bootstrap(method="percentile")``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

#: resampled index cells held at once (rows x documents); bounds the memory of large corpora
CHUNK_CELLS = 4_000_000

Statistic = str | Callable[[list[Any]], float]


def resample_indices(n: int, n_boot: int, seed: int | Sequence[int]) -> Iterator[np.ndarray]:
    """Blocks of resampled document indices, ``(rows, n)`` each, ``n_boot`` rows in all.

    ``seed``: anything ``numpy.random.default_rng`` takes; a sequence such as
    ``[seed, level, method]`` gives each of several intervals its own stream.
    """
    rng = np.random.default_rng(seed)
    rows = max(1, CHUNK_CELLS // max(n, 1))
    done = 0
    while done < n_boot:
        size = min(rows, n_boot - done)
        yield rng.integers(0, n, size=(size, n))
        done += size


def percentile_interval(distribution: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """The ``alpha`` percentile interval of a resampled statistic (NaN resamples left out)."""
    dist = np.asarray(distribution, dtype=float)
    dist = dist[~np.isnan(dist)]
    if not len(dist):
        return math.nan, math.nan
    lo, hi = np.percentile(dist, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(lo), float(hi)


def bootstrap_distribution(values: Sequence[Any], statistic: Statistic = "mean", n: int = 1000,
                           seed: int = 1234) -> np.ndarray:
    """The statistic of each of ``n`` resamples of ``values`` (documents drawn with replacement).

    ``statistic``: ``"mean"``, or ``"nanmean"`` (each resample's mean over its non-NaN
    values, so the number of scored documents varies as it would in another sample;
    an all-NaN resample gives NaN), both vectorised; or a function of the resampled
    list of items (a corpus metric recomputed on the resample), called once per
    resample. NaN results are kept: :func:`percentile_interval` leaves them out.
    """
    size = len(values)
    if size == 0 or n <= 0:
        return np.empty(0)
    if callable(statistic):
        items = list(values)
        return np.asarray([statistic([items[i] for i in row])
                           for block in resample_indices(size, n, seed) for row in block], dtype=float)
    if statistic not in ("mean", "nanmean"):
        raise ValueError(f"statistic must be 'mean', 'nanmean' or a function, got {statistic!r}")
    arr = np.asarray(values, dtype=float)
    out = []
    for block in resample_indices(size, n, seed):
        if statistic == "mean":
            out.append(arr[block].mean(axis=1))
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                sample = arr[block]
                kept = (~np.isnan(sample)).sum(axis=1)
                out.append(np.where(kept > 0, np.nansum(sample, axis=1) / np.maximum(kept, 1), np.nan))
    return np.concatenate(out)


def bootstrap_interval(values: Sequence[Any], statistic: Statistic = "mean", n: int = 1000, seed: int = 1234,
                       alpha: float = 0.05) -> tuple[float, float]:
    """Percentile ``1 - alpha`` bootstrap interval of ``statistic`` over documents.

    ``(nan, nan)`` when there is nothing to resample or no resample gives a number.
    """
    return percentile_interval(bootstrap_distribution(values, statistic, n, seed), alpha)


__all__ = ["bootstrap_distribution", "bootstrap_interval", "percentile_interval", "resample_indices"]
