"""``domsum report``: the papers' tables, paired significance tests and figures from harness output folders.

Flags -> :func:`lm_eval_tasks.report.write.write_report`, whose module docstring (this
command's ``--help`` epilog, see ``docs/cli.md`` and ``docs/reports.md``) says what is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from custom_metrics.outputs import OutputError
from lm_eval_tasks.report import write
from lm_eval_tasks.report.tables import Options
from lm_eval_tasks.results import ResultsError


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="domsum report", description=__doc__.split("\n")[0],
                                 epilog=write.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+", help="harness output folders (DIR, or DIR=fine-tuned)")
    ap.add_argument("--fine-tuned", nargs="*", default=[], metavar="DIR",
                    help="more folders whose models are fine-tuned (same as DIR=fine-tuned)")
    ap.add_argument("--label", action="append", default=[], metavar="RUN_FOLDER=NAME", help="name the system "
                    "of the runs under RUN_FOLDER, as --metadata run_label would at run time (repeatable)")
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
    options = Options(n_boot=args.bootstrap, resamples=args.resamples, test=args.test, seed=args.seed)
    try:
        written = write.write_report(args.folders, args.out, options, fine_tuned=args.fine_tuned, labels=args.label,
                                     plots=not args.no_plots, progress=not args.no_progress, overwrite=args.overwrite)
    except (write.NothingToReport, OutputError, ResultsError) as exc:
        print(f"report: error: {exc}", file=sys.stderr)
        return 2
    print(written.markdown)
    print(written.account, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
