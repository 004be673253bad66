"""CCSBench records and prompts without a model: keyword formats, column spellings, bad rows,
the Appendix C prompts, prompt files and the change-amplitude pieces.
"""

import json

import pytest

from lm_eval_tasks.benchmarks.ccsbench.build import (
    build_docs, normalize_records, parse_keywords, resolve_columns,
)
from lm_eval_tasks.data.loader import DataError
from helpers.e2e_ccsbench import (
    C4,
    INSTRUCTION_PART,
    PAPER_CONTROLS,
    SYSTEM_PART,
    split_system,
    write_prompt_file,
)


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
                   "readability": "readability_level", "focus": "empirical_focus", "full_text": None}
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
    from lm_eval_tasks.benchmarks.ccsbench.build import build_prompt
    from lm_eval_tasks.benchmarks.ccsbench.prompts import DEFAULT

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
    from lm_eval_tasks.benchmarks.ccsbench.build import build_prompt
    from lm_eval_tasks.benchmarks.ccsbench.prompts import DEFAULT

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
    from lm_eval_tasks.benchmarks.ccsbench.prompts import DEFAULT

    assert DEFAULT.focus_source == "CCSBench Appendix C.3 (paper text)"
    assert d["prompt"].startswith(INSTRUCTION_PART + "\nDocument: Introduction. Seed banks")
    assert d["prompt"].endswith("\n# Control signals\nKeywords: ”seed banks”, ”germination”, "
                                "”near infrared”\n# Output\nSummary:")
    hard, facts = build_docs("compositional", 0, "ccsbench_compositional_hard", dict(meta), hard=True)
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
    from lm_eval_tasks.benchmarks.ccsbench.prompts import DEFAULT

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
    from lm_eval_tasks.benchmarks.ccsbench.prompts import load_prompt_spec

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
    from lm_eval_tasks.benchmarks.ccsbench.prompts import DEFAULT, load_prompt_spec, spec_as_json

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
    hard = build_docs("keywords", 0, "ccsbench_keywords_hard", dict(meta), hard=True)[0][1]
    assert hard["prompt"].startswith("Keywords: error messages, novices, compiler\nPaper: ") and hard["system"] == ""
    assert DEFAULT.system != spec.system
