"""The papers' published numbers (lm_eval_tasks/published/*.json): schema, counts and values.

The quoted lines below are copied verbatim from the papers' plain text (DomainSum Tables
1-6, AdaptEval Tables 1-5, medqsum Tables 1-5, CCSBench Tables 1, 2, 4, 5 and 7, the
Facet-aware Metric paper's Tables 2-4 and Section 4.2's fit); each is split here into its cells and every cell
is looked up in the data file by its table, row and column, so a shifted column or a
mistyped digit in the transcription fails.
"""

from __future__ import annotations

import re

import pytest

from lm_eval_tasks import catalog
from lm_eval_tasks import published

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
#: AdaptEval Section 3.3 (manual evaluation), in its text, not a table
ADAPTEVAL_S33 = ("The final Cohen’s κ𝜅\\kappaitalic_κ inter-annotator agreement is 0.4. The results show that the "
                 "annotators consistently rated the outputs of both Llama2 7b and 70b in the two-shot scenario among "
                 "the top two positions of the ranking—60% and 52%, respectively—whereas the fine-tuned models were "
                 "the least preferred—only 12% (Llama2 7b) and 16% (Pegasus-X) rated on top.")
MEDQSUM_T3 = "BS-RoBERTa\t19.89\t18.77\t20.89\t22.24\t10.59\t13.24"
MEDQSUM_T5 = "BLANC-tune\t5.80\t8.50\t7.19\t7.21\t-10.29\t-10.41"
#: CCSBench Table 4's columns after ID, Method and Arch (the Readability Δ heading is lost in the text)
CCS_T4_COLUMNS = ("Quality ROUGE-L", "Length PCC", "Length MAD", "Keywords SR", "Readability Fnormal",
                  "Readability Fhigh", "Readability Δ", "Focus F1")
CCS_T4 = ["| A6 | GPT-4 | DO | 19.26 | 0.84 | 0.66 | 0.99 | 19.12 | 16.99 | 2.13 | 0.71 |",
          "| A9 | GPT-3.5 | DO | 19.05 | 0.54 | 0.41 | 0.77 | 16.07 | 16.17 | -0.10 | 0.54 |",
          "| B1 | Flan-T5-XL | ED | 22.22 | 0.49 | 0.55 | 0.78 | 13.11 | 9.37 | 3.59 | 0.70 |",
          "| D2 | Flan-T5-XL-AdapterFusion | ED | 17.65 | 0.04 | 1.40 | 0.65 | 14.31 | 14.49 | 0.18 | 0.41 |"]
CCS_T1 = "| Compositional | 2,400 / 1,590 | 800 / 655 | 758 / 364 |"
CCS_T2 = "| Focus | 0.91 | 0.93 | 0.93 | 51.25 | 34.23 | 41.41 |"
CCS_T5 = "| Single | 4.66 | 0.89 | 0.23 | 0.88 | 0.92 |"
CCS_T7 = "| I+C (ours) | 20.84 | 0.96 | 0.06 | 0.99 | 15.87 | 15.37 | 0.50 | 0.72 | 1.61k |"
FM_T2 = ("LongT5-block\t0.2345 (2)\t0.8408 (2)\t0.4113 (4)\t0.2496 (3)\t0.1524 (4)\t0.7207(5)\t0.6283 (5)\t"
         "0.6628 (3)\t0.6785 (3)")
FM_T2_COLUMNS = ("ROUGE-L", "BERTScore", "DELTA", "QuestEval", "ACU", "FM(Llama2)", "FM(GPT-3.5)", "FM(GPT-4)", "Human")
FM_T3 = "Method\t4\t0.78\t0.69"
FM_T4 = "Llama2\t0.2327\t0.8371\t0.2792\t0.1752\t0.0000\t0.6611\t0.6952\t0.7339"
FM_S42 = "resulting in weights of [0.1, 0.3, 0.3, 0.3] and a mean squared error of 0.005"


def _pipe_cells(line: str) -> list[str]:
    """The cells of one ``| a | b |`` row of a paper's plain text."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _assert_row(paper: published.Published, table: str, row: str, columns, cells, **fields):
    """Every printed cell of ``row`` equals the file's value at (table, row, column) and has ``fields``."""
    assert len(columns) == len(cells), (row, cells)
    for column, cell in zip(columns, cells):
        v = paper.one(table=table, row=row, column=column)
        assert v is not None, (table, row, column)
        assert v["value"] == float(cell), (table, row, column, v["value"], cell)
        assert {k: v.get(k) for k in fields} == fields, (table, row, column, v)


