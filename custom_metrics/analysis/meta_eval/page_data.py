"""What the meta-evaluation page shows, as plain data: the contract between the
statistics (:func:`custom_metrics.analysis.meta_eval.run`) and the HTML page
(:mod:`lm_eval_tasks.report.meta_eval_page`).

Why a plain shape: the page must not know how the numbers were computed, and the
statistics must not know HTML; either side can change while this shape holds.
:func:`page_data` builds it from what ``run`` returns::

    {
      "title": str, "input": str,
      "facts": [str, ...],                  # one sentence each: counts, consensus, resampling
      "levels": [                           # one table per level, in this order
        {"level": str, "label": str, "description": str,
         "rows": [{"metric": str, "human": str, "coefficient": str, "level": str,
                   "r": float, "ci_low": float, "ci_high": float, "n": int}, ...]}],
      "significance": None | {"test": str, "coefficient": str, "level": str,
                              "metrics": [str, ...], "p": [[float, ...], ...]},  # metric x metric
      "heatmap": None | {"coefficient": str, "level": str, "labels": [str, ...],
                         "matrix": [[float, ...], ...]},
      "scatter": [{"level": str, "label": str, "x_label": str, "y_label": str,
                   "panels": [(metric, [x, ...], [y, ...]), ...]}],
      "agreement": {"kappa": [row dict, ...], "alpha": [row dict, ...]},
      "system_ratings": None | pandas.DataFrame,  # mean consensus rating per system and aspect
    }

NaN means "not defined" (an interval without resamples, a correlation over constant
scores); the page prints it as n/a. ``significance`` is None when the run made no
metric-vs-metric test (``run`` adds one as ``summary["significance"]``, a metric x
metric data frame of p-values with ``attrs`` test / coefficient / level, or this dict).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from custom_metrics.analysis.meta_eval.tables import CONSENSUS

#: level -> (label, what the coefficient is computed over)
LEVEL_NAMES = {
    "global": ("global", "over all (document, system) pairs pooled, as the FM paper reports"),
    "summary": ("summary", "within each document across its systems, then averaged over documents"),
    "system": ("system", "over the systems' mean scores"),
}
#: panels per scatter figure (the first metrics; the tables have them all)
MAX_PANELS = 9


def level_label(level: str) -> str:
    return LEVEL_NAMES.get(level, (level, ""))[0]


def _rows(table: pd.DataFrame, human: str) -> list[dict[str, Any]]:
    coef = "coefficient" if "coefficient" in table.columns else "method"
    value = "r" if "r" in table.columns else "value"
    return [{"metric": r["metric"], "human": human, "coefficient": r[coef], "level": r["level"],
             "r": float(r[value]), "ci_low": float(r.get("ci_low", math.nan)),
             "ci_high": float(r.get("ci_high", math.nan)), "n": int(r["n"])} for _, r in table.iterrows()]


def _levels(summary: dict[str, Any]) -> list[dict[str, Any]]:
    consensus = summary.get("consensus") or "mean"
    rows = _rows(summary["table"], "human" if "human" not in summary["counts"] else "overall rating")
    corr = summary.get("human_correlations")
    if corr is not None and len(corr):
        for aspect, g in corr[corr["annotator"] == CONSENSUS].groupby("aspect", sort=True):
            rows += _rows(g, f"{aspect} ({consensus} consensus)")
    out = []
    for level in dict.fromkeys(r["level"] for r in rows):
        label, description = LEVEL_NAMES.get(level, (level, ""))
        out.append({"level": level, "label": label, "description": description,
                    "rows": [r for r in rows if r["level"] == level]})
    return out


def _significance(summary: dict[str, Any]) -> dict[str, Any] | None:
    sig = summary.get("significance")
    if isinstance(sig, pd.DataFrame):
        return {"test": sig.attrs.get("test", "test"), "coefficient": sig.attrs.get("coefficient", ""),
                "level": sig.attrs.get("level", ""), "metrics": [str(c) for c in sig.columns],
                "p": sig.to_numpy(float).tolist()}
    return sig if isinstance(sig, dict) else None


def _heatmap(summary: dict[str, Any]) -> dict[str, Any] | None:
    m = summary.get("matrix")
    if m is None or not len(m):
        return None
    return {"coefficient": m.attrs.get("coefficient", ""), "level": m.attrs.get("level", ""),
            "labels": [str(c) for c in m.columns], "matrix": m.to_numpy(float).tolist()}


def _scatter(df: pd.DataFrame, metrics: list[str], levels: list[str]) -> list[dict[str, Any]]:
    """Metric vs human as each level sees them: all pairs; system means; and for the
    summary level each value minus its document's mean (what a per-document
    coefficient compares)."""
    d = df.copy()
    cols = [m for m in metrics if m in d.columns][:MAX_PANELS]
    for c in [*cols, "human"]:
        d[c] = pd.to_numeric(d[c], errors="coerce")
    out = []
    for level in levels:
        label = level_label(level)
        if label == "global":
            frame, how = d, "all (document, system) pairs"
        elif label == "system":
            frame, how = d.groupby("system")[[*cols, "human"]].mean(), "system means"
        elif label == "summary":
            frame = d[[*cols, "human"]] - d.groupby("doc_id")[[*cols, "human"]].transform("mean")
            how = "each value minus its document's mean"
        else:
            continue
        panels = [(m, frame[m].to_numpy(float).tolist(), frame["human"].to_numpy(float).tolist()) for m in cols]
        out.append({"level": level, "label": label, "x_label": f"metric ({how})", "y_label": "human",
                    "panels": panels})
    return out


def _records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    return [] if df is None else df.replace({np.nan: None}).to_dict("records")


def page_data(summary: dict[str, Any]) -> dict[str, Any]:
    """The page's data (shape above) from the dict :func:`~custom_metrics.analysis.meta_eval.run` returns."""
    counts = summary["counts"]
    facts = [f"Input {summary['input']} ({counts.get('format', '?')}): {counts.get('rows', '?')} (document, system) "
             f"rows, {counts.get('systems', '?')} systems, {len(summary['metrics'])} metrics."]
    if "human" in counts:
        facts.append(f"Human score: {counts['human']}.")
    if summary.get("consensus"):
        facts.append(f"Consensus of annotators: {summary['consensus']} "
                     f"({counts.get('annotators', '?')} annotators, {counts.get('aspects', '?')} aspects).")
    facts.append(f"Intervals: percentile 95% bootstrap, {summary.get('bootstrap')} resamples, seed "
                 f"{summary.get('seed')}.")
    levels = _levels(summary)
    return {"title": "Meta-evaluation", "input": str(summary["input"]), "facts": facts, "levels": levels,
            "significance": _significance(summary), "heatmap": _heatmap(summary),
            "scatter": _scatter(summary["data"], list(summary["metrics"]), [lv["level"] for lv in levels])
            if "data" in summary and "human" in summary["data"].columns else [],
            "agreement": {"kappa": _records(summary.get("kappas")), "alpha": _records(summary.get("alphas"))},
            "system_ratings": summary.get("system_ratings")}


__all__ = ["LEVEL_NAMES", "MAX_PANELS", "level_label", "page_data"]
