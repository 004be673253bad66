"""How ``domsum new-task`` names the data files in the YAML, and how the task finds them again.

Data inside the task folder or beside it are named relative to the folder (``auto``), so a
project folder holding both can be moved, copied or shared; data elsewhere keep their
absolute path; ``--data-paths`` chooses either way. A relative path is read from the YAML's
own folder, never from the directory the task is run from.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from lm_eval_tasks import catalog
from lm_eval_tasks.benchmarks.own.configs import RecordError, read_task_yaml, spec_from_config, task_configs
from lm_eval_tasks.benchmarks.own.folder import NewTask, write_folder
from lm_eval_tasks.commands.new_task import parse_args
from lm_eval_tasks.data.user_files import read_split


@pytest.fixture(autouse=True)
def own_table(monkeypatch):
    """A fresh catalogue table for each test (the domains registered here stay here)."""
    monkeypatch.setattr(catalog, "_TABLE", None)


def _data(folder: Path, n_test: int = 3, n_train: int = 4) -> Path:
    folder.mkdir(parents=True)
    for split, n in (("test", n_test), ("train", n_train)):
        rows = [{"document": f"document {split} {i} of {folder.name}", "summary": f"summary {i}"} for i in range(n)]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _written(out: Path, name: str = "ships") -> dict[str, str]:
    return read_task_yaml(out / f"{name}.yaml")["dataset_kwargs"]["data_files"]


@pytest.mark.parametrize("where, style, expected", [
    ("proj/tasks/data", "auto", "data/{split}.jsonl"),               # inside the task folder
    ("proj/data", "auto", "../data/{split}.jsonl"),                  # beside it
    ("corpora/ships", "auto", "{root}/corpora/ships/{split}.jsonl"),  # elsewhere: absolute
    ("corpora/ships", "relative", "../../corpora/ships/{split}.jsonl"),
    ("proj/data", "absolute", "{root}/proj/data/{split}.jsonl"),
])
def test_the_yaml_names_the_data_by_the_rule(tmp_path, where, style, expected):
    root = tmp_path.resolve()
    data = _data(root / where)
    done = write_folder(NewTask(name="ships", out=root / "proj" / "tasks", data=data, data_paths=style))
    assert _written(done.out) == {s: expected.format(split=s, root=root) for s in ("test", "train")}
    readme = (done.out / "README.md").read_text()  # the README names them as the YAML does
    assert f"`{expected.format(split='test', root=root)}` (test)" in readme
    for path, cfg in task_configs(done.out):  # both tasks read the files new-task read
        assert spec_from_config(cfg, str(path)).source.splits == {
            s: str(data / f"{s}.jsonl") for s in ("test", "train")}, path.name


def test_a_moved_folder_reads_its_own_copy_of_the_data_from_any_directory(tmp_path, monkeypatch):
    root = tmp_path.resolve()
    _data(root / "proj" / "data")
    write_folder(NewTask(name="ships", out=root / "proj" / "tasks", data=root / "proj" / "data"))
    moved = root / "elsewhere" / "shared_proj"
    shutil.copytree(root / "proj", moved)
    shutil.rmtree(root / "proj")
    (root / "cwd" / "data").mkdir(parents=True)  # a data/ folder under the current directory is not read
    monkeypatch.chdir(root / "cwd")
    specs = {p.name: spec_from_config(c, str(p)) for p, c in task_configs(moved / "tasks")}
    assert sorted(specs) == ["ships.yaml", "ships_2shot.yaml"]
    for spec in specs.values():  # the two-shot task's train split (demonstrations, DVO) too
        assert spec.source.splits == {s: str(moved / "data" / f"{s}.jsonl") for s in ("test", "train")}
        for split, n in (("test", 3), ("train", 4)):
            records, empty = read_split(spec.source, split)
            assert empty == [] and [r["document"] for r in records] == [
                f"document {split} {i} of data" for i in range(n)]


def test_an_absolute_path_written_by_hand_keeps_working(tmp_path):
    root = tmp_path.resolve()
    data = _data(root / "corpora" / "ships")
    done = write_folder(NewTask(name="ships", out=root / "tasks", data=data, data_paths="absolute"))
    shutil.copytree(done.out, root / "moved")
    [(path, cfg)] = [(p, c) for p, c in task_configs(root / "moved") if p.name == "ships.yaml"]
    assert spec_from_config(cfg, str(path)).source.splits["test"] == str(data / "test.jsonl")


def test_the_flag_and_an_unknown_style(tmp_path):
    assert parse_args(["ships", "--data", "d"]).data_paths == "auto"
    assert parse_args(["ships", "--data", "d", "--data-paths", "absolute"]).data_paths == "absolute"
    with pytest.raises(SystemExit):
        parse_args(["ships", "--data", "d", "--data_paths", "sideways"])
    with pytest.raises(RecordError) as exc:
        write_folder(NewTask(name="ships", out=tmp_path / "tasks", data=_data(tmp_path / "d"), data_paths="sideways"))
    assert str(exc.value) == "data paths 'sideways': choose one of auto, relative, absolute"
    assert not (tmp_path / "tasks").exists() and os.listdir(tmp_path) == ["d"]
