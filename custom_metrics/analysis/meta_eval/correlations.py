"""The metric-human correlations of a meta-evaluation as plain data, and their files.

Why a module apart from :mod:`.output`: the numbers (one table per level with its
interval and n, the metric-vs-metric significance matrix, the metric-by-metric matrix
of the FM paper's Figure 3) are what a notebook, the HTML page and the Markdown report
all need; :func:`correlate_metrics` returns them without writing anything, and
:func:`write_correlations` is the one place their CSV names and Markdown layout are
decided. Every table and figure names its level and coefficient.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from custom_metrics.cells import frame_csv, markdown_table

from custom_metrics.analysis.stats.coefficients import COEFFICIENTS
from custom_metrics.analysis.stats.levels import LEVELS, matrices, metric_matrix
from custom_metrics.analysis.stats.table import correlation_table
from custom_metrics.analysis.stats.resampling import significance_matrix

#: the metric-by-metric matrix reported by default: the FM paper's Figure 3 (its release
#: runs numpy.corrcoef over every (paper, system) pair)
MATRIX_LEVEL, MATRIX_COEFFICIENT = "global", "pearson"
LEVEL_NAMES = {"summary": "summary level (per document across systems, averaged over documents)",
               "system": "system level (system means)",
               "global": "global level (all (document, system) pairs pooled)"}
COLUMNS = ["metric", "coefficient", "level", "r", "ci_low", "ci_high", "n"]


@dataclass
class CorrelationResults:
    """Everything :func:`correlate_metrics` computed, as data frames and settings."""

    #: one row per (metric, level, coefficient): COLUMNS + excluded, n_pairs, dropped_pairs, resampling
    table: pd.DataFrame
    #: p-values of the paired test between every two metrics (NaN on the diagonal)
    significance: pd.DataFrame
    #: metric-by-metric coefficient (MATRIX_LEVEL, MATRIX_COEFFICIENT), human included
    matrix: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def levels(self) -> dict[str, pd.DataFrame]:
        """One table per level: rows {metric, coefficient, level, r, ci_low, ci_high, n, ...}."""
        return {lv: self.table[self.table["level"] == lv].reset_index(drop=True)
                for lv in self.table["level"].unique()}

    def as_dict(self) -> dict[str, Any]:
        """Plain data: the rows per level, the significance matrix and the settings."""
        return {"levels": {lv: t.to_dict("records") for lv, t in self.levels().items()},
                "significance": {"p_values": self.significance.to_dict(), **self.settings["significance"]},
                "matrix": {"level": MATRIX_LEVEL, "coefficient": MATRIX_COEFFICIENT,
                           "values": self.matrix.to_dict()},
                "settings": self.settings}


def correlate_metrics(df: pd.DataFrame, metrics: Sequence[str], *, n_boot: int = 1000, seed: int = 0,
                      resampling: str = "both", test: str = "permutation", test_level: str = "global",
                      test_coefficient: str = "pearson", levels: Sequence[str] = LEVELS,
                      coefficients: Sequence[str] = COEFFICIENTS, progress: bool | None = False) -> CorrelationResults:
    """Correlations of ``metrics`` with ``human`` at every level and coefficient with
    bootstrap intervals, the paired ``test`` between every two metrics at
    ``test_level``/``test_coefficient`` (``n_boot`` permutations, resampling unit
    ``resampling``), and the metric-by-metric matrix (FM Figure 3)."""
    table = correlation_table(df, metrics, n_boot=n_boot, seed=seed, resampling=resampling, levels=levels,
                              coefficients=coefficients, progress=progress)
    mats = {m: matrices(df, m) for m in metrics}
    sig = significance_matrix(mats, test_level, test_coefficient, test=test, method=resampling,
                              n_resamples=n_boot, seed=seed, progress=progress)
    matrix = metric_matrix(df, [*metrics, "human"], MATRIX_LEVEL, MATRIX_COEFFICIENT)
    settings = {"bootstrap": {"resamples": n_boot, "resampling": resampling, "seed": seed, "interval": "percentile 95%"},
                "significance": {"test": test, "level": test_level, "coefficient": test_coefficient,
                                 "permuted": resampling, "resamples": n_boot if test == "permutation" else 0},
                "summary_level": "documents whose correlation is undefined (fewer than 3 scored systems, or "
                                 "constant metric or human scores across systems) are left out of the mean "
                                 "and counted in `excluded`",
                "system_means": "rounded to 12 significant digits, so equal ratings give equal means (ties kept)"}
    # the page and plots name what each matrix holds from the frames themselves
    sig.attrs.update(test=test, level=test_level, coefficient=test_coefficient)
    matrix.attrs.update(level=MATRIX_LEVEL, coefficient=MATRIX_COEFFICIENT)
    return CorrelationResults(table, sig, matrix, settings)


def _fmt(v: Any, digits: int = 3) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def level_markdown(table: pd.DataFrame, level: str) -> list[str]:
    """One level's table: a row per metric, a column per coefficient (r [CI]), and n."""
    t = table[table["level"] == level]
    coefs = list(dict.fromkeys(t["coefficient"]))
    rows = [[metric, *(f"{_fmt(r['r'])} [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]" for _, r in g.iterrows()),
             g["n"].iloc[0], g["excluded"].iloc[0]] for metric, g in t.groupby("metric", sort=False)]
    table_md = markdown_table(["metric", *(f"{c} r [95% CI]" for c in coefs), "n", "excluded"], rows,
                              ["---"] * (len(coefs) + 3))
    return [f"### {LEVEL_NAMES.get(level, level)}", "", *table_md.splitlines(), ""]


