"""The ``domsum report`` page laid out by a real browser (headless Chromium through Playwright).

The report is built from hand-written harness output (no model: tests/helpers/report_page.py)
with long system names, so its tables are wider than a phone and, unwrapped, than a laptop
window. At 1,280 px every table fits the page whole (numbers wrap before their interval,
names wrap, the zero- vs few-shot table is one table per metric); at 390 px the page itself
never scrolls sideways, and a table wider than the phone scrolls inside its own box, whose
last column must be reachable. The page opens on the results: the verdict table, one row per
comparison of comparisons.json, and one sentence per question; the definitions come last.
The table of contents must not overlap and must link to ids on the page; every figure needs
alt text. A page made to break each rule shows that the check finds each break. Chromium
missing is a failure saying what to install, not a skip.
"""

from __future__ import annotations

import json
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


#: every table box's widths and where it ends, against the text column it sits in
_BOXES = """() => { const body = document.body, cs = getComputedStyle(body);
  const right = body.getBoundingClientRect().right - parseFloat(cs.paddingRight);
  return [...document.querySelectorAll('div.scroll')].map(b => ({
    table: b.querySelector('table').dataset.table || b.querySelector('table').className || 'runs',
    scroll: b.scrollWidth, client: b.clientWidth, inner: b.querySelector('table').scrollWidth,
    right: b.getBoundingClientRect().right, column: right})); }"""


def test_the_page_really_has_wide_tables_and_figures(report_page, chromium):
    """The check above is not vacuous: at 390 px the tables are wider than the phone and
    scroll inside their own boxes while the page does not; at 1,280 px none scrolls."""
    page = chromium.new_page()
    try:
        page.goto(report_page.as_uri())
        for width, least in ((390, 7), (1280, 0)):
            page.set_viewport_size({"width": width, "height": 900})
            boxes = page.evaluate(_BOXES)
            assert sum(b["scroll"] > b["client"] + 1 for b in boxes) >= least, width
            if width == 1280:
                assert not [b for b in boxes if b["scroll"] > b["client"] + 1], boxes
        assert page.evaluate("() => document.querySelectorAll('figure img[alt]').length") == 5
        # contents: results, verdicts, DomainSum Table 2's layout (genre), the three tables,
        # figures, runs, definitions
        assert page.evaluate("() => document.querySelectorAll('nav li').length") == 9
        # one sentence per comparison under its table, folded
        sentences = page.evaluate("() => [...document.querySelectorAll('details.said ol.verdicts li')]"
                                  ".map(li => li.textContent)")
        assert len(sentences) == 66 and all("documents scored on both sides" in s for s in sentences)
    finally:
        page.close()


def test_every_table_fits_a_laptop_window_and_the_phone_page_never_scrolls_sideways(report_page, chromium):
    """At 1,280 px no table is wider than its box and no box leaves the text column: every
    column (BERTScore, the last domains, the protocol sentences) is in view. At 390 px the
    page (html and body) is no wider than the window; a table wider than the phone scrolls
    inside its own box (the rule chosen for phones: a table keeps its columns readable, the
    page keeps its width)."""
    page = chromium.new_page()
    try:
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(report_page.as_uri())
        boxes = page.evaluate(_BOXES)
        # the verdict table, DomainSum Table 2's layout, the zero- vs few-shot table as one
        # table per metric (3), the scores, the significance table and the runs
        assert [b["table"] for b in boxes] == ["verdicts", "domainsum_table2_genre"] + ["domainsum_settings"] * 3 \
            + ["domainsum_scores", "significance", "runs"]
        for b in boxes:
            assert b["inner"] <= b["client"] + 1 and b["scroll"] <= b["client"] + 1, b
            assert b["right"] <= b["column"] + 1, b
        page.set_viewport_size({"width": 390, "height": 900})
        widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth,"
                               " document.body.scrollWidth, document.body.clientWidth]")
        assert widths[0] <= widths[1] and widths[2] <= widths[3], widths
        phone = page.evaluate(_BOXES)
        assert all(b["right"] <= b["column"] + 1 for b in phone)
        assert page.evaluate("() => [...document.querySelectorAll('div.scroll')]"
                             ".every(b => ['auto', 'scroll'].includes(getComputedStyle(b).overflowX))")
    finally:
        page.close()


def _p_text(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.3f}" if p >= 0.001 else "<0.001"


