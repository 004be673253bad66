"""``domsum cross-domain``: cross-domain evaluation matrices (DomainSum Figure 5, Table 6).

Flags -> :func:`lm_eval_tasks.report.cross_domain.write_cross_domain` (the one
implementation, which the report uses too); it says what is read and written.

    domsum cross-domain out/xdomain-genre --out out/cross_report
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from custom_metrics.outputs import claimed_folder
from lm_eval_tasks import catalog
from lm_eval_tasks.report.cross_domain import GROUP_BY, write_cross_domain


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="domsum cross-domain",
        description="Cross-domain evaluation matrices and heat maps (DomainSum Figure 5, Table 6).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("root", type=Path, help="ROOT/<source>/<model>/results_*.json")
    ap.add_argument("--out", type=Path, default=Path("out/cross_domain"), help="output folder")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace what an earlier run wrote into --out (default: stop and say so)")
    ap.add_argument("--metrics", default="rouge_geo,bertscore_f1", help="comma-separated metric keys")
    ap.add_argument("--group-by", "--group_by", dest="group_by", choices=GROUP_BY, default="level",
                    help="level: order, separate and label rows and columns by DomainSum "
                         "level; none: one flat list (catalogue order either way)")
    ap.add_argument("--subsets", "--subset", dest="subsets",
                    help="comma-separated domains to keep (rows and columns; base rows stay)")
    ap.add_argument("--mask-diagonal", "--mask_diagonal", dest="mask_diagonal", action="store_true",
                    help="leave in-domain cells out of the score heat map's colour scale "
                         "(hatched) instead of outlining them")
    ap.add_argument("--no-plots", "--no_plots", dest="no_plots", action="store_true",
                    help="tables only, no heat maps")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.root.is_dir():  # a typo must not pass for an empty matrix
        print(f"error: {args.root}: no such folder (expected ROOT/<source>/<model>/results_*.json)",
              file=sys.stderr)
        return 2
    subsets = ([s.strip() for s in args.subsets.split(",") if s.strip()]
               if args.subsets else None)
    if subsets is not None:
        known = {d for b in catalog.BENCHMARKS for d in catalog.subsets(b)}
        if unknown := [s for s in subsets if s not in known]:
            raise SystemExit(f"unknown domain(s) {', '.join(unknown)} in --subsets; known: "
                             + ", ".join(sorted(known)))
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    with claimed_folder(args.out, args.overwrite):
        text, written = write_cross_domain(args.root, args.out, metrics, args.group_by, subsets,
                                           mask_diagonal=args.mask_diagonal, plots=not args.no_plots)
    print(text)
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0
