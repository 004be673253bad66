"""Bad inputs at the boundary: every one is a one-paragraph error naming what to fix,
or a counted skip; never a silent wrong number, a traceback, lost work or a leaked key.

Each class of fault the suite guards against has its tests here, through the real
commands where the fault enters there (``lm_eval`` through ``domsum run``, ``domsum
rescore``, ``domsum report``, ``python -m finetune``), and property-based tests
(Hypothesis) for the settings resolver, the loader and the table writers.
"""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st


from custom_metrics import registry
from custom_metrics.families import judge_metrics
from custom_metrics.setting import as_int
from lm_eval_tasks import settings
from lm_eval_tasks.report.formats import latex_table, markdown_table, md_escape
from lm_eval_tasks.data.loader import DataError, load_split
from lm_eval_tasks.settings import SettingError
from helpers.bad_inputs import TASK, _mirror


@pytest.mark.parametrize("key,value,says", [
    ("max_doc_words", 0, ">= 1"), ("max_doc_words", -5, ">= 1"), ("max_doc_words", 2.5, "must be int"),
    ("max_doc_words", "2.5", "must be int"), ("max_doc_tokens", -1, ">= 1"), ("sample_test", 0, ">= 1"),
    ("sample_test", -1, ">= 1"), ("filter_extractive_overlap", "high", "must be float"),
    ("filter_max_summary_words", {"arxiv": 0}, "int or {name: int}"), ("judge_logprobs", "maybe", "one of"),
    ("judge_timeout", 0, "> 0"), ("fm_variant", "many", "one of zero, few"), ("bertscore_batch_size", True, "int"),
])
def test_out_of_range_or_mistyped_settings_are_errors(key, value, says):
    with pytest.raises(SettingError) as info:
        settings.check_metadata({key: value}, "test")
    assert key in str(info.value) and says in str(info.value) and repr(value) in str(info.value)


def test_unknown_keys_name_the_nearest_setting():
    with pytest.raises(SettingError, match=r"unknown setting 'data_dri'; did you mean 'data_dir'\?"):
        settings.check_metadata({"data_dri": "x"}, "test")
    with pytest.raises(SettingError, match=r"'max_doc_word'; did you mean 'max_doc_words'\?"):
        settings.check_metadata({"max_doc_word": 3}, "test", allowed={"pretrained"})
    # the model's own arguments (merged into task metadata by lm-eval) are not settings, and fine
    settings.check_metadata({"pretrained": "gpt2", "max_length": 64, "version": 2.0}, "t",
                            allowed={"pretrained", "max_length"})
    # model arguments that cannot be known: only a near miss of a setting is an error
    settings.check_metadata({"trust_remote_code": True}, "t", allowed=None)
    with pytest.raises(SettingError):
        settings.check_metadata({"max_doc_word": 3}, "t", allowed=None)


@hsettings(max_examples=150, deadline=None)
@given(st.sampled_from([k for k, s in settings.SETTINGS.items() if s.kind is as_int]),
       st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True), st.text(max_size=8), st.booleans()))
def test_integer_settings_resolve_to_the_value_or_refuse(key, value):
    """Property: an integer setting either resolves to exactly the integer given (within its
    range) or is a SettingError naming the key; never truncated, never a traceback."""
    row = settings.SETTINGS[key]
    if value in ("",):
        return
    try:
        got = settings.resolve({key: value}, key)
    except SettingError as exc:
        assert key in str(exc)
        return
    assert not isinstance(value, bool) and got == float(value) == int(got)
    assert row.check(got) is None


def test_duplicate_ids_are_an_error_naming_both_lines(tmp_path):
    rows = [json.dumps({"id": "a", "document": "d1", "summary": "s1"}), "",
            json.dumps({"id": "b", "document": "d2", "summary": "s2"}),
            json.dumps({"id": "a", "document": "d3", "summary": "s3"})]
    with pytest.raises(DataError, match=r"test\.jsonl, line 4: field 'id': id 'a' is already used at line 1"):
        load_split("domainsum", "cnndm", "test", _mirror(tmp_path, rows), task=TASK)


def test_lone_surrogates_and_mixed_id_types(tmp_path):
    bad = '{"id": "x", "document": "caf\\ud800", "summary": "s"}'
    with pytest.raises(DataError, match=r"line 1: field 'document' holds a lone surrogate"):
        load_split("domainsum", "cnndm", "test", _mirror(tmp_path / "a", [bad]), task=TASK)
    mixed = [json.dumps({"id": 1, "document": "d", "summary": "s"}),
             json.dumps({"id": "1b", "document": "d", "summary": "s"})]
    recs = load_split("domainsum", "cnndm", "test", _mirror(tmp_path / "b", mixed), task=TASK)
    assert [r["id"] for r in recs] == ["1", "1b"]


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.text(max_size=6), st.integers(0, 5), st.none()), min_size=1, max_size=6))
def test_loader_ids_unique_or_a_clear_error(tmp_path_factory, ids):
    """Property: any list of ids loads with unique string ids, or is a DataError naming the line."""
    root = tmp_path_factory.mktemp("ids")
    rows = [json.dumps({**({} if i is None else {"id": i}), "document": "d", "summary": "s"}) for i in ids]
    try:
        recs = load_split("domainsum", "cnndm", "test", _mirror(root, rows), task=TASK)
    except DataError as exc:
        assert re.search(r"line \d+", str(exc)), exc
        return
    got = [r["id"] for r in recs]
    assert len(set(got)) == len(got) and all(isinstance(i, str) for i in got)


