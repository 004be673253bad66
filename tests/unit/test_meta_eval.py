"""domsum meta-eval (custom_metrics.analysis.meta_eval; statistics in custom_metrics.analysis.stats) on
hand-made files in the FD (ScholarSum) and long formats."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from custom_metrics.analysis import meta_eval
from custom_metrics.analysis.stats.agreement import cohen_kappa, weighted_kappa
from custom_metrics.analysis.stats.table import correlation_table
from lm_eval_tasks.commands import meta_eval as meta_eval_command
from helpers.meta_eval import BERT, HUMAN, ROUGEL
from helpers import meta_eval as shared


fd_file = shared.fd_file  # a fixture, shared with the other half of these tests


def _pairs(metric_table, system_filter=None):
    xs, ys, docs = [], [], []
    for s in ("good", "mid", "bad"):
        for d in range(5):
            x, y = metric_table[s][d], HUMAN[s][d]
            if x is None or y is None or math.isnan(x) or math.isnan(y):
                continue
            xs.append(x), ys.append(y), docs.append(d)
    return np.array(xs), np.array(ys), docs


def test_fd_loading_discovers_systems_and_counts(fd_file):
    df, counts = meta_eval.load_table(fd_file)
    assert counts["format"] == "fd" and counts["systems"] == 3
    assert counts["missing_cells"] == 1 and counts["empty_summaries"] == 1
    assert set(df["system"]) == {"good", "mid", "bad"} and len(df) == 14
    assert meta_eval.metric_columns(df) == ["bert", "newrougel"]


def test_correlations_match_scipy_and_pair_counts(fd_file):
    df, _ = meta_eval.load_table(fd_file)
    table = correlation_table(df, ["bert", "newrougel"], n_boot=200, seed=1)
    for metric, src in (("bert", BERT), ("newrougel", ROUGEL)):
        x, y, docs = _pairs(src)
        row = table[(table.metric == metric) & (table.level == "global")].set_index("coefficient")
        assert row.loc["pearson", "r"] == pytest.approx(sps.pearsonr(x, y)[0])
        assert row.loc["spearman", "r"] == pytest.approx(sps.spearmanr(x, y)[0])
        assert row.loc["kendall_b", "r"] == pytest.approx(sps.kendalltau(x, y)[0])
        assert row.loc["pearson", "n"] == len(x)
        assert row.loc["pearson", "ci_low"] <= row.loc["pearson", "r"] <= row.loc["pearson", "ci_high"]
        # system level: means over the pairs where both are present
        sysm = {s: (np.mean([a for a, dd, s2 in zip(x, docs, _sys_of(src)) if s2 == s]),
                    np.mean([b for b, dd, s2 in zip(y, docs, _sys_of(src)) if s2 == s])) for s in HUMAN}
        xs = [sysm[s][0] for s in sorted(sysm)]
        ys = [sysm[s][1] for s in sorted(sysm)]
        srow = table[(table.metric == metric) & (table.level == "system")].set_index("coefficient")
        assert srow.loc["pearson", "r"] == pytest.approx(sps.pearsonr(xs, ys)[0])
        assert srow.loc["pearson", "n"] == 3
    # bert has 2 NaN-touched pairs beyond the missing cell (NaN human, NaN bert)
    assert table[table.metric == "bert"]["n_pairs"].iloc[0] == 12
    assert table[table.metric == "bert"]["dropped_pairs"].iloc[0] == 2


def _sys_of(src):
    out = []
    for s in ("good", "mid", "bad"):
        for d in range(5):
            x, y = src[s][d], HUMAN[s][d]
            if x is None or y is None or math.isnan(x) or math.isnan(y):
                continue
            out.append(s)
    return out


def test_per_document_average_matches_scipy(fd_file):
    df, _ = meta_eval.load_table(fd_file)
    table = correlation_table(df, ["newrougel"], n_boot=0)
    vals = []
    for d in range(5):
        x = [ROUGEL[s][d] for s in HUMAN if ROUGEL[s][d] is not None and HUMAN[s][d] is not None
             and not math.isnan(HUMAN[s][d])]
        y = [HUMAN[s][d] for s in HUMAN if ROUGEL[s][d] is not None and HUMAN[s][d] is not None
             and not math.isnan(HUMAN[s][d])]
        if len(x) >= 3:
            vals.append(sps.spearmanr(x, y)[0])
    row = table[(table.level == "summary") & (table.coefficient == "spearman")].iloc[0]
    assert row["r"] == pytest.approx(np.mean(vals)) and row["n"] == len(vals)


def test_known_ranking_and_bootstrap_is_seeded(fd_file):
    df, _ = meta_eval.load_table(fd_file)
    ranks = meta_eval.rankings(df, ["human", "bert", "newrougel"])
    assert list(ranks.index) == ["good", "mid", "bad"]
    assert ranks.loc["mid", "newrougel_rank"] == 1 and ranks.loc["good", "newrougel_rank"] == 2
    t1 = correlation_table(df, ["bert"], n_boot=100, seed=7)
    t2 = correlation_table(df, ["bert"], n_boot=100, seed=7)
    pd.testing.assert_frame_equal(t1, t2)


def test_cohen_kappa_hand_case():
    # 10 items: agreement 8/10; marginals a: 5x1 5x2, b: 5x1 5x2 -> pe = 0.5 -> kappa 0.6
    a = [1, 1, 1, 1, 1, 2, 2, 2, 2, 2]
    b = [1, 1, 1, 1, 2, 1, 2, 2, 2, 2]
    k, n = cohen_kappa(a, b)
    assert k == pytest.approx(0.6) and n == 10
    k, n = cohen_kappa([1, None, float("nan")], [1, 2, 3])
    assert n == 1


def test_long_csv_cli_with_kappa_and_png(tmp_path, capsys):
    rows = []
    for d in range(4):
        for s, h, m in (("A", 4, 0.9), ("B", 3, 0.7), ("C", 1, 0.2)):
            rows.append({"doc_id": f"d{d}", "system": s, "reference": f"cells in mice {d}",
                         "summary": {"A": f"cells in mice {d}", "B": "cells in rats", "C": "weather report"}[s], "rating": h + (d % 2) * 0.5,
                         "metric_x": m + d * 0.01, "ann1": json.dumps([3, 2, 4, 1]),
                         "ann2": json.dumps([3, 2, 3, 1])})
    rows.append({"doc_id": "d9", "system": "D", "reference": "x", "summary": "", "rating": float("nan"),
                 "metric_x": float("nan"), "ann1": None, "ann2": None})  # only-once system, NaNs
    p = tmp_path / "long.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    out = tmp_path / "out"
    rc = meta_eval_command.main([str(p), "--out", str(out), "--human", "rating", "--bootstrap", "50",
                         "--kappa", "ann1,ann2", "--compute", "rouge", "--metrics", "metric_x,our_rougeL"])
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["format"] == "long" and summary["counts"]["empty_summaries"] == 1
    assert summary["counts"]["missing_cells"] == 5 * 4 - 13  # 5 documents x 4 systems, 13 rows
    assert summary["kappa"]["n_items"] == 48
    png = (out / "metric_matrix_global_pearson.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    table = pd.read_csv(out / "correlations.csv")
    assert set(table["metric"]) == {"metric_x", "our_rougeL"}
    assert "| metric_x |" in capsys.readouterr().out
    ranks = pd.read_csv(out / "rankings.csv", index_col=0)
    assert list(ranks.index[:3]) == ["A", "B", "C"]


def test_too_few_pairs_is_na_not_a_crash(tmp_path):
    p = tmp_path / "tiny.jsonl"
    p.write_text('{"doc_id": 1, "system": "a", "human": 1, "m": 0.5}\n'
                 '{"doc_id": 1, "system": "b", "human": null, "m": 0.4}\n')
    s = meta_eval.run(p, tmp_path / "o", n_boot=10)
    assert s["table"]["r"].isna().all()
    assert (tmp_path / "o" / "metric_matrix_global_pearson.png").exists()


FIX = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures" / "meta_eval"


def test_weighted_kappa_hand_cases():
    a, b = [1, 2, 3, 1], [1, 3, 3, 2]
    # observed .25 in (1,1) (2,3) (3,3) (1,2); quadratic weights 0, 1/4, 1 -> 1 - .125/.40625
    assert weighted_kappa(a, b, "quadratic") == (pytest.approx(9 / 13), 4)
    assert cohen_kappa(a, b) == (pytest.approx(3 / 11), 4)  # po .5, pe .3125
    # two categories: every weighting equals the unweighted kappa
    assert weighted_kappa([1, 1, 2, 2], [1, 2, 2, 2])[0] == pytest.approx(0.5)
    assert weighted_kappa([1, 2, 3], [1, 2, 3])[0] == pytest.approx(1.0)
    assert math.isnan(weighted_kappa([2, 2], [2, 2])[0])


def test_ratings_correlations_match_scipy_per_annotator_and_consensus():
    scores = pd.read_csv(FIX / "medqsum_scores.csv")
    ratings, counts = meta_eval.load_ratings(FIX / "medqsum_ratings.csv")
    assert counts["annotators"] == 2 and counts["aspects"] == 4 and counts["unusable_ratings"] == 0
    corr = meta_eval.ratings_correlations(scores, ratings, ["rougeL", "perplexity"], n_boot=50, seed=0)
    raw = pd.read_csv(FIX / "medqsum_ratings.csv", keep_default_na=False)
    for who in ("ann1", "consensus"):
        rel = raw[raw.aspect == "relevance"]
        if who != "consensus":
            rel = rel[rel.annotator == who]
        h = rel.groupby(["doc_id", "system"])["rating"].mean().rename("h").reset_index()
        m = scores.merge(h, on=["doc_id", "system"])
        row = corr[(corr.aspect == "relevance") & (corr.annotator == who) & (corr.metric == "rougeL")
                   & (corr.level == "global")].set_index("coefficient")
        assert row.loc["spearman", "r"] == pytest.approx(sps.spearmanr(m["rougeL"], m["h"])[0])
        assert row.loc["kendall_b", "r"] == pytest.approx(sps.kendalltau(m["rougeL"], m["h"])[0])
        assert row.loc["pearson", "n"] == 24
    # speciality is rated once per question: broadcast to each system's summary of it
    spec = raw[raw.aspect == "speciality"].groupby("doc_id")["rating"].mean().rename("h").reset_index()
    m = scores.merge(spec, on="doc_id")
    row = corr[(corr.aspect == "speciality") & (corr.annotator == "consensus") & (corr.metric == "rougeL")
               & (corr.level == "global") & (corr.coefficient == "pearson")].iloc[0]
    assert row["r"] == pytest.approx(sps.pearsonr(m["rougeL"], m["h"])[0]) and row["n"] == 24


def test_ratings_cli_outputs_kappa_and_system_table(tmp_path, capsys):
    out = tmp_path / "o"
    rc = meta_eval_command.main([str(FIX / "medqsum_scores.csv"), "--ratings", str(FIX / "medqsum_ratings.csv"),
                         "--out", str(out), "--bootstrap", "50"])
    assert rc == 0
    kap = pd.read_csv(out / "kappa.csv").set_index("aspect")
    raw = pd.read_csv(FIX / "medqsum_ratings.csv", keep_default_na=False)
    rel = raw[raw.aspect == "relevance"].pivot_table(index=["doc_id", "system"], columns="annotator", values="rating")
    assert kap.loc["relevance", "kappa"] == pytest.approx(cohen_kappa(rel["ann1"], rel["ann2"])[0])
    assert kap.loc["relevance", "n_items"] == 24 and kap.loc["speciality", "n_items"] == 8
    table = pd.read_csv(out / "system_ratings.csv", index_col=0)
    cons = raw[raw.aspect == "consistency"]
    assert table.loc["ref_like", "consistency"] == pytest.approx(cons[cons.system == "ref_like"]["rating"].mean())
    assert table.loc["(per sample)", "speciality_n"] == 8
    ranks = pd.read_csv(out / "rankings.csv", index_col=0)
    means = pd.read_csv(FIX / "medqsum_scores.csv").groupby("system")["perplexity"].mean()
    assert ranks.loc[means.idxmin(), "perplexity_rank"] == 1  # lower perplexity ranks first
    printed = capsys.readouterr().out
    assert "Inter-annotator agreement" in printed and "Per-system mean human ratings" in printed
    assert set(pd.read_csv(out / "human_correlations.csv")["annotator"]) == {"ann1", "ann2", "consensus"}


def test_ratings_file_missing_columns_is_a_clear_error(tmp_path):
    bad = tmp_path / "r.csv"
    bad.write_text("doc_id,score\nq1,3\n")
    with pytest.raises(meta_eval.MetaEvalError, match="lacks the column"):
        meta_eval.load_ratings(bad)


def test_fd_fixture_worked_example(tmp_path):
    """docs/benchmarks/fm.md's worked example: the FD-format fixture, with our ROUGE-L computed."""
    s = meta_eval.run(FIX / "fd_sample.jsonl", tmp_path / "o", compute=["rouge"], n_boot=100)
    assert s["counts"]["systems"] == 3 and s["counts"]["empty_summaries"] == 1
    assert list(s["rankings"].index) == ["faithful", "partial", "wrong"]
    t = s["table"]
    assert set(t["metric"]) == {"bert", "newrougel", "our_rougeL"}
    assert t[(t.metric == "bert") & (t.level == "global")]["n"].iloc[0] == 11


