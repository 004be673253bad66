"""Writing a report: every table as Markdown, CSV and LaTeX, ``report.md``, ``scores.csv``
and one self-contained ``report.html``.

Why self-contained: a report is mailed, attached to a pull request or opened from an
archive years later; figures are embedded as base64 PNG and the style is inline, so
the page needs no other file, no network and no script.
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from custom_metrics.cells import write_csv
from lm_eval_tasks.report.formats import counted, markdown_table, write_table
from lm_eval_tasks.report.figures import Figure, Figures
from lm_eval_tasks.report.runs import Runs
from lm_eval_tasks.report.tables import Builder, Table

STYLE = """
*,*::before,*::after{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1200px;
color:#1f2328;line-height:1.45;padding:0 1rem;overflow-wrap:anywhere}
h1{font-size:1.7rem;margin-bottom:.2rem}h2{font-size:1.3rem;margin-top:2.2rem;border-bottom:1px solid #d0d7de;
padding-bottom:.3rem}h3{font-size:1.05rem;margin-top:1.6rem}
.meta{color:#57606a;font-size:.9rem}
.scroll{overflow:auto;max-height:85vh;max-width:100%;width:fit-content;margin:.6rem 0;border:1px solid #d0d7de;
background:linear-gradient(to right,#fff 40%,#fff0) left/2.5rem 100% no-repeat local,
linear-gradient(to left,#fff 40%,#fff0) right/2.5rem 100% no-repeat local,
radial-gradient(farthest-side at 0 50%,#0003,#0000) left/.9rem 100% no-repeat scroll,
radial-gradient(farthest-side at 100% 50%,#0003,#0000) right/.9rem 100% no-repeat scroll}
table{border-collapse:collapse;font-size:.86rem;font-variant-numeric:tabular-nums;overflow-wrap:normal}
th,td{border:1px solid #d0d7de;padding:.28rem .55rem;text-align:right;white-space:nowrap}
th{background:#f6f8fa;position:sticky;top:0;z-index:1;white-space:normal;min-width:3.5em;vertical-align:bottom}
td.t{text-align:left;white-space:normal;min-width:9em;max-width:20em;overflow-wrap:break-word}
td:first-child,th:first-child{text-align:left}
tr:first-child th{border-top:0}tr>:first-child{border-left:0}tr>:last-child{border-right:0}
tr:last-child td{border-bottom:0}
td.sig{font-weight:600;color:#0a6b2d}
.caption{color:#57606a;font-size:.85rem;max-width:70rem}
figure{margin:1.2rem 1rem 1.2rem 0;display:inline-block;vertical-align:top;max-width:calc(100% - 1rem)}
figure img{max-width:100%;height:auto;border:1px solid #eaeef2}
figcaption{color:#57606a;font-size:.85rem;max-width:46rem}
ul.notes li{color:#6e4b00}
nav ol{list-style:none;padding:0;margin:.8rem 0;columns:2 22rem;column-gap:2.5rem;font-size:.9rem}
nav li{display:flex;gap:.45rem;break-inside:avoid;margin:0 0 .2rem}
nav li .n{flex:none;min-width:1.6em;text-align:right;color:#57606a}
nav li a{min-width:0}
"""


#: a cell of words (a name, a key), which may wrap, unlike numbers and intervals
_WORDS = re.compile(r"[^\W\d_]{2,}")
#: cells of words longer than this may wrap (shorter ones keep their column narrow)
WRAP_CHARS = 20


def write_tables(out: Path, tables: Sequence[Table]) -> list[Path]:
    written = []
    for t in tables:
        written += list(write_table(out / "tables", t.name, t.header, t.rows, t.title)[:3])
    return written


def write_scores_csv(path: Path, builder: Builder) -> Path:
    """Every (run, key) estimate in long form: the machine-readable twin of the tables."""
    header = ["system", "base", "adapter", "trained_on", "benchmark", "subset", "task", "shots",
              "key", "value", "ci_low", "ci_high", "stderr", "n_documents", "results_file", "settings"]
    rows = []
    for r in builder.runs.runs:
        for key in sorted(r.values):
            e = builder.est(r, key)
            rows.append([r.system.label, r.system.base, r.system.adapter or "", r.system.trained_on or "",
                         r.benchmark, r.subset, r.task, r.shots, key, _num(e.value), _num(e.low),
                         _num(e.high), _num(e.stderr), e.n, str(r.results_file), r.system.describe()])
    write_csv(path, header, rows)
    return path


def _num(v: float | None) -> str:
    return "" if v is None or not math.isfinite(v) else repr(float(v))


def markdown(tables: Sequence[Table], figs: Figures, notes: Sequence[str]) -> str:
    parts = ["# Evaluation report\n"]
    for t in tables:
        parts.append(f"## {t.title}\n")
        if t.caption:
            parts.append(t.caption + "\n")
        parts.append(markdown_table(t.header, t.rows))
        parts += [f"- {n}" for n in t.notes]
        parts.append("")
    if figs.drawn:
        parts.append("## Figures\n")
        parts += [f"- [{f.title}](figures/{f.path.name})" for f in figs.drawn]
        parts.append("")
    if notes or figs.skipped:
        parts.append("## Notes\n")
        parts += [f"- {n}" for n in [*notes, *figs.skipped]]
    return "\n".join(parts) + "\n"


def _td(text: object, header: str = "") -> str:
    """One cell: a significant p-value marked; long words (a system's name) may wrap, numbers may not."""
    c = str(text)
    cls = (' class="sig"' if (header == "p" or header.startswith("p (")) and c.endswith("*")
           else ' class="t"' if len(c) > WRAP_CHARS and _WORDS.search(c) else "")
    return f"<td{cls}>{html.escape(c)}</td>"



def table_html(t: Table) -> str:
    """One table as HTML: a titled, anchored heading, caption, the table in a horizontal
    scroller (wide tables never hide columns), and its notes; significant p cells bold."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.header)
    body = ["<tr>" + "".join(_td(c, h) for h, c in zip(t.header, row)) + "</tr>" for row in t.rows]
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in t.notes)
    return (f'<h3 id="{html.escape(t.name)}">{html.escape(t.title)}</h3>'
            + (f'<p class="caption">{html.escape(t.caption)}</p>' if t.caption else "")
            + f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
            + (f'<ul class="notes">{notes}</ul>' if notes else ""))


def figure_html(f: Figure) -> str:
    """One figure, its PNG embedded as base64, with alt text (``f.alt``, else its title)
    and a caption."""
    return (f'<figure><img alt="{html.escape(f.alt or f.title)}" src="data:image/png;base64,'
            f'{base64.b64encode(f.path.read_bytes()).decode("ascii")}"><figcaption><b>{html.escape(f.title)}.</b> '
            f'{html.escape(f.caption)}</figcaption></figure>')


def toc_html(entries: Sequence[tuple[str, str]]) -> str:
    """The table of contents: ``(anchor, title)`` pairs as a numbered, linked list (the
    number is text beside the title, so columns of entries never overlap)."""
    items = "".join(f'<li><span class="n">{i}.</span><a href="#{html.escape(a)}">{html.escape(t)}</a></li>'
                    for i, (a, t) in enumerate(entries, start=1))
    return f'<nav aria-label="Contents"><ol>{items}</ol></nav>'


def document(title: str, body: str) -> str:
    """A complete self-contained page: ``body`` (HTML) under the shared inline style."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title><style>{STYLE}</style></head>
<body>
{body}
</body></html>
"""


def written_at() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def page(runs: Runs, tables: Sequence[Table], figs: Figures, notes: Sequence[str], sources: Sequence[str]) -> str:
    """The self-contained HTML report."""
    when = written_at()
    systems = sorted({r.system.label for r in runs.runs})
    toc = toc_html([(t.name, t.title) for t in tables] + [("figures", "Figures"), ("runs", "Runs")])
    run_rows = "".join(
        "<tr>" + "".join(_td(c) for c in (
            r.system.label, r.system.describe() or "—", r.task, r.setting, len(r.samples) or "n/a",
            r.results_file.name)) + "</tr>"
        for r in sorted(runs.runs, key=lambda r: (r.system.label, r.task)))
    figures = "".join(figure_html(f) for f in figs.drawn)
    all_notes = [*notes, *figs.skipped]
    return document(f"Evaluation report: {', '.join(systems)}", f"""<h1>Evaluation report</h1>
<p class="meta">{counted(len(runs.runs), "run")} of {counted(len(systems), "system")}
({html.escape(", ".join(systems))}) from
{html.escape(", ".join(sources))}; written {when} by <code>domsum report</code>.</p>
{toc}
<h2>Tables</h2>
{"".join(table_html(t) for t in tables) or "<p>No suite task found in the given folders.</p>"}
<h2 id="figures">Figures</h2>
{figures or "<p>No figure had anything to show.</p>"}
<h2 id="runs">Runs</h2>
<p class="caption">A system is a model with every setting that changes its outputs (chat template,
system instruction, generation, prompt budgets, judge); its settings are those it was run with beyond the
defaults.</p>
<div class="scroll"><table><thead><tr><th>System</th><th>Settings</th><th>Task</th><th>Setting</th>
<th>Documents</th><th>Results file</th></tr></thead><tbody>{run_rows}</tbody></table></div>
{('<h2>Notes</h2><ul class="notes">' + "".join(f"<li>{html.escape(n)}</li>" for n in all_notes) + "</ul>")
 if all_notes else ""}""")


__all__ = ["STYLE", "document", "figure_html", "markdown", "page", "table_html", "toc_html", "write_scores_csv",
           "write_tables", "written_at"]
