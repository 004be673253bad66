"""Scorer models in a harness run: loaded once for every task that uses them, freed after
the last of those tasks is scored (custom_metrics.model_cache, held per task)."""

from __future__ import annotations

import json
from importlib import import_module

import pytest

from conftest import run_lm_eval
from custom_metrics import model_cache

bertscore = import_module("custom_metrics.families.bertscore")  # the module (the package re-exports the function)

pytestmark = pytest.mark.slow


def test_two_tasks_with_one_encoder_load_it_once_and_free_it_after_the_last(
        tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path, monkeypatch):
    built: list[tuple[str, int]] = []

    class CountedEncoder(bertscore.Encoder):
        def __init__(self, model: str, num_layers: int, device: str | None = None) -> None:
            built.append((model, num_layers))
            super().__init__(model, num_layers, device)

    monkeypatch.setattr(bertscore, "Encoder", CountedEncoder)
    model_cache.release()
    before = model_cache.stats()
    meta = {"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path, "bertscore_layers": 6}
    res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                       "--include_path", "lm_eval_tasks", "--tasks", "domainsum_cnndm,domainsum_cnn",
                       "--limit", "2", "--gen_kwargs", "max_gen_toks=8",
                       "--metadata", json.dumps(meta)], tmp_path)
    after = model_cache.stats()
    assert set(res["results"]) == {"domainsum_cnndm", "domainsum_cnn"}
    assert all("bertscore_f1,none" in r for r in res["results"].values())
    # checked before generation and scored by both tasks: one load, every other use a hit
    assert built == [(minilm_path, 6)]
    assert after.loads - before.loads == 1 and after.hits - before.hits >= 3
    # the second task's scoring was the last use: the encoder is gone, nothing else stays
    assert after.released - before.released == 1 and model_cache.loaded() == []