def test_every_file_keeps_the_schema():
    assert {"domainsum", "adapteval", "medqsum", "ccsbench", "facet_aware_metric"} <= set(published.available())
    for name in published.available():
        paper = published.load(name)
        assert paper.path == published.data_file(name)
        # a meta-evaluation paper (FD) is no harness benchmark: its file names none
        assert paper.benchmark in (name, None)
        assert paper.values and isinstance(paper.unreadable, list)
        subsets = set(catalog.subsets(name)) if paper.benchmark else set()
        for v in paper.values:
            assert v.get("subset") is None or v["subset"] in subsets, v
        cited = {(v["table"], v["row"], v["column"], v["setting"]) for v in paper.values}
        assert len(cited) == len(paper.values), f"{name}: two values share one citation"


def test_metric_keys_are_suite_keys():
    from custom_metrics import registry

    for benchmark in published.available():
        for name, spec in published.load(benchmark).metrics.items():
            assert spec.get("definition"), (benchmark, name)
            for key in spec["keys"]:
                assert registry.key(key) is not None, (benchmark, name, key)


def test_domainsum_counts_per_table():
    paper = published.load("domainsum")
    # Table 2: 5 models x 15 domains x (ROUGE, BERTScore) x (0-shot value, printed difference)
    assert len(paper.find(table="Table 2")) == 5 * 15 * 2 * 2
    assert len(paper.find(table="Table 3")) == 3 * 15 * 2  # BART, PEGASUS-X, Llama3.1-8B
    assert len(paper.find(table="Table 4")) == 8 * 3  # eight measures x three levels
    assert len(paper.find(table="Table 1")) == 15 * 3  # train, validation, test
    assert len(paper.find(table="Table 5")) == 15 * 8  # the eight measures
    # Table 6: 2 models x 12 test domains x (ROUGE, BERTScore) x (score, printed gain), less
    # three gains whose arrow contradicts the printed scores (listed as unreadable)
    assert len(paper.find(table="Table 6")) == 2 * 12 * 2 * 2 - 3
    assert len(paper.unreadable) == 3 and all(u.startswith("Table 6, ") for u in paper.unreadable)


def test_adapteval_counts_per_table():
    paper = published.load("adapteval")
    # Table 3: 11 zero-shot + 8 two-shot + 7 fine-tuned rows x 9, less three rows' GovReport 'x'
    assert len(paper.find(table="Table 3")) == (11 + 8 + 7) * 9 - 3 * 3
    assert len(paper.find(table="Table 4")) == 13 * 6 - 2  # Llama2 13b base vs FT: GovReport 'x'
    assert len(paper.find(table="Table 5")) == 4 * 9
    assert len(paper.find(table="Table 1")) == len(paper.find(table="Table 2")) == 3 * 3
    assert len(paper.find(table="Section 3.3")) == 4 + 1  # four systems' top-two shares and kappa
    assert paper.unreadable == []


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
    _assert_row(paper, "Table 5", row, columns, line.split())


def test_adapteval_manual_evaluation_equals_the_paper():
    paper = published.load("adapteval")
    kappa = float(re.search(r"agreement is (\d\.\d+)\.", ADAPTEVAL_S33).group(1))
    shares = [float(n) for n in re.findall(r"(\d+)%", ADAPTEVAL_S33)]
    assert paper.one(table="Section 3.3", metric="Cohen's kappa")["value"] == kappa == 0.4
    rows = [("Llama2 7b", "2-shot"), ("Llama2 70b", "2-shot"), ("Llama2 7b", "fine-tuned"), ("PEGASUS-X", "fine-tuned")]
    assert shares == [60, 52, 12, 16]
    for (row, setting), share in zip(rows, shares):
        v = paper.one(table="Section 3.3", row=row, setting=setting, column="Top-2 share")
        assert v["value"] == share and v["model"] == row and v["subset"] == "arxiv", v
    protocol = paper.protocol("Section 3.3")
    assert protocol["documents"]["count"] == 25 and "25 random arXiv articles" in protocol["source"]
    assert protocol["metrics"]["Top-2 share"]["annotators"] == 2 and protocol["metrics"]["Top-2 share"]["systems"] == 4


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
        _assert_row(paper, table, row, columns, cells, scored_metric=key)
    scored = {v["scored_metric"] for v in paper.values if v["metric"] == "correlation"}
    assert scored <= set(catalog.metric_keys(catalog.lookup("medqsum_hcm")))


