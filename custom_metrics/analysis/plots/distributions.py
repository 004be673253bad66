"""Per-system distributions of per-document scores: a box plot with the documents on top.

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

from custom_metrics.analysis.plots.style import legend_label, NothingToPlot, save_png, series_colour


def distribution_plot(
    path: str | Path,
    title: str,
    series: Mapping[str, Sequence[float]],
    xlabel: str,
) -> Path:
    """Per-system distribution of per-document scores: a box plot per system with the
    documents as jittered points on top (fixed seed, so the figure is reproducible).

    Why both: a mean hides whether a system is uniformly mediocre or good on most
    documents and failing on a few; the box gives quartiles and median, the points
    show the raw spread and the sample size. ``nan`` scores are left out and counted
    in the row label; a system with no finite score gets a "no values" row.

    Raises :class:`NothingToPlot` when no series has a finite value.
    """
    return save_png(distribution_figure(title, series, xlabel), Path(path))


# boxplot's "orientation" replaced "vert" in matplotlib 3.10 (vert is deprecated from 3.11)
_HORIZONTAL = ({"orientation": "horizontal"}
               if tuple(int(x) for x in matplotlib.__version__.split(".")[:2]) >= (3, 10)
               else {"vert": False})


def distribution_figure(
    title: str,
    series: Mapping[str, Sequence[float]],
    xlabel: str,
) -> Figure:
    """The figure of :func:`distribution_plot`, not saved (tests inspect it)."""
    names = list(series)
    clean = {n: np.asarray([float(x) for x in series[n]], dtype=float) for n in names}
    if not any(np.isfinite(v).any() for v in clean.values()):
        raise NothingToPlot("no system has a finite per-document score"
                            if names else "no systems to plot")
    rng = np.random.default_rng(0)
    fig, ax = plt.subplots(figsize=(8.0, max(3.2, 0.62 * len(names) + 1.9)))
    ticks = []
    for i, n in enumerate(names):
        pos = len(names) - i  # first system on top
        v = clean[n]
        ok = v[np.isfinite(v)]
        dropped = len(v) - len(ok)
        ticks.append(f"{legend_label(n).strip() or n} (n={len(ok)}"
                     + (f", {dropped} n/a" if dropped else "") + ")")
        if not len(ok):
            ax.text(0.5, pos, "no values", transform=ax.get_yaxis_transform(), ha="center",
                    va="center", fontsize=8.5, color="0.4")
            continue
        colour = series_colour(i, len(names))
        ax.boxplot([ok], positions=[pos], widths=0.55, showmeans=True, **_HORIZONTAL,
                   showfliers=False, patch_artist=True,
                   boxprops={"facecolor": (*colour[:3], 0.25), "edgecolor": colour},
                   medianprops={"color": "black", "linewidth": 1.6},
                   meanprops={"marker": "D", "markerfacecolor": "white",
                              "markeredgecolor": "black", "markersize": 5},
                   whiskerprops={"color": colour}, capprops={"color": colour})
        ax.scatter(ok, pos + rng.uniform(-0.2, 0.2, len(ok)), s=9, color=colour, alpha=0.5,
                   linewidths=0, zorder=3)
    ax.set_yticks(range(len(names), 0, -1))
    ax.set_yticklabels(ticks, fontsize=9)
    ax.set_ylim(0.4, len(names) + 0.6)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=11)
    ax.grid(axis="x", alpha=0.3)
    handles = [
        Patch(facecolor="0.85", edgecolor="0.3", label="box: quartiles (whiskers: 1.5 IQR)"),
        Line2D([], [], color="black", linewidth=1.6, label="median"),
        Line2D([], [], color="none", marker="D", markerfacecolor="white",
               markeredgecolor="black", label="mean"),
        Line2D([], [], color="none", marker="o", markerfacecolor="0.4", markeredgecolor="none",
               alpha=0.6, label="one document"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8.5,
              frameon=False)
    fig.tight_layout()
    return fig
