"""A user domain's data checked whole before a model loads: a repeated id is one error
naming file, line and field, an empty document or summary one note (the record is left
out and counted when the task loads, as the demonstrations of the two-shot task)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lm_eval_tasks import catalog
from lm_eval_tasks.catalog import load_task
from lm_eval_tasks.catalog import register_folder
from lm_eval_tasks.benchmarks.own.folder import NewTask, write_folder
from lm_eval_tasks.preparation.check import data_problems
from lm_eval_tasks.data.records import DataError, assign_ids


@pytest.fixture(autouse=True)
def own_table(monkeypatch):
    """A fresh catalogue table per test: the domains registered here stay out of the process's."""
    monkeypatch.setattr(catalog, "_TABLE", None)


def _rows(n: int, tag: str) -> list[dict]:
    return [{"key": f"{tag}{i}", "text": f"{tag} document {i} on harbours and tides", "gist": f"gist {i}"}
            for i in range(n)]


def _write(folder: Path, split: str, rows: list[dict]) -> None:
    (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _domain(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    _write(data, "test", _rows(3, "a"))
    _write(data, "train", _rows(5, "t"))
    write_folder(NewTask(name="harbour", out=tmp_path / "tasks", data=data, document_field="text",
                         summary_field="gist", id_field="key"))
    register_folder(tmp_path / "tasks")
    return data


def test_ids_are_numbered_kept_unique_or_renamed_where_the_file_cannot_be_edited():
    recs = [{"id": 7}, {}, {"id": "7"}]
    places = ["f, line 1", "f, line 2", "f, line 3"]
    with pytest.raises(DataError, match=r"^f, line 3: field 'key': id '7' is already used at line 1;"):
        assign_ids([dict(r) for r in recs], places, "p", editable=True, field="key")
    renamed = [dict(r) for r in recs]
    assert assign_ids(renamed, places, "p", editable=False) == 1
    assert [r["id"] for r in renamed] == ["7", "p/1", "7#2"] and renamed[2]["duplicate_id_of"] == "7"


def test_the_check_reads_the_users_file_whole(tmp_path):
    data = _domain(tmp_path)
    test = _rows(6, "a")
    test[5]["key"] = "a2"  # past the first record, where the old check stopped
    test[3]["gist"] = " "
    _write(data, "test", test)
    notes: list[str] = []
    problems = data_problems(catalog.lookup("harbour"), notes=notes)
    assert problems == [f"{data / 'test.jsonl'}, line 6: field 'key': id 'a2' is already used at "
                        f"line 3; ids must be unique (scores and comparisons are keyed by them). Give each record "
                        f"its own id, or remove the id field to number records by position."]
    test[5]["key"] = "a5"
    _write(data, "test", test)
    assert data_problems(catalog.lookup("harbour"), notes=notes) == []
    assert notes == [f"{data / 'test.jsonl'}, line 4: field 'gist' is empty: the record is left out and counted "
                     f"(skipped_empty in the results)"]


def test_empty_demonstrations_are_left_out_and_counted(tmp_path):
    data = _domain(tmp_path)
    train = _rows(5, "t")
    train[0]["text"] = ""
    train[3]["gist"] = ""
    _write(data, "train", train)
    loaded = load_task("harbour_2shot")
    assert loaded.report["demo_pool_skipped_empty"] == {"count": 2, "ids": ["t0", "t3"]}
    used = {i for d in loaded.docs for i in d["demo_ids"]}
    assert used and used <= {"t1", "t2", "t4"}
