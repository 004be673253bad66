"""The shared loader: mirror layout, validation errors, seeded sampling."""

import json
from pathlib import Path

import pytest

from lm_eval_tasks.benchmarks import sources as data
from lm_eval_tasks.benchmarks.sources import DataError, load_split
from lm_eval_tasks.data.loader import seeded_sample


def write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_fixture_mirror_loads(fixture_data_dir):
    recs = load_split("domainsum", "cnndm", "test", fixture_data_dir)
    assert len(recs) == 3
    assert recs[0]["id"] == "domainsum/cnndm/test/0"
    assert all(r["document"] and r["summary"] for r in recs)


def test_env_var_is_the_fallback(fixture_data_dir, monkeypatch):
    monkeypatch.setenv("DOMSUM_DATA_DIR", str(fixture_data_dir))
    assert len(load_split("domainsum", "law", "validation")) == 2


def test_explicit_data_dir_wins_over_env(fixture_data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("DOMSUM_DATA_DIR", str(tmp_path))
    assert len(load_split("domainsum", "law", "validation", fixture_data_dir)) == 2


def test_missing_field_names_file_line_and_field(tmp_path):
    f = write(tmp_path / "domainsum" / "cnndm" / "test.jsonl", [
        json.dumps({"document": "a", "summary": "b"}),
        json.dumps({"document": "a"}),
    ])
    with pytest.raises(DataError) as e:
        load_split("domainsum", "cnndm", "test", tmp_path, task="domainsum_cnndm")
    msg = str(e.value)
    assert "domainsum_cnndm" in msg and str(f) in msg and "line 2" in msg and "'summary'" in msg


def test_wrong_type_and_bad_json(tmp_path):
    write(tmp_path / "domainsum" / "fox" / "test.jsonl", [json.dumps({"document": 3, "summary": "b"})])
    with pytest.raises(DataError, match="field 'document' must be a string"):
        load_split("domainsum", "fox", "test", tmp_path)
    write(tmp_path / "domainsum" / "fox" / "test.jsonl", ['{"document": "a", '])
    with pytest.raises(DataError, match=r"line 1: invalid JSON"):
        load_split("domainsum", "fox", "test", tmp_path)


def test_missing_split_gives_expected_path_and_command(tmp_path):
    write(tmp_path / "domainsum" / "cnn" / "train.jsonl", [json.dumps({"document": "a", "summary": "b"})])
    with pytest.raises(DataError) as e:
        load_split("domainsum", "cnn", "test", tmp_path, task="domainsum_cnn")
    msg = str(e.value)
    assert str(tmp_path / "domainsum" / "cnn" / "test.jsonl") in msg
    assert "train.jsonl" in msg and "domsum prepare-data" in msg


def test_missing_subset(tmp_path):
    with pytest.raises(DataError, match="does not exist.*domsum prepare-data"):
        load_split("domainsum", "wapo", "test", tmp_path)


def test_no_hub_source_for_style_level(monkeypatch):
    monkeypatch.delenv("DOMSUM_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="has no hub source.*domsum prepare-data"):
        load_split("domainsum", "nytimes", "test")


def test_seeded_sample_is_reproducible_and_ordered():
    xs = list(range(1000))
    a = seeded_sample(xs, 10, seed=42)
    assert a == seeded_sample(xs, 10, seed=42)
    assert a != seeded_sample(xs, 10, seed=43)
    assert a == sorted(a) and len(set(a)) == 10
    assert seeded_sample(xs[:5], 10, seed=1) == xs[:5]


def test_hub_registry_covers_genre_level():
    for d in ("cnndm", "pubmed", "reddit", "samsum", "wikihow"):
        src = data.HUB_SOURCES[("domainsum", d)]
        assert src.sample == {"test": 500, "validation": 500, "train": 10000}


def test_task_names_resolve_through_the_catalogue():
    from lm_eval_tasks.catalog import UnknownTask, lookup

    assert (lookup("domainsum_cnndm_2shot").benchmark, lookup("domainsum_cnndm_2shot").subset) == ("domainsum", "cnndm")
    assert lookup("adapteval_pubmed_judged").subset == "pubmed"
    with pytest.raises(UnknownTask, match="unknown suite task 'nonsense'"):
        lookup("nonsense")


def test_hub_path_is_used_and_offline_failure_is_clear(monkeypatch):
    """The real hub code path: offline, loading fails with the source and the way out."""
    monkeypatch.delenv("DOMSUM_DATA_DIR", raising=False)
    with pytest.raises(DataError) as e:
        load_split("domainsum", "cnndm", "test", task="domainsum_cnndm", hub_path="someone/cnn-copy")
    msg = str(e.value)
    assert "someone/cnn-copy" in msg and "domsum prepare-data" in msg and "DOMSUM_DATA_DIR" in msg
