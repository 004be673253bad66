"""Reads ``lm_eval --output_path DIR --log_samples`` folders (results and samples files
only) and writes into ``--out``:

* ``report.html``: one self-contained page (tables, embedded figures, notes);
* ``report.md``: the same tables in Markdown;
* ``tables/<name>.md|.csv|.tex``: each table for a paper;
* ``scores.csv``: every run and key in long form (value, interval, stderr, documents);
* ``tables/runs_left_out.csv`` (with a table on the page): each results file's task the
  report does not use, and why;
* ``comparisons.json``: every comparison the tables show, with its verdict (``a better``,
  ``b better``, ``no difference detected`` or ``not computed`` with the reason), Δ and its
  interval at the family's simultaneous level, p and the Holm-corrected p, the n of
  documents both sides have a value for and the minimum detectable difference; its
  header and the page state the rule once, and the page says each comparison in one
  sentence under its table;
* ``paper_rows.json``: every row of this run placed beside a paper's published rows (the
  papers' layouts and ``<benchmark>_paper_vs_run``), checked field by field against the
  paper's protocol (:mod:`lm_eval_tasks.published.protocol`): ``comparable`` and the
  ``differences``; the page shows the same beside each row;
* ``figures/*.png``.

Tables (see :mod:`lm_eval_tasks.report.tables`): DomainSum Tables 2, 3 and 6 layouts
(zero- vs few-shot with differences, fine-tuned vs base model, cross-domain matrices),
AdaptEval Table 3, per-benchmark score tables (CCSBench, medqsum), and paired tests
between every two systems evaluated on the same documents. Intervals are percentile
bootstraps over documents of the logged per-document scores; p-values come from a
paired permutation test (or ``--test bootstrap``). A system is a model (an API run's
served ``model=``; else ``pretrained``, ``gguf_file`` and adapter ``peft``) plus every
setting that changes its outputs: chat template, system instruction, ``max_length``,
generation settings, prompt budgets and variant, judge model, and the name it was
given (``--label DIR=NAME``, or ``run_label`` in the run's ``--metadata``). Runs that
differ in any of them are separate systems, wherever their files lie, labelled by
their name or by what differs (``M (chat)``, ``M [max_doc_words=200]``); shots are the
tables' settings axis. A change-amplitude run (a control flipped on every document) is
left out, and of several results files of one system and task the one that evaluated
the most documents is used (the later of repeats); each run left out is named with the
reason. Comparisons use only the documents both runs logged and have a value for, the
two scores beside a difference are over the same documents, and every table with a
difference shows those n. A LoRA adapter trained with ``domsum finetune`` is
paired with its base model (same settings) through the adapter's ``run_card.json``. A
folder given as ``DIR=fine-tuned`` marks models without a run card as fine-tuned.

    domsum report out/runs --out out/report
    domsum report out/runs --label out/runs/chat="SmolLM2 chat" --out out/report
    domsum report out/base out/lora --out out/report --test bootstrap --resamples 10000
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from custom_metrics.errors import SuiteError
from custom_metrics.outputs import OutputExistsError, check_folder, output_folder, write_atomically
from lm_eval_tasks.report.figures import Figures, draw_all
from lm_eval_tasks.report.formats import counted
from lm_eval_tasks.report.paper_tables import paper_tables, terms as paper_terms
from lm_eval_tasks.report.page import Numbered, definitions, empty_notes, markdown, page, write_scores_csv, write_tables
from lm_eval_tasks.report.runs import load_runs, parse_labels
from lm_eval_tasks.report.tables import Builder, Options, Table, left_out_table
from lm_eval_tasks.results import parse_folder_spec
from lm_eval_tasks.report.verdicts import in_order, verdicts, write_comparisons


#: the file of every row placed beside a paper's published rows, with its protocol check
PAPER_ROWS = "paper_rows.json"

#: ``--out`` holds a file, or an earlier report that was not to be replaced, or another
#: process is writing it (the name the report's callers know)
ReportOutputError = OutputExistsError


class NothingToReport(SuiteError, FileNotFoundError):
    """No folder given holds a suite task's results: an empty report would look like a finished one."""


