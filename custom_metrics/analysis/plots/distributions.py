"""Per-system distributions of per-document scores, one box per system and subset, with the
documents on top.

Why a module of its own: one kind of figure per module; a mean hides the spread this
figure shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from custom_metrics.analysis.plots.style import legend_below, legend_label, NothingToPlot, save_png, series_colour


Scores = Sequence[float]


def distribution_plot(
    path: str | Path,
    title: str,
    series: Mapping[str, Scores] | Mapping[str, Mapping[str, Scores]],
    xlabel: str,
) -> Path:
    """Distributions of per-document scores: one box per system and group (e.g. subset),
    with the documents as jittered points on top (fixed seed, so the figure is reproducible).

    ``series`` is ``{group: {system: scores}}``, or ``{system: scores}`` for one unnamed
    group. Groups lie side by side along the horizontal axis, each with one box per
    system in the same colour in every group; scores of different groups never share a
    box, since documents of different subsets are not draws from one distribution.
    ``xlabel`` names the score (the vertical axis).

    Why both box and points: a mean hides whether a system is uniformly mediocre or good
    on most documents and failing on a few; the box gives quartiles and median, the
    points show the raw spread and the sample size. ``nan`` scores are left out; each
    group's label gives its documents per box (n) and the n/a left out; a system with
    no finite score in a group gets "no values" in its place.

    Raises :class:`NothingToPlot` when no box has a finite value.
    """
    return save_png(distribution_figure(title, series, xlabel), Path(path))


# boxplot's "orientation" replaced "vert" in matplotlib 3.10 (vert is deprecated from 3.11)
_VERTICAL = ({"orientation": "vertical"}
             if tuple(int(x) for x in matplotlib.__version__.split(".")[:2]) >= (3, 10)
             else {"vert": True})


def _grouped(series: Mapping) -> dict[str, dict[str, np.ndarray]]:
    """``series`` as ``{group: {system: finite-or-nan array}}`` (a flat mapping: one group "")."""
    if series and all(isinstance(v, Mapping) for v in series.values()):
        nested = series
    else:
        nested = {"": series}
    return {str(g): {str(n): np.asarray([float(x) for x in vals], dtype=float) for n, vals in inner.items()}
            for g, inner in nested.items()}


def _n_label(group: str, boxes: Mapping[str, np.ndarray]) -> str:
    """The group's tick label: its name and the documents per box (one number when all agree)."""
    ns = sorted({int(np.isfinite(v).sum()) for v in boxes.values()})
    n = f"n={ns[0]}" if len(ns) == 1 else f"n={ns[0]}–{ns[-1]}"
    dropped = sum(int((~np.isfinite(v)).sum()) for v in boxes.values())
    return (f"{group}\n" if group else "") + f"({n}" + (f", {dropped} n/a" if dropped else "") + ")"


def distribution_figure(
    title: str,
    series: Mapping[str, Scores] | Mapping[str, Mapping[str, Scores]],
    xlabel: str,
) -> Figure:
    """The figure of :func:`distribution_plot`, not saved (tests inspect it)."""
    groups = _grouped(series)
    names = list(dict.fromkeys(n for boxes in groups.values() for n in boxes))
    if not any(np.isfinite(v).any() for boxes in groups.values() for v in boxes.values()):
        raise NothingToPlot("no system has a finite per-document score" if names else "no systems to plot")
    k = len(names)
    width = 0.8 / k
    rng = np.random.default_rng(0)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(groups) * max(1, k) ** 0.5 + 1.5), 4.8),
                           layout="constrained")
    for gi, boxes in enumerate(groups.values()):
        for i, n in enumerate(names):
            if n not in boxes:
                continue
            pos = gi + (i - (k - 1) / 2) * width
            ok = boxes[n][np.isfinite(boxes[n])]
            if not len(ok):
                ax.text(pos, 0.5, "no values", transform=ax.get_xaxis_transform(), rotation=90,
                        ha="center", va="center", fontsize=7, color="0.4")
                continue
            colour = series_colour(i, k)
            ax.boxplot([ok], positions=[pos], widths=width * 0.8, showmeans=True, **_VERTICAL,
                       showfliers=False, patch_artist=True, manage_ticks=False,
                       boxprops={"facecolor": (*colour[:3], 0.25), "edgecolor": colour},
                       medianprops={"color": "black", "linewidth": 1.6},
                       meanprops={"marker": "D", "markerfacecolor": "white",
                                  "markeredgecolor": "black", "markersize": 4},
                       whiskerprops={"color": colour}, capprops={"color": colour})
            ax.scatter(pos + rng.uniform(-0.3, 0.3, len(ok)) * width, ok, s=7, color=colour, alpha=0.5,
                       linewidths=0, zorder=3)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([_n_label(g, b) for g, b in groups.items()], fontsize=8.5)
    ax.set_xlim(-0.5, len(groups) - 0.5)
    ax.set_ylabel(xlabel)
    ax.set_title(title, fontsize=11)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    handles = [Patch(facecolor=(*series_colour(i, k)[:3], 0.25), edgecolor=series_colour(i, k),
                     label=legend_label(n)) for i, n in enumerate(names)]
    handles += [
        Patch(facecolor="0.85", edgecolor="0.3", label="box: quartiles (whiskers: 1.5 IQR)"),
        Line2D([], [], color="black", linewidth=1.6, label="median"),
        Line2D([], [], color="none", marker="D", markerfacecolor="white",
               markeredgecolor="black", label="mean"),
        Line2D([], [], color="none", marker="o", markerfacecolor="0.4", markeredgecolor="none",
               alpha=0.6, label="one document"),
    ]
    legend_below(fig, handles)
    return fig
