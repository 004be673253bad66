"""``domsum report`` on real ``lm_eval`` runs of tiny models, and its paired tests against scipy.

The session fixture runs the real harness CLI on the fixture mirror for two systems
(two tiny GPT-2s, zero- and two-shot) and one LoRA adapter trained with ``python -m
finetune`` on SAMSum (evaluated in-domain and on CNN/DM); the tests then check every
number the report prints against the per-document scores the harness logged, read
here straight from the samples files.
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, own_samples, report_table, run_lm_eval, subprocess_env
from lm_eval_tasks.commands import report
from helpers.report import _scipy_paired, holm_adjusted as _holm


TASKS_0 = ["domainsum_cnndm", "domainsum_samsum"]
TASKS_2 = ["domainsum_cnndm_2shot", "domainsum_samsum_2shot"]
LIMIT = 3


@pytest.fixture(scope="session")
def report_runs(tmp_path_factory, tiny_causal_lm, fixture_data_dir, minilm_path):
    """Harness folders: systems A and B (0- and 2-shot), A + a SAMSum LoRA adapter (0-shot)."""
    from lm_eval_tasks import include_path
    from lm_eval_tasks.demo import demo_model, training_pairs

    root = tmp_path_factory.mktemp("report_runs")
    # system B is the demo's model (a few seconds of training): its summaries have words, so
    # ROUGE is not 0 everywhere and the ROUGE figures have something to show
    pairs, _ = training_pairs(TASKS_0, fixture_data_dir)
    system_b, _, _ = demo_model(root / "models" / "tiny-b", pairs, steps=150, seed=1, progress=False)
    adapter = root / "models" / "samsum-lora"
    proc = subprocess.run([sys.executable, "-m", "finetune", "--task", "domainsum_samsum", "--base",
                           str(tiny_causal_lm), "--method", "lora", "--preset", "domainsum", "--data-dir",
                           str(fixture_data_dir), "--batch-size", "2", "--max-steps", "2",
                           "--report-to", "none", "--output", str(adapter)],
                          cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    meta = json.dumps({"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path, "bertscore_layers": 6})
    common = ["--model", "hf", "--include_path", include_path(), "--limit", str(LIMIT), "--batch_size", "4",
              "--metadata", meta, "--log_samples"]
    runs = root / "runs"
    run_lm_eval([*common, "--model_args", f"pretrained={tiny_causal_lm}", "--tasks", ",".join(TASKS_0 + TASKS_2)],
                runs)
    run_lm_eval([*common, "--model_args", f"pretrained={system_b}", "--tasks", ",".join(TASKS_0 + TASKS_2)], runs)
    run_lm_eval([*common, "--model_args", f"pretrained={tiny_causal_lm},peft={adapter}",
                 "--tasks", ",".join(TASKS_0)], runs)
    out = root / "report"
    assert report.main([str(runs), "--out", str(out), "--no-progress"]) == 0
    return {"runs": runs, "out": out, "a": tiny_causal_lm, "b": system_b, "adapter": adapter}


def _logged(runs: Path, model_dir_part: str, task: str) -> dict[str, dict]:
    """doc id -> the harness's logged per-document scores, read straight from the samples file."""
    [path] = [p for p in runs.glob(f"*/samples_{task}_*.jsonl") if model_dir_part in p.parent.name
              and p.name[len(f"samples_{task}_"):][:4].isdigit()]  # not samples_<task>_2shot_...
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        out[rec["doc"]["id"]] = {k: rec[k] for k in rec["metrics"]}
    return out


def _mean(values) -> float:
    return sum(values) / len(values)


def _geo(triples) -> float:
    means = np.mean(np.asarray(triples, dtype=float), axis=0)
    return float(np.prod(means) ** (1 / 3)) if (means > 0).all() else 0.0


