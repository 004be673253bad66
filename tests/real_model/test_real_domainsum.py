"""DomainSum with a real instruct model (SmolLM2-135M-Instruct) through the real harness CLI.

What a tiny random model cannot show: a chat template adds tokens to every prompt, so
a prompt fitted without it is left-truncated by the harness; generations open with a
blank line, so counting on stripped text under-counts those that ran to
``max_gen_toks``. Each run here uses a window (640 tokens) that the two-shot prompts
overflow and the zero-shot ones do not, and every assertion recomputes its number from
the logged samples. A LoRA adapter of the same model, trained for two steps with
``python -m finetune``, is loaded back with ``peft=`` and reported beside its base.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURE_DATA, ROOT, minilm_dir, own_samples, report_table, run_lm_eval, subprocess_env
from lm_eval_tasks.runtime import HARNESS_CLI

TASKS = ("domainsum_cnndm", "domainsum_cnndm_2shot")
WINDOW, GEN = 640, 32
INSTRUCTION = "You are an expert at summarization."
METRICS = ("rouge1", "rouge2", "rougeL", "rouge_mean", "bertscore_f1")


def _meta(**extra) -> str:
    return json.dumps({"data_dir": str(FIXTURE_DATA), "bertscore_model": minilm_dir(), "bertscore_layers": 6,
                       **extra})


@pytest.fixture(scope="module")
def runs(smollm2_checkpoint, tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """A plain and a chat-template run of both tasks, 3 documents each."""
    out = {}
    for label, extra in (("plain", []), ("chat", ["--apply_chat_template"])):
        folder = tmp_path_factory.mktemp(f"smollm2_{label}")
        res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={smollm2_checkpoint},max_length={WINDOW}",
                           "--tasks", ",".join(TASKS), "--limit", "3", "--log_samples",
                           "--gen_kwargs", f"max_gen_toks={GEN}", "--metadata", _meta(), *extra],
                          folder, env=subprocess_env(OMP_NUM_THREADS="2"))
        out[label] = (folder, res)
    return out


@pytest.fixture(scope="module")
def lora_run(smollm2_checkpoint, tmp_path_factory) -> tuple[Path, Path, dict]:
    """A LoRA adapter of the real model (2 steps on CNN/DM's train split) and a plain run of
    the zero-shot task with it loaded back by ``peft=``: (adapter, run folder, results)."""
    root = tmp_path_factory.mktemp("smollm2_lora")
    adapter = root / "cnndm-lora"
    env = subprocess_env(OMP_NUM_THREADS="2")
    proc = subprocess.run([sys.executable, "-m", "finetune", "--task", TASKS[0], "--base", str(smollm2_checkpoint),
                           "--method", "lora", "--preset", "domainsum", "--data-dir", str(FIXTURE_DATA),
                           "--batch-size", "2", "--max-steps", "2", "--learning-rate", "1e-3",
                           "--report-to", "none", "--output", str(adapter)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = run_lm_eval(["--model", "hf", "--model_args",
                       f"pretrained={smollm2_checkpoint},peft={adapter},max_length={WINDOW}",
                       "--tasks", TASKS[0], "--limit", "3", "--log_samples", "--gen_kwargs", f"max_gen_toks={GEN}",
                       "--metadata", _meta()], root / "run", env=env)
    return adapter, root / "run", res


@pytest.fixture(scope="module")
def tokenizer(smollm2_checkpoint):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(smollm2_checkpoint))


@pytest.mark.parametrize("label", ["plain", "chat"])
def test_reported_means_are_the_logged_scores(runs, label):
    folder, res = runs[label]
    for task in TASKS:
        samples = own_samples(folder, task)
        assert [s["doc_id"] for s in samples] == [0, 1, 2]
        for key in METRICS:
            per_doc = [s[key] for s in samples]
            assert res["results"][task][f"{key},none"] == pytest.approx(sum(per_doc) / 3, abs=1e-12), (task, key)
        # a real model summarizes: its ROUGE-1 is far from a random model's 0
        assert res["results"][task]["rouge1,none"] > 0.15, res["results"][task]


@pytest.mark.parametrize("label", ["plain", "chat"])
def test_every_prompt_keeps_its_instruction_and_fits_the_window(runs, label, tokenizer):
    folder, res = runs[label]
    for task in TASKS:
        for s in own_samples(folder, task):
            prompt = s["arguments"]["gen_args_0"]["arg_0"]
            n = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])  # as the hf backend encodes it
            assert n <= WINDOW - GEN, (task, n)
            if label == "chat":
                assert prompt.startswith("<|im_start|>system\n") and f"<|im_start|>user\n{INSTRUCTION}" in prompt
                assert prompt.endswith("<|im_end|>\n<|im_start|>assistant\n")
            else:
                assert prompt.startswith(INSTRUCTION)
                assert prompt.endswith("SUMMARY:" if task == "domainsum_cnndm" else "\n\nSummary:")
            if task.endswith("2shot"):
                assert prompt.count("Example 1:\nDocument:") == 1 and "Example 2:\nDocument:" in prompt
                assert "Now, summarize the following text:\n\nDocument: " in prompt


@pytest.mark.parametrize("label", ["plain", "chat"])
def test_counts_equal_what_the_samples_show(runs, label, tokenizer):
    folder, res = runs[label]
    for task in TASKS:
        samples = own_samples(folder, task)
        meta = res["configs"][task]["metadata"]
        budget, gen = meta["prompt_budget"], meta["generation"]
        cut = [s["doc"]["document"].strip() not in s["arguments"]["gen_args_0"]["arg_0"] for s in samples]
        assert (budget["window"], budget["generation"], budget["documents"]) == (WINDOW, GEN, 3)
        assert budget["cut_to_fit"] == sum(cut), (task, budget)
        assert budget["measured_with"].startswith("HFLM backend, tokenizer")
        lengths = [len(tokenizer(s["arguments"]["gen_args_0"]["arg_0"], add_special_tokens=False)["input_ids"])
                   for s in samples]
        assert budget["prompt_tokens_max"] == max(lengths)
        raw = [len(tokenizer(s["resps"][0][0], add_special_tokens=False)["input_ids"]) for s in samples]
        assert gen["hit_max_gen_toks"] == sum(n >= GEN for n in raw), raw
        assert gen["generations"] == 3 and gen["empty"] == sum(not s["resps"][0][0].strip() for s in samples)
    # the window bites where it should: every two-shot prompt is cut, no zero-shot one
    assert res["configs"]["domainsum_cnndm_2shot"]["metadata"]["prompt_budget"]["cut_to_fit"] == 3
    assert res["configs"]["domainsum_cnndm"]["metadata"]["prompt_budget"]["cut_to_fit"] == 0


def test_a_window_too_small_for_the_fixed_part_is_one_paragraph(smollm2_checkpoint, tmp_path):
    proc = subprocess.run(
        [*HARNESS_CLI, "--model", "hf", "--model_args",
         f"pretrained={smollm2_checkpoint},max_length=256",
         "--tasks", "domainsum_cnndm_2shot", "--limit", "1", "--gen_kwargs", f"max_gen_toks={GEN}",
         "--metadata", _meta(), "--output_path", str(tmp_path)],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    # `domsum run` prints a suite error as its own one line (`lm_eval` itself: the harness's excepthook, "error: ...")
    err = [line for line in proc.stderr.splitlines() if line.startswith(("domsum run: error: ", "error: "))]
    assert len(err) == 1, proc.stderr[-2000:]
    assert re.search(r"task domainsum_cnndm_2shot \(document .+\): the prompt does not fit the model's window.*"
                     r"of 256, with 32 kept for the summary.*max_length.*max_demo_words", err[0]), err[0]
    assert not list(tmp_path.rglob("results_*.json"))


def test_lora_adapter_of_the_real_model_loads_back(runs, lora_run):
    """The adapter changes what the model writes; the prompts are the base run's own."""
    adapter, folder, res = lora_run
    tuned, base = own_samples(folder, TASKS[0]), own_samples(runs["plain"][0], TASKS[0])
    assert [s["arguments"] for s in tuned] == [s["arguments"] for s in base]
    assert [s["resps"] for s in tuned] != [s["resps"] for s in base]
    for key in METRICS:
        assert res["results"][TASKS[0]][f"{key},none"] == pytest.approx(sum(s[key] for s in tuned) / 3, abs=1e-12)
    card = json.loads((adapter / "run_card.json").read_text())
    assert card["metrics"]["global_step"] == 2 and card["task"] == TASKS[0]


def test_report_keeps_chat_and_plain_runs_apart(runs, lora_run, smollm2_checkpoint, tmp_path):
    """Same model, two settings: two systems, each compared with itself across shots;
    the adapter is a third, paired with its base on the documents both ran."""
    out = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "report", str(runs["plain"][0]),
                           str(runs["chat"][0]), str(lora_run[1]), "--out", str(out), "--no-progress"],
                          cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["System"]: r for r in report_table(out, "domainsum_settings")}
    name = smollm2_checkpoint.name
    assert set(rows) == {name, f"{name} (chat)"}, rows.keys()
    for label, system in (("plain", name), ("chat", f"{name} (chat)")):
        zero, two = (own_samples(runs[label][0], t) for t in TASKS)
        x0, x2 = [s["bertscore_f1"] for s in zero], [s["bertscore_f1"] for s in two]
        row = rows[system]
        assert (row["n 0-shot"], row["n 2-shot"], row["n shared"]) == ("3", "3", "3")
        assert float(row["Δ BERTScore (2−0)"]) == pytest.approx(100 * (sum(x2) - sum(x0)) / 3, abs=0.005)
    [tuned] = report_table(out, "domainsum_finetuned")
    assert tuned["System"] == f"{name} + cnndm-lora" and tuned["Trained on"] == TASKS[0]
    assert tuned["n"] == tuned["n base"] == tuned["n shared"] == "3"
    x = [s["bertscore_f1"] for s in own_samples(lora_run[1], TASKS[0])]
    base = [s["bertscore_f1"] for s in own_samples(runs["plain"][0], TASKS[0])]
    assert float(tuned["BERTScore"].split()[0]) == pytest.approx(100 * sum(x) / 3, abs=0.005)
    assert float(tuned["BERTScore base"].split()[0]) == pytest.approx(100 * sum(base) / 3, abs=0.005)
