"""Expert ranking studies (custom_metrics/analysis/rankings.py, ``domsum rankings``): golden
numbers computed by hand below, kappa against scikit-learn, W against Friedman's test,
the checks of bad lines, the outputs and the paper's numbers beside.

The small study every golden test reads (annotators x and y, documents d1-d3, systems A-C;
rank 1 = best, x ties A and B on d3)::

    doc  x: A B C   y: A B C
    d1      1 2 3      1 3 2
    d2      2 1 3      1 2 3
    d3      1 1 3      2 1 3

Top-2 (fewer than two systems strictly better): x d1 {A,B}, y d1 {A,C}, d2 both {A,B},
x d3 {A,B} (A and B both have none better), y d3 {B,A}. Pooled shares over the 6 rankings:
A 6/6, B 5/6, C 1/6; documents on which both annotators put it in the top 2: A 3/3, B 2/3
(not d1), C 0/3.

Pairwise labels per document for the pairs (A,B), (A,C), (B,C); 0 = first ranked higher,
1 = tie, 2 = second ranked higher::

    d1  x: 0 0 0   y: 0 0 2
    d2  x: 2 0 0   y: 0 0 0
    d3  x: 1 0 0   y: 2 0 0

Agreement on 6 of 9 items: p_o = 2/3. x's labels: seven 0, one 1, one 2; y's: seven 0, no
1, two 2: p_e = (7*7 + 1*0 + 1*2) / 81 = 51/81 = 17/27. kappa = (18/27 - 17/27) / (10/27)
= 0.1.

Kendall's W, m rankings of n = 3 systems, mid-ranks, W = 12 S / (m^2 (n^3 - n) - m T):
d1: R = (2, 5, 5), mean m(n+1)/2 = 4, S = 4 + 1 + 1 = 6, T = 0: W = 72 / (4 * 24) = 0.75.
d2: R = (3, 3, 6), S = 6: W = 0.75. d3: x's mid-ranks (1.5, 1.5, 3), R = (3.5, 2.5, 6),
S = 0.25 + 2.25 + 4 = 6.5, T = 2^3 - 2 = 6: W = 78 / (96 - 12) = 13/14. Mean: 17/21.
All six rankings as raters (m = 6): R = (8.5, 10.5, 17), mean 12, S = 12.25 + 2.25 + 25 =
39.5, T = 6: W = 474 / (36 * 24 - 36) = 474/828 = 79/138.
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from custom_metrics.analysis.rankings import (LABELS, RankingError, analyse, kendall_w, preference, read_rankings,
                                              strictly_better)
from custom_metrics.analysis.stats.bootstrap import percentile_interval, resample_indices
from lm_eval_tasks.data.records import DataError
from lm_eval_tasks.data.user_files import table_lines

STUDY = {("x", "d1"): (1, 2, 3), ("y", "d1"): (1, 3, 2), ("x", "d2"): (2, 1, 3), ("y", "d2"): (1, 2, 3),
         ("x", "d3"): (1, 1, 3), ("y", "d3"): (2, 1, 3)}


def _records(study=STUDY, systems=("A", "B", "C")) -> list[dict]:
    return [{"annotator": a, "document": d, "system": s, "rank": r}
            for (a, d), ranks in study.items() for s, r in zip(systems, ranks)]


def _lines(records) -> list[tuple[str, dict]]:
    return [(f"study.csv, line {i + 2}", r) for i, r in enumerate(records)]


def _result(top_k=2, n_boot=200, seed=7):
    rankings, counts = read_rankings(_lines(_records()), "study.csv")
    return analyse(rankings, top_k, n_boot, seed), counts


def test_golden_top_two_shares():
    result, counts = _result()
    assert counts == {"lines": 18, "rankings": 6, "documents": 3, "annotators": 2, "systems": 3,
                      "rankings_with_ties": 1, "documents_with_one_annotator": 0}
    by = {s["system"]: s for s in result["shares"]}
    assert [by[s]["share"] for s in "ABC"] == pytest.approx([1.0, 5 / 6, 1 / 6])
    assert [by[s]["in_top_k"] for s in "ABC"] == [6, 5, 1] and {by[s]["rankings"] for s in "ABC"} == {6}
    assert [by[s]["all_annotators_share"] for s in "ABC"] == pytest.approx([1.0, 2 / 3, 0.0])
    # top 1: x d1 A, y d1 A, x d2 B, y d2 A, x d3 A and B (tied first), y d3 B
    top1 = {s["system"]: s["share"] for s in _result(top_k=1)[0]["shares"]}
    assert top1 == pytest.approx({"A": 4 / 6, "B": 3 / 6, "C": 0.0})


def test_golden_kappa_and_sklearn():
    result, _ = _result()
    pair = result["agreement"]["pairs"][0]
    assert pair["annotators"] == ["x", "y"] and pair["items"] == 9
    assert pair["kappa"] == pytest.approx(0.1)
    assert pair["observed_agreement"] == pytest.approx(2 / 3) and pair["chance_agreement"] == pytest.approx(17 / 27)
    assert pair["table"]["counts"] == [[6, 0, 1], [0, 0, 1], [1, 0, 0]]
    assert result["agreement"]["kappa_mean"] == pytest.approx(0.1)  # one pair: its kappa
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    x = [0, 0, 0, 2, 0, 0, 1, 0, 0]  # the docstring's labels, document by document
    y = [0, 0, 2, 0, 0, 0, 2, 0, 0]
    assert sklearn_metrics.cohen_kappa_score(x, y) == pytest.approx(pair["kappa"])


def test_golden_kendall_w_and_friedman():
    result, _ = _result()
    w = result["kendall_w"]
    assert [d["w"] for d in w["per_document"]] == pytest.approx([0.75, 0.75, 13 / 14])
    assert w["mean"] == pytest.approx(17 / 21) and w["documents"] == 3 and w["undefined"] == 0
    assert w["all_rankings"]["w"] == pytest.approx(79 / 138)
    from scipy.stats import friedmanchisquare

    # Friedman's chi-square (tie-corrected, systems as treatments, rankings as blocks) = m (n - 1) W
    ranks = np.array(list(STUDY.values()), dtype=float)
    assert friedmanchisquare(*ranks.T).statistic / (6 * 2) == pytest.approx(79 / 138)
    assert kendall_w(ranks[4:]) == pytest.approx(13 / 14)
    assert math.isnan(kendall_w([[1, 1, 1], [2, 2, 2]]))  # every system tied by every ranking: 0 / 0
    assert kendall_w([[1, 2, 3], [1, 2, 3]]) == pytest.approx(1.0)
    assert kendall_w([[1, 2, 3], [3, 2, 1]]) == pytest.approx(0.0)


def test_pair_labels_and_top_k_rule():
    assert [preference({"A": 1, "B": 2}, "A", "B"), preference({"A": 1, "B": 1}, "A", "B"),
            preference({"A": 3, "B": 2}, "A", "B")] == [0, 1, 2]
    assert LABELS[0] == "A ranked higher"
    # dense (1, 1, 2) and competition (1, 1, 3) numbering are one ranking
    assert strictly_better({"A": 1, "B": 1, "C": 2}) == strictly_better({"A": 1, "B": 1, "C": 3}) == \
        {"A": 0, "B": 0, "C": 2}


def test_intervals_are_the_document_bootstrap():
    result, _ = _result(n_boot=300, seed=11)
    # per document: rankings (of two) placing B in the top 2 (docstring): d1 1, d2 2, d3 2
    b_top = np.array([1, 2, 2])
    shares = np.concatenate([b_top[block].sum(1) / (2 * block.shape[1]) for block in resample_indices(3, 300, 11)])
    assert result["shares"][1]["ci"] == pytest.approx(list(percentile_interval(shares)))
    assert result["interval"] == {"method": "percentile bootstrap over documents", "level": 0.95, "resamples": 300,
                                  "seed": 11}
    again, _ = _result(n_boot=300, seed=11)
    assert again == result  # seeded: the same intervals
    none, _ = _result(n_boot=0)
    assert none["shares"][0]["ci"] == [None, None] and none["agreement"]["pairs"][0]["kappa"] == pytest.approx(0.1)


def test_three_annotators_and_a_document_ranked_once():
    study = {**STUDY, ("z", "d1"): (1, 2, 3), ("z", "d2"): (2, 1, 3), ("x", "d4"): (3, 2, 1)}
    rankings, counts = read_rankings(_lines(_records(study)))
    result = analyse(rankings, 2, 0)
    assert counts["documents_with_one_annotator"] == 1 and counts["annotators"] == 3
    pairs = {tuple(p["annotators"]): p for p in result["agreement"]["pairs"]}
    # x and z rank d1 and d2 identically: every one of their 6 items agrees
    assert pairs[("x", "z")]["items"] == 6 and pairs[("x", "z")]["kappa"] == pytest.approx(1.0)
    assert pairs[("x", "y")]["kappa"] == pytest.approx(0.1)  # d4 has no y: the same nine items
    finite = [p["kappa"] for p in pairs.values()]
    assert result["agreement"]["kappa_mean"] == pytest.approx(sum(finite) / 3)
    w = result["kendall_w"]
    assert w["undefined"] == 1 and w["per_document"][3]["w"] is None  # d4: one ranking


@pytest.mark.parametrize("bad, message", [
    ({"rank": "second"}, "study.csv, line 3: field 'rank' is not a number: 'second'"),
    ({"rank": ""}, "study.csv, line 3: missing field 'rank'"),
    ({"rank": "nan"}, "study.csv, line 3: field 'rank' is not a finite number: 'nan'"),
    ({"system": None}, "study.csv, line 3: missing field 'system'"),
])
def test_a_bad_field_is_named_by_file_line_and_field(bad, message):
    records = _records()
    records[1] = {**records[1], **bad}
    with pytest.raises(RankingError) as err:
        read_rankings(_lines(records), "study.csv")
    assert str(err.value).startswith(message)


def test_repeats_and_partial_rankings_are_errors():
    records = _records()
    records.append(dict(records[0], rank=2))  # x ranked A of d1 twice
    with pytest.raises(RankingError, match=r"line 20: field 'system': annotator 'x' already ranked system 'A' of "
                                           r"document 'd1' at line 2"):
        read_rankings(_lines(records), "study.csv")
    partial = [r for r in _records() if not (r["annotator"] == "y" and r["document"] == "d2" and r["system"] == "C")]
    with pytest.raises(RankingError, match=r"line 11: field 'system': annotator 'y' ranked document 'd2' without "
                                           r"system\(s\) 'C' \(ranked there by annotator 'x'\)"):
        read_rankings(_lines(partial), "study.csv")
    del records[-1]
    records[0] = {"annotator": "x"}
    records[1] = dict(records[1], rank=True)
    with pytest.raises(RankingError) as err:  # every bad line at once
        read_rankings(_lines(records), "study.csv")
    assert str(err.value).splitlines()[0] == "study.csv: 2 bad lines:"
    assert "line 2: missing field 'document'" in str(err.value) and "line 3: field 'rank'" in str(err.value)


def test_files_csv_with_bom_and_crlf_and_json_lines(tmp_path):
    path = tmp_path / "study.csv"
    with open(path, "w", newline="", encoding="utf-8-sig") as fh:  # Excel's "CSV UTF-8": BOM, CRLF
        writer = csv.writer(fh, lineterminator="\r\n")
        writer.writerow(["annotator", "document", "system", "rank"])
        writer.writerows([r["annotator"], r["document"], r["system"], r["rank"]] for r in _records())
    rankings, counts = read_rankings(table_lines(path), str(path))
    assert analyse(rankings, 2, 0)["agreement"]["pairs"][0]["kappa"] == pytest.approx(0.1)
    jsonl = tmp_path / "study.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in _records()) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"study.jsonl, line 19: invalid JSON"):
        read_rankings(table_lines(jsonl), str(jsonl))
    with pytest.raises(DataError, match="does not exist"):
        list(table_lines(tmp_path / "missing.csv"))


def _paper_shaped(tmp_path, systems=("Llama2 7b 2-shot", "Llama2 70b 2-shot", "Llama2 7b fine-tuned", "=cmd|x")):
    """Two annotators, four systems, three documents: each annotator ranks in the systems'
    order except y on d3, who swaps the first two."""
    path = tmp_path / "paper.csv"
    rows = [[a, d, s, (2 - i if (a, d) == ("y", "d3") and i < 2 else i + 1)]
            for d in ("d1", "d2", "d3") for a in ("x", "y") for i, s in enumerate(systems)]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["annotator", "document", "system", "rank"], *rows])
    return path


def test_outputs_and_the_paper_beside(tmp_path):
    from lm_eval_tasks.report.rankings import write_rankings

    out = tmp_path / "out"
    out.mkdir()
    result = write_rankings(_paper_shaped(tmp_path), out, 2, 100, 3)
    on_disk = json.loads((out / "rankings.json").read_text(encoding="utf-8"))
    assert on_disk["counts"]["documents"] == 3 and "markdown" not in on_disk
    # the annotators agree on 17 of the 3 x 6 pairs (y's swap on d3 is the 18th); kappa from the
    # label table by its formula
    pair = on_disk["agreement"]["pairs"][0]
    counts = np.array(pair["table"]["counts"], dtype=float)
    po, pe = np.trace(counts) / 18, float((counts.sum(0) * counts.sum(1)).sum()) / 18 ** 2
    assert pair["items"] == 18 and np.trace(counts) == 17 and pair["kappa"] == pytest.approx((po - pe) / (1 - pe))
    beside = {r["label"]: r for r in on_disk["published"]}
    pooled = beside["Llama2 7b 2-shot: top-2 share, pooled rankings"]
    assert pooled["run_value"] == pytest.approx(100.0) and pooled["published"] == 60
    assert beside["Llama2 7b fine-tuned: top-2 share, every annotator"]["run_value"] == pytest.approx(0.0)
    missing = beside["PEGASUS-X fine-tuned: top-2 share, pooled rankings (no system of this name in the file)"]
    assert missing["run_value"] is None and missing["published"] == 16
    kappa = beside["Cohen's kappa"]
    assert kappa["published"] == 0.4 and kappa["run_value"] == pytest.approx(pair["kappa"])
    assert not kappa["comparable"] and "3 of 25 test documents" in kappa["sentence"]
    assert pooled["cite"] == "AdaptEval Section 3.3, row Llama2 7b, column Top-2 share"
    md = (out / "rankings.md").read_text(encoding="utf-8")
    assert "=cmd\\|x" in md and "(published)" in md
    shares_csv = (out / "shares.csv").read_text(encoding="utf-8")
    assert "'=cmd|x" in shares_csv and "\n=cmd" not in shares_csv  # the formula cell neutralised
    html = (out / "rankings.html").read_text(encoding="utf-8")
    assert "Beside AdaptEval Section 3.3 (published)" in html and "60 (published)" in html
    assert result["markdown"] == md
    with_k3 = write_rankings(_paper_shaped(tmp_path), out, 3, 0, 3)
    top_k = [d for d in with_k3["published"][0]["differences"] if d["field"] == "top k"]
    assert top_k == [{"field": "top k", "run": 3, "paper": 2}]


def test_a_missing_input_is_one_line_before_the_output_folder_is_looked_at(tmp_path, capsys, monkeypatch):
    """A missing FILE is said as such, even where the default --out already holds a study."""
    from lm_eval_tasks.commands import rankings

    monkeypatch.chdir(tmp_path)
    (tmp_path / "out" / "rankings").mkdir(parents=True)
    (tmp_path / "out" / "rankings" / "rankings.json").write_text("{}")
    with pytest.raises(SystemExit) as done:
        rankings.main(["nonexistent.csv"])
    assert done.value.code == 2
    assert capsys.readouterr().err.splitlines() == ["rankings: error: nonexistent.csv: no such file"]



def test_a_top_k_reaching_every_system_is_refused():
    """With K at the number of systems every system is in every ranking's top K: shares of
    100 % that say nothing are refused with the count, not printed."""
    rankings, _ = read_rankings(_lines(_records()), "study.csv")
    with pytest.raises(RankingError, match="each of the 3 systems in the top 3 .* choose a K below 3"):
        analyse(rankings, 3, 0, 1)
    assert analyse(rankings, 2, 0, 1)["top_k"] == 2


def test_without_resamples_no_interval_is_announced(tmp_path):
    """``--bootstrap 0``: no "[95% CI]" heading over cells that hold no interval."""
    from lm_eval_tasks.report.rankings import write_rankings

    src = tmp_path / "study.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _records()), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    md = write_rankings(src, out, 2, 0, 1)["markdown"]
    assert "CI" not in md and "Intervals: none (--bootstrap 0)." in md
    with_ci = tmp_path / "ci"
    with_ci.mkdir()
    assert "Share [95% CI]" in write_rankings(src, with_ci, 2, 50, 1)["markdown"]