def test_scores_equal_the_logged_per_document_scores(report_runs):
    rows = list(csv.DictReader(open(report_runs["out"] / "scores.csv", encoding="utf-8")))
    checked = 0
    for row in rows:
        model = Path(row["adapter"] or row["base"]).name
        logged = _logged(report_runs["runs"], model, row["task"])
        per = [d[row["key"]] for d in logged.values() if row["key"] in d]
        value = float(row["value"])
        expected = _geo(per) if row["key"] == "rouge_geo" else _mean(per)
        assert value == pytest.approx(expected, abs=1e-12), row
        assert int(row["n_documents"]) == len(per) == LIMIT
        if row["key"] != "rouge_geo":  # mean keys: the harness's closed-form stderr is recorded too
            assert float(row["stderr"]) == pytest.approx(float(np.std(per, ddof=1) / math.sqrt(len(per))))
        assert float(row["ci_low"]) <= value + 1e-12 <= float(row["ci_high"]) + 2e-12
        checked += 1
    # 3 systems; A and B ran 4 tasks, the adapter 2; each task reports 6 ROUGE/BERTScore keys (+ rouge_geo)
    assert checked == (4 + 4 + 2) * 8


def test_settings_table_deltas_and_p_values(report_runs):
    rows = report_table(report_runs["out"], "domainsum_settings")
    a_name = Path(report_runs["a"]).name
    assert {(r["System"], r["Subset"]) for r in rows} == {(a_name, "cnndm"), (a_name, "samsum"),
                                                           ("tiny-b", "cnndm"), ("tiny-b", "samsum")}
    for r in rows:
        folder = a_name if r["System"] == a_name else "tiny-b"
        zero = _logged(report_runs["runs"], folder, f"domainsum_{r['Subset']}")
        two = _logged(report_runs["runs"], folder, f"domainsum_{r['Subset']}_2shot")
        docs = sorted(zero)
        x0 = [zero[d]["bertscore_f1"] for d in docs]
        x2 = [two[d]["bertscore_f1"] for d in docs]
        assert float(r["BERTScore 0-shot"].split()[0]) == pytest.approx(100 * _mean(x0), abs=0.005)
        assert float(r["BERTScore 2-shot"].split()[0]) == pytest.approx(100 * _mean(x2), abs=0.005)
        assert float(r["Δ BERTScore (2−0)"]) == pytest.approx(100 * (_mean(x2) - _mean(x0)), abs=0.005)
        assert r["n 0-shot"] == r["n 2-shot"] == r["n shared"] == str(LIMIT)
        p = _scipy_paired(x2, x0, _mean)  # 3 documents: the exact test on both sides
        assert float(r["p (BERTScore, 2−0)"].rstrip("*")) == pytest.approx(p, abs=0.0005)


def test_finetuned_table_pairs_the_adapter_with_its_base(report_runs):
    rows = report_table(report_runs["out"], "domainsum_finetuned")
    a_name = Path(report_runs["a"]).name
    [row] = rows  # in-domain only: the adapter on SAMSum; its CNN/DM run is in the cross-domain matrix
    assert row["System"] == f"{a_name} + samsum-lora" and row["Trained on"] == "domainsum_samsum"
    assert row["n"] == row["n base"] == row["n shared"] == str(LIMIT)
    tuned = _logged(report_runs["runs"], "samsum-lora", "domainsum_samsum")
    base = _logged(report_runs["runs"], a_name, "domainsum_samsum")
    docs = sorted(tuned)
    assert float(row["BERTScore"].split()[0]) == pytest.approx(100 * _mean([tuned[d]["bertscore_f1"] for d in docs]),
                                                               abs=0.005)
    assert float(row["BERTScore base"].split()[0]) == pytest.approx(
        100 * _mean([base[d]["bertscore_f1"] for d in docs]), abs=0.005)
    cross = report_table(report_runs["out"], "domainsum_cross_domain_bertscore_f1")
    assert [r["trained on \\ evaluated on"] for r in cross] == ["samsum"]  # no invented rows
    off = _logged(report_runs["runs"], "samsum-lora", "domainsum_cnndm")
    assert float(cross[0]["cnndm"]) == pytest.approx(100 * _mean([d["bertscore_f1"] for d in off.values()]),
                                                     abs=0.005)


