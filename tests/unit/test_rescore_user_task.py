"""Re-scoring the samples of a user's own task keeps that task's conventions, or asks.

Why: samples copied away from their run (no results file beside them) used to be scored
with another benchmark's ROUGE convention (AdaptEval's stemming) and labelled with that
benchmark, without a word. Here a task made by ``domsum new-task`` whose YAML says
``rouge_stemming: false`` is re-scored from its samples alone: through ``--include_path``
or ``$DOMSUM_INCLUDE_PATH`` its YAML's setting applies, and says so; without either the
command stops with one line naming the two ways; beside its results file the run's record
applies. Every ROUGE value is recomputed here with rouge-score itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rouge_score import rouge_scorer

from lm_eval_tasks import catalog, cli
from lm_eval_tasks.benchmarks.own.configs import read_task_yaml
from lm_eval_tasks.commands.rescore import build_parser
from helpers.rescore import _outputs

TS = "2025-02-03T04-05-06.000007"
#: (reference, prediction): inflected forms, so that Porter stemming changes every score
PAIRS = [("ships sailed into the harbours", "the ship sails into harbour"),
         ("moorings were checked by the wardens", "the warden checks mooring"),
         ("cranes loading containers at the docks", "a crane loads container at dock")]


@pytest.fixture
def user_task(tmp_path, monkeypatch):
    """(the task folder, a samples file of its task in another folder, its YAML), with the
    suite's catalogue fresh and no include path, stemming or vocabulary folder in the environment."""
    for var in ("DOMSUM_INCLUDE_PATH", "DOMSUM_ROUGE_STEMMING", "DOMSUM_VOCAB_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(catalog, "_TABLE", None)
    data = tmp_path / "data"
    data.mkdir()
    for split in ("test", "train"):
        rows = [{"document": f"the {ref} today, said the harbour office", "summary": ref} for ref, _ in PAIRS]
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tasks = tmp_path / "tasks"
    assert cli.main(["new-task", "harbour", "--data", str(data), "--out", str(tasks)]) == 0
    yaml_path = tasks / "harbour.yaml"
    text = yaml_path.read_text()
    assert text.count("rouge_stemming: true") == 1
    yaml_path.write_text(text.replace("rouge_stemming: true", "rouge_stemming: false"))
    run = tmp_path / "copied"
    run.mkdir()
    samples = run / f"samples_harbour_{TS}.jsonl"
    samples.write_text("".join(json.dumps({
        "doc_id": i, "doc": {"id": f"harbour-{i}", "document": f"the {ref} today", "summary": ref},
        "target": ref, "resps": [[pred]], "filtered_resps": [pred], "filter": "none"}) + "\n"
        for i, (ref, pred) in enumerate(PAIRS)))
    return tasks, samples, yaml_path


def rouge_of(stemming: bool) -> tuple[dict[str, float], list[dict[str, float]]]:
    """Corpus means and per-document F1 of :data:`PAIRS` by rouge-score itself."""
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=stemming)
    per = [{k: s.fmeasure for k, s in scorer.score(ref, pred).items()} for ref, pred in PAIRS]
    return {k: sum(d[k] for d in per) / len(per) for k in ("rouge1", "rouge2", "rougeL")}, per


def check_unstemmed(out: Path, samples: Path, yaml_path: Path) -> None:
    scores, summary = _outputs(out, samples)
    means, per = rouge_of(stemming=False)
    stemmed, _ = rouge_of(stemming=True)
    assert all(abs(means[k] - stemmed[k]) > 0.05 for k in means)  # stemming would have shown
    for key, value in means.items():
        assert summary["metrics"][key] == pytest.approx(value, abs=1e-12)
        assert [row[key] for row in scores] == pytest.approx([d[key] for d in per], abs=1e-12)
    assert summary["record"]["rouge_stemming"] is False
    assert summary["settings_from_task_yaml"] == {"task_yaml": str(yaml_path.resolve()),
                                                  "taken": {"rouge_stemming": False}, "kept_from_flags": {}}
    assert "settings_from_run" not in summary
    assert (summary["benchmark"], summary["domain"], summary["task"]) == ("own", "harbour", "harbour")


