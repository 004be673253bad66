"""Plot helpers shared by the analysis and report commands (matplotlib, Agg backend, PNG).

Each function writes one PNG (``DPI`` dots per inch) and returns its path; nothing is
shown on screen. The API is what the ``domsum`` commands call, so it is kept stable:

* :func:`radar_chart` compares domains (series) over measures (axes);
* :func:`heatmap` draws an annotated matrix, square or not (vocabulary overlap,
  cross-domain scores and their differences);
* :func:`bar_chart` draws grouped bars with error bars (scores per domain and system);
* :func:`distribution_plot` draws per-document score distributions, one box per system and
  subset;
* :func:`scatter_plot` draws paired values, one panel per series (metric vs human).

Why :class:`NothingToPlot`: a figure with no data (an all-n/a matrix, a radar with one
polygon) looks like a result but says nothing, and an empty PNG next to real ones is
easy to mistake for one. So every function raises :class:`NothingToPlot` with a
sentence saying why *before* writing anything; callers catch it and print or record
the sentence instead of a figure. No function ever writes an empty PNG.

Missing values (``nan``) are never drawn as 0 where that could be read as a score:
heat-map cells show grey "n/a", bars are left out and marked "n/a"; a real 0, a bar of
no height, is labelled "0.0" so it is not read as missing.

The figures live one kind per module (:mod:`.radar_charts`, :mod:`.heatmaps`,
:mod:`.bar_charts`, :mod:`.distributions`, :mod:`.scatter`) over a shared :mod:`.style`; this package is
their API. Each ``*_figure`` builds its figure without saving it (tests inspect it).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # before any figure module imports pyplot: files only, never a screen

from custom_metrics.analysis.plots.bar_charts import bar_chart, bar_figure  # noqa: E402
from custom_metrics.analysis.plots.distributions import distribution_figure, distribution_plot  # noqa: E402
from custom_metrics.analysis.plots.heatmaps import (  # noqa: E402
    diagonal_mask,
    heatmap,
    heatmap_figure,
    heatmap_limits,
)
from custom_metrics.analysis.plots.radar_charts import radar_chart, radar_figure  # noqa: E402
from custom_metrics.analysis.plots.scatter import scatter_figure, scatter_plot  # noqa: E402
from custom_metrics.analysis.plots.style import (  # noqa: E402
    DIVERGING_CMAP,
    DPI,
    MASK_COLOUR,
    NA_COLOUR,
    SEQUENTIAL_CMAP,
    NothingToPlot,
    legend_label,
)

__all__ = ["DIVERGING_CMAP", "DPI", "MASK_COLOUR", "NA_COLOUR", "SEQUENTIAL_CMAP", "NothingToPlot", "bar_chart",
           "bar_figure", "diagonal_mask", "distribution_figure", "distribution_plot", "heatmap", "heatmap_figure",
           "heatmap_limits", "legend_label", "radar_chart", "radar_figure", "scatter_figure", "scatter_plot"]