def test_the_page_opens_on_the_verdicts_one_row_per_comparison(report_page, chromium):
    """The first section after the title is the results, opening on the verdicts; the
    definitions come after every table. The verdict table has one row per entry of
    comparisons.json, each row's subset, Δ, interval, p, n and verdict as the file holds
    them, and one sentence per question (a metric in a table) with its count of comparisons."""
    comparisons = json.loads((report_page.parent / "comparisons.json").read_text(encoding="utf-8"))["comparisons"]
    page = chromium.new_page()
    try:
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(report_page.as_uri())
        heads = page.evaluate("() => [...document.querySelectorAll('h1, h2, h3')].map(h => [h.tagName, h.id])")
        assert heads[:3] == [["H1", ""], ["H2", "results"], ["H3", "verdicts"]]
        assert [h for h in heads if h[0] == "H2"][-1] == ["H2", "definitions"]
        assert page.evaluate("() => document.querySelector('h2#results').previousElementSibling.tagName") == "NAV"
        assert page.evaluate("() => [...document.querySelectorAll('table')].every(t => "
                             "t.compareDocumentPosition(document.querySelector('dl.defs')) "
                             "& Node.DOCUMENT_POSITION_FOLLOWING)")
        rows = page.evaluate("() => [...document.querySelectorAll('table.verdicts tbody tr')].map(tr => "
                             "[tr.dataset.comparison, [...tr.cells].map(c => c.textContent.replace(/\\u00a0/g, ' '))])")
        assert sorted(int(i) for i, _ in rows) == list(range(len(comparisons))) == list(range(66))
        for i, cells in rows:
            c = comparisons[int(i)]
            subset, compared, delta, p, n, verdict = cells[-6:]
            k = c["display_scale"]
            shown = "n/a" if c["verdict"] == "not computed" else (
                f"{c['delta'] * k:+.2f} [{c['ci_low'] * k:.2f}, {c['ci_high'] * k:.2f}]"
                + ("°" if c["ci_extended"] else ""))
            assert (subset, delta, p, n) == (c["subset"], shown, _p_text(c["p_corrected"]), str(c["n"])), (i, cells)
            first, second = (c["b"], c["a"]) if c["direction"] == "b-a" else (c["a"], c["b"])
            system, _, settings = compared.rpartition(": ")
            later, _, earlier = settings.partition(" − ")
            assert compared == f"{first} − {second}" or (first, second) == (f"{system} ({later})",
                                                                         f"{system} ({earlier})"), (i, compared)
            assert verdict.startswith({"no difference detected": "no difference detected",
                                       "not computed": f"not computed: {c['reason']}"}.get(c["verdict"], "")), verdict
        questions = {}
        for c in comparisons:
            questions.setdefault((c["table"], c["metric"]), []).append(c["verdict"])
        said = page.evaluate("() => [...document.querySelectorAll('ul.questions li')].map(li => li.textContent)")
        assert len(said) == len(questions) == 6
        for sentence, found in zip(said, questions.values()):
            assert f", {len(found)} comparisons: " in sentence, sentence
            if set(found) == {"no difference detected"}:
                assert f"no difference detected in all {len(found)}" in sentence, sentence
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
        assert ids[:2] == ["verdicts", "domainsum_table2_genre"] and "domainsum_paper_vs_run" in ids
        cells = page.evaluate("() => [...document.querySelectorAll('#domainsum_table2_genre + p + div td')]"
                              ".map(td => td.textContent.replace(/\\u00a0/g, ' '))")
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


def test_the_check_finds_a_table_that_does_not_fit_a_laptop(chromium, tmp_path):
    """A table box that scrolls sideways is fine on a phone and a problem at 1,280 px."""
    path = tmp_path / "wide.html"
    cells = "".join(f"<td>{i:06d}.{i:06d}</td>" for i in range(60))
    path.write_text(f"<!DOCTYPE html><html><body><nav><ol><li><a href='#t'>t</a></li></ol></nav><h3 id='t'>t</h3>"
                    f"<div class='scroll' style='overflow:auto'><table data-table='t'><tr>{cells}</tr></table></div>"
                    "</body></html>", encoding="utf-8")
    assert page_check.check_page(path, widths=(390,), context=chromium) == []
    [problem] = page_check.check_page(path, widths=(1280,), context=chromium)
    assert problem.startswith("1280 px: <table> ") and "does not fit the page" in problem


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
