"""Plot helpers shared by the analysis commands (matplotlib, Agg backend, PNG).

Each function writes one PNG and returns its path; nothing is shown on screen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

DPI = 150


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "n/a"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def radar_chart(
    path: str | Path,
    title: str,
    axes: Sequence[str],
    series: dict[str, Sequence[float]],
) -> Path:
    """One polygon per series over ``axes``, each axis normalised to [0, 1] by its
    maximum over the series (axis labels state that maximum); ``nan`` counts as 0.
    """
    path = Path(path)
    names = list(series)
    values = np.array([[float(v) for v in series[n]] for n in names], dtype=float)
    values = np.where(np.isfinite(values), values, 0.0)
    peak = values.max(axis=0) if len(names) else np.zeros(len(axes))
    norm = np.divide(values, peak, out=np.zeros_like(values), where=peak > 0)

    k = len(axes)
    angles = np.linspace(0, 2 * np.pi, k, endpoint=False)
    closed = np.concatenate([angles, angles[:1]])
    fig, ax = plt.subplots(figsize=(7.5, 6.2), subplot_kw={"projection": "polar"})
    cmap = plt.get_cmap("tab10")
    for i, name in enumerate(names):
        ring = np.concatenate([norm[i], norm[i][:1]])
        ax.plot(closed, ring, color=cmap(i % 10), linewidth=1.8, label=name)
        ax.fill(closed, ring, color=cmap(i % 10), alpha=0.08)
    ax.set_xticks(angles)
    ax.set_xticklabels(
        [f"{a.replace('_', ' ')}\n(max {_fmt(m)})" for a, m in zip(axes, peak)], fontsize=8.5
    )
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
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def heatmap(
    path: str | Path,
    title: str,
    labels: Sequence[str],
    matrix: Sequence[Sequence[float]],
    value_label: str = "overlap (%)",
    row_labels: Sequence[str] | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
) -> Path:
    """Square annotated heat map (cell text: one decimal); ``row_labels`` default to
    ``labels``."""
    path = Path(path)
    m = np.asarray(matrix, dtype=float)
    n = len(labels)
    size = max(4.2, 0.9 * n + 2.4)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    im = ax.imshow(m, cmap="Blues", vmin=vmin, vmax=vmax)
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=9)
    ax.set_yticklabels(row_labels or labels, fontsize=9)
    lo, hi = im.get_clim()
    mid = (lo + hi) / 2
    for i in range(n):
        for j in range(n):
            v = m[i, j]
            ax.text(j, i, "n/a" if not np.isfinite(v) else f"{v:.1f}", ha="center",
                    va="center", fontsize=8.5, color="white" if v > mid else "black")
    cbar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    cbar.set_label(value_label, fontsize=9)
    ax.set_title(title, fontsize=11, pad=10)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path
