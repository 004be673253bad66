"""Annotated heat maps, square or not: vocabulary overlap, cross-domain scores and their differences.

Why a module of its own: the heat map carries the most rules of the figures (shared colour
limits, masked diagonals, n/a cells, group brackets); one kind of figure per module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from custom_metrics.analysis.plots.style import (
    DIVERGING_CMAP,
    MASK_COLOUR,
    NA_COLOUR,
    SEQUENTIAL_CMAP,
    NothingToPlot,
    save_png,
)


def diagonal_mask(row_labels: Sequence[str], col_labels: Sequence[str]) -> np.ndarray:
    """Boolean matrix: True where the row's label equals the column's.

    Why labels, not ``i == j``: rows and columns may be different lists (sources that
    were fine-tuned vs targets that were evaluated), so the "same domain" cells are
    wherever the names agree, anywhere in the matrix.
    """
    return np.array([[r == c for c in col_labels] for r in row_labels], dtype=bool).reshape(
        len(row_labels), len(col_labels))


def heatmap_limits(
    matrix: Sequence[Sequence[float]] | np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    mask_diagonal: bool = False,
    diverging: bool = False,
    vmin: float | None = None,
    vmax: float | None = None,
) -> tuple[float, float]:
    """The colour limits :func:`heatmap` uses, from the finite, unmasked cells only.

    Why a function of its own: the colour scale must come from the cells that carry
    information (a 100 % diagonal of self-overlap would otherwise stretch the scale so
    that 2-14 % off-diagonal cells all get one colour), and callers and tests can ask
    what the scale will be. ``vmin``/``vmax`` override the computed ends. With
    ``diverging`` the limits are symmetric around 0 (``-a, a`` with ``a`` the largest
    absolute value), so 0 is the map's neutral middle. A constant matrix gets a small
    margin so the scale is not degenerate.

    Raises :class:`NothingToPlot` when no finite, unmasked cell remains.
    """
    m = np.asarray(matrix, dtype=float).reshape(len(row_labels), len(col_labels))
    use = np.isfinite(m)
    if mask_diagonal:
        use &= ~diagonal_mask(row_labels, col_labels)
    if not use.any():
        where = " off the diagonal" if mask_diagonal and np.isfinite(m).any() else ""
        raise NothingToPlot(f"no finite value{where} in the {m.shape[0]}x{m.shape[1]} matrix")
    lo, hi = float(m[use].min()), float(m[use].max())
    if vmin is not None:
        lo = float(vmin)
    if vmax is not None:
        hi = float(vmax)
    if diverging:
        a = max(abs(lo), abs(hi))
        return (-a, a) if a > 0 else (-1.0, 1.0)
    if lo == hi:
        pad = abs(lo) * 0.05 or 1.0
        return lo - pad, hi + pad
    return lo, hi


def _runs(labels: Sequence[str], groups: Mapping[str, str]) -> list[tuple[str, int, int]]:
    """Consecutive runs of equal group name: (group, first index, last index)."""
    out: list[tuple[str, int, int]] = []
    for i, lab in enumerate(labels):
        g = groups.get(lab, "")
        if out and out[-1][0] == g:
            out[-1] = (g, out[-1][1], i)
        else:
            out.append((g, i, i))
    return out


def _cell_text(v: float, diverging: bool, digits: int = 1) -> str:
    if not math.isfinite(v):
        return "n/a"
    if diverging and round(v, digits) != 0:
        return f"{v:+.{digits}f}"
    return f"{abs(v) if round(v, digits) == 0 else v:.{digits}f}"


def heatmap(path: str | Path, title: str, labels: Sequence[str],
            matrix: Sequence[Sequence[float]] | np.ndarray, value_label: str = "overlap (%)",
            **options: Any) -> Path:
    """Annotated heat map of ``matrix`` (rows x columns; cell text: one decimal).

    ``options`` are the keywords of :func:`heatmap_figure` (``row_labels``, ``vmin``, ``vmax``, ``mask_diagonal``, ``diverging``, ``groups``,
    ``outline_diagonal``, ``digits``, ``zero_means``):

    * ``labels`` name the columns, ``row_labels`` the rows (default: ``labels``); the
      matrix need not be square.
    * ``mask_diagonal``: cells whose row label equals their column label (see
      :func:`diagonal_mask`) are drawn hatched with their value in grey and left out
      of the colour scale (self-overlap is 100 % by construction).
    * ``outline_diagonal``: those cells keep their colour and get a black outline
      (in-domain fine-tuning: a reference point, to be seen but set apart).
    * ``diverging``: a red-white-blue map centred at 0 (differences; blue = above);
      otherwise a sequential map.
    * ``groups``: label -> group name (e.g. domain -> level), for rows and columns;
      consecutive runs of one group are separated by lines and named above the
      columns / right of the rows.
    * ``digits``: decimals of the cell text (1; correlations read better with 2);
      ``zero_means``: what 0 is on a diverging colour bar ("no difference").
    * ``nan`` cells are grey with "n/a". A legend below the map explains the cell
      kinds that occur. Colour limits: :func:`heatmap_limits`.

    Raises :class:`NothingToPlot` when no finite, unmasked cell exists; ValueError
    when the matrix shape does not match the labels.
    """
    return save_png(heatmap_figure(title, labels, matrix, value_label, **options), Path(path))


def heatmap_figure(
    title: str,
    labels: Sequence[str],
    matrix: Sequence[Sequence[float]] | np.ndarray,
    value_label: str = "overlap (%)",
    row_labels: Sequence[str] | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    mask_diagonal: bool = False,
    diverging: bool = False,
    groups: Mapping[str, str] | None = None,
    outline_diagonal: bool = False,
    digits: int = 1,
    zero_means: str = "no difference",
) -> Figure:
    """The figure of :func:`heatmap`, not saved (tests inspect it)."""
    cols = [str(c) for c in labels]
    rows = [str(r) for r in (row_labels if row_labels is not None else labels)]
    m = np.asarray(matrix, dtype=float)
    if m.size == 0 and (not rows or not cols):
        raise NothingToPlot("the matrix has no rows or no columns")
    if m.shape != (len(rows), len(cols)):
        raise ValueError(f"matrix shape {m.shape} != ({len(rows)} row labels, {len(cols)} column labels)")
    lo, hi = heatmap_limits(m, rows, cols, mask_diagonal, diverging, vmin, vmax)
    same = diagonal_mask(rows, cols)
    masked = same if mask_diagonal else np.zeros_like(same)
    finite = np.isfinite(m)
    nr, nc = m.shape

    # n/a and masked cells are transparent in the image and drawn as patches below
    cmap = plt.get_cmap(DIVERGING_CMAP if diverging else SEQUENTIAL_CMAP).with_extremes(bad=(0, 0, 0, 0))
    norm = Normalize(lo, hi)
    col_runs = _runs(cols, groups) if groups else []
    row_runs = _runs(rows, groups) if groups else []
    grouped_cols = len(col_runs) > 1 or bool(col_runs and col_runs[0][0])
    grouped_rows = len(row_runs) > 1 or bool(row_runs and row_runs[0][0])

    width = max(5.0, 0.72 * nc + 3.4 + (0.4 if grouped_rows else 0))
    height = max(4.2, 0.55 * nr + 2.9 + (0.3 if grouped_cols else 0))
    fig, ax = plt.subplots(figsize=(width, height))
    shown = np.ma.masked_where(~finite | masked, m)
    im = ax.imshow(shown, cmap=cmap, norm=norm, aspect="auto")
    fontsize = 8.5 if nc <= 10 else 7.0
    for i in range(nr):
        for j in range(nc):
            v = m[i, j]
            if not finite[i, j]:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=NA_COLOUR,
                                       edgecolor="white", linewidth=0.8,
                                       hatch="///" if masked[i, j] else None))
                colour = "0.35"
            elif masked[i, j]:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=MASK_COLOUR,
                                       edgecolor="0.7", linewidth=0.0, hatch="///"))
                colour = "0.45"
            else:
                r, g, b, _ = cmap(norm(v))
                colour = "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"
            ax.text(j, i, _cell_text(v, diverging, digits), ha="center", va="center",
                    fontsize=fontsize, color=colour)
            if outline_diagonal and same[i, j]:
                ax.add_patch(Rectangle((j - 0.46, i - 0.46), 0.92, 0.92, fill=False,
                                       edgecolor="black", linewidth=1.8, zorder=5))
    ax.set_xticks(range(nc))
    ax.set_yticks(range(nr))
    ax.set_xticklabels(cols, rotation=35, ha="right", fontsize=9)
    ax.set_yticklabels(rows, fontsize=9)
    ax.set_xlim(-0.5, nc - 0.5)
    ax.set_ylim(nr - 0.5, -0.5)

    for k, (name, a, b) in enumerate(col_runs):
        if k:
            ax.axvline(a - 0.5, color="black", linewidth=1.6)
        if name:
            ax.text((a + b) / 2, -0.6, name, ha="center", va="bottom", fontsize=9,
                    fontweight="bold", clip_on=False)
    for k, (name, a, b) in enumerate(row_runs):
        if k:
            ax.axhline(a - 0.5, color="black", linewidth=1.6)
        if name:
            ax.text(nc - 0.5 + 0.12, (a + b) / 2, name, ha="left", va="center", rotation=-90,
                    fontsize=9, fontweight="bold", clip_on=False)

    cbar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.08 if grouped_rows else 0.04)
    cbar.set_label(value_label + (f" (0 = {zero_means})" if diverging else ""), fontsize=9)
    handles = []
    if (~finite).any():
        handles.append(Patch(facecolor=NA_COLOUR, edgecolor="0.6", label="n/a: no value"))
    if masked.any():
        handles.append(Patch(facecolor=MASK_COLOUR, edgecolor="0.6", hatch="///",
                             label="same row and column (not in the colour scale)"))
    if outline_diagonal and same.any():
        handles.append(Patch(facecolor="white", edgecolor="black", linewidth=1.8,
                             label="same row and column (outlined)"))
    if handles:
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8,
                   frameon=False, bbox_to_anchor=(0.5, 0.0))
    ax.set_title(title, fontsize=11, pad=26 if grouped_cols else 10)
    fig.tight_layout(rect=(0, 0.06 if handles else 0, 1, 1))
    return fig
