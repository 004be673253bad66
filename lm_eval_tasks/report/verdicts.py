"""A verdict for every comparison the report's tables show, and ``comparisons.json``.

Why: a difference and a p-value leave the reader to decide what they mean, and with a
handful of documents no p-value can be small (an exact permutation test over 3
documents cannot go below 0.25). Each comparison therefore says which side is better,
that no difference was detected, or that it could not be computed and why, with Δ, its
interval, p, the n of documents both sides have a value for and the minimum detectable
difference at that n, and, when nothing was found because the documents were too few,
says so.

The rule, in one place (:data:`RULE` words it for the page and ``comparisons.json``):

* **Family and correction.** The comparisons of one metric in one table (DomainSum
  Table 2's zero- vs few-shot rows, Table 3's fine-tuned vs base rows, the significance
  table's pairs of systems) are one family of m computed comparisons; their p-values are
  Holm-Bonferroni adjusted over that family
  (:func:`custom_metrics.analysis.stats.significance.holm`).
* **Interval.** Each Δ's paired percentile bootstrap interval is at level ``1 − ALPHA / m``
  (Bonferroni): the m intervals of a family hold their true differences together with
  probability at least ``1 − ALPHA`` (simultaneous), the same error rate the Holm
  correction controls for the tests. Holm's own step levels (``ALPHA / (m − i + 1)``) give
  no simultaneous intervals, so the intervals are Bonferroni's, the stricter.
* **Verdict.** A side is better when the Holm-corrected p is below ``ALPHA`` *and* that
  interval excludes 0 on the side of Δ (the better side is the higher one, or the lower
  one for a metric whose record says lower is better); otherwise "no difference
  detected". For a metric whose record says neither direction is better (a reading grade
  nobody asked for), the same rule names the *higher* side ("a higher", "b higher"), never
  a better one. The permutation p and the bootstrap interval are two procedures and can
  disagree (the bootstrap interval of 3 documents that all differ the same way excludes
  0 while no p over 3 documents is below 0.25), so the stricter reading is taken: both
  must find the difference. Where they disagree the verdict is "no difference
  detected" and the interval shown is extended to reach 0: a wider interval still holds
  the true difference whenever the narrower one does, so its coverage stands, and the
  interval beside a verdict never says otherwise than the verdict. Hence the interval
  shown excludes 0 exactly when the verdict names a side. Without resamples
  (``--bootstrap 0``) there is no interval and the corrected p alone decides.
* **Not computed.** Only documents with a value on both sides are compared (a document a
  scorer failed on is left out of both, and of the two scores beside Δ); with none, or
  with no number for Δ or p, the verdict is "not computed", with the reason, and the
  comparison is in no family.
* **Minimum detectable difference** at the family's level ``ALPHA / m``, two-sided, with
  ``POWER``; none, with the reason, below 3 documents or when the per-document
  differences have no spread.
* **Direction.** Δ is ``b − a`` in the tables that compare a later setting with an
  earlier one (``a`` the zero-shot or base run, ``b`` the few-shot or fine-tuned one), and
  ``a − b`` in the significance table (its ``A − B`` column).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from custom_metrics import registry
from custom_metrics.analysis.stats.significance import MDD_MIN_N, holm, smallest_p
from lm_eval_tasks.report.stats import Comparison

#: family-wise error rate of each family, and the power the minimum detectable difference is for
ALPHA = 0.05
POWER = 0.8
CORRECTION = "holm"
NOT_COMPUTED = "not computed"
VERDICTS = ("a better", "b better", "a higher", "b higher", "no difference detected", NOT_COMPUTED)
#: the verdicts that name a side (better, or higher for a metric with no better direction)
SIDED = ("a better", "b better", "a higher", "b higher")
#: the rule of the module docstring in words: the page states it once, comparisons.json in its header
RULE = (f"The comparisons of one metric in one table are a family of m; their p-values are Holm-corrected. "
        f"The interval of Δ is the paired bootstrap interval at level 1 − {ALPHA}/m (Bonferroni: the m "
        f"intervals hold their true differences together with probability at least {1 - ALPHA:.0%}). A side "
        f"is better when the Holm-corrected p is below {ALPHA} and that interval excludes 0 on the side of Δ (for "
        "a metric with no better direction, that side is named the higher one); "
        "otherwise no difference detected, and where the interval alone excluded 0 it is shown extended to 0 "
        "(a wider interval keeps its coverage), so the interval shown excludes 0 exactly when a side is "
        "named. Without resamples (--bootstrap 0) the corrected p alone decides. Only documents with a value "
        "on both sides are compared, and the two scores beside Δ are over the same documents; with none, or "
        "no number for Δ or p, the comparison is not computed, with the reason, and is in no family. The "
        f"minimum detectable difference is the smallest true Δ a two-sided test at {ALPHA}/m finds with "
        f"{POWER:.0%} power at this n: (t(1−α/2m, n−1) + t(power, n−1)) × SE, SE = SD of the per-document "
        "differences / √n (for a corpus metric such as ROUGE, the paired bootstrap's SD of Δ); none below "
        f"{MDD_MIN_N} documents or when the differences have no spread.")
#: what a comparison table's p column is, and where its verdicts are
VERDICT_CAPTION = ("p is uncorrected; the verdicts below the table use the Holm-corrected p and the simultaneous "
                   "interval over the table's comparisons of the same metric.")
#: tables whose comparisons are ``a − b`` (the others: ``b − a``, later setting minus earlier)
A_MINUS_B = ("significance",)


@dataclass(frozen=True)
class Verdict:
    """One comparison as ``comparisons.json`` holds it (values on the results' own scale)."""

    table: str
    benchmark: str
    subset: str
    a: str
    b: str
    task: str
    metric: str
    metric_name: str
    #: None: neither direction is better (the verdict names the higher side)
    higher_is_better: bool | None
    direction: str
    #: what Δ is the difference of, in words ("2-shot − 0-shot", or the two runs' names)
    delta_of: str
    n: int
    delta: float
    ci_low: float
    ci_high: float
    p: float
    p_corrected: float
    correction: str
    family_size: int
    min_detectable_delta: float
    smallest_possible_p: float
    verdict: str
    #: factor the page multiplies values by (x100 for fractions)
    display_scale: float
    #: level of the interval: 1 − alpha / family_size (simultaneous over the family)
    ci_level: float = 1 - ALPHA
    #: the bootstrap interval excluded 0 but the verdict names no side: shown reaching 0
    ci_extended: bool = False
    #: why there is no minimum detectable difference (None: there is one)
    min_detectable_reason: str | None = None
    #: why the comparison was not computed (None: it was)
    reason: str | None = None

    def record(self) -> dict:
        """The JSON object: NaN as null (JSON has no NaN)."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}

    def sentence(self) -> str:
        """The page's sentence for this comparison (it states what :meth:`record` holds)."""
        what = self.metric_name + direction_note(self.higher_is_better)
        if self.verdict == NOT_COMPUTED:
            return f"{self.subset}, {what}: not computed between {self.a} and {self.b}: {self.reason}."
        first, _, side = self.verdict.partition(" ")
        outcome = (f"no difference detected between {self.a} and {self.b}" if self.verdict not in SIDED else
                   f"{self.a} is {side} than {self.b}" if first == "a" else f"{self.b} is {side} than {self.a}")
        tests = "comparison" if self.family_size == 1 else "comparisons"
        mdd = (self.num(self.min_detectable_delta) if self.min_detectable_reason is None
               else f"n/a ({self.min_detectable_reason})")
        text = (f"{self.subset}, {what}: {outcome}. Δ ({self.delta_of}) = {self.num(self.delta, '+.2f')}, "
                f"{level_text(self.ci_level)} % CI [{self.num(self.ci_low)}, {self.num(self.ci_high)}]"
                f"{' (extended to 0)' if self.ci_extended else ''}, p = {p_text(self.p)}, "
                f"Holm-corrected p = {p_text(self.p_corrected)} over {self.family_size} {tests}, "
                f"n = {self.n} documents scored on both sides; minimum detectable difference {mdd}.")
        return text + self.explanation()

    def explanation(self) -> str:
        """Why nothing was found, when the n, the test or the interval says why ('' otherwise)."""
        if self.verdict != "no difference detected":
            return ""
        said = ""
        if self.ci_extended:
            said = (" The bootstrap interval alone excluded 0; it is shown extended to 0 because "
                    + (f"the Holm-corrected p is not below {ALPHA}." if not self.p_corrected < ALPHA else
                       "Δ lies on the other side of 0."))
        if self.too_few():
            if self.smallest_possible_p >= ALPHA:
                return said + (f" Too few documents to detect any difference: with {self.n} the permutation "
                               f"test cannot give p below {self.smallest_possible_p:.3f}.")
            return said + (f" Too few documents to detect any difference among {self.family_size} comparisons: "
                           f"with {self.n} the permutation test cannot give p below "
                           f"{self.smallest_possible_p:.4f}, which the correction multiplies by {self.family_size}.")
        if self.p < ALPHA <= self.p_corrected:
            said += f" p is below {ALPHA} only before the correction for the {self.family_size} comparisons."
        elif self.p_corrected < ALPHA and not self.ci_extended:
            said += f" The corrected p is below {ALPHA}, but the interval of Δ contains 0."
        if math.isfinite(self.min_detectable_delta) and abs(self.delta) < self.min_detectable_delta:
            said += f" Too few documents to detect a difference smaller than {self.num(self.min_detectable_delta)}."
        return said

    def too_few(self) -> bool:
        """Too few documents for any difference to be detected: the smallest p the exact test can
        give at this n, times the family's size (the most Holm multiplies it by), is not below
        ``ALPHA`` (False when no smallest p is known, as for a bootstrap test)."""
        return self.smallest_possible_p * max(self.family_size, 1) >= ALPHA

    def num(self, value: float, spec: str = ".2f") -> str:
        return "n/a" if not math.isfinite(value) else format(value * self.display_scale, spec)


def direction_note(higher_is_better: bool | None) -> str:
    """What follows a metric's name where a comparison of it is stated: nothing when higher is
    better, else that lower is better or that neither direction is."""
    return {True: "", False: " (lower is better)"}.get(higher_is_better, " (no direction is better)")


def level_text(level: float) -> str:
    """An interval's level in percent as the sentences print it: 95, 97.5, 99.17."""
    return f"{100 * level:.4g}"


def p_text(p: float) -> str:
    """A p-value as the tables and sentences print it."""
    if not math.isfinite(p):
        return "n/a"
    return f"{p:.3f}" if p >= 0.001 else "<0.001"


def decide(delta: float, low: float, high: float, p_corrected: float, higher_is_better: bool | None,
           direction: str) -> str:
    """The verdict of one computed comparison (module docstring): ``low``/``high`` the interval
    at the family's level, NaN without resamples; ``higher_is_better`` None (no better
    direction): the side found is named the higher one."""
    if not (math.isfinite(p_corrected) and p_corrected < ALPHA and math.isfinite(delta)) or delta == 0:
        return "no difference detected"
    if math.isfinite(low) and math.isfinite(high) and not (low > 0 if delta > 0 else high < 0):
        return "no difference detected"  # the interval holds 0, or lies on the other side of it
    first_higher = delta > 0  # the side Δ starts from (b in "b-a", a in "a-b") is the higher
    first = "b" if direction == "b-a" else "a"
    second = "a" if first == "b" else "b"
    if higher_is_better is None:
        return f"{first if first_higher else second} higher"
    return f"{first if first_higher == higher_is_better else second} better"


def shown_interval(low: float, high: float, verdict: str) -> tuple[float, float, bool]:
    """``(low, high, extended)``: the interval beside ``verdict``. One that excludes 0 beside
    "no difference detected" is extended to reach 0 (module docstring), so the interval
    shown excludes 0 exactly when the verdict names a side."""
    if verdict != "no difference detected" or not (math.isfinite(low) and math.isfinite(high)) or low <= 0 <= high:
        return low, high, False
    return min(low, 0.0), max(high, 0.0), True


def _oriented(table: str, c: Comparison) -> tuple:
    """(a run, b run, direction): the tables of settings and fine-tuning compare ``S(later) −
    S(earlier)`` (their builder calls ``compare(later, earlier)``), so ``a`` is the earlier."""
    if table in A_MINUS_B:
        return c.a, c.b, "a-b"
    return c.b, c.a, "b-a"


def verdicts(shown: dict[str, dict[tuple, Comparison]]) -> dict[str, list[Verdict]]:
    """Every comparison each table showed (``Builder.shown``): Holm correction and simultaneous
    intervals per table and metric over the computed comparisons."""
    out: dict[str, list[Verdict]] = {}
    for table, comparisons in shown.items():
        items = list(comparisons.values())
        adjusted: dict[int, float] = {}
        sizes: dict[str, int] = {}
        for key in dict.fromkeys(c.key for c in items):
            family = [i for i, c in enumerate(items) if c.key == key and c.computed]
            adjusted.update(zip(family, holm([items[i].result.p_value for i in family])))
            sizes[key] = len(family)
        out[table] = [_verdict(table, c, adjusted.get(i, math.nan), sizes[c.key]) for i, c in enumerate(items)]
    return out


def _verdict(table: str, c: Comparison, p_corrected: float, family_size: int) -> Verdict:
    a, b, direction = _oriented(table, c)
    record = registry.key(c.key)
    better_high = record.higher_is_better if record is not None else True
    same = a.system.label == b.system.label
    delta_of = (f"{b.setting} − {a.setting}" if same else f"{b.series} − {a.series}") if direction == "b-a" else \
        (f"{a.setting} − {b.setting}" if same else f"{a.series} − {b.series}")
    level = ALPHA / max(family_size, 1)
    if c.computed:
        low, high = c.interval(level)
        verdict = decide(c.result.delta, low, high, p_corrected, better_high, direction)
        low, high, extended = shown_interval(low, high, verdict)
        mdd, why = c.min_detectable(level, POWER)
    else:
        low = high = mdd = math.nan
        verdict, extended, why = NOT_COMPUTED, False, "not computed"
    return Verdict(
        delta_of=delta_of, table=table, benchmark=a.benchmark, subset=a.subset, a=a.series, b=b.series,
        task=a.task if a.task == b.task else f"{a.task} vs {b.task}", metric=c.key,
        metric_name=registry.display_name(c.key), higher_is_better=better_high, direction=direction, n=c.n,
        delta=c.result.delta if c.computed else math.nan, ci_low=low, ci_high=high, p=c.result.p_value,
        p_corrected=p_corrected, correction=CORRECTION, family_size=family_size, min_detectable_delta=mdd,
        smallest_possible_p=smallest_p(c.result) if c.computed else math.nan, verdict=verdict,
        display_scale=registry.display_scale(c.key), ci_level=1 - level, ci_extended=extended,
        min_detectable_reason=why, reason=c.reason or None)


def in_order(by_table: dict[str, list[Verdict]], tables: Sequence[str]) -> list[Verdict]:
    """Every verdict in the order of the report's tables (the index ``comparisons.json`` and the page share)."""
    return [v for t in tables for v in by_table.get(t, [])]


def write_comparisons(path: Path, ordered: Sequence[Verdict]) -> Path:
    """``comparisons.json``: the rule, then one object per comparison in the page's order."""
    data = {"alpha": ALPHA, "power": POWER, "correction": CORRECTION, "interval": "bonferroni",
            "family": "the computed comparisons of one metric in one table",
            "verdicts": list(VERDICTS), "rule": RULE,
            "comparisons": [v.record() for v in ordered]}
    from custom_metrics.outputs import write_atomically

    write_atomically(path, json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    return path


__all__ = ["ALPHA", "CORRECTION", "NOT_COMPUTED", "POWER", "RULE", "SIDED", "VERDICTS", "VERDICT_CAPTION", "Verdict",
           "decide", "direction_note", "in_order", "level_text", "p_text", "shown_interval", "verdicts",
           "write_comparisons"]
