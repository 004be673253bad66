"""What makes two runs one system: the identity rules on hand-made records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lm_eval_tasks import catalog
from lm_eval_tasks.analysis.amplitude import FLIP_KEY
from lm_eval_tasks.analysis.change_amplitude import ORIGINAL, STUDY_FILE, flipped_control, run_folder
from lm_eval_tasks.report.runs import load_runs
from lm_eval_tasks.report.systems import System, label_systems, same_model_notes, system_of
from lm_eval_tasks.results import ResultsError
from helpers.report_identity import TASK_0, TASK_2


def _system(task: str = TASK_0, config: dict | None = None, meta: dict | None = None,
            gen: dict | None = None, **top) -> System:
    config = {"model": "hf", "model_args": "pretrained=org/m", **(config or {})}
    task_cfg = {"metadata": meta or {}}
    if gen is not None:
        task_cfg["generation_kwargs"] = gen
    results = {"config": config, "configs": {task: task_cfg}, **top}
    return system_of(config, results=results, task=task)


def test_identity_rules():
    spec = catalog.lookup(TASK_0)
    plain = _system()
    assert plain.settings == () and plain.base == "org/m"
    # generation: greedy decoding and the catalogue's max_gen_toks are no setting; CLI overrides are
    defaults = {"until": list(spec.until), "max_gen_toks": spec.max_gen_toks, "do_sample": False, "temperature": 0.0}
    assert _system(gen=defaults).identity == plain.identity
    assert _system(config={"gen_kwargs": "do_sample=false,temperature=0"}, gen=defaults).identity == plain.identity
    assert dict(_system(config={"gen_kwargs": {"max_gen_toks": 64}}, gen={**defaults, "max_gen_toks": 64})
                .settings) == {"gen_kwargs.max_gen_toks": "64"}
    assert dict(_system(config={"gen_kwargs": "max_gen_toks=64"}).settings) == {"gen_kwargs.max_gen_toks": "64"}
    assert dict(_system(gen={**defaults, "temperature": 0.7, "do_sample": True}).settings) == {
        "gen_kwargs.do_sample": "true", "gen_kwargs.temperature": "0.7"}
    # prompt settings: set ones count, defaults do not; settings_used (resolved) before metadata
    assert dict(_system(meta={"max_doc_words": 200}).settings) == {"max_doc_words": "200"}
    assert _system(meta={"fewshot_seed": 1234}).identity == plain.identity
    assert dict(_system(meta={"settings_used": {"max_doc_tokens": {"value": 300, "from": "environment"}}})
                .settings) == {"max_doc_tokens": "300"}
    assert _system(meta={"settings_used": {"max_doc_tokens": {"value": None, "from": "default"}}}).settings == ()
    assert dict(_system(config={"model_args": "pretrained=org/m,max_length=2048"}).settings) == {"max_length": "2048"}
    # a judge counts on the tasks it scores only
    judged = "adapteval_pubmed_judged"
    assert _system(meta={"judge_model": "gpt-a"}).settings == ()
    assert dict(_system(judged, meta={"judge_model": "gpt-a"}).settings) == {"judge_model": "gpt-a"}
    assert dict(_system(judged, meta={"judge_model_used": "gpt-b", "judge_model": "gpt-a"}).settings) == {
        "judge_model": "gpt-b"}
    assert dict(_system("adapteval_pubmed", meta={"prompt_variant_used": "release"}).settings) == {
        "adapteval_prompt_variant": "release"}
    assert _system("adapteval_pubmed", meta={"prompt_variant_used": "paper"}).settings == ()
    # chat template and system instruction; not fewshot_as_multiturn, which no suite prompt depends on
    # (the demonstrations are in the one user turn's text: tests/integration/test_report_identity.py)
    chat = _system(chat_template="{{ x }}", chat_template_sha="abc1234def", fewshot_as_multiturn=True)
    assert dict(chat.settings) == {"chat_template": "abc1234def"}
    assert _system(chat_template="{{ x }}", chat_template_sha="abc1234def", fewshot_as_multiturn=False).identity \
        == chat.identity
    assert _system(chat_template=None, fewshot_as_multiturn=False).identity == plain.identity
    assert dict(_system(chat_template="").settings) == {"chat_template": "provider"}
    told = _system(system_instruction="Summarize briefly.", system_instruction_sha="f00d")
    assert dict(told.settings) == {"system_instruction": "f00d"}
    # the model: gguf_file and revision name files; an adapter pairs with its base on the same settings
    gguf = _system(config={"model_args": "pretrained=org/m-GGUF,gguf_file=m-q8_0.gguf"})
    lora = _system(config={"model_args": "pretrained=org/m,peft=/ckpt/lora"}, meta={"max_doc_words": 200})
    assert lora.base_setup == _system(meta={"max_doc_words": 200}).setup != plain.setup
    # labels: the model's name, then what differs between the systems of one model
    chat2 = _system(chat_template="{{ y }}", chat_template_sha="9999999fff", fewshot_as_multiturn=True)
    budget = _system(meta={"max_doc_words": 200})
    labels = label_systems([plain, chat, budget, gguf, told])
    assert [labels[s.identity] for s in (plain, chat, budget, gguf, told)] == [
        "org/m", "org/m (chat)", "org/m [max_doc_words=200]", "org/m-GGUF/m-q8_0.gguf",
        'org/m [system instruction "Summarize briefly."]']
    labels = label_systems([plain, chat, chat2])
    assert [labels[s.identity] for s in (plain, chat, chat2)] == ["org/m", "org/m (chat abc1234)",
                                                                  "org/m (chat 9999999)"]
    assert label_systems([chat])[chat.identity] == "org/m"  # one system of a model: its name alone


def test_a_name_is_part_of_the_identity_and_the_label():
    plain = _system()
    named = _system(meta={"run_label": "  baseline  "})
    assert named.name == "baseline" and named.setup == plain.setup and named.identity != plain.identity
    given = system_of({"model": "hf", "model_args": "pretrained=org/m"}, results={"config": {}}, name="mine")
    assert given.name == "mine"  # domsum report --label: the same field
    chat = _system(chat_template="{{ x }}", chat_template_sha="abc1234def", meta={"run_label": "baseline"})
    labels = label_systems([plain, named, chat])
    assert [labels[s.identity] for s in (plain, named, chat)] == ["org/m", "baseline", "baseline (chat)"]
    notes = same_model_notes([plain, named], label_systems([plain, named]))
    assert notes == ["baseline, org/m: one model run with different settings (run_label); reported as separate "
                     "systems, never pooled (the significance table compares them pair by pair on the documents "
                     "both logged)"]


def test_a_flipped_change_amplitude_run_is_a_variant(tmp_path):
    task = "ccsbench_compositional"
    plain, flipped = _system(task), _system(task, meta={FLIP_KEY: "focus"})
    assert dict(flipped.settings) == {FLIP_KEY: "focus"} and flipped.identity != plain.identity
    assert (flipped.variant, plain.variant) == ("focus flipped (change amplitude)", "")
    # a study written before its runs recorded the flip: known by the layout change-amplitude writes
    results = run_folder(tmp_path, "readability") / "org__m" / "results_2024-01-01T00-00-00.json"
    original = run_folder(tmp_path, ORIGINAL) / "org__m" / "results_2024-01-01T00-00-00.json"
    assert flipped_control({}, results) is None  # no study file beside the run folders: no study
    (tmp_path / STUDY_FILE).write_text("{}")
    assert flipped_control({}, results) == "readability" and flipped_control({}, original) is None
    assert flipped_control({FLIP_KEY: "length"}, original) == "length"  # what the run recorded first
    legacy = system_of({"model": "hf", "model_args": "pretrained=org/m"}, task=task, results_file=results,
                       results={"config": {"model_args": "pretrained=org/m"}, "configs": {task: {"metadata": {}}}})
    assert legacy.variant == "readability flipped (change amplitude)"


def _results(folder: Path, ts: str, n: int, meta: dict | None = None, task: str = TASK_0) -> Path:
    """A results file as lm-eval writes one (the fields the report reads), ``n`` documents."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"results_{ts}.json"
    path.write_text(json.dumps({
        "results": {task: {"alias": task, "rouge1,none": n / 100}}, "n-samples": {task: {"original": 50, "effective": n}},
        "config": {"model": "hf", "model_args": "pretrained=org/m"},
        "configs": {task: {"metadata": {"data_source": f"{folder.name}/test.jsonl", **(meta or {})}}}}))
    return path


