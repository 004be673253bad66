"""``domsum new-task`` and the folder it writes into: what the user wrote there is never
replaced (a README edited or of their own project, a ``utils.py`` of their own), and each
input it cannot take (a name with a line break, a data file that is a folder or a link that
loops) is one line naming the file; a CSV saved by Excel is read as written."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from lm_eval_tasks import catalog
from lm_eval_tasks.benchmarks.own.configs import RecordError, spec_from_config, task_configs
from lm_eval_tasks.benchmarks.own.folder import SIDE_README, NewTask, write_folder
from lm_eval_tasks.data.records import DataError
from lm_eval_tasks.data.user_files import read_split


@pytest.fixture(autouse=True)
def own_table(monkeypatch):
    """A fresh catalogue table for each test (the domains registered here stay here)."""
    monkeypatch.setattr(catalog, "_TABLE", None)


def _data(folder: Path, tag: str = "r", n_test: int = 3, n_train: int = 4) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("test", n_test), ("train", n_train)):
        rows = [{"document": f"document {tag} {split} {i} about ships and ports", "summary": f"summary {i}"}
                for i in range(n)]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _new(tmp_path: Path, name: str, data: Path | None = None, **kw) -> NewTask:
    return write_folder(NewTask(name=name, out=tmp_path / "tasks", data=data or _data(tmp_path / name), **kw))


def _listed(readme: str) -> list[str]:
    return [line.split("`")[1] for line in readme.splitlines() if line.startswith("* `") and "metrics" in line]


def _one_line_error(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text, text
    return text


# ------------------------------------------------------------------ the README


def test_a_second_domain_rewrites_only_the_readmes_generated_parts(tmp_path):
    first = _new(tmp_path, "ships")
    readme = tmp_path / "tasks" / "README.md"
    assert readme in first.written and first.notes == []
    text = readme.read_text()
    assert _listed(text) == ["ships", "ships_2shot"] and text.startswith("<!-- domsum new-task: begin about")
    cited = "Smith et al., Harbour logs 1990-2020, Zenodo 10.5281/zenodo.1 (cite this)."
    edited = text.replace("Cite your data here; the protocol: Yuan & Zhang, DomainSum, Findings of NAACL 2025.",
                          cited).replace("Homepage: none", "Homepage: https://example.org/harbour")
    edited += "\n## Our notes\n\nThe 2019 logs are missing.\n"
    readme.write_text(edited)

    second = _new(tmp_path, "ports")
    assert second.notes == [] and readme in second.written
    after = readme.read_text()
    assert _listed(after) == ["ports", "ports_2shot", "ships", "ships_2shot"]
    assert after.startswith("<!-- domsum new-task: begin about") and "\n# tasks\n" in after  # the folder's title
    for kept in (cited, "Homepage: https://example.org/harbour", "## Our notes\n\nThe 2019 logs are missing.\n"):
        assert kept in after
    # outside the marks, the file is the user's, line for line
    outside = [line for line in edited.splitlines() if line not in text.splitlines()]
    assert outside and all(line in after.splitlines() for line in outside)


def test_the_readme_lists_every_key_of_the_domains_tasks_with_its_direction(tmp_path):
    """The user's README lists its metrics with the same table as the suite's task READMEs."""
    from custom_metrics import registry
    from lm_eval_tasks.benchmarks.own.configs import DEFAULT_FAMILIES

    assert _new(tmp_path, "harbour").families == DEFAULT_FAMILIES
    rows = [line for line in (tmp_path / "tasks" / "README.md").read_text().splitlines() if line.startswith("| `")]
    keys = [k for f in DEFAULT_FAMILIES for k in registry.get(f).keys]
    assert [r.split(" | ")[0].strip("| `") for r in rows] == [k.name for k in keys]
    assert all(r.split(" | ")[3] == k.better and r.endswith("| every task |") for r, k in zip(rows, keys))


def test_a_project_readme_is_left_as_it_is_and_the_suites_goes_beside_it(tmp_path):
    out = tmp_path / "tasks"
    out.mkdir()
    own = "# My project\n\nInternal evaluation of the harbour models.\n"
    (out / "README.md").write_text(own)
    first = _new(tmp_path, "ships")
    assert (out / "README.md").read_text() == own
    side = out / SIDE_README
    assert side in first.written and out / "README.md" not in first.written
    assert first.notes == [f"{out / 'README.md'} is not one `domsum new-task` wrote (it has no generated section): "
                           f"left as it is; the tasks' README is {side}"]
    side.write_text(side.read_text().replace("Homepage: none", "Homepage: https://example.org/harbour"))

    second = _new(tmp_path, "ports")  # the side README is the suite's: its generated parts are updated
    assert (out / "README.md").read_text() == own and len(second.notes) == 1
    assert _listed(side.read_text()) == ["ports", "ports_2shot", "ships", "ships_2shot"]
    assert "Homepage: https://example.org/harbour" in side.read_text()

    side.write_text("# also mine\n")  # both the user's: neither is touched, one line says so
    third = _new(tmp_path, "docks")
    assert (out / "README.md").read_text() == own and side.read_text() == "# also mine\n"
    assert third.notes == [f"{out / 'README.md'} and {side} are not ones `domsum new-task` wrote: both left as they "
                           f"are, no README written"]
    assert sorted(p.name for p in third.written) == ["docks.yaml", "docks_2shot.yaml"]


def test_overwrite_does_not_replace_a_readme_of_the_users(tmp_path):
    out = tmp_path / "tasks"
    _new(tmp_path, "ships")
    (out / "README.md").write_text("# Harbour\n\nMine now.\n")
    again = _new(tmp_path, "ships", overwrite=True)
    assert (out / "README.md").read_text() == "# Harbour\n\nMine now.\n" and (out / SIDE_README) in again.written


# ------------------------------------------------------------------ the folder's utils.py


def test_a_utils_py_of_the_users_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "tasks"
    out.mkdir()
    mine = "def helper(doc):\n    return doc['text']\n"
    (out / "utils.py").write_text(mine)
    for overwrite in (False, True):
        with pytest.raises(RecordError) as exc:
            _new(tmp_path, "ships", overwrite=overwrite)
        line = _one_line_error(exc)
        assert line.startswith(f"{out / 'utils.py'} is not the suite's: it defines no SuiteTask") and "--out" in line
        assert sorted(p.name for p in out.iterdir()) == ["utils.py"] and (out / "utils.py").read_text() == mine
    (out / "utils.py").write_text("def broken(:\n")
    with pytest.raises(RecordError, match=r"utils.py is not the suite's: it cannot be read as Python \(line 1: "):
        _new(tmp_path, "ships")


@pytest.mark.parametrize("utils", [
    "from lm_eval_tasks.harness import task_class\n\nSuiteTask = task_class(__file__)\n",
    "from lm_eval_tasks.harness import SuiteTask  # noqa: F401\n",  # what an older suite wrote
    "import os\nfrom lm_eval_tasks.harness import task_class\n\nSuiteTask = task_class(__file__)\nEXTRA = os.sep\n",
])
def test_a_utils_py_that_names_the_suites_class_is_kept(tmp_path, utils):
    out = tmp_path / "tasks"
    out.mkdir()
    (out / "utils.py").write_text(utils)
    done = _new(tmp_path, "ships")
    assert (out / "utils.py").read_text() == utils and out / "utils.py" not in done.written


# ------------------------------------------------------------------ the inputs


@pytest.mark.parametrize("name", ["legal\n", "legal\r\n", "le gal", "legal\u00e9", "\nlegal"])
def test_a_name_with_a_line_break_or_another_character_is_refused(tmp_path, name):
    with pytest.raises(RecordError) as exc:
        _new(tmp_path, name, data=_data(tmp_path / "data"))
    assert _one_line_error(exc).startswith(f"task name {name!r}: use letters, digits and underscores")
    assert not (tmp_path / "tasks").exists()


def _excel_csv(path: Path, rows: list[dict]) -> None:
    """What Excel's "CSV UTF-8" writes: a byte-order mark, CRLF line ends, quoted cells with
    commas, quotes and line breaks."""
    with open(path, "w", newline="", encoding="utf-8-sig") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\r\n")
        w.writeheader()
        w.writerows(rows)


def test_a_csv_saved_by_excel_is_read_as_written(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    rows = {split: [{"document": f'Ship {i}, the "{split}" one,\nsailed on.', "summary": f"Ship {i} sailed.",
                     "note": "é"} for i in range(n)] for split, n in (("test", 3), ("train", 4))}
    for split, recs in rows.items():
        _excel_csv(data / f"{split}.csv", recs)
    assert (data / "test.csv").read_bytes()[:3] == b"\xef\xbb\xbf" and b"\r\n" in (data / "test.csv").read_bytes()
    done = _new(tmp_path, "ships", data=data)
    assert done.counts == {"test": 3, "train": 4} and (tmp_path / "tasks" / "ships_2shot.yaml") in done.written
    [(path, cfg)] = [(p, c) for p, c in task_configs(tmp_path / "tasks") if p.name == "ships.yaml"]
    spec = spec_from_config(cfg, str(path))
    for split, recs in rows.items():  # what the task reads when it runs
        got, empty = read_split(spec.source, split)
        assert empty == [] and [(r["document"], r["summary"], r["note"]) for r in got] == [
            (r["document"], r["summary"], r["note"]) for r in recs]


def test_a_json_lines_file_with_a_byte_order_mark_is_read(tmp_path):
    data = _data(tmp_path / "data")
    (data / "test.jsonl").write_bytes(b"\xef\xbb\xbf" + (data / "test.jsonl").read_bytes())
    assert _new(tmp_path, "ships", data=data).counts == {"test": 3, "train": 4}


@pytest.mark.parametrize("split", ["test", "train"])
@pytest.mark.parametrize("kind", ["loop", "folder", "dangling"])
def test_a_data_file_that_is_there_but_cannot_be_read_is_one_line(tmp_path, split, kind):
    data = _data(tmp_path / "data")
    path = data / f"{split}.jsonl"
    path.unlink()
    if kind == "loop":
        path.symlink_to(path.name)
        why = "it is a symbolic link that leads back to itself (too many levels of symbolic links)"
    elif kind == "folder":
        path.mkdir()
        why = "it is a folder, not a file"
    else:
        path.symlink_to("gone.jsonl")
        why = "it is a symbolic link to gone.jsonl, which does not exist"
    with pytest.raises(RecordError) as exc:
        _new(tmp_path, "ships", data=data)
    assert _one_line_error(exc) == f"--data {data}: {split}.jsonl cannot be read: {why}"
    assert not (tmp_path / "tasks").exists()


def test_a_task_whose_data_file_became_a_folder_says_so_when_it_loads(tmp_path):
    done = _new(tmp_path, "ships")
    train = tmp_path / "ships" / "train.jsonl"
    train.unlink()
    train.mkdir()
    [(path, cfg)] = [(p, c) for p, c in task_configs(done.out) if p.name == "ships.yaml"]
    with pytest.raises(DataError) as exc:
        read_split(spec_from_config(cfg, str(path)).source, "train")
    assert _one_line_error(exc) == (f"train file {train} cannot be read: it is a folder, not a file "
                                    f"(dataset_kwargs.data_files.train in the task YAML)")
