"""Writing a meta-evaluation: the CSV tables, the Spearman heat map, ``meta_eval.md``
and ``summary.json`` in the output folder.

Why apart from the computing: the tables are plain data frames a notebook can use
without any file written; this module is the one place that decides file names and
the Markdown layout the command prints.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from custom_metrics.analysis.meta_eval.tables import CONSENSUS
from custom_metrics.analysis.stats.levels import LEVELS, METHODS

def ratings_markdown(corr: pd.DataFrame, kappas: pd.DataFrame, sys_table: pd.DataFrame,
                     method: str = "spearman", level: str = "summary_pooled", consensus: str = "mean",
                     alphas: pd.DataFrame | None = None) -> list[str]:
    md = [f"## Per-system mean human ratings (consensus: {consensus})", "",
          sys_table.round(3).to_markdown() if _has_tabulate() else sys_table.round(3).to_string(), "",
          f"## Metric vs human ({method}, {level.replace('_', ' ')}; {consensus} consensus of annotators)", ""]
    c = corr[(corr["annotator"] == CONSENSUS) & (corr["method"] == method) & (corr["level"] == level)]
    aspects = sorted(c["aspect"].unique())
    md.append("| metric | " + " | ".join(aspects) + " |")
    md.append("|---" * (len(aspects) + 1) + "|")
    for metric, g in c.groupby("metric", sort=False):
        cells = []
        for a in aspects:
            r = g[g["aspect"] == a].iloc[0]
            cells.append(f"{_fmt(r['value'])} [{_fmt(r['ci_low'], 2)}, {_fmt(r['ci_high'], 2)}] (n={r['n']})")
        md.append(f"| {metric} | " + " | ".join(cells) + " |")
    md += ["", "## Inter-annotator agreement (Cohen's kappa)", "",
           "| aspect | annotators | items | kappa | quadratic kappa |", "|---|---|---|---|---|"]
    for _, r in kappas.iterrows():
        md.append(f"| {r['aspect']} | {r['annotator_a']} vs {r['annotator_b']} | {r['n_items']} | "
                  f"{_fmt(r['kappa'])} | {_fmt(r['kappa_quadratic'])} |")
    if alphas is not None and len(alphas):
        md += ["", "## Inter-annotator agreement (Krippendorff's alpha, all annotators)", "",
               "| aspect | annotators | items | alpha (interval) | alpha (ordinal) |", "|---|---|---|---|---|"]
        for _, r in alphas.iterrows():
            md.append(f"| {r['aspect']} | {r['annotators']} | {r['n_items']} | {_fmt(r['alpha_interval'])} | "
                      f"{_fmt(r['alpha_ordinal'])} |")
    return md


def _fmt(v: float, digits: int = 3) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def to_markdown(table: pd.DataFrame, method: str = "spearman") -> str:
    lines = [f"| metric | level | {method} | 95% CI | n |", "|---|---|---|---|---|"]
    for _, r in table[table["method"] == method].iterrows():
        lines.append(f"| {r['metric']} | {r['level']} | {_fmt(r['value'])} | "
                     f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}] | {r['n']} |")
    return "\n".join(lines)


def wide_markdown(table: pd.DataFrame) -> str:
    """One row per metric: every level x method (value, n)."""
    short = {"summary_pooled": "pooled", "summary_per_doc": "per-doc", "system": "system"}
    head = "| metric | " + " | ".join(f"{short[lv]} {m[0].upper()}" for lv in LEVELS for m in METHODS) + " | pairs |"
    lines = [head, "|---" * (len(LEVELS) * len(METHODS) + 2) + "|"]
    for metric, g in table.groupby("metric", sort=False):
        cells = []
        for lv in LEVELS:
            for m in METHODS:
                r = g[(g["level"] == lv) & (g["method"] == m)].iloc[0]
                cells.append(_fmt(r["value"]))
        lines.append(f"| {metric} | " + " | ".join(cells) + f" | {g['n_pairs'].iloc[0]} |")
    return "\n".join(lines)


def plot_heatmap(matrix: pd.DataFrame, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(matrix.columns)
    n = len(labels)
    size = max(4.0, 0.8 * n + 2.5)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    im = ax.imshow(matrix.to_numpy(float), cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=9)
    ax.set_yticklabels(labels, fontsize=9)
    for i in range(n):
        for j in range(n):
            v = matrix.iloc[i, j]
            ax.text(j, i, "n/a" if math.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=8)
    fig.colorbar(im, ax=ax, label="Spearman rho")
    ax.set_title("Metric-by-metric Spearman correlation (summary level)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _has_tabulate() -> bool:
    """pandas' ``to_markdown`` needs tabulate; without it the tables print as plain text."""
    return importlib.util.find_spec("tabulate") is not None


def write_outputs(out: Path, summary: dict[str, Any], table: pd.DataFrame, ranks: pd.DataFrame,
                  matrix: pd.DataFrame, ratings: dict[str, pd.DataFrame] | None = None) -> str:
    """Every output file of one meta-evaluation into ``out``; returns the Markdown report.

    ``summary``: what ``summary.json`` holds (input, counts, metrics, kappa, ...);
    ``ratings``: the ``--ratings`` tables (``human_correlations``, ``kappas``,
    ``system_ratings``), or None.
    """
    rating_md: list[str] = []
    if ratings is not None:
        corr, kappas, sys_table = ratings["human_correlations"], ratings["kappas"], ratings["system_ratings"]
        corr.to_csv(out / "human_correlations.csv", index=False)
        kappas.to_csv(out / "kappa.csv", index=False)
        sys_table.to_csv(out / "system_ratings.csv")
        alphas = ratings.get("alphas")
        if alphas is not None:
            alphas.to_csv(out / "alpha.csv", index=False)
        rating_md = ratings_markdown(corr, kappas, sys_table, consensus=summary.get("consensus") or "mean",
                                     alphas=alphas)
    table.to_csv(out / "correlations.csv", index=False)
    ranks.to_csv(out / "rankings.csv")
    matrix.to_csv(out / "spearman_matrix.csv")
    plot_heatmap(matrix, out / "spearman_heatmap.png")
    counts = summary["counts"]
    md = ["# Meta-evaluation", "", f"Input: `{summary['input']}` ({counts['format']}), {counts['rows']} "
          f"(document, system) rows, "
          f"{counts['systems']} systems; missing cells {counts['missing_cells']}, "
          f"empty summaries {counts.get('empty_summaries', 0)}, NaN human scores {counts['nan_human']}."
          + (f" Human score: {counts['human']}." if "human" in counts else ""), "",
          "## All correlations (P/S/K = Pearson/Spearman/Kendall)", "", wide_markdown(table), "",
          "## Spearman with bootstrap 95% CI", "", to_markdown(table), "",
          "## System rankings", "", ranks.round(4).to_markdown() if _has_tabulate() else ranks.round(4).to_string()]
    if rating_md:
        md += ["", *rating_md]
    if "kappa" in summary:
        a, b = summary["kappa"]["annotators"]
        md += ["", f"Cohen's kappa ({a} vs {b}): {_fmt(summary['kappa']['kappa'])} "
               f"over {summary['kappa']['n_items']} items"]
    (out / "meta_eval.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    return "\n".join(md)


__all__ = ["plot_heatmap", "ratings_markdown", "to_markdown", "wide_markdown", "write_outputs"]