def test_ccsbench_counts_per_table():
    paper = published.load("ccsbench")
    assert len(paper.find(table="Table 1")) == 5 * 3 * 2  # five datasets x three splits x (#Samples, #Docs)
    assert len(paper.find(table="Table 2")) == 2 * 6
    assert len(paper.find(table="Table 4")) == 17 * 8  # rows A1-A9, B1-B4, C1-C2, D1-D2
    assert len(paper.find(table="Table 5")) == 2 * 5
    assert len(paper.find(table="Table 7")) == 2 * 9
    # the tables the text holds no number of are said so, not left out silently
    assert any(u.startswith("Table 3") for u in paper.unreadable)


@pytest.mark.parametrize("line", CCS_T4)
def test_ccsbench_table4_rows_equal_the_paper(line):
    paper = published.load("ccsbench")
    ident, method, arch, *cells = _pipe_cells(line)
    _assert_row(paper, "Table 4", f"{ident} {method}", CCS_T4_COLUMNS, cells, id=ident, arch=arch,
                subset="compositional")


def test_ccsbench_table4_settings_follow_the_blocks():
    paper = published.load("ccsbench")
    by_id = {v["id"]: v["setting"] for v in paper.find(table="Table 4")}
    assert [by_id[i] for i in ("A1", "A7", "A8", "B2", "D1")] == ["0-shot", "0-shot", "3-shot", "fine-tuned",
                                                                  "two-stage modular"]
    # a run of the paper's model in the paper's setting finds its row
    v = paper.one(table="Table 4", model=paper.model_of("google/flan-t5-xxl"), setting="fine-tuned", metric="F1")
    assert v["row"] == "B2 Flan-T5-XXL" and v["value"] == 0.75


def test_ccsbench_tables_1_2_5_7_equal_the_paper():
    paper = published.load("ccsbench")
    row, *cells = _pipe_cells(CCS_T1)
    split = [int(n.strip().replace(",", "")) for c in cells for n in c.split("/")]
    columns = [f"{s} {c}" for s in ("Train", "Val", "Test") for c in ("#Samples", "#Docs")]
    _assert_row(paper, "Table 1", row, columns, split, subset="compositional")
    row, *cells = _pipe_cells(CCS_T2)
    _assert_row(paper, "Table 2", row, ["FAC", "FLU", "CTRL", "ROUGE-1", "ROUGE-2", "ROUGE-L"], cells, subset="focus")
    row, *cells = _pipe_cells(CCS_T5)
    _assert_row(paper, "Table 5", row, ["Readability", "Length PCC", "Length MAD", "Keywords SR", "Focus F1"], cells,
                model="Flan-T5-XXL", setting="fine-tuned")
    assert paper.one(table="Table 5", row="Single", column="Keywords SR")["subset"] == "keywords"
    row, *cells = _pipe_cells(CCS_T7)
    tokens = cells.pop()
    _assert_row(paper, "Table 7", row, CCS_T4_COLUMNS, cells, model="GPT-4o")
    v = paper.one(table="Table 7", row=row, column="#Tokens")
    assert v["printed"] == tokens and v["value"] == float(tokens.rstrip("k")) * 1000


