"""``domsum new-task`` and ``domsum run``'s data check through the real CLI, on the data
a new user brings: a short or missing train split, repeated ids, empty records, a second
domain in the same folder, a taken name, a mistyped family. No model is loaded: every
case ends before one would be."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import subprocess_env


def domsum(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", *args], cwd=cwd, env=subprocess_env(),
                          capture_output=True, text=True, timeout=300)


def write_data(folder: Path, test: list[dict], train: list[dict] | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, rows in (("test", test), ("train", train)):
        if rows is not None:
            (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def rows(n: int, tag: str = "r") -> list[dict]:
    return [{"id": f"{tag}{i}", "document": f"document {tag} {i} about ships and ports", "summary": f"summary {i}"}
            for i in range(n)]


def notes(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("domsum new-task: note:")]


def test_a_short_or_missing_train_split_is_said_one_line_each(tmp_path):
    write_data(tmp_path / "short", rows(3), rows(2, "t"))
    short = domsum(["new-task", "shorty", "--data", "short", "--out", "tasks_short"], tmp_path)
    assert short.returncode == 0, short.stderr
    assert sorted(p.name for p in (tmp_path / "tasks_short").iterdir()) == ["README.md", "shorty.yaml", "utils.py"]
    said = notes(short)
    assert len(said) == 2, short.stderr
    assert "2 train record(s) with a document and a summary: shorty_2shot not written" in said[0] and "at least 3" in said[0]
    assert "DVO's domain vocabulary will be built from 2 document(s) only" in said[1]

    write_data(tmp_path / "none", rows(3), None)
    none = domsum(["new-task", "lonely", "--data", "none", "--out", "tasks_none"], tmp_path)
    assert none.returncode == 0, none.stderr
    said = notes(none)
    assert len(said) == 2, none.stderr
    assert said[0].startswith("domsum new-task: note: no train split") and "lonely_2shot not written" in said[0]
    assert "dvo left out of the families" in said[1]
    yaml_text = (tmp_path / "tasks_none" / "lonely.yaml").read_text()
    assert "families: [rouge, bertscore]" in yaml_text and "lonely_2shot" not in none.stdout


def test_a_repeated_id_stops_new_task_and_run_before_any_model_loads(tmp_path):
    test = rows(4)
    test[3]["id"] = "r1"
    write_data(tmp_path / "data", test, rows(4, "t"))
    made = domsum(["new-task", "dupes", "--data", "data", "--out", "tasks"], tmp_path)
    assert made.returncode == 2 and not (tmp_path / "tasks").exists()
    lines = made.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in made.stderr, made.stderr
    assert f"{tmp_path / 'data' / 'test.jsonl'}, line 4: field 'id': id 'r1' is already used at line 2" in lines[0]

    write_data(tmp_path / "data", rows(4), rows(4, "t"))  # a clean file for new-task, then the repeat again
    assert domsum(["new-task", "dupes", "--data", "data", "--out", "tasks"], tmp_path).returncode == 0
    write_data(tmp_path / "data", test, rows(4, "t"))
    run = domsum(["run", "--model", "hf", "--model_args", "pretrained=no-such-model", "--include_path", "tasks",
                  "--tasks", "dupes,dupes_2shot"], tmp_path)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert "stopping before the model loads" in run.stderr and "Initializing hf model" not in run.stderr
    problems = [line for line in run.stderr.splitlines() if line.startswith("  - ")]
    assert len(problems) == 1 and "line 4: field 'id': id 'r1' is already used at line 2" in problems[0], run.stderr


def test_an_empty_document_or_summary_is_said_with_file_line_and_field(tmp_path):
    test, train = rows(4), rows(5, "t")
    test[1]["document"] = "  "
    train[4]["summary"] = ""
    write_data(tmp_path / "data", test, train)
    made = domsum(["new-task", "gaps", "--data", "data", "--out", "tasks"], tmp_path)
    assert made.returncode == 0, made.stderr
    said = notes(made)
    assert len(said) == 2, made.stderr
    assert (f"{tmp_path / 'data' / 'test.jsonl'}, line 2: field 'document' is empty: the record is left out and "
            f"counted (skipped_empty in the results)") in said[0]
    assert f"{tmp_path / 'data' / 'train.jsonl'}, line 5: field 'summary' is empty" in said[1]
    assert "demo_pool_skipped_empty" in said[1]
    assert "(4 test, 5 train records)" in made.stdout and (tmp_path / "tasks" / "gaps_2shot.yaml").is_file()


def test_a_second_domain_joins_the_folder_and_its_readme(tmp_path):
    write_data(tmp_path / "ships", rows(3), rows(4, "t"))
    write_data(tmp_path / "ports", rows(3, "p"), rows(2, "q"))
    first = domsum(["new-task", "ships", "--data", "ships", "--out", "tasks"], tmp_path)
    assert first.returncode == 0, first.stderr
    ships_yaml = (tmp_path / "tasks" / "ships.yaml").read_text()
    second = domsum(["new-task", "ports", "--data", "ports", "--out", "tasks", "--families", "rouge"], tmp_path)
    assert second.returncode == 0, second.stderr
    assert sorted(p.name for p in (tmp_path / "tasks").iterdir()) == [
        "README.md", "ports.yaml", "ships.yaml", "ships_2shot.yaml", "utils.py"]
    assert (tmp_path / "tasks" / "ships.yaml").read_text() == ships_yaml
    readme = (tmp_path / "tasks" / "README.md").read_text()
    listed = [line for line in readme.splitlines() if line.startswith("* `") and "metrics" in line]
    assert [line.split("`")[1] for line in listed] == ["ports", "ships", "ships_2shot"]
    assert listed[0].endswith("metrics rouge") and listed[1].endswith("metrics rouge, bertscore, dvo")
    # the data lie beside the task folder: named relative to it, as the YAMLs name them
    assert "`../ports/test.jsonl` (test)" in readme and "`../ships/test.jsonl` (test)" in readme

    again = domsum(["new-task", "ships", "--data", "ports", "--out", "tasks"], tmp_path)
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1
    assert "ships.yaml exists; pass --overwrite" in again.stderr
    replaced = domsum(["new-task", "ships", "--data", "ports", "--out", "tasks", "--overwrite"], tmp_path)
    assert replaced.returncode == 0, replaced.stderr
    assert not (tmp_path / "tasks" / "ships_2shot.yaml").exists()  # 2 train records: no two-shot task left behind
    assert 'test: "../ports/test.jsonl"' in (tmp_path / "tasks" / "ships.yaml").read_text()


def test_a_suite_or_harness_task_name_is_refused_in_one_line(tmp_path):
    write_data(tmp_path / "data", rows(3), rows(4, "t"))
    for name, whose in (("domainsum_cnndm", "the suite's"), ("cnn_dailymail", "the harness's"),
                        ("hellaswag", "the harness's")):
        made = domsum(["new-task", name, "--data", "data", "--out", "tasks"], tmp_path)
        assert made.returncode == 2 and not (tmp_path / "tasks").exists(), made.stderr
        lines = made.stderr.strip().splitlines()
        assert len(lines) == 1 and f"task name {name!r} is already one of {whose}" in lines[0], made.stderr
    harness_yaml = lines[0].split("(", 1)[1].split(")")[0]
    assert Path(harness_yaml).name == "hellaswag.yaml" and "task: hellaswag" in Path(harness_yaml).read_text()


def test_a_mistyped_family_gets_the_close_names(tmp_path):
    write_data(tmp_path / "data", rows(3), rows(4, "t"))
    for typed, meant in (("ROUGE", "rouge"), ("rouge,bertscor", "bertscore")):
        made = domsum(["new-task", "fams", "--data", "data", "--families", typed], tmp_path)
        lines = made.stderr.strip().splitlines()
        assert made.returncode == 2 and len(lines) == 1, made.stderr
        assert f"did you mean {meant}" in lines[0] and not (tmp_path / "fams").exists()


def test_every_bad_line_is_said_in_one_error_and_run_says_them_too(tmp_path):
    """Bad lines of several kinds in both files: one error naming each (file, line, field,
    reason) in the files' order, before anything is written; ``domsum run`` lists the same."""
    data = tmp_path / "data"
    test_lines = [json.dumps(r) for r in rows(6)]
    test_lines[1] = '{"id": "r1", "document": "cut off'                       # line 2
    test_lines[2] = json.dumps({"id": "r2", "document": "only a document"})    # line 3
    test_lines[3] = json.dumps({"id": "r3", "document": 7, "summary": "s"})    # line 4
    test_lines += [json.dumps(["not", "an", "object"]), json.dumps(rows(1)[0])]  # lines 7, 8 (r0 again)
    train_lines = [json.dumps(r) for r in rows(4, "t")] + [json.dumps({"id": "t9", "document": "d", "summary": None})]
    data.mkdir()
    test, train = data / "test.jsonl", data / "train.jsonl"
    test.write_text("\n".join(test_lines) + "\n")
    train.write_text("\n".join(train_lines) + "\n")
    expected = [f"{test}, line 2: invalid JSON", f"{test}, line 3: missing field 'summary'",
                f"{test}, line 4: field 'document' must be a string, got int",
                f"{test}, line 7: expected a JSON object, got list",
                f"{test}, line 8: field 'id': id 'r0' is already used at line 1",
                f"{train}, line 5: field 'summary' must be a string, got NoneType"]

    made = domsum(["new-task", "messy", "--data", "data", "--out", "tasks"], tmp_path)
    assert made.returncode == 2 and "Traceback" not in made.stderr and not (tmp_path / "tasks").exists()
    said = made.stderr.strip().splitlines()
    assert said[0] == f"domsum new-task: error: task 'messy': {len(expected)} bad lines in the data; fix them and run again:"
    assert len(said) == 1 + len(expected), made.stderr
    for line, want in zip(said[1:], expected):
        assert want in line, (line, want)

    data.rename(tmp_path / "messy_data")
    write_data(data, rows(6), rows(5, "t"))
    assert domsum(["new-task", "messy", "--data", "data", "--out", "tasks"], tmp_path).returncode == 0
    for name in ("test.jsonl", "train.jsonl"):
        (tmp_path / "messy_data" / name).replace(data / name)
    run = domsum(["run", "--model", "hf", "--model_args", "pretrained=no-such-model", "--include_path", "tasks",
                  "--tasks", "messy"], tmp_path)
    assert run.returncode == 2 and "stopping before the model loads" in run.stderr, run.stderr
    problems = [line for line in run.stderr.splitlines() if line.startswith("  - ")]
    assert len(problems) == len(expected) and all(w in p for p, w in zip(problems, expected)), run.stderr


