"""Reports, correlations and cross-domain matrices on hand-built harness folders."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sstats

from lm_eval_tasks.commands import correlate, cross_domain, report
from lm_eval_tasks.commands.results import load_results

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


def png_ok(path: Path):
    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(raw) > 5000
    w, h = struct.unpack(">II", raw[16:24])
    assert w > 300 and h > 200


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
                    for j, m in enumerate(correlate.MEASURES)} for i, d in enumerate(GENRE)}
    stats = {"domains": {d: {"level": "genre", "domain": d, **measures[d]} for d in GENRE}}
    sp = tmp_path / "domain_stats.json"
    sp.write_text(json.dumps(stats))
    zero = [0.30, 0.12, 0.25, 0.18, 0.21]
    two = [0.33, 0.10, 0.29, 0.15, 0.26]
    write_run(tmp_path / "runs", "m1",
              {**{f"domainsum_{d}": {"rouge_geo": z} for d, z in zip(GENRE, zero)},
               **{f"domainsum_{d}_2shot": {"rouge_geo": t} for d, t in zip(GENRE, two)}})
    # a second model lacking a task and one metric: still works
    write_run(tmp_path / "runs", "m2", {f"domainsum_{d}": {"rouge_geo": 0.1 + 0.01 * i}
                                        for i, d in enumerate(GENRE[:2])})
    out = tmp_path / "out"
    assert correlate.main([str(tmp_path / "runs"), "--stats", str(sp), "--out", str(out)]) == 0
    import pandas as pd

    detail = pd.read_csv(out / "correlations_detail.csv")
    avg = pd.read_csv(out / "correlations.csv")
    for m in correlate.MEASURES:
        x = [measures[d][m] for d in GENRE]
        rs, ps = [], []
        for setting, y in (("zero-shot", zero), ("2shot", two)):
            row = detail[(detail.measure == m) & (detail.model == "m1") & (detail.setting == setting)].iloc[0]
            r, p = sstats.pearsonr(x, y)
            rho, _ = sstats.spearmanr(x, y)
            assert row.pearson_r == pytest.approx(r) and row.pearson_p == pytest.approx(p)
            assert row.spearman_rho == pytest.approx(rho)
            rs.append(r)
            ps.append(p)
        a = avg[(avg.measure == m) & (avg.model == "m1")].iloc[0]
        assert a.pearson_r == pytest.approx(np.mean(rs)) and a.pearson_p == pytest.approx(np.mean(ps))
    m2 = detail[detail.model == "m2"]
    assert m2.pearson_r.isna().all() and (m2.note.str.contains("only 2")).all()
    md = (out / "correlations.md").read_text()
    assert "**genre**" in md and "only 2 domain(s)" in md
    assert correlate.mark(0.001) == "**" and correlate.mark(0.03) == "*" and correlate.mark(0.2) == ""


# ------------------------------------------------------------------ cross-domain


def test_cross_domain_2x2(tmp_path):
    root = tmp_path / "cross"
    vals = {("cnndm", "cnndm"): (0.40, 0.90), ("cnndm", "pubmed"): (0.20, 0.80),
            ("pubmed", "cnndm"): (0.10, 0.85), ("pubmed", "pubmed"): (0.30, 0.88)}
    for src in ("cnndm", "pubmed"):
        write_run(root / src, "m1", {f"domainsum_{t}": {"rouge_geo": vals[(src, t)][0],
                                                        "bertscore_f1": vals[(src, t)][1]}
                                     for t in ("cnndm", "pubmed")})
    frame, problems = cross_domain.load_cross(root)
    mats = cross_domain.matrices(frame, "rouge_geo")
    r = mats[("genre", "m1")]
    assert r["domains"] == ["cnndm", "pubmed"]
    np.testing.assert_allclose(r["matrix"], [[40, 20], [10, 30]])
    np.testing.assert_allclose(r["diff"], [[0, -10], [-30, 0]])
    out = tmp_path / "out"
    assert cross_domain.main([str(root), "--out", str(out)]) == 0
    md = (out / "cross_domain.md").read_text()
    assert "-30.00" in md and "-10.00" in md and "BERTScore" in md
    for metric in ("rouge_geo", "bertscore_f1"):
        png_ok(out / f"cross_{metric}_genre_m1.png")
    # a missing cell is reported, not fatal
    (root / "pubmed" / "m1" / f"results_{TS}.json").unlink()
    write_run(root / "pubmed", "m1", {"domainsum_pubmed": {"rouge_geo": 0.3}})
    assert cross_domain.main([str(root), "--out", str(tmp_path / "o2"), "--no-plots"]) == 0
    assert "missing cells pubmed->cnndm" in (tmp_path / "o2" / "cross_domain.md").read_text()


# ------------------------------------------------------------------ reports


PAIRS = [("the cat sat on the mat", "a cat sat on a mat today"),
         ("police arrested two men", "two men were arrested by police"),
         ("the market rose sharply", "stocks rose sharply on monday"),
         ("rain is expected tomorrow", "heavy rain expected tomorrow in the north"),
         ("team wins the final", "the home team won the cup final")] * 4


def test_bootstrap_brackets_and_is_seeded():
    from custom_metrics.rouge import aggregate_rouge, rouge_per_document

    per = rouge_per_document([p for p, _ in PAIRS], [r for _, r in PAIRS])
    a = report.bootstrap_rouge(per, 500, seed=7)
    b = report.bootstrap_rouge(per, 500, seed=7)
    assert a == b
    agg = aggregate_rouge(per)
    for k in ("rouge1", "rouge2", "rougeL", "rouge_geo"):
        p, lo, hi = a[k]
        assert p == pytest.approx(agg[k])
        assert lo <= p <= hi and lo < hi
    assert report.bootstrap_rouge(per, 500, seed=8) != a


def test_report_tables_and_plots(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "m1", {"domainsum_cnndm": {"rouge_geo": 0.20, "bertscore_f1": 0.85},
                           "domainsum_cnndm_2shot": {"rouge_geo": 0.25, "bertscore_f1": 0.86},
                           "domainsum_pubmed": {"rouge_geo": 0.15},  # bertscore missing
                           "domainsum_pubmed_2shot": {"rouge_geo": float("nan"), "bertscore_f1": 0.8},
                           "adapteval_arxiv": {"rouge_geo": 0.1, "bertscore_f1": 0.8, "dvo": 12.5},
                           "adapteval_pubmed": {"rouge_geo": 0.12, "bertscore_f1": 0.82, "dvo": 20.0}},
              samples={"domainsum_cnndm": PAIRS})
    write_run(runs, "m2", {"domainsum_cnndm": {"rouge_geo": 0.22, "bertscore_f1": 0.84},
                           "adapteval_arxiv": {"rouge_geo": 0.11, "bertscore_f1": 0.81, "dvo": 10.0}})
    ft = tmp_path / "ft"
    write_run(ft, "m1", {"domainsum_cnndm": {"rouge_geo": 0.30, "bertscore_f1": 0.88}})
    out = tmp_path / "out"
    assert report.main([str(runs), f"{ft}=fine-tuned", "--out", str(out),
                        "--bootstrap", "200", "--seed", "1"]) == 0
    shots = (out / "domainsum_shots.md").read_text()
    row = next(line for line in shots.splitlines() if line.startswith("| m1 | genre | cnndm"))
    assert "20.00 [" in row and "25.00" in row and "+5.00" in row and "+1.00" in row
    pub = next(line for line in shots.splitlines() if line.startswith("| m1 | genre | pubmed"))
    assert "15.00" in pub and "n/a" in pub
    ftm = (out / "domainsum_finetuned.md").read_text()
    assert "30.00" in ftm and "+10.00" in ftm and "+3.00" in ftm
    ada = (out / "adapteval.md").read_text()
    assert "12.50" in ada and "80.00" in ada and "20.00" in ada and "n/a" in ada
    assert (out / "adapteval.tex").read_text().startswith(r"\begin{table}")
    assert (out / "domainsum_shots.csv").exists()
    notes = (out / "report.md").read_text()
    assert "bertscore_f1 missing for domainsum_pubmed" in notes and "absent" in notes
    assert "recomputed from the samples" in notes  # hand-made samples != results value
    ci = (out / "bootstrap_ci.csv").read_text()
    assert "domainsum_cnndm" in ci
    # the CI in the table is reproducible with the seed
    assert report.main([str(runs), f"{ft}=fine-tuned", "--out", str(tmp_path / "o2"),
                        "--bootstrap", "200", "--seed", "1", "--no-plots"]) == 0
    assert (tmp_path / "o2" / "domainsum_shots.md").read_text() == shots
    png_ok(out / "bar_domainsum.png")
    png_ok(out / "bar_adapteval.png")


def test_report_empty_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    assert report.main([str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 0
    assert "no results_" in (tmp_path / "o" / "report.md").read_text()
