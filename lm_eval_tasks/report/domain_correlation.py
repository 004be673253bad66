"""Correlation of domain measures with model performance (DomainSum Table 4).

Inputs: harness result folders (several models and settings) and the per-domain
statistics written by ``domsum domain-stats`` (``domain_stats.json`` or ``.csv``).
For every level (genre, style, topic) and every (model, setting) it correlates each
measure with the performance metric (``--metric``, default ``rouge_geo``) across the
level's domains: Pearson r with its two-sided p-value and Spearman rho
(:func:`custom_metrics.analysis.stats.correlation.correlation_test`, i.e.
``scipy.stats.pearsonr`` / ``spearmanr``). As in the paper, the per-setting
correlations are then averaged over settings (zero-shot, 2shot, fine-tuned) per
model, and over all (model, setting) runs in the ``all`` column. Averaged p-values are
the mean of the per-run p-values; marks: ``*`` p < 0.05, ``**`` p < 0.01.

A correlation needs at least 3 domains with both a measure and a score and some
variation in both; otherwise it is n/a and the reason is listed.

The benchmark whose runs and levels are correlated is the record that declares the
correlation table (``report.correlation_table``: DomainSum Table 4), :data:`RECORD`.

:func:`write_correlations` writes into its folder ``correlations_detail.csv`` (every
run), ``correlations.csv`` (averaged) and ``correlations.md``; ``domsum correlate``
is its command line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from custom_metrics.analysis.errors import AnalysisError
from custom_metrics.analysis.stats.correlation import correlation_test
from custom_metrics.cells import frame_csv, md_text
from lm_eval_tasks.benchmarks.suite import RECORDS
from lm_eval_tasks.report.formats import fmt, markdown_table
from lm_eval_tasks.results import load_results

MEASURES = ("doc_length", "summary_length", "compression", "density", "coverage",
            "doc_diversity", "summary_diversity", "abstractiveness")
COEFFICIENTS = ["pearson_r", "pearson_p", "spearman_rho", "spearman_p"]
#: the benchmark whose paper correlates its domains' measures with performance (DomainSum Table 4)
RECORD = next(r for r in RECORDS.values() if r.report.correlation_table)


def load_stats(path: str | Path) -> pd.DataFrame:
    """Per-domain measures (index: domain; columns: level + measures) from the JSON or
    CSV of ``domsum domain-stats``; :class:`AnalysisError` when it is not that output."""
    path = Path(path)
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = list((data.get("domains") or {}).values())
        frame = pd.DataFrame(rows)
    else:
        frame = pd.read_csv(path)
    if "domain" not in frame.columns:
        raise AnalysisError(f"{path}: no 'domain' column/records; is it domain_stats output?")
    if "level" not in frame.columns:
        frame["level"] = frame["domain"].map(RECORD.level_of)
    for m in MEASURES:
        frame[m] = pd.to_numeric(frame.get(m), errors="coerce")
    return frame.set_index("domain")


def correlate(x, y) -> dict:
    """Pearson and Spearman over the finite pairs of ``x`` and ``y``, with the reason
    (``note``) when there is no coefficient."""
    res = correlation_test(x, y)
    note = {"few": f"only {res.n} domain(s) with data", "constant": "constant values"}.get(res.undefined, "")
    return {"n": res.n, "pearson_r": res.pearson_r, "pearson_p": res.pearson_p,
            "spearman_rho": res.spearman_rho, "spearman_p": res.spearman_p, "note": note}


def mark(p: float) -> str:
    """Significance marks of the paper's tables: ``**`` p < 0.01, ``*`` p < 0.05."""
    if not math.isfinite(p):
        return ""
    return "**" if p < 0.01 else "*" if p < 0.05 else ""


