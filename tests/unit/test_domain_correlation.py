"""The results reader and measure–performance correlations on hand-built harness folders."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sstats

from lm_eval_tasks.commands import correlate
from lm_eval_tasks.report import domain_correlation
from lm_eval_tasks.results import load_results

TS = "2024-05-01T10-00-00.000001"
GENRE = ("cnndm", "pubmed", "reddit", "samsum", "wikihow")


def write_run(folder: Path, model: str, tasks: dict[str, dict], ts: str = TS,
              model_args="pretrained=gpt2", samples: dict[str, list] | None = None):
    d = folder / model
    d.mkdir(parents=True, exist_ok=True)
    results = {t: {"alias": t, **{f"{k},none": v for k, v in m.items()},
                   **{f"{k}_stderr,none": "N/A" for k in m}} for t, m in tasks.items()}
    data = {"results": results, "groups": {}, "configs": {t: {"metadata": {}} for t in tasks},
            "config": {"model": "hf", "model_args": model_args}, "n-shot": {}, "n-samples": {}}
    (d / f"results_{ts}.json").write_text(json.dumps(data))
    for task, pairs in (samples or {}).items():
        with open(d / f"samples_{task}_{ts}.jsonl", "w") as fh:
            for i, (pred, ref) in enumerate(pairs):
                fh.write(json.dumps({"doc_id": i, "doc": {"document": "d", "summary": ref,
                                                          "id": str(i)},
                                     "resps": [[pred]], "filtered_resps": [pred],
                                     "rouge1": [i, pred, ref], "filter": "none"}) + "\n")


# ------------------------------------------------------------------ reader


def test_reader_latest_setting_and_bad_values(tmp_path):
    write_run(tmp_path / "a", "m1", {"domainsum_cnndm": {"rouge_geo": 0.1}}, ts="2024-01-01T00-00-00.1")
    write_run(tmp_path / "a", "m1", {"domainsum_cnndm": {"rouge_geo": 0.2, "dvo": "N/A"},
                                     "domainsum_cnndm_2shot": {"rouge_geo": float("nan")}})
    write_run(tmp_path / "b", "m1", {"domainsum_cnndm": {"rouge_geo": 0.3}},
              model_args={"pretrained": "gpt2", "peft": "/ckpt"})
    res = load_results([tmp_path / "a", tmp_path / "b"])
    f = res.frame
    v = f[(f.setting == "zero-shot") & (f.metric == "rouge_geo")]["value"].tolist()
    assert v == [0.2]  # the latest file wins
    assert f[f.setting == "fine-tuned"]["value"].tolist() == [0.3]
    assert f[(f.setting == "2shot")]["value"].isna().all()
    assert any("dvo" in p for p in res.problems) and any("nan" in p for p in res.problems)
    lab = load_results([f"{tmp_path / 'a'}=fine-tuned"]).frame
    assert set(lab["setting"]) == {"fine-tuned"}
    assert load_results([tmp_path / "missing"]).problems


# ------------------------------------------------------------------ correlations


def test_correlations_match_scipy(tmp_path):
    measures = {d: {m: float(i * 3 + j * (i % 2) + (i * j) % 5)
                    for j, m in enumerate(domain_correlation.MEASURES)} for i, d in enumerate(GENRE)}
    stats = {"domains": {d: {"level": "genre", "domain": d, **measures[d]} for d in GENRE}}
    sp = tmp_path / "domain_stats.json"
    sp.write_text(json.dumps(stats))
    zero = [0.30, 0.12, 0.25, 0.18, 0.21]
    two = [0.33, 0.10, 0.29, 0.15, 0.26]
    write_run(tmp_path / "runs", "m1",
              {**{f"domainsum_{d}": {"rouge_geo": z} for d, z in zip(GENRE, zero)},
               **{f"domainsum_{d}_2shot": {"rouge_geo": t} for d, t in zip(GENRE, two)}},
              model_args="pretrained=org/m1")
    # a second model lacking a task and one metric: still works
    write_run(tmp_path / "runs", "m2", {f"domainsum_{d}": {"rouge_geo": 0.1 + 0.01 * i}
                                        for i, d in enumerate(GENRE[:2])}, model_args="pretrained=org/m2")
    out = tmp_path / "out"
    assert correlate.main([str(tmp_path / "runs"), "--stats", str(sp), "--out", str(out)]) == 0
    import pandas as pd

    detail = pd.read_csv(out / "correlations_detail.csv")
    avg = pd.read_csv(out / "correlations.csv")
    for m in domain_correlation.MEASURES:
        x = [measures[d][m] for d in GENRE]
        rs, ps = [], []
        for setting, y in (("zero-shot", zero), ("2shot", two)):
            row = detail[(detail.measure == m) & (detail.model == "org/m1") & (detail.setting == setting)].iloc[0]
            r, p = sstats.pearsonr(x, y)
            rho, _ = sstats.spearmanr(x, y)
            assert row.pearson_r == pytest.approx(r) and row.pearson_p == pytest.approx(p)
            assert row.spearman_rho == pytest.approx(rho)
            rs.append(r)
            ps.append(p)
        a = avg[(avg.measure == m) & (avg.model == "org/m1")].iloc[0]
        assert a.pearson_r == pytest.approx(np.mean(rs)) and a.pearson_p == pytest.approx(np.mean(ps))
    m2 = detail[detail.model == "org/m2"]
    assert m2.pearson_r.isna().all() and (m2.note.str.contains("only 2")).all()
    md = (out / "correlations.md").read_text()
    assert "**genre**" in md and "only 2 domain(s)" in md
    assert domain_correlation.mark(0.001) == "**" and domain_correlation.mark(0.03) == "*" and domain_correlation.mark(0.2) == ""


def test_correlate_refuses_a_file_that_is_not_domain_stats(tmp_path, capsys):
    """Not domain-stats output: the library raises AnalysisError, the command prints it, exit 1."""
    from custom_metrics.analysis.errors import AnalysisError

    bad = tmp_path / "stats.json"
    bad.write_text(json.dumps({"domains": {"cnndm": {"doc_length": 1.0}}}))
    with pytest.raises(AnalysisError, match="no 'domain' column"):
        domain_correlation.load_stats(bad)
    write_run(tmp_path / "runs", "m1", {"domainsum_cnndm": {"rouge_geo": 0.2}})
    assert correlate.main([str(tmp_path / "runs"), "--stats", str(bad), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err.strip() == f"{bad}: no 'domain' column/records; is it domain_stats output?"
