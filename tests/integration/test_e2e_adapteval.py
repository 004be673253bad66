"""End-to-end AdaptEval: vocabularies, zero/two-shot, LoRA adapter, judged variant."""

import json
import math
import subprocess
import sys

import pytest

from conftest import ROOT, run_lm_eval, sample_files, subprocess_env
from lm_eval_tasks.benchmarks.adapteval.build import build_docs


pytestmark = pytest.mark.slow
DOMAINS = ("arxiv", "pubmed", "govreport")
METRICS = ("rouge1", "rouge2", "rougeL", "rouge_geo", "rouge_mean", "bertscore_p", "bertscore_r", "bertscore_f1")


@pytest.fixture(scope="module")
def vocab_dir(tmp_path_factory, fixture_data_dir):
    out = tmp_path_factory.mktemp("vocab")
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks.cli", "build-vocab", "--benchmark", "adapteval", "--all",
         "--data-dir", str(fixture_data_dir), "--vocab-dir", str(out), "--no-progress"],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for d in DOMAINS:
        assert (out / "adapteval" / f"{d}.tsv").is_file()
    return out


def meta(fixture_data_dir, minilm_path, vocab_dir, **extra):
    return json.dumps({"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path,
                       "bertscore_layers": 6, "vocab_dir": str(vocab_dir), **extra})


def check(res: dict, task: str) -> None:
    r = res["results"][task]
    for m in METRICS:
        v = r[f"{m},none"]
        assert math.isfinite(v) and (-1.0 if m.startswith("bert") else 0.0) <= v <= 1.0, (task, m, v)
    assert 0.0 <= r["dvo,none"] <= 100.0


def test_zero_and_two_shot_groups(tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path, vocab_dir):
    res = run_lm_eval([
        "--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
        "--include_path", "lm_eval_tasks", "--tasks", "adapteval,adapteval_2shot",
        "--limit", "2", "--log_samples", "--gen_kwargs", "max_gen_toks=24",
        "--metadata", meta(fixture_data_dir, minilm_path, vocab_dir),
    ], tmp_path)
    for d in DOMAINS:
        for suffix in ("", "_2shot"):
            check(res, f"adapteval_{d}{suffix}")
        assert res["configs"][f"adapteval_{d}"]["metadata"]["vocabulary_used"].endswith(f"{d}.tsv")
        # the loader's removal counts reach the results metadata (lm-eval gives the loader a copy)
        _, facts = build_docs(d, 0, f"adapteval_{d}", json.loads(meta(fixture_data_dir, minilm_path, vocab_dir)))
        removed = facts["filter_removed"]
        assert set(removed) >= {"extractive", "long_document"}
        assert res["configs"][f"adapteval_{d}"]["metadata"]["filter_removed"] == removed
    sample = json.loads(sample_files(tmp_path, "adapteval_govreport_2shot")[0].read_text().splitlines()[0])
    prompt = sample["arguments"]["gen_args_0"]["arg_0"]
    assert prompt.startswith("You are an expert at summarization. Proceed to summarize the following text.\nTEXT: ")  # Table 7
    assert prompt.count("\nSUMMARY:") == 3 and prompt.endswith("\nSUMMARY:")
    assert "\n\n" not in sample["arguments"]["gen_args_0"]["arg_1"]["until"]


def test_missing_vocabulary_fails_before_generation(tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path):
    cmd = [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
           "--include_path", "lm_eval_tasks", "--tasks", "adapteval_pubmed", "--limit", "1",
           "--metadata", meta(fixture_data_dir, minilm_path, tmp_path / "empty")]
    proc = subprocess.run(cmd, cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "domsum build-vocab --benchmark adapteval --subsets pubmed" in proc.stderr
    assert "stopping before generation" in proc.stderr


def test_lora_adapter_loads_with_peft(tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path, vocab_dir):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(tiny_causal_lm)
    lora = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"],
                                           init_lora_weights=False, task_type="CAUSAL_LM"))
    with torch.no_grad():  # a strong update, so greedy generations must change
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 2.0)
    adapter = tmp_path / "adapter"
    lora.save_pretrained(adapter)
    args = ["--include_path", "lm_eval_tasks", "--tasks", "adapteval_arxiv", "--limit", "2", "--log_samples",
            "--gen_kwargs", "max_gen_toks=16", "--metadata", meta(fixture_data_dir, minilm_path, vocab_dir)]
    res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm},peft={adapter}", *args],
                      tmp_path / "peft")
    check(res, "adapteval_arxiv")
    assert str(adapter) in json.dumps(res["config"]["model_args"])
    base_res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}", *args], tmp_path / "base")
    gen = lambda d: [json.loads(l)["resps"] for l in sample_files(d, "adapteval_arxiv")[0].read_text().splitlines()]  # noqa: E731
    assert gen(tmp_path / "peft") != gen(tmp_path / "base")
    check(base_res, "adapteval_arxiv")