def test_past_twenty_bad_lines_the_rest_are_counted(tmp_path):
    data = tmp_path / "data"
    write_data(data, rows(3), rows(3, "t"))
    broken = 27
    (data / "test.jsonl").write_text("".join('{"document": "no end\n' for _ in range(broken)))
    made = domsum(["new-task", "broken", "--data", "data", "--out", "tasks"], tmp_path)
    assert made.returncode == 2, made.stderr
    said = made.stderr.strip().splitlines()
    assert said[0].endswith(f"error: task 'broken': {broken} bad lines in the data; fix them and run again:")
    shown = said[1:21]
    assert [f"{data / 'test.jsonl'}, line {n}: invalid JSON" in line for n, line in enumerate(shown, 1)] == [True] * 20
    assert said[21:] == [f"  ... and {broken - 20} more bad line(s)"], made.stderr


def test_inputs_new_task_cannot_take_are_one_line_each_and_nothing_is_written(tmp_path):
    """A name with a trailing line break, a folder holding the user's own ``utils.py``, a
    test file that is a symbolic link to itself, a train file that is a folder."""
    write_data(tmp_path / "data", rows(3), rows(4, "t"))
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "utils.py").write_text("def helper(doc):\n    return doc\n")
    write_data(tmp_path / "looped", rows(3), None)
    (tmp_path / "looped" / "test.jsonl").unlink()
    (tmp_path / "looped" / "test.jsonl").symlink_to("test.jsonl")
    write_data(tmp_path / "foldered", rows(3), None)
    (tmp_path / "foldered" / "train.jsonl").mkdir()
    cases = [
        (["legal\n", "--data", "data", "--out", "tasks"],
         "task name 'legal\\n': use letters, digits and underscores, starting with a letter"),
        (["legal", "--data", "data", "--out", "project"],
         f"{tmp_path / 'project' / 'utils.py'} is not the suite's: it defines no SuiteTask"),
        (["legal", "--data", "looped", "--out", "tasks"],
         f"--data {tmp_path / 'looped'}: test.jsonl cannot be read: it is a symbolic link that leads back to itself"),
        (["legal", "--data", "foldered", "--out", "tasks"],
         f"--data {tmp_path / 'foldered'}: train.jsonl cannot be read: it is a folder, not a file"),
    ]
    for args, said in cases:
        made = domsum(["new-task", *args], tmp_path)
        lines = made.stderr.strip().splitlines()
        assert made.returncode == 2 and len(lines) == 1 and "Traceback" not in made.stderr, made.stderr
        assert lines[0].startswith(f"domsum new-task: error: {said}"), lines[0]
    assert not (tmp_path / "tasks").exists()
    assert sorted(p.name for p in (tmp_path / "project").iterdir()) == ["utils.py"]