def test_compute_with_a_missing_model_stops_naming_the_metric(tmp_path):
    """A battery metric whose model cannot be had stops meta-eval, instead of a NaN column."""
    df = pd.DataFrame({"doc_id": ["q1", "q2"], "system": ["a", "b"], "reference": ["x y", "z w"],
                       "summary": ["x y", "z"]})
    with pytest.raises(meta_eval.MetaEvalError, match=r"--compute perplexity cannot run: .*no_such_model"):
        meta_eval.compute_metrics(df, ["rouge", "perplexity"], ppl_model=str(tmp_path / "no_such_model"))
    with pytest.raises(meta_eval.MetaEvalError, match="unknown --compute metric 'bogus'"):
        meta_eval.compute_metrics(df, ["rouge", "bogus"])


def test_analysis_library_raises_typed_errors_never_systemexit():
    """Library code raises AnalysisError subclasses; only commands map them to exit codes."""
    import ast
    from pathlib import Path

    import custom_metrics.analysis as analysis
    from custom_metrics.analysis.errors import AnalysisError

    assert issubclass(meta_eval.MetaEvalError, AnalysisError)
    for path in Path(analysis.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                call = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                assert getattr(call, "id", None) != "SystemExit", f"{path}:{node.lineno} raises SystemExit"
