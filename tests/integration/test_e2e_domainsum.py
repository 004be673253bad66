"""End-to-end: the real ``lm_eval`` CLI on the fixture mirror with tiny local models."""

import json
import math

import pytest

from conftest import run_lm_eval, sample_files, subprocess_env
from lm_eval_tasks import catalog
from lm_eval_tasks.catalog import DOMAINSUM_LEVELS as LEVELS

METRICS = ("rouge1", "rouge2", "rougeL", "rouge_geo", "rouge_mean",
           "bertscore_p", "bertscore_r", "bertscore_f1")

pytestmark = pytest.mark.slow


def assert_task_metrics(results: dict, task: str) -> None:
    res = results["results"][task]
    for m in METRICS:
        v = res[f"{m},none"]
        assert isinstance(v, float) and math.isfinite(v), (task, m, v)
        # BERTScore cosine can dip below 0 for unrelated text with MiniLM
        lo = -1.0 if m.startswith("bertscore") else 0.0
        assert lo <= v <= 1.0, (task, m, v)


def test_genre_group_with_metadata_overrides(tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path):
    meta = {"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path, "bertscore_layers": 6}
    res = run_lm_eval([
        "--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
        "--include_path", "lm_eval_tasks", "--tasks", "domainsum_genre",
        "--limit", "2", "--batch_size", "2", "--log_samples",
        "--metadata", json.dumps(meta),
    ], tmp_path)
    for d in LEVELS["genre"]:
        task = f"domainsum_{d}"
        assert_task_metrics(res, task)
        cfg_meta = res["configs"][task]["metadata"]
        assert cfg_meta["bertscore_model_used"] == minilm_path
        assert cfg_meta["bertscore_layers_used"] == 6
        assert res["n-samples"][task]["effective"] == 2
        samples = [json.loads(l) for f in sample_files(tmp_path, task) for l in f.read_text().splitlines()]
        assert len(samples) == 2
        prompt = samples[0]["arguments"]["gen_args_0"]["arg_0"]
        assert prompt.startswith("You are an expert at summarization.") and prompt.endswith("SUMMARY:")
    assert "rouge_geo,none" in res["results"]["domainsum_genre"]


def test_topic_two_shot_with_env_overrides(tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path):
    env = subprocess_env(DOMSUM_DATA_DIR=str(fixture_data_dir), DOMSUM_BERTSCORE_MODEL=minilm_path,
                         DOMSUM_BERTSCORE_LAYERS="6")
    res = run_lm_eval([
        "--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
        "--include_path", "lm_eval_tasks", "--tasks", "domainsum_topic_2shot",
        "--limit", "2", "--log_samples", "--apply_chat_template",
    ], tmp_path, env=env)
    for d in LEVELS["topic"]:
        task = f"domainsum_{d}_2shot"
        assert_task_metrics(res, task)
        assert res["configs"][task]["metadata"]["bertscore_model_used"] == minilm_path
        samples = [json.loads(l) for f in sample_files(tmp_path, task) for l in f.read_text().splitlines()]
        prompt = samples[0]["arguments"]["gen_args_0"]["arg_0"]
        assert prompt.startswith("<|user|>\nYou are an expert at summarization.")
        assert prompt.endswith("Summary:\n<|assistant|>\n")
        assert prompt.count("Summary:") == 3 and "Example 2:\nDocument:" in prompt
        assert len(samples[0]["doc"]["demo_ids"]) == 2


def test_all_thirty_leaf_tasks(tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path):
    env = subprocess_env(DOMSUM_DATA_DIR=str(fixture_data_dir), DOMSUM_BERTSCORE_MODEL=minilm_path,
                         DOMSUM_BERTSCORE_LAYERS="6")
    res = run_lm_eval([
        "--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
        "--include_path", "lm_eval_tasks", "--tasks", "domainsum",
        "--limit", "1", "--gen_kwargs", "max_gen_toks=16",
    ], tmp_path, env=env)
    leaves = [f"domainsum_{d}{s}" for lv in LEVELS.values() for d in lv for s in ("", "_2shot")]
    assert sorted(leaves) == sorted(t.name for t in catalog.select("domainsum"))
    for task in leaves:
        assert_task_metrics(res, task)
    for g in ("domainsum_genre", "domainsum_style_2shot"):
        members = [t for t in leaves if t in res["group_subtasks"][g]]
        assert res["results"][g]["bertscore_f1,none"] == pytest.approx(
            sum(res["results"][t]["bertscore_f1,none"] for t in members) / len(members))
    # the whole benchmark lists zero- and two-shot levels but never averages them together
    assert "bertscore_f1,none" not in res["results"].get("domainsum", {})


def test_seq2seq_backend(tmp_path, tiny_seq2seq_lm, fixture_data_dir, minilm_path):
    meta = {"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path, "bertscore_layers": 6}
    res = run_lm_eval([
        "--model", "hf", "--model_args", f"pretrained={tiny_seq2seq_lm},backend=seq2seq",
        "--include_path", "lm_eval_tasks", "--tasks", "domainsum_samsum",
        "--limit", "2", "--metadata", json.dumps(meta),
    ], tmp_path)
    assert_task_metrics(res, "domainsum_samsum")


def test_include_path_module_prints_task_dir():
    import subprocess
    import sys
    from pathlib import Path

    out = subprocess.run([sys.executable, "-m", "lm_eval_tasks"], capture_output=True, text=True, check=True)
    p = Path(out.stdout.strip())
    assert p.is_absolute() and (p / "domainsum" / "domainsum_cnndm.yaml").is_file()


def test_report_and_correlate_read_real_harness_output(tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path):
    """The analysis scripts on what ``lm_eval`` really writes (not hand-made JSON)."""
    import subprocess
    import sys

    from conftest import ROOT

    meta = {"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path, "bertscore_layers": 6}
    run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                 "--include_path", "lm_eval_tasks", "--tasks", "domainsum_genre,domainsum_genre_2shot",
                 "--limit", "2", "--log_samples", "--gen_kwargs", "max_gen_toks=8",
                 "--metadata", json.dumps(meta)], tmp_path / "runs")
    py = lambda *a: subprocess.run([sys.executable, *a], cwd=ROOT, env=subprocess_env(),  # noqa: E731
                                   capture_output=True, text=True, timeout=600)
    stats = py("-m", "lm_eval_tasks.cli", "domain-stats", "--level", "genre", "--data-dir", str(fixture_data_dir),
               "--out", str(tmp_path / "stats"), "--quiet", "--workers", "1")
    assert stats.returncode == 0, stats.stderr
    rep = py("-m", "lm_eval_tasks.cli", "report", str(tmp_path / "runs"), "--out", str(tmp_path / "report"), "--bootstrap", "50")
    assert rep.returncode == 0, rep.stderr
    table = (tmp_path / "report" / "tables" / "domainsum_settings.md").read_text()
    for d in LEVELS["genre"]:
        assert f"| {tiny_causal_lm.name} | {d} |" in table
    assert "not a finite number" not in (tmp_path / "report" / "report.md").read_text()
    cor = py("-m", "lm_eval_tasks.cli", "correlate", str(tmp_path / "runs"), "--stats", str(tmp_path / "stats" / "domain_stats.json"),
             "--out", str(tmp_path / "corr"))
    assert cor.returncode == 0, cor.stderr
    assert "| doc_length |" in (tmp_path / "corr" / "correlations.md").read_text()
    # models by the report's system labels, not the output folder's mangled path
    import csv

    with open(tmp_path / "corr" / "correlations_detail.csv", encoding="utf-8") as fh:
        assert {row["model"] for row in csv.DictReader(fh)} == {tiny_causal_lm.name}
