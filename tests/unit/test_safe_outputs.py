"""The one writer, the CSV and Markdown cell escapes and the key masking, by their
properties (Hypothesis) and by the cases that once failed."""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import stat
from types import SimpleNamespace
from urllib.parse import quote

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from custom_metrics import secrets
from custom_metrics.cells import csv_cell, csv_text, frame_csv, markdown_table, md_escape, md_text
from custom_metrics.judge import JudgeConfig, JudgeConfigError
from custom_metrics.outputs import OutputExistsError, claim, output_folder, write_atomically

# ------------------------------------------------------------------ CSV cells

@given(st.text())
def test_no_neutralised_cell_starts_a_formula(text):
    cell = csv_cell(text)
    stripped = cell.lstrip(" \t\r\n\u00a0")
    if cell == text:  # left alone: harmless, or a plain number a spreadsheet reads as one
        if stripped[:1] and stripped[0] in "=+-@\uff1d\uff0b\uff0d\uff20" or cell[:1] and cell[0] in "\t\r\n":
            float(text)  # raises unless it is a number
    else:  # neutralised: the text itself, behind one quote
        assert cell == "'" + text


@given(st.lists(st.lists(st.one_of(st.text(), st.integers(), st.floats(allow_nan=False)), min_size=1, max_size=5),
                min_size=1, max_size=5))
def test_a_csv_reads_back_as_the_neutralised_cells(rows):
    back = list(csv.reader(io.StringIO(csv_text(None, rows), newline="")))
    assert back == [[str(csv_cell(c)) for c in row] for row in rows]


@pytest.mark.parametrize("number", ["-0.5", "+3", "-1e-4", ".5", "-12"])
def test_plain_numbers_stay_numbers(number):
    assert csv_cell(number) == number


@pytest.mark.parametrize("name", ["=SUM(1+1)", "+cmd", "-2+3", "@A1", "\t=1", "\r=1", "  =1", "=HYPERLINK(\"x\")"])
def test_formulas_are_quoted(name):
    assert csv_cell(name) == "'" + name


def test_a_frame_is_neutralised_cell_by_cell_whatever_its_dtype(tmp_path):
    """pandas 3 keeps text in ``str`` columns, not ``object`` ones: a metric named ``+cmd``
    in such a column once reached meta-eval's CSVs as a formula."""
    df = pd.DataFrame({"metric": pd.Series(["+cmd", "-x"], dtype="str"), "=r": [0.5, float("nan")],
                       "n": [3, -4], "note": pd.Series(["@a", None], dtype=object)})
    df.index = pd.Index(["=a", "b"], dtype="str", name="system")

    def back(path):
        with open(path, newline="", encoding="utf-8") as fh:
            return list(csv.reader(fh))

    assert back(frame_csv(df, tmp_path / "a.csv")) == [
        ["system", "metric", "'=r", "n", "note"], ["'=a", "'+cmd", "0.5", "3", "'@a"], ["b", "'-x", "", "-4", ""]]
    assert back(frame_csv(df, tmp_path / "b.csv", index=False))[1] == ["'+cmd", "0.5", "3", "'@a"]


# ------------------------------------------------------------------ Markdown cells

def _cells(row: str) -> list[str]:
    """A Markdown row's cells as a renderer splits them: at ``|`` not escaped by an odd
    number of backslashes."""
    cells, cur, i = [], "", 0
    while i < len(row):
        ch = row[i]
        if ch == "\\" and i + 1 < len(row):
            cur += row[i:i + 2]
            i += 2
            continue
        if ch == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    cells.append(cur)
    return cells[1:-1]


@given(st.lists(st.text(), min_size=1, max_size=6))
def test_a_markdown_row_keeps_its_cells_whatever_they_hold(cells):
    table = markdown_table([f"h{i}" for i in range(len(cells))], [cells])
    lines = table.rstrip("\n").split("\n")
    assert len(lines) == 3  # no cell breaks its row
    assert len(_cells(lines[2])) == len(cells)


@given(st.text())
def test_md_escape_leaves_no_unescaped_pipe_or_line_break(text):
    out = md_escape(text)
    assert not any(ch in out for ch in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
    assert len(_cells(f"| {out} |")) == 1


#: a CommonMark parser with tables; like most Markdown viewers it passes inline HTML through
COMMONMARK = MarkdownIt("commonmark").enable("table")
HOSTILE = ["x|<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "a\\<b>", "&lt;img src=x&gt;",
           "<http://x.example>", "R&D \\| team"]


def _html(text: str) -> list[str]:
    """The raw HTML a Markdown viewer would pass through from ``text``."""
    found = []
    for tok in COMMONMARK.parse(text):
        found += [tok.content] if tok.type == "html_block" else []
        found += [c.content for c in tok.children or [] if c.type == "html_inline"]
    return found


def _inline_texts(text: str) -> list[str]:
    return ["".join(c.content for c in tok.children) for tok in COMMONMARK.parse(text) if tok.type == "inline"]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_reads_as_its_own_text_in_a_table_and_a_line(name):
    table = markdown_table(["System", "ROUGE-1"], [[name, "12.50"]])
    assert _html(table) == [] and _inline_texts(table) == ["System", "ROUGE-1", name, "12.50"]
    line = f"1. no difference detected between {md_text(name)} and plain."
    assert _html(line) == [] and _inline_texts(line) == [f"no difference detected between {name} and plain."]


@given(st.lists(st.text(), min_size=1, max_size=4))
def test_no_cell_or_line_passes_html_through(texts):
    assert _html(markdown_table([f"h{i}" for i in range(len(texts))], [texts])) == []
    assert _html("\n\n".join(f"- {md_text(t)}" for t in texts)) == []


# ------------------------------------------------------------------ masking

KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", min_size=8,
               max_size=40).map(lambda k: "sk-" + k)


