"""The report's figures, drawn from the same runs and estimates as its tables.

* ``bars_<benchmark>_<key>``: the key per subset, one bar per system and setting, error
  bars the tables' bootstrap intervals.
* ``dist_<benchmark>_<key>``: the per-document scores of each system and setting, one box
  per subset.
* ``radar_<benchmark>``: the eight DomainSum domain-characteristic measures of each
  subset (:func:`custom_metrics.analysis.measures.domain_measures`, in the profile of the
  record that declares one: ``report.measure_profile``), computed from the documents and
  reference summaries the runs logged.
* ``overlap_<benchmark>``: vocabulary overlap between subsets (DomainSum Figure 3's
  measure: top words of each subset's documents, stopwords and punctuation left out).
* ``cross_<benchmark>_<key>_<base>``: the cross-domain matrix of each base model.

A figure with nothing to show is not drawn; :class:`Figures` keeps the reason, which the
report prints in place of the figure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from custom_metrics.analysis import plots
from custom_metrics.registry import display_scale as scale
from lm_eval_tasks.benchmarks.suite import ALL_RECORDS
from lm_eval_tasks.report.runs import Run, doc_key
from lm_eval_tasks.report.stats import aggregation_of
from lm_eval_tasks.report.tables import (Builder, base_label_of, cross_domain_groups, ordered_subsets, paper,
                                         subsets_of)

#: words per subset vocabulary in the overlap map (the logged test documents are few)
OVERLAP_VOCAB = 1000


@dataclass
class Figure:
    name: str
    title: str
    path: Path
    caption: str = ""
    alt: str = ""  # what the figure shows, for readers who cannot see it (default: the title)


@dataclass
class Figures:
    out: Path
    drawn: list[Figure] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def draw(self, name: str, title: str, caption: str, fn: Callable[[Path], Path], alt: str = "") -> None:
        path = self.out / f"{slug(name)}.png"
        try:
            fn(path)
        except plots.NothingToPlot as exc:
            self.skipped.append(f"{title}: not drawn ({exc})")
            return
        self.drawn.append(Figure(name, title, path, caption, alt))


def all_zero(values) -> bool:
    """True when every finite value is 0: a chart of them shows nothing (said instead of drawn)."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return bool(finite) and all(v == 0 for v in finite)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:120]


