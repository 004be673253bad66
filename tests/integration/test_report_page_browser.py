"""The ``domsum report`` page laid out by a real browser (headless Chromium through Playwright).

The report is built from hand-written harness output (no model: tests/helpers/report_page.py)
with long system names, so its tables are wider than a phone and than a laptop window.
At 1,280 px and 390 px nothing may spill out of its box but the tables' own scroll boxes,
whose last column must be reachable; the table of contents must not overlap and must link
to ids on the page; every figure needs alt text. A page made to break each rule shows that
the check finds each break. Chromium missing is a failure saying what to install, not a skip.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, subprocess_env
from helpers.report_page import write_runs, write_system
from lm_eval_tasks.commands import report
from lm_eval_tasks.report import page_check


@pytest.fixture(scope="module")
def chromium():
    try:
        with page_check.browser() as context:
            yield context
    except page_check.PageCheckError as exc:
        pytest.fail(f"the report page's browser test needs Chromium: {exc}", pytrace=False)


@pytest.fixture(scope="module")
def report_page(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("report_page")
    write_runs(root / "runs")
    assert report.main([str(root / "runs"), "--out", str(root / "report"), "--no-progress"]) == 0
    return root / "report" / "report.html"


def test_report_page_lays_out_at_laptop_and_phone_widths(report_page, chromium, tmp_path):
    problems = page_check.check_page(report_page, context=chromium, screenshots=tmp_path)
    assert problems == []
    assert {p.name for p in tmp_path.glob("*.png")} == {"page_1280.png", "page_390.png"}


def test_a_report_without_comparisons_lays_out_too(chromium, tmp_path):
    write_system(tmp_path / "runs", "org/only-model", {"cnndm": 0.3}, shots=(0,), n_docs=3)
    assert report.main([str(tmp_path / "runs"), "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    assert page_check.check_page(tmp_path / "r" / "report.html", context=chromium) == []


def test_the_page_really_has_wide_tables_and_figures(report_page, chromium):
    """The check above is not vacuous: at 390 px every table box scrolls, at 1,280 px some do."""
    page = chromium.new_page()
    try:
        page.goto(report_page.as_uri())
        for width, least in ((390, 4), (1280, 1)):
            page.set_viewport_size({"width": width, "height": 900})
            scrolling = page.evaluate("() => [...document.querySelectorAll('div.scroll')]"
                                      ".filter(b => b.scrollWidth > b.clientWidth + 1).length")
            assert scrolling >= least, width
        assert page.evaluate("() => document.querySelectorAll('figure img[alt]').length") == 5
        # contents: definitions, DomainSum Table 2's layout (genre), the three tables, figures, runs
        assert page.evaluate("() => document.querySelectorAll('nav li').length") == 7
        # one sentence per comparison, each as wide as the text column at most
        sentences = page.evaluate("() => [...document.querySelectorAll('ol.verdicts li')].map(li => li.textContent)")
        assert len(sentences) == 66 and all("documents scored on both sides" in s for s in sentences)
    finally:
        page.close()


def test_the_papers_layout_with_published_rows_lays_out(chromium, tmp_path):
    """DomainSum Table 2's layout with the paper's rows and the paper-vs-this-run table: at
    1,280 and 390 px every column (each cell's Δ and p) is reachable."""
    write_system(tmp_path / "runs", "meta-llama/Llama-3.1-8B-Instruct", {"cnndm": 0.4, "pubmed": 0.3}, n_docs=4)
    write_system(tmp_path / "runs", "Qwen/Qwen2.5-7B-Instruct-another-long-checkpoint-name",
                 {"cnndm": 0.3, "pubmed": 0.35}, n_docs=4)
    assert report.main([str(tmp_path / "runs"), "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    path = tmp_path / "r" / "report.html"
    assert page_check.check_page(path, context=chromium) == []
    page = chromium.new_page()
    try:
        page.goto(path.as_uri())
        ids = page.evaluate("() => [...document.querySelectorAll('h3[id]')].map(h => h.id)")
        assert ids[:1] == ["domainsum_table2_genre"] and "domainsum_paper_vs_run" in ids
        cells = page.evaluate("() => [...document.querySelectorAll('#domainsum_table2_genre + p + div td')]"
                              ".map(td => td.textContent)")
        assert any(c.startswith("Llama3.1-8B (published)") for c in cells)
        assert sum("; p " in c for c in cells) == 2 * 4  # this run's two systems: Δ and p in each cell
    finally:
        page.close()


BROKEN = """<!DOCTYPE html><html><head><meta name="viewport" content="width=device-width">
<style>body{margin:0 auto;max-width:600px}nav ol{columns:2;column-gap:0}.n{margin-right:-1em}
.scroll{overflow-x:visible}</style></head><body>
<nav><ol><li><span class="n">1.</span><a href="#t1">first</a></li><li><a href="#nowhere">second</a></li></ol></nav>
<h3 id="t1">t</h3><div class="scroll"><table><tr><td style="white-space:nowrap">%s</td></tr></table></div>
<pre>%s</pre>
<figure><img src="data:image/png;base64,iVBORw0KGgo="><figcaption>c</figcaption></figure>
</body></html>"""


def test_the_check_finds_each_kind_of_break(chromium, tmp_path):
    path = tmp_path / "broken.html"
    path.write_text(BROKEN % ("x " * 200, "y" * 300), encoding="utf-8")
    found = "\n".join(page_check.check_page(path, widths=(390,), context=chromium))
    for expected in ("390 px: <pre>", "overflows its box", "does not scroll sideways (overflow-x: visible)",
                     "last column out of reach", "the number and title of contents entry",
                     "contents link #nowhere", "image without alt text", "image does not load"):
        assert expected in found, (expected, found)


def test_command_line_check(report_page, tmp_path):
    """The command users run (docs/reports.md): exit 0 and a word per width on a good page,
    exit 1 and a line per problem on a bad one."""
    good = subprocess.run([sys.executable, "-m", "lm_eval_tasks.report.page_check", str(report_page),
                           "--width", "390"], cwd=ROOT, env=subprocess_env(), capture_output=True, text=True,
                          timeout=120)
    assert (good.returncode, good.stdout) == (0, ""), good.stderr
    assert good.stderr.strip().endswith("no problem at 390 px")
    bad = tmp_path / "bad.html"
    bad.write_text(BROKEN % ("x", "y" * 300), encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "lm_eval_tasks.report.page_check", str(bad)], cwd=ROOT,
                         env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "<pre>" in out.stdout and "problems at 1280, 390 px" in out.stderr
