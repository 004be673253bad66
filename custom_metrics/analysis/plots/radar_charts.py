"""Radar charts: domains (series) compared over measures (axes), each axis normalised to its maximum.

Why a module of its own: one kind of figure per module keeps each figure's drawing rules
(normalisation, n/a markers) readable beside its tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from custom_metrics.analysis.plots.style import legend_label, NothingToPlot, save_png, series_colour, short_number


def radar_chart(
    path: str | Path,
    title: str,
    axes: Sequence[str],
    series: Mapping[str, Sequence[float]],
) -> Path:
    """One polygon per series (e.g. a domain) over ``axes`` (e.g. measures).

    Each axis is normalised to [0, 1] by its maximum over the series, because the
    measures live on different scales (lengths in hundreds, coverage below 1); the
    axis label states that maximum. A ``nan`` value is drawn at the centre and named
    in the series' legend entry ("n/a: ...") so it is not read as a real zero.

    Raises :class:`NothingToPlot` with fewer than 2 series (a radar is for comparing;
    one polygon on its own axis maxima is always the full outline), fewer than 3 axes
    (no polygon) or no finite value; :class:`ValueError` when a series' length is not
    ``len(axes)``.
    """
    return save_png(radar_figure(title, axes, series), Path(path))


def radar_figure(
    title: str,
    axes: Sequence[str],
    series: Mapping[str, Sequence[float]],
) -> Figure:
    """The figure of :func:`radar_chart`, not saved (tests inspect it)."""
    names = list(series)
    k = len(axes)
    if k < 3:
        raise NothingToPlot(f"a radar chart needs at least 3 axes; got {k}")
    if len(names) < 2:
        raise NothingToPlot(
            f"a radar chart compares at least 2 series; got {len(names)}"
            + (f" ({names[0]})" if names else ""))
    for n in names:
        if len(series[n]) != k:
            raise ValueError(f"series {n!r} has {len(series[n])} values for {k} axes")
    raw = np.array([[float(v) for v in series[n]] for n in names], dtype=float)
    finite = np.isfinite(raw)
    if not finite.any():
        raise NothingToPlot("no finite value in any series")
    values = np.where(finite, raw, 0.0)
    peak = values.max(axis=0)
    norm = np.divide(values, peak[None, :], out=np.zeros_like(values), where=peak[None, :] > 0)

    angles = np.linspace(0, 2 * np.pi, k, endpoint=False)
    closed = np.concatenate([angles, angles[:1]])
    fig, ax = plt.subplots(figsize=(7.5, 6.2), subplot_kw={"projection": "polar"})
    for i, name in enumerate(names):
        ring = np.concatenate([norm[i], norm[i][:1]])
        colour = series_colour(i, len(names))
        missing = [a for a, ok in zip(axes, finite[i]) if not ok]
        label = legend_label(name) + (f" (n/a: {', '.join(missing)})" if missing else "")
        ax.plot(closed, ring, color=colour, linewidth=1.8, label=label, marker="o", markersize=3)
        ax.fill(closed, ring, color=colour, alpha=0.08)
    ax.set_xticks(angles)
    ax.set_xticklabels(
        [f"{a.replace('_', ' ')}\n(max {short_number(m)})" for a, m in zip(axes, peak)], fontsize=8.5)
    ax.tick_params(axis="x", pad=14)
    ax.set_ylim(0, 1.05)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0])
    ax.set_yticklabels([])
    for r in (0.25, 0.5, 0.75):  # radial scale between the first two axes, above the lines
        ax.text(np.pi / k, r, f"{r:g}", fontsize=7, color="0.3", ha="center", va="center",
                zorder=10, bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8,
                                 "pad": 1})
    ax.set_title(title, fontsize=11, pad=24)
    ax.legend(loc="upper left", bbox_to_anchor=(1.12, 1.02), fontsize=9, frameon=False)
    fig.tight_layout()
    return fig
