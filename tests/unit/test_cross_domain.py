"""domsum cross-domain on hand-built harness folders: every existing cell kept, across levels.

Folders follow ``ROOT/<source>/<model>/results_<ts>.json`` with the results JSON that
lm-eval 0.4.13 writes (``"<metric>,<filter>"`` keys, "N/A" standard errors).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lm_eval_tasks.commands.cross_domain import main as cross_domain_main
from lm_eval_tasks.report import cross_domain as cd
from helpers.images import assert_png
from helpers.cross_domain import write_run
from helpers import cross_domain as shared


cross_root = shared.cross_root  # a fixture, shared with the other half of these tests


def harness_value(path: Path, task: str, metric: str) -> float:
    return json.loads(path.read_text())["results"][task][f"{metric},none"]


def test_cross_level_cell_kept_with_the_results_value(cross_root):
    root, files = cross_root
    frame, problems = cd.load_cross(root)
    (cm,) = cd.matrices(frame, "rouge_geo")
    assert (cm.benchmark, cm.model) == ("domainsum", "m1")
    # catalogue order: genre domains before style ones; no invented row or column
    assert cm.sources == ["cnndm", "pubmed", "cnn"] and cm.targets == ["cnndm", "pubmed", "cnn"]
    # the cnndm-trained model's score on cnn (another level) is the results file's value x100
    assert cm.cell("cnndm", "cnn") == pytest.approx(
        100 * harness_value(files["cnndm"], "domainsum_cnn", "rouge_geo"))
    assert cm.cell("cnndm", "cnn") == pytest.approx(36.0)
    np.testing.assert_allclose(cm.matrix, [[40, 20, 36], [10, 30, np.nan], [33, np.nan, 38]])
    # diff[s, t] = M[s, t] - M[t, t]
    np.testing.assert_allclose(cm.diff, [[0, -10, -2], [-30, 0, np.nan], [-7, np.nan, 0]])
    assert cm.missing_cells() == ["pubmed->cnn", "cnn->pubmed"]
    assert cm.no_in_domain() == []
    assert cm.groups == {"cnndm": "genre", "pubmed": "genre", "cnn": "style"}
    bert = cd.matrices(frame, "bertscore_f1")[0]
    assert bert.cell("cnn", "cnndm") == pytest.approx(87.0)


def test_main_outputs(cross_root, tmp_path):
    root, files = cross_root
    out = tmp_path / "out"
    assert cross_domain_main([str(root), "--out", str(out)]) == 0
    md = (out / "cross_domain.md").read_text()
    assert "(source)" not in md
    assert "**ROUGE (x100), domainsum, m1**" in md and "**BERTScore F1 (x100), domainsum, m1**" in md
    assert "Columns by level: genre: cnndm, pubmed; style: cnn." in md
    part = (out / "cross_domainsum_rouge_geo_m1.md").read_text()
    assert "| cnndm | genre | 40.00 | 20.00 | 36.00 |" in part
    assert "| cnn | style | 33.00 | n/a | 38.00 |" in part
    assert "| cnndm | genre | 0.00 | -10.00 | -2.00 |" in part  # Δ row
    assert "missing cells pubmed->cnn, cnn->pubmed" in md
    tidy = pd.read_csv(out / "cross_domain.csv")
    row = tidy[(tidy.metric == "rouge_geo") & (tidy.source == "cnndm") & (tidy.target == "cnn")].iloc[0]
    assert (row.source_level, row.target_level) == ("genre", "style")
    assert row.value == pytest.approx(36.0) and row.in_domain == pytest.approx(38.0)
    assert row["diff"] == pytest.approx(-2.0)
    assert len(tidy) == 2 * 9  # two metrics x 3 sources x 3 targets
    for metric in ("rouge_geo", "bertscore_f1"):
        assert_png(out / f"cross_domainsum_{metric}_m1.png")
        assert_png(out / f"cross_domainsum_{metric}_m1_diff.png")


def test_group_by_none_is_one_flat_list(cross_root, tmp_path):
    root, _ = cross_root
    frame, _ = cd.load_cross(root)
    (cm,) = cd.matrices(frame, "rouge_geo", group_by="none")
    assert cm.groups == {} and cm.targets == ["cnndm", "pubmed", "cnn"]
    out = tmp_path / "flat"
    assert cross_domain_main([str(root), "--out", str(out), "--group-by", "none", "--no-plots"]) == 0
    part = (out / "cross_domainsum_rouge_geo_m1.md").read_text()
    assert "Columns by level" not in part and "| level |" not in part
    assert "| cnndm | 40.00 | 20.00 | 36.00 |" in part
    assert not list(out.glob("*.png"))  # --no-plots
    with pytest.raises(ValueError, match="group_by"):
        cd.matrices(frame, "rouge_geo", group_by="topic")


def test_missing_in_domain_makes_only_that_column_na(tmp_path):
    root = tmp_path / "cross"
    # nobody was fine-tuned on cnn: cnn's column has scores but no in-domain reference
    write_run(root / "cnndm", "m1", {"domainsum_cnndm": {"rouge_geo": 0.40},
                                     "domainsum_cnn": {"rouge_geo": 0.36}})
    write_run(root / "pubmed", "m1", {"domainsum_cnndm": {"rouge_geo": 0.10},
                                      "domainsum_pubmed": {"rouge_geo": 0.30},
                                      "domainsum_cnn": {"rouge_geo": 0.21}})
    frame, _ = cd.load_cross(root)
    (cm,) = cd.matrices(frame, "rouge_geo")
    assert cm.sources == ["cnndm", "pubmed"] and cm.targets == ["cnndm", "pubmed", "cnn"]
    np.testing.assert_allclose(cm.matrix, [[40, np.nan, 36], [10, 30, 21]])
    np.testing.assert_allclose(cm.diff, [[0, np.nan, np.nan], [-30, 0, np.nan]])
    assert cm.no_in_domain() == ["cnn"]
    out = tmp_path / "out"
    assert cross_domain_main([str(root), "--out", str(out), "--metrics", "rouge_geo"]) == 0
    md = (out / "cross_domain.md").read_text()
    assert "Δ n/a in column(s) cnn: no in-domain result" in md
    assert "missing cells cnndm->pubmed" in md
    assert "heat map not drawn" not in md
    assert_png(out / "cross_domainsum_rouge_geo_m1_diff.png")


def test_base_row_first_and_other_tasks_left_out(tmp_path):
    root = tmp_path / "cross"
    write_run(root / "pubmed", "m1", {"domainsum_pubmed": {"rouge_geo": 0.30},
                                      "domainsum_cnndm": {"rouge_geo": 0.12},
                                      "domainsum_cnndm_2shot": {"rouge_geo": 0.99},
                                      "domainsum_genre": {"rouge_geo": 0.5}})
    write_run(root / "base", "m1", {"domainsum_pubmed": {"rouge_geo": 0.15},
                                    "domainsum_cnndm": {"rouge_geo": 0.18}},
              model_args="pretrained=gpt2")
    frame, problems = cd.load_cross(root)
    (cm,) = cd.matrices(frame, "rouge_geo")
    assert cm.sources == ["base", "pubmed"] and cm.targets == ["cnndm", "pubmed"]
    np.testing.assert_allclose(cm.matrix, [[18, 15], [12, 30]])  # the 2-shot 0.99 is not in
    np.testing.assert_allclose(cm.diff, [[np.nan, -15], [np.nan, 0]])
    assert cm.groups["base"] == "base"
    assert any("domainsum_cnndm_2shot, domainsum_genre" in p for p in problems)


def test_subsets_keep_only_those_domains(cross_root, tmp_path):
    root, _ = cross_root
    out = tmp_path / "sub"
    assert cross_domain_main([str(root), "--out", str(out), "--subset", "cnndm,cnn", "--no-plots"]) == 0
    part = (out / "cross_domainsum_rouge_geo_m1.md").read_text()
    assert "pubmed" not in part
    assert "| cnndm | genre | 40.00 | 36.00 |" in part and "| cnn | style | 33.00 | 38.00 |" in part
    with pytest.raises(SystemExit, match="unknown domain"):
        cross_domain_main([str(root), "--out", str(out), "--subsets", "cnndm,nosuch"])


def test_no_finite_cell_draws_no_heat_map(tmp_path):
    root = tmp_path / "cross"
    write_run(root / "cnndm", "m1", {"domainsum_cnndm": {"rouge_geo": "N/A"},
                                     "domainsum_cnn": {"rouge_geo": float("nan")}})
    out = tmp_path / "out"
    assert cross_domain_main([str(root), "--out", str(out), "--metrics", "rouge_geo"]) == 0
    assert not list(out.glob("*.png"))
    md = (out / "cross_domain.md").read_text()
    assert "scores heat map not drawn: no finite value in the 1x2 matrix" in md
    assert "Δ heat map not drawn: no finite value" in md
    assert "| cnndm | genre | n/a | n/a |" in md
    assert "not a finite number" in md  # the reader says which values were bad


def test_empty_root_is_reported(tmp_path):
    (tmp_path / "empty").mkdir()
    out = tmp_path / "out"
    assert cross_domain_main([str(tmp_path / "empty"), "--out", str(out)]) == 0
    md = (out / "cross_domain.md").read_text()
    assert "no <source>/ folders" in md and "no 'rouge_geo' values found" in md


def test_two_by_two_numbers(tmp_path):
    root = tmp_path / "cross"
    vals = {("cnndm", "cnndm"): (0.40, 0.90), ("cnndm", "pubmed"): (0.20, 0.80),
            ("pubmed", "cnndm"): (0.10, 0.85), ("pubmed", "pubmed"): (0.30, 0.88)}
    for src in ("cnndm", "pubmed"):
        write_run(root / src, "m1", {f"domainsum_{t}": {"rouge_geo": vals[(src, t)][0],
                                                        "bertscore_f1": vals[(src, t)][1]}
                                     for t in ("cnndm", "pubmed")})
    frame, _ = cd.load_cross(root)
    (cm,) = cd.matrices(frame, "bertscore_f1")
    np.testing.assert_allclose(cm.matrix, [[90, 80], [85, 88]])
    np.testing.assert_allclose(cm.diff, [[0, -8], [-5, 0]])
    assert not math.isnan(cm.in_domain("pubmed")) and math.isnan(cm.in_domain("cnn"))


def test_domain_order_follows_the_catalogue_by_level():
    from lm_eval_tasks.catalog import DOMAINSUM_LEVELS

    by_level = [d for domains in DOMAINSUM_LEVELS.values() for d in domains]
    assert cd.domain_order("domainsum", "level") == by_level
    assert cd.source_order("domainsum", ["wapo", "zz_custom", "cnndm", "base", "law"]) == \
        ["base", "cnndm", "wapo", "law", "zz_custom"]
    assert cd.group_of("domainsum", "zz_custom") == "other"
    assert cd.group_of("adapteval", "arxiv") == "adapteval"


def test_published_table6_beside_each_pair(cross_root, tmp_path):
    """Every train -> test pair and metric of DomainSum Table 6 the matrices hold gets the
    paper's values (each of its models, score and Δ) beside the user's cell, cited, with the
    differences named: the model fine-tuned (the same checkpoint as BART's row here, not
    Llama's) and the documents scored (the results file's n-samples) against the paper's 500."""
    from lm_eval_tasks import published

    root, files = cross_root
    data = json.loads(files["cnndm"].read_text())
    data["config"]["model_args"] = "pretrained=facebook/bart-base,peft=/ckpt"
    data["n-samples"] = {"domainsum_pubmed": {"original": 500, "effective": 24}}
    files["cnndm"].write_text(json.dumps(data))
    out = tmp_path / "out"
    assert cross_domain_main([str(root), "--out", str(out), "--no-plots"]) == 0
    records = json.loads((out / "cross_domain.json").read_text())["published"]
    paper = json.loads(published.data_file("domainsum").read_text(encoding="utf-8"))
    expected = [v for v in paper["values"] if v["table"] == "Table 6" and (v["training_subset"], v["subset"])
                in {(s, t) for s, t in shared.CELLS if s != t}]
    assert expected and len(records) == len(expected)
    md = (out / "cross_domain.md").read_text()
    for r in records:
        v = next(v for v in expected if (v["row"], v["column"], v["setting"]) == (r["row"], r["column"], r["setting"]))
        assert r["published"] == v["value"] and r["cite"] == f"DomainSum Table 6, row {v['row']}, column {v['column']}"
        key = {"ROUGE": "rouge_geo", "BERTScore": "bertscore_f1"}[v["metric"]]
        source, target = v["training_subset"], v["subset"]
        cell = harness_value(files[source], f"domainsum_{target}", key)
        in_domain = harness_value(files[target], f"domainsum_{target}", key)
        want = 100 * cell if v["setting"] == cd.CELL_SETTING else 100 * (cell - in_domain)
        assert r["run_value"] == pytest.approx(want)
        diffs = {d["field"]: d for d in r["differences"]}
        assert r["comparable"] is False
        if (source, target) == ("cnndm", "pubmed"):
            assert diffs["test documents"] == {"field": "test documents", "run": 24, "paper": 500}
            assert ("model" in diffs) == (v["model"] != "BART")
            assert f"24 of 500 {'test documents'}" in r["sentence"]
        else:
            assert diffs["model"]["run"] == "gpt2" and diffs["test documents"]["run"] == {
                "unknown": "not recorded in the run's results file"}
        assert f"{v['value']:.2f} (published)" in md and r["sentence"] in md
