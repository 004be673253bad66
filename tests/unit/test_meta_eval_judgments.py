"""Human-judgment inputs of meta-eval: the SummEval and DialSummEval converters, named
columns and wide ratings, consensus scores, and Krippendorff's alpha."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from custom_metrics.analysis import meta_eval
from custom_metrics.analysis.meta_eval import converters
from custom_metrics.analysis.meta_eval.inputs import load_inputs
from custom_metrics.analysis.stats.agreement import krippendorff_alpha
from custom_metrics.analysis.stats.consensus import consensus

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "meta_eval"
DSE = FIX / "dialsummeval"


# --- converters -------------------------------------------------------------------------

def test_summeval_layout_gives_one_row_per_summary_and_named_annotators():
    table, ratings = converters.summeval(FIX / "summeval_aligned.jsonl")
    assert len(table) == 9 and set(table["system"]) == {"M0", "M1", "M2"}
    assert table["doc_id"].nunique() == 3
    first = table.iloc[0]
    assert first["reference"].startswith("The old bridge is closed") and first["article"].startswith("The town")
    assert {"rouge_l_f_score", "bert_score_f1"} <= set(table.columns)
    assert first["rouge_l_f_score"] == pytest.approx(0.62)
    # 9 summaries x 3 experts x 4 aspects
    assert len(ratings) == 9 * 3 * 4 and set(ratings["annotator"]) == {"expert1", "expert2", "expert3"}
    assert set(ratings["aspect"]) == {"coherence", "consistency", "fluency", "relevance"}
    r = ratings[(ratings.doc_id == "dm-test-0001") & (ratings.system == "M1") & (ratings.aspect == "relevance")]
    assert list(r.sort_values("annotator")["rating"]) == [2, 2, 3]


@pytest.mark.parametrize("who,annotators", [("turker", 5), ("all", 8)])
def test_summeval_turkers_or_everyone(who, annotators):
    _, ratings = converters.summeval(FIX / "summeval_aligned.jsonl", who)
    assert ratings["annotator"].nunique() == annotators
    assert len(ratings) == 9 * annotators * 4


def test_summeval_wrong_layout_names_the_line(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text(json.dumps({"id": "a", "model_id": "M0", "decoded": "s"}) + "\n")
    with pytest.raises(meta_eval.MetaEvalError, match="line 1 lacks expert_annotations"):
        converters.summeval(bad)
    with pytest.raises(meta_eval.MetaEvalError, match="annotators must be one of"):
        converters.summeval(FIX / "summeval_aligned.jsonl", "crowd")


def test_dialsummeval_layout_and_scores_matched_by_dialogue_text():
    table, ratings = converters.dialsummeval(DSE / "human_judgment.jsonl")
    assert len(table) == 12 and len(ratings) == 12 * 3 * 4
    assert set(ratings["annotator"]) == {"ann1", "ann2", "ann3"}
    scored = converters.dialsummeval_scores(DSE / "models_eval_new", table)
    # the judgment file lists d3 first; dials.txt has it third: its row 3 of A/rouge.csv
    row = scored[(scored.doc_id == "d3") & (scored.system == "A")].iloc[0]
    assert row["rouge-1"] == pytest.approx(0.55) and row["bertscore_f1"] == pytest.approx(0.90)
    assert scored[["rouge-1", "rouge-l", "bertscore_f1"]].notna().all().all()


def test_dialsummeval_scores_folder_must_hold_the_dialogues(tmp_path):
    table, _ = converters.dialsummeval(DSE / "human_judgment.jsonl")
    (tmp_path / "dials.txt").write_text("| X: another dialogue\n")
    with pytest.raises(meta_eval.MetaEvalError, match="is not one of its lines"):
        converters.dialsummeval_scores(tmp_path, table)
    with pytest.raises(meta_eval.MetaEvalError, match="no dials.txt"):
        converters.dialsummeval_scores(tmp_path / "missing", table)


def test_named_columns_and_wide_ratings(tmp_path):
    scores = tmp_path / "scores.csv"
    scores.write_text("paper,model,m\np1,a,0.1\np1,b,0.5\np2,a,0.2\np2,b,0.7\n")
    wide = tmp_path / "ratings.csv"
    wide.write_text("paper,model,rater,coherence,fluency\n"
                    "p1,a,r1,2,3\np1,a,r2,2,4\np1,b,r1,4,4\np1,b,r2,5,4\n"
                    "p2,a,r1,1,2\np2,a,r2,2,2\np2,b,r1,5,5\np2,b,r2,4,5\n")
    cols = {"doc_id": "paper", "system": "model", "annotator": "rater"}
    df, counts, rdf = load_inputs(scores, ratings=wide, columns=cols)
    assert list(df.columns[:2]) == ["doc_id", "system"]
    assert counts["annotators"] == 2 and counts["aspects"] == 2 and len(rdf) == 16
    assert set(rdf["aspect"]) == {"coherence", "fluency"}


def test_a_release_brings_its_own_ratings(tmp_path):
    with pytest.raises(meta_eval.MetaEvalError, match="brings its own ratings"):
        load_inputs(DSE / "human_judgment.jsonl", "dialsummeval", ratings=FIX / "medqsum_ratings.csv")


# --- consensus --------------------------------------------------------------------------

NAN = math.nan


@pytest.mark.parametrize("row,mean,median,majority", [
    ([4, 4, 2], 10 / 3, 4, 4),
    ([1, 2, 3], 2, 2, 2),
    ([5, 5, 5], 5, 5, 5),
    ([3, NAN, 5], 4, 4, 4),
    ([2, 2, NAN], 2, 2, 2),
    ([3, 3, 4, 5], 3.75, 3.5, 3.75),   # two of four is no majority
    ([3, 3, 3, 5], 3.5, 3, 3),
])
def test_consensus_hand_cases(row, mean, median, majority):
    r = np.array([row], dtype=float)
    assert consensus(r, "mean")[0] == pytest.approx(mean)
    assert consensus(r, "median")[0] == pytest.approx(median)
    assert consensus(r, "majority")[0] == pytest.approx(majority)


def test_consensus_of_nobody_is_nan_and_unknown_method_fails():
    assert math.isnan(consensus(np.array([[NAN, NAN, NAN]]), "majority")[0])
    with pytest.raises(ValueError, match="unknown consensus"):
        consensus(np.ones((1, 3)), "mode")


def test_majority_is_dialsummevals_rule_on_every_triple_of_ratings():
    """DialSummEval: a == b != c gives a, a == c != b gives a, b == c != a gives b, else the mean."""
    triples = np.array(list(itertools.product(range(1, 6), repeat=3)), dtype=float)

    def rule(a, b, c):
        if a == b and a != c:
            return a
        if a == c and a != b:
            return c
        if b == c and a != b:
            return b
        return (a + b + c) / 3

    assert consensus(triples, "majority").tolist() == [rule(*t) for t in triples]


def test_run_records_the_consensus_and_uses_it(tmp_path):
    s = meta_eval.run(DSE / "human_judgment.jsonl", tmp_path / "o", fmt="dialsummeval", n_boot=0,
                      scores=DSE / "models_eval_new", consensus="majority")
    assert s["consensus"] == "majority"
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["consensus"] == "majority"
    # system A, coherence: d1 5,5,5; d2 5,5,5; d3 4,4,4; d4 5,4,5 -> majority 5 (mean would be 14/3)
    assert s["system_ratings"].loc["A", "coherence"] == pytest.approx(4.75)
    mean = meta_eval.run(DSE / "human_judgment.jsonl", tmp_path / "m", fmt="dialsummeval", n_boot=0,
                         scores=DSE / "models_eval_new")
    assert mean["system_ratings"].loc["A", "coherence"] == pytest.approx((5 + 5 + 4 + 14 / 3) / 4)
    assert "majority consensus" in s["markdown"]
    assert set(pd.read_csv(tmp_path / "o" / "alpha.csv")["aspect"]) == {"coherence", "consistency", "fluency",
                                                                         "relevance"}
    with pytest.raises(meta_eval.MetaEvalError, match="unknown consensus"):
        meta_eval.run(DSE / "human_judgment.jsonl", tmp_path / "x", fmt="dialsummeval", consensus="mode")


# --- Krippendorff's alpha ---------------------------------------------------------------

def test_alpha_interval_hand_computed():
    """Two coders, units (1,1), (2,2), (3,4): Do = 2/6, De = 82/30, alpha = 1 - 10/82."""
    data = [[1, 2, 3], [1, 2, 4]]
    assert krippendorff_alpha(data, "interval") == pytest.approx(1 - 10 / 82)
    # a unit only one coder rated carries no pairable value
    assert krippendorff_alpha([[1, 2, 3, 5], [1, 2, 4, None]], "interval") == pytest.approx(1 - 10 / 82)


def test_alpha_ordinal_hand_computed():
    """Same data, ordinal: n_1 = n_2 = 2, n_3 = n_4 = 1; delta(3,4) = 1, sum over pairs 99,
    so Do = 2/6, De = 198/30, alpha = 1 - (2/6)/(198/30)."""
    assert krippendorff_alpha([[1, 2, 3], [1, 2, 4]], "ordinal") == pytest.approx(1 - (2 / 6) / (198 / 30))


def test_alpha_perfect_and_undefined():
    assert krippendorff_alpha([[1, 2, 3], [1, 2, 3], [1, 2, 3]], "interval") == pytest.approx(1.0)
    assert math.isnan(krippendorff_alpha([[3, 3], [3, 3]], "interval"))   # one value: 0/0
    assert math.isnan(krippendorff_alpha([[1, None], [None, 2]], "interval"))   # nothing pairable
