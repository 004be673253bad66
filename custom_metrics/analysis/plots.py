"""Plot helpers shared by the analysis and report commands (matplotlib, Agg backend, PNG).

Each function writes one PNG (``DPI`` dots per inch) and returns its path; nothing is
shown on screen. The API is what the ``domsum`` commands call, so it is kept stable:

* :func:`radar_chart` compares domains (series) over measures (axes);
* :func:`heatmap` draws an annotated matrix, square or not (vocabulary overlap,
  cross-domain scores and their differences);
* :func:`bar_chart` draws grouped bars with error bars (scores per domain and system);
* :func:`distribution_plot` draws per-document score distributions per system.

Why :class:`NothingToPlot`: a figure with no data (an all-n/a matrix, a radar with one
polygon) looks like a result but says nothing, and an empty PNG next to real ones is
easy to mistake for one. So every function raises :class:`NothingToPlot` with a
sentence saying why *before* writing anything; callers catch it and print or record
the sentence instead of a figure. No function ever writes an empty PNG.

Missing values (``nan``) are never drawn as 0 where that could be read as a score:
heat-map cells show grey "n/a", bars are left out and marked "n/a".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

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


def _fmt(x: float) -> str:
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


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def _colour(i: int, n: int):
    """The ``i``-th of ``n`` distinct colours (tab10 up to 10 series, tab20 beyond)."""
    return plt.get_cmap("tab10" if n <= 10 else "tab20")(i % (10 if n <= 10 else 20))


# ------------------------------------------------------------------ radar


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
    return _save(_radar_figure(title, axes, series), Path(path))


def _radar_figure(
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
        colour = _colour(i, len(names))
        missing = [a for a, ok in zip(axes, finite[i]) if not ok]
        label = legend_label(name) + (f" (n/a: {', '.join(missing)})" if missing else "")
        ax.plot(closed, ring, color=colour, linewidth=1.8, label=label, marker="o", markersize=3)
        ax.fill(closed, ring, color=colour, alpha=0.08)
    ax.set_xticks(angles)
    ax.set_xticklabels(
        [f"{a.replace('_', ' ')}\n(max {_fmt(m)})" for a, m in zip(axes, peak)], fontsize=8.5)
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


# ------------------------------------------------------------------ heat map


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


def _cell_text(v: float, diverging: bool) -> str:
    if not math.isfinite(v):
        return "n/a"
    if diverging and round(v, 1) != 0:
        return f"{v:+.1f}"
    return f"{abs(v) if round(v, 1) == 0 else v:.1f}"


def heatmap(path: str | Path, title: str, labels: Sequence[str],
            matrix: Sequence[Sequence[float]] | np.ndarray, value_label: str = "overlap (%)",
            **options: Any) -> Path:
    """Annotated heat map of ``matrix`` (rows x columns; cell text: one decimal).

    ``options`` are the keywords of :func:`_heatmap_figure` (``row_labels``, ``vmin``, ``vmax``, ``mask_diagonal``, ``diverging``, ``groups``,
    ``outline_diagonal``):

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
    * ``nan`` cells are grey with "n/a". A legend below the map explains the cell
      kinds that occur. Colour limits: :func:`heatmap_limits`.

    Raises :class:`NothingToPlot` when no finite, unmasked cell exists; ValueError
    when the matrix shape does not match the labels.
    """
    return _save(_heatmap_figure(title, labels, matrix, value_label, **options), Path(path))


def _heatmap_figure(
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
            ax.text(j, i, _cell_text(v, diverging), ha="center", va="center",
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
    cbar.set_label(value_label + (" (0 = no difference)" if diverging else ""), fontsize=9)
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


# ------------------------------------------------------------------ bars


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
    read as a score of 0) and is marked "n/a" at the baseline. The legend sits outside
    the axes, so it never hides a bar.

    Raises :class:`NothingToPlot` when there is no category, no series, or no finite
    value at all.
    """
    return _save(_bar_figure(title, categories, series, errors, ylabel), Path(path))


def _bar_figure(
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
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(cats) * max(1, k) ** 0.5 + 3.5), 4.8))
    handles = []
    na_marks = False
    for i, n in enumerate(names):
        colour = _colour(i, k)
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
            ax.text(p, 0, "n/a", rotation=90, ha="center", va="bottom", fontsize=7, color="0.4")
        handles.append(Patch(facecolor=colour, label=legend_label(n) + ("" if ok.any() else " (n/a)")))
    if errs:
        handles.append(Line2D([], [], color="0.2", marker="_", markersize=10, linewidth=1.0,
                              label="error bars"))
    if na_marks:
        handles.append(Patch(facecolor="none", edgecolor="none", label="n/a: no value (no bar)"))
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
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8.5,
              frameon=False)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ distributions


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
    return _save(_distribution_figure(title, series, xlabel), Path(path))


# boxplot's "orientation" replaced "vert" in matplotlib 3.10 (vert is deprecated from 3.11)
_HORIZONTAL = ({"orientation": "horizontal"}
               if tuple(int(x) for x in matplotlib.__version__.split(".")[:2]) >= (3, 10)
               else {"vert": False})


def _distribution_figure(
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
        colour = _colour(i, len(names))
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
