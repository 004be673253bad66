"""The papers' published numbers (lm_eval_tasks/report/published/*.json): schema, counts and values.

The quoted lines below are copied verbatim from the papers' plain text (DomainSum Tables
2-4, AdaptEval Tables 3 and 5); each is split here into its cells and every cell is
looked up in the data file by its table, row and column, so a shifted column or a
mistyped digit in the transcription fails.
"""

from __future__ import annotations

import re

import pytest

from lm_eval_tasks import catalog
from lm_eval_tasks.report import published

DOMAINSUM_T2 = ("Llama3.1-8B", "Genre Shift", ("CNN/DM", "PubMed", "Reddit", "SAMSum", "WikiHow"),
                "26.02 (-0.80)\t87.46 (+0.14)\t21.07 (+1.54)\t83.54 (+0.18)\t11.83 (+3.82)\t81.81 (+1.07)\t"
                "26.11 (+5.05)\t89.61 (+0.84)\t16.75 (+1.69)\t83.21 (+0.71)")
DOMAINSUM_T2_STYLE = ("Llama3.1-70B", "Style Shift", ("CNN", "Fox", "NYDaily", "NYTimes", "WaPo"),
                      "17.06 (+3.63)\t83.48 (-3.63)\t19.24 (+6.96)\t83.30 (+2.13)\t20.24 (+3.49)\t81.52 (-1.22)\t"
                      "15.77 (+2.45)\t81.67 (+1.93)\t11.60 (+1.85)\t78.78 (+4.09)")
DOMAINSUM_T3 = ("BART", ("CNN", "Fox", "NYDaily", "NYTimes", "WaPo"),
                "42.02\t89.44\t55.05\t91.55\t53.84\t91.06\t25.38\t86.81\t20.05\t85.58")
DOMAINSUM_T4 = "Sum Diversity\t-0.319\t-0.998*\t-0.929*"
ADAPTEVAL_T3 = ("Llama2 70b", "Zero-shot Setting", "0.842 35.50 24.59 0.837 35.22 23.35 0.855 36.05 21.48")
ADAPTEVAL_T5 = ("PEGASUS-X", "3.88 2.8 4.40 2.88 2.0 3.72 2.40 2.0 2.72")
MEDQSUM_T3 = "BS-RoBERTa\t19.89\t18.77\t20.89\t22.24\t10.59\t13.24"
MEDQSUM_T5 = "BLANC-tune\t5.80\t8.50\t7.19\t7.21\t-10.29\t-10.41"


def test_every_file_keeps_the_schema():
    assert {"domainsum", "adapteval", "medqsum"} <= set(published.available())
    for benchmark in published.available():
        paper = published.load(benchmark)
        assert paper.benchmark == benchmark and paper.path == published.data_file(benchmark)
        assert paper.values and isinstance(paper.unreadable, list)
        subsets = set(catalog.subsets(benchmark))
        for v in paper.values:
            assert v.get("subset") is None or v["subset"] in subsets, v
        cited = {(v["table"], v["row"], v["column"], v["setting"]) for v in paper.values}
        assert len(cited) == len(paper.values), f"{benchmark}: two values share one citation"


def test_metric_keys_are_suite_keys():
    from custom_metrics import registry

    for benchmark in published.available():
        for name, spec in published.load(benchmark).metrics.items():
            for key in spec["keys"]:
                assert registry.key(key) is not None, (benchmark, name, key)


def test_domainsum_counts_per_table():
    paper = published.load("domainsum")
    # Table 2: 5 models x 15 domains x (ROUGE, BERTScore) x (0-shot value, printed difference)
    assert len(paper.find(table="Table 2")) == 5 * 15 * 2 * 2
    assert len(paper.find(table="Table 3")) == 3 * 15 * 2  # BART, PEGASUS-X, Llama3.1-8B
    assert len(paper.find(table="Table 4")) == 8 * 3  # eight measures x three levels
    assert paper.unreadable == []


def test_adapteval_counts_per_table():
    paper = published.load("adapteval")
    # Table 3: 11 zero-shot + 8 two-shot + 7 fine-tuned rows x 9, less three rows' GovReport 'x'
    assert len(paper.find(table="Table 3")) == (11 + 8 + 7) * 9 - 3 * 3
    assert len(paper.find(table="Table 4")) == 13 * 6 - 2  # Llama2 13b base vs FT: GovReport 'x'
    assert len(paper.find(table="Table 5")) == 4 * 9


