"""Paired significance tests between two systems scored on the same documents.

Why paired: two summarizers evaluated on the same test documents share each
document's difficulty; comparing their per-document scores pair by pair removes that
shared variance, so a real difference is found with far fewer documents than by
comparing two independent means (Dror et al. 2018, "The Hitchhiker's Guide to Testing
Statistical Significance in NLP").

Two tests, both on the statistic ``delta = S(A) - S(B)`` where ``S`` is the metric's
corpus value (the mean of per-document scores, or a corpus function such as
DomainSum's geometric mean of the ROUGE-1/2/L means):

* :func:`paired_permutation_test` (default of ``domsum report``): under the null
  hypothesis the two systems are exchangeable on each document, so each document's
  pair of scores is swapped with probability 1/2. The convention is exactly that of
  ``scipy.stats.permutation_test(..., permutation_type="samples")``: every one of the
  ``2**n`` swap patterns when that number is at most ``n_resamples`` (exact test),
  else ``n_resamples`` random patterns with the ``+1`` correction (row ``i`` of
  ``numpy.random.default_rng(seed).random((n_resamples, n)) < 0.5``, drawn in blocks of
  :data:`BLOCK` rows from that one generator: the same patterns); the two-sided
  p-value is twice the smaller one-sided p-value, clipped to 1, and values within
  ``100 * eps * |delta|`` of the observed one count as equal (widened to ``1e-9`` times the
  largest null value, so scores given to a few decimals tie where they tie in theory).
* :func:`paired_bootstrap_test` (Koehn 2004; Berg-Kirkpatrick et al. 2012): resample
  documents with replacement (the same indices for both systems) and count how often
  the resampled difference exceeds twice the observed one: ``p = P(delta* - delta >=
  |delta|)``, a one-sided test of the observed direction.

Both take per-document values as lists; ``statistic`` is ``"mean"``, ``"nanmean"``
(vectorised) or a function of a list of per-document items (corpus metrics).

What a comparison needs besides the test, so that a verdict can be stated with its power:

* :func:`paired_resamples`: ``S(A) - S(B)`` over bootstrap resamples of documents drawn
  with the same indices on both sides (the resampling rule of :mod:`.bootstrap`), and the
  standard error of the difference, 0 when it is at the level of rounding (every
  document differs by the same amount: two floats that should be equal differ in their
  last bits, and an SE of 1e-17 would claim a difference of 1e-14 detectable); its
  percentile interval at any level is :func:`.bootstrap.percentile_interval` of those
  resamples (:func:`paired_interval` at one level);
* :func:`min_detectable_difference`: the smallest true difference a two-sided test at
  ``alpha`` finds with probability ``power`` at this n, the paired t-test's
  ``(t_{1-alpha/2, n-1} + t_{power, n-1}) * SE``, with ``SE = sd(d) / sqrt(n)`` of the
  per-document differences ``d`` for a mean (for a corpus statistic, the paired
  bootstrap's standard deviation of the difference). The t quantiles, not the normal
  ones, because reports often compare a handful of documents, where the normal
  approximation understates the difference that can be found. None below
  :data:`MDD_MIN_N` documents or when the differences have no spread
  (:func:`no_detectable_difference` says which): at n = 2 the SD has one degree of
  freedom and ``t_{0.975, 1}`` is 12.7, and an SE of 0 gives a "detectable" difference
  of 0 that no test at that n could find;
* :func:`smallest_p`: the smallest p-value the test can give at all (an exact
  permutation test over 3 documents has 8 swap patterns: p >= 0.25, so no difference is
  ever found, however large);
* :func:`holm`: Holm-Bonferroni adjusted p-values over a family of tests (Holm 1979):
  sort the m p-values ascending, multiply the i-th smallest by ``m - i + 1``, make the
  sequence non-decreasing and clip it at 1. It controls the family-wise error rate like
  Bonferroni under any dependence between the tests, and rejects at least as often.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from custom_metrics.analysis.stats.bootstrap import bootstrap_distribution, percentile_interval, resample_indices

Statistic = str | Callable[[list[Any]], float]
#: relative to the largest null value: differences smaller than this count as ties (and a
#: standard error smaller than this times the largest score is rounding, not spread)
TIE_TOLERANCE = 1e-9
#: fewest documents a minimum detectable difference is given for (module docstring)
MDD_MIN_N = 3
#: swap patterns enumerated at once in the exact test and drawn at once otherwise
BLOCK = 4096


@dataclass(frozen=True)
class PairedResult:
    """Outcome of one paired test: the observed difference, its p-value and how it was had."""

    delta: float
    p_value: float
    n: int
    resamples: int
    exact: bool
    test: str


def _stat_fn(statistic: Statistic) -> Callable[[list[Any]], float]:
    if callable(statistic):
        return statistic
    if statistic == "mean":
        return lambda items: float(np.mean(np.asarray(items, dtype=float))) if len(items) else math.nan
    if statistic == "nanmean":
        def nanmean(items: list[Any]) -> float:
            arr = np.asarray(items, dtype=float)
            arr = arr[~np.isnan(arr)]
            return float(arr.mean()) if len(arr) else math.nan
        return nanmean
    raise ValueError(f"statistic must be 'mean', 'nanmean' or a function, got {statistic!r}")


def _check(a: Sequence[Any], b: Sequence[Any]) -> int:
    if len(a) != len(b):
        raise ValueError(f"paired test needs the same documents on both sides ({len(a)} != {len(b)})")
    return len(a)


def _swap_patterns(n: int, n_resamples: int, seed: int) -> tuple[bool, int, Any]:
    """(exact, count, iterator of boolean blocks ``(rows, n)``: True = swap this document)."""
    if n < 63 and 2 ** n <= n_resamples:
        def exact_blocks():
            rows = itertools.product((False, True), repeat=n)
            while block := list(itertools.islice(rows, BLOCK)):
                yield np.asarray(block, dtype=bool).reshape(len(block), n)
        return True, 2 ** n, exact_blocks()

    def random_blocks():
        rng = np.random.default_rng(seed)
        done = 0
        while done < n_resamples:
            size = min(BLOCK, n_resamples - done)
            yield rng.random((size, n)) < 0.5
            done += size
    return False, n_resamples, random_blocks()


def _exact_mean(diff: Sequence[float]) -> float:
    """The correctly rounded mean (``math.fsum``): two swap patterns whose differences have
    the same exact sum give the same float, so theoretical ties stay ties."""
    return math.fsum(diff) / len(diff)


def _null_deltas(a: Sequence[Any], b: Sequence[Any], statistic: Statistic, blocks, exact: bool = False) -> np.ndarray:
    if statistic == "mean" and not callable(statistic) and exact:
        diff = [float(x) - float(y) for x, y in zip(a, b)]
        return np.asarray([_exact_mean([-d if s else d for d, s in zip(diff, row)])
                           for block in blocks for row in block], dtype=float)
    if statistic == "mean" and not callable(statistic):
        xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        diff = xa - xb
        # swapping a document negates its difference; the mean difference is linear
        return np.concatenate([np.where(block, -diff, diff).mean(axis=1) for block in blocks])
    fn = _stat_fn(statistic)
    out = []
    for block in blocks:
        for row in block:
            left = [b[i] if s else a[i] for i, s in enumerate(row)]
            right = [a[i] if s else b[i] for i, s in enumerate(row)]
            out.append(fn(left) - fn(right))
    return np.asarray(out, dtype=float)


def _observe(a: Sequence[Any], b: Sequence[Any], statistic: Statistic, test: str):
    """(n, statistic function, observed difference, a result when there is nothing to test)."""
    n = _check(a, b)
    fn = _stat_fn(statistic)
    if n == 0:
        return n, fn, math.nan, PairedResult(math.nan, math.nan, 0, 0, test == "permutation", test)
    if statistic == "mean" and not callable(statistic):
        # the mean difference as every null value is computed (a correctly rounded mean of
        # per-document differences), so the identity pattern ties with it exactly
        observed = _exact_mean([float(x) - float(y) for x, y in zip(a, b)])
    else:
        observed = fn(list(a)) - fn(list(b))
    if not math.isfinite(observed):
        return n, fn, observed, PairedResult(observed, math.nan, n, 0, test == "permutation", test)
    return n, fn, observed, None


def paired_permutation_test(a: Sequence[Any], b: Sequence[Any], statistic: Statistic = "mean",
                            n_resamples: int = 10_000, seed: int = 1234) -> PairedResult:
    """Two-sided paired permutation (sign-flip) test of ``S(a) - S(b)`` (module docstring)."""
    n, fn, observed, untestable = _observe(a, b, statistic, "permutation")
    if untestable:
        return untestable
    exact, count, blocks = _swap_patterns(n, n_resamples, seed)
    null = _null_deltas(list(a), list(b), statistic, blocks, exact)
    null = null[~np.isnan(null)]
    adjustment = 0 if exact else 1
    # scipy's tolerance, widened to the scale of the null values: data given to a few
    # decimals (0.35 - 0.30 and 0.82 - 0.77) tie in theory but not in binary floating point
    gamma = max(abs(np.finfo(float).eps * 100 * observed), TIE_TOLERANCE * float(np.max(np.abs(null), initial=0.0)))
    used = len(null)
    less = (np.sum(null <= observed + gamma) + adjustment) / (used + adjustment)
    greater = (np.sum(null >= observed - gamma) + adjustment) / (used + adjustment)
    p = float(np.clip(2 * min(less, greater), 0.0, 1.0))
    return PairedResult(float(observed), p, n, count, exact, "permutation")


def paired_bootstrap_test(a: Sequence[Any], b: Sequence[Any], statistic: Statistic = "mean",
                          n_resamples: int = 10_000, seed: int = 1234) -> PairedResult:
    """One-sided paired bootstrap test of the observed direction (module docstring)."""
    n, fn, observed, untestable = _observe(a, b, statistic, "bootstrap")
    if untestable:
        return untestable
    la, lb = list(a), list(b)
    if statistic == "mean" and not callable(statistic):
        diff = np.asarray(la, dtype=float) - np.asarray(lb, dtype=float)
        deltas = np.concatenate([diff[idx].mean(axis=1) for idx in resample_indices(n, n_resamples, seed)])
    else:
        deltas = np.asarray([fn([la[i] for i in row]) - fn([lb[i] for i in row])
                             for idx in resample_indices(n, n_resamples, seed) for row in idx], dtype=float)
    deltas = deltas[~np.isnan(deltas)]
    if not len(deltas):
        return PairedResult(float(observed), math.nan, n, 0, False, "bootstrap")
    p = float(np.mean(deltas - observed >= abs(observed))) if observed >= 0 else \
        float(np.mean(deltas - observed <= -abs(observed)))
    return PairedResult(float(observed), p, n, len(deltas), False, "bootstrap")


TESTS = {"permutation": paired_permutation_test, "bootstrap": paired_bootstrap_test}


def paired_resamples(a: Sequence[Any], b: Sequence[Any], statistic: Statistic = "mean", n_boot: int = 1000,
                     seed: int = 1234) -> tuple[np.ndarray, float]:
    """``(resampled S(a) - S(b), SE)``: the difference over ``n_boot`` paired resamples of
    documents, and its standard error (``sd(a - b) / sqrt(n)`` for a mean; the resampled
    differences' standard deviation for a corpus statistic).

    Both sides are resampled with one seed, so each resample draws the same documents on
    both (:func:`.bootstrap.resample_indices`). ``n_boot`` 0: no resamples, SE kept for a
    mean. An SE at most :data:`TIE_TOLERANCE` times the largest score (or times 1, when every
    score is below 1) is returned as 0: the differences have no spread, only rounding.
    """
    n = _check(a, b)
    if n == 0:
        return np.empty(0), math.nan
    mean = statistic == "mean" and not callable(statistic)
    se, scale = math.nan, 0.0
    if mean and n > 1:
        xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        se = float(np.std(xa - xb, ddof=1) / math.sqrt(n))
        scale = float(max(np.max(np.abs(xa)), np.max(np.abs(xb))))
    if n_boot <= 0:
        return np.empty(0), _no_rounding(se, scale)
    sa, sb = bootstrap_distribution(list(a), statistic, n_boot, seed), bootstrap_distribution(list(b), statistic,
                                                                                               n_boot, seed)
    dist = sa - sb
    if not mean:
        finite = ~np.isnan(dist)
        se = float(np.std(dist[finite], ddof=1)) if finite.sum() > 1 else math.nan
        scale = float(max(np.max(np.abs(sa[finite]), initial=0.0), np.max(np.abs(sb[finite]), initial=0.0)))
    return dist, _no_rounding(se, scale)


def _no_rounding(se: float, scale: float) -> float:
    """``se``, or 0 when it is rounding: at most :data:`TIE_TOLERANCE` times the largest score,
    or times 1 (a metric's own unit) when every score is smaller than that. Why the floor:
    scores that are all near 0 (1e-10 and 0) make any relative bound as small as they are, and
    an SE of 1e-11 would claim a difference of 4e-11 detectable."""
    return 0.0 if math.isfinite(se) and se <= TIE_TOLERANCE * max(scale, 1.0) else se


def paired_interval(a: Sequence[Any], b: Sequence[Any], statistic: Statistic = "mean", n_boot: int = 1000,
                    seed: int = 1234, alpha: float = 0.05) -> tuple[float, float, float]:
    """``(low, high, SE)`` of ``S(a) - S(b)``: the ``1 - alpha`` percentile interval of
    :func:`paired_resamples` (NaN without resamples) and its SE."""
    dist, se = paired_resamples(a, b, statistic, n_boot, seed)
    low, high = percentile_interval(dist, alpha)
    return low, high, se


def no_detectable_difference(se: float, n: int) -> str | None:
    """Why no minimum detectable difference can be given at ``n`` documents with this SE
    (None: it can)."""
    if n < MDD_MIN_N:
        return f"fewer than {MDD_MIN_N} documents ({n})"
    if not math.isfinite(se):
        return "no standard error of the difference (no resample gave a number)"
    if se == 0:
        return "the differences have no spread (every document differs by the same amount)"
    return None


def min_detectable_difference(se: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """``(t_{1-alpha/2, n-1} + t_{power, n-1}) * se`` (module docstring); NaN where
    :func:`no_detectable_difference` gives a reason."""
    if no_detectable_difference(se, n) is not None:
        return math.nan
    from scipy import stats as sps

    return float((sps.t.ppf(1 - alpha / 2, n - 1) + sps.t.ppf(power, n - 1)) * se)


def smallest_p(result: PairedResult) -> float:
    """The smallest p-value ``result``'s test could have given: ``2 / 2**n`` for the exact
    two-sided permutation test, ``2 / (resamples + 1)`` for the random one, 0 for the bootstrap."""
    if result.test != "permutation" or result.n == 0:
        return 0.0
    return min(1.0, 2 / (2 ** result.n if result.exact else result.resamples + 1))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order (module docstring); a NaN p is
    no test: it stays NaN and does not count in the family's size."""
    finite = sorted((p, i) for i, p in enumerate(p_values) if math.isfinite(p))
    m = len(finite)
    out = [math.nan] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(finite):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


__all__ = ["MDD_MIN_N", "PairedResult", "TESTS", "holm", "min_detectable_difference", "no_detectable_difference",
           "paired_bootstrap_test", "paired_interval", "paired_permutation_test", "paired_resamples", "smallest_p"]