def significance_markdown(sig: pd.DataFrame, settings: dict[str, Any]) -> list[str]:
    names = list(sig.columns)
    what = (f"{settings['test']} test, {settings['coefficient']} at {settings['level']} level"
            + (f", {settings['resamples']} permutations of {settings['permuted']}" if settings["test"] == "permutation"
               else ""))
    rows = [[a, *("-" if a == b else _fmt(sig.loc[a, b]) for b in names)] for a in names]
    table_md = markdown_table(["", *names], rows, ["---"] * (len(names) + 1))
    return [f"## Metric vs metric: p-value that both correlate equally with the human scores ({what})", "",
            *table_md.splitlines(), ""]


def plot_matrix(matrix: pd.DataFrame, path: Path, level: str = MATRIX_LEVEL,
                coefficient: str = MATRIX_COEFFICIENT) -> Path:
    """Heat map of a metric-by-metric matrix, titled with its coefficient and level."""
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
    fig.colorbar(im, ax=ax, label=f"{coefficient} r")
    ax.set_title(f"Metric-by-metric {coefficient} correlation, {level} level")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def matrix_stem(level: str = MATRIX_LEVEL, coefficient: str = MATRIX_COEFFICIENT) -> str:
    return f"metric_matrix_{level}_{coefficient}"


def write_correlations(out: Path, res: CorrelationResults) -> list[str]:
    """``correlations.csv`` (every row), ``correlations_<level>.csv``, ``significance.csv``
    and the metric matrix (CSV and PNG, named by level and coefficient) into ``out``;
    returns the Markdown sections."""
    frame_csv(res.table, out / "correlations.csv", index=False)
    for level, t in res.levels().items():
        frame_csv(t, out / f"correlations_{level}.csv", index=False)
    frame_csv(res.significance, out / "significance.csv")
    stem = matrix_stem()
    frame_csv(res.matrix, out / f"{stem}.csv")
    plot_matrix(res.matrix, out / f"{stem}.png")
    boot = res.settings["bootstrap"]
    md = [f"## Metric vs human: every level and coefficient (percentile 95% CI from {boot['resamples']} "
          f"bootstrap resamples of {boot['resampling']})", ""]
    for level in res.table["level"].unique():
        md += level_markdown(res.table, level)
    md += ["Summary level: " + res.settings["summary_level"] + ".", ""]
    md += significance_markdown(res.significance, res.settings["significance"])
    md += [f"Metric-by-metric {MATRIX_COEFFICIENT} at {MATRIX_LEVEL} level (the FM paper's Figure 3): "
           f"`{stem}.csv`, `{stem}.png`."]
    return md


__all__ = ["COLUMNS", "CorrelationResults", "LEVEL_NAMES", "MATRIX_COEFFICIENT", "MATRIX_LEVEL", "correlate_metrics",
           "level_markdown", "matrix_stem", "plot_matrix", "significance_markdown", "write_correlations"]