def test_the_include_path_gives_the_yamls_stemming(user_task, tmp_path, capsys):
    tasks, samples, yaml_path = user_task
    out = tmp_path / "o"
    assert cli.main(["rescore", str(samples), "--metrics", "rouge", "--include_path", str(tasks),
                     "--out", str(out), "--no-progress"]) == 0
    check_unstemmed(out, samples, yaml_path)
    assert "settings of the task's YAML (harbour.yaml), taken: rouge_stemming=False" in capsys.readouterr().out


def test_domsum_include_path_gives_the_yamls_stemming(user_task, tmp_path, monkeypatch):
    tasks, samples, yaml_path = user_task
    monkeypatch.setenv("DOMSUM_INCLUDE_PATH", str(tasks))
    assert cli.main(["rescore", str(samples), "--metrics", "rouge", "--out", str(tmp_path / "o"),
                     "--no-progress"]) == 0
    check_unstemmed(tmp_path / "o", samples, yaml_path)


def test_a_flag_still_wins_over_the_yaml(user_task, tmp_path):
    tasks, samples, _ = user_task
    assert cli.main(["rescore", str(samples), "--metrics", "rouge1", "--include_path", str(tasks),
                     "--metadata", '{"rouge_stemming": true}', "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    _, summary = _outputs(tmp_path / "o", samples)
    stemmed, _ = rouge_of(stemming=True)
    assert summary["metrics"]["rouge1"] == pytest.approx(stemmed["rouge1"], abs=1e-12)
    assert summary["settings_from_task_yaml"]["taken"] == {}
    assert summary["settings_from_task_yaml"]["kept_from_flags"] == {"rouge_stemming": True}


def test_without_the_folder_one_line_asks_for_it(user_task, tmp_path, capsys):
    _, samples, _ = user_task
    assert cli.main(["rescore", str(samples), "--metrics", "rouge", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "task 'harbour'" in err and "--include_path FOLDER" in err and "--task NAME" in err
    assert "adapteval" not in err
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())  # nothing scored
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z_-]*", err))
    assert flags and flags <= set(build_parser()._option_string_actions), flags


def test_the_vocabulary_error_names_only_flags_rescore_takes(user_task, tmp_path, capsys):
    _, samples, _ = user_task
    assert cli.main(["rescore", str(samples), "--metrics", "dvo", "--benchmark", "own",
                     "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "dvo" in err and "--include_path" in err, err
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z_-]*", err))
    assert flags <= set(build_parser()._option_string_actions), flags


def test_beside_its_results_file_the_runs_record_applies_without_the_folder(user_task, tmp_path):
    """The results file records the task's configuration: the domain is known from it, and the
    stemming the run used is taken from it (not the YAML's, which may have been edited since)."""
    tasks, samples, yaml_path = user_task
    config = read_task_yaml(yaml_path)
    config["metadata"]["settings_used"] = {"rouge_stemming": {"value": False, "from": "metadata"}}
    results = samples.parent / f"results_{TS}.json"
    results.write_text(json.dumps({"results": {"harbour": {}}, "configs": {"harbour": config}}))
    assert cli.main(["rescore", str(samples), "--metrics", "rouge", "--out", str(tmp_path / "o"),
                     "--no-progress"]) == 0
    _, summary = _outputs(tmp_path / "o", samples)
    means, _ = rouge_of(stemming=False)
    assert summary["metrics"]["rouge1"] == pytest.approx(means["rouge1"], abs=1e-12)
    assert summary["settings_from_run"] == {"results_file": str(results), "taken": {"rouge_stemming": False},
                                            "kept_from_flags": {}}
    assert "settings_from_task_yaml" not in summary
    assert (summary["benchmark"], summary["domain"]) == ("own", "harbour")


def test_an_include_path_that_is_no_folder_is_one_line(user_task, tmp_path, capsys):
    _, samples, _ = user_task
    with pytest.raises(SystemExit) as stop:
        cli.main(["rescore", str(samples), "--include_path", str(tmp_path / "nowhere")])
    assert stop.value.code == 2
    assert capsys.readouterr().err == f"domsum rescore: error: include path {tmp_path / 'nowhere'} is not a folder\n"
