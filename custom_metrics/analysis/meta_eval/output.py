"""Writing a meta-evaluation: the CSV tables, ``meta_eval.md`` and ``summary.json`` in
the output folder (the correlation tables, significance matrix and metric matrix through
:func:`.correlations.write_correlations`).

Why apart from the computing: the tables are plain data frames a notebook can use
without any file written; this module is the one place that decides file names and
the Markdown layout the command prints.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from custom_metrics.analysis.meta_eval.correlations import CorrelationResults, write_correlations
from custom_metrics.analysis.meta_eval.tables import CONSENSUS
from custom_metrics.cells import frame_csv, frame_markdown, markdown_table
from custom_metrics.outputs import write_atomically


def ratings_markdown(corr: pd.DataFrame, kappas: pd.DataFrame, sys_table: pd.DataFrame,
                     method: str = "spearman", level: str = "global", consensus: str = "mean",
                     alphas: pd.DataFrame | None = None) -> list[str]:
    md = [f"## Per-system mean human ratings (consensus: {consensus})", "", frame_markdown(sys_table, 3),
          f"## Metric vs human ({method}, {level} level; {consensus} consensus of annotators)", ""]
    c = corr[(corr["annotator"] == CONSENSUS) & (corr["coefficient"] == method) & (corr["level"] == level)]
    aspects = sorted(c["aspect"].unique())
    rows = []
    for metric, g in c.groupby("metric", sort=False):
        cells = []
        for a in aspects:
            r = g[g["aspect"] == a].iloc[0]
            cells.append(f"{_fmt(r['r'])} [{_fmt(r['ci_low'], 2)}, {_fmt(r['ci_high'], 2)}] (n={r['n']})")
        rows.append([metric, *cells])
    md += [markdown_table(["metric", *aspects], rows, ["---"] * (len(aspects) + 1)),
           "## Inter-annotator agreement (Cohen's kappa)", "",
           markdown_table(["aspect", "annotators", "items", "kappa", "quadratic kappa"],
                          [[r["aspect"], f"{r['annotator_a']} vs {r['annotator_b']}", r["n_items"], _fmt(r["kappa"]),
                            _fmt(r["kappa_quadratic"])] for _, r in kappas.iterrows()], ["---"] * 5)]
    if alphas is not None and len(alphas):
        md += ["## Inter-annotator agreement (Krippendorff's alpha, all annotators)", "",
               markdown_table(["aspect", "annotators", "items", "alpha (interval)", "alpha (ordinal)"],
                              [[r["aspect"], r["annotators"], r["n_items"], _fmt(r["alpha_interval"]),
                                _fmt(r["alpha_ordinal"])] for _, r in alphas.iterrows()], ["---"] * 5)]
    return md


def _fmt(v: float, digits: int = 3) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def write_outputs(out: Path, summary: dict[str, Any], results: CorrelationResults, ranks: pd.DataFrame,
                  ratings: dict[str, pd.DataFrame] | None = None) -> str:
    """Every output file of one meta-evaluation into ``out``; returns the Markdown report.

    ``summary``: what ``summary.json`` holds (input, counts, metrics, kappa, ...);
    ``ratings``: the ``--ratings`` tables (``human_correlations``, ``kappas``,
    ``system_ratings``), or None.
    """
    rating_md: list[str] = []
    if ratings is not None:
        corr, kappas, sys_table = ratings["human_correlations"], ratings["kappas"], ratings["system_ratings"]
        frame_csv(corr, out / "human_correlations.csv", index=False)
        frame_csv(kappas, out / "kappa.csv", index=False)
        frame_csv(sys_table, out / "system_ratings.csv")
        alphas = ratings.get("alphas")
        if alphas is not None:
            frame_csv(alphas, out / "alpha.csv", index=False)
        rating_md = ratings_markdown(corr, kappas, sys_table, consensus=summary.get("consensus") or "mean",
                                     alphas=alphas)
    frame_csv(ranks, out / "rankings.csv")
    correlation_md = write_correlations(out, results)
    counts = summary["counts"]
    md = ["# Meta-evaluation", "", f"Input: `{summary['input']}` ({counts['format']}), {counts['rows']} "
          f"(document, system) rows, "
          f"{counts['systems']} systems; missing cells {counts['missing_cells']}, "
          f"empty summaries {counts.get('empty_summaries', 0)}, NaN human scores {counts['nan_human']}."
          + (f" Human score: {counts['human']}." if "human" in counts else ""), "",
          *correlation_md, "",
          "## System rankings", "", frame_markdown(ranks, 4).rstrip("\n")]
    if rating_md:
        md += ["", *rating_md]
    if "kappa" in summary:
        a, b = summary["kappa"]["annotators"]
        md += ["", f"Cohen's kappa ({a} vs {b}): {_fmt(summary['kappa']['kappa'])} "
               f"over {summary['kappa']['n_items']} items"]
    write_atomically(out / "meta_eval.md", "\n".join(md) + "\n")
    write_atomically(out / "summary.json", json.dumps(summary, indent=2, default=str))
    return "\n".join(md)


__all__ = ["ratings_markdown", "write_outputs"]
