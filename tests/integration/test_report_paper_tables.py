"""``domsum report``'s first table is DomainSum Table 2's layout, with the paper's rows beside the user's.

The runs are harness output written by hand (results and samples files, no model:
tests/helpers/report_page.py) for the paper's model id, meta-llama/Llama-3.1-8B-Instruct,
and one other model, zero- and two-shot on CNN/DM, SAMSum and Soccer. Every number of
this run in the table is recomputed here from the samples files; every published number
is read from the paper's data file by its citation.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import report_table
from helpers.report import _scipy_paired
from helpers.report_page import TS, write_system
from lm_eval_tasks.commands import report
from lm_eval_tasks import published

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
OTHER = "org/other-model"
N_DOCS = 6


@pytest.fixture(scope="module")
def report_out(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("paper_tables")
    write_system(root / "runs", LLAMA, {"cnndm": 0.40, "samsum": 0.30, "soccer": 0.35}, n_docs=N_DOCS)
    write_system(root / "runs", OTHER, {"cnndm": 0.30, "samsum": 0.35}, n_docs=N_DOCS)
    assert report.main([str(root / "runs"), "--out", str(root / "report"), "--no-progress"]) == 0
    return root


def _scores(root: Path, model: str, task: str, key: str) -> list:
    path = root / "runs" / model.replace("/", "__") / f"samples_{task}_{TS}.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [r[key] for r in sorted(rows, key=lambda r: r["doc"]["id"])]


def _corpus(values: list, key: str) -> float:
    if key == "rouge_geo":  # the geometric mean of the corpus ROUGE-1/2/L means
        return float(np.prod(np.mean(np.asarray(values, dtype=float), axis=0)) ** (1 / 3))
    return float(np.mean(values))


def _cell(text: str) -> tuple[float, float | None, float | None]:
    m = re.fullmatch(r"(-?[\d.]+)[†]? \(([+-][\d.]+)[‡]?(?:; p ([\d.]+)\*?)?\)", text)
    assert m, text
    return float(m.group(1)), float(m.group(2)), None if m.group(3) is None else float(m.group(3))


def test_the_first_table_is_domainsum_table2_with_the_papers_rows(report_out):
    md = (report_out / "report" / "report.md").read_text(encoding="utf-8")
    tables = re.findall(r"^## (.+)$", md, flags=re.M)
    assert tables[1] == "DomainSum Table 2 layout, genre shift: 0-shot and 2-shot per domain"  # after Verdicts
    assert tables[0] == "Verdicts" and tables[-1] == "Definitions"
    rows = report_table(report_out / "report", "domainsum_table2_genre")
    paper = published.load("domainsum")
    assert [r["System"] for r in rows] == [LLAMA, OTHER] + [f"{m} (published)" for m in
                                                            ("GPT-4o mini", "Mistral-7B", "Gemma1.1-7B",
                                                             "Llama3.1-8B", "Llama3.1-70B")]
    header = list(rows[0])
    assert header == ["System", "Source"] + [f"{d} {m}: 0-shot (2-shot − 0-shot; p)" for d in ("CNN/DM", "SAMSum")
                                             for m in ("ROUGE", "BERTScore")] + ["Protocol vs the paper"]
    for row in rows[:2]:  # hand-written runs: 6 documents each, no scorer recorded what it used
        assert row["Protocol vs the paper"].startswith(f"✗ not comparable: {N_DOCS} of 500 test documents; "
                                                       "ROUGE stemming not recorded (paper: false); ")
    for row in rows[2:]:  # published rows: the paper's numbers by their citation, no p
        model = row["System"].removesuffix(" (published)")
        assert row["Source"] == f"DomainSum Table 2, row {model}" and row["Protocol vs the paper"] == "—"
        for column in header[2:-1]:
            zero, diff, p = _cell(row[column])
            cited = column.split(":")[0]
            assert zero == paper.one(table="Table 2", row=model, column=cited, setting="0-shot")["value"]
            assert diff == paper.one(table="Table 2", row=model, column=cited, setting="2-shot minus 0-shot")["value"]
            assert p is None
    # the paper's best 0-shot CNN/DM ROUGE is Llama3.1-8B's 26.02 (its red cell); the mark stays in its rows
    assert rows[5]["CNN/DM ROUGE: 0-shot (2-shot − 0-shot; p)"].startswith("26.02†")
    assert (report_out / "report" / "tables" / "domainsum_table2_genre.tex").read_text().count(r"\\") == 8
    topic = report_table(report_out / "report", "domainsum_table2_topic")
    assert [r["System"] for r in topic][0] == LLAMA and "Soccer ROUGE: 0-shot (2-shot − 0-shot; p)" in topic[0]


@pytest.mark.parametrize("model,row_index", [(LLAMA, 0), (OTHER, 1)])
def test_this_runs_cells_are_recomputed_from_the_samples(report_out, model, row_index):
    row = report_table(report_out / "report", "domainsum_table2_genre")[row_index]
    assert row["System"] == model and row["Source"] == "this run"
    for subset, name in (("cnndm", "CNN/DM"), ("samsum", "SAMSum")):
        for key, metric in (("rouge_geo", "ROUGE"), ("bertscore_f1", "BERTScore")):
            zero_docs = _scores(report_out, model, f"domainsum_{subset}", key)
            two_docs = _scores(report_out, model, f"domainsum_{subset}_2shot", key)
            zero, diff, p = _cell(row[f"{name} {metric}: 0-shot (2-shot − 0-shot; p)"])
            assert zero == pytest.approx(100 * _corpus(zero_docs, key), abs=0.005)
            assert diff == pytest.approx(100 * (_corpus(two_docs, key) - _corpus(zero_docs, key)), abs=0.006)
            # 6 documents: the permutation test is exact on both sides
            assert p == pytest.approx(_scipy_paired(two_docs, zero_docs, lambda x, k=key: _corpus(x, k)), abs=0.0005)


def test_best_marks_are_the_columns_best_of_this_runs_rows(report_out):
    rows = report_table(report_out / "report", "domainsum_table2_genre")[:2]
    for column in list(rows[0])[2:-1]:
        zeros = [_cell(r[column])[0] for r in rows]
        twos = [z + _cell(r[column])[1] for z, r in zip(zeros, rows)]
        assert [r[column].split(" ")[0].endswith("†") for r in rows] == [z == max(zeros) for z in zeros]
        assert ["‡" in r[column] for r in rows] == [abs(t - max(twos)) < 0.011 for t in twos]


def test_paper_vs_this_run(report_out):
    rows = report_table(report_out / "report", "domainsum_paper_vs_run")
    paper = published.load("domainsum")
    assert {r["System"] for r in rows} == {LLAMA}  # the other model is not the paper's
    # 3 subsets x 2 shots x (rouge_geo, rouge_mean, bertscore_f1)
    assert len(rows) == 3 * 2 * 3
    names = {"cnndm": "CNN/DM", "samsum": "SAMSum", "soccer": "Soccer"}
    for r in rows:
        key = re.search(r"\((\w+)\)$", r["Metric (suite key)"]).group(1)
        metric = "BERTScore" if key == "bertscore_f1" else "ROUGE"
        shots = int(r["Setting"][0])
        mine = 100 * _corpus(_scores(report_out, LLAMA, f"domainsum_{r['Subset']}" + ("_2shot" if shots else ""),
                                     key), key)
        column = f"{names[r['Subset']]} {metric}"
        zero = paper.one(table="Table 2", row="Llama3.1-8B", column=column, setting="0-shot")["value"]
        diff = paper.one(table="Table 2", row="Llama3.1-8B", column=column, setting="2-shot minus 0-shot")["value"]
        theirs = zero + diff if shots else zero
        assert float(r["This run"]) == pytest.approx(mine, abs=0.005)
        assert float(r["Paper"]) == pytest.approx(theirs, abs=1e-9)
        assert float(r["This run − paper"]) == pytest.approx(mine - theirs, abs=0.006)
        assert r["Published at"].startswith(f"DomainSum Table 2, row Llama3.1-8B, column {column}")
        assert r["n"] == str(N_DOCS)


def test_published_numbers_are_never_compared(report_out):
    """No verdict, p or significance row names a published row: they are not this run's data."""
    comparisons = json.loads((report_out / "report" / "comparisons.json").read_text(encoding="utf-8"))
    assert comparisons["comparisons"] and not any("published" in json.dumps(c) for c in comparisons["comparisons"])
    html = (report_out / "report" / "report.html").read_text(encoding="utf-8")
    assert html.index('id="domainsum_table2_genre"') < html.index('id="domainsum_settings"')
    assert "This run − paper" in html and "<dt>(published)</dt>" in html


def test_the_benchmarks_citation_is_on_the_page_once(report_out):
    """The record's citation, under the benchmark's first table, in the page and the markdown."""
    from html import escape

    from lm_eval_tasks.benchmarks.suite import ALL_RECORDS

    citation = escape(ALL_RECORDS["domainsum"].citation)  # "Yuan & Zhang": escaped in the page
    html = (report_out / "report" / "report.html").read_text(encoding="utf-8")
    md = (report_out / "report" / "report.md").read_text(encoding="utf-8")
    assert html.count(f'<p class="caption cite">Citation: {citation}</p>') == 1
    assert md.count(f"Citation: {ALL_RECORDS['domainsum'].citation}") == 1
    # under the first DomainSum table (Table 2's genre layout), before the next table's heading
    first = html.index('id="domainsum_table2_genre"')
    assert first < html.index(f"Citation: {citation}") < html.index('id="domainsum_table2_topic"')