def test_significance_table_pairs_systems_in_one_setting(report_runs):
    rows = report_table(report_runs["out"], "significance")
    assert rows and all(r["A"].endswith(r["B"][r["B"].rindex("("):]) for r in rows)  # same setting
    a_name = Path(report_runs["a"]).name
    r = next(r for r in rows if r["Subset"] == "cnndm" and r["Key"] == "BERTScore"
             and {r["A"], r["B"]} == {f"{a_name} (2-shot)", "tiny-b (2-shot)"})
    first = a_name if r["A"].startswith(a_name) else "tiny-b"
    second = "tiny-b" if first == a_name else a_name
    a = _logged(report_runs["runs"], first, "domainsum_cnndm_2shot")
    b = _logged(report_runs["runs"], second, "domainsum_cnndm_2shot")
    docs = sorted(a)
    xa, xb = [a[d]["bertscore_f1"] for d in docs], [b[d]["bertscore_f1"] for d in docs]
    assert float(r["A − B"]) == pytest.approx(100 * (_mean(xa) - _mean(xb)), abs=0.005)
    assert float(r["p"].rstrip("*")) == pytest.approx(_scipy_paired(xa, xb, _mean), abs=0.0005)
    assert int(r["n shared"]) == int(r["n A"]) == int(r["n B"]) == LIMIT
    assert float(r["A score"]) == pytest.approx(100 * _mean(xa), abs=0.005)
    assert float(r["B score"]) == pytest.approx(100 * _mean(xb), abs=0.005)


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict] = []
        self.tables = 0
        self.stack: list[str] = []
        self.named: set[str] = set()

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))
        if tag == "table":  # a report table shown as one table per metric counts once
            name = dict(attrs).get("data-table")
            self.tables += name is None or name not in self.named
            self.named.add(name)


def test_html_is_self_contained_and_embeds_every_figure(report_runs):
    import base64

    out = report_runs["out"]
    page = _Page()
    text = (out / "report.html").read_text(encoding="utf-8")
    page.feed(text)
    page.close()
    drawn = sorted((out / "figures").glob("*.png"))
    assert drawn, "no figure drawn"
    assert len(page.images) == len(drawn)
    for img in page.images:
        assert img["src"].startswith("data:image/png;base64,") and img["alt"]
        raw = base64.b64decode(img["src"].split(",", 1)[1])
        assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    embedded = {base64.b64decode(i["src"].split(",", 1)[1]) for i in page.images}
    assert embedded == {p.read_bytes() for p in drawn}
    assert "http://" not in text and "https://" not in text and "<script" not in text
    names = {p.stem for p in drawn}
    assert {"bars_domainsum_rouge_geo", "bars_domainsum_bertscore_f1", "dist_domainsum_rouge_mean",
            "radar_domainsum", "overlap_domainsum"} <= names
    md = (out / "report.md").read_text(encoding="utf-8")
    assert page.tables == md.count("\n| ---") + md.count("\n|---") + 1  # every table, plus the runs table
    for ext in ("md", "csv", "tex"):
        assert (out / "tables" / f"domainsum_settings.{ext}").is_file()


def _side(label: str) -> str:
    """The samples folder part of a run label such as ``tiny-b (2-shot)``."""
    system = label.rsplit(" (", 1)[0]
    return "samsum-lora" if system.endswith("+ samsum-lora") else system


