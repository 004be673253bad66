"""A user's domain as a record: what ``domsum new-task`` writes reads back as the same
catalogue row, and bad YAML is one error naming the field and the close names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finetune.card import eval_command
from lm_eval_tasks import catalog
from lm_eval_tasks.benchmarks.own.configs import RecordError, read_task_yaml, spec_from_config, task_configs
from lm_eval_tasks.catalog import register_folder
from lm_eval_tasks.benchmarks.own.folder import NewTask, default_max_gen_toks, write_folder


@pytest.fixture(autouse=True)
def own_table(monkeypatch):
    """A fresh catalogue table for each test, so the domains registered here leave the
    process-wide one as it was."""
    monkeypatch.setattr(catalog, "_TABLE", None)


def _data(folder: Path, n_test: int = 3, n_train: int = 4) -> Path:
    folder.mkdir(parents=True)
    for split, n in (("test", n_test), ("train", n_train)):
        rows = [{"text": f"document {split} {i} about contracts and courts", "gist": f"summary {i}"}
                for i in range(n)]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _write(tmp_path: Path, name: str = "legalx", **kw) -> NewTask:
    req = NewTask(name=name, out=tmp_path / "tasks", data=_data(tmp_path / "data"),
                  document_field="text", summary_field="gist", **kw)
    return write_folder(req)


def test_written_yaml_reads_back_as_the_catalogue_row(tmp_path):
    done = _write(tmp_path, level="law")
    assert sorted(p.name for p in done.written) == ["README.md", "legalx.yaml", "legalx_2shot.yaml", "utils.py"]
    assert done.counts == {"test": 3, "train": 4}
    configs = dict((p.name, c) for p, c in task_configs(done.out))
    zero = spec_from_config(configs["legalx.yaml"], str(done.out / "legalx.yaml"))
    two = spec_from_config(configs["legalx_2shot.yaml"], str(done.out / "legalx_2shot.yaml"))
    assert (zero.benchmark, zero.subset, zero.level, zero.shots) == ("own", "legalx", "law", 0)
    assert (two.subset, two.shots, two.max_gen_toks) == ("legalx", 2, zero.max_gen_toks)
    assert zero.source.document_field == "text" and zero.source.splits["test"] == str(tmp_path / "data" / "test.jsonl")
    assert zero.max_gen_toks == default_max_gen_toks(["summary 0"] * 4) == 32


def test_an_existing_folder_is_not_replaced(tmp_path):
    _write(tmp_path)
    with pytest.raises(RecordError, match="exists; pass --overwrite"):
        write_folder(NewTask(name="legalx", out=tmp_path / "tasks", data=tmp_path / "data",
                             document_field="text", summary_field="gist"))


def test_a_field_in_no_record_is_said_once_with_the_fields_there(tmp_path):
    """A field name no record has is one error for the file (not one bad line per record),
    with the fields the records have and the close names, named as new-task's flag there
    and as the record's field elsewhere; a field some records lack is still one bad line
    each, naming file, line and field."""
    from lm_eval_tasks.benchmarks.own.folder import _source
    from lm_eval_tasks.data.records import BadLines
    from lm_eval_tasks.data.user_files import FieldInNoRecord, read_split

    data = _data(tmp_path / "data", n_test=30)
    with pytest.raises(RecordError) as err:
        write_folder(NewTask(name="legalx", out=tmp_path / "tasks", data=data, document_field="body",
                             summary_field="gist"))
    assert str(err.value) == (f"{data / 'test.jsonl'}: none of its 30 record(s) has the field 'body' "
                              f"(--document-field); their fields: text, gist")
    source = _source(NewTask(name="legalx", out=tmp_path / "tasks", data=data, document_field="text",
                             summary_field="Gists"))
    with pytest.raises(FieldInNoRecord) as err:
        read_split(source, "train")
    assert str(err.value) == (f"{data / 'train.jsonl'}: none of its 4 record(s) has the field 'Gists' "
                              f"(summary_field); their fields: text, gist; did you mean 'gist'?")
    lines = (data / "test.jsonl").read_text().splitlines()
    lines[4] = json.dumps({"text": "a document without its summary"})
    (data / "test.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(BadLines, match=r"test.jsonl, line 5: missing field 'gist'"):
        write_folder(NewTask(name="legalx", out=tmp_path / "tasks", data=data, document_field="text",
                             summary_field="gist"))
    assert not (tmp_path / "tasks").exists()


def test_every_bad_csv_row_is_one_problem_of_one_error_in_file_order(tmp_path):
    """A row with more cells than the header and repeated ids (found after every row is
    read) come back together, in the file's order, with the task named once."""
    from lm_eval_tasks.data.records import BadLines

    data = tmp_path / "data"
    data.mkdir()
    (data / "test.csv").write_text("key,text,gist\nk1,doc one,sum\nk1,doc two,sum\nk3,doc,sum,extra\nk4,d,s\nk1,d,s\n")
    (data / "train.csv").write_text("key,text,gist\nt1,doc,sum\n")
    with pytest.raises(BadLines) as err:
        write_folder(NewTask(name="legalx", out=tmp_path / "tasks", data=data, document_field="text",
                             summary_field="gist", id_field="key"))
    test = data / "test.csv"
    assert err.value.problems == [
        f"{test}, line 3: field 'key': id 'k1' is already used at line 2; ids must be unique (scores and "
        f"comparisons are keyed by them). Give each record its own id, or remove the id field to number "
        f"records by position.",
        f"{test}, line 4: more cells than the header has columns",
        f"{test}, line 6: field 'key': id 'k1' is already used at line 2; ids must be unique (scores and "
        f"comparisons are keyed by them). Give each record its own id, or remove the id field to number "
        f"records by position."]
    assert str(err.value).splitlines()[0] == "task 'legalx': 3 bad lines in the data; fix them and run again:"
    assert not (tmp_path / "tasks").exists()


