"""``domsum fm-weights``: fit FM's four facet weights to your overall human scores.

Least squares of the overall human score on the facet scores (rating / scale maximum),
by default in the paper's form: no intercept, weights summing to 1 (FM divides by their
sum). Writes fm_weights.json (give its path as the setting fm_weights and FM uses the
fitted weights), .md and .html, with the paper's weights and MSE (Section 4.2) beside.

    domsum fm-weights scores.csv --out fit
    domsum fm-weights fm_details.jsonl --human-file human.csv --nonneg --out fit

Flags -> :func:`lm_eval_tasks.report.fm_weights.write_fit`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from custom_metrics.errors import SuiteError
from custom_metrics.judge.fm import FACETS
from custom_metrics.outputs import output_folder
from lm_eval_tasks.report.fm_weights import write_fit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="domsum fm-weights", description=__doc__.split("\n\n    ")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="CSV or JSON lines: facet columns and a human column, FM's "
                                             "fm_details rows, or the ScholarSum/FD release")
    ap.add_argument("--facets", default=",".join(FACETS),
                    help="the four facet columns, in FM's order (default: %(default)s)")
    ap.add_argument("--human", default="human", help="the human-score column (default: %(default)s)")
    ap.add_argument("--human-file", help="human scores joined to fm_details rows on --id")
    ap.add_argument("--id", dest="id_column", default="id", help="document id column of the join (default: id)")
    ap.add_argument("--ratings", action="store_true",
                    help="facet columns hold ratings on the paper's scales (1-3, 1-4, 1-4, 1-3), not fractions")
    ap.add_argument("--human-max", type=float, default=1.0,
                    help="divide the human scores by this (5 for 1-5 scores; default 1: already 0-1)")
    ap.add_argument("--intercept", action="store_true", help="fit a constant term (FM cannot use it)")
    ap.add_argument("--free-sum", action="store_true", help="do not constrain the weights to sum to 1")
    ap.add_argument("--nonneg", action="store_true", help="every weight >= 0")
    ap.add_argument("--out", "--out-dir", "--output", dest="out", type=Path, default=Path("out/fm_weights"),
                    help="output folder (default: %(default)s)")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace what an earlier run wrote into --out (default: stop and say so)")
    args = ap.parse_args(argv)
    facets = [f.strip() for f in args.facets.split(",")]
    if len(facets) != len(FACETS) or not all(facets):
        ap.error(f"--facets takes four column names ({','.join(FACETS)}), got {args.facets!r}")
    try:
        with output_folder(args.out, args.overwrite) as partial:
            written = write_fit(args.files, partial, facets=facets, human=args.human, human_file=args.human_file,
                                id_column=args.id_column, scale="rating" if args.ratings else "fraction",
                                human_max=args.human_max, intercept=args.intercept, sum_to_one=not args.free_sum,
                                nonneg=args.nonneg)
    except SuiteError as exc:  # the library names the file, line and field: one line, no traceback
        print(f"fm-weights: error: {exc}", file=sys.stderr)
        return 2
    print(written.markdown)
    print(f"wrote {', '.join(str(args.out / p.name) for p in written.files)}")
    return 0
