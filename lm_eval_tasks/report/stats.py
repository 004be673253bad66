"""Point estimates, intervals and paired tests from a run's logged per-document scores.

Why from the samples and not the results file: the results file holds one number and
the harness's standard error per key; an interval for a corpus metric (DomainSum's
geometric-mean ROUGE has none in the harness) and any comparison of two systems on the
same documents need the per-document values. Each key is folded exactly as the harness
folded it — the aggregation of its :mod:`custom_metrics.registry` record (``mean``,
``nanmean``, ``sum`` or the family's corpus function) — so the report's point estimate
equals the reported one, and a difference is listed as a problem of the run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from custom_metrics import registry
from custom_metrics.analysis.stats.bootstrap import bootstrap_interval
from custom_metrics.analysis.stats.significance import (TESTS, PairedResult, min_detectable_difference,
                                                        paired_interval)
from lm_eval_tasks.report.runs import Run

#: relative difference between the reported value and the one refolded from the samples
#: above which the report says so (float noise of a sum over documents stays below it)
AGREEMENT_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Estimate:
    """One key of one run: the reported value, its interval and where they come from."""

    value: float
    low: float = math.nan
    high: float = math.nan
    stderr: float | None = None
    n: int = 0
    #: the value refolded from the samples equals the reported one (None: no samples)
    agrees: bool | None = None


def aggregation_of(key: str) -> str:
    try:
        return registry.family_of(key).key(key).aggregation
    except KeyError:
        return "mean"


def _context(run: Run, family: str) -> registry.Context:
    from lm_eval_tasks.scoring_context import family_context

    return family_context(family, benchmark=run.benchmark, subset=run.subset)


def statistic_for(run: Run, key: str):
    """The function that folds per-document items of ``key`` into the reported value."""
    how = aggregation_of(key)
    if how in ("mean", "nanmean"):
        return how
    fam = registry.family_of(key)
    ctx = _context(run, fam.name)
    return lambda items: registry.aggregate(fam, key, items, ctx)


def _values(items: list[Any], how: str) -> list[Any]:
    if how in ("mean", "nanmean"):
        return [math.nan if v is None else float(v) for v in items]
    return items


def fold(run: Run, key: str, items: list[Any]) -> float:
    how = aggregation_of(key)
    if not items:
        return math.nan
    if how in ("mean", "nanmean"):
        arr = np.asarray(_values(items, how), dtype=float)
        arr = arr[~np.isnan(arr)]
        return float(arr.mean()) if len(arr) else math.nan
    return float(statistic_for(run, key)(items))


def _interval(run: Run, key: str, items: list[Any], n_boot: int, seed: int, alpha: float) -> tuple[float, float]:
    """The percentile bootstrap interval of ``key`` folded over ``items`` (NaN for counts
    and when ``n_boot`` is 0): a count of events is a fact of the run, not an estimate."""
    how = aggregation_of(key)
    if how == "sum" or n_boot <= 0:
        return math.nan, math.nan
    stat = how if how in ("mean", "nanmean") else statistic_for(run, key)
    return bootstrap_interval(_values(items, how), stat, n_boot, seed, alpha)


def estimate(run: Run, key: str, n_boot: int = 1000, seed: int = 1234, alpha: float = 0.05,
             docs: Sequence[str] | None = None) -> Estimate:
    """The reported value of ``key`` with a percentile bootstrap interval over documents.

    With ``docs`` (document keys), the value refolded from those documents' logged
    scores alone and its interval over them: a run's score on the documents it shares
    with another, beside their difference (``stderr`` and ``agrees`` then stay None).
    """
    reported = run.values.get(key, math.nan)
    per = run.per_doc(key)
    if docs is not None:
        items = [per[d] for d in docs if d in per]
        if not items:
            return Estimate(value=math.nan)
        low, high = _interval(run, key, items, n_boot, seed, alpha)
        return Estimate(value=fold(run, key, items), low=low, high=high, n=len(items))
    if not per:
        return Estimate(value=reported, stderr=run.stderr.get(key))
    items = list(per.values())
    refolded = fold(run, key, items)
    agrees = (math.isnan(refolded) and math.isnan(reported)) or (
        math.isfinite(refolded) and math.isfinite(reported)
        and abs(refolded - reported) <= AGREEMENT_TOLERANCE * max(1.0, abs(reported)))
    low, high = _interval(run, key, items, n_boot, seed, alpha)
    return Estimate(value=reported if math.isfinite(reported) else refolded, low=low, high=high,
                    stderr=run.stderr.get(key), n=len(items), agrees=agrees)


@dataclass(frozen=True)
class Comparison:
    """A paired test of one key between two runs on the documents they share: ``S(a) - S(b)``,
    its p-value, its paired bootstrap interval and the smallest difference findable at its n."""

    a: Run
    b: Run
    key: str
    result: PairedResult
    #: the documents compared (both runs scored them), in ``a``'s order
    docs: tuple[str, ...] = ()
    #: 95 % paired percentile bootstrap interval of ``S(a) - S(b)`` (NaN without resamples)
    interval: tuple[float, float] = (math.nan, math.nan)
    #: minimum detectable difference (alpha 0.05 two-sided, 80 % power) at this n
    mdd: float = math.nan

    @property
    def shared(self) -> int:
        return self.result.n


def paired(a: Run, b: Run, key: str, test: str = "permutation", n_resamples: int = 10_000,
           seed: int = 1234, n_boot: int = 1000, alpha: float = 0.05) -> Comparison | None:
    """``S(a) - S(b)`` on the documents both runs scored, with its p-value, interval and minimum
    detectable difference (:mod:`custom_metrics.analysis.stats.significance`; None: no shared documents)."""
    pa, pb = a.per_doc(key), b.per_doc(key)
    shared = [d for d in pa if d in pb]
    if not shared:
        return None
    how = aggregation_of(key)
    if how == "sum":
        return None
    stat = how if how in ("mean", "nanmean") else statistic_for(a, key)
    if how == "nanmean":  # a document the metric does not apply to on one side is not a pair
        shared = [d for d in shared if pa[d] is not None and pb[d] is not None
                  and not (math.isnan(float(pa[d])) or math.isnan(float(pb[d])))]
        stat = "mean"
        if not shared:
            return None
    xa = _values([pa[d] for d in shared], how)
    xb = _values([pb[d] for d in shared], how)
    low, high, se = paired_interval(xa, xb, stat, n_boot, seed, alpha)
    return Comparison(a, b, key, TESTS[test](xa, xb, stat, n_resamples, seed), tuple(shared), (low, high),
                      min_detectable_difference(se, len(shared), alpha))


__all__ = ["AGREEMENT_TOLERANCE", "Comparison", "Estimate", "aggregation_of", "estimate", "fold",
           "paired", "statistic_for"]
