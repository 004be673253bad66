"""CCSBench change amplitude (Figure 4) from logged per-document scores: hand-computed
cells, undefined cells written null and counted, and the report's Figure 4 table."""

from __future__ import annotations

import json
import math

import pytest

from lm_eval_tasks.analysis.amplitude import amplitude, control_ability, figure4
from lm_eval_tasks.analysis.change_amplitude import STUDY_FILE
from lm_eval_tasks.report.paper_tables import amplitude_tables, terms


def docs(pcc, mad, sr, fkgl, focus=None):
    """Logged per-document scores as a ``--log_samples`` line holds them (corpus items for
    PCC, ΔFKGL and focus F1; a number per document for MAD and SR)."""
    out = []
    for i in range(len(pcc)):
        d = {"length_pcc": pcc[i], "length_mad": mad[i], "keyword_sr": sr[i], "delta_fkgl": fkgl[i]}
        if focus is not None:
            d["focus_macro_f1"] = focus[i]
        out.append(d)
    return out


# original run: bins exact (PCC 1, MAD 0), SR 0.75, FKGL normal 11 / high 7 (Δ 4), focus F1 0.5
ORIGINAL = docs(pcc=[[0, 0], [1, 1], [2, 2], [3, 3]], mad=[0.0, 0.0, 0.0, 0.0], sr=[1.0, 0.5, 1.0, 0.5],
                fkgl=[["normal", 12.0], ["high", 8.0], ["normal", 10.0], ["high", 6.0]],
                focus=[["high", "high"], ["low", "low"], ["high", "low"], ["low", "high"]])
# readability flipped: one bin off (PCC 3.5 / sqrt(13.75)), MAD 0.25, SR 0.75, Δ -4, focus all right
READABILITY = docs(pcc=[[0, 0], [1, 1], [2, 2], [3, 2]], mad=[0.0, 0.0, 0.0, 1.0], sr=[1.0, 1.0, 1.0, 0.0],
                   fkgl=[["high", 12.0], ["normal", 8.0], ["high", 10.0], ["normal", 6.0]],
                   focus=[["high", "high"], ["low", "low"], ["low", "low"], ["high", "high"]])
# length flipped: only normal-readability documents logged a grade -> ΔFKGL undefined
LENGTH = docs(pcc=[[2, 2], [3, 3], [0, 0], [1, 1]], mad=[0.0, 0.0, 0.0, 0.0], sr=[0.5, 0.5, 0.5, 0.5],
              fkgl=[["normal", 12.0], None, ["normal", 10.0], None],
              focus=[["high", "high"], ["low", "low"], ["high", "low"], ["low", "high"]])


def test_control_ability_refolds_each_family():
    m = control_ability(ORIGINAL)
    assert m == pytest.approx({"length_pcc": 1.0, "length_mad": 0.0, "keyword_sr": 0.75, "delta_fkgl": 4.0,
                               "focus_macro_f1": 0.5})
    r = control_ability(READABILITY)
    assert r["length_pcc"] == pytest.approx(3.5 / math.sqrt(5 * 2.75))
    assert (r["length_mad"], r["delta_fkgl"], r["focus_macro_f1"]) == pytest.approx((0.25, -4.0, 1.0))
    # a level with no documents: ΔFKGL undefined, written None, not NaN
    assert control_ability(LENGTH)["delta_fkgl"] is None
    # a key no document logged (focus without a judge) is no metric at all
    assert "focus_macro_f1" not in control_ability(docs([[0, 1]], [1.0], [1.0], [None]))


def test_amplitude_formula_and_undefined_cases():
    assert amplitude(1.5, 1.0) == (pytest.approx(0.5), None)
    assert amplitude(-4.0, 4.0) == (pytest.approx(2.0), None)
    assert amplitude(0.25, 0.0) == (None, "m = 0 (division by zero)")
    assert amplitude(1.0, None) == (None, "m undefined (original run)")
    assert amplitude(float("nan"), 2.0) == (None, "m_new undefined (changed run)")


def test_figure4_hand_computed_layout_and_null_count():
    base = control_ability(ORIGINAL)
    fig = figure4(base, {"readability": control_ability(READABILITY), "length": control_ability(LENGTH)})
    assert fig["rows"] == ["length", "readability"]  # the paper's order, whatever order given
    assert [(c["attribute"], c["key"]) for c in fig["columns"]] == [
        ("length", "length_pcc"), ("length", "length_mad"), ("keywords", "keyword_sr"),
        ("readability", "delta_fkgl"), ("focus", "focus_macro_f1")]
    pcc_new = 3.5 / math.sqrt(13.75)
    assert fig["matrix"]["readability"] == {"length_pcc": pytest.approx(1.0 - pcc_new), "length_mad": None,
                                            "keyword_sr": 0.0, "delta_fkgl": pytest.approx(2.0),
                                            "focus_macro_f1": pytest.approx(1.0)}
    assert fig["matrix"]["length"] == {"length_pcc": 0.0, "length_mad": None, "keyword_sr": pytest.approx(1 / 3),
                                       "delta_fkgl": None, "focus_macro_f1": 0.0}
    assert fig["cells"][1] == list(fig["matrix"]["readability"].values())
    # MAD's m = 0 in both rows, and length's ΔFKGL: three nulls, each with its reason
    assert fig["undefined"] == 3
    assert sorted((u["changed"], u["key"], u["reason"]) for u in fig["undefined_cells"]) == [
        ("length", "delta_fkgl", "m_new undefined (changed run)"), ("length", "length_mad", "m = 0 (division by zero)"),
        ("readability", "length_mad", "m = 0 (division by zero)")]
    text = json.dumps(fig, allow_nan=False)  # no NaN anywhere: undefined is null
    assert text.count("null") == 6  # in cells and in the matrix


def test_report_renders_figure4_with_nulls(tmp_path):
    base = control_ability(ORIGINAL)
    fig = figure4(base, {"readability": control_ability(READABILITY)})
    (tmp_path / STUDY_FILE).write_text(json.dumps(
        {"n": 4, "seed": 42, "task": "ccsbench_compositional", "figure4": fig, "undefined": fig["undefined"],
         "undefined_cells": fig["undefined_cells"]}))
    (table,) = amplitude_tables([str(tmp_path), str(tmp_path / "elsewhere")])
    assert table.name == "ccsbench_figure4"
    assert table.header[0] == "Changed attribute" and table.header[1].startswith("length: ")
    assert table.rows == [["readability", f"{1 - 3.5 / math.sqrt(13.75):.3f}", "null", "0.000", "2.000", "1.000"]]
    assert "1 undefined cell written null" in table.caption
    assert table.notes == ["null: changed readability, affected length_mad: m = 0 (division by zero)"]
    assert [name for name, _ in terms([table])] == ["Changed attribute"]


def test_report_refuses_a_broken_amplitude_file(tmp_path):
    from lm_eval_tasks.results import ResultsError

    (tmp_path / STUDY_FILE).write_text('{"n": 2}')
    with pytest.raises(ResultsError, match="not a change-amplitude result"):
        amplitude_tables([str(tmp_path)])
