"""The harness contract end to end, through the real ``lm_eval`` CLI.

Reported means equal the means of the logged per-document scores; standard errors are
numbers; few-shot tasks report their shots; ``--predict_only`` scores nothing; a scorer
that cannot be had stops the run before generation; a scorer that fails after
generation costs neither the results nor the samples.
"""

from __future__ import annotations

import json
import math
import subprocess
import time

import pytest

from conftest import ROOT, own_samples, run_lm_eval, subprocess_env
from lm_eval_tasks.runtime import HARNESS_CLI

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vocab_dir(tmp_path_factory, fixture_data_dir):
    """A PubMed domain vocabulary built from the fixture train split (library call)."""
    from custom_metrics.families.dvo import build_vocabulary_counts, write_vocabulary
    from lm_eval_tasks.data.loader import load_split

    out = tmp_path_factory.mktemp("vocab")
    docs = [r["document"] for r in load_split("adapteval", "pubmed", "train", fixture_data_dir)]
    write_vocabulary(out / "adapteval" / "pubmed.tsv", build_vocabulary_counts(docs), benchmark="adapteval",
                     subset="pubmed")
    return out


def test_reported_means_are_means_of_logged_per_document_scores(tmp_path, tiny_causal_lm, fixture_data_dir,
                                                                minilm_path):
    from transformers import AutoTokenizer

    meta = {"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path, "bertscore_layers": 6}
    res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                       "--include_path", "lm_eval_tasks", "--tasks", "domainsum_cnndm,domainsum_cnndm_2shot",
                       "--limit", "3", "--log_samples", "--gen_kwargs", "max_gen_toks=24",
                       "--metadata", json.dumps(meta)], tmp_path, plain=True)  # `lm_eval` itself
    assert res["n-shot"]["domainsum_cnndm"] == 0 and res["n-shot"]["domainsum_cnndm_2shot"] == 2
    for task in ("domainsum_cnndm", "domainsum_cnndm_2shot"):
        samples = own_samples(tmp_path, task)
        assert len(samples) == 3
        row = res["results"][task]
        for key in ("rouge1", "rouge2", "rougeL", "rouge_mean", "bertscore_p", "bertscore_r", "bertscore_f1"):
            per_doc = [s[key] for s in samples]
            assert all(isinstance(v, float) for v in per_doc), (task, key, per_doc)
            assert row[f"{key},none"] == pytest.approx(sum(per_doc) / len(per_doc), abs=1e-12), (task, key)
            stderr = row[f"{key}_stderr,none"]
            assert isinstance(stderr, float) and math.isfinite(stderr), (task, key, stderr)
        # the corpus key folds the same per-document ROUGE triples
        triples = [s["rouge_geo"] for s in samples]
        means = [sum(t[i] for t in triples) / 3 for i in range(3)]
        geo = math.prod(means) ** (1 / 3) if min(means) > 0 else 0.0
        assert row["rouge_geo,none"] == pytest.approx(geo, abs=1e-12)
        assert row["rouge_geo_stderr,none"] == "N/A"
        meta_out = res["configs"][task]["metadata"]
        assert meta_out["bertscore_layers_used"] == 6 and meta_out["bertscore_model_used"] == minilm_path
        assert meta_out["rouge_stemming"] is False and meta_out["rouge_stemming_source"] == "release convention of domainsum"
        assert "lm-eval" in meta_out["library_versions"]
        assert meta_out["settings_used"]["bertscore_layers"] == {"value": 6, "from": "metadata"}
        assert "scorer_failures" not in meta_out
        budget = meta_out["prompt_budget"]  # the tiny model's 4,096 positions hold every fixture prompt
        assert (budget["window"], budget["generation"], budget["documents"], budget["cut_to_fit"]) == (4096, 24, 3, 0)
        assert budget["measured_with"] == f"HFLM backend, tokenizer {tiny_causal_lm}"
        gen = meta_out["generation"]
        assert gen["generations"] == 3 and gen["max_gen_toks"] == 24
        assert gen["empty"] == sum(not s["filtered_resps"][0].strip() for s in samples)
        tok = AutoTokenizer.from_pretrained(str(tiny_causal_lm))
        lengths = [len(tok(s["resps"][0][0], add_special_tokens=False)["input_ids"]) for s in samples]
        assert gen["hit_max_gen_toks"] == sum(n >= 24 for n in lengths), lengths


