"""Prompt fitting with a real tokenizer (the tiny GPT-2), BERTScore's encoder limit (MiniLM),
and ``domsum`` writing into a closed pipe (a subprocess).
"""

from __future__ import annotations


import pytest

from conftest import ROOT
from custom_metrics import registry


@pytest.mark.parametrize("task", ["domainsum_cnndm", "domainsum_cnndm_2shot"])
def test_each_prompt_is_fitted_on_its_own_as_rendered(task, tiny_causal_lm, fixture_data_dir):
    """A small window: each rendered prompt is measured; only overflowing documents are cut, from
    their tail, by what their own prompt needs; instruction, demonstrations and cue survive."""
    from transformers import AutoTokenizer

    from lm_eval_tasks.catalog import load_task
    from lm_eval_tasks.benchmarks.budget import fit_prompt, meter_from_metadata

    small = tiny_causal_lm
    tok = AutoTokenizer.from_pretrained(str(small))
    docs = load_task(task, metadata={"data_dir": str(fixture_data_dir)}).docs

    def render(prompt: str) -> str:  # what a chat template does: tokens the bare prompt does not have
        return "<|system|>be brief<|user|>" + prompt + "<|assistant|>"

    sizes = sorted(len(tok(render(d["prompt"]))["input_ids"]) for d in docs)
    limit = sizes[len(sizes) // 2]  # the median prompt fits exactly, longer ones must be cut
    meter = meter_from_metadata({"pretrained": str(small), "max_length": limit + 48}, 48)
    assert (meter.context, meter.generation, meter.limit) == (limit + 48, 48, limit)
    for d in docs:
        before = len(tok(render(d["prompt"]))["input_ids"])
        fitted = fit_prompt(task, render, d["prompt"], d["document"], meter)
        after = len(tok(fitted.context)["input_ids"])
        assert after == fitted.tokens <= limit
        head = d["prompt"][: d["prompt"].rfind(d["document"][:40])]
        assert fitted.context.startswith("<|system|>be brief<|user|>" + head)  # instruction + demonstrations
        assert fitted.context.endswith(("SUMMARY:<|assistant|>", "Summary:<|assistant|>"))
        if before <= limit:
            assert fitted.cut_tokens == 0 and fitted.context == render(d["prompt"])
        else:  # cut by what this prompt needs, not a split-wide cap
            assert fitted.cut_tokens >= before - limit and after >= limit - 8, (before, after, fitted.cut_tokens)


def test_max_length_wins_and_a_prompt_that_cannot_fit_is_a_clear_error(tiny_causal_lm, fixture_data_dir):
    from lm_eval_tasks.catalog import load_task
    from lm_eval_tasks.benchmarks.budget import PromptDoesNotFit, fit_prompt, meter_from_metadata
    from lm_eval_tasks.data.loader import DataError

    assert meter_from_metadata({"pretrained": str(tiny_causal_lm)}, 48).context == 4096  # n_positions
    assert meter_from_metadata({"pretrained": str(tiny_causal_lm), "max_length": 900}, 48).context == 900
    meter = meter_from_metadata({"pretrained": str(tiny_causal_lm), "max_length": 120}, 64)
    d = load_task("domainsum_cnndm_2shot", metadata={"data_dir": str(fixture_data_dir)}).docs[0]
    with pytest.raises(PromptDoesNotFit, match=r"domainsum_cnndm_2shot: the prompt does not fit.*of 120, with 64 "
                                              r"kept.*max_demo_words") as err:
        fit_prompt("domainsum_cnndm_2shot", str, d["prompt"], d["document"], meter)
    assert isinstance(err.value, DataError) and "\n" not in str(err.value)


def test_bertscore_counts_inputs_cut_at_the_encoder_limit(minilm_path, caplog):
    long_text = " ".join(["word"] * 700)
    batch = registry.Batch([long_text, "short summary"], ["a reference", "short reference"], ["", ""], [{}, {}])
    ctx = registry.Context(settings={"bertscore_model": minilm_path, "bertscore_layers": 6})
    registry.get("bertscore").score(batch, ctx)
    assert ctx.record["bertscore_truncated_inputs"] == 1
    assert "1 input text(s) reached the encoder's limit" in caplog.text


def test_domsum_output_into_a_closed_pipe_is_not_a_traceback():
    """`domsum tasks | head -1`: the reader leaves early; the command exits quietly."""
    import subprocess
    import sys

    from conftest import subprocess_env

    proc = subprocess.Popen([sys.executable, "-m", "lm_eval_tasks.cli", "tasks"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=subprocess_env(), cwd=ROOT)
    proc.stdout.close()  # before the command writes anything: its first write meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and "Traceback" not in err, err


def test_batch_size_auto_is_told_the_max_length_its_prompts_need(tiny_causal_lm, fixture_data_dir, tmp_path):
    """``--batch_size auto`` with a window far larger than any prompt: one line before the
    first generation (before the harness starts probing) with the ``max_length`` that the
    longest prompt of all the run's suite tasks plus ``max_gen_toks`` needs; run with it,
    the prompts are the same and nothing more is said. ``max_batch_size=1`` keeps the
    probe itself to one batch on CPU."""
    import contextlib
    import io
    import json
    import logging

    from transformers import AutoTokenizer

    from conftest import environment, own_samples, subprocess_env
    from lm_eval_tasks.harness import run_cli
    from lm_eval_tasks.harness_parts.fitting import batch_size_advice

    def run(model_args: str, out: str) -> tuple[str, dict, dict]:
        stream = io.StringIO()  # the harness's prints and the suite's log lines in one, in the order written
        said = logging.StreamHandler(stream)  # under pytest, log records go to its capture, not to stderr
        logging.getLogger("lm_eval_tasks").addHandler(said)
        with environment(subprocess_env()), contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream), \
                contextlib.ExitStack() as undo:
            undo.callback(logging.getLogger("lm_eval_tasks").removeHandler, said)
            run_cli(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm},{model_args}", "--batch_size",
                     "auto", "--tasks", "domainsum_cnndm,domainsum_cnndm_2shot", "--limit", "2", "--gen_kwargs",
                     "max_gen_toks=16", "--predict_only", "--metadata", json.dumps({"data_dir": str(fixture_data_dir)}),
                     "--log_samples", "--output_path", str(tmp_path / out)])
        [results] = (tmp_path / out).rglob("results_*.json")
        contexts = {(t, row["doc_id"]): row["arguments"]["gen_args_0"]["arg_0"]  # each task's own file only
                    for t in ("domainsum_cnndm", "domainsum_cnndm_2shot") for row in own_samples(tmp_path / out, t)}
        return stream.getvalue(), json.loads(results.read_text()), contexts

    said, results, contexts = run("max_batch_size=1", "auto")
    tok = AutoTokenizer.from_pretrained(str(tiny_causal_lm))
    needed = max(len(tok(c)["input_ids"]) for c in contexts.values()) + 16  # recomputed from what was sent
    budgets = [c["metadata"]["prompt_budget"] for c in results["configs"].values()]
    assert needed == max(b["prompt_tokens_max"] + b["generation"] for b in budgets) and len(contexts) == 4
    line = batch_size_advice(4096, needed)
    advised = -(-needed // 256) * 256
    assert line is not None and f"pass max_length={advised} in --model_args" in line and f"is {needed} tokens" in line
    # once, and before the harness starts probing (a progress bar may share its line)
    assert said.count("--batch_size auto probes") == said.count(line) == 1, said[-3000:]
    assert said.index(line) < said.index("Detecting largest batch size")

    said, results, again = run(f"max_batch_size=1,max_length={advised}", "advised")
    assert "--batch_size auto probes" not in said and again == contexts
    assert all(c["metadata"]["prompt_budget"]["cut_to_fit"] == 0 for c in results["configs"].values())