def test_unknown_record_fields_and_families_name_the_close_ones(tmp_path):
    done = _write(tmp_path)
    config = read_task_yaml(done.out / "legalx.yaml")
    bad = {**config, "metadata": {**config["metadata"], "domain": {**config["metadata"]["domain"], "levl": "x"}}}
    with pytest.raises(RecordError, match="unknown field.*levl.*did you mean level"):
        spec_from_config(bad, "legalx.yaml")
    fam = {**config, "metadata": {**config["metadata"],
                                  "domain": {**config["metadata"]["domain"], "families": ["rogue"]}}}
    with pytest.raises(RecordError, match="unknown metric family 'rogue'; did you mean rouge"):
        spec_from_config(fam, "legalx.yaml")
    for typed, meant in (("ROUGE", "rouge"), ("BERTScore", "bertscore"), ("Dvo", "dvo")):
        cased = {**config, "metadata": {**config["metadata"],
                                        "domain": {**config["metadata"]["domain"], "families": [typed]}}}
        with pytest.raises(RecordError, match=f"unknown metric family '{typed}'; did you mean {meant}\\b"):
            spec_from_config(cased, "legalx.yaml")


def test_a_setting_typed_into_the_yaml_is_an_error_naming_the_yaml(tmp_path):
    """A mistyped setting in a task YAML's metadata is found where its folder is registered
    (``domsum run`` before the model loads, every ``domsum`` command given the folder), in a
    line naming the YAML, not ``--metadata``; a known setting of the wrong type too."""
    done = _write(tmp_path)
    yaml_path = done.out / "legalx.yaml"
    text = yaml_path.read_text()
    assert "  rouge_stemming: true" in text
    yaml_path.write_text(text.replace("  rouge_stemming: true", "  rouge_stemmin: true"))
    with pytest.raises(RecordError) as err:
        register_folder(done.out)
    assert str(err.value) == (f"task 'legalx' ({yaml_path}): metadata: unknown setting 'rouge_stemmin'; did you "
                              f"mean 'rouge_stemming'? The settings are listed in docs/settings.md and in "
                              f"lm_eval_tasks/settings.py.")
    yaml_path.write_text(text.replace("  rouge_stemming: true", "  max_doc_words: 0"))
    with pytest.raises(RecordError, match=rf"^task 'legalx' \({yaml_path}\): metadata: setting 'max_doc_words' "
                                          r"\(metadata 'max_doc_words'\) must be >= 1, got 0$"):
        register_folder(done.out)
    yaml_path.write_text(text)
    assert {s.name for s in register_folder(done.out)} == {"legalx", "legalx_2shot"}


def test_a_suite_name_cannot_be_taken(tmp_path):
    done = _write(tmp_path)
    config = {**read_task_yaml(done.out / "legalx.yaml"), "task": "domainsum_cnndm"}
    with pytest.raises(catalog.UnknownTask, match="already a task or group of the suite"):
        catalog.register(spec_from_config(config, str(done.out / "legalx.yaml")))


def test_fine_tuning_points_lm_eval_at_the_users_folder(tmp_path):
    done = _write(tmp_path, name="legaly")
    register_folder(done.out)
    command = eval_command("base-model", str(tmp_path / "adapter"), "legaly", "causal", "lora")
    assert f"--include_path {done.out}" in command
    assert f"--include_path {catalog.TASKS_DIR}" in eval_command("b", "o", "domainsum_cnndm", "causal", "lora")


def test_new_task_and_the_yaml_it_writes_assemble_one_and_the_same_source(tmp_path):
    import dataclasses

    from lm_eval_tasks.benchmarks.own import folder as own_folder

    req = NewTask(name="legalx", out=tmp_path / "tasks", data=_data(tmp_path / "data"), document_field="text",
                  summary_field="gist", prompt="Summarize: {document}")
    from_flags = own_folder._source(req)
    write_folder(req)
    read_back = spec_from_config(read_task_yaml(req.out / "legalx.yaml"), str(req.out / "legalx.yaml")).source
    assert dataclasses.replace(read_back, origin="") == from_flags
    assert read_back.origin == str(req.out / "legalx.yaml")
    with pytest.raises(RecordError, match=r"^--prompt has no \{document\} placeholder$"):
        own_folder._source(dataclasses.replace(req, prompt="Summarize it."))


def test_the_task_loading_its_data_names_every_bad_line_at_once(tmp_path):
    """Plain ``lm_eval`` reaches no data check before the model: the task's own loading of
    a file that went bad after ``new-task`` names every bad line, in the file's order."""
    from lm_eval_tasks.data.loader import load_split
    from lm_eval_tasks.data.records import BadLines

    done = _write(tmp_path)
    (spec,) = [s for s in register_folder(done.out) if s.name == "legalx"]
    test = tmp_path / "data" / "test.jsonl"
    good = json.dumps({"text": "a document", "gist": "a summary"})
    test.write_text("\n".join([good, "{not json", good, json.dumps({"text": "no summary"}),
                               json.dumps({"text": 3, "gist": "s"})]) + "\n")
    with pytest.raises(BadLines) as err:
        load_split(spec.benchmark, spec.subset, "test", task="legalx")
    assert [p.split(": ")[0] for p in err.value.problems] == [f"{test}, line {n}" for n in (2, 4, 5)]
    assert str(err.value).splitlines()[0] == "task 'legalx': 3 bad lines in the data; fix them and run again:"