def test_every_comparison_has_a_verdict_recomputed_from_the_samples(report_runs):
    """comparisons.json against the logged per-document scores: Δ, n, the interval holding Δ, p
    against scipy's exact paired permutation test, Holm within each table and metric, the minimum
    detectable difference from the per-document differences, the verdict, and the page's sentence."""
    from scipy import stats as sps

    out, runs = report_runs["out"], report_runs["runs"]
    data = json.loads((out / "comparisons.json").read_text(encoding="utf-8"))
    comparisons = data["comparisons"]
    assert data["correction"] == "holm" and data["alpha"] == 0.05 and data["power"] == 0.8
    # 0- vs 2-shot of 2 systems x 2 subsets, the adapter vs its base on SAMSum, and between systems:
    # A, B and the adapter pairwise at 0-shot in 2 subsets, A and B at 2-shot in 2; 3 keys each
    assert [c["table"] for c in comparisons[::3]] == ["domainsum_settings"] * 4 + ["domainsum_finetuned"] \
        + ["significance"] * (3 * 2 + 2)
    families: dict[tuple[str, str], list[int]] = {}
    for i, c in enumerate(comparisons):
        families.setdefault((c["table"], c["metric"]), []).append(i)
        tasks = c["task"].split(" vs ")
        fa, fb = _side(c["a"]), _side(c["b"])
        la = _logged(runs, fa, tasks[0])
        lb = _logged(runs, fb, tasks[-1])
        docs = [d for d in la if d in lb]
        xa, xb = [la[d][c["metric"]] for d in docs], [lb[d][c["metric"]] for d in docs]
        stat = _geo if c["metric"] == "rouge_geo" else _mean
        first, second = (xb, xa) if c["direction"] == "b-a" else (xa, xb)
        delta = stat(first) - stat(second)
        assert c["n"] == len(docs) == LIMIT
        assert c["delta"] == pytest.approx(delta, abs=1e-12)
        assert c["ci_low"] - 1e-12 <= c["delta"] <= c["ci_high"] + 1e-12
        assert c["p"] == pytest.approx(_scipy_paired(first, second, stat), abs=1e-9)
        assert c["smallest_possible_p"] == 2 / 2 ** LIMIT  # the exact test over 3 documents
        if stat is _mean:  # at the family's level, 0.05 / m (Bonferroni)
            diff = np.asarray(first) - np.asarray(second)
            t = sps.t.ppf(1 - 0.025 / c["family_size"], len(docs) - 1) + sps.t.ppf(0.8, len(docs) - 1)
            if np.std(diff, ddof=1) <= 1e-9 * max(map(abs, first + second)):  # identical differences: no spread
                assert c["min_detectable_delta"] is None and "no spread" in c["min_detectable_reason"]
            else:
                assert c["min_detectable_delta"] == pytest.approx(t * np.std(diff, ddof=1) / math.sqrt(len(docs)))
        # 3 documents: p >= 0.25, so no verdict can name a winner, and the interval shown holds 0
        assert c["verdict"] == "no difference detected" and c["ci_low"] <= 0 <= c["ci_high"]
    for (table, metric), members in families.items():
        expected = _holm([comparisons[i]["p"] for i in members])
        assert [comparisons[i]["p_corrected"] for i in members] == pytest.approx(expected)
        assert all(comparisons[i]["family_size"] == len(members) for i in members)
    text = (out / "report.html").read_text(encoding="utf-8")
    said = {int(i): html.unescape(s) for i, s in re.findall(r'<li data-comparison="(\d+)">(.*?)</li>', text)}
    assert sorted(said) == list(range(len(comparisons)))
    for i, c in enumerate(comparisons):
        s, k = said[i], 100.0
        assert s.startswith(f"{c['task'].split('_')[1].split(' ')[0]}, ")
        assert f"no difference detected between {c['a']} and {c['b']}." in s
        level = f"{100 * (1 - 0.05 / c['family_size']):.4g}"
        assert c["ci_level"] == pytest.approx(1 - 0.05 / c["family_size"])
        assert f"= {c['delta'] * k:+.2f}, {level} % CI [{c['ci_low'] * k:.2f}, {c['ci_high'] * k:.2f}]" in s
        assert f"p = {c['p']:.3f}, Holm-corrected p = {c['p_corrected']:.3f}" in s
        assert f"n = {c['n']} documents scored on both sides" in s
        assert s.endswith("Too few documents to detect any difference: with 3 the permutation test cannot "
                          "give p below 0.250.")


