"""End-to-end medqsum: the real lm_eval CLI, zero-shot and two-shot, the whole metric battery."""

import json
import math

import pytest

from conftest import own_samples, run_lm_eval, sample_files

pytestmark = pytest.mark.slow

METRICS = ("bleu", "sacrebleu", "rouge1", "rouge2", "rougeL", "rouge_geo", "rouge_mean", "meteor", "chrf",
           "bertscore_p", "bertscore_r", "bertscore_f1", "bertscore_sci_p", "bertscore_sci_r",
           "bertscore_sci_f1", "blanc_help", "blanc_tune", "perplexity", "mauve", "cider")


def meta(fixture_data_dir, minilm_path, tiny_mlm, tiny_causal_lm, **extra):
    return json.dumps({"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path,
                       "bertscore_layers": 6, "sci_bertscore_model": minilm_path, "sci_bertscore_layers": 6,
                       "blanc_model": str(tiny_mlm), "blanc_tune_epochs": 2, "ppl_model": str(tiny_causal_lm),
                       "mauve_model": str(tiny_causal_lm), **extra})


def check(res: dict, task: str, skipped: tuple[str, ...] = ()) -> dict:
    r = res["results"][task]
    m = res["configs"][task]["metadata"]
    reasons = {s["metric"]: s["reason"] for s in m["medqsum_skipped"]}
    for key in METRICS:
        v = r[f"{key},none"]
        if key in skipped:
            assert v is None or math.isnan(v), (task, key, v)
            assert reasons.get(key), (task, key, reasons)
        else:
            assert v is not None and math.isfinite(v), (task, key, v)
    assert res["higher_is_better"][task]["perplexity"] is False
    return m


def test_zero_and_two_shot_full_battery(tmp_path, tiny_causal_lm, tiny_mlm, fixture_data_dir, minilm_path):
    res = run_lm_eval([
        "--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
        "--include_path", "lm_eval_tasks", "--tasks", "medqsum_hcm,medqsum_hcm_2shot",
        "--limit", "4", "--log_samples", "--gen_kwargs", "max_gen_toks=16",
        "--metadata", meta(fixture_data_dir, minilm_path, tiny_mlm, tiny_causal_lm),
    ], tmp_path)
    for task in ("medqsum_hcm", "medqsum_hcm_2shot"):
        m = check(res, task)
        assert m["medqsum_skipped"] == []
        assert m["medqsum_details"]["sacrebleu_signature"].startswith("nrefs:1|case:mixed")
        assert m["medqsum_details"]["meteor_matching"] in ("exact+stem", "exact+stem+wordnet")
        assert set(m["medqsum_timings_s"]) >= {"bleu", "blanc_tune", "mauve"}
        assert m["medqsum_models_used"]["mauve"] == str(tiny_causal_lm)
    sample = json.loads(sample_files(tmp_path, "medqsum_hcm_2shot")[0].read_text().splitlines()[0])
    prompt = sample["arguments"]["gen_args_0"]["arg_0"]
    assert prompt.startswith("Summarize the patient's question below into one short, formal question")
    assert prompt.count("Question: ") == 3 and prompt.endswith("\nSummary:")
    assert "Doctor:" not in prompt
    assert sample["arguments"]["gen_args_0"]["arg_1"]["until"] == ["\n", "Question:"]
    zero_file = [f for f in sample_files(tmp_path, "medqsum_hcm") if "2shot" not in f.name][0]
    zero = json.loads(zero_file.read_text().splitlines()[0])
    assert zero["arguments"]["gen_args_0"]["arg_0"].count("Question: ") == 1
    # CIDEr-D, the family added to the battery: per-document values recomputed from the
    # logged generations and references (idf over the task's documents), and their mean reported
    from custom_metrics.families.cider import cider_documents

    samples = own_samples(tmp_path, "medqsum_hcm")
    assert len(samples) == 4
    logged = [s["cider"] for s in samples]
    again = cider_documents([s["filtered_resps"][0] for s in samples], [s["target"] for s in samples])
    assert logged == pytest.approx(again, abs=1e-12)
    assert res["results"]["medqsum_hcm"]["cider,none"] == pytest.approx(sum(logged) / len(logged), abs=1e-12)


def test_missing_model_is_skipped_others_run(tmp_path, tiny_causal_lm, tiny_mlm, fixture_data_dir, minilm_path):
    res = run_lm_eval([
        "--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
        "--include_path", "lm_eval_tasks", "--tasks", "medqsum_hcm", "--limit", "2",
        "--gen_kwargs", "max_gen_toks=8",
        "--metadata", meta(fixture_data_dir, minilm_path, tiny_mlm, tiny_causal_lm,
                           mauve_model=str(tmp_path / "no-gpt2-large")),
    ], tmp_path / "out")
    m = check(res, "medqsum_hcm", skipped=("mauve",))
    reason = m["medqsum_skipped"][0]["reason"]
    assert "no-gpt2-large" in reason and "mauve_model" in reason and "DOMSUM_MAUVE_MODEL" in reason
