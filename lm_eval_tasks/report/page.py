"""Writing a report: every table as Markdown, CSV and LaTeX, ``report.md``, ``scores.csv``
and one self-contained ``report.html``.

Why self-contained: a report is mailed, attached to a pull request or opened from an
archive years later; figures are embedded as base64 PNG and the style is inline, so
the page needs no other file, no network and no script.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from custom_metrics.cells import md_text, write_csv
from lm_eval_tasks.report.formats import counted, markdown_table, write_table
from lm_eval_tasks.report.figures import Figure, Figures
from lm_eval_tasks.report.runs import Runs
from lm_eval_tasks.report.tables import Builder, Table
from lm_eval_tasks.report.verdicts import RULE, Verdict

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
ol.verdicts{font-size:.9rem;max-width:70rem;padding-left:1.6rem}ol.verdicts li{margin:.15rem 0}
dl.defs{font-size:.9rem;max-width:70rem}dl.defs dt{font-weight:600;margin-top:.4rem}dl.defs dd{margin:0 0 0 1.2rem}
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


#: (index in comparisons.json, verdict) of each table, by table name
Numbered = dict[str, list[tuple[int, Verdict]]]


def markdown(tables: Sequence[Table], figs: Figures, notes: Sequence[str], verdicts: Numbered | None = None,
             definitions: Sequence[tuple[str, str]] = ()) -> str:
    """``report.md``: every line of prose through :func:`~custom_metrics.cells.md_text` (names
    of models, systems and tasks are the user's), every table through ``markdown_table``."""
    parts = ["# Evaluation report\n"]
    if definitions:
        parts += ["## Definitions\n", *(f"- **{md_text(term)}**: {md_text(text)}" for term, text in definitions), ""]
    for t in tables:
        parts.append(f"## {md_text(t.title)}\n")
        if t.caption:
            parts.append(md_text(t.caption) + "\n")
        parts.append(markdown_table(t.header, t.rows))
        parts += [f"- {md_text(n)}" for n in t.notes]
        if t.citation:
            parts += ["", f"Citation: {md_text(t.citation)}"]
        found = (verdicts or {}).get(t.name, [])
        if found:
            parts += ["", "Verdicts:", ""] + [f"{i}. {md_text(v.sentence())}" for i, v in found]
        parts.append("")
    if figs.drawn:
        parts.append("## Figures\n")
        parts += [f"- [{md_text(f.title)}](figures/{f.path.name})" for f in figs.drawn]
        parts.append("")
    if notes or figs.skipped:
        parts.append("## Notes\n")
        parts += [f"- {md_text(n)}" for n in [*notes, *figs.skipped]]
    return "\n".join(parts) + "\n"


def _td(text: object) -> str:
    """One cell: long words (a system's name) may wrap, numbers may not."""
    c = str(text)
    cls = ' class="t"' if len(c) > WRAP_CHARS and _WORDS.search(c) else ""
    return f"<td{cls}>{html.escape(c)}</td>"



def table_html(t: Table, verdicts: Sequence[tuple[int, Verdict]] = ()) -> str:
    """One table as HTML: a titled, anchored heading, caption, the table in a horizontal
    scroller (wide tables never hide columns), its notes, and one sentence per comparison
    it shows (``data-comparison``: the comparison's index in ``comparisons.json``)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.header)
    body = ["<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in t.rows]
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in t.notes)
    said = "".join(f'<li data-comparison="{i}">{html.escape(v.sentence())}</li>' for i, v in verdicts)
    return (f'<h3 id="{html.escape(t.name)}">{html.escape(t.title)}</h3>'
            + (f'<p class="caption">{html.escape(t.caption)}</p>' if t.caption else "")
            + f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
            + (f'<ul class="notes">{notes}</ul>' if notes else "")
            + (f'<p class="caption cite">Citation: {html.escape(t.citation)}</p>' if t.citation else "")
            + (f'<p class="caption">Verdicts:</p><ol class="verdicts">{said}</ol>' if said else ""))


def definitions(keys: Sequence[str], shown: bool) -> list[tuple[str, str]]:
    """(term, definition) of every column a table heads with a metric's name (from the metric
    records), and of Δ, p and the verdicts when the report compares anything."""
    from custom_metrics import registry

    out = []
    for key in dict.fromkeys(keys):
        record = registry.key(key)
        if record is not None:
            scaled = f"; shown x{record.scale:g}" if record.scale != 1 else ""
            direction = "higher is better" if record.higher_is_better else "lower is better"
            out.append((record.label, f"{record.description} (key {key}{scaled}; {direction})"))
    if shown:
        out += [("Δ", "the difference of the two compared runs on the documents both logged and have a value "
                      "for, in the direction its heading states, with its simultaneous paired bootstrap interval"),
                ("Verdict", RULE + " Every comparison is in comparisons.json.")]
    return out


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


def empty_generations(run) -> tuple[int, int] | None:
    """(empty generations, generations) of a run as its results recorded them (``generation``),
    None when not recorded. Why on the page: an empty summary scores 0 on every metric, so a
    low row may be a model that stopped at once (an instruct model without its chat template)."""
    gen = run.record.get("generation") or {}
    if not isinstance(gen, dict) or "generations" not in gen:
        return None
    return len(gen.get("empty_ids") or ()), int(gen["generations"])


def empty_notes(runs: Runs) -> list[str]:
    """One note per run whose generations were partly or wholly empty."""
    out = []
    for r in sorted(runs.runs, key=lambda r: (r.system.label, r.task)):
        found = empty_generations(r)
        if found and found[0]:
            out.append(f"{r.system.label}, {r.task}: {found[0]} of {found[1]} generations are empty and score 0 "
                       "on every metric (an instruct model often needs --apply_chat_template)")
    return out


def provenance(run) -> tuple[str, str, str, str]:
    """(``--limit``, where the documents came from, the split demonstrations were drawn from,
    empty generations) of a run, as its results file recorded them: a paper's two-shot numbers
    need the paper's pool, and a limited run is not the full test set."""
    try:
        limit = (json.loads(run.results_file.read_text(encoding="utf-8")).get("config") or {}).get("limit")
    except (OSError, ValueError):
        limit = None
    pool = run.record.get("demo_pool") if run.shots else None
    return ("none" if limit is None else f"{limit:g}" if isinstance(limit, (int, float)) else str(limit),
            str(run.record.get("data_source") or run.record.get("data_dir") or "not recorded"),
            str(pool or ("—" if not run.shots else "not recorded")),
            "not recorded" if (found := empty_generations(run)) is None else f"{found[0]} of {found[1]}")


