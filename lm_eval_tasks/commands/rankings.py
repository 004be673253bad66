"""``domsum rankings``: an expert ranking study (AdaptEval Section 3.3): per-system top-k
shares, Cohen's kappa on pairwise "ranked higher" labels and Kendall's W, the paper's beside.

Flags -> :func:`lm_eval_tasks.report.rankings.write_rankings`; prints its Markdown. A bad
line (missing or non-numeric field, a repeated (annotator, document, system), a partial
ranking) or an unusable ``--out``: one line each on stderr, exit 2.

    domsum rankings study.csv --out out/rankings --top-k 2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from custom_metrics.errors import SuiteError
from custom_metrics.outputs import output_folder


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="domsum rankings", description=__doc__.split("\n\n")[0])
    ap.add_argument("file", help="CSV (header line) or JSON lines: annotator, document, system, rank "
                                 "(1 = best; equal ranks are ties)")
    ap.add_argument("--top-k", type=int, default=2, help="a system counts when fewer than K systems rank "
                                                         "strictly better (default 2, the paper's top two)")
    ap.add_argument("--out", type=Path, default=Path("out/rankings"),
                    help="output folder: rankings.json, rankings.md, rankings.html, shares.csv (default out/rankings)")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace what an earlier run wrote into --out (default: stop and say so)")
    ap.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of documents (0 = no intervals)")
    ap.add_argument("--seed", type=int, default=1234, help="seed of the bootstrap")
    args = ap.parse_args(argv)
    if args.top_k < 1 or args.bootstrap < 0:
        ap.error("--top-k must be at least 1 and --bootstrap at least 0")
    if not Path(args.file).is_file():  # said before the output folder is looked at
        ap.exit(2, f"rankings: error: {args.file}: no such file\n")
    from lm_eval_tasks.report.rankings import write_rankings

    try:
        with output_folder(args.out, args.overwrite) as partial:  # refused before any work; put in place whole
            result = write_rankings(args.file, partial, args.top_k, args.bootstrap, args.seed)
    except SuiteError as exc:  # the library names the file, line and field; one line, no traceback
        print(f"rankings: error: {exc}", file=sys.stderr)
        return 2
    print(result["markdown"])
    print(f"\nHTML page: {args.out / 'rankings.html'}")
    return 0
