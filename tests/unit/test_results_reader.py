"""The one reader of harness output (lm_eval_tasks/results.py) and the facts it keeps once:
the samples-file naming rule, the generated text of a sample, a model's context length."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from custom_metrics.hf_models import context_length
from lm_eval_tasks.results import (ResultsError, first_text, parse_folder_spec, read_samples, samples_file,
                                   samples_name, task_from_samples_name)

STAMP = "2025-01-02T10-20-30.123456"


@pytest.mark.parametrize("task", ["domainsum_cnndm", "adapteval_pubmed_2shot", "ccsbench_length_2024_x"])
@pytest.mark.parametrize("rank", [None, 0, 3])
def test_samples_name_round_trips(task, rank):
    name = samples_name(task, STAMP, rank)
    assert name.endswith(".jsonl") and ("_rank" in name) == (rank is not None)
    assert task_from_samples_name(name) == task
    assert task_from_samples_name(Path("/some/folder") / name) == task


def test_names_that_are_not_samples_files():
    assert task_from_samples_name("results_2025-01-02T10-20-30.json") is None
    assert task_from_samples_name("predictions.csv") is None


def test_first_text_descends_nested_responses():
    assert first_text([["a summary", "other"]]) == "a summary"
    assert first_text(["x"]) == "x"
    assert first_text([]) == "" and first_text([[]]) == "" and first_text(None) == ""
    assert first_text("plain") == "plain"


def _write_samples(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_samples_file_prefers_the_run_and_skips_rank_files(tmp_path):
    results = tmp_path / f"results_{STAMP}.json"
    results.write_text("{}")
    later = "2025-02-01T00-00-00.000001"
    rank_file = _write_samples(tmp_path / samples_name("domainsum_cnndm", later, 0), [])
    assert samples_file(results, STAMP, "domainsum_cnndm") is None
    other = _write_samples(tmp_path / samples_name("domainsum_cnndm", "2024-12-01T00-00-00.1"), [])
    assert samples_file(results, STAMP, "domainsum_cnndm") == other
    exact = _write_samples(tmp_path / samples_name("domainsum_cnndm", STAMP), [])
    assert samples_file(results, STAMP, "domainsum_cnndm") == exact
    assert rank_file.exists()


def test_read_samples_reads_one_filter_and_names_bad_lines(tmp_path):
    doc = {"id": "d1", "document": "a text", "summary": "ref"}
    path = _write_samples(tmp_path / samples_name("domainsum_cnndm", STAMP), [
        {"doc_id": 0, "doc": doc, "filtered_resps": ["  out  "], "filter": "none", "metrics": ["rouge1"],
         "rouge1": 0.5},
        {"doc_id": 0, "doc": doc, "filtered_resps": ["other"], "filter": "strip"},
    ])
    (s,) = read_samples(path)
    assert (s.id, s.prediction, s.reference, s.filter, s.logged) == ("d1", "out", "ref", "none", {"rouge1": 0.5})
    assert read_samples(path, "strip")[0].prediction == "other"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"doc": {}, "filtered_resps": ["x"]}\nnot json\n', encoding="utf-8")
    with pytest.raises(ResultsError, match=r"bad.jsonl, line 2: not JSON"):
        read_samples(bad)


def test_folder_label_is_a_typed_error():
    assert parse_folder_spec("out/a=fine-tuned") == (Path("out/a"), "fine-tuned")
    with pytest.raises(ResultsError, match="unknown setting label 'tuned'"):
        parse_folder_spec("out/a=tuned")


def test_context_length_reads_the_harness_attributes_in_its_order():
    assert context_length(SimpleNamespace(n_positions=1024, max_position_embeddings=2048)) == 1024
    assert context_length(SimpleNamespace(max_position_embeddings=512)) == 512
    assert context_length(SimpleNamespace(n_ctx=256, n_positions=0)) == 256
    assert context_length(SimpleNamespace(hidden_size=64)) is None
