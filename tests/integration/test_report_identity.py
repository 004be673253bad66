"""``domsum report``: what makes a system, and which documents a comparison is on.

A system is a model plus every setting that changes its outputs (chat template, system
instruction, generation and prompt-budget settings, judge, ...); runs that differ in
one of them are separate systems, never pooled, never dropped, and a difference is
taken only on the documents both runs logged, with those n shown.

The module fixture runs the real harness CLI (``domsum run``) with the tiny GPT-2 of
``conftest``: a plain 0-shot run on 3 documents, a plain 2-shot run on 2, a later
chat-template 2-shot run on 3 (the case that used to replace the plain 2-shot run and
be paired with the plain 0-shot one), and a 0-shot run with ``max_doc_words=20``. An
API run is a copy of the plain 0-shot results edited as ``local-chat-completions``
with ``model=foo`` writes them. Every number checked is recomputed here from the
samples files.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sstats

from conftest import own_samples, report_table, run_lm_eval
from lm_eval_tasks.commands import report
from lm_eval_tasks.report.runs import load_runs
from lm_eval_tasks.report.systems import system_of
from helpers.report_identity import TASK_0, TASK_2


def _samples(folder: Path, task: str) -> dict[str, dict]:
    """doc id -> logged per-document scores of ``task`` under ``folder``."""
    return {rec["doc"]["id"]: {k: rec[k] for k in rec["metrics"]} for rec in own_samples(folder, task)}


def _mean(values) -> float:
    return float(np.mean(values))


def _geo(triples) -> float:
    means = np.mean(np.asarray(triples, dtype=float), axis=0)
    return float(np.prod(means) ** (1 / 3)) if (means > 0).all() else 0.0


def _exact_p(a, b) -> float:
    """scipy's paired permutation test of the mean difference (exact for a few documents)."""
    res = sstats.permutation_test((np.asarray(a), np.asarray(b)), lambda x, y: np.mean(x) - np.mean(y),
                                  permutation_type="samples", n_resamples=10_000, alternative="two-sided")
    return float(res.pvalue)


def _bertscore_pair(runs: dict, task: str, first: tuple[str, str], second: tuple[str, str]):
    """The significance table's BERTScore row comparing two (system label, run folder)
    pairs, in the row's A/B order: (row, A's and B's logged samples, and their scores on
    the documents both logged)."""
    rows = report_table(runs["out"], "significance")
    r = next(r for r in rows if r["Key"] == "BERTScore" and {r["A"], r["B"]} == {first[0], second[0]})
    one, two = (_samples(runs["root"] / folder, task) for _, folder in (first, second))
    a, b = (one, two) if r["A"] == first[0] else (two, one)
    docs = [d for d in a if d in b]
    return r, a, b, [a[d]["bertscore_f1"] for d in docs], [b[d]["bertscore_f1"] for d in docs]


def _value(cell: str) -> float:
    return float(cell.split()[0])


def _copy_run(src: Path, dst: Path, edit=None, ts: str | None = None, edit_sample=None) -> Path:
    """A copy of the one results file (and its samples) under ``src`` into ``dst``, the
    results JSON passed through ``edit`` and each samples line through ``edit_sample``."""
    [results] = list(src.rglob("results_*.json"))
    old_ts = results.name[len("results_"):-len(".json")]
    new_ts = ts or old_ts
    dst.mkdir(parents=True, exist_ok=True)
    data = json.loads(results.read_text(encoding="utf-8"))
    if edit:
        edit(data)
    (dst / f"results_{new_ts}.json").write_text(json.dumps(data), encoding="utf-8")
    for sample in results.parent.glob(f"samples_*_{old_ts}.jsonl"):
        lines = sample.read_text(encoding="utf-8").splitlines()
        if edit_sample:
            lines = [json.dumps(edit_sample(json.loads(line))) for line in lines if line.strip()]
        (dst / sample.name.replace(old_ts, new_ts)).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dst


