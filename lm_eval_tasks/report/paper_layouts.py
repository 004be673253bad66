"""A paper's results table in the paper's own layout: its rows and columns, the user's
systems above, the paper's published rows below.

Why declared as data (:class:`~lm_eval_tasks.benchmarks.layout.Layout`, in each
benchmark's record: ``report.layouts``) and built by one function: AdaptEval Table 3,
CCSBench Tables 4, 5 and 7 are the same kind of table — rows are systems in a setting,
columns are (paper column, suite key, subset) — and differ only in which columns, which
settings and which subsets a row reads. A layout names its columns by the paper's own
column names, so each published cell is found in the paper's data file
(:mod:`~lm_eval_tasks.published`) by (table, row, column) and each of the user's
cells by (system, subset, shots, variant) and the column's suite key; no number is typed
here, and no benchmark is named: the report builds the layouts of the records it reads.
A table that sets two inputs side by side (CCSBench Table 7: introduction and
conclusion vs the full text) names each variant's row by the paper's row and says, beside
each row, whether the system's two runs logged the same documents: two inputs are only
compared on one document set.

Numbers are in the paper's units (the data file's ``scale`` per metric: AdaptEval prints
BERTScore as a fraction, CCSBench ROUGE-L x100), with the paper's decimals, so a row of
this run reads like the paper's rows beneath it. The user's cells are the run's reported
values (intervals and tests are in the long tables); a published row is never pooled
with the user's. DomainSum Table 2, whose cell holds a zero-shot score, a two-shot
difference and its p, keeps its own builder (:mod:`.paper_tables`, from the record's
``report.shot_table``) and shares this module's citation of published rows
(:func:`published_source`, :func:`published_caption`).
"""

from __future__ import annotations

import math

from lm_eval_tasks import published
from lm_eval_tasks.benchmarks.layout import PROMPT_TOKENS, Column, Layout
from lm_eval_tasks.benchmarks.record import Benchmark
from lm_eval_tasks.benchmarks.suite import ALL_RECORDS
from lm_eval_tasks.published.protocol import COLUMN, PUBLISHED_CELL, check_runs, row_record, setting_of
from lm_eval_tasks.report.runs import Run
from lm_eval_tasks.report.tables import Builder, Table


#: every benchmark's declared layouts, in the order the records list them
LAYOUTS: tuple[Layout, ...] = tuple(lay for record in ALL_RECORDS.values() for lay in record.report.layouts)


def published_source(paper: published.Published, value: dict) -> str:
    """Where a published row is printed: ``AdaptEval Table 3, Two-shot Setting, row Llama2 7b``."""
    block = f", {value['block']}" if value.get("block") else ""
    return f"{paper.paper} {value['table']}{block}, row {value['row']}"


def published_caption(paper: published.Published, table: str) -> str:
    """The caption sentence that says the (published) rows are the paper's, as printed."""
    return (f" Rows marked (published): {paper.paper}'s {table} as printed ({paper.citation}; data file "
            f"lm_eval_tasks/published/{paper.path.name}), not recomputed and never pooled with this "
            "run's systems.")


def protocol_caption(paper: published.Published, table: str | None = None) -> str:
    """The caption sentence that says what the protocol column compares, and where from
    (``table``: the one table of the layout; else each row's cited table)."""
    which = f"{paper.paper} {table}'s protocol" if table else "the protocol of the paper's table the row cites"
    return (f" {COLUMN}: each of this run's rows checked against {which} (the "
            "setting, the number of test documents, the shown metrics' variants, the generation budget and "
            f"decoding, as the data file's \"protocols\" state them): ✓ same protocol, or ✗ and every field "
            "that differs or that one side does not state (also in paper_rows.json).")


def _number(value: float | None, digits: int) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _published_rows(paper: published.Published, layout: Layout) -> list[list[str]]:
    """The paper's rows of the table, in the paper's order, each cell read by its column."""
    rows, seen = [], set()
    for v in paper.find(table=layout.table):
        where = (v.get("block"), v["row"])
        if where in seen:
            continue
        seen.add(where)
        cells = [paper.one(table=layout.table, block=v.get("block"), row=v["row"], column=c.header)
                 for c in layout.columns]
        if not any(cells):
            continue
        rows.append([f"{v['row']} (published)", published_source(paper, v), v["setting"]]
                    + [_number(c["value"] if c else None, col.digits) for c, col in zip(cells, layout.columns)]
                    + [PUBLISHED_CELL])
    return rows


def _metric(paper: published.Published, layout: Layout, column: Column) -> str | None:
    """The paper's metric name of a column (its values' ``metric`` in the data file)."""
    found = paper.find(table=layout.table, column=column.header)
    return found[0]["metric"] if found else None