def page(runs: Runs, tables: Sequence[Table], figs: Figures, notes: Sequence[str], sources: Sequence[str],
         verdicts: Numbered | None = None, terms: Sequence[tuple[str, str]] = ()) -> str:
    """The self-contained HTML report."""
    when = written_at()
    systems = sorted({r.system.label for r in runs.runs})
    toc = toc_html(([("definitions", "Definitions")] if terms else []) + [(t.name, t.title) for t in tables]
                   + [("figures", "Figures"), ("runs", "Runs")])
    defs = "".join(f"<dt>{html.escape(term)}</dt><dd>{html.escape(text)}</dd>" for term, text in terms)
    run_rows = "".join(
        "<tr>" + "".join(_td(c) for c in (
            r.system.label, r.system.describe() or "—", r.task, r.setting, len(r.samples) or "n/a",
            *provenance(r), r.results_file.name)) + "</tr>"
        for r in sorted(runs.runs, key=lambda r: (r.system.label, r.task)))
    figures = "".join(figure_html(f) for f in figs.drawn)
    all_notes = [*notes, *figs.skipped]
    return document(f"Evaluation report: {', '.join(systems)}", f"""<h1>Evaluation report</h1>
<p class="meta">{counted(len(runs.runs), "run")} of {counted(len(systems), "system")}
({html.escape(", ".join(systems))}) from
{html.escape(", ".join(sources))}; written {when} by <code>domsum report</code>.</p>
{toc}
{f'<h2 id="definitions">Definitions</h2><dl class="defs">{defs}</dl>' if terms else ""}
<h2>Tables</h2>
{"".join(table_html(t, (verdicts or {}).get(t.name, [])) for t in tables)
 or "<p>No suite task found in the given folders.</p>"}
<h2 id="figures">Figures</h2>
{figures or "<p>No figure had anything to show.</p>"}
<h2 id="runs">Runs</h2>
<p class="caption">A system is a model with every setting that changes its outputs (chat template,
system instruction, generation, prompt budgets, judge); its settings are those it was run with beyond the
defaults.</p>
<div class="scroll"><table><thead><tr><th>System</th><th>Settings</th><th>Task</th><th>Setting</th>
<th>Documents</th><th>--limit</th><th>Document set</th><th>Demonstration pool</th><th>Empty generations</th>
<th>Results file</th></tr></thead><tbody>{run_rows}</tbody></table></div>
{('<h2>Notes</h2><ul class="notes">' + "".join(f"<li>{html.escape(n)}</li>" for n in all_notes) + "</ul>")
 if all_notes else ""}""")


__all__ = ["Numbered", "STYLE", "definitions", "document", "figure_html", "markdown", "page", "table_html", "toc_html", "write_scores_csv",
           "write_tables", "written_at"]
