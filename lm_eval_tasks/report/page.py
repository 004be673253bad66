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
from lm_eval_tasks.report.verdicts import NOT_COMPUTED, RULE, SIDED, Verdict, direction_note, p_text

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
td{vertical-align:top}td.w{white-space:normal}
td.t{text-align:left;white-space:normal;min-width:9em;max-width:20em;overflow-wrap:anywhere}td.l{min-width:13em}
td:first-child,th:first-child{text-align:left}
tr:first-child th{border-top:0}tr>:first-child{border-left:0}tr>:last-child{border-right:0}
tr:last-child td{border-bottom:0}
table.verdicts th{text-align:left}table.verdicts td.v{text-align:left;white-space:normal;min-width:8em}
ul.questions{font-size:.92rem;max-width:70rem;padding-left:1.2rem}ul.questions li{margin:.3rem 0}
p.panel{font-weight:600;font-size:.9rem;margin:.9rem 0 0}
details.said{font-size:.9rem;max-width:70rem;margin:.3rem 0}details.said summary{cursor:pointer;color:#57606a}
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
#: cells of words longer than this (a sentence: how a row's protocol differs from a paper's)
#: get a wider column, so that their rows stay a few lines high
LONG_CHARS = 80
#: where a cell of numbers may wrap: before its interval or its parenthesis and after a
#: semicolon ("10.69 [6.40, 14.79]", "28.53 (+4.70; p 0.109)"), never inside a number or an interval
_NUMBER_BREAK = re.compile(r" (?=[\[(])|(?<=;) ")


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
    """``report.md``: the verdicts first (one sentence per question, one row per comparison),
    then the tables, figures, notes and definitions; every line of prose through
    :func:`~custom_metrics.cells.md_text` (names of models, systems and tasks are the user's),
    every table through ``markdown_table``."""
    parts = ["# Evaluation report\n"]
    if any((verdicts or {}).values()):
        header, rows = verdict_table(tables, verdicts or {})
        parts += ["## Verdicts\n", VERDICTS_CAPTION + "\n",
                  *(f"- {md_text(t.title + rest)}" for t, rest in questions(tables, verdicts or {})), "",
                  markdown_table(header, rows)]
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
        parts.append("")
    if definitions:
        parts += ["## Definitions\n", *(f"- **{md_text(term)}**: {md_text(text)}" for term, text in definitions)]
    return "\n".join(parts).rstrip("\n") + "\n"


#: what the verdict table is, above it on the page and in report.md
VERDICTS_CAPTION = ("One sentence per question (a metric in a table), then one row per comparison (#: its index in "
                    "comparisons.json). Δ is in the direction the Compared column states, with its simultaneous "
                    "interval (° extended to 0); p is Holm-corrected within the question. The rule is under "
                    "Definitions (Verdict); each comparison is said in full under its table.")


def _sides(v: Verdict) -> tuple[str, str, str]:
    """``(system, first, second)`` of a comparison, Δ = first − second: one system's two
    settings as ``(label, "2-shot", "0-shot")``, two systems as ``("", A, B)``."""
    first, second = (v.b, v.a) if v.direction == "b-a" else (v.a, v.b)
    later, _, earlier = v.delta_of.partition(" − ")
    if (v.delta_of != f"{first} − {second}" and first.endswith(f" ({later})") and second.endswith(f" ({earlier})")
            and first[:-len(later) - 3] == second[:-len(earlier) - 3]):
        return first[:-len(later) - 3], later, earlier
    return "", first, second


def _ranked(v: Verdict) -> tuple[str, str, str]:
    """``(system, named, other)`` of a comparison whose verdict names a side (:func:`_sides`'s
    names): the better side, or the higher one for a metric with no better direction."""
    system, first, second = _sides(v)
    return (system, first, second) if v.verdict.startswith("a ") == (v.direction == "a-b") else (system, second, first)


def _outcome(v: Verdict) -> str:
    """The verdict in a few words: the better side, no difference (and whether the documents
    were too few for any), or not computed with the reason."""
    if v.verdict == NOT_COMPUTED:
        return f"not computed: {v.reason}"
    if v.verdict not in SIDED:
        return "no difference detected" + (" (too few documents)" if v.too_few() else "")
    return f"{_ranked(v)[1]} {v.verdict.split()[1]}"


def _families(tables: Sequence[Table], verdicts: Numbered) -> list[tuple[Table, list[tuple[int, Verdict]]]]:
    """Each question, a metric in a table (the family the Holm correction runs over), with its
    comparisons: in the tables' order, then the order its metrics first appear."""
    out = []
    for t in tables:
        by_metric: dict[str, list[tuple[int, Verdict]]] = {}
        for i, v in verdicts.get(t.name, []):
            by_metric.setdefault(v.metric, []).append((i, v))
        out += [(t, family) for family in by_metric.values()]
    return out


def verdict_table(tables: Sequence[Table], verdicts: Numbered) -> tuple[list[str], list[list[str]]]:
    """The compact verdict table: one row per comparison, by question (:func:`questions`'
    order), each question's in ``comparisons.json``'s order."""
    header = ["#", "Table", "Metric", "Subset", "Compared (Δ = first − second)", "Δ [interval]", "p (Holm)", "n",
              "Verdict"]
    rows = []
    for t, family in _families(tables, verdicts):
        for i, v in family:
            system, first, second = _sides(v)
            what = v.metric_name + direction_note(v.higher_is_better)
            delta = ("n/a" if v.verdict == NOT_COMPUTED else
                     f"{v.num(v.delta, '+.2f')} [{v.num(v.ci_low)}, {v.num(v.ci_high)}]{'°' if v.ci_extended else ''}")
            rows.append([str(i), t.title, what, v.subset, f"{system + ': ' if system else ''}{first} − {second}",
                         delta, p_text(v.p_corrected), str(v.n), _outcome(v)])
    return header, rows


def questions(tables: Sequence[Table], verdicts: Numbered) -> list[tuple[Table, str]]:
    """``(table, rest)``: one sentence per question, a metric in a table (the family the Holm
    correction runs over), as the table's title then ``rest``: how many comparisons, which
    found a better side, how many found none and whether their documents were too few to find
    any, how many were not computed."""
    out = []
    for t, family in _families(tables, verdicts):
        group = [v for _, v in family]
        what = group[0].metric_name + direction_note(group[0].higher_is_better)
        said = [f"{system + ': ' if system else ''}{named} {v.verdict.split()[1]} than {other} on {v.subset}"
                for v in group if v.verdict in SIDED for system, named, other in [_ranked(v)]]
        none = [v for v in group if v.verdict == "no difference detected"]
        lost = len(group) - len(said) - len(none)
        def how_many(k: int) -> str:
            return {1: "it", 2: "both"}.get(k, f"all {k}") if k == len(group) else str(k)

        if none:
            few = sum(v.too_few() for v in none)
            said.append(f"no difference detected in {how_many(len(none))}"
                        + ("" if not few else " (too few documents to detect any difference)" if few == len(none)
                           else f" ({few} of them with too few documents to detect any difference)"))
        if lost:
            said.append(f"not computed in {how_many(lost)}")
        out.append((t, f", {what}, {counted(len(group), 'comparison')}: {'; '.join(said)}."))
    return out


def verdicts_html(tables: Sequence[Table], verdicts: Numbered) -> str:
    """The verdicts at the top of the page: one sentence per question (linked to its table),
    then the verdict table (``data-comparison``: the row's index in ``comparisons.json``);
    each table's and metric's cells span the rows of their question."""
    header, rows = verdict_table(tables, verdicts)
    said = "".join(f'<li><a href="#{html.escape(t.name)}">{html.escape(t.title)}</a>{html.escape(rest)}</li>'
                   for t, rest in questions(tables, verdicts))
    body = []
    for k, row in enumerate(rows):
        cells = [_td(row[0])]
        for col in (1, 2):  # the table and the metric: one cell over the rows they share
            if k and rows[k - 1][1:col + 1] == row[1:col + 1]:
                continue
            span = 1
            while k + span < len(rows) and rows[k + span][1:col + 1] == row[1:col + 1]:
                span += 1
            cells.append(f'<td class="t"{f" rowspan={span}" if span > 1 else ""}>{html.escape(row[col])}</td>')
        cells += [_td(c) for c in row[3:-1]] + [f'<td class="v">{html.escape(row[-1])}</td>']
        body.append(f'<tr data-comparison="{row[0]}">{"".join(cells)}</tr>')
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    return (f'<h3 id="verdicts">Verdicts</h3><p class="caption">{html.escape(VERDICTS_CAPTION)}</p>'
            f'<ul class="questions">{said}</ul>'
            f'<div class="scroll"><table class="verdicts"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _td(text: object) -> str:
    """One cell: long words (a system's name) may wrap anywhere, a cell of numbers only
    before its interval or parenthesis (a narrower column, never a split number)."""
    c = str(text)
    if len(c) > WRAP_CHARS and _WORDS.search(c):
        return f'<td class="t{" l" if len(c) > LONG_CHARS else ""}">{html.escape(c)}</td>'
    parts = _NUMBER_BREAK.split(c)
    if len(parts) == 1 or _WORDS.search(c):
        return f"<td>{html.escape(c)}</td>"
    return '<td class="w">' + " ".join(html.escape(p).replace(" ", "\u00a0") for p in parts) + "</td>"


def _grid(header: Sequence[str], rows: Sequence[Sequence[object]], name: str) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in rows)
    return (f'<div class="scroll"><table data-table="{html.escape(name)}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def table_html(t: Table, verdicts: Sequence[tuple[int, Verdict]] = ()) -> str:
    """One table as HTML: a titled, anchored heading, caption, the table in a horizontal
    scroller (a phone scrolls it; a laptop shows it whole), or, for a table with panels, one
    table per panel (:attr:`Table.panels`), its notes, and each comparison it shows in a
    sentence, folded (``data-comparison``: the comparison's index in ``comparisons.json``;
    the verdict table at the top says each in a row)."""
    if t.panels:
        grids = "".join(f'<p class="panel">{html.escape(title)}</p>'
                        + _grid([t.header[i] for i in cols], [[row[i] for i in cols] for row in t.rows], t.name)
                        for title, cols in t.panels)
    else:
        grids = _grid(t.header, t.rows, t.name)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in t.notes)
    said = "".join(f'<li data-comparison="{i}">{html.escape(v.sentence())}</li>' for i, v in verdicts)
    return (f'<h3 id="{html.escape(t.name)}">{html.escape(t.title)}</h3>'
            + (f'<p class="caption">{html.escape(t.caption)}</p>' if t.caption else "")
            + grids
            + (f'<ul class="notes">{notes}</ul>' if notes else "")
            + (f'<p class="caption cite">Citation: {html.escape(t.citation)}</p>' if t.citation else "")
            + (f'<details class="said"><summary>Verdicts: each of the {counted(len(verdicts), "comparison")} '
               f'in words</summary><ol class="verdicts">{said}</ol></details>' if said else ""))


def definitions(keys: Sequence[str], shown: bool) -> list[tuple[str, str]]:
    """(term, definition) of every column a table heads with a metric's name (from the metric
    records), and of Δ, p and the verdicts when the report compares anything."""
    from custom_metrics import registry

    out = []
    for key in dict.fromkeys(keys):
        record = registry.key(key)
        if record is not None:
            scaled = f"; shown x{record.scale:g}" if record.scale != 1 else ""
            direction = {True: "higher is better", False: "lower is better"}.get(
                record.higher_is_better, "no direction is better: comparisons name the higher side")
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
    shown = any((verdicts or {}).values())
    toc = toc_html([("results", "Results")] + ([("verdicts", "Verdicts")] if shown else [])
                   + [(t.name, t.title) for t in tables] + [("figures", "Figures"), ("runs", "Runs")]
                   + ([("definitions", "Definitions")] if terms else []))
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
<h2 id="results">Results</h2>
{verdicts_html(tables, verdicts or {}) if shown else ""}
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
 if all_notes else ""}
{f'<h2 id="definitions">Definitions</h2><dl class="defs">{defs}</dl>' if terms else ""}""")


__all__ = ["Numbered", "STYLE", "VERDICTS_CAPTION", "definitions", "document", "figure_html", "markdown", "page",
           "questions", "table_html", "toc_html", "verdict_table", "verdicts_html", "write_scores_csv", "write_tables",
           "written_at"]