def test_rescore_keeps_the_encoder_and_stemming_the_run_recorded(report_runs, tmp_path):
    """The run scored BERTScore with MiniLM at layer 6 (its --metadata); re-scoring its samples
    with no flag takes them from the results file (the suite's default, roberta-large, is not
    even on this machine), says so, and gives the logged per-document numbers back. A flag
    still wins, and the command says it kept the flag."""
    a_name = Path(report_runs["a"]).name
    [samples] = [p for p in report_runs["runs"].glob("*/samples_domainsum_cnndm_[0-9][0-9][0-9][0-9]-*.jsonl")
                 if a_name in p.parent.name]
    logged = _logged(report_runs["runs"], a_name, "domainsum_cnndm")
    proc = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "rescore", str(samples), "--metrics",
                           "rouge,bertscore", "--bootstrap", "0", "--no-progress", "--out", str(tmp_path / "a")],
                          cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if "settings the run recorded" in x)
    [results] = samples.parent.glob("results_" + samples.stem.rsplit("_", 1)[-1] + ".json")
    used = json.loads(results.read_text())["configs"]["domainsum_cnndm"]["metadata"]["bertscore_model_used"]
    assert f"({results.name}), taken: " in line and f"bertscore_model={used}" in line
    assert "bertscore_layers=6" in line and "rouge_stemming=False" in line
    rows = [json.loads(x) for x in (tmp_path / "a" / f"{samples.stem}.scores.jsonl").read_text().splitlines()]
    for row in rows:
        for key in ("bertscore_f1", "rouge1", "rougeL"):
            assert row[key] == pytest.approx(logged[row["id"]][key], abs=1e-6), (key, row["id"])
    flagged = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "rescore", str(samples), "--metrics", "rouge",
                              "--bootstrap", "0", "--no-progress", "--out", str(tmp_path / "b"), "--metadata",
                              '{"rouge_stemming": true}'],
                             cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=600)
    assert flagged.returncode == 0, flagged.stderr[-3000:]
    assert "given by flags instead: rouge_stemming=True" in flagged.stdout
    summary = json.loads((tmp_path / "b" / f"{samples.stem}.summary.json").read_text())
    assert summary["settings_from_run"]["kept_from_flags"] == {"rouge_stemming": True}
    assert summary["record"]["rouge_stemming"] is True


def test_rescore_refuses_a_prediction_table_without_task_or_benchmark(tmp_path):
    table = tmp_path / "preds.csv"
    table.write_text("prediction,reference\nthe cat sat,a cat sat\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "rescore", str(table), "--metrics", "rouge",
                           "--no-progress"], cwd=ROOT, env=subprocess_env(), capture_output=True, text=True,
                          timeout=300)
    err = proc.stderr.strip()
    assert proc.returncode == 2 and "\n" not in err and "no --task or --benchmark" in err and "none is guessed" in err
    assert not list(tmp_path.glob("*.summary.json"))


def test_the_runs_table_shows_limit_document_set_and_demonstration_pool(report_runs):
    """Provenance from each results file: --limit, where the documents came from, for a
    two-shot run the split its demonstrations were drawn from (a mirror without the paper's
    pool falls back to another split, and only this column shows it), and how many
    generations were empty."""
    text = (report_runs["out"] / "report.html").read_text(encoding="utf-8")
    section = text[text.index('<h2 id="runs">'):]
    rows = [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(<td.*?)</tr>", section)]
    assert len(rows) == 10
    for system, _settings, task, _setting, n, limit, source, pool, empty, results_name in rows:
        [results] = [p for p in report_runs["runs"].glob(f"*/{results_name}")
                     if task in json.loads(p.read_text())["configs"]]
        meta = json.loads(results.read_text())["configs"][task]["metadata"]
        assert (n, limit) == (str(LIMIT), str(LIMIT)) and source == str(meta.get("data_source") or meta["data_dir"])
        assert pool == (str(meta["demo_pool"]) if task.endswith("_2shot") else "—")
        samples = own_samples(results.parent, task)  # empty generations recounted from the logged ones
        assert empty == f"{sum(not s['resps'][0][0].strip() for s in samples)} of {len(samples)}", task