@settings(max_examples=200)
@given(KEYS, st.text(max_size=40), st.text(max_size=40))
def test_a_known_key_never_survives_masking(key, before, after):
    config = SimpleNamespace(api_key=key)  # a judge config's key is known to the mask
    for text in (before + key + after, before + json.dumps(key) + after, before + quote(key, safe="") + after):
        assert key not in secrets.mask(text, config)


@given(KEYS, st.sampled_from(["http://u:{k}@h:1/v1", "https://{k}@host/v1", "http://h/v1?api_key={k}",
                              "http://h/v1/?x=1&token={k}"]))
def test_a_url_key_is_masked_and_split_off(key, form):
    url = form.format(k=key)
    assert key not in secrets._mask_text(url, [])  # masked even when the key is unknown
    clean, found = secrets.split_url_key(url)
    assert found == key and key not in clean and "@" not in clean


def test_every_logger_and_exception_text_is_masked(monkeypatch):
    key = "sk-log-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    secrets.install_log_masking()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # added after installing: still masked
    root = logging.getLogger()
    root.addHandler(handler)
    old = root.level
    root.setLevel(logging.DEBUG)
    try:
        logging.getLogger("httpcore.http11").debug("send %s", f"Authorization: Bearer {key}")
        logging.getLogger("httpx").info("POST http://u:%s@h/v1", "sk-other-secret-99")
        try:
            raise RuntimeError(f"echo {key}")
        except RuntimeError:
            logging.getLogger("openai").exception("failed")
    finally:
        root.removeHandler(handler)
        root.setLevel(old)
    text = stream.getvalue()
    assert key not in text and "sk-other-secret-99" not in text
    assert text.count(secrets.MASK) == 2 and "u:***@h" in text


@pytest.mark.parametrize("key, found", [("sk-abc\u00a0", "NO-BREAK SPACE U+00A0"),
                                        ("sk-abc\r", "U+000D"), (" sk-abc", "begins with a space")])
def test_a_key_that_cannot_be_a_header_is_named(key, found):
    problem = secrets.key_problem(key)
    assert problem and found in problem and "sk-abc" not in problem
    with pytest.raises(JudgeConfigError, match=r"api_key \(setting judge_api_key\) must be"):
        JudgeConfig(model="m", base_url="http://127.0.0.1:1/v1", api_key=key)


def test_a_url_key_moves_to_the_config_key():
    cfg = JudgeConfig(model="m", base_url="http://user:sk-url-123456@127.0.0.1:9/v1")
    assert cfg.api_key == "sk-url-123456" and cfg.endpoint == "http://127.0.0.1:9/v1"
    # the URL's key is meant for that endpoint: it replaces a key from the environment
    cfg = JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1?api_key=sk-url-123456", api_key="sk-env-654321")
    assert cfg.api_key == "sk-url-123456" and cfg.endpoint == "http://127.0.0.1:9/v1"
    with pytest.raises(JudgeConfigError, match="has a query"):
        JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1?api_key=sk-url-123456&v=2")


# ------------------------------------------------------------------ the writer

@settings(max_examples=30, deadline=None)
@given(st.text())
def test_write_atomically_writes_exactly_the_text(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("w") / "out.txt"
    write_atomically(path, text)
    assert path.read_bytes().decode("utf-8") == text
    assert sorted(p.name for p in path.parent.iterdir()) == ["out.txt"]


def test_write_atomically_follows_the_umask_and_cleans_up_on_failure(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomically(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o640
    with pytest.raises(UnicodeEncodeError):
        write_atomically(tmp_path / "b.txt", "\udc80")  # fails while writing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_an_exclusive_write_never_replaces_a_file_that_appeared(tmp_path):
    (tmp_path / "a.txt").write_text("theirs")
    with pytest.raises(OutputExistsError, match="appeared while this command ran"):
        write_atomically(tmp_path / "a.txt", "ours", replace=False)
    assert (tmp_path / "a.txt").read_text() == "theirs" and len(list(tmp_path.iterdir())) == 1


def test_a_second_claim_refuses_and_the_lock_goes_with_the_first(tmp_path):
    target = tmp_path / "scores.jsonl"
    with claim(target):
        with pytest.raises(OutputExistsError, match=f"pid {os.getpid()}"):
            with claim(target):
                pass
    assert list(tmp_path.iterdir()) == []
    with claim(target):  # free again
        pass


def test_an_output_folder_appears_whole_or_not_at_all(tmp_path):
    out = tmp_path / "report"
    with pytest.raises(RuntimeError):
        with output_folder(out) as partial:
            (partial / "half.md").write_text("half")
            raise RuntimeError("midway")
    assert list(tmp_path.iterdir()) == []
    with output_folder(out) as partial:
        (partial / "whole.md").write_text("whole")
    assert [p.name for p in out.iterdir()] == ["whole.md"]
    with pytest.raises(OutputExistsError, match="--overwrite"):
        with output_folder(out):
            pass
    with output_folder(out, overwrite=True) as partial:
        (partial / "new.md").write_text("new")
    assert [p.name for p in out.iterdir()] == ["new.md"] and sorted(p.name for p in tmp_path.iterdir()) == ["report"]
