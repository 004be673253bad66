"""The papers' table layouts on the report page (lm_eval_tasks/report/paper_layouts.py).

Runs are built by hand (results values, no samples file): each of this run's cells must be
the value put in, in the paper's units, and each published cell the paper's data file's
value at that (table, row, column). The expected numbers are written out here from the
inputs, not read back from the code under test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lm_eval_tasks import catalog
from lm_eval_tasks import published
from lm_eval_tasks.report.page import markdown, table_html
from lm_eval_tasks.report.figures import Figures
from lm_eval_tasks.report.paper_layouts import LAYOUTS
from lm_eval_tasks.report.paper_tables import paper_tables, terms
from lm_eval_tasks.report.runs import Run, Runs
from lm_eval_tasks.report.systems import System
from lm_eval_tasks.report.tables import Builder

FLAN = System(base="google/flan-t5-xxl", label="flan-t5-xxl")
TUNED = System(base="out/flan-ccs", adapter="out/lora", trained_on="ccsbench_compositional", label="flan-ccs")
LLAMA = System(base="meta-llama/Llama-2-7b-chat-hf", label="llama2-7b")


def _run(system: System, task: str, values: dict[str, float]) -> Run:
    spec = catalog.lookup(task)
    return Run(system=system, task=task, spec=spec, shots=spec.shots, values=values, stderr={},
               results_file=Path(f"{system.label}.json"), timestamp="2025-01-01")


def _tables(runs: list[Run]) -> dict:
    builder = Builder(Runs(runs, []))
    return {t.name: t for t in paper_tables(builder, builder.all())}


def _row(table, system: str, setting: str) -> dict[str, str]:
    found = [dict(zip(table.header, r)) for r in table.rows if r[0] == system and r[2] == setting]
    assert len(found) == 1, (system, setting, table.rows)
    return found[0]


COMPOSITIONAL = {"rougeL": 0.1873, "length_pcc": 0.512, "length_mad": 0.7, "keyword_sr": 0.91,
                 "fkgl_normal": 14.2, "fkgl_high": 12.05, "delta_fkgl": 2.15, "focus_macro_f1": 0.634}


@pytest.fixture(scope="module")
def ccs() -> dict:
    return _tables([
        _run(FLAN, "ccsbench_compositional", COMPOSITIONAL),
        _run(FLAN, "ccsbench_compositional_3shot", {"rougeL": 0.2, "length_pcc": 0.3}),
        _run(FLAN, "ccsbench_readability", {"rougeL": 0.3, "fkgl_normal": 15.0, "fkgl_high": 11.0, "delta_fkgl": 4.0}),
        _run(FLAN, "ccsbench_length", {"rougeL": 0.3, "length_pcc": 0.88, "length_mad": 0.25}),
        _run(FLAN, "ccsbench_keywords", {"rougeL": 0.3, "keyword_sr": 0.87}),
        _run(FLAN, "ccsbench_focus", {"rougeL": 0.3, "focus_macro_f1": 0.9}),
        _run(TUNED, "ccsbench_compositional", {"rougeL": 0.2343, "delta_fkgl": 3.6}),
    ])


def test_ccsbench_table4_follows_the_papers_columns(ccs):
    t = ccs["ccsbench_table4"]
    assert t.header == ["System", "Source", "Setting", "Quality ROUGE-L", "Length PCC", "Length MAD", "Keywords SR",
                        "Readability Fnormal", "Readability Fhigh", "Readability Δ", "Focus F1",
                        "Protocol vs the paper"]
    zero = _row(t, "flan-t5-xxl", "0-shot")
    # ROUGE-L x100 as the paper prints it, the other columns as fractions / grades, two decimals
    assert list(zero.values())[3:-1] == ["18.73", "0.51", "0.70", "0.91", "14.20", "12.05", "2.15", "0.63"]
    three = _row(t, "flan-t5-xxl", "3-shot")
    assert (three["Quality ROUGE-L"], three["Length PCC"], three["Focus F1"]) == ("20.00", "0.30", "n/a")
    tuned = _row(t, "flan-ccs", "fine-tuned")
    assert (tuned["Quality ROUGE-L"], tuned["Readability Δ"]) == ("23.43", "3.60")


def test_ccsbench_table4_published_rows_are_the_papers(ccs):
    t = ccs["ccsbench_table4"]
    paper = published.load("ccsbench")
    rows = [dict(zip(t.header, r)) for r in t.rows if r[0].endswith("(published)")]
    assert len(rows) == 17 and rows[0]["System"] == "A1 Flan-T5-XL (published)"
    # the paper's B2 row, as printed: | B2 | Flan-T5-XXL | ED | 23.43 | 0.78 | 0.27 | 0.85 | 14.40 | 10.78 | 3.62 | 0.75 |
    b2 = next(r for r in rows if r["System"] == "B2 Flan-T5-XXL (published)")
    assert list(b2.values())[3:-1] == ["23.43", "0.78", "0.27", "0.85", "14.40", "10.78", "3.62", "0.75"]
    assert b2["Protocol vs the paper"] == "—"  # a published row is the paper's protocol
    assert b2["Source"] == "CCSBench Table 4, LLMs w/ Parameter-Efficient Fine-Tuning, row B2 Flan-T5-XXL"
    for r in rows:
        name = r["System"].removesuffix(" (published)")
        for column in t.header[3:-1]:
            assert float(r[column]) == paper.one(table="Table 4", row=name, column=column)["value"]
    # this run's rows come first and are never marked published
    assert all(r[1] == "this run" for r in t.rows[:3])


def test_ccsbench_table5_reads_single_tasks_and_the_compositional_one(ccs):
    t = ccs["ccsbench_table5"]
    single = _row(t, "flan-t5-xxl (Single)", "0-shot")
    composed = _row(t, "flan-t5-xxl (Compositional)", "0-shot")
    assert list(single.values())[3:-1] == ["4.00", "0.88", "0.25", "0.87", "0.90"]
    assert list(composed.values())[3:-1] == ["2.15", "0.51", "0.70", "0.91", "0.63"]
    published_single = _row(t, "Single (published)", "fine-tuned")
    assert list(published_single.values())[3:-1] == ["4.66", "0.89", "0.23", "0.88", "0.92"]


def test_adapteval_table3_in_the_papers_units():
    t = _tables([_run(LLAMA, "adapteval_pubmed", {"bertscore_f1": 0.8123, "dvo": 31.456, "rouge_geo": 0.1567}),
                 _run(LLAMA, "adapteval_govreport_2shot", {"bertscore_f1": 0.85, "dvo": 35.0, "rouge_geo": 0.2})]
                )["adapteval_table3"]
    zero, two = _row(t, "llama2-7b", "0-shot"), _row(t, "llama2-7b", "2-shot")
    # BERTScore a fraction with three decimals, DVO in %, ROUGE x100: AdaptEval Table 3's units
    assert (zero["Medical BERTScore"], zero["Medical DVO"], zero["Medical ROUGE"]) == ("0.812", "31.46", "15.67")
    assert zero["Government ROUGE"] == "n/a" and two["Government BERTScore"] == "0.850" and two["Medical DVO"] == "n/a"
    paper = published.load("adapteval")
    # the same row name in two blocks stays two rows, each with its block's numbers
    llama = [dict(zip(t.header, r)) for r in t.rows if r[0] == "Llama2 7b (published)"]
    assert [r["Setting"] for r in llama] == ["0-shot", "2-shot"]
    for r, block in zip(llama, ("Zero-shot Setting", "Two-shot Setting")):
        assert r["Source"] == f"AdaptEval Table 3, {block}, row Llama2 7b"
        v = paper.one(table="Table 3", block=block, row="Llama2 7b", column="Science DVO")["value"]
        assert r["Science DVO"] == f"{v:.2f}"
    # Table 3's Llama2 70b zero-shot row as printed: 0.842 35.50 24.59 0.837 35.22 23.35 0.855 36.05 21.48
    row = _row(t, "Llama2 70b (published)", "0-shot")
    assert list(row.values())[3:-1] == "0.842 35.50 24.59 0.837 35.22 23.35 0.855 36.05 21.48".split()


def test_each_benchmarks_citation_once_under_its_first_table(ccs):
    from lm_eval_tasks.benchmarks.suite import ALL_RECORDS

    cited = [t for t in ccs.values() if t.citation]
    assert [t.name for t in cited] == ["ccsbench_table4"]
    assert cited[0].citation == ALL_RECORDS["ccsbench"].citation
    html = table_html(cited[0])
    assert html.count("Citation: ") == 1 and ALL_RECORDS["ccsbench"].citation in html
    md = markdown(list(ccs.values()), Figures(out=Path(".")), [])
    assert md.count(f"Citation: {ALL_RECORDS['ccsbench'].citation}") == 1


def test_no_layout_without_runs_and_terms_defined(ccs):
    assert "adapteval_table3" not in ccs and "domainsum_table2_genre" not in ccs
    defined = [term for term, _ in terms(list(ccs.values()))]
    assert defined[:2] == ["Source", "(published)"] and "† / ‡" not in defined
    # every declared layout names columns its paper's data file prints
    for layout in LAYOUTS:
        paper = published.load(layout.benchmark)
        for column in layout.columns:
            assert paper.find(table=layout.table, column=column.header), (layout.name, column.header)


def test_each_run_of_a_row_is_checked_on_the_cells_it_fills(ccs):
    """CCSBench Table 5's Single row reads four tasks: only the focus task fills the judged
    F1 cell, so only it is checked against the paper's focus judge (which the paper names
    twice: GPT-4 and GPT-4o); runs without a samples file have no document count."""
    t = ccs["ccsbench_table5"]
    [single] = [r for r in t.paper_rows if r["run"] == "flan-t5-xxl (Single)"]
    assert single["comparable"] is False and single["paper_table"] == "Table 5"
    assert single["subsets"] == ["readability", "length", "keywords", "focus"]
    judge = [d for d in single["differences"] if d["field"] == "F1 judge model"]
    paper = published.load("ccsbench").protocols["Table 5"]
    assert judge == [{"field": "F1 judge model", "run": {"unknown": "not recorded in the run's results file"},
                      "paper": paper["metrics"]["F1"]["judge_model"], "where": "focus 0-shot"}]
    # no run logged samples, and the paper states no size: one difference, shared by every run
    docs = [d for d in single["differences"] if d["field"] == "test documents"]
    assert docs == [{"field": "test documents", "run": {"unknown": "not recorded in the run's results file"},
                     "paper": paper["documents"]["count"]}]
    # the page says it beside the row
    row = _row(t, "flan-t5-xxl (Single)", "0-shot")
    assert row["Protocol vs the paper"] == "✗ " + single["sentence"]
    assert "F1 judge model not recorded (paper: not stated: Section 4.2 names GPT-4" in single["sentence"]


JUDGED = {"domain_adaptation": 3.5, "coherence": 3.25, "fluency": 2.5}
JUDGE_RECORD = {"judge_model_used": "gpt-4", "judge_sample_size": 25, "judge_sample_from": 100,
                "judge_sample_seed": 42, "judge_sample_ids": [f"adapteval/pubmed/test/{i}" for i in range(25)]}


def _unscored(n: int) -> list:
    """``n`` logged documents without per-document scores (the cells read the results' values)."""
    from lm_eval_tasks.results import Sample

    return [Sample(doc_id=i, id=f"adapteval/pubmed/test/{i}", filter=None, document="d", reference="r",
                   prediction="p") for i in range(n)]


def test_adapteval_table5_states_the_judged_sample_beside_the_published_rows():
    """A run that judged a seeded random sample of 25 (judge_sample) and one that judged all 8
    documents it evaluated: each row's source says which documents were judged, and the
    protocol check compares them with the paper's "random sample of 25" in words."""
    sampled = _run(LLAMA, "adapteval_pubmed_judged", JUDGED)
    sampled.record.update(JUDGE_RECORD)
    sampled.samples.extend(_unscored(100))
    every = _run(FLAN, "adapteval_pubmed_judged", JUDGED)
    every.record.update(judge_model_used="gpt-4")
    every.samples.extend(_unscored(8))
    t = _tables([sampled, every])["adapteval_table5"]
    assert t.header == ["System", "Source", "Setting", "DA arXiv", "DA PubMed", "DA GovReport", "Coherence arXiv",
                        "Coherence PubMed", "Coherence GovReport", "Fluency arXiv", "Fluency PubMed",
                        "Fluency GovReport", "Protocol vs the paper"]
    row = _row(t, "llama2-7b", "0-shot")
    assert (row["DA PubMed"], row["Coherence PubMed"], row["Fluency PubMed"], row["DA arXiv"]) == \
        ("3.50", "3.25", "2.50", "n/a")
    assert row["Source"] == ("this run; judged: a seeded random sample of 25 of the 100 documents evaluated "
                             "(judge_sample, sample_seed 42)")
    records = {r["run"]: r for r in t.paper_rows}
    # the sample matches the paper's in count and kind: only the setting differs (Table 5 is 2-shot / FT)
    assert [d["field"] for d in records["llama2-7b"]["differences"]] == ["setting"]
    assert "judged documents" in records["llama2-7b"]["checked"] and "test documents" in records["llama2-7b"]["checked"]
    flan = _row(t, "flan-t5-xxl", "0-shot")
    assert flan["Source"].startswith("this run; judged: all 8 documents evaluated")
    assert "8 of 25 test documents" in flan["Protocol vs the paper"]
    assert ("judged documents all 8 documents evaluated (the first N under --limit, else the whole split; not a "
            "random sample) (paper: a random sample of 25 per domain, seed not stated)") in flan["Protocol vs the paper"]
    # the paper's rows beneath, as printed
    published_row = next(r for r in t.rows if r[0] == "Llama2 7b (published)" and "2-shot" in r[1])
    assert published_row[4] == "1.00" and published_row[3] == "4.20"


GPT4O = System(base="gpt-4o", label="gpt-4o")


def _logged(run: Run, ids: list[str], rouge_l: list[float], tokens: float | None = None) -> Run:
    """``run`` with a samples file of ``ids`` whose logged ROUGE-L are ``rouge_l``, its reported
    ROUGE-L their mean, and its prompt fitting's mean prompt tokens ``tokens``."""
    from lm_eval_tasks.results import Sample

    run.samples.extend(Sample(doc_id=i, id=d, filter=None, document="d", reference="r", prediction="p",
                              logged={"rougeL": v}) for i, (d, v) in enumerate(zip(ids, rouge_l)))
    run.values["rougeL"] = sum(rouge_l) / len(rouge_l)
    if tokens is not None:
        run.record["prompt_budget"] = {"window": 128000, "documents": len(ids), "prompt_tokens_mean": tokens}
    return run


def test_ccsbench_table7_puts_the_runs_i_c_and_full_rows_beside_the_papers():
    ids = [f"ccs/{i}" for i in range(200)]
    ic_scores, full_scores = [0.2 + (i % 7) / 100 for i in range(200)], [0.21 + (i % 5) / 100 for i in range(200)]
    ic = _logged(_run(GPT4O, "ccsbench_compositional", dict(COMPOSITIONAL)), ids, ic_scores, 1702.4)
    full = _logged(_run(GPT4O, "ccsbench_compositional_fulltext", {"length_pcc": 0.97, "keyword_sr": 0.95}),
                   ids, full_scores, 7311.0)
    full.record["prompt_budget"]["chars_per_token"] = 3.0  # an API model measured by the bound
    # the system's length runs, on other documents, are not the rows' runs
    length = _logged(_run(GPT4O, "ccsbench_length_fulltext", {"length_pcc": 0.1}), ["other"], [0.5])
    t = _tables([ic, full, length, _run(GPT4O, "ccsbench_length", {"length_pcc": 0.2})])["ccsbench_table7"]
    assert t.title == "CCSBench Table 7 layout: I+C vs Full"
    assert t.header[3:-1] == ["Quality ROUGE-L", "Length PCC", "Length MAD", "Keywords SR", "Readability Fnormal",
                              "Readability Fhigh", "Readability Δ", "Focus F1", "#Tokens"]
    mine = _row(t, "gpt-4o (I+C)", "0-shot")
    # ROUGE-L x100 = the mean of the logged per-document scores; the other cells the results' values
    assert mine["Quality ROUGE-L"] == f"{100 * sum(ic_scores) / 200:.2f}" == "22.97"
    assert list(mine.values())[4:-1] == ["0.51", "0.70", "0.91", "14.20", "12.05", "2.15", "0.63", "1702"]
    other = _row(t, "gpt-4o (Full)", "0-shot, full document")
    assert other["Quality ROUGE-L"] == f"{100 * sum(full_scores) / 200:.2f}" == "23.00"
    assert (other["Length PCC"], other["Keywords SR"], other["Focus F1"], other["#Tokens"]) == (
        "0.97", "0.95", "n/a", "~7311")
    # the same 200 documents (by record id) in both runs: said beside each row
    assert mine["Source"] == "this run; the same 200 documents as the Full row"
    assert other["Source"] == "this run; the same 200 documents as the I+C row"
    # the paper's two rows as printed: | Full | 21.15 | 0.98 | 0.06 | 0.98 | 16.55 | 16.10 | 0.45 | 0.67 | 6.78k |
    paper_full = _row(t, "Full (published)", "input full document")
    assert list(paper_full.values())[3:-1] == ["21.15", "0.98", "0.06", "0.98", "16.55", "16.10", "0.45", "0.67",
                                               "6780"]
    paper_ic = _row(t, "I+C (ours) (published)", "input introduction and conclusion")
    assert list(paper_ic.values())[3:-1] == ["20.84", "0.96", "0.06", "0.99", "15.87", "15.37", "0.50", "0.72",
                                             "1610"]
    assert paper_full["Source"] == "CCSBench Table 7, row Full"
    # each row's setting is the paper's input: no setting difference, 200 of the paper's first 200
    for name in ("gpt-4o (I+C)", "gpt-4o (Full)"):
        [record] = [r for r in t.paper_rows if r["run"] == name]
        fields = {d["field"] for d in record["differences"]}
        assert "setting" not in fields and "test documents" not in fields and "setting" in record["checked"]
    assert "Source says whether the two runs logged the same documents" in t.caption
    assert "#Tokens: this run's mean prompt tokens" in t.caption and "23.7%" in t.caption
    assert 'the split not named (not compared): these tasks read the test split' in t.caption


def test_ccsbench_table7_says_when_the_two_runs_differ_in_documents():
    ic = _logged(_run(GPT4O, "ccsbench_compositional", {"length_pcc": 0.9}), [f"ccs/{i}" for i in range(200)],
                 [0.2] * 200)
    # the full-text mirror lacks four papers' full text (skipped rows): 196 documents, one not in I+C
    full_ids = [f"ccs/{i}" for i in range(4, 200)] + ["ccs/extra"]
    full = _logged(_run(GPT4O, "ccsbench_compositional_fulltext", {"length_pcc": 0.8}), full_ids, [0.1] * 197)
    t = _tables([ic, full])["ccsbench_table7"]
    mine, other = _row(t, "gpt-4o (I+C)", "0-shot"), _row(t, "gpt-4o (Full)", "0-shot, full document")
    assert mine["Source"] == "this run; documents differ from the Full row's: 196 shared, 4 only here, 1 only there"
    assert other["Source"] == "this run; documents differ from the I+C row's: 196 shared, 1 only here, 4 only there"
    [record] = [r for r in t.paper_rows if r["run"] == "gpt-4o (Full)"]
    assert record["documents_beside"] == other["Source"].removeprefix("this run; ")
    assert mine["#Tokens"] == "n/a"  # no prompt_budget recorded
    # the paper's 200 against 197: a difference in the protocol column
    assert "197 of 200 test documents" in other["Protocol vs the paper"]
    # a system with an I+C run only, beside one with a Full run only: nothing to pair with
    lone = _run(FLAN, "ccsbench_compositional", {"length_pcc": 0.5})
    t = _tables([lone, full])["ccsbench_table7"]
    lone_row = _row(t, "flan-t5-xxl (I+C)", "0-shot")
    assert lone_row["Source"] == "this run; no Full run of this system to compare documents with"
    # without any Full run the table is not shown (Table 4 holds the I+C numbers)
    assert "ccsbench_table7" not in _tables([lone])
