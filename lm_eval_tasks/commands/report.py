"""``domsum report``: the papers' tables, paired significance tests and figures from harness output folders.

Reads ``lm_eval --output_path DIR --log_samples`` folders (results and samples files
only) and writes into ``--out``:

* ``report.html``: one self-contained page (tables, embedded figures, notes);
* ``report.md``: the same tables in Markdown;
* ``tables/<name>.md|.csv|.tex``: each table for a paper;
* ``scores.csv``: every run and key in long form (value, interval, stderr, documents);
* ``figures/*.png``.

Tables (see :mod:`lm_eval_tasks.report.tables`): DomainSum Tables 2, 3 and 6 layouts
(zero- vs few-shot with differences, fine-tuned vs base model, cross-domain matrices),
AdaptEval Table 3, per-benchmark score tables (CCSBench, medqsum), and paired tests
between every two systems evaluated on the same documents. Intervals are percentile
bootstraps over documents of the logged per-document scores; p-values come from a
paired permutation test (or ``--test bootstrap``). A system is a model (an API run's
served ``model=``; else ``pretrained``, ``gguf_file`` and adapter ``peft``) plus every
setting that changes its outputs: chat template, system instruction,
``fewshot_as_multiturn``, ``max_length``, generation settings, prompt budgets and
variant, judge model. Runs that differ in any of them are separate systems, labelled
by what differs (``M (chat)``, ``M [max_doc_words=200]``); shots are the tables'
settings axis. Comparisons use only the documents both runs logged, and every table
with a difference shows those n. A LoRA adapter trained with ``domsum finetune`` is
paired with its base model (same settings) through the adapter's ``run_card.json``. A
folder given as ``DIR=fine-tuned`` marks models without a run card as fine-tuned.

    domsum report out/runs --out out/report
    domsum report out/base out/lora --out out/report --test bootstrap --resamples 10000
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from lm_eval_tasks.report.figures import Figures, draw_all
from lm_eval_tasks.report.page import markdown, page, write_scores_csv, write_tables
from lm_eval_tasks.report.runs import load_runs
from lm_eval_tasks.report.tables import Builder, Options
from lm_eval_tasks.results import ResultsError


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="domsum report", description=__doc__.split("\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+", help="harness output folders (DIR, or DIR=fine-tuned)")
    ap.add_argument("--fine-tuned", nargs="*", default=[], metavar="DIR",
                    help="more folders whose models are fine-tuned (same as DIR=fine-tuned)")
    ap.add_argument("--out", "--output-path", "--output_path", dest="out", type=Path,
                    default=Path("out/report"), help="output folder (default: out/report)")
    ap.add_argument("--bootstrap", type=int, default=1000,
                    help="bootstrap resamples for the intervals (0: no intervals; default 1000)")
    ap.add_argument("--test", choices=("permutation", "bootstrap"), default="permutation",
                    help="paired test between systems (default: permutation)")
    ap.add_argument("--resamples", type=int, default=1000,
                    help="resamples of the paired test (exact when 2^documents is fewer; default 1000)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--no-plots", action="store_true", help="tables only")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace the report an earlier run wrote into --out (default: stop and say so)")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    final: Path = args.out
    if final.exists() and not final.is_dir():
        print(f"report: error: --out {final} is a file; give a folder", file=sys.stderr)
        return 2
    if final.is_dir() and any(final.iterdir()) and not args.overwrite:
        print(f"report: error: {final} is not empty (an earlier report?); pass --overwrite to replace it, "
              f"or choose another --out", file=sys.stderr)
        return 2
    folders = [*args.folders, *(f"{d}=fine-tuned" for d in args.fine_tuned)]
    try:
        runs = load_runs(folders)
    except ResultsError as exc:
        print(f"report: error: {exc}", file=sys.stderr)
        return 2
    builder = Builder(runs, Options(n_boot=args.bootstrap, resamples=args.resamples, test=args.test,
                                    seed=args.seed))
    # written beside --out, then put in its place: a report that fails midway leaves nothing half-written
    final.parent.mkdir(parents=True, exist_ok=True)
    out = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
    try:
        code = _write(args, runs, builder, out, final)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    if final.exists():
        shutil.rmtree(final)
    out.rename(final)
    return code


def _write(args: argparse.Namespace, runs: Any, builder: Builder, out: Path, final: Path) -> int:
    """Every report file into ``out`` (a temporary folder that becomes ``final``)."""
    steps = ["tables", "figures", "files"]
    bar = _progress(len(steps), not args.no_progress)
    tables = builder.all()
    bar.update(1)
    figs = Figures(out / "figures") if args.no_plots else draw_all(builder, out / "figures")
    bar.update(1)
    notes = list(dict.fromkeys([*runs.problems, *builder.notes]))  # each once, in order
    if not runs.runs:
        notes.append("no suite task with results in " + ", ".join(map(str, args.folders)))
    written = write_tables(out, tables)
    written.append(write_scores_csv(out / "scores.csv", builder))
    text = markdown(tables, figs, notes)
    (out / "report.md").write_text(text, encoding="utf-8")
    (out / "report.html").write_text(page(runs, tables, figs, notes, [str(f) for f in args.folders]),
                                     encoding="utf-8")
    bar.update(1)
    bar.close()
    print(text)
    print(f"report: {final / 'report.html'} ({len(tables)} tables, {len(figs.drawn)} figures; "
          f"{len(written)} more files under {final})", file=sys.stderr)
    return 0


def _progress(total: int, enabled: bool):
    from custom_metrics.progress import bar

    return bar(total, "report", unit="step", enabled=None if enabled else False, leave=False)


if __name__ == "__main__":
    raise SystemExit(main())
