"""Re-scoring keeps the settings the run recorded (lm_eval_tasks/rescoring/recorded.py): the
results file beside a samples file is found by its timestamp, what the scorers used wins over
a ``settings_used`` default, and a flag or ``--metadata`` key wins over the record."""

from __future__ import annotations

import json

from lm_eval_tasks.rescoring.recorded import recorded_settings, results_of, taken

TS = "2025-01-02T03-04-05.000006"


def _run(tmp_path, meta: dict):
    samples = tmp_path / f"samples_domainsum_cnndm_{TS}.jsonl"
    samples.write_text("{}\n")
    (tmp_path / f"results_{TS}.json").write_text(json.dumps({"configs": {"domainsum_cnndm": {"metadata": meta}}}))
    return samples


def test_the_record_of_the_run_is_read_for_its_task(tmp_path):
    samples = _run(tmp_path, {
        "settings_used": {"rouge_stemming": {"value": None, "from": "default"},
                          "bertscore_model": {"value": "enc", "from": "metadata"},
                          "bertscore_layers": {"value": None, "from": "default"},
                          "score_cache_dir": {"value": "/cache", "from": "environment"}},
        "bertscore_model_used": "/models/minilm", "bertscore_layers_used": 6, "rouge_stemming": False})
    assert results_of(samples) == tmp_path / f"results_{TS}.json"
    path, settings = recorded_settings(samples, "domainsum_cnndm")
    assert path == tmp_path / f"results_{TS}.json"
    assert settings == {"bertscore_model": "/models/minilm", "bertscore_layers": 6, "rouge_stemming": False}
    assert recorded_settings(samples, "domainsum_pubmed") == (None, {})  # nothing recorded for that task
    metadata, took = taken({"bertscore_layers": 4, "progress": False}, settings)
    assert took == {"bertscore_model": "/models/minilm", "rouge_stemming": False}
    assert metadata == {"bertscore_model": "/models/minilm", "rouge_stemming": False, "bertscore_layers": 4,
                        "progress": False}


def test_no_results_file_is_no_record(tmp_path):
    lone = tmp_path / f"samples_domainsum_cnndm_{TS}.jsonl"
    lone.write_text("{}\n")
    assert results_of(lone) is None and recorded_settings(lone, "domainsum_cnndm") == (None, {})
    assert results_of(tmp_path / "predictions.jsonl") is None