def correlation_runs(perf: pd.DataFrame, stats: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per (level, measure, model, setting)."""
    perf = perf[(perf["benchmark"] == RECORD.name) & (perf["metric"] == metric)]
    rows = []
    for (level, model, setting), g in perf.groupby(["level", "model", "setting"], dropna=True):
        scores = g.groupby("domain")["value"].mean()
        domains = [d for d in scores.index if d in stats.index]
        for m in MEASURES:
            x = [stats.loc[d, m] for d in domains]
            y = [scores[d] for d in domains]
            res = correlate(x, y)
            rows.append({"level": level, "measure": m, "model": model, "setting": setting,
                         "domains": ",".join(domains), **res})
    return pd.DataFrame(rows, columns=["level", "measure", "model", "setting", "domains",
                                       "n", *COEFFICIENTS, "note"])


def average(detail: pd.DataFrame) -> pd.DataFrame:
    """Mean over settings per (level, measure, model), plus model ``all`` (every run)."""
    cols = COEFFICIENTS
    if detail.empty:
        return pd.DataFrame(columns=["level", "measure", "model", "runs", *cols])
    per_model = (detail.groupby(["level", "measure", "model"])[cols]
                 .mean().reset_index())  # pandas' mean skips NaN
    per_model["runs"] = detail.groupby(["level", "measure", "model"])["pearson_r"] \
        .count().values
    overall = detail.groupby(["level", "measure"])[cols].mean().reset_index()
    overall["model"] = "all"
    overall["runs"] = detail.groupby(["level", "measure"])["pearson_r"].count().values
    return pd.concat([per_model, overall], ignore_index=True)


def to_markdown(avg: pd.DataFrame, metric: str) -> str:
    parts = [f"Correlation of domain measures with `{metric}` (Pearson r, mean over "
             "settings; * p < 0.05, ** p < 0.01 on the mean p-value; Spearman rho in "
             "parentheses).", ""]
    for level, g in avg.groupby("level", sort=False):
        models = [m for m in dict.fromkeys(g["model"]) if m != "all"] + ["all"]
        rows = []
        for measure in MEASURES:
            row = [measure]
            for model in models:
                r = g[(g["measure"] == measure) & (g["model"] == model)]
                if r.empty:
                    row.append("n/a")
                    continue
                r = r.iloc[0]
                row.append(f"{fmt(r['pearson_r'], 3)}{mark(r['pearson_p'])} "
                           f"({fmt(r['spearman_rho'], 3)})")
            rows.append(row)
        parts += [f"**{md_text(level)}**", "", markdown_table(["Measure", *models], rows)]
    return "\n".join(parts)


@dataclass
class CorrelationReport:
    """What :func:`write_correlations` wrote: the Markdown and the problems to warn about."""

    markdown: str
    problems: list[str] = field(default_factory=list)


def system_labels(frame: pd.DataFrame, folders: Sequence[str]) -> list[str]:
    """Each row's system label, as the report names it (``SmolLM2-135M-Instruct (chat)``,
    ``M + samsum-lora``), for the frame's model column, which holds output folder names
    (``__tmp__...__tiny-gpt2``). A group's row (no run of its own) takes the label of its
    results file's runs; a row of no known run keeps its folder name."""
    from lm_eval_tasks.report.runs import load_runs

    runs = load_runs(folders, with_samples=False).runs
    labels = {(str(r.results_file), r.task): r.system.label for r in runs}
    by_file = {str(r.results_file): r.system.label for r in reversed(runs)}
    return [labels.get((src, task), by_file.get(src, model))
            for src, task, model in zip(frame["source"], frame["task"], frame["model"])]


def write_correlations(folders: Sequence[str], stats_path: str | Path, out: Path, metric: str = "rouge_geo",
                       fine_tuned: Sequence[str] = ()) -> CorrelationReport:
    """Table 4 from result folders and domain statistics, written into ``out``."""
    res = load_results(folders, fine_tuned=fine_tuned)
    if not res.frame.empty:
        res.frame["model"] = system_labels(res.frame, [*folders, *(f"{d}=fine-tuned" for d in fine_tuned)])
    stats = load_stats(stats_path)
    if res.frame.empty or not (res.frame["metric"] == metric).any():
        res.problems.append(f"no '{metric}' values in the result folders")
    evaluated = set() if res.frame.empty else set(res.frame.loc[res.frame["benchmark"] == RECORD.name, "domain"])
    if evaluated and not evaluated & set(stats.index):
        # e.g. a later `domain-stats` run (another selection, --synthetic) wrote into the same folder
        raise AnalysisError(f"{stats_path} holds statistics for {', '.join(map(str, stats.index)) or 'no domain'}, "
                            f"none of the evaluated domains ({', '.join(sorted(evaluated))}): point --stats at the "
                            f"domain_stats.json of `domsum domain-stats` over those domains")
    detail = correlation_runs(res.frame, stats, metric)
    avg = average(detail)
    out.mkdir(parents=True, exist_ok=True)
    frame_csv(detail, out / "correlations_detail.csv", index=False)
    frame_csv(avg, out / "correlations.csv", index=False)
    md = to_markdown(avg, metric)
    notes = sorted({f"- {r.level}/{r.model}/{r.setting}: {r.note}"
                    for r in detail.itertuples() if r.note})
    if notes or res.problems:
        md += "\nNotes:\n" + "\n".join(notes + [f"- {p}" for p in res.problems]) + "\n"
    (out / "correlations.md").write_text(md, encoding="utf-8")
    return CorrelationReport(md, list(res.problems))


__all__ = ["MEASURES", "RECORD", "CorrelationReport", "average", "correlate", "correlation_runs", "load_stats", "mark",
           "system_labels", "to_markdown", "write_correlations"]