def test_predict_only_loads_no_scorer(tmp_path, tiny_causal_lm, fixture_data_dir):
    # an encoder that does not exist would stop a scoring run; --predict_only never looks
    meta = {"data_dir": str(fixture_data_dir), "bertscore_model": str(tmp_path / "no-encoder")}
    res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                       "--include_path", "lm_eval_tasks", "--tasks", "domainsum_samsum",
                       "--limit", "2", "--predict_only", "--gen_kwargs", "max_gen_toks=8",
                       "--metadata", json.dumps(meta)], tmp_path)
    assert "rouge1,none" not in res["results"]["domainsum_samsum"]
    assert res["configs"]["domainsum_samsum"]["metadata"]["scoring"] == "skipped (--predict_only)"
    samples = own_samples(tmp_path, "domainsum_samsum")
    assert len(samples) == 2 and all(isinstance(s["filtered_resps"][0], str) for s in samples)
    assert all("rouge1" not in s for s in samples)


def _lm_eval(args: list[str], out, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([*HARNESS_CLI, *args, "--output_path", str(out)], cwd=ROOT,
                          env=env or subprocess_env(), capture_output=True, text=True, timeout=600)


def test_unavailable_encoder_stops_before_generation(tmp_path, tiny_causal_lm, fixture_data_dir):
    meta = {"data_dir": str(fixture_data_dir), "bertscore_model": str(tmp_path / "no-encoder")}
    t0 = time.monotonic()
    proc = _lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                     "--include_path", "lm_eval_tasks", "--tasks", "domainsum_samsum", "--limit", "2",
                     "--metadata", json.dumps(meta)], tmp_path / "out")
    assert proc.returncode != 0
    assert "stopping before generation" in proc.stderr and "bertscore_model" in proc.stderr
    assert "DOMSUM_BERTSCORE_MODEL" in proc.stderr
    assert "Requesting API" not in proc.stderr and time.monotonic() - t0 < 120


def test_num_fewshot_mismatch_is_a_clear_error(tmp_path, tiny_causal_lm, fixture_data_dir):
    proc = _lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                     "--include_path", "lm_eval_tasks", "--tasks", "domainsum_samsum_2shot", "--limit", "1",
                     "--num_fewshot", "5", "--metadata", json.dumps({"data_dir": str(fixture_data_dir)})],
                    tmp_path / "out")
    assert proc.returncode != 0 and "holds 2 demonstrations" in proc.stderr


def test_dead_judge_after_generation_keeps_results_and_samples(tmp_path, tiny_causal_lm, fixture_data_dir,
                                                               minilm_path, vocab_dir):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    meta = {"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path, "bertscore_layers": 6,
            "vocab_dir": str(vocab_dir), "judge_model": "stub", "judge_base_url": f"http://127.0.0.1:{port}/v1",
            "judge_max_retries": 0, "judge_timeout": 2, "judge_cache": "off", "preflight": False}
    res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                       "--include_path", "lm_eval_tasks", "--tasks", "adapteval_pubmed_judged",
                       "--limit", "2", "--log_samples", "--gen_kwargs", "max_gen_toks=8",
                       "--metadata", json.dumps(meta)], tmp_path,
                      env=subprocess_env(OPENAI_API_KEY="sk-test"))
    row = res["results"]["adapteval_pubmed_judged"]
    assert math.isfinite(row["rouge1,none"]) and math.isfinite(row["dvo,none"])
    assert math.isnan(row["coherence,none"])
    samples = own_samples(tmp_path, "adapteval_pubmed_judged")
    assert len(samples) == 2 and all(isinstance(s["rouge1"], float) for s in samples)
    record = res["configs"]["adapteval_pubmed_judged"]["metadata"]
    failed = record.get("scorer_failures", {}).get("judge", "") + json.dumps(record.get("judge_usage", {}))
    assert failed, record


def test_dead_judge_endpoint_stops_before_generation(tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path,
                                                     vocab_dir):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    meta = {"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path, "bertscore_layers": 6,
            "vocab_dir": str(vocab_dir), "judge_model": "stub", "judge_base_url": f"http://127.0.0.1:{port}/v1"}
    proc = _lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                     "--include_path", "lm_eval_tasks", "--tasks", "adapteval_pubmed_judged", "--limit", "1",
                     "--metadata", json.dumps(meta)], tmp_path / "out")
    assert proc.returncode != 0 and "judge endpoint" in proc.stderr and "judge_base_url" in proc.stderr