def test_facet_aware_metric_tables_equal_the_paper():
    paper = published.load("facet_aware_metric")
    assert paper.benchmark is None
    assert len(paper.find(table="Table 2")) == 6 * 9 and len(paper.find(table="Table 4")) == 4 * 8
    assert len(paper.find(table="Table 3")) == 4 * 3
    row, *cells = FM_T2.split("\t")
    printed = [re.fullmatch(r"([\d.]+) ?\((\d)\)", c).groups() for c in cells]
    _assert_row(paper, "Table 2", row, FM_T2_COLUMNS, [v for v, _ in printed], dataset="PubMed")
    assert [paper.one(table="Table 2", row=row, column=c)["rank"] for c in FM_T2_COLUMNS] == [int(r) for _, r in printed]
    row, *cells = FM_T3.split("\t")
    _assert_row(paper, "Table 3", row, ["Classes", "κ", "Agreement"], cells, facet="method")
    row, *cells = FM_T4.split("\t")
    _assert_row(paper, "Table 4", row, [c for c in FM_T2_COLUMNS if c != "FM(Llama2)"], cells, dataset="arXiv")
    # Section 4.2's fit, in the text: the four facet weights in FM's order and the MSE
    weights, mse = FM_S42.split("weights of ")[1].split(" and a mean squared error of ")
    cells = weights.strip("[]").split(", ")
    for facet, cell in zip(("Background", "Method", "Result", "Conclusion"), cells):
        _assert_row(paper, "Section 4.2", facet, ["weight"], [cell], facet=facet.lower(), metric="facet weight")
    _assert_row(paper, "Section 4.2", "fit", ["mean squared error"], [mse], metric="mean squared error")
    assert len(paper.find(table="Section 4.2")) == 5


# Dataset, agreement and rating tables and DomainSum's cross-domain Table 6, as printed
DOMAINSUM_T1 = [("Genre Shift", "CNN/DM\t287,084\t13,367\t11,489"),
                ("Style Shift", "NYTimes\t152,959\t16,488\t16,620"),
                ("Topic Shift", "Law\t15,564\t550\t532")]
DOMAINSUM_T5_HEADING = ("\tDoc Length\tSum Length\tCompression\tDoc Diversity\tSum Diversity\tCoverage\t"
                        "Abstractiveness\tDensity")
DOMAINSUM_T5 = [("Genre Shift", "PubMed\t444.00\t209.51\t2.32\t78.86\t80.50\t27.55\t87.80\t19.44"),
                ("Topic Shift", "Law\t796.11\t70.50\t12.55\t71.77\t91.87\t58.83\t66.48\t84.47")]
#: (the model of the line's group, printed on the group's first line only; the line)
DOMAINSUM_T6 = [("BART", "\t\tReddit\t12.33 (↓8.53)\t84.23 (↓3.23)"),
                ("BART", "\tCNN\tNYDaily\t47.53 (↓6.31)\t90.18 (↓0.88)"),
                ("Llama3.1-8B", "Llama3.1-8B\tCNN/DM\tPubmed\t21.45 (↓2.65)\t82.43 (↓2.01)"),
                ("Llama3.1-8B", "\tSoccer\tFamily\t24.22 (↓0.13)\t86.55 (↑0.83)")]
#: its BERTScore arrow says a gain; its score and Table 3's in-domain BART Fox 91.55 say a loss
DOMAINSUM_T6_CONTRADICTED = ("BART", "\t\tFox\t50.63 (↓4.42)\t90.98 (↑0.57)")
ADAPTEVAL_T1 = "Government 17,517 973 973"
ADAPTEVAL_T2 = ["Science 215,913 6,029.9 272.7", "Government 19,466 9,409.4 553.4"]
MEDQSUM_T1 = ["<b>Relevance</b>\t56.85\t72.81", "<b>Speciality</b>\t64.77\t80.78"]
MEDQSUM_T2 = ["BioBART\t3.58/3.13/4.71\t3.69/3.15/4.74", "<b>Speciality</b>\t1.53\t1.56"]
MEDQSUM_T4 = ["Reference\t3.55/3.24/4.73\t3.69/3.24/4.74", "PEGASUS\t3.54/3.16/4.79\t3.73/3.23/4.83",
              "<b>Speciality</b>\t1.49\t1.55"]
TABLE6_CELL = re.compile(r"([\d.]+) \(([↓↑])([\d.]+)\)")


@pytest.mark.parametrize("block, line", DOMAINSUM_T1)
def test_domainsum_table1_rows_equal_the_paper(block, line):
    row, *cells = line.split("\t")
    _assert_row(published.load("domainsum"), "Table 1", row, ("Train", "Validation", "Test"),
                [c.replace(",", "") for c in cells], block=block, metric="Instances", setting="dataset statistics")


