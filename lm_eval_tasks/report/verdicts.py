"""A verdict for every comparison the report's tables show, and ``comparisons.json``.

Why: a difference and a p-value leave the reader to decide what they mean, and with a
handful of documents no p-value can be small (an exact permutation test over 3
documents cannot go below 0.25). Each comparison therefore says which side is better or
that no difference was detected, with Δ, its 95 % interval, p, the shared n and the
minimum detectable difference at that n, and, when nothing was found because the
documents were too few, says so.

The rule, in one place:

* **Family and correction.** The comparisons of one metric in one table (DomainSum
  Table 2's zero- vs few-shot rows, Table 3's fine-tuned vs base rows, the significance
  table's pairs of systems) are one family; their p-values are Holm-Bonferroni adjusted
  over that family (:func:`custom_metrics.analysis.stats.significance.holm`).
* **Verdict.** A side is better when the Holm-corrected p is below ``ALPHA`` *and* the
  95 % paired bootstrap interval of Δ excludes 0 (so "no difference detected" whenever
  the interval contains 0, and never a winner the correction took away); the better
  side is the higher one, or the lower one for a metric whose record says lower is
  better.
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
from custom_metrics.analysis.stats.significance import holm, smallest_p
from lm_eval_tasks.report.stats import Comparison

#: family-wise error rate of each family, and the power the minimum detectable difference is for
ALPHA = 0.05
POWER = 0.8
CORRECTION = "holm"
VERDICTS = ("a better", "b better", "no difference detected")
#: what a comparison table's p column is, and where its verdicts are
VERDICT_CAPTION = ("p is uncorrected; the verdicts below the table use the Holm-corrected p over the table's "
                   "comparisons of the same metric.")
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
    higher_is_better: bool
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

    def record(self) -> dict:
        """The JSON object: NaN as null (JSON has no NaN)."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}

    def sentence(self) -> str:
        """The page's sentence for this comparison (it states what :meth:`record` holds)."""
        what = self.metric_name + ("" if self.higher_is_better else " (lower is better)")
        outcome = {"a better": f"{self.a} is better than {self.b}",
                   "b better": f"{self.b} is better than {self.a}"}.get(
            self.verdict, f"no difference detected between {self.a} and {self.b}")
        tests = "comparison" if self.family_size == 1 else "comparisons"
        text = (f"{self.subset}, {what}: {outcome}. Δ ({self.delta_of}) = {self.num(self.delta, '+.2f')}, "
                f"95 % CI [{self.num(self.ci_low)}, {self.num(self.ci_high)}], p = {p_text(self.p)}, "
                f"Holm-corrected p = {p_text(self.p_corrected)} over {self.family_size} {tests}, "
                f"n = {self.n} shared documents; minimum detectable difference "
                f"{self.num(self.min_detectable_delta)}.")
        return text + self.reason()

    def reason(self) -> str:
        """Why nothing was found, when the n or the interval says why ('' otherwise)."""
        if self.verdict != "no difference detected":
            return ""
        if self.smallest_possible_p >= ALPHA:
            return (f" Too few documents to detect any difference: with {self.n} the permutation test "
                    f"cannot give p below {self.smallest_possible_p:.3f}.")
        if self.smallest_possible_p * self.family_size >= ALPHA:
            return (f" Too few documents to detect any difference among {self.family_size} comparisons: with "
                    f"{self.n} the permutation test cannot give p below {self.smallest_possible_p:.4f}, which "
                    f"the correction multiplies by {self.family_size}.")
        if self.p < ALPHA <= self.p_corrected:
            said = f" p is below {ALPHA} only before the correction for the {self.family_size} comparisons."
        elif self.p_corrected < ALPHA:
            said = f" The corrected p is below {ALPHA}, but the interval of Δ contains 0."
        else:
            said = ""
        if math.isfinite(self.min_detectable_delta) and abs(self.delta) < self.min_detectable_delta:
            said += f" Too few documents to detect a difference smaller than {self.num(self.min_detectable_delta)}."
        return said

    def num(self, value: float, spec: str = ".2f") -> str:
        return "n/a" if not math.isfinite(value) else format(value * self.display_scale, spec)


def p_text(p: float) -> str:
    """A p-value as the tables and sentences print it."""
    if not math.isfinite(p):
        return "n/a"
    return f"{p:.3f}" if p >= 0.001 else "<0.001"