@hsettings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=12), min_size=2, max_size=4))
def test_markdown_cells_never_split_a_row(cells):
    """Property: a table row of any user strings has exactly its cells (unescaped pipes)."""
    row = markdown_table([f"h{i}" for i in range(len(cells))], [cells]).splitlines()[2]
    assert "\n" not in row
    unescaped = re.findall(r"(?<!\\)(?:\\\\)*\|", row)
    assert len(unescaped) == len(cells) + 1, row


def test_tex_specials_are_escaped():
    tex = latex_table(["Model", "ROUGE"], [["my{model}_v2 & 50% #1 $x$ ~ ^ \\", "1.0"]])
    assert r"my\{model\}\_v2 \& 50\% \#1 \$x\$ \textasciitilde{} \textasciicircum{} \textbackslash{}" in tex
    assert md_escape("a|b") == "a\\|b" and md_escape("a\\|b") == "a\\\\\\|b"


def test_fm_details_never_replace_an_earlier_file(tmp_path):
    asked = tmp_path / "fm.jsonl"
    asked.write_text("earlier run\n")
    first = judge_metrics.fm_details_file(str(asked))
    assert first == tmp_path / "fm.2.jsonl" and asked.read_text() == "earlier run\n"
    assert judge_metrics.fm_details_file(str(asked)) == first  # every task of one run: one file
    assert registry.json_safe({"a": [math.nan, 1.0], "b": math.inf}) == {"a": [None, 1.0], "b": None}


def test_binary_and_latin1_vocabularies_are_named_by_line(tmp_path):
    from custom_metrics.families.dvo import VocabularyError, read_vocabulary

    latin = tmp_path / "latin1.tsv"
    latin.write_bytes("word\t3\ncaf\xe9\t2\n".encode("latin-1"))
    with pytest.raises(VocabularyError, match=r"latin1\.tsv, line 2: not valid UTF-8.*re-encode"):
        read_vocabulary(latin)
    binary = tmp_path / "binary.tsv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(VocabularyError, match=r"binary\.tsv: NUL bytes: this is a binary file"):
        read_vocabulary(binary)


@hsettings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
       st.sampled_from([(1, 3), (1, 4), (1, 5), (1, 10)]))
def test_judge_replies_parse_to_a_score_on_the_scale_or_nothing(reply, scale):
    """Property: a reply is read as a number it contains that lies on the scale, or not at all;
    never coerced (clipped, sign dropped, another scale's number)."""
    from custom_metrics.judge.parse import parse_score

    got = parse_score(reply, scale)
    if got is None:
        return
    assert scale[0] <= got <= scale[1]
    assert got in [float(n) for n in re.findall(r"\d+(?:\.\d+)?", reply)], (reply, got)  # a number it holds


@pytest.mark.parametrize("reply,scale,expected", [
    ("4", (1, 5), 4.0), ("-1", (1, 5), None), ("5/10", (1, 5), None), ("4/5", (1, 5), 4.0),
    ("Coherence (1-5): 3", (1, 5), 3.0), ("7", (1, 5), None), ("80%", (1, 5), None), ("0", (1, 3), None),
])
def test_judge_reply_cases(reply, scale, expected):
    from custom_metrics.judge.parse import parse_score

    assert parse_score(reply, scale) == expected


def test_repeated_ids_of_a_hub_split_are_renamed_and_traceable(monkeypatch, caplog):
    """A hub split cannot be edited: a repeated id gets its own, naming the one it repeats."""
    from lm_eval_tasks.data import loader

    monkeypatch.delenv("DOMSUM_DATA_DIR", raising=False)
    rows = [{"id": "x", "document": "d1", "summary": "s"}, {"id": "x", "document": "d2", "summary": "s"},
            {"id": "x", "document": "d3", "summary": "s"}]
    monkeypatch.setattr(loader, "_load_hub_split", lambda *a, **k: [dict(r) for r in rows])
    recs = load_split("domainsum", "cnndm", "test", None, task=TASK)
    assert [r["id"] for r in recs] == ["x", "x#2", "x#3"]
    assert [r.get("duplicate_id_of") for r in recs] == [None, "x", "x"]
    assert any("2 record(s) repeat an earlier id" in r.getMessage() for r in caplog.records)