@pytest.mark.parametrize("block, line", DOMAINSUM_T5)
def test_domainsum_table5_rows_equal_the_paper(block, line):
    row, *cells = line.split("\t")
    _assert_row(published.load("domainsum"), "Table 5", row, DOMAINSUM_T5_HEADING.split("\t")[1:], cells, block=block)


def test_domainsum_table5_columns_are_the_suites_measures():
    from custom_metrics.analysis.measures import MEASURES

    paper = published.load("domainsum")
    measure = {v["column"]: v["measure"] for v in paper.find(table="Table 5")}
    assert sorted(measure.values()) == sorted(MEASURES)
    # Table 4 names the same measures by its rows (one spelt 'Abtractiveness' there)
    for v in paper.find(table="Table 4"):
        assert measure.get(v["row"], v["measure"]) == v["measure"], v


def _subset_of_printed(paper: published.Published) -> dict[str, str]:
    """The suite's subset of each domain name as Table 2's heading prints it, case-folded
    (Table 6 prints 'Pubmed' where Table 2 has 'PubMed')."""
    return {v["column"].rsplit(" ", 1)[0].casefold(): v["subset"] for v in paper.find(table="Table 2")}


@pytest.mark.parametrize("quoted", DOMAINSUM_T6 + [DOMAINSUM_T6_CONTRADICTED])
def test_domainsum_table6_rows_equal_the_paper(quoted):
    model, line = quoted
    paper = published.load("domainsum")
    subset = _subset_of_printed(paper)
    first, train, test, *cells = line.split("\t")
    assert first in ("", model)
    for metric, cell in zip(("ROUGE", "BERTScore"), cells, strict=True):
        score, arrow, gain = TABLE6_CELL.fullmatch(cell).groups()
        fields = {"table": "Table 6", "model": model, "subset": subset[test.casefold()], "metric": metric}
        v = paper.one(**fields, setting="cross-domain fine-tuned")
        assert v["value"] == float(score) and v["column"] == metric and v["row"].endswith(f" → {test}")
        if train:  # printed on one line of its group (a merged cell)
            assert v["training_subset"] == subset[train.casefold()] and v["row"] == f"{model}, {train} → {test}"
        diff = paper.one(**fields, setting="cross-domain minus in-domain fine-tuned")
        if quoted == DOMAINSUM_T6_CONTRADICTED and metric == "BERTScore":
            assert diff is None
            assert [u for u in paper.unreadable if f"row {v['row']}, column {metric}," in u and f"'{arrow}{gain}'" in u]
        else:
            assert diff["value"] == float(gain) * (1 if arrow == "↑" else -1) and diff["printed"] == arrow + gain


def test_domainsum_table6_is_the_levels_cross_domain_matrix():
    """Each level is trained on one domain and tested on its four others; each printed gain
    is the cross-domain score minus Table 3's in-domain one (to rounding), and each gain left
    out is one whose arrow contradicts that difference."""
    paper = published.load("domainsum")
    for level, domains in catalog.DOMAINSUM_LEVELS.items():
        for model in ("BART", "Llama3.1-8B"):
            found = paper.find(table="Table 6", model=model, level=level, setting="cross-domain fine-tuned")
            (train,) = {v["training_subset"] for v in found}
            assert sorted(v["subset"] for v in found) == sorted([d for d in domains if d != train] * 2)
    for v in paper.find(table="Table 6", setting="cross-domain fine-tuned"):
        in_domain = paper.one(table="Table 3", model=v["model"], subset=v["subset"], metric=v["metric"])["value"]
        diff = paper.one(table="Table 6", row=v["row"], column=v["column"],
                         setting="cross-domain minus in-domain fine-tuned")
        named = [u for u in paper.unreadable if u.startswith(f"Table 6, row {v['row']}, column {v['column']},")]
        if diff is None:
            assert len(named) == 1 and abs(v["value"] - in_domain) > 0.011
        else:
            assert not named and abs(v["value"] - in_domain - diff["value"]) <= 0.011, (v, diff)