def _as_api(data: dict) -> None:
    """What ``--model local-chat-completions --model_args model=foo,base_url=...`` records."""
    data["config"]["model"] = "local-chat-completions"
    data["config"]["model_args"] = "model=foo,base_url=http://127.0.0.1:9/v1/chat/completions,num_concurrent=1"
    for key in ("model_num_parameters", "model_dtype", "model_revision", "model_sha"):
        data["config"].pop(key, None)
    data.update(model_source="local-chat-completions", model_name="foo", model_name_sanitized="foo",
                chat_template="", chat_template_sha=None, fewshot_as_multiturn=True)
    for cfg in data["configs"].values():
        cfg["metadata"].pop("pretrained", None)
        cfg["metadata"]["model"] = "foo"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_causal_lm, fixture_data_dir, minilm_path):
    root = tmp_path_factory.mktemp("identity_runs")
    meta = {"data_dir": str(fixture_data_dir), "bertscore_model": minilm_path, "bertscore_layers": 6}
    common = ["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}", "--batch_size", "4",
              "--log_samples"]
    folders = {
        "plain0": ["--tasks", TASK_0, "--limit", "3", "--metadata", json.dumps(meta)],
        "plain2": ["--tasks", TASK_2, "--limit", "2", "--metadata", json.dumps(meta)],
        "chat": ["--tasks", TASK_2, "--limit", "3", "--metadata", json.dumps(meta), "--apply_chat_template"],
        "budget": ["--tasks", TASK_0, "--limit", "3", "--metadata", json.dumps({**meta, "max_doc_words": 20})],
    }
    for name, args in folders.items():  # in this order: the chat run is later than the plain 2-shot run
        run_lm_eval([*common, *args], root / name)
    _copy_run(root / "plain0", root / "api" / "foo", edit=_as_api)
    out = root / "report"
    paths = [str(root / n) for n in (*folders, "api")]
    assert report.main([*paths, "--out", str(out), "--no-progress", "--no-plots"]) == 0
    return {"root": root, "out": out, "model": Path(tiny_causal_lm).name, "tiny": tiny_causal_lm}


def test_results_json_records_what_identity_reads(runs):
    """The fields the identity is read from, as lm-eval 0.4.13 writes them."""
    chat = json.loads(next((runs["root"] / "chat").rglob("results_*.json")).read_text())
    plain = json.loads(next((runs["root"] / "plain2").rglob("results_*.json")).read_text())
    budget = json.loads(next((runs["root"] / "budget").rglob("results_*.json")).read_text())
    assert chat["chat_template"] and len(chat["chat_template_sha"]) == 64 and chat["fewshot_as_multiturn"] is True
    assert plain["chat_template"] is None and plain["chat_template_sha"] is None
    assert budget["configs"][TASK_0]["metadata"]["max_doc_words"] == 20
    assert system_of(chat["config"], results=chat, task=TASK_2).identity != \
        system_of(plain["config"], results=plain, task=TASK_2).identity
    assert system_of(plain["config"], results=plain, task=TASK_2).identity == \
        system_of(plain["config"], results=json.loads(next((runs["root"] / "plain0").rglob("results_*.json"))
                                                       .read_text()), task=TASK_0).identity


def test_chat_and_plain_runs_are_two_systems_in_everyreport_table(runs):
    m = runs["model"]
    rows = report_table(runs["out"], "domainsum_scores")
    assert {(r["System"], r["Setting"], r["n"]) for r in rows} == {
        (m, "0-shot", "3"), (m, "2-shot", "2"), (f"{m} (chat)", "2-shot", "3"),
        (f"{m} [max_doc_words=20]", "0-shot", "3"), ("foo", "0-shot", "3")}
    md = (runs["out"] / "report.md").read_text(encoding="utf-8")
    assert "the latest" not in md  # nothing de-duplicated: the plain 2-shot run is not dropped
    assert f"{m}, {m} (chat), {m} [max_doc_words=20]: one model run with different settings" in md
    # each row's numbers are its own run's: the chat 2-shot row is the chat samples, not the plain ones
    plain2, chat = _samples(runs["root"] / "plain2", TASK_2), _samples(runs["root"] / "chat", TASK_2)
    by = {(r["System"], r["Setting"]): r for r in rows}
    assert _value(by[(m, "2-shot")]["BERTScore"]) == pytest.approx(
        100 * _mean([d["bertscore_f1"] for d in plain2.values()]), abs=0.005)
    assert _value(by[(f"{m} (chat)", "2-shot")]["BERTScore"]) == pytest.approx(
        100 * _mean([d["bertscore_f1"] for d in chat.values()]), abs=0.005)
    scores = list(csv.DictReader(open(runs["out"] / "scores.csv", encoding="utf-8")))
    chat_row = next(r for r in scores if r["system"] == f"{m} (chat)")
    chat_results = json.loads(next((runs["root"] / "chat").rglob("results_*.json")).read_text())
    assert chat_row["settings"] == f"chat template {chat_results['chat_template_sha'][:7]}"