def _own_rows(builder: Builder, paper: published.Published, layout: Layout) -> tuple[list[list[str]], list[dict]]:
    """One row per system, setting and kind of row that has at least one cell, each ending
    in its check against the paper's protocol; and the rows' ``paper_rows.json`` objects."""
    runs = [r for r in builder.runs.of(layout.benchmark) if r.spec.variant in layout.variants]
    if layout.variant_rows and not any(r.spec.variant for r in runs):
        return [], []  # a table of two inputs needs a run of the second (Table 7: a Full run)
    settings = sorted({(r.system.label, r.shots, r.spec.variant): r for r in runs}.items())
    metrics = [_metric(paper, layout, c) for c in layout.columns]
    scales = [paper.scale(m) if m else 1.0 for m in metrics]
    rows, records = [], []
    for (label, shots, variant), first in settings:
        for kind, subset in layout.kinds:
            cells, shown = [], {}
            for column, unit, metric in zip(layout.columns, scales, metrics):
                run = builder.runs.find(first.system, layout.benchmark, subset or column.subset, shots, variant)
                cells.append(_cell(builder, run, column, unit))
                if run and column.key in run.values:  # the run and the paper's metrics of the cells it fills
                    found = shown.setdefault(id(run), (run, []))[1]
                    found += [metric] if metric and metric not in found else []
            if any(c != "n/a" for c in cells):
                row = dict(layout.variant_rows).get(variant, "")
                name = label + (f" ({kind})" if kind else "") + (f" ({row})" if row else "")
                facts, check = check_runs(paper, layout.table, list(shown.values()))
                pair = [documents_beside(builder, layout, r) for r, _ in shown.values()] if layout.variant_rows else []
                beside = "; ".join(dict.fromkeys(pair))
                rows.append([name, _source(facts, metrics, paper) + (f"; {beside}" if beside else ""),
                             setting_of(first)] + cells + [check.cell()])
                records.append(row_record(layout.name, paper, layout.table, name, facts, check)
                               | ({"documents_beside": beside} if beside else {}))
    return rows, records


def _cell(builder: Builder, run: Run | None, column: Column, unit: float) -> str:
    """A cell of this run: the run's reported value of the column's key in the paper's unit, or
    (:data:`PROMPT_TOKENS`) the mean prompt tokens its prompt fitting recorded, ``~`` before a
    count bounded by characters per token."""
    if run is None:
        return "n/a"
    if column.key == PROMPT_TOKENS:
        budget = run.record.get("prompt_budget")
        value = budget.get(PROMPT_TOKENS) if isinstance(budget, dict) else None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return "n/a"
        return ("~" if budget.get("chars_per_token") is not None else "") + _number(float(value), column.digits)
    return _number(builder.est(run, column.key).value * unit if column.key in run.values else None, column.digits)


def documents_beside(builder: Builder, layout: Layout, run: Run) -> str:
    """Whether ``run`` logged the same documents as the same system's run of each other variant
    of ``layout`` (same subset and shots): a table comparing two inputs compares them on one
    document set, so the row says when they differ and by how many."""
    out = []
    for variant, row in layout.variant_rows:
        if variant == run.spec.variant:
            continue
        other = builder.runs.find(run.system, layout.benchmark, run.subset, run.shots, variant)
        if other is None:
            out.append(f"no {row} run of this system to compare documents with")
        elif not run.samples or not other.samples:
            out.append(f"documents not compared with the {row} row's (no samples file)")
        elif set(run.doc_keys()) == set(other.doc_keys()):
            out.append(f"the same {len(set(run.doc_keys())):,} documents as the {row} row")
        else:
            mine, theirs = set(run.doc_keys()), set(other.doc_keys())
            out.append(f"documents differ from the {row} row's: {len(mine & theirs):,} shared, "
                       f"{len(mine - theirs):,} only here, {len(theirs - mine):,} only there")
    return "; ".join(out)


def _source(facts: list, metrics: list[str | None], paper: published.Published) -> str:
    """``this run``, and, in a layout of judged metrics only (AdaptEval Table 5: "25 random
    samples"), the documents the judge scored, beside the paper's rows."""
    kinds = {published.metric_kind(paper.keys(m)) for m in metrics if m}
    judged = list(dict.fromkeys(f.judged["words"] for f in facts if f.judged.get("words")))
    return "this run" + (f"; judged: {'; '.join(judged)}" if kinds == {"judge"} and judged else "")


def paper_layout(builder: Builder, layout: Layout) -> Table | None:
    """The layout's table for the runs of its benchmark, or None when no run fills a cell."""
    paper = published.load(layout.benchmark)
    if paper is None:
        return None
    mine, records = _own_rows(builder, paper, layout)
    if not mine:
        return None
    keys = ", ".join(f"{c.header} = {c.key}" + (f" ({c.subset})" if layout.kinds == (("", None),) else "")
                     for c in layout.columns)
    kinds = (" Rows per system: " + "; ".join(f"{k or 'the row'} reads "
                                               + (s if s else "each column's own task") for k, s in layout.kinds)
             + "." if len(layout.kinds) > 1 else "")
    return Table(layout.name, layout.title,
                 ["System", "Source", "Setting", *(c.header for c in layout.columns), COLUMN],
                 mine + _published_rows(paper, layout),
                 caption=(f"{paper.paper} {layout.table}: {paper.tables[layout.table]} In the paper's units and "
                          f"decimals; this run's cells are its reported values (intervals and tests in the "
                          f"long tables). Columns (suite key, task): {keys}.{kinds}"
                          + layout.note + _beside_caption(layout)
                          + published_caption(paper, layout.table) + protocol_caption(paper, layout.table)),
                 paper_rows=records)


def _beside_caption(layout: Layout) -> str:
    """The caption sentence on the document sets of a layout's paired rows (:func:`documents_beside`)."""
    if not layout.variant_rows:
        return ""
    rows = " and ".join(row for _, row in layout.variant_rows)
    return (f" A system's {rows} rows compare inputs only on one document set: each row's Source says whether "
            "the two runs logged the same documents (by record id), or how many each has that the other lacks.")


def paper_layouts(builder: Builder, record: Benchmark) -> list[Table]:
    """Every layout ``record`` declares that its runs fill."""
    return [t for t in (paper_layout(builder, lay) for lay in record.report.layouts) if t]


__all__ = ["LAYOUTS", "documents_beside", "paper_layout", "paper_layouts", "protocol_caption", "published_caption",
           "published_source"]