def test_adapteval_dataset_tables_equal_the_paper():
    paper = published.load("adapteval")
    row, *cells = ADAPTEVAL_T1.split()
    _assert_row(paper, "Table 1", row, ("Train", "Val.", "Test"), [c.replace(",", "") for c in cells],
                subset="govreport", metric="Instances")
    for line in ADAPTEVAL_T2:
        row, *cells = line.split()
        _assert_row(paper, "Table 2", row, ("Size", "#W", "#Sum W"), [c.replace(",", "") for c in cells],
                    setting="dataset statistics")
    # Table 2's total is Table 1's three splits, except where the paper's two tables disagree (said in a note)
    for v in paper.find(table="Table 2", column="Size"):
        splits = sum(s["value"] for s in paper.find(table="Table 1", row=v["row"]))
        assert (splits == v["value"]) == ("note" not in v), v
    assert "19,463" in paper.one(table="Table 2", row="Government", column="Size")["note"]


def _rating_row(line: str) -> tuple[str, list[str], list[str]]:
    """(row, columns, cells) of a line of medqsum Table 2 or 4: a system's cell per annotator
    is 'Relevance/Consistency/Fluency'; the Speciality line has one number per annotator."""
    label, *cells = line.split("\t")
    row = re.sub(r"</?b>", "", label)
    if row == "Speciality":
        return row, ["Annotator1", "Annotator2"], cells
    aspects = ("Relevance", "Consistency", "Fluency")
    return row, [f"Annotator{n} {a}" for n in (1, 2) for a in aspects], [p for c in cells for p in c.split("/")]


def test_medqsum_agreement_and_rating_tables_equal_the_paper():
    paper = published.load("medqsum")
    assert len(paper.find(table="Table 1")) == 4 * 2
    # four systems and the reference x two annotators x three aspects, and Speciality per annotator
    assert len(paper.find(table="Table 2")) == len(paper.find(table="Table 4")) == 5 * 2 * 3 + 2
    assert paper.unreadable == []
    for line in MEDQSUM_T1:
        label, *cells = line.split("\t")
        row = re.sub(r"</?b>", "", label)
        _assert_row(paper, "Table 1", row, ("Separated", "Revised"), cells, metric="Cohen kappa", aspect=row.lower())
    for table, lines, setting in (("Table 2", MEDQSUM_T2, "revised annotations"),
                                  ("Table 4", MEDQSUM_T4, "separated annotations")):
        for line in lines:
            row, columns, cells = _rating_row(line)
            _assert_row(paper, table, row, columns, cells, setting=setting,
                        model=row if row in paper.models else None)
    assert paper.models["BioBART"] == ["GanjinZero/biobart-large"]  # Appendix E's checkpoints


def _leaves(node, path=""):
    """Every (path, leaf) of a protocol; an ``{"unknown": reason}`` object is one leaf."""
    if isinstance(node, dict) and set(node) != {"unknown"}:
        for key, child in node.items():
            yield from _leaves(child, f"{path}/{key}")
    else:
        yield path, node


@pytest.mark.parametrize("name, tables", [("domainsum", ("Table 1", "Table 5", "Table 6")),
                                          ("adapteval", ("Table 1", "Table 2", "Section 3.3")),
                                          ("medqsum", ("Table 1", "Table 2", "Table 4"))])
def test_added_tables_declare_their_protocol(name, tables):
    import json

    data = json.loads(published.data_file(name).read_text(encoding="utf-8"))
    assert list(data)[-1] == "protocols"
    paper = published.load(name)
    for table in tables:
        protocol = data["protocols"][table]
        assert protocol["source"] and protocol["documents"], table
        # the protocol names each metric of the table's values, by the file's metric names
        assert set(protocol["metrics"]) == {v["metric"] for v in paper.find(table=table)}, table
        for path, leaf in _leaves(protocol):
            if isinstance(leaf, dict):  # what the paper does not state says why
                assert isinstance(leaf["unknown"], str) and len(leaf["unknown"]) > 20, (table, path)
            else:
                assert isinstance(leaf, (str, int, bool)) and leaf != "", (table, path, leaf)
    if name == "domainsum":
        table6 = data["protocols"]["Table 6"]
        assert table6["documents"]["count"] == 500 and table6["documents"]["split"] == "test"
        assert "encoder" in table6["metrics"]["BERTScore"]["encoder"]["unknown"]
        assert "unknown" in data["protocols"]["Table 5"]["documents"]["split"]
    if name == "medqsum":
        assert {data["protocols"][t]["documents"]["count"] for t in tables} == {500}
