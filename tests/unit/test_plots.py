"""custom_metrics.analysis.plots: every figure is a real PNG, or NothingToPlot with a reason.

The figure builders (``plots.*_figure``) are inspected directly: colour limits, bars
drawn, legend entries; the public functions are checked for the files they write.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.patches import Rectangle

from custom_metrics.analysis import plots
from helpers.images import assert_png

NAN = math.nan
GENRE = ["cnndm", "pubmed", "reddit", "samsum", "wikihow"]
# a vocabulary-overlap matrix: 100 % with itself, 2-14 % between domains
OVERLAP = [[100, 8, 12, 5, 14],
           [8, 100, 3, 2, 6],
           [12, 3, 100, 9, 11],
           [5, 2, 9, 100, 7],
           [14, 6, 11, 7, 100]]


def texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


# ------------------------------------------------------------------ radar


def test_radar_chart_writes_a_png(tmp_path):
    out = plots.radar_chart(tmp_path / "r.png", "radar", ["a", "b", "c", "d"],
                            {"x": [1, 2, 3, 4], "y": [2, 1, NAN, 1]})
    assert out == tmp_path / "r.png"
    assert_png(out)


def test_radar_chart_marks_missing_values_in_the_legend():
    fig = plots.radar_figure("t", ["a", "b", "c"], {"x": [1, 2, 3], "_y": [2, NAN, 1]})
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    plt.close(fig)
    assert legend == ["x", " _y (n/a: b)"]  # "_y" would be hidden by matplotlib


@pytest.mark.parametrize("axes, series, reason", [
    (["a", "b", "c"], {"only": [1, 2, 3]}, "at least 2 series; got 1 (only)"),
    (["a", "b", "c"], {}, "at least 2 series; got 0"),
    (["a", "b"], {"x": [1, 2], "y": [2, 1]}, "at least 3 axes; got 2"),
    (["a", "b", "c"], {"x": [NAN] * 3, "y": [NAN] * 3}, "no finite value"),
])
def test_radar_chart_nothing_to_plot(tmp_path, axes, series, reason):
    with pytest.raises(plots.NothingToPlot, match=reason.replace("(", r"\(").replace(")", r"\)")):
        plots.radar_chart(tmp_path / "r.png", "t", axes, series)
    assert not (tmp_path / "r.png").exists()


def test_radar_chart_rejects_ragged_series(tmp_path):
    with pytest.raises(ValueError, match="2 values for 3 axes"):
        plots.radar_chart(tmp_path / "r.png", "t", ["a", "b", "c"], {"x": [1, 2], "y": [1, 2, 3]})


# ------------------------------------------------------------------ heat map


def test_limits_come_from_the_off_diagonal_cells():
    assert plots.heatmap_limits(OVERLAP, GENRE, GENRE, mask_diagonal=True) == (2.0, 14.0)
    assert plots.heatmap_limits(OVERLAP, GENRE, GENRE) == (2.0, 100.0)
    # explicit ends win
    assert plots.heatmap_limits(OVERLAP, GENRE, GENRE, True, vmin=0) == (0.0, 14.0)
    # n/a cells are ignored
    m = [[100, NAN, 4], [NAN, 100, 9], [4, 9, 100]]
    assert plots.heatmap_limits(m, ["a", "b", "c"], ["a", "b", "c"], True) == (4.0, 9.0)


def test_limits_diverging_and_constant():
    # symmetric around 0, from the largest absolute difference
    assert plots.heatmap_limits([[0, -10], [-30, 5]], ["a", "b"], ["a", "b"], diverging=True) == (-30.0, 30.0)
    assert plots.heatmap_limits([[0, 0], [0, 0]], ["a", "b"], ["a", "b"], diverging=True) == (-1.0, 1.0)
    # a constant matrix gets a 5 % margin, not a zero-width scale
    assert plots.heatmap_limits([[40, 40]], ["a"], ["a", "b"]) == (38.0, 42.0)


def test_diagonal_is_where_the_labels_agree():
    mask = plots.diagonal_mask(["base", "cnndm", "cnn"], ["cnndm", "pubmed", "cnn"])
    assert mask.tolist() == [[False, False, False], [True, False, False], [False, False, True]]
    # a 2 x 3 matrix whose only same-label cell is masked: the scale is the rest
    m = [[30, 20, 25], [99, 22, 38]]
    assert plots.heatmap_limits(m, ["base", "cnndm"], ["cnndm", "pubmed", "cnn"], True) == (20.0, 38.0)


def test_heatmap_figure_uses_the_limits_and_marks_cells():
    fig = plots.heatmap_figure("overlap", GENRE, OVERLAP, mask_diagonal=True)
    ax = fig.axes[0]
    assert ax.images[0].get_clim() == (2.0, 14.0)
    cells = texts(fig)
    assert cells.count("100.0") == 5 and "14.0" in cells and "2.0" in cells
    hatched = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch()]
    assert len(hatched) == 5  # the diagonal
    greys = {t.get_color() for t in ax.texts if t.get_text() == "100.0"}
    assert greys == {"0.45"}
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("not in the colour scale" in t for t in legend)
    plt.close(fig)


def test_heatmap_non_square_diverging_groups(tmp_path):
    rows, cols = ["base", "cnndm", "pubmed"], ["cnndm", "pubmed", "cnn"]
    diff = [[-10, -13, NAN], [0, -11, -2], [-25, 0, NAN]]
    groups = {"base": "base", "cnndm": "genre", "pubmed": "genre", "cnn": "style"}
    fig = plots.heatmap_figure("diff", cols, diff, "Δ ROUGE", row_labels=rows, diverging=True,
                                groups=groups, outline_diagonal=True)
    ax = fig.axes[0]
    assert ax.images[0].get_clim() == (-25.0, 25.0)
    assert ax.images[0].get_cmap().name.startswith(plots.DIVERGING_CMAP)
    cells = texts(fig)
    assert cells.count("n/a") == 2 and "-25.0" in cells and "0.0" in cells
    assert {"genre", "style", "base"} <= set(cells)  # group names drawn
    outlined = [p for p in ax.patches if isinstance(p, Rectangle) and not p.get_fill()]
    assert len(outlined) == 2  # cnndm->cnndm, pubmed->pubmed
    assert [t.get_text() for t in ax.get_yticklabels()] == rows
    plt.close(fig)
    out = plots.heatmap(tmp_path / "d.png", "diff", cols, diff, "Δ", row_labels=rows,
                        diverging=True, groups=groups, outline_diagonal=True)
    assert_png(out)


def test_heatmap_nothing_to_plot(tmp_path):
    with pytest.raises(plots.NothingToPlot, match="no finite value in the 2x2"):
        plots.heatmap(tmp_path / "h.png", "t", ["a", "b"], [[NAN, NAN], [NAN, NAN]])
    # only the diagonal is finite and it is masked
    with pytest.raises(plots.NothingToPlot, match="off the diagonal"):
        plots.heatmap(tmp_path / "h.png", "t", ["a", "b"], [[100, NAN], [NAN, 100]],
                      mask_diagonal=True)
    with pytest.raises(plots.NothingToPlot, match="no rows or no columns"):
        plots.heatmap(tmp_path / "h.png", "t", [], [])
    assert not (tmp_path / "h.png").exists()
    with pytest.raises(ValueError, match="shape"):
        plots.heatmap(tmp_path / "h.png", "t", ["a", "b"], [[1, 2, 3]])


# ------------------------------------------------------------------ bars


def test_bar_chart_omits_nan_bars_and_keeps_underscore_names(tmp_path):
    cats = ["cnndm", "pubmed", "reddit"]
    series = {"m1": [20, NAN, 30], "_m2": [25, 15, NAN]}
    errors = {"m1": ([1, 1, 2], [2, 2, 1])}
    fig = plots.bar_figure("bars", cats, series, errors, "ROUGE (x100)")
    ax = fig.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert sorted(round(b.get_height(), 6) for b in bars) == [15, 20, 25, 30]  # no 0-height bar
    assert texts(fig).count("n/a") == 2
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[:2] == ["m1", " _m2"] and "error bars" in legend
    # error bars of m1: lower ends at value - below, upper at value + above
    segs = [seg for c in ax.collections for seg in c.get_segments()]
    spans = sorted((round(s[0][1], 6), round(s[1][1], 6)) for s in segs)
    assert spans == [(19.0, 22.0), (28.0, 31.0)]
    plt.close(fig)
    assert_png(plots.bar_chart(tmp_path / "b.png", "bars", cats, series, errors, "ROUGE (x100)"),
               min_px=300)


def test_bar_chart_nothing_to_plot_and_bad_errors(tmp_path):
    with pytest.raises(plots.NothingToPlot, match="every value is n/a"):
        plots.bar_chart(tmp_path / "b.png", "t", ["a", "b"], {"m": [NAN, NAN]}, None, "y")
    with pytest.raises(plots.NothingToPlot):
        plots.bar_chart(tmp_path / "b.png", "t", [], {}, None, "y")
    assert not (tmp_path / "b.png").exists()
    with pytest.raises(ValueError, match="distances"):
        plots.bar_chart(tmp_path / "b.png", "t", ["a"], {"m": [0.3]}, {"m": ([0.2], [-0.1])}, "y")


# ------------------------------------------------------------------ distributions


def test_bar_chart_labels_a_zero_bar_and_marks_a_missing_one():
    """A score of 0 is a bar of no height: labelled "0.0" at the baseline, told apart from n/a."""
    fig = plots.bar_figure("bars", ["cnndm", "pubmed"], {"m1": [0.0, 12.0], "m2": [NAN, 0.0]}, None, "ROUGE")
    ax = fig.axes[0]
    marks = sorted((round(t.xy[0] if hasattr(t, "xy") else t.get_position()[0], 3), t.get_text())
                   for t in ax.texts)
    assert marks == [(-0.2, "0.0"), (0.2, "n/a"), (1.2, "0.0")]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "n/a: no value (no bar)" in legend and "0.0: a score of 0 (bar of no height)" in legend
    plt.close(fig)
    fig = plots.bar_figure("bars", ["a"], {"m1": [3.0]}, None, "y")  # nothing to mark: no mark, no entry
    assert not fig.axes[0].texts and [t.get_text() for t in fig.legends[0].get_texts()] == ["m1"]
    plt.close(fig)


def _boxes(ax) -> int:
    return sum(1 for p in ax.patches if type(p).__name__ == "PathPatch")


def test_distribution_plot(tmp_path):
    rng = np.random.default_rng(1)
    series = {"m1": list(rng.uniform(0.1, 0.9, 40)), "m2": [NAN, 0.3, 0.5, 0.2], "m3": []}
    fig = plots.distribution_figure("per-document ROUGE-L", series, "ROUGE-L")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["(n=0–40, 1 n/a)"]
    assert "no values" in texts(fig) and _boxes(ax) == 2
    assert sum(len(c.get_offsets()) for c in ax.collections) == 43  # every document a point
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[:3] == ["m1", "m2", "m3"]
    plt.close(fig)
    assert_png(plots.distribution_plot(tmp_path / "d.png", "t", series, "ROUGE-L"), min_px=300)


def test_distribution_plot_has_one_box_per_system_and_subset():
    """Subsets are never pooled: each box holds one system's documents of one subset."""
    groups = {"cnndm": {"a": [0.1, 0.2, 0.3], "b": [0.5, 0.6]},
              "pubmed": {"a": [0.7, 0.8, 0.9, 1.0], "b": [0.2, NAN]},
              "samsum": {"b": [0.4]}}
    fig = plots.distribution_figure("per-document ROUGE", groups, "ROUGE")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["cnndm\n(n=2–3)", "pubmed\n(n=1–4, 1 n/a)",
                                                             "samsum\n(n=1)"]
    assert _boxes(ax) == 5
    # each box's median is its own subset's: a's boxes 0.2 (cnndm) and 0.85 (pubmed), never pooled
    medians = sorted(round(float(np.mean(line.get_ydata())), 3) for line in ax.lines
                     if line.get_color() == "black" and len(line.get_xdata()) == 2)
    assert medians == [0.2, 0.2, 0.4, 0.55, 0.85]
    # a system keeps its colour in every subset
    colours = {tuple(round(c, 3) for c in p.get_edgecolor()) for p in ax.patches if type(p).__name__ == "PathPatch"}
    assert len(colours) == 2
    plt.close(fig)


def test_distribution_plot_nothing_to_plot(tmp_path):
    with pytest.raises(plots.NothingToPlot, match="no system has a finite"):
        plots.distribution_plot(tmp_path / "d.png", "t", {"a": [], "b": [NAN]}, "x")
    with pytest.raises(plots.NothingToPlot, match="no systems"):
        plots.distribution_plot(tmp_path / "d.png", "t", {}, "x")
    assert not (tmp_path / "d.png").exists()


def test_legend_label():
    assert plots.legend_label("_hidden") == " _hidden"
    assert plots.legend_label("") == "(unnamed)" and plots.legend_label("m1") == "m1"
