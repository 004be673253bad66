"""CCSBench change amplitude (Section 6, Figure 4) from the per-document scores of runs.

The paper flips one control of every sampled row (e.g. readability normal -> high),
regenerates, and for each controllability metric compares the model's *control
ability* before and after the change:

    CA = |m_new - m| / |m|

where ``m`` is the metric over the original run and ``m_new`` over the run with the
flipped control, each measured as the benchmark measures it: against the controls that
run requested (so for the flipped attribute itself ``m_new`` is the control of the new
value). Figure 4 lays the values out with one row per *changed* attribute and one column
per *affected* attribute; the suite's columns are the controllability metrics of
:mod:`custom_metrics.families.ccs` (:data:`CONTROL_METRICS`: length PCC and MAD, keyword SR,
ΔFKGL, focus macro F1), grouped under their attribute in the paper's order.

Why from per-document scores: a ``--log_samples`` line carries each document's score
(or corpus item: a ``[generated bin, requested bin]`` pair, a ``[level, FKGL]`` pair, a
``[judged, requested]`` focus pair), so ``m`` is refolded with the family's own
aggregation (:func:`custom_metrics.registry.aggregate`), exactly as the results file
reports it, with no second scoring.

A value the formula leaves undefined is ``None`` (JSON ``null``), never 0 or NaN, with
the reason beside it and counted in ``undefined``: ``m`` is 0 (a division by zero), or
``m`` or ``m_new`` is itself undefined (a Pearson r of constant bins, a readability level
with no documents, no focus label judged). A metric no run scored (focus without a
judge) is no column at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from custom_metrics import registry
from custom_metrics.setting import Setting

#: Figure 4's attributes, in the paper's order: its rows (changed) and column groups (affected)
ATTRIBUTES = ("length", "keywords", "readability", "focus")
#: the task metadata key (a settings row) a run with one attribute flipped records: that attribute
FLIP_KEY = "change_amplitude_flip"
#: the setting a flipped run records (collected by ``lm_eval_tasks.settings``)
SETTING_ROWS = (
    Setting(FLIP_KEY, None, str, None,
            "Recorded by `domsum change-amplitude` in each run whose control it flipped on every document: "
            "that control. `domsum report` makes it part of the run's system and names such a run as left out "
            "(its scores are the study's, never the model's CCSBench row); not for ordinary runs.",
            "analysis", choices=ATTRIBUTES),
)
#: (affected attribute, controllability key) of each column, in the paper's order
CONTROL_METRICS = (("length", "length_pcc"), ("length", "length_mad"), ("keywords", "keyword_sr"),
                   ("readability", "delta_fkgl"), ("focus", "focus_macro_f1"))


def _defined(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def control_ability(logged: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Each controllability metric of one run, refolded from its documents' logged scores.

    ``logged``: one mapping per document, key -> logged value (``Sample.logged``). A key
    no document logged is left out (not scored); one whose value is undefined is None.
    """
    out: dict[str, float | None] = {}
    for _, key in CONTROL_METRICS:
        items = [d[key] for d in logged if key in d]
        if not items:
            continue
        value = registry.aggregate(registry.family_of(key), key, items, registry.Context())
        out[key] = value if _defined(value) else None
    return out


def amplitude(new: float | None, base: float | None) -> tuple[float | None, str | None]:
    """``(|new - base| / |base|, None)``, or ``(None, why)`` where the formula is undefined."""
    if not _defined(base):
        return None, "m undefined (original run)"
    if not _defined(new):
        return None, "m_new undefined (changed run)"
    if base == 0:
        return None, "m = 0 (division by zero)"
    return abs(new - base) / abs(base), None


def figure4(original: Mapping[str, float | None],
            changed: Mapping[str, Mapping[str, float | None]]) -> dict[str, Any]:
    """Figure 4 from the control abilities of the original run and of each changed run.

    ``changed``: changed attribute -> that run's :func:`control_ability`. Returns
    ``rows`` (changed attributes, paper order), ``columns`` (``{"attribute", "key"}``,
    the keys the original run scored), ``cells`` (one list per row, None where
    undefined), ``matrix`` (row -> key -> value), ``undefined`` (how many cells are None)
    and ``undefined_cells`` (each with its reason).
    """
    rows = [a for a in ATTRIBUTES if a in changed]
    columns = [{"attribute": attr, "key": key} for attr, key in CONTROL_METRICS if key in original]
    cells: list[list[float | None]] = []
    why: list[dict[str, str]] = []
    for row in rows:
        line = []
        for col in columns:
            value, reason = amplitude(changed[row].get(col["key"]), original[col["key"]])
            line.append(value)
            if reason:
                why.append({"changed": row, "affected": col["attribute"], "key": col["key"], "reason": reason})
        cells.append(line)
    matrix = {row: {c["key"]: v for c, v in zip(columns, line)} for row, line in zip(rows, cells)}
    return {"rows": rows, "columns": columns, "cells": cells, "matrix": matrix,
            "undefined": len(why), "undefined_cells": why}


__all__ = ["ATTRIBUTES", "CONTROL_METRICS", "FLIP_KEY", "amplitude", "control_ability", "figure4"]
