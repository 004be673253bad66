"""Grouped bar charts with error bars: scores per domain (category) and system (series).

Why a module of its own: one kind of figure per module; a bar chart's rules (no 0-height bar
for n/a, error-bar distances) sit beside their drawing code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from custom_metrics.analysis.plots.style import legend_below, legend_label, NothingToPlot, save_png, series_colour

#: the label of a bar of height 0 (a score of 0, drawn as no bar at all)
ZERO_LABEL = "0.0"


def bar_chart(
    path: str | Path,
    title: str,
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    errors: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    ylabel: str = "",
) -> Path:
    """Grouped bars: one group per category (e.g. domain), one bar per series (system).

    ``errors[name] = (below, above)``: the error bar's extent below and above each bar
    (distances, not bounds: for a confidence interval pass ``value - low`` and
    ``high - value``); a non-finite distance means no error bar for that bar, a
    negative one is a ValueError. A ``nan`` value draws no bar (a 0-height bar would
    read as a score of 0) and is marked "n/a" at the baseline; a value of exactly 0
    draws a bar of no height, so it is labelled "0.0" at the baseline (an unlabelled
    gap would read as a missing value). The legend sits below the axes, in as many
    columns as fit, so it never hides a bar nor squeezes the axes beside long names.

    Raises :class:`NothingToPlot` when there is no category, no series, or no finite
    value at all.
    """
    return save_png(bar_figure(title, categories, series, errors, ylabel), Path(path))


def bar_figure(
    title: str,
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    errors: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    ylabel: str = "",
) -> Figure:
    """The figure of :func:`bar_chart`, not saved (tests inspect it)."""
    cats = [str(c) for c in categories]
    names = list(series)
    if not cats or not names:
        raise NothingToPlot(f"a bar chart needs categories and series; got {len(cats)} "
                            f"categories, {len(names)} series")
    vals = {}
    for n in names:
        v = np.asarray([float(x) for x in series[n]], dtype=float)
        if len(v) != len(cats):
            raise ValueError(f"series {n!r} has {len(v)} values for {len(cats)} categories")
        vals[n] = v
    if not any(np.isfinite(v).any() for v in vals.values()):
        raise NothingToPlot("every value is n/a")
    errs = {}
    for n, pair in (errors or {}).items():
        if n not in vals:
            raise ValueError(f"errors for unknown series {n!r}")
        below, above = (np.asarray([float(x) for x in e], dtype=float) for e in pair)
        if len(below) != len(cats) or len(above) != len(cats):
            raise ValueError(f"errors of {n!r} need {len(cats)} values below and above")
        if (below[np.isfinite(below)] < 0).any() or (above[np.isfinite(above)] < 0).any():
            raise ValueError(f"errors of {n!r} must be distances >= 0 (below, above), not bounds")
        errs[n] = (np.where(np.isfinite(below), below, 0.0), np.where(np.isfinite(above), above, 0.0))

    k = len(names)
    width = 0.8 / k
    x = np.arange(len(cats), dtype=float)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(cats) * max(1, k) ** 0.5 + 1.5), 4.8),
                           layout="constrained")
    handles = []
    na_marks = zero_marks = False
    for i, n in enumerate(names):
        colour = series_colour(i, k)
        v = vals[n]
        ok = np.isfinite(v)
        pos = x + (i - (k - 1) / 2) * width
        if ok.any():
            yerr = None
            if n in errs and (errs[n][0][ok].any() or errs[n][1][ok].any()):
                yerr = np.vstack([errs[n][0][ok], errs[n][1][ok]])
            ax.bar(pos[ok], v[ok], width * 0.92, yerr=yerr, capsize=3, color=colour,
                   error_kw={"elinewidth": 1.0, "ecolor": "0.2"})
        for p in pos[~ok]:
            na_marks = True
            _baseline_mark(ax, p, "n/a", "0.4")
        for p in pos[ok & (v == 0)]:
            zero_marks = True
            _baseline_mark(ax, p, ZERO_LABEL, colour)
        handles.append(Patch(facecolor=colour, label=legend_label(n) + ("" if ok.any() else " (n/a)")))
    if errs:
        handles.append(Line2D([], [], color="0.2", marker="_", markersize=10, linewidth=1.0,
                              label="error bars"))
    if na_marks:
        handles.append(Patch(facecolor="none", edgecolor="none", label="n/a: no value (no bar)"))
    if zero_marks:
        handles.append(Patch(facecolor="none", edgecolor="none",
                             label=f"{ZERO_LABEL}: a score of 0 (bar of no height)"))
    finite_all = np.concatenate([v[np.isfinite(v)] for v in vals.values()])
    if (finite_all < 0).any():
        ax.axhline(0, color="0.3", linewidth=0.8)
    ax.set_xticks(x)
    ax.set_xlim(-0.5, len(cats) - 0.5)
    long = max(len(c) for c in cats) > 8 or len(cats) > 6
    ax.set_xticklabels(cats, rotation=30 if long else 0, ha="right" if long else "center", fontsize=9)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=11)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    legend_below(fig, handles)
    return fig


def _baseline_mark(ax, x: float, text: str, colour) -> None:
    """``text`` upright above the baseline at ``x``, a little clear of the axis line."""
    ax.annotate(text, (x, 0), xytext=(0, 2), textcoords="offset points", rotation=90, ha="center",
                va="bottom", fontsize=7, color=colour)
