"""The papers' own table layouts, with the papers' published rows beside the user's systems.

* ``domainsum_table2_<level>``: DomainSum Table 2 (its record's ``report.shot_table``) —
  one table per level of domain shift the runs cover; rows the systems, columns each
  evaluated domain's ROUGE and BERTScore, a cell ``0-shot (2-shot − 0-shot; p)`` with the
  best zero-shot (†) and the best two-shot (‡) value marked. Below the user's systems, the
  paper's rows as published (:mod:`~lm_eval_tasks.published`), marked and cited as such
  and with their own best marks: a published number is never pooled with the user's (no
  best, mean or test spans both).
* the other papers' layouts (AdaptEval Table 3, CCSBench Tables 4 and 5): declared as
  data by their records (``report.layouts``) and built by
  :mod:`~lm_eval_tasks.report.paper_layouts`.
* ``<benchmark>_paper_vs_run``: every run whose model, shots and task are the paper's,
  beside the paper's value for that cell, and the difference (this run − paper).
* ``ccsbench_figure4``: CCSBench Figure 4 (change amplitude, its record's
  ``report.amplitude_figure``), one per ``change_amplitude.json`` that ``domsum
  change-amplitude`` wrote into a folder given to the report: a row per changed
  attribute, a column per affected controllability metric, ``null`` where the formula is
  undefined (counted in the caption, each reason in a note).

Each benchmark's citation (its record's) is set once, on the first of its tables
(:func:`cite`). Every piece is built from the facts of the records the report reads
(:data:`lm_eval_tasks.benchmarks.suite.ALL_RECORDS`): no benchmark is named here.

Why a second table beside the long ``<benchmark>_settings`` table: the paper's layout is
what a researcher holds their results against; the long table keeps the intervals and
the shared document counts. The Δ and p here are that table's comparisons (its verdicts
are listed there, once).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from custom_metrics.registry import display_name, display_scale as scale
from lm_eval_tasks.analysis.change_amplitude import STUDY_FILE
from lm_eval_tasks.benchmarks.layout import ShotTable, piece_name
from lm_eval_tasks.benchmarks.record import Benchmark
from lm_eval_tasks.benchmarks.suite import ALL_RECORDS
from lm_eval_tasks import published
from lm_eval_tasks.report.formats import counted
from lm_eval_tasks.report.paper_layouts import (LAYOUTS, paper_layouts, protocol_caption, published_caption,
                                                published_source)
from lm_eval_tasks.published.protocol import (COLUMN, PUBLISHED_CELL, check_runs, check_table, metrics_of, row_record,
                                           run_facts)
from lm_eval_tasks.report.runs import Run
from lm_eval_tasks.report.tables import Builder, Table, lookup_subset
from lm_eval_tasks.report.verdicts import p_text
from lm_eval_tasks.results import ResultsError, parse_folder_spec

BEST_ZERO, BEST_TWO = "†", "‡"


def _base_runs(builder: Builder, benchmark: str) -> list[Run]:
    return [r for r in builder.runs.of(benchmark) if not r.system.fine_tuned and not r.spec.variant]


def _cell(zero: float | None, delta: float | None, p: str | None, marks: tuple[bool, bool]) -> str:
    """``26.02† (+1.20‡; p 0.031)``: the zero-shot value, the two-shot difference and its p."""
    if zero is None and delta is None:
        return "n/a"
    text = "n/a" if zero is None or not math.isfinite(zero) else f"{zero:.2f}" + (BEST_ZERO if marks[0] else "")
    if delta is not None and math.isfinite(delta):
        text += f" ({delta:+.2f}" + (BEST_TWO if marks[1] else "") + (f"; p {p}" if p else "") + ")"
    return text


def _best(values: Sequence[float | None]) -> set[int]:
    finite = [(v, i) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    if not finite:
        return set()
    top = max(v for v, _ in finite)
    return {i for v, i in finite if round(v, 2) == round(top, 2)}


def _mark(cells: list[list[tuple[float | None, float | None, str | None]]]) -> list[list[str]]:
    """Cells of one group of rows (the user's, or the paper's) as text with best marks per column."""
    out = [[""] * len(row) for row in cells]
    for j in range(len(cells[0]) if cells else 0):
        zeros = [row[j][0] for row in cells]
        twos = [None if row[j][0] is None or row[j][1] is None else row[j][0] + row[j][1] for row in cells]
        best0, best2 = _best(zeros), _best(twos) if any(t is not None for t in twos) else set()
        for i, row in enumerate(cells):
            out[i][j] = _cell(*row[j], (i in best0 and len(cells) > 1, i in best2 and len(cells) > 1))
    return out


def shot_tables(builder: Builder, record: Benchmark) -> list[Table]:
    """The layout of ``record``'s :class:`~lm_eval_tasks.benchmarks.layout.ShotTable` (DomainSum
    Table 2) per level, with the paper's rows beside the user's; none when it declares none."""
    piece = record.report.shot_table
    if piece is None:
        return []
    runs = _base_runs(builder, record.name)
    paper = published.load(record.name)
    keys = [k for k in piece.keys if any(k in r.values for r in runs)]
    out = []
    for level, domains in record.levels.items():
        here = [d for d in domains if any(r.subset == d for r in runs)]
        if not here or not keys:
            continue
        systems = sorted({r.system.identity: r.system for r in runs if r.subset in here}.values(),
                         key=lambda s: s.label)
        header = ["System", "Source"] + [f"{piece.headings.get(d, d)} {display_name(k)}: 0-shot (2-shot − 0-shot; p)"
                                         for d in here for k in keys] + ([COLUMN] if paper else [])
        mine, checks, records = [], [], []
        name = f"{piece_name(record.name, piece.table)}_{level}"
        metrics = metrics_of(paper, keys, piece.table) if paper else []
        for system in systems:
            row, shown = [], []
            for d in here:
                zero, two = (builder.runs.find(system, record.name, d, s) for s in (0, 2))
                row += [_run_cell(builder, record, zero, two, k) for k in keys]
                shown += [r for r in (zero, two) if r is not None and any(k in r.values for k in keys)]
            mine.append(row)
            if paper:
                facts, check = check_runs(paper, piece.table, [(r, metrics) for r in shown])
                checks.append([check.cell()])
                records.append(row_record(name, paper, piece.table, system.label, facts, check))
            else:
                checks.append([])
        rows = [[s.label, "this run"] + cells + said for s, cells, said in zip(systems, _mark(mine), checks)]
        theirs, names = [], []
        for model in (paper.models if paper else {}):
            found = [_paper_cell(paper, piece, model, d, k) for d in here for k in keys]
            if any(c[0] is not None for c in found):
                theirs.append(found)
                names.append(model)
        rows += [[f"{m} (published)", published_source(paper, {"table": piece.table, "row": m})] + cells
                 + [PUBLISHED_CELL] for m, cells in zip(names, _mark(theirs))]
        out.append(Table(name, f"{record.title} {piece.table} layout, {level} shift: 0-shot and 2-shot per domain",
                         header, rows, caption=table2_caption(paper, piece), paper_rows=records))
    return out


def _run_cell(builder: Builder, record: Benchmark, zero: Run | None, two: Run | None, key: str) -> tuple:
    """(0-shot value, 2-shot − 0-shot, p) of a system in one domain, x100 where the key is."""
    if zero is not None and two is not None and key in zero.values and key in two.values:
        builder.section = f"{record.name}_settings"  # the settings table's comparison: its verdict is listed there
        c = builder.compare(two, zero, key)
        if c is not None and c.computed:
            docs = list(c.docs)
            return (builder.est(zero, key, docs).value * scale(key), c.result.delta * scale(key),
                    p_text(c.result.p_value))
    if zero is not None and key in zero.values:
        return builder.est(zero, key).value * scale(key), None, None
    return None, None, None


def _paper_cell(paper: published.Published, piece: ShotTable, model: str, subset: str, key: str) -> tuple:
    metric = next((m for m, spec in paper.metrics.items() if key in spec.get("keys", [])), None)
    zero = paper.one(table=piece.table, model=model, subset=subset, metric=metric, setting="0-shot")
    diff = paper.one(table=piece.table, model=model, subset=subset, metric=metric, setting="2-shot minus 0-shot")
    return (zero["value"] if zero else None, diff["value"] if diff else None, None)


def table2_caption(paper: published.Published | None, piece: ShotTable) -> str:
    where = (published_caption(paper, piece.table) + " † and ‡ mark the best within the published rows and "
             "within this run's rows separately." + protocol_caption(paper, piece.table) if paper else "")
    return ("Cell: the 0-shot score, in parentheses the 2-shot score minus the 0-shot score and, for this run's "
            "systems, its p (the paired test of the zero- vs few-shot table, where the interval, the shared "
            "document count and the verdict of each difference are); scores x100. † best 0-shot, ‡ best 2-shot "
            "(0-shot + difference) in the column. ROUGE: geometric mean of ROUGE-1/2/L (rouge_geo), as the "
            "paper's text defines its ROUGE; its release's arithmetic mean is in the zero- vs few-shot table "
            "and the paper-vs-this-run table." + where)


def paper_vs_run(builder: Builder, benchmark: str) -> Table | None:
    """Every run of a model the paper evaluated, in the paper's setting, beside the paper's value."""
    paper = published.load(benchmark)
    if paper is None:
        return None
    header = ["System", "Published row", "Subset", "Setting", "Metric (suite key)", "n", "This run", "Paper",
              "This run − paper", "Published at", COLUMN]
    rows, records = [], []
    name = f"{benchmark}_paper_vs_run"
    for r in sorted(builder.runs.of(benchmark), key=lambda r: (r.system.label, r.subset or "", r.shots)):
        model = paper.model_of(r.system.started_from or r.system.base)
        if model is None or r.spec.variant:
            continue
        if r.system.fine_tuned and lookup_subset(r.system.trained_on) != r.subset:
            continue  # the paper's fine-tuned numbers are in-domain
        setting = "fine-tuned" if r.system.fine_tuned else f"{r.shots}-shot"
        facts = run_facts(r)
        for metric in paper.metrics:
            for key in paper.keys(metric):
                if key not in r.values:
                    continue
                mine = builder.est(r, key).value * paper.scale(metric)
                for table, row_name, value, cited in _published(paper, model, r.subset, metric, setting):
                    digits = 3 if paper.scale(metric) == 1 and abs(value) < 1 else 2
                    check = check_table(paper, table, facts, [metric])
                    rows.append([r.system.label, row_name, r.subset, setting, f"{display_name(key)} ({key})",
                                 str(r.n), f"{mine:.{digits}f}", f"{value:.{digits}f}",
                                 f"{mine - value:+.{digits}f}", cited, check.cell()])
                    records.append(row_record(name, paper, table, r.system.label, [facts], check)
                                   | {"paper_row": row_name, "metric": metric, "key": key})
    if not rows:
        return None
    return Table(name, f"{paper.paper}: this run vs the paper's published numbers",
                 header, rows, paper_rows=records, caption=(
                     f"A row for every run of a model {paper.paper} evaluated ({', '.join(paper.models)}), on "
                     "the paper's task and setting; This run − paper in the paper's units. The paper's number "
                     "is on its own documents (the protocol column says how many); this run's on its own (n). "
                     "2-shot: the paper's 0-shot value plus its published difference. Data file: "
                     f"lm_eval_tasks/published/{paper.path.name}." + protocol_caption(paper)))


def _published(paper: published.Published, model: str, subset: str | None, metric: str,
               setting: str) -> list[tuple[str, str, float, str]]:
    """(the paper's table and row, its value of one cell, its citation) of every published value for the
    model, subset, metric and setting (a model fine-tuned on several training sizes has one
    row each); a 2-shot value is the printed 0-shot plus the printed difference where the
    paper prints those two (DomainSum Table 2)."""
    hits = paper.find(model=model, subset=subset, metric=metric, setting=setting)
    if hits:
        return [(h["table"], h["row"], h["value"], paper.cite(h)) for h in hits]
    if setting == "2-shot":
        zero = paper.one(model=model, subset=subset, metric=metric, setting="0-shot")
        diff = paper.one(model=model, subset=subset, metric=metric, setting="2-shot minus 0-shot")
        if zero and diff:
            return [(zero["table"], zero["row"], round(zero["value"] + diff["value"], 2),
                     paper.cite(zero) + " (0-shot + difference)")]
    return []


def _declaring_amplitude() -> Benchmark | None:
    """The record whose paper publishes the change-amplitude figure (CCSBench Figure 4)."""
    return next((r for r in ALL_RECORDS.values() if r.report.amplitude_figure), None)


def amplitude_tables(folders: Sequence[str]) -> list[Table]:
    """The layout of the change-amplitude figure a record declares (``report.amplitude_figure``:
    CCSBench Figure 4) of each ``change_amplitude.json`` directly in ``folders``."""
    record = _declaring_amplitude()
    if record is None:
        return []
    figure = record.report.amplitude_figure
    files = [f / STUDY_FILE for f in (parse_folder_spec(str(d))[0] for d in folders)]
    out = []
    for i, path in enumerate(f for f in files if f.is_file()):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            fig = data["figure4"]
            rows, columns, cells = fig["rows"], fig["columns"], fig["cells"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ResultsError(f"{path}: not a change-amplitude result ({exc})") from None
        header = ["Changed attribute"] + [f"{c['attribute']}: {display_name(c['key'])}" for c in columns]
        body = [[row] + ["null" if v is None else f"{v:.3f}" for v in line] for row, line in zip(rows, cells)]
        notes = [f"null: changed {u['changed']}, affected {u['key']}: {u['reason']}"
                 for u in data.get("undefined_cells", [])]
        out.append(Table(piece_name(record.name, figure) + (f"_{i + 1}" if i else ""),
                         f"{record.title} {figure} layout: change amplitude, {data.get('task', record.name)}",
                         header, body, notes=notes, caption=(
                             "CA = |m_new − m| / |m| (CCSBench Section 6): m is a controllability metric of the "
                             "original run, m_new of the run in which only the row's attribute was changed, each "
                             "refolded from the run's per-document scores; rows: the attribute changed, columns: "
                             f"the attribute affected. n = {data.get('n')} documents (seed {data.get('seed')}); "
                             f"{counted(int(data.get('undefined', 0)), 'undefined cell')} written null (m = 0 or "
                             f"m / m_new undefined), never 0. Source: {path}.")))
    return out


#: the page's definitions of the words these tables head columns with
TERMS = [("Source", "this run: the user's system scored from its logged samples; otherwise the paper, table and "
                    "row a published number is printed in (lm_eval_tasks/published/<benchmark>.json)"),
         ("(published)", "a row of numbers as the paper prints them, not recomputed; never part of this run's "
                         "statistics, bests or verdicts"),
         ("0-shot (2-shot − 0-shot; p)", "DomainSum Table 2's cell: the zero-shot score, then the two-shot score "
                                         "minus the zero-shot score on the documents both logged and its p"),
         ("† / ‡", "the best zero-shot / two-shot score of the column, within this run's rows and within the "
                   "published rows separately"),
         ("This run − paper", "the run's score minus the paper's published number for the same model, task and "
                              "setting, in the paper's units"),
         ("Changed attribute", "CCSBench Figure 4's row: the control flipped in every sampled document; each "
                               "column is |m_new − m| / |m| of an affected controllability metric, null where "
                               "m = 0 or a value is undefined"),
         (COLUMN, "beside each of this run's rows placed next to a paper's published rows: ✓ same protocol, or "
                  "✗ not comparable and, in words, every field that differs — run value (paper: value) — or that "
                  "the run does not record or the paper does not state: the setting, the number of test documents "
                  "the run scored against the paper's test set or sample, each shown metric's variant (ROUGE "
                  "stemming; BERTScore encoder, layer, idf, baseline rescaling; DVO vocabulary size; judge model) "
                  "and the generation budget and decoding, against the protocol in the paper's data file "
                  "(lm_eval_tasks/published/<benchmark>.json, \"protocols\"); the same checks are in "
                  "paper_rows.json")]
#: which terms each kind of table uses
_USES = {"table2": ("Source", "(published)", "0-shot (2-shot − 0-shot; p)", "† / ‡", COLUMN),
         "layout": ("Source", "(published)", COLUMN), "versus": ("Source", "This run − paper", COLUMN),
         "amplitude": ("Changed attribute",)}


def terms(tables: Sequence[Table]) -> list[tuple[str, str]]:
    """The :data:`TERMS` the report's tables use (for the page's definitions)."""
    names = [t.name for t in tables]
    records = ALL_RECORDS.values()
    shot = tuple(f"{piece_name(r.name, r.report.shot_table.table)}_" for r in records if r.report.shot_table)
    amplitude = tuple(piece_name(r.name, r.report.amplitude_figure) for r in records if r.report.amplitude_figure)
    kinds = {"table2": any(n.startswith(shot) for n in names),
             "layout": any(n == lay.name for lay in LAYOUTS for n in names),
             "versus": any(n.endswith("_paper_vs_run") for n in names),
             "amplitude": any(n.startswith(amplitude) for n in names)}
    used = {term for kind, found in kinds.items() if found for term in _USES[kind]}
    return [t for t in TERMS if t[0] in used]


def paper_tables(builder: Builder, tables: Sequence[Table], folders: Sequence[str] = ()) -> list[Table]:
    """``tables`` (:meth:`Builder.all`) with the papers' layouts first (each record's shot table,
    DomainSum Table 2, then each benchmark's declared layouts, :mod:`.paper_layouts`), each
    benchmark's paper-vs-run table after its zero- vs few-shot table (or at its benchmark's
    end), the change-amplitude tables of ``folders`` (CCSBench Figure 4) last, and each
    benchmark's citation under its first table."""
    benchmarks = builder.runs.benchmarks()
    records = [ALL_RECORDS[b] for b in benchmarks if b in ALL_RECORDS]
    out = ([t for r in records for t in shot_tables(builder, r)]
           + [t for r in records for t in paper_layouts(builder, r)] + list(tables))
    for benchmark in benchmarks:
        extra = paper_vs_run(builder, benchmark)
        if extra is None:
            continue
        names = [t.name for t in out]
        anchor = next((n for n in (f"{benchmark}_settings", f"{benchmark}_scores") if n in names), None)
        out.insert(names.index(anchor) + 1 if anchor else len(out), extra)
    return cite(out + amplitude_tables(folders), benchmarks)


def cite(tables: list[Table], benchmarks: Sequence[str]) -> list[Table]:
    """Each benchmark's citation (its record's ``citation``) once, under the first of its tables
    (named ``<benchmark>_...``): the page says whose benchmark each number comes from."""
    for benchmark in benchmarks:
        record = ALL_RECORDS.get(benchmark)
        mine = next((t for t in tables if t.name.startswith(f"{benchmark}_")), None)
        if record is not None and record.citation and mine is not None:
            mine.citation = record.citation
    return tables


__all__ = ["TERMS", "amplitude_tables", "cite", "paper_tables", "paper_vs_run", "shot_tables", "table2_caption",
           "terms"]
