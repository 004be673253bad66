"""The report page's words and figure inputs: counts agree in number, the contents list
numbers its entries and links to the tables' ids, the per-document box plot gets each
subset apart, and a missing browser is named in one line. (The page's layout in a real
browser: tests/integration/test_report_page_browser.py.)"""

from __future__ import annotations

import re

import pytest

from helpers.report_page import write_runs, write_system
from lm_eval_tasks.commands import report
from lm_eval_tasks.report import figures, page_check
from lm_eval_tasks.report.formats import counted
from lm_eval_tasks.report.runs import load_runs
from lm_eval_tasks.report.tables import Builder, Options


def test_counted_agrees_in_number():
    assert counted(1, "system") == "1 system"
    assert counted(2, "system") == "2 systems"
    assert counted(0, "run") == "0 runs"
    assert counted(1, "analysis", "analyses") == "1 analysis" and counted(3, "analysis", "analyses") == "3 analyses"


def test_one_system_is_one_system(tmp_path, capsys):
    write_system(tmp_path / "runs", "org/only-model", {"cnndm": 0.3}, shots=(0,), n_docs=3)
    assert report.main([str(tmp_path / "runs"), "--out", str(tmp_path / "r"), "--no-plots", "--no-progress"]) == 0
    text = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert re.search(r"<p class=\"meta\">1 run of 1 system\s+\(org/only-model\)", text)
    assert "1 systems" not in text and "1 runs" not in text
    # the scores table and DomainSum Table 2's layout (the paper's rows beside the one system)
    assert re.search(r"report: \S+ \(2 tables, 0 figures; 9 more files under ", capsys.readouterr().err)


def test_contents_are_numbered_and_link_to_the_tables(tmp_path):
    write_runs(tmp_path / "runs")
    assert report.main([str(tmp_path / "runs"), "--out", str(tmp_path / "r"), "--no-plots", "--no-progress"]) == 0
    text = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    nav = re.search(r"<nav[^>]*><ol>(.*?)</ol></nav>", text).group(1)
    entries = re.findall(r'<li><span class="n">(\d+)\.</span><a href="#([^"]+)">', nav)
    assert [int(n) for n, _ in entries] == list(range(1, len(entries) + 1))
    ids = re.findall(r' id="([^"]+)"', text)
    assert len(ids) == len(set(ids)) and {a for _, a in entries} == set(ids)
    # the results first (the verdicts, then the tables), the glossary last
    anchors = [a for _, a in entries]
    assert anchors[:3] == ["results", "verdicts", "domainsum_table2_genre"]
    assert anchors[-3:] == ["figures", "runs", "definitions"]


def test_the_page_defines_its_metric_columns_and_verdicts(tmp_path):
    """The column headed "ROUGE" is the geometric mean of ROUGE-1/2/L: the page says so, with
    the verdict rule; no caption says systems are never compared while a table compares them."""
    write_runs(tmp_path / "runs")
    assert report.main([str(tmp_path / "runs"), "--out", str(tmp_path / "r"), "--no-plots", "--no-progress"]) == 0
    text = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    defs = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", text))
    assert defs["ROUGE"].startswith("geometric mean of the corpus ROUGE-1/2/L means") and "x100" in defs["ROUGE"]
    assert "ROUGE (release mean)" in defs and "BERTScore" in defs
    assert "Holm-corrected p is below 0.05" in defs["Verdict"] and "80% power" in defs["Verdict"]
    assert "never compared here" not in text and "compared with each other in the significance table" in text


def test_box_plot_keeps_subsets_apart(tmp_path, monkeypatch):
    """One box per system and setting within each subset: 8 documents each, never 8 x subsets."""
    write_runs(tmp_path / "runs")
    builder = Builder(load_runs([str(tmp_path / "runs")]), Options())
    seen = {}

    def record(path, title, series, xlabel):
        seen.update(series)
        return path

    monkeypatch.setattr(figures.plots, "distribution_plot", record)
    runs = builder.runs.of("domainsum")
    figures._distribution(figures.Figures(tmp_path / "f"), builder, "domainsum", runs, "rouge_mean",
                          "ROUGE (release mean)")
    assert list(seen) == ["cnndm", "pubmed", "samsum"]
    assert {len(v) for boxes in seen.values() for v in boxes.values()} == {8}
    assert len(seen["cnndm"]) == 6 and len(seen["samsum"]) == 4  # the small model has no SAMSum run
    small = "HuggingFaceTB/SmolLM2-135M-Instruct (0-shot)"
    assert seen["pubmed"][small] == [0.0] * 8
    logged = builder.runs.find(next(r.system for r in runs if r.series == small), "domainsum", "cnndm", 0)
    assert seen["cnndm"][small] == pytest.approx([100 * v for v in logged.per_doc("rouge_mean").values()])


def test_a_missing_chromium_is_one_line_naming_the_install(monkeypatch):
    monkeypatch.setattr(page_check.shutil, "which", lambda name: None)
    with pytest.raises(page_check.PageCheckError) as exc:
        page_check.find_chromium()
    message = str(exc.value)
    assert "\n" not in message and "apt-get install -y chromium" in message and '.[dev]' in message