def test_which_results_file_stands_for_a_system_and_why(tmp_path):
    """Several files of one system and task: the one with the most documents, the later of
    repeats, the others named with the reason; other settings, names and study variants are
    never "the same run"."""
    one = tmp_path / "runs"
    trial = _results(one / "trial", "2024-01-02T00-00-00.000001", 3)  # a --limit trial, written later
    full = _results(one / "full", "2024-01-01T00-00-00.000001", 20)
    other = _results(one / "budget", "2024-01-03T00-00-00.000001", 20, {"max_doc_words": 200})
    flipped = _results(one / "flip", "2024-01-04T00-00-00.000001", 20, {FLIP_KEY: "focus"},
                       task="ccsbench_compositional")
    loaded = load_runs([str(one)], with_samples=False)
    assert sorted((r.system.label, r.results_file) for r in loaded.runs) == [
        ("org/m", full), ("org/m [max_doc_words=200]", other)]
    why = {x.results_file: x for x in loaded.left_out}
    assert set(why) == {trial, flipped}
    assert why[trial].reason.startswith(f"same system, settings and task as {full}, which is used: it evaluated "
                                        "the most documents (20; this run 3); the two read their documents from "
                                        "different places (trial/test.jsonl; full/test.jsonl)")
    assert (why[flipped].task, why[flipped].system) == ("ccsbench_compositional",
                                                        "org/m [focus flipped (change amplitude)]")
    assert why[flipped].reason.startswith("focus flipped (change amplitude) on every document: a run of a "
                                          "change-amplitude study, not the model's run of ccsbench_compositional")
    # repeats on as many documents: the later one, said so
    again = tmp_path / "again"
    first, second = (_results(again / "m", ts, 5) for ts in ("2024-01-01T00-00-00.1", "2024-02-01T00-00-00.1"))
    loaded = load_runs([str(again)], with_samples=False)
    assert [r.results_file for r in loaded.runs] == [second]
    assert [(x.results_file, x.reason) for x in loaded.left_out] == [
        (first, f"same system, settings and task as {second}, which is used: a repeat on as many documents (5), "
                "of which the later run is used")]


