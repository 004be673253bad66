"""API models through the real harness CLI against ``transformers serve`` (SmolLM2).

``local-chat-completions`` sends JSON messages and has no tokenizer unless one is
given: prompts are then fitted by the characters-per-token bound, which must be safe
(what the server's own chat template makes of the request fits the window).
``local-completions`` with ``tokenizer=`` is measured in the model's own tokens.
"""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURE_DATA, minilm_dir, run_lm_eval, subprocess_env

GEN = 16
TASK = "domainsum_cnndm_2shot"


def _run(folder, model: str, model_args: str, *extra: str) -> tuple[dict, list[dict]]:
    meta = json.dumps({"data_dir": str(FIXTURE_DATA), "bertscore_model": minilm_dir(), "bertscore_layers": 6})
    res = run_lm_eval(["--model", model, "--model_args", model_args, "--tasks", TASK, "--limit", "1",
                       "--log_samples", "--gen_kwargs", f"max_gen_toks={GEN}", "--metadata", meta, *extra],
                      folder, env=subprocess_env(OMP_NUM_THREADS="1"))
    samples = [json.loads(line) for f in folder.rglob(f"samples_{TASK}_*.jsonl") for line in f.read_text().splitlines()]
    return res, sorted(samples, key=lambda s: s["doc_id"])


def test_chat_completions_without_a_tokenizer_fit_by_a_safe_bound(smollm2_server, tmp_path):
    from transformers import AutoTokenizer

    window = 1000  # the bound (3 characters a token) cuts these two-shot prompts; the real count is lower
    res, samples = _run(tmp_path, "local-chat-completions",
                        f"model={smollm2_server.model},base_url={smollm2_server.chat_url},max_length={window},"
                        "num_concurrent=1", "--apply_chat_template")
    budget = res["configs"][TASK]["metadata"]["prompt_budget"]
    assert budget["measured_with"].endswith("no tokenizer, characters-per-token bound 3") and budget["chars_per_token"] == 3
    assert res["configs"][TASK]["metadata"]["generation"]["hit_max_gen_toks"].startswith("unknown")
    tok = AutoTokenizer.from_pretrained(smollm2_server.model)
    limit = budget["prompt_limit"]
    cut = 0
    for s in samples:
        logged = s["arguments"]["gen_args_0"]["arg_0"]  # a JSON chat string, logged as a 1-item list
        messages = json.loads(logged[0] if isinstance(logged, list) else logged)
        content = messages[-1]["content"]
        assert content.startswith("You are an expert at summarization.") and content.endswith("\n\nSummary:")
        served = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        served = served["input_ids"] if hasattr(served, "keys") else served
        assert len(served) <= limit, (len(served), limit)  # the bound is on the safe side
        cut += s["doc"]["document"].strip() not in content
    assert budget["cut_to_fit"] == cut == 1 and budget["documents"] == 1
    per_doc = [s["rouge1"] for s in samples]
    assert res["results"][TASK]["rouge1,none"] == pytest.approx(sum(per_doc) / len(per_doc), abs=1e-12)


def test_completions_with_a_tokenizer_are_measured_in_model_tokens(smollm2_server, tmp_path):
    from transformers import AutoTokenizer

    window = 640
    res, samples = _run(tmp_path, "local-completions",
                        f"model={smollm2_server.model},base_url={smollm2_server.completions_url},max_length={window},"
                        f"tokenizer={smollm2_server.model},tokenized_requests=False,num_concurrent=1")
    meta = res["configs"][TASK]["metadata"]
    budget = meta["prompt_budget"]
    assert budget["measured_with"].startswith("LocalCompletionsAPI backend, tokenizer")
    tok = AutoTokenizer.from_pretrained(smollm2_server.model)
    lengths = [len(tok(s["arguments"]["gen_args_0"]["arg_0"], add_special_tokens=False)["input_ids"]) for s in samples]
    assert max(lengths) == budget["prompt_tokens_max"] <= budget["prompt_limit"] == budget["window"] - GEN
    assert budget["cut_to_fit"] == sum(s["doc"]["document"].strip() not in s["arguments"]["gen_args_0"]["arg_0"]
                                       for s in samples) == 1
    raw = [len(tok(s["resps"][0][0], add_special_tokens=False)["input_ids"]) for s in samples]
    assert meta["generation"]["hit_max_gen_toks"] == sum(n >= GEN for n in raw)