def draw_all(builder: Builder, out: Path) -> Figures:
    figs = Figures(out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.png"):  # figures of an earlier report into the same folder
        stale.unlink()
    for benchmark in builder.runs.benchmarks():
        runs = [r for r in builder.runs.of(benchmark) if not r.spec.variant]
        keys = builder.headline(benchmark)
        shown = keys[:1] + [k for k in keys[1:] if k[0] == "bertscore_f1"] if len(keys) > 1 else keys
        for key, name in (shown if len(shown) > 1 else keys[:2]):
            _bars(figs, builder, benchmark, runs, key, name)
        dist_key = next(((k, n) for k, n in keys if aggregation_of(k) in ("mean", "nanmean")), None)
        if dist_key:
            _distribution(figs, builder, benchmark, runs, *dist_key)
        _domain_figures(figs, benchmark, runs)
        for key, name in (shown if len(shown) > 1 else keys[:2]):
            _cross(figs, builder, benchmark, key, name)
    return figs


def _series(runs: list[Run]) -> list[str]:
    seen: list[str] = []
    for r in sorted(runs, key=lambda r: (r.system.fine_tuned, r.system.label, r.shots)):
        if r.series not in seen:
            seen.append(r.series)
    return seen


def _bars(figs: Figures, builder: Builder, benchmark: str, runs: list[Run], key: str, name: str) -> None:
    subsets = subsets_of(runs, benchmark)
    series, errors = {}, {}
    k = scale(key)
    for label in _series(runs):
        vals, lo, hi = [], [], []
        for s in subsets:
            run = next((r for r in runs if r.series == label and r.subset == s and key in r.values), None)
            e = builder.est(run, key) if run else None
            v = e.value * k if e and math.isfinite(e.value) else math.nan
            vals.append(v)
            ok = e is not None and math.isfinite(v) and math.isfinite(e.low) and math.isfinite(e.high)
            lo.append(max(0.0, v - e.low * k) if ok else 0.0)
            hi.append(max(0.0, e.high * k - v) if ok else 0.0)
        series[label], errors[label] = vals, (lo, hi)
    unit = " (x100)" if k != 1 else ""
    title = f"{paper(benchmark)}: {name} per subset"
    if all_zero(v for vals in series.values() for v in vals):
        figs.skipped.append(f"{title}: not drawn (every system scores 0 on every subset)")
        return
    figs.draw(f"bars_{benchmark}_{key}", title,
              "Error bars: 95 % bootstrap intervals over documents (as in the tables).",
              lambda p: plots.bar_chart(p, title, subsets, series, errors, f"{name}{unit}"))


def _distribution(figs: Figures, builder: Builder, benchmark: str, runs: list[Run], key: str, name: str) -> None:
    """Per-document scores, one box per system and setting within each subset: documents of
    different subsets are never pooled in one box (their scores are not one population)."""
    groups: dict[str, dict[str, list[float]]] = {}
    k = scale(key)
    for subset in subsets_of(runs, benchmark):
        for label in _series(runs):
            vals = [float(v) * k for r in runs if r.series == label and r.subset == subset
                    for v in r.per_doc(key).values() if v is not None and math.isfinite(float(v))]
            if vals:
                groups.setdefault(subset, {})[label] = vals
    title = f"{paper(benchmark)}: per-document {name}"
    if all_zero(v for boxes in groups.values() for vals in boxes.values() for v in vals):
        figs.skipped.append(f"{title}: not drawn (every document scores 0)")
        return
    figs.draw(f"dist_{benchmark}_{key}", title,
              "One box per system and setting in each subset (quartiles, median, mean); each point is one "
              "document's score; n: documents per box.",
              lambda p: plots.distribution_plot(p, title, groups, name + (" (x100)" if k != 1 else "")))


def _domain_texts(runs: list[Run], benchmark: str) -> dict[str, tuple[list[str], list[str]]]:
    """Subset -> (documents, reference summaries) of the distinct documents the runs logged."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for r in runs:
        for s in r.samples:
            out.setdefault(r.subset, {}).setdefault(doc_key(s), (s.document, s.reference))
    return {sub: ([d for d, _ in pairs.values()], [ref for _, ref in pairs.values()])
            for sub in ordered_subsets(benchmark, set(out)) for pairs in [out[sub]]}


def _domain_figures(figs: Figures, benchmark: str, runs: list[Run]) -> None:
    from custom_metrics.analysis.measures import MEASURES
    from custom_metrics.analysis.domains import analyse_pairs, domain_vocabulary, overlap_matrix, stopwords

    texts = _domain_texts(runs, benchmark)
    # the measures are those of the paper that defines them, whichever benchmark's subsets they describe
    source = next((r for r in ALL_RECORDS.values() if r.report.measure_profile), None)
    if not texts or source is None:
        return
    stats, vocabs = {}, {}
    stop, _ = stopwords()
    for sub, (docs, refs) in texts.items():
        measured, counts = analyse_pairs(docs, refs, profile=source.report.measure_profile, progress=False)
        stats[sub] = measured
        vocabs[sub] = domain_vocabulary(counts, OVERLAP_VOCAB, stop)
    n = min(len(d) for d, _ in texts.values())
    title = f"{paper(benchmark)}: domain-characteristic measures per subset"
    axes = [m for m in MEASURES if all(m in s for s in stats.values())]
    radar_series = {sub: [float(s[m]) for m in axes] for sub, s in stats.items()}
    figs.draw(f"radar_{benchmark}", title,
              f"{source.title}'s measures of the documents the runs logged (at least {n} per subset), "
              "each axis scaled by its largest value.",
              lambda p: plots.radar_chart(p, title, axes, radar_series))
    labels = list(vocabs)
    matrix = overlap_matrix([vocabs[s] for s in labels])
    otitle = f"{paper(benchmark)}: vocabulary overlap between subsets"
    figs.draw(f"overlap_{benchmark}", otitle,
              f"Share (%) of the smaller of two subsets' top-{OVERLAP_VOCAB} document vocabularies found "
              "in the other; the diagonal (100 %) is masked so the colour scale shows the differences.",
              lambda p: plots.heatmap(p, otitle, labels, matrix, value_label="overlap (%)",
                                      mask_diagonal=True))


def _cross(figs: Figures, builder: Builder, benchmark: str, key: str, name: str) -> None:
    k = scale(key)
    for g in cross_domain_groups(builder.runs, benchmark):
        cm = g.matrix(key, lambda run: builder.est(run, key).value * k if key in run.values else math.nan)
        matrix = cm.matrix.tolist()
        base_name = base_label_of(builder.runs, g.base)  # settings included: chat and plain apart
        title = f"{paper(benchmark)}: cross-domain {name}, {base_name} fine-tuned per domain"
        if all_zero(v for row in matrix for v in row):
            figs.skipped.append(f"{title}: not drawn (every cell is 0)")
            continue
        figs.draw(f"cross_{benchmark}_{key}_{base_name}", title,
                  "Rows: fine-tuning domain; columns: evaluated domain; grey: not evaluated.",
                  lambda p: plots.heatmap(p, title, cm.targets, matrix, value_label=name + (" (x100)" if k != 1 else ""),
                                          row_labels=cm.sources, outline_diagonal=True))


__all__ = ["Figure", "Figures", "draw_all"]