def decide(delta: float, low: float, high: float, p_corrected: float, higher_is_better: bool,
           direction: str) -> str:
    """The verdict of one comparison (module docstring)."""
    if not (math.isfinite(p_corrected) and p_corrected < ALPHA and math.isfinite(delta)) or delta == 0:
        return "no difference detected"
    if math.isfinite(low) and math.isfinite(high) and low <= 0 <= high:
        return "no difference detected"
    first_higher = delta > 0  # the side Δ starts from (b in "b-a", a in "a-b") is the higher
    first = "b" if direction == "b-a" else "a"
    second = "a" if first == "b" else "b"
    return f"{first if first_higher == higher_is_better else second} better"


def _oriented(table: str, c: Comparison) -> tuple:
    """(a run, b run, direction): the tables of settings and fine-tuning compare ``S(later) −
    S(earlier)`` (their builder calls ``compare(later, earlier)``), so ``a`` is the earlier."""
    if table in A_MINUS_B:
        return c.a, c.b, "a-b"
    return c.b, c.a, "b-a"


def verdicts(shown: dict[str, dict[tuple, Comparison]]) -> dict[str, list[Verdict]]:
    """Every comparison each table showed (``Builder.shown``), with Holm correction per table and metric."""
    out: dict[str, list[Verdict]] = {}
    for table, comparisons in shown.items():
        items = list(comparisons.values())
        adjusted: dict[int, float] = {}
        sizes: dict[str, int] = {}
        for key in dict.fromkeys(c.key for c in items):
            family = [i for i, c in enumerate(items) if c.key == key]
            p_values = [items[i].result.p_value for i in family]
            adjusted.update(zip(family, holm(p_values)))
            sizes[key] = sum(math.isfinite(p) for p in p_values)
        out[table] = [_verdict(table, c, adjusted[i], sizes[c.key]) for i, c in enumerate(items)]
    return out


def _verdict(table: str, c: Comparison, p_corrected: float, family_size: int) -> Verdict:
    a, b, direction = _oriented(table, c)
    record = registry.key(c.key)
    better_high = record.higher_is_better if record is not None else True
    low, high = c.interval
    same = a.system.label == b.system.label
    delta_of = (f"{b.setting} − {a.setting}" if same else f"{b.series} − {a.series}") if direction == "b-a" else \
        (f"{a.setting} − {b.setting}" if same else f"{a.series} − {b.series}")
    return Verdict(
        delta_of=delta_of, table=table, benchmark=a.benchmark, subset=a.subset, a=a.series, b=b.series,
        task=a.task if a.task == b.task else f"{a.task} vs {b.task}", metric=c.key,
        metric_name=registry.display_name(c.key), higher_is_better=better_high, direction=direction, n=c.shared,
        delta=c.result.delta, ci_low=low, ci_high=high, p=c.result.p_value, p_corrected=p_corrected,
        correction=CORRECTION, family_size=family_size, min_detectable_delta=c.mdd,
        smallest_possible_p=smallest_p(c.result),
        verdict=decide(c.result.delta, low, high, p_corrected, better_high, direction),
        display_scale=registry.display_scale(c.key))


def in_order(by_table: dict[str, list[Verdict]], tables: Sequence[str]) -> list[Verdict]:
    """Every verdict in the order of the report's tables (the index ``comparisons.json`` and the page share)."""
    return [v for t in tables for v in by_table.get(t, [])]


def write_comparisons(path: Path, ordered: Sequence[Verdict]) -> Path:
    """``comparisons.json``: the rule, then one object per comparison in the page's order."""
    data = {"alpha": ALPHA, "power": POWER, "correction": CORRECTION,
            "family": "the comparisons of one metric in one table",
            "verdict_rule": "a side is better when the corrected p is below alpha and the 95 % interval of "
                            "delta excludes 0",
            "min_detectable_delta": "(t_{1-alpha/2,n-1} + t_{power,n-1}) * SE of delta; SE = sd of the "
                                    "per-document differences / sqrt(n) (corpus metrics: the paired bootstrap's sd)",
            "comparisons": [v.record() for v in ordered]}
    from custom_metrics.outputs import write_atomically

    write_atomically(path, json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    return path


__all__ = ["ALPHA", "CORRECTION", "VERDICT_CAPTION", "POWER", "VERDICTS", "Verdict", "decide", "in_order", "p_text", "verdicts",
           "write_comparisons"]
