"""CCSBench's ``_fulltext`` tasks (Section 7, Table 7) without a model: the full text is read
from the record's ``full_text`` field (any recognised spelling, or ``column_map``), a split
without one is one error line, an empty full text is a counted skip, and the prompt is the
Appendix C.4 prompt with the full text in place of the introduction and conclusion, cut to
the full-text word budget and fitted to a window by cutting the document only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lm_eval_tasks import catalog
from lm_eval_tasks.benchmarks.budget import Meter, fit_prompt
from lm_eval_tasks.benchmarks.ccsbench.build import ALIASES, FULLTEXT_INPUT, build_docs
from lm_eval_tasks.benchmarks.ccsbench.prompts import DEFAULT
from lm_eval_tasks.benchmarks.ccsbench.record import DOC_WORDS, FULLTEXT_DOC_WORDS
from lm_eval_tasks.data.loader import DataError
from lm_eval_tasks.harness_parts.fitting import cut_by_word_budget

TASK = "ccsbench_compositional_fulltext"
CONTROLS = {"length": 1, "keywords": ["seed banks"], "readability": "normal", "focus": "high"}
INTRO = "Introduction. Seed banks store seeds. Conclusion. Imaging works."


def _full(i: int, words: int = 40) -> str:
    """A full paper text, distinct per row: its introduction, a body of numbered words, its conclusion."""
    body = " ".join(f"m{i}w{k}" for k in range(words))
    return f"Introduction. Seed banks store seeds ({i}).\n\nMethod. {body}\n\nConclusion. Imaging works."


def _mirror(root: Path, rows: list[dict], subset: str = "compositional", split: str = "test") -> Path:
    path = root / "ccsbench" / subset / f"{split}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _row(i: int, **fields) -> dict:
    return {"id": f"p{i}", "document": INTRO, "summary": f"Abstract {i}.", **CONTROLS, **fields}


def test_every_subset_has_a_fulltext_task_and_the_group_averages_them():
    names = {s.subset: s.name for s in catalog.select("ccsbench", variant="fulltext")}
    assert names == {s: f"ccsbench_{s}_fulltext" for s in ("length", "keywords", "readability", "focus",
                                                            "compositional")}
    for subset, name in names.items():  # the zero-shot task's controls and metrics, another input
        spec, plain = catalog.lookup(name), catalog.lookup(f"ccsbench_{subset}")
        assert (spec.shots, spec.families, spec.until) == (0, plain.families, plain.until)
    assert catalog.expand(["ccsbench_fulltext"]) == list(names.values())


@pytest.mark.parametrize("spelling", ALIASES["full_text"])
def test_full_text_is_read_from_each_recognised_spelling(tmp_path, spelling):
    rows = [{k: v for k, v in _row(i).items()} | {spelling: _full(i)} for i in range(2)]
    _mirror(tmp_path, rows)
    docs, facts = build_docs("compositional", 0, TASK, {"data_dir": str(tmp_path)}, fulltext=True)
    assert [d["document"] for d in docs] == [_full(0), _full(1)]
    assert facts["ccs_input"] == FULLTEXT_INPUT and facts["skipped_rows"] == {"test": 0}
    # the paper's C.4 prompt, the full text where the introduction and conclusion were
    assert docs[1]["prompt"] == DEFAULT.render(docs[1], _full(1))
    assert "Document: " + _full(1) + "\n# Control signals\n" in docs[1]["prompt"]


def test_column_map_names_the_full_text_column(tmp_path):
    _mirror(tmp_path, [_row(0, paper_body=_full(0), full_text="not this one")])
    meta = {"data_dir": str(tmp_path), "column_map": {"full_text": "paper_body"}}
    docs, _ = build_docs("compositional", 0, TASK, meta, fulltext=True)
    assert docs[0]["document"] == _full(0)
    with pytest.raises(DataError, match="column_map maps 'full_text' to 'nope'"):
        build_docs("compositional", 0, TASK, {**meta, "column_map": {"full_text": "nope"}}, fulltext=True)


def test_a_split_without_full_text_is_one_line_naming_task_file_fields_and_fix(tmp_path):
    path = _mirror(tmp_path, [_row(0), _row(1)])  # I+C only, as the hub release
    with pytest.raises(DataError) as err:
        catalog.load_task(TASK, "test", {"data_dir": str(tmp_path)})
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"task '{TASK}': {path}: no full-text column")
    assert str(list(ALIASES["full_text"])) in msg and "columns found: ['document', 'focus', 'id'" in msg
    assert "add a 'full_text' field" in msg and '"column_map": {"full_text": "COLUMN"}' in msg
    # the I+C task reads the same file as before: no fallback in either direction
    docs = catalog.load_task("ccsbench_compositional", "test", {"data_dir": str(tmp_path)}).docs
    assert [d["document"] for d in docs] == [INTRO, INTRO]


def test_the_data_check_says_the_missing_full_text_before_a_model_loads(tmp_path):
    """``domsum run``'s data check (before any model) asks the benchmark of the first record's
    fields: the same line the task would stop with when it loads, and none once mapped."""
    from lm_eval_tasks.preparation.check import data_problems

    path = _mirror(tmp_path, [{**_row(0), "paper": _full(0)}])
    spec = catalog.all_tasks()[TASK]
    [problem] = data_problems(spec, {"data_dir": str(tmp_path)})
    assert problem.startswith(f"task '{TASK}': {path}, line 1: no full-text column") and "\n" not in problem
    assert data_problems(spec, {"data_dir": str(tmp_path), "column_map": {"full_text": "paper"}}) == []
    assert data_problems(catalog.all_tasks()["ccsbench_compositional"], {"data_dir": str(tmp_path)}) == []


def test_an_empty_full_text_is_skipped_and_counted(tmp_path):
    rows = [_row(0, full_text=_full(0)), _row(1, full_text=""), _row(2, full_text=None),
            _row(3, full_text="   "), _row(4, full_text=_full(4))]
    _mirror(tmp_path, rows)
    loaded = catalog.load_task(TASK, "test", {"data_dir": str(tmp_path)})
    assert [d["id"] for d in loaded.docs] == ["p0", "p4"]
    assert loaded.report["skipped_rows"] == {"test": 3}
    assert all(d["document"] != INTRO for d in loaded.docs)  # never the I+C text in its place
    _mirror(tmp_path, [_row(0, full_text=7)])
    with pytest.raises(DataError, match="row 1: field 'full_text' and summary must be strings"):
        catalog.load_task(TASK, "test", {"data_dir": str(tmp_path)})


def test_the_full_text_budget_is_the_records_and_cuts_the_document_only(tmp_path):
    long_text = _full(0, words=FULLTEXT_DOC_WORDS + 100)
    _mirror(tmp_path, [_row(0, full_text=long_text)])
    meta = {"data_dir": str(tmp_path)}
    [doc] = catalog.load_task(TASK, "test", meta).docs
    words = long_text.split()
    assert FULLTEXT_DOC_WORDS > DOC_WORDS[0]
    kept = re.search(r"Document: (.*)\n# Control signals\n", doc["prompt"], re.S).group(1)
    assert kept.split() == words[:FULLTEXT_DOC_WORDS]
    # recorded as the other tasks' budget cuts are: (words of the document, words kept)
    assert cut_by_word_budget(doc) == (len(words), FULLTEXT_DOC_WORDS)
    [small] = catalog.load_task(TASK, "test", {**meta, "max_doc_words": 25}).docs
    assert cut_by_word_budget(small) == (len(words), 25)
    # the I+C task of the same row keeps its own budget and text
    [plain] = catalog.load_task("ccsbench_compositional", "test", meta).docs
    assert plain["document"] == INTRO and cut_by_word_budget(plain) is None


def test_fitting_a_full_text_prompt_into_a_window_cuts_its_document_tail(tmp_path):
    """A window of 300 words (a whitespace 'tokenizer'): the prompt keeps the instruction, the
    control lines and the cue; the full text loses its tail, as many words as it overflowed."""
    text = _full(0, words=600)
    _mirror(tmp_path, [_row(0, full_text=text)])
    [doc] = catalog.load_task(TASK, "test", {"data_dir": str(tmp_path)}).docs

    def count(ctx: str) -> int:
        return len(ctx.split())

    def ends(part: str) -> list[int]:
        return [m.end() for m in re.finditer(r"\S+", part)]

    meter = Meter("whitespace words", context=400, generation=100, count=count, offsets=ends)
    fitted = fit_prompt(TASK, lambda p: p, doc["prompt"], doc["document"], meter)
    overflow = count(doc["prompt"]) - meter.limit
    assert fitted.tokens == meter.limit and fitted.cut_tokens == overflow > 0
    head, tail = doc["prompt"].split(text)
    assert fitted.context.startswith(head) and fitted.context.endswith(tail)
    kept = fitted.context[len(head):len(fitted.context) - len(tail)]
    assert kept.split() == text.split()[:len(text.split()) - overflow]


def test_the_sample_mirror_holds_full_texts_that_extend_the_intro_and_conclusion(fixture_data_dir):
    for subset in ("length", "keywords", "readability", "focus", "compositional"):
        for split in ("train", "validation", "test"):
            path = fixture_data_dir / "ccsbench" / subset / f"{split}.jsonl"
            for line in path.read_text(encoding="utf-8").splitlines():
                rec = json.loads(line)
                intro, _, conclusion = rec["document"].partition(" Conclusion. ")
                full = rec["full_text"]
                assert full.startswith(intro + "\n\nMethod. ") and full.endswith("Conclusion. " + conclusion)
                assert "\n\nResults. " in full and len(full.split()) > 2 * len(rec["document"].split())
