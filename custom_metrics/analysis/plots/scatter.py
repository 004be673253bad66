"""Scatter plots of paired values, one panel per series: a metric against human scores.

Why a grid of panels: a meta-evaluation compares several metrics against the same human
score, and the eye compares their clouds best side by side on one figure, each panel
titled with its metric and the coefficient the tables report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from custom_metrics.analysis.plots.style import NothingToPlot, save_png, series_colour

#: panels per row of the grid
COLUMNS = 3


def scatter_figure(title: str, panels: Sequence[tuple[str, Sequence[float], Sequence[float]]],
                   x_label: str = "metric", y_label: str = "human") -> Figure:
    """One panel per ``(name, xs, ys)``; pairs with a non-finite side are left out.

    Raises :class:`NothingToPlot` when no panel has a finite pair.
    """
    cleaned = []
    for name, xs, ys in panels:
        x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
        keep = np.isfinite(x) & np.isfinite(y)
        if keep.any():
            cleaned.append((name, x[keep], y[keep]))
    if not cleaned:
        raise NothingToPlot("no (metric, human) pair with both values")
    cols = min(COLUMNS, len(cleaned))
    rows = math.ceil(len(cleaned) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.2 * rows + 0.5), squeeze=False)
    for i, (name, x, y) in enumerate(cleaned):
        ax = axes[i // cols][i % cols]
        ax.scatter(x, y, s=12, alpha=0.6, color=series_colour(i, len(cleaned)), edgecolors="none")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(x_label, fontsize=8)
        ax.set_ylabel(y_label, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for j in range(len(cleaned), rows * cols):
        axes[j // cols][j % cols].axis("off")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def scatter_plot(path: str | Path, title: str, panels: Sequence[tuple[str, Sequence[float], Sequence[float]]],
                 x_label: str = "metric", y_label: str = "human") -> Path:
    """:func:`scatter_figure` saved as a PNG at ``path``."""
    return save_png(scatter_figure(title, panels, x_label, y_label), Path(path))


__all__ = ["COLUMNS", "scatter_figure", "scatter_plot"]
