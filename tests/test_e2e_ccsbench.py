"""CCSBench: loader (column spellings, keywords formats, bad input) and the real lm_eval CLI."""

import json
import math

import pytest

from conftest import run_lm_eval, sample_files, subprocess_env
from lm_eval_tasks.ccsbench.utils import (
    build_docs, normalize_records, parse_keywords, resolve_columns,
)
from lm_eval_tasks.common.data import DataError

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


def test_prompts_leave_out_absent_controls(fixture_data_dir):
    meta = {"data_dir": str(fixture_data_dir)}
    d = build_docs("keywords", 0, "ccsbench_keywords", meta)[0]
    assert "keywords: seed banks, germination, near infrared." in d["prompt"]
    assert "words long" not in d["prompt"] and "readability" not in d["prompt"]
    assert d["prompt"].endswith("\nSummary:")
    d = build_docs("keywords", 0, "ccsbench_keywords_hard", meta)[1]
    assert d["prompt"].startswith("Keywords: error messages, novices, compiler\nPaper: ")
    docs = build_docs("compositional", 3, "ccsbench_compositional_3shot", dict(meta))
    again = build_docs("compositional", 3, "ccsbench_compositional_3shot", dict(meta))
    assert [x["demo_ids"] for x in docs] == [x["demo_ids"] for x in again]
    assert docs[0]["prompt"].count("\nSummary:") == 4 and len(json.loads(docs[0]["demo_ids"])) == 3


# --------------------------------------------------------------------------- lm_eval


def check_rouge(r):
    for m in ROUGE:
        assert 0.0 <= r[f"{m},none"] <= 1.0


@pytest.mark.slow
def test_compositional_with_stub_judge(tmp_path, tiny_causal_lm, fixture_data_dir):
    from judge_server import StubJudgeServer, Text

    with StubJudgeServer() as server:
        server.set_default(Text("1"))  # every summary judged empirical (high focus)
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
    sample = json.loads(sample_files(tmp_path, "ccsbench_compositional")[0].read_text().splitlines()[0])
    prompt = sample["arguments"]["gen_args_0"]["arg_0"]
    assert "between 51 and 100 words" in prompt and prompt.endswith("\nSummary:")


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
        [sys.executable, "scripts/change_amplitude.py", "--model-args", f"pretrained={tiny_causal_lm}",
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
    import scripts.change_amplitude as ca

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

    from lm_eval_tasks.ccsbench.prompts import DEFAULT, load_prompt_spec

    out = subprocess.run([sys.executable, "-m", "lm_eval_tasks.ccsbench.prompts"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    f = tmp_path / "p.json"
    f.write_text(out.stdout, encoding="utf-8")
    spec = load_prompt_spec(f)
    assert spec.source.startswith(str(f.resolve())) and "sha256" in spec.source
    assert {k: v for k, v in vars(spec).items() if k != "source"} == \
        {k: v for k, v in vars(DEFAULT).items() if k != "source"}


@pytest.mark.parametrize("texts, message", [
    ({"instructions": "x"}, "unknown key(s) ['instructions']"),
    ({"turn": "{requirements}\nSummary:"}, "key 'turn' lacks placeholder(s) ['document']"),
    ({"keywords": "Use {kw}."}, "key 'keywords' uses placeholder(s) ['kw']"),
    ({"length": "Be short."}, "key 'length' needs at least one of"),
    ({"focus_judge": "Empirical? {summary"}, "key 'focus_judge'"),
    ({"instruction": 3}, "key 'instruction' must be a string"),
    ({"until": "\nPaper:"}, "key 'until' must be a non-empty list"),
])
def test_prompt_file_errors_name_file_and_key(tmp_path, texts, message):
    from lm_eval_tasks.ccsbench.prompts import load_prompt_spec

    f = write_prompt_file(tmp_path / "bad.json", **texts)
    with pytest.raises(DataError) as err:
        load_prompt_spec(f, "ccsbench_length")
    assert message in str(err.value) and str(f) in str(err.value) and "ccsbench_length" in str(err.value)
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="not valid UTF-8 JSON"):
        load_prompt_spec(tmp_path / "broken.json")
    with pytest.raises(DataError, match="cannot be read"):
        load_prompt_spec(tmp_path / "missing.json")


def test_prompt_file_replaces_texts_but_not_hard_lines(tmp_path, fixture_data_dir):
    f = write_prompt_file(tmp_path / "p.json", instruction="Summarise this paper.",
                          length="Use bin {bin} ({min_words}-{max_words} words).",
                          keywords="Mention {keywords}.", turn="### Task\n{requirements}\n### Paper\n{document}\n### Abstract\n",
                          answer_separator="", demo_separator="\n----\n")
    meta = {"data_dir": str(fixture_data_dir), "ccs_prompt_file": str(f)}
    d = build_docs("keywords", 0, "ccsbench_keywords", dict(meta))[0]
    assert d["prompt"].startswith("### Task\nSummarise this paper. Mention seed banks, germination, near infrared.\n"
                                  "### Paper\n")
    assert d["prompt"].endswith("\n### Abstract\n") and "Summary:" not in d["prompt"]
    docs = build_docs("compositional", 3, "ccsbench_compositional_3shot", dict(meta))
    p = docs[0]["prompt"]
    assert p.count("\n----\n") == 3 and p.count("### Task") == 4
    query = p.split("\n----\n")[-1]  # test row 0: bin 1, three keywords, normal, high
    assert query.startswith("### Task\nSummarise this paper. Use bin 1 (51-100 words). Mention seed banks, "
                            "germination, near infrared. The summary should have normal readability")
    hard = build_docs("keywords", 0, "ccsbench_keywords_hard", dict(meta))[1]["prompt"]
    assert hard.startswith("Keywords: error messages, novices, compiler\nPaper: ") and "###" not in hard


@pytest.mark.slow
def test_prompt_file_end_to_end_prompt_stops_and_judge(tmp_path, tiny_causal_lm, fixture_data_dir):
    from judge_server import StubJudgeServer, Text

    f = write_prompt_file(tmp_path / "p.json", turn="{requirements}\nARTICLE: {document}\nABSTRACT:",
                          until=["\nARTICLE:", "\n\n\n"],
                          focus_judge="PROMPT-FILE-JUDGE. Empirical (1) or conceptual (0)?\n{summary}\nAnswer:")
    with StubJudgeServer() as server:
        server.set_default(Text("1"))
        server.on("PROMPT-FILE-JUDGE", Text("0"))  # only the file's instruction gets 0
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
    assert "\nARTICLE: " in prompt and prompt.endswith("\nABSTRACT:")
    assert sample["arguments"]["gen_args_0"]["arg_1"]["until"] == ["\nARTICLE:", "\n\n\n"]
