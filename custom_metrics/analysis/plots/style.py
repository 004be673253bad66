"""What every figure of :mod:`custom_metrics.analysis.plots` shares: resolution, colour
maps and colours, number format, legend labels, saving, and :class:`NothingToPlot`.

Why a module of its own: the figure modules draw alike because they read these from one place.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt

from custom_metrics.errors import SuiteError

DPI = 150
#: colour maps: sequential for scores/overlaps, diverging (centred at 0) for differences
SEQUENTIAL_CMAP = "YlGnBu"
DIVERGING_CMAP = "RdBu"
#: fill of n/a heat-map cells and of masked (excluded) cells
NA_COLOUR = "0.85"
MASK_COLOUR = "0.95"


class NothingToPlot(SuiteError):
    """A figure would be empty or meaningless; ``str(exc)`` is the reason, in words.

    Raised before any file is written, so the caller can print or record the reason
    in place of the figure.
    """


def short_number(x: float) -> str:
    """Short number for axis labels: more digits for small values."""
    if not math.isfinite(x):
        return "n/a"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def legend_label(name: object) -> str:
    """``name`` as a legend entry matplotlib will show.

    Why: matplotlib silently drops legend entries whose label starts with ``_`` (its
    convention for private artists), so a system called ``_baseline`` would vanish
    from the legend; a leading space keeps the name readable and visible. An empty
    name becomes ``(unnamed)``.
    """
    text = str(name)
    if not text:
        return "(unnamed)"
    return " " + text if text.startswith("_") else text


def legend_below(fig, handles, fontsize: float = 8.5) -> None:
    """The figure's legend under its axes, in as many columns as the figure's width holds.

    Why below and not beside: system names are long (``org/model-name (2-shot)``); a
    legend beside the axes takes the width the bars or boxes need, and the axes shrink
    to a sliver. The figure must use the constrained layout, which makes room for it.
    """
    longest = max((len(h.get_label()) for h in handles), default=1)
    entry_inches = (longest * 0.55 + 3.5) * fontsize / 72  # text (about 0.55 em a character) and its key
    ncol = max(1, min(len(handles), int(fig.get_figwidth() // entry_inches)))
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, fontsize=fontsize, frameon=False)


def save_png(fig, path: Path) -> Path:
    """Write ``fig`` as a PNG at ``path`` (folders made) and close it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def series_colour(i: int, n: int):
    """The ``i``-th of ``n`` distinct colours (tab10 up to 10 series, tab20 beyond)."""
    return plt.get_cmap("tab10" if n <= 10 else "tab20")(i % (10 if n <= 10 else 20))