def test_a_setting_typed_into_the_yaml_stops_run_before_the_model_naming_the_yaml(tmp_path):
    """The user never passed ``--metadata``: the typo is named with the YAML that holds it,
    in one line, before any model loads (``no-such-model`` would fail to load)."""
    write_data(tmp_path / "data", rows(3), rows(4, "t"))
    assert domsum(["new-task", "typo", "--data", "data", "--out", "tasks"], tmp_path).returncode == 0
    yaml_path = tmp_path / "tasks" / "typo.yaml"
    yaml_path.write_text(yaml_path.read_text().replace("  rouge_stemming: true", "  rouge_stemmin: true"))
    run = domsum(["run", "--model", "hf", "--model_args", "pretrained=no-such-model", "--include_path",
                  str(tmp_path / "tasks"), "--tasks", "typo,typo_2shot"], tmp_path)
    assert run.returncode == 2 and "Initializing hf model" not in run.stderr, run.stderr
    assert run.stderr.strip().splitlines() == [
        f"domsum run: error: task 'typo' ({yaml_path}): metadata: unknown setting 'rouge_stemmin'; did you mean "
        f"'rouge_stemming'? The settings are listed in docs/settings.md and in lm_eval_tasks/settings.py."]


def test_a_document_field_in_no_record_is_one_line_in_new_task_and_run(tmp_path):
    """``--document-field text`` for chat records whose field is ``dialogue``: one line naming
    the flag, the file, the records read and the fields they have (not a hundred bad lines);
    the same field written into a YAML is one problem line of ``domsum run``."""
    chats = [{"id": f"c{i}", "dialogue": f"A: hello {i}\nB: hi", "summary": f"greeting {i}"} for i in range(100)]
    data = write_data(tmp_path / "data", chats, chats[:5])
    made = domsum(["new-task", "chat", "--data", "data", "--out", "tasks", "--document-field", "text"], tmp_path)
    assert made.returncode == 2 and not (tmp_path / "tasks").exists()
    assert made.stderr.strip().splitlines() == [
        f"domsum new-task: error: {data / 'test.jsonl'}: none of its 100 record(s) has the field 'text' "
        f"(--document-field); their fields: id, dialogue, summary"]
    near = domsum(["new-task", "chat", "--data", "data", "--out", "tasks", "--document-field", "dialog"], tmp_path)
    assert near.stderr.strip().endswith("their fields: id, dialogue, summary; did you mean 'dialogue'?"), near.stderr

    assert domsum(["new-task", "chat", "--data", "data", "--out", "tasks", "--document-field", "dialogue"],
                  tmp_path).returncode == 0
    yaml_path = tmp_path / "tasks" / "chat.yaml"
    yaml_path.write_text(yaml_path.read_text().replace('document_field: "dialogue"', 'document_field: "text"'))
    run = domsum(["run", "--model", "hf", "--model_args", "pretrained=no-such-model", "--include_path", "tasks",
                  "--tasks", "chat"], tmp_path)
    assert run.returncode == 2 and "Initializing hf model" not in run.stderr, run.stderr
    problems = [line for line in run.stderr.splitlines() if line.startswith("  - ")]
    assert problems == [f"  - task 'chat': {data / 'test.jsonl'}: none of its 100 record(s) has the field 'text' "
                        f"(document_field); their fields: id, dialogue, summary"], run.stderr


