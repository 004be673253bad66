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
