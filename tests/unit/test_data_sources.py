"""The loader is handed its hub source (it knows no benchmark); the mirror's release and
levels come from the benchmark's record."""

from __future__ import annotations

import random

import pytest

from lm_eval_tasks.commands.prepare_data import main as prepare_data
from lm_eval_tasks.data.loader import DataError, load_split, split_exists, split_source
from lm_eval_tasks.data.records import HubSource


def test_the_loader_reads_the_hub_source_it_is_handed(monkeypatch):
    import datasets

    monkeypatch.delenv("DOMSUM_DATA_DIR", raising=False)
    src = HubSource("someone/notes", "v1", "text", "gist", sample={"test": 2}, seed=3)
    rows = [{"text": f"doc {i}", "gist": f"sum {i}"} for i in range(5)]
    calls = []

    def hub(path, name=None, split=None):
        calls.append((path, name, split))
        return datasets.Dataset.from_list(rows)

    monkeypatch.setattr(datasets, "load_dataset", hub)
    records = load_split("anything", "notes", "test", hub=src)
    drawn = sorted(random.Random(3).sample(range(5), 2))  # the seeded sample of the source's size and seed
    assert calls == [("someone/notes", "v1", "test")]
    assert [(r["document"], r["summary"], r["source_id"]) for r in records] == [(f"doc {i}", f"sum {i}", i) for i in drawn]
    assert split_source("anything", "notes", "test", hub=src) == "hub someone/notes (v1), split test"
    assert split_exists("anything", "notes", "test", hub=src)
    # the same names without a source: no registry behind the loader
    assert not split_exists("anything", "notes", "test")
    assert split_source("anything", "notes", "test") == "no source"
    with pytest.raises(DataError, match="anything/notes has no hub source"):
        load_split("anything", "notes", "test")
    assert len(calls) == 1


def test_a_task_hands_its_records_source():
    from lm_eval_tasks import catalog
    from lm_eval_tasks.benchmarks import sources, suite

    spec = catalog.lookup(f"{suite.DOMAIN_STUDY.name}_cnndm_2shot")
    assert spec.hub_source is suite.DOMAIN_STUDY.hub_sources["cnndm"] is sources.hub_source(spec.benchmark, "cnndm")
    assert catalog.lookup(f"{suite.DOMAIN_STUDY.name}_nytimes").hub_source is None  # style level: mirror only


def test_a_release_of_a_benchmark_without_one_is_refused(tmp_path, capsys):
    from lm_eval_tasks.benchmarks import suite

    release = tmp_path / "release"
    release.mkdir()
    (release / "arxiv_test_sampled_500.json").write_text('[{"document": "d", "summary": "s"}]')
    other = suite.ADAPTATION_STUDY.name
    assert prepare_data(["--release", str(release), "--benchmark", other, "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert f"{other} has no authors' release to convert" in err and f"converts {suite.DOMAIN_STUDY.name}'s" in err
    assert not (tmp_path / "m").exists()


def test_a_level_the_benchmark_lacks_is_refused_before_the_hub(tmp_path, capsys, monkeypatch):
    import datasets

    from lm_eval_tasks.benchmarks import suite

    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: pytest.fail("hub asked"))
    other = suite.ADAPTATION_STUDY.name
    assert prepare_data(["--hub", "--benchmark", other, "--level", "genre", "--out", str(tmp_path / "m")]) == 2
    assert f"{other} has no level 'genre'" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