def test_fewshot_as_multiturn_is_not_what_the_suite_did(runs):
    """lm-eval records ``fewshot_as_multiturn: true`` for the chat run, but the 2-shot prompt
    the model received is one user turn holding both demonstrations: the chat template applied
    to the record's whole prompt as a single user message. So the settings column never says
    fewshot_as_multiturn."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(runs["tiny"])
    [sample] = own_samples(runs["root"] / "chat", TASK_2)[:1]
    prompt = sample["doc"]["prompt"]
    assert "Example 1:\nDocument: " in prompt and "Example 2:\nDocument: " in prompt  # both demonstrations
    one_turn = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                       add_generation_prompt=True)
    assert sample["arguments"]["gen_args_0"]["arg_0"] == one_turn
    scores = list(csv.DictReader(open(runs["out"] / "scores.csv", encoding="utf-8")))
    assert not any("multiturn" in r["settings"] for r in scores)


def test_settings_table_compares_one_system_on_shared_documents(runs):
    m = runs["model"]
    rows = {r["System"]: r for r in report_table(runs["out"], "domainsum_settings")}
    assert set(rows) == {m, f"{m} (chat)", f"{m} [max_doc_words=20]", "foo"}
    r = rows[m]
    zero, two = _samples(runs["root"] / "plain0", TASK_0), _samples(runs["root"] / "plain2", TASK_2)
    docs = [d for d in zero if d in two]
    assert len(zero) == 3 and len(two) == 2 and len(docs) == 2
    assert (r["n 0-shot"], r["n 2-shot"], r["n shared"]) == ("3", "2", "2")
    x0 = [zero[d]["bertscore_f1"] for d in docs]
    x2 = [two[d]["bertscore_f1"] for d in docs]
    # the scores beside Δ are on the 2 shared documents, so Δ is their difference; the scores
    # table holds the 0-shot run on all its 3
    assert _value(r["BERTScore 0-shot"]) == pytest.approx(100 * _mean(x0), abs=0.005)
    [full] = [x for x in report_table(runs["out"], "domainsum_scores") if (x["System"], x["Setting"]) == (m, "0-shot")]
    all0 = 100 * _mean([d["bertscore_f1"] for d in zero.values()])
    assert _value(full["BERTScore"]) == pytest.approx(all0, abs=0.005)
    assert abs(all0 - 100 * _mean(x0)) > 0.01  # the third document scores otherwise: two document sets
    assert _value(r["BERTScore 2-shot"]) == pytest.approx(100 * _mean(x2), abs=0.005)
    assert float(r["Δ BERTScore (2−0)"]) == pytest.approx(100 * (_mean(x2) - _mean(x0)), abs=0.005)
    assert float(r["p (BERTScore, 2−0)"].rstrip("*")) == pytest.approx(_exact_p(x2, x0), abs=0.0005)
    geo0 = _geo([zero[d]["rouge_geo"] for d in docs])
    geo2 = _geo([two[d]["rouge_geo"] for d in docs])
    assert float(r["Δ ROUGE (2−0)"]) == pytest.approx(100 * (geo2 - geo0), abs=0.005)
    md = (runs["out"] / "report.md").read_text(encoding="utf-8")
    assert (f"{m} / cnndm: compared on the 2 documents both runs logged (0-shot has 3, 2-shot 2); "
            "the scores beside Δ are on those 2") in md
    # the chat system has no 0-shot run: not compared with the plain 0-shot run
    c = rows[f"{m} (chat)"]
    chat = _samples(runs["root"] / "chat", TASK_2)
    assert (c["n 0-shot"], c["n 2-shot"], c["n shared"]) == ("n/a", "3", "—")
    assert c["BERTScore 0-shot"] == "n/a" and c["Δ BERTScore (2−0)"] == "n/a" and c["p (BERTScore, 2−0)"] == "n/a"
    assert _value(c["BERTScore 2-shot"]) == pytest.approx(
        100 * _mean([d["bertscore_f1"] for d in chat.values()]), abs=0.005)
    assert (f"{m} (chat) / cnndm: no 0-shot run with the same settings; not compared with {m}, "
            f"{m} [max_doc_words=20] (0-shot), whose settings differ") in md


def test_significance_pairs_systems_on_shared_documents_with_n(runs):
    m = runs["model"]
    r, a, b, xa, xb = _bertscore_pair(runs, TASK_2, (f"{m} (2-shot)", "plain2"), (f"{m} (chat) (2-shot)", "chat"))
    assert (r["n shared"], r["n A"], r["n B"]) == ("2", str(len(a)), str(len(b)))
    assert {len(a), len(b)} == {2, 3}
    assert float(r["A score"]) == pytest.approx(100 * _mean(xa), abs=0.005)
    assert float(r["B score"]) == pytest.approx(100 * _mean(xb), abs=0.005)
    assert float(r["A − B"]) == pytest.approx(100 * (_mean(xa) - _mean(xb)), abs=0.005)
    assert float(r["p"].rstrip("*")) == pytest.approx(_exact_p(xa, xb), abs=0.0005)
    md = (runs["out"] / "report.md").read_text(encoding="utf-8")
    assert "compared on the 2 documents both logged (of " in md


def test_api_run_is_named_by_its_served_model(runs):
    rows = report_table(runs["out"], "domainsum_scores")
    [foo] = [r for r in rows if r["System"] == "foo"]
    logged = _samples(runs["root"] / "api", TASK_0)
    assert _value(foo["BERTScore"]) == pytest.approx(100 * _mean([d["bertscore_f1"] for d in logged.values()]),
                                                     abs=0.005)
    assert not any("local-chat-completions" in r["System"] for r in rows)
    scores = list(csv.DictReader(open(runs["out"] / "scores.csv", encoding="utf-8")))
    assert {(r["base"], r["settings"]) for r in scores if r["system"] == "foo"} == {("foo", "chat")}
    # the same model name under pretrained= is not an API run
    assert system_of({"model": "vllm", "model_args": "pretrained=org/m,model=x"}).base == "org/m"
    assert system_of({"model": "openai-completions", "model_args": {"model": "gpt-x"}}).base == "gpt-x"


def test_runs_differing_in_max_doc_words_are_two_systems(runs):
    m = runs["model"]
    r, a, b, xa, xb = _bertscore_pair(runs, TASK_0, (f"{m} (0-shot)", "plain0"),
                                      (f"{m} [max_doc_words=20] (0-shot)", "budget"))
    assert r["n shared"] == r["n A"] == r["n B"] == "3"
    assert float(r["A − B"]) == pytest.approx(100 * (_mean(xa) - _mean(xb)), abs=0.005)
    loaded = load_runs([str(runs["root"] / "plain0"), str(runs["root"] / "budget")], with_samples=False)
    assert sorted(r.system.label for r in loaded.runs) == [m, f"{m} [max_doc_words=20]"]
    assert [r.system.describe() for r in loaded.runs if r.system.label != m] == ["max_doc_words=20"]


def test_no_shared_documents_are_not_paired_and_repeats_are_deduplicated(runs, tmp_path):
    """A system whose 2-shot run logged other documents than its 0-shot run: not compared
    (said in Notes); the same system's run found twice on as many documents: a repeat, the
    later one used and the other listed under Runs left out with why."""
    root, m = runs["root"], runs["model"]

    def other_model_args(data):  # one setting changed: a new system, labelled by it
        data["config"]["model_args"] = {"pretrained": str(runs["tiny"]), "max_length": 4096}

    def other_doc(rec):
        rec["doc"]["id"] = "other-" + str(rec["doc"]["id"])
        return rec

    _copy_run(root / "plain0", tmp_path / "ml" / "a", edit=other_model_args)
    _copy_run(root / "plain2", tmp_path / "ml" / "b", edit=other_model_args, edit_sample=other_doc)
    _copy_run(root / "plain0", tmp_path / "again" / "m", ts="2999-01-01T00-00-00.000001")
    out = tmp_path / "report"
    folders = [str(root / "plain0"), str(root / "plain2"), str(tmp_path / "ml"), str(tmp_path / "again")]
    assert report.main([*folders, "--out", str(out), "--no-progress", "--no-plots"]) == 0
    rows = {r["System"]: r for r in report_table(out, "domainsum_settings")}
    assert set(rows) == {m, f"{m} [max_length=4096]"}
    r = rows[f"{m} [max_length=4096]"]
    assert (r["n 0-shot"], r["n 2-shot"], r["n shared"]) == ("3", "2", "0")
    assert r["Δ BERTScore (2−0)"] == r["p (BERTScore, 2−0)"] == "n/a"
    zero = _samples(root / "plain0", TASK_0)
    assert _value(r["BERTScore 0-shot"]) == pytest.approx(100 * _mean([d["bertscore_f1"] for d in zero.values()]),
                                                          abs=0.005)
    md = (out / "report.md").read_text(encoding="utf-8")
    notes = md[md.index("## Notes"):]
    assert f"{m} [max_length=4096] / cnndm: 0-shot (3 documents) and 2-shot (2) share no document; not compared" \
        in notes
    assert (f"domainsum / cnndm: {m} (2-shot) (2 documents) and {m} [max_length=4096] (2-shot) (2) share no "
            "document; not compared") in notes
    sig = report_table(out, "significance")
    assert not any({x["A"], x["B"]} == {f"{m} (2-shot)", f"{m} [max_length=4096] (2-shot)"} for x in sig)
    # the plain 0-shot run twice (same system, same task, same documents): one row, the later file;
    # the other named with the reason
    scores = report_table(out, "domainsum_scores")
    assert [x["Setting"] for x in scores if x["System"] == m] == ["0-shot", "2-shot"]
    [later] = list((tmp_path / "again").rglob("results_*.json"))
    [earlier] = list((root / "plain0").rglob("results_*.json"))
    assert [(x["Results file"], x["Task"], x["System"], x["Why left out"]) for x in report_table(out, "runs_left_out")] \
        == [(str(earlier), TASK_0, m, f"same system, settings and task as {later}, which is used: a repeat on as many "
                                      "documents (3), of which the later run is used")]
    assert "the latest" not in md


def test_runs_in_one_folder_are_their_own_systems_under_the_names_given(runs, tmp_path):
    """Two runs side by side in one folder with different settings are two systems, never
    "the latest file"; ``run_label`` in a run's metadata and ``--label FOLDER=NAME`` name them
    on the page and in scores.csv."""
    root, m = runs["root"], runs["model"]
    one = tmp_path / "one" / "model"

    def named(data):
        data["configs"][TASK_0]["metadata"]["run_label"] = "short docs"

    _copy_run(root / "plain0", one)
    _copy_run(root / "budget", one, edit=named)
    assert len(list(one.glob("results_*.json"))) == 2
    zero, budget = _samples(root / "plain0", TASK_0), _samples(root / "budget", TASK_0)

    def check(out: Path, plain: str, short: str) -> None:
        rows = {r["System"]: r for r in report_table(out, "domainsum_scores")}
        assert {(k, r["Setting"], r["n"]) for k, r in rows.items()} == {(plain, "0-shot", "3"), (short, "0-shot", "3")}
        for label, logged in ((plain, zero), (short, budget)):
            assert _value(rows[label]["BERTScore"]) == pytest.approx(
                100 * _mean([d["bertscore_f1"] for d in logged.values()]), abs=0.005)
        scores = list(csv.DictReader(open(out / "scores.csv", encoding="utf-8")))
        assert {(r["system"], r["settings"], Path(r["results_file"]).parent) for r in scores} == {
            (plain, "", one), (short, "max_doc_words=20", one)}
        assert not (out / "tables" / "runs_left_out.csv").exists()  # nothing left out
        page = (out / "report.html").read_text(encoding="utf-8")
        assert f">{short}</td>" in page and f">{plain}</td>" in page

    out = tmp_path / "named"
    assert report.main([str(tmp_path / "one"), "--out", str(out), "--no-progress", "--no-plots"]) == 0
    check(out, m, "short docs")
    # the report's --label names the folder's runs (over run_label); their settings still tell them apart
    out = tmp_path / "labelled"
    assert report.main([str(tmp_path / "one"), "--label", f"{one}=tiny", "--out", str(out), "--no-progress",
                        "--no-plots"]) == 0
    check(out, "tiny", "tiny [max_doc_words=20]")
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "tiny, tiny [max_doc_words=20]: one model run with different settings (max_doc_words)" in md