@pytest.mark.parametrize("quoted", [DOMAINSUM_T2, DOMAINSUM_T2_STYLE])
def test_domainsum_table2_rows_equal_the_paper(quoted):
    row, block, domains, line = quoted
    paper = published.load("domainsum")
    cells = line.split("\t")
    assert len(cells) == 10
    for j, cell in enumerate(cells):
        zero, diff = re.fullmatch(r"(-?[\d.]+) \(([+-][\d.]+)\)", cell).groups()
        column = f"{domains[j // 2]} {('ROUGE', 'BERTScore')[j % 2]}"
        assert paper.one(table="Table 2", row=row, column=column, setting="0-shot")["value"] == float(zero)
        got = paper.one(table="Table 2", row=row, column=column, setting="2-shot minus 0-shot")
        assert got["value"] == float(diff) and got["block"] == block


def test_domainsum_tables_3_and_4_equal_the_paper():
    paper = published.load("domainsum")
    row, domains, line = DOMAINSUM_T3
    for j, cell in enumerate(line.split("\t")):
        column = f"{domains[j // 2]} {('ROUGE', 'BERTScore')[j % 2]}"
        assert paper.one(table="Table 3", row=row, column=column, setting="fine-tuned")["value"] == float(cell)
    label, *cells = DOMAINSUM_T4.split("\t")
    for level, cell in zip(("Genre", "Style", "Topic"), cells):
        v = paper.one(table="Table 4", row=label, column=level)
        assert v["value"] == float(cell.rstrip("*")) and v["significant"] == cell.endswith("*")
        assert v["measure"] == "summary_diversity"


def test_adapteval_tables_equal_the_paper():
    paper = published.load("adapteval")
    row, block, line = ADAPTEVAL_T3
    # Table 3's heading, as printed: Medical Science Government, each BERTScore DVO ROUGE
    columns = [f"{d} {m}" for d in ("Medical", "Science", "Government") for m in ("BERTScore", "DVO", "ROUGE")]
    for column, cell in zip(columns, line.split()):
        v = paper.one(table="Table 3", row=row, column=column, block=block)
        assert v["value"] == float(cell) and v["setting"] == "0-shot"
    row, line = ADAPTEVAL_T5
    columns = [f"{m} {d}" for m in ("DA", "Coherence", "Fluency") for d in ("arXiv", "PubMed", "GovReport")]
    for column, cell in zip(columns, line.split()):
        assert paper.one(table="Table 5", row=row, column=column)["value"] == float(cell)


def test_models_are_found_by_their_ids():
    paper = published.load("domainsum")
    assert paper.model_of("meta-llama/Llama-3.1-8B-Instruct") == "Llama3.1-8B"
    assert paper.model_of("/models/Llama-3.1-8B-Instruct/") == "Llama3.1-8B"  # a local copy
    assert paper.model_of("meta-llama/Llama-3.1-8B") is None  # the base model is not the paper's
    v = paper.one(table="Table 2", model="Llama3.1-8B", subset="cnndm", metric="ROUGE", setting="0-shot")
    assert paper.cite(v) == "DomainSum Table 2, row Llama3.1-8B, column CNN/DM ROUGE"


def test_a_broken_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / "domainsum.json").write_text('{"paper": "P", "title": "", "citation": "", "benchmark": "domainsum", '
                                             '"tables": {"T": ""}, "models": {}, "metrics": {"m": {"keys": []}}, '
                                             '"values": [{"table": "T", "row": "r", "column": "c", "metric": "m", '
                                             '"setting": "0-shot", "value": "12.3"}], "unreadable": []}')
    monkeypatch.setattr(published, "FOLDER", tmp_path)
    published.load.cache_clear()
    try:
        with pytest.raises(published.PublishedDataError, match="not a number"):
            published.load("domainsum")
    finally:
        published.load.cache_clear()


def test_medqsum_correlation_tables_equal_the_paper():
    paper = published.load("medqsum")
    # 13 metrics x (Relevance, Consistency, Fluency) x two annotators, in Tables 3 and 5
    assert len(paper.find(table="Table 3")) == len(paper.find(table="Table 5")) == 13 * 6
    columns = [f"{a} Annotator {n}" for a in ("Relevance", "Consistency", "Fluency") for n in (1, 2)]
    for table, line, key in (("Table 3", MEDQSUM_T3, "bertscore_f1"), ("Table 5", MEDQSUM_T5, "blanc_tune")):
        row, *cells = line.split("\t")
        for column, cell in zip(columns, cells):
            v = paper.one(table=table, row=row, column=column)
            assert v["value"] == float(cell) and v["scored_metric"] == key
    assert {v["scored_metric"] for v in paper.values} <= set(catalog.metric_keys(catalog.lookup("medqsum_hcm")))
