"""The hook that keeps a key in ``--model_args`` out of what lm-eval writes after a run
(:mod:`lm_eval_tasks.harness_parts.masking`), on an evaluator shaped as lm-eval 0.4.13's:
``simple_evaluate`` builds the model from its ``model_args`` dict, calls ``evaluate`` by
its module attribute, then puts that same dict into the results' ``config``."""

from __future__ import annotations

from types import SimpleNamespace

from lm_eval_tasks.harness_parts import masking

KEY = "sk-unit-0123456789abcdef"
URL = f"http://user:{KEY}@127.0.0.1:9/v1/chat/completions?api_key={KEY}"
MASKED = "http://user:***@127.0.0.1:9/v1/chat/completions?api_key=***"


def _evaluator() -> SimpleNamespace:
    evaluator = SimpleNamespace()
    seen: dict = {}

    def evaluate(lm):
        seen["url during evaluate"] = lm["base_url"]
        return {"configs": {"harness_task": {"metadata": {"base_url": URL, "n": 3}}}}

    def simple_evaluate(model_args: dict) -> tuple[dict, dict]:
        lm = dict(model_args)  # the model keeps its own copy, as lm-eval's API models do
        results = evaluator.evaluate(lm)
        results["config"] = {"model_args": model_args}
        return results, lm

    evaluator.evaluate, evaluator.simple_evaluate, evaluator.seen = evaluate, simple_evaluate, seen
    return evaluator


def test_the_callers_model_args_and_every_config_are_masked_the_model_keeps_its_url():
    ev = _evaluator()
    masking.install(ev)
    masking.install(ev)  # once per process: a second install wraps nothing again
    assert ev.evaluate.__wrapped__.__name__ == "evaluate" and not hasattr(ev.evaluate.__wrapped__, "__wrapped__")
    args = {"model": "stub", "base_url": URL, "num_concurrent": 1}
    results, lm = ev.simple_evaluate(args)
    assert ev.seen["url during evaluate"] == URL and lm["base_url"] == URL
    assert args == {"model": "stub", "base_url": MASKED, "num_concurrent": 1}  # what the CLI prints
    assert results["config"]["model_args"] is args
    assert results["configs"]["harness_task"]["metadata"] == {"base_url": MASKED, "n": 3}


def test_model_args_given_as_a_string_or_without_a_caller_are_left_alone():
    ev = _evaluator()
    masking.install(ev)
    assert ev.evaluate({"base_url": URL})["configs"]["harness_task"]["metadata"]["base_url"] == MASKED
    plain = {"pretrained": "org/model", "dtype": "float32"}
    masking.mask_in_place(plain)
    assert plain == {"pretrained": "org/model", "dtype": "float32"}
    masking.mask_in_place(f"base_url={URL}")  # immutable: nothing to do, no error