def test_judged_variant_against_stub_server(tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path, vocab_dir):
    from helpers.judge_server import StubJudgeServer, Text

    with StubJudgeServer() as server:
        server.on("Fluency", Text("2"))
        server.set_default(Text("4"))
        m = meta(fixture_data_dir, minilm_path, vocab_dir, judge_model="stub-judge",
                 judge_base_url=server.url, judge_cache=str(tmp_path / "judge.sqlite"))
        args = ["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                "--include_path", "lm_eval_tasks", "--tasks", "adapteval_pubmed_judged", "--limit", "2",
                "--gen_kwargs", "max_gen_toks=16", "--metadata", m]
        env = subprocess_env(OPENAI_API_KEY="test-key")
        res = run_lm_eval(args, tmp_path / "run1", env=env)
        r = res["results"]["adapteval_pubmed_judged"]
        assert r["domain_adaptation,none"] == pytest.approx(4.0)
        assert r["coherence,none"] == pytest.approx(4.0)
        assert r["fluency,none"] == pytest.approx(2.0)
        assert r["judge_parse_failures,none"] == 0
        check(res, "adapteval_pubmed_judged")
        first = server.received
        assert first >= 5  # 2 documents x (domain adaptation, coherence) + fluency per distinct summary
        run_lm_eval(args, tmp_path / "run2", env=env)
        assert server.received == first  # second run served from the cache


def test_fm_variant_against_stub_server(tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path, vocab_dir):
    """adapteval_pubmed_fm: FM and its baseline from the stub judge, details written per document."""
    from helpers.judge_server import StubJudgeServer, Text

    facets = {"background": "bg", "method": "m", "result": "r", "conclusion": "c"}
    with StubJudgeServer() as server:
        server.on("background/method/result/conclusion of this work", Text(json.dumps(facets)))
        server.on("alignment (1-3)", Text("3"))
        server.on("alignment (1-4)", Text("2"))
        details = tmp_path / "fm_details.jsonl"
        m = meta(fixture_data_dir, minilm_path, vocab_dir, judge_model="stub-judge", judge_base_url=server.url,
                 judge_cache=str(tmp_path / "judge.sqlite"), fm_details=str(details))
        res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                           "--include_path", "lm_eval_tasks", "--tasks", "adapteval_pubmed_fm", "--limit", "2",
                           "--log_samples", "--gen_kwargs", "max_gen_toks=16", "--metadata", m],
                          tmp_path / "run", env=subprocess_env(OPENAI_API_KEY="test-key"))
    r = res["results"]["adapteval_pubmed_fm"]
    check(res, "adapteval_pubmed_fm")
    preds = [json.loads(line)["filtered_resps"][0].strip()
             for line in sample_files(tmp_path / "run", "adapteval_pubmed_fm")[0].read_text().splitlines()]
    # a non-empty summary: background 3/3, method 2/4, result 2/4, conclusion 3/3;
    # an empty one has every facet at the lowest rating (1/3, 1/4, 1/4, 1/3)
    full = 0.1 * 1 + 0.3 * 0.5 + 0.3 * 0.5 + 0.3 * 1
    empty = 0.1 / 3 + 0.3 * 0.25 + 0.3 * 0.25 + 0.3 / 3
    expected = sum(full if p else empty for p in preds) / len(preds)
    assert r["fm,none"] == pytest.approx(expected)
    assert r["fm_vanilla,none"] == pytest.approx(0.5)  # every vanilla rating is "2" of 4
    assert r["fm_failures,none"] == 0
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    assert len(rows) == 2 and all(len(row["fractions"]) == 4 and row["reference_facets"] == facets for row in rows)
    assert res["configs"]["adapteval_pubmed_fm"]["metadata"]["fm_variant_used"] == "zero"
