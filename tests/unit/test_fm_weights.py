"""FM's facet weights fitted to human scores (the FM paper, Section 4.2), and FM using them.

Golden cases are solved by hand in the comments; the ScholarSum-shaped data are built
from the paper's weights and its MSE (500 summaries, the paper's rating scales, totals
rounded to four decimals as the release prints them).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import nnls

from custom_metrics.analysis.fm_weights import FitError, fit_weights, read_rows
from custom_metrics.judge.fm import FACET_SCALES, FACETS, _fm_item, facet_weights, fm_aggregate
from lm_eval_tasks.data.records import DataError
from lm_eval_tasks.data.user_files import table_lines
from lm_eval_tasks.settings import SettingError, resolve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "meta_eval"
PAPER = np.array([0.1, 0.3, 0.3, 0.3])
#: four summaries, each full marks on one facet and half marks on the others: row i of
#: X is 0.5 + 0.5 * e_i, so X w = 0.5 * sum(w) + 0.5 * w_i
HALVES = 0.5 * np.ones((4, 4)) + 0.5 * np.eye(4)


def test_free_fit_of_four_rows_is_the_exact_solution():
    # y = [0.6, 0.5, 0.55, 0.45]: summing the rows, 2.5 * S = 2.1, S = 0.84; w_i = 2 y_i - S
    y = np.array([0.6, 0.5, 0.55, 0.45])
    fit = fit_weights(HALVES, y, sum_to_one=False)
    assert list(fit["weights"].values()) == pytest.approx([0.36, 0.16, 0.26, 0.06], abs=1e-12)
    assert fit["mse"] == pytest.approx(0.0, abs=1e-20) and fit["r2"] == pytest.approx(1.0)
    assert fit["n"] == 4 and fit["rank"] == 4 and fit["intercept"] is None


def test_paper_form_fit_by_hand():
    # sum(w) = 1, so y_i = 0.5 + 0.5 w_i; with t_i = 2 (y_i - 0.5) = [0.2, 0, 0.1, -0.1] the
    # constrained minimum of sum (t_i - w_i)^2 is w = t + (1 - sum t) / 4 = t + 0.2
    y = np.array([0.6, 0.5, 0.55, 0.45])
    fit = fit_weights(HALVES, y)
    assert list(fit["weights"].values()) == pytest.approx([0.4, 0.2, 0.3, 0.1], abs=1e-12)
    # every residual is 0.5 (t_i - w_i) = -0.1: MSE 0.01; TSS about the mean 0.525 is 0.0125
    assert fit["mse"] == pytest.approx(0.01) and fit["r2"] == pytest.approx(1 - 0.04 / 0.0125)
    assert fit["form"] == {"intercept": False, "sum_to_one": True, "nonneg": False}
    # the paper's weights on these rows: residuals y - 0.5 - 0.5 * [0.1, 0.3, 0.3, 0.3]
    assert fit["mse_paper_weights"] == pytest.approx(np.mean((y - 0.5 - 0.5 * PAPER) ** 2))
    # totals made from the paper's weights give them back exactly
    exact = fit_weights(HALVES, 0.5 + 0.5 * PAPER)
    assert list(exact["weights"].values()) == pytest.approx(PAPER, abs=1e-12) and exact["mse"] < 1e-25


def test_intercept_is_fitted_when_asked():
    # y = 0.2 + X w with w = [0.1, 0.2, 0.3, 0.4] (sum 1): the intercept fit recovers both
    w = np.array([0.1, 0.2, 0.3, 0.4])
    rows = np.vstack([HALVES, [[1.0, 1.0, 0.25, 0.5]]])
    fit = fit_weights(rows, 0.2 + rows @ w, intercept=True)
    assert fit["intercept"] == pytest.approx(0.2) and list(fit["weights"].values()) == pytest.approx(w)
    assert fit["usable_by_fm"] is False  # FM has no constant term


def test_nonneg_where_least_squares_gives_a_negative_weight():
    # free fit: 2.5 S = 2.0, S = 0.8, w = 2y - S = [0.4, 0.2, 0.3, -0.1]
    y = np.array([0.6, 0.5, 0.55, 0.35])
    ols = fit_weights(HALVES, y, sum_to_one=False)
    assert list(ols["weights"].values()) == pytest.approx([0.4, 0.2, 0.3, -0.1]) and not ols["usable_by_fm"]
    fit = fit_weights(HALVES, y, sum_to_one=False, nonneg=True)
    w = np.array(list(fit["weights"].values()))
    assert w[3] == 0.0 and (w[:3] > 0).all()
    # the optimum: least squares on the three facets kept, and the KKT sign of the dropped one
    kept = np.linalg.lstsq(HALVES[:, :3], y, rcond=None)[0]
    assert w[:3] == pytest.approx(kept, abs=1e-12)
    assert (HALVES.T @ (HALVES @ w - y))[3] > 0
    assert w == pytest.approx(nnls(HALVES, y)[0], abs=1e-12)


def test_nonneg_with_weights_summing_to_one_by_hand():
    # t = [0.6, 0.3, 0.2, -0.4] (y = 0.5 + 0.5 t): the sign-free constrained fit is t + 0.075,
    # whose last weight is negative; with it at 0, the other three are t_i + (1 - 1.1) / 3
    y = 0.5 + 0.5 * np.array([0.6, 0.3, 0.2, -0.4])
    free = fit_weights(HALVES, y)
    assert list(free["weights"].values()) == pytest.approx([0.675, 0.375, 0.275, -0.325])
    fit = fit_weights(HALVES, y, nonneg=True)
    assert list(fit["weights"].values()) == pytest.approx([0.6 - 1 / 30, 0.3 - 1 / 30, 0.2 - 1 / 30, 0.0], abs=1e-12)
    assert sum(fit["weights"].values()) == pytest.approx(1.0) and fit["usable_by_fm"]


def _scholarsum_shaped(noise: float, seed: int = 41) -> tuple[np.ndarray, np.ndarray]:
    """500 summaries (FD's count): a rating per facet on the paper's scales, as fractions, and
    totals made from the paper's weights plus Gaussian noise, rounded to four decimals."""
    rng = np.random.default_rng(seed)
    tops = np.array([FACET_SCALES[f][1] for f in FACETS])
    ratings = np.column_stack([rng.integers(1, top + 1, 500) for top in tops])
    X = ratings / tops
    return X, np.round(X @ PAPER + rng.normal(0.0, noise, 500), 4)


def test_scholarsum_shaped_scores_give_back_the_paper_weights():
    X, y = _scholarsum_shaped(noise=0.0)
    exact = fit_weights(X, y)
    # only the totals' rounding (at most 5e-5 a row) is left
    assert np.abs(np.array(list(exact["weights"].values())) - PAPER).max() < 1e-4 and exact["mse"] < 1e-9
    # noise of the paper's size: MSE 0.005 is a residual standard deviation of sqrt(0.005)
    X, y = _scholarsum_shaped(noise=0.005 ** 0.5)
    fit = fit_weights(X, y)
    w = np.array(list(fit["weights"].values()))
    assert np.round(w, 1) == pytest.approx(PAPER)  # the paper prints one decimal
    assert 0.0045 < fit["mse"] < 0.0055 and fit["n"] == 500
    assert fit_weights(X, y, sum_to_one=False, nonneg=True)["mse"] == pytest.approx(fit["mse"], rel=0.02)


def test_release_layout_fits_its_totals():
    """The ScholarSum / FD layout: the release's totals are FM's combination of its facet
    fractions; rows with a facet the reference lacks and a system without scores are counted."""
    rows = read_rows([table_lines(FIXTURES / "fd_sample.jsonl")])
    assert rows.read == 12 and rows.skipped == {"missing_facet": 3, "not_scored": 1} and len(rows.y) == 8
    fit = fit_weights(rows.X, rows.y)
    assert list(fit["weights"].values()) == pytest.approx(PAPER, abs=1e-3)


def test_table_layouts_and_the_fm_details_join(tmp_path):
    csv = tmp_path / "s.csv"
    csv.write_text("doc,bg,me,re,co,overall\na,3,4,2,3,4\nb,2,,3,1,2\n", encoding="utf-8")
    rows = read_rows([table_lines(csv)], facets=["bg", "me", "re", "co"], human="overall", scale="rating", human_max=5)
    assert rows.X.tolist() == [[1.0, 1.0, 0.5, 1.0]] and rows.y.tolist() == [0.8]
    assert rows.skipped["missing_facet"] == 1 and rows.where == [f"{csv}, line 2"]
    details = tmp_path / "fm.jsonl"
    details.write_text("\n".join(json.dumps(r) for r in (
        {"task": "t", "id": "d1", "fm": 0.5, "fractions": [1.0, 0.5, 0.25, 1 / 3], "failure": None},
        {"task": "t", "id": "d2", "fm": None, "fractions": None, "failure": "rating"})) + "\n", encoding="utf-8")
    human = tmp_path / "h.jsonl"
    human.write_text('{"id": "d1", "human": 0.4}\n{"id": "d2", "human": 0.9}\n', encoding="utf-8")
    rows = read_rows([table_lines(details)], human_lines=table_lines(human))
    assert rows.X.tolist() == [[1.0, 0.5, 0.25, 1 / 3]] and rows.y.tolist() == [0.4]
    assert rows.skipped == {"missing_facet": 0, "not_scored": 1}


@pytest.mark.parametrize("text, message", [
    ("background,method,result,conclusion,human\n1,1,1,1,1\n0.5,x,1,1,1\n",
     "line 3: field 'method' is not a number: 'x'"),
    ("background,method,result,human\n1,1,1,1\n",
     "line 2: no field 'conclusion' (fields present: background, method, result, human; name the columns"),
    ("background,method,result,conclusion,human\n1,2,1,1,1\n", "line 2: field 'method' = 2 is not a fraction"),
    ("background,method,result,conclusion,human\n1,1,1,1,\n", "line 2: no human score (field 'human' is empty)"),
    ("background,method,result,conclusion,human\n1,1,1,1,1\n1,1,1,1,4\n",
     "line 3: human score 4 is above 1 once divided by the human scores' maximum 1; the fit needs them on "
     "FM's 0-1 scale (--human-max 5 for scores on 1-5)"),
])
def test_bad_rows_name_file_line_and_field(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FitError) as err:
        read_rows([table_lines(path)])
    assert str(err.value).startswith(f"{path}, {message}")
    assert "\n" not in str(err.value)


def test_too_few_rows_and_a_bad_json_line(tmp_path):
    with pytest.raises(FitError, match="3 free parameters and 2 usable"):
        fit_weights(HALVES[:2], np.array([0.5, 0.5]))
    path = tmp_path / "bad.jsonl"
    path.write_text('{"background": 1, "method": 1, "result": 1, "conclusion": 1, "human": 1}\n{oops\n')
    with pytest.raises(DataError, match=r"bad.jsonl, line 2: invalid JSON"):
        read_rows([table_lines(path)])
    path.write_text('{"background": 1, "method": 1, "result": 1, "conclusion": 1, "human": 1}\n[1, 2]\n')
    with pytest.raises(FitError, match=r"bad.jsonl, line 2: a JSON object per line is expected, got list"):
        read_rows([table_lines(path)])


def test_a_csv_with_a_byte_order_mark_and_windows_line_ends(tmp_path):
    """Excel's "CSV UTF-8" (a byte-order mark, CRLF line ends) reads as any CSV: the table is
    read by the one reader every command's table goes through."""
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffbackground,method,result,conclusion,human\r\n1,0.5,0.5,1,0.8\r\n".encode("utf-8"))
    rows = read_rows([table_lines(path)])
    assert rows.X.tolist() == [[1.0, 0.5, 0.5, 1.0]] and rows.y.tolist() == [0.8] and rows.where == [f"{path}, line 2"]


# ---------------------------------------------------------------- FM with the set weights


def test_fm_combines_the_ratings_with_the_weights_it_is_given():
    ref = cand = {f: "text" for f in FACETS}
    rated = {"background": (2.0, None), "method": (3.0, None), "result": (4.0, None), "conclusion": (1.0, None)}
    # fractions 2/3, 3/4, 4/4, 1/3
    paper, mine = {}, {}
    _fm_item(paper, ref, cand, None, None, rated)
    _fm_item(mine, ref, cand, None, None, rated, (0.4, 0.2, 0.2, 0.2))
    assert paper["fm"] == pytest.approx(0.1 * 2 / 3 + 0.3 * 0.75 + 0.3 * 1.0 + 0.3 / 3)
    assert mine["fm"] == pytest.approx(0.4 * 2 / 3 + 0.2 * 0.75 + 0.2 * 1.0 + 0.2 / 3)
    # a facet the reference lacks: the others' weights renormalised, (0.2*0.5 + 0.2*0.25 + 0.2/3) / 0.6
    assert fm_aggregate([0, 0.5, 0.25, 1 / 3], [0.4, 0.2, 0.2, 0.2]) == pytest.approx((0.1 + 0.05 + 0.2 / 3) / 0.6)


def test_fm_weights_setting_reads_lists_and_fit_files_and_refuses_bad_ones(tmp_path):
    assert resolve({}, "fm_weights") == [0.1, 0.3, 0.3, 0.3]
    assert resolve({"fm_weights": "[0.25, 0.25, 0.25, 0.25]"}, "fm_weights") == (0.25, 0.25, 0.25, 0.25)
    fit = tmp_path / "fm_weights.json"
    fit.write_text(json.dumps({"weights": {"background": 0.2, "method": 0.4, "result": 0.3, "conclusion": 0.1},
                               "intercept": None}))
    assert resolve({"fm_weights": str(fit)}, "fm_weights") == (0.2, 0.4, 0.3, 0.1)
    for bad in ("[0.2, -0.1, 0.5, 0.4]", "[0.5, 0.5]", "[0, 0, 0, 0]", str(tmp_path / "missing.json")):
        with pytest.raises(SettingError, match="setting 'fm_weights'"):
            resolve({"fm_weights": bad}, "fm_weights")
    with pytest.raises(ValueError, match="intercept"):
        facet_weights({"weights": [0.1, 0.3, 0.3, 0.3], "intercept": 0.05})


def test_runs_with_other_weights_are_another_system():
    """The report never pools FM scores combined with different weights: ``fm_weights_used``
    is part of a judged task's identity, and the paper's weights count as unset."""
    from lm_eval_tasks import catalog
    from lm_eval_tasks.report.systems import identity_settings

    task = "adapteval_pubmed_fm"
    spec = catalog.lookup(task)

    def identity(used: str) -> dict[str, str]:
        return identity_settings({"configs": {task: {"metadata": {"fm_weights_used": used}}}}, task, spec)[0]

    assert "fm_weights" not in identity(json.dumps([0.1, 0.3, 0.3, 0.3]))
    assert identity(json.dumps([0.2, 0.4, 0.3, 0.1]))["fm_weights"] == "[0.2, 0.4, 0.3, 0.1]"


def test_the_page_says_which_flag_makes_a_fit_usable_by_fm(tmp_path):
    """An unusable fit names each reason with the flag that removes it, and no flag already given."""
    from lm_eval_tasks.report.fm_weights import write_fit

    w = np.array([0.1, 0.2, 0.3, 0.4])
    rows = np.vstack([HALVES, [[1.0, 1.0, 0.25, 0.5]]])
    path = tmp_path / "s.csv"
    path.write_text("background,method,result,conclusion,human\n" + "".join(
        ",".join(map(str, [*r, 0.2 + r @ w])) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "fit"
    out.mkdir()
    text = write_fit([path], out, intercept=True, nonneg=True).markdown
    assert "FM cannot use these weights: it has an intercept (fit without --intercept)\n" in text
    assert "--nonneg" not in text.split("FM cannot use")[1]
