"""Correlation of domain measures with model performance (DomainSum Table 4).

``domsum correlate``: flags -> :func:`lm_eval_tasks.report.domain_correlation.write_correlations`;
prints its Markdown (problems as warnings on stderr; an unusable statistics file: one line, exit 1).

    domsum correlate out/zero out/two=2shot --stats out/stats/domain_stats.json --out out/correlate
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from custom_metrics.errors import SuiteError
from custom_metrics.outputs import claimed_folder
from lm_eval_tasks.report.domain_correlation import write_correlations


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="domsum correlate", description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+", help="harness output folders (DIR or DIR=fine-tuned)")
    ap.add_argument("--stats", required=True, help="domain_stats.json or .csv")
    ap.add_argument("--metric", default="rouge_geo")
    ap.add_argument("--fine-tuned", nargs="*", default=[], help="folders of fine-tuned runs")
    ap.add_argument("--out", type=Path, default=Path("out/correlate"))
    ap.add_argument("--overwrite", action="store_true",
                    help="replace what an earlier run wrote into --out (default: stop and say so)")
    args = ap.parse_args(argv)
    try:
        with claimed_folder(args.out, args.overwrite):
            report = write_correlations(args.folders, args.stats, args.out, args.metric, args.fine_tuned)
    except SuiteError as exc:  # a stats file or result folder that cannot be read
        print(exc, file=sys.stderr)
        return 1
    print(report.markdown)
    for p in report.problems:
        print(f"warning: {p}", file=sys.stderr)
    return 0