def test_names_from_metadata_and_from_the_report(tmp_path):
    root = tmp_path / "runs"
    _results(root / "zero", "2024-01-01T00-00-00.1", 4, {"run_label": "baseline"})
    _results(root / "two", "2024-01-01T00-00-00.2", 4, task=TASK_2)
    loaded = load_runs([str(root)], with_samples=False)  # the unnamed 2-shot run joins "baseline"
    assert sorted((r.system.label, r.task) for r in loaded.runs) == [("baseline", TASK_0), ("baseline", TASK_2)]
    _results(root / "tuned", "2024-01-01T00-00-00.3", 4)
    loaded = load_runs([str(root)], with_samples=False, labels={str(root / "tuned"): "tuned prompt"})
    assert sorted((r.system.label, r.task) for r in loaded.runs) == [
        ("baseline", TASK_0), ("org/m", TASK_2), ("tuned prompt", TASK_0)]
    assert loaded.left_out == []  # two names: two systems, nothing de-duplicated
    # --label wins over the metadata name, the deepest folder first
    loaded = load_runs([str(root)], with_samples=False, labels={str(root): "all", str(root / "zero"): "renamed"})
    assert sorted((r.system.label, r.task, r.results_file.parent.name) for r in loaded.runs) == [
        ("all", TASK_0, "tuned"), ("all", TASK_2, "two"), ("renamed", TASK_0, "zero")]
    with pytest.raises(ResultsError, match=r"--label .*nowhere=x: names no run \(no results file"):
        load_runs([str(root)], with_samples=False, labels={str(tmp_path / "nowhere"): "x"})