@dataclass
class Written:
    """What :func:`write_report` wrote: ``report.md``'s text and the one-line account of the files."""

    markdown: str
    account: str


def write_report(folders: Sequence[str], out: Path, options: Options, *, fine_tuned: Sequence[str] = (),
                 plots: bool = True, progress: bool = True, overwrite: bool = False,
                 labels: Sequence[str] = ()) -> Written:
    """The whole report of ``folders`` (``DIR`` or ``DIR=fine-tuned``; the ``fine_tuned``
    folders as ``DIR=fine-tuned``) into the folder ``out``; ``labels``: ``RUN_FOLDER=NAME``,
    the name of the system the runs under that folder evaluated
    (:func:`~lm_eval_tasks.report.runs.parse_labels`).

    Written into a temporary folder beside ``out`` and then put in its place
    (:func:`custom_metrics.outputs.output_folder`: permissions from the umask, one writer
    at a time), so a report that fails midway leaves nothing half-written. Raises
    :class:`ReportOutputError` (``out`` is a file, holds files and ``overwrite`` is
    false, or another process is writing it), :class:`~custom_metrics.outputs.OutputError`
    (disk full, permission denied), :class:`NothingToReport` (no suite task's results in
    ``folders``) and :class:`lm_eval_tasks.results.ResultsError`.
    """
    check_folder(out, overwrite)  # before the runs are read: a refusal costs nothing
    runs = load_runs([*folders, *(f"{d}=fine-tuned" for d in fine_tuned)], labels=parse_labels(labels))
    if not runs.runs:
        missing = [str(f) for f in [*folders, *fine_tuned] if not parse_folder_spec(str(f))[0].exists()]
        raise NothingToReport(f"no such folder: {', '.join(missing)}" if missing else
                              "no suite task with results in " + ", ".join(map(str, [*folders, *fine_tuned]))
                              + " (give the folders lm_eval --output_path wrote)"
                              + "".join(f"; {p}" for p in runs.problems))  # what was found instead
    builder = Builder(runs, options)
    with output_folder(out, overwrite) as partial:
        return _write(folders, runs, builder, partial, out, plots, progress)


def write_paper_rows(path: Path, tables: Sequence[Table]) -> Path:
    """``paper_rows.json``: a list, one object per row of this run in a paper's layout, in
    the page's order (:attr:`Table.paper_rows`; an empty list when no run is placed there)."""
    rows = [record for t in tables for record in t.paper_rows]
    write_atomically(path, json.dumps(rows, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    return path


def _write(folders: Sequence[str], runs: Any, builder: Builder, out: Path, final: Path, plots: bool,
           progress: bool) -> Written:
    """Every report file into ``out`` (a temporary folder that becomes ``final``)."""
    from custom_metrics.progress import bar

    steps = bar(3, "report", unit="step", enabled=None if progress else False, leave=False)
    tables = [*paper_tables(builder, builder.all(), folders), *left_out_table(runs)]
    steps.update(1)
    figs = draw_all(builder, out / "figures") if plots else Figures(out / "figures")
    steps.update(1)
    notes = list(dict.fromkeys([*runs.problems, *empty_notes(runs), *builder.notes]))  # each once, in order
    files = write_tables(out, tables)
    files.append(write_scores_csv(out / "scores.csv", builder))
    ordered = in_order(verdicts(builder.shown), [t.name for t in tables])
    files.append(write_comparisons(out / "comparisons.json", ordered))
    files.append(write_paper_rows(out / PAPER_ROWS, tables))
    numbered: Numbered = {}
    for i, v in enumerate(ordered):
        numbered.setdefault(v.table, []).append((i, v))
    terms = definitions([k for b in runs.benchmarks() for k, _ in builder.headline(b)], bool(ordered))
    terms += paper_terms(tables)
    text = markdown(tables, figs, notes, numbered, terms)
    write_atomically(out / "report.md", text)
    write_atomically(out / "report.html", page(runs, tables, figs, notes, [str(f) for f in folders], numbered, terms))
    steps.update(1)
    steps.close()
    return Written(text, f"report: {final / 'report.html'} ({counted(len(tables), 'table')}, "
                         f"{counted(len(figs.drawn), 'figure')}; {counted(len(files), 'more file')} under {final})")