def test_a_harness_task_whose_data_is_not_cached_stops_run_before_the_model_offline(tmp_path):
    """``--tasks mine,hellaswag`` offline, with an empty Hugging Face cache: one line naming
    hellaswag's dataset and the offline variables, before the model loads (was: the model
    loaded, then a 35-line hub traceback)."""
    write_data(tmp_path / "data", rows(3), rows(4, "t"))
    assert domsum(["new-task", "mine", "--data", "data", "--out", "tasks"], tmp_path).returncode == 0
    env = subprocess_env(HF_HOME=str(tmp_path / "hf"), HF_DATASETS_CACHE=str(tmp_path / "hf" / "datasets"))
    run = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "run", "--model", "hf", "--model_args",
                          "pretrained=no-such-model", "--include_path", "tasks", "--tasks", "mine,hellaswag"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr and "Initializing hf model" not in run.stderr, run.stderr
    lines = run.stderr.strip().splitlines()
    assert lines[0] == "domsum run: error: stopping before the model loads:" and len(lines) == 2, run.stderr
    assert lines[1].startswith(
        "  - task 'hellaswag' is a harness task, not the suite's; its data (Rowan/hellaswag) is not in the local "
        "Hugging Face cache and offline mode is on (HF_HUB_OFFLINE=1, HF_DATASETS_OFFLINE=1): run it once where "
        "the hub is reachable, or leave it out of --tasks ("), run.stderr
