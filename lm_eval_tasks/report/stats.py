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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from custom_metrics import registry
from custom_metrics.analysis.stats.bootstrap import bootstrap_interval, percentile_interval
from custom_metrics.analysis.stats.significance import (TESTS, PairedResult, min_detectable_difference,
                                                        no_detectable_difference, paired_resamples)
from lm_eval_tasks.report.formats import counted
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


@dataclass(frozen=True, eq=False)
class Comparison:
    """A paired test of one key between two runs: ``S(a) - S(b)`` on the documents both runs
    scored (a value on both sides), its p-value and its paired bootstrap resamples, from
    which the report takes the interval and the minimum detectable difference at the level
    its verdict uses (:mod:`lm_eval_tasks.report.verdicts`)."""

    a: Run
    b: Run
    key: str
    result: PairedResult
    #: the documents compared (both runs have a value of ``key`` for them), in ``a``'s order
    docs: tuple[str, ...] = ()
    #: ``S(a*) - S(b*)`` over the paired bootstrap resamples (empty without resamples)
    resampled: np.ndarray = field(default_factory=lambda: np.empty(0))
    #: standard error of the difference; 0 when the differences have no spread
    se: float = math.nan
    #: why no difference could be computed ('' when it was)
    reason: str = ""

    @property
    def n(self) -> int:
        """The documents compared: both runs have a value for each."""
        return len(self.docs)

    @property
    def computed(self) -> bool:
        return not self.reason

    def interval(self, alpha: float) -> tuple[float, float]:
        """The ``1 - alpha`` percentile interval of Δ (NaN without resamples)."""
        return percentile_interval(self.resampled, alpha)

    def min_detectable(self, alpha: float, power: float) -> tuple[float, str | None]:
        """(minimum detectable difference at ``alpha`` two-sided and ``power``, None) or
        (NaN, why there is none)."""
        why = no_detectable_difference(self.se, self.n)
        return (math.nan, why) if why else (min_detectable_difference(self.se, self.n, alpha, power), None)


def missing(item: Any) -> bool:
    """A logged score that is no value: None, NaN, or a corpus item with such a part (a
    document the scorer failed on, or the metric does not apply to)."""
    if item is None:
        return True
    if isinstance(item, float):
        return math.isnan(item)
    if isinstance(item, (list, tuple)):
        return any(missing(v) for v in item)
    return False


def paired(a: Run, b: Run, key: str, test: str = "permutation", n_resamples: int = 10_000,
           seed: int = 1234, n_boot: int = 1000) -> Comparison | None:
    """``S(a) - S(b)`` on the documents both runs have a value of ``key`` for, with its
    p-value and paired resamples (:mod:`custom_metrics.analysis.stats.significance`).

    None: the runs share no logged document, or ``key`` is a count (a fact of each run, not
    compared). A document without a value on one side (a failed scorer, a metric that does
    not apply) is left out on both, so Δ and the two scores beside it are over the same
    documents; a comparison with no such document or no number for Δ or p is returned with
    its ``reason`` (its verdict is "not computed").
    """
    pa, pb = a.per_doc(key), b.per_doc(key)
    logged = [d for d in pa if d in pb]
    how = aggregation_of(key)
    if not logged or how == "sum":
        return None
    shared = [d for d in logged if not (missing(pa[d]) or missing(pb[d]))]
    stat = "mean" if how in ("mean", "nanmean") else statistic_for(a, key)
    if not shared:
        return Comparison(a, b, key, PairedResult(math.nan, math.nan, 0, 0, test == "permutation", test),
                          reason=f"no document has a value on both sides (of the {counted(len(logged), 'document')} "
                                 "both runs logged)")
    xa = _values([pa[d] for d in shared], how)
    xb = _values([pb[d] for d in shared], how)
    result = TESTS[test](xa, xb, stat, n_resamples, seed)
    resampled, se = paired_resamples(xa, xb, stat, n_boot, seed)
    reason = ""
    if not math.isfinite(result.delta):
        reason = (f"the metric is not a number on one side over the {counted(len(shared), 'document')} both "
                  "runs have a value for")
    elif not math.isfinite(result.p_value):
        reason = "the test gave no p-value (the metric is not a number on any rearrangement of the documents)"
    return Comparison(a, b, key, result, tuple(shared), resampled, se, reason)


__all__ = ["AGREEMENT_TOLERANCE", "Comparison", "Estimate", "aggregation_of", "estimate", "fold", "missing",
           "paired", "statistic_for"]
