"""``domsum domain-stats``: corpus statistics per domain (DomainSum Table 5, Figures 3 and 4).

Flags -> :func:`lm_eval_tasks.analysis.domain_stats.run_domain_stats`, which describes
the outputs, the groups and the data sources; see ``docs/benchmarks/domainsum.md``.

    domsum domain-stats --level genre --data-dir lm_eval_tasks/sample_data --out out/stats
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from custom_metrics.outputs import claimed_folder
from custom_metrics.analysis.measures import PROFILE_TOKENIZERS, PROFILES
from custom_metrics.tokenize import TOKENIZERS
from lm_eval_tasks import catalog
from lm_eval_tasks.commands import add_include_path
from lm_eval_tasks.analysis.domain_stats import (
    DEFAULT_PROFILE,
    GROUP_BY,
    LEVELS,
    PAPER,
    SelectionError,
    print_account,
    run_domain_stats,
    select,
)
from lm_eval_tasks.data.loader import DataError
from lm_eval_tasks.settings import resolve


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="domsum domain-stats",
        description="Per-domain corpus statistics (DomainSum Table 5, Figures 3 and 4).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--benchmark", choices=catalog.ALL_BENCHMARKS,
                    help="suite benchmark, or own: the domains of your task folders (--include_path)")
    add_include_path(ap)
    sel = ap.add_mutually_exclusive_group()
    sel.add_argument("--subsets", "--subset", dest="subsets", help="comma-separated subsets (domains)")
    sel.add_argument("--level", choices=[*LEVELS, "all"],
                     help="a DomainSum level (or all three)")
    ap.add_argument("--group-by", "--group_by", dest="group_by", choices=GROUP_BY,
                    help="level: a radar and an overlap map per DomainSum level; none: the "
                         "selected domains together (default: none with --subsets, else level)")
    ap.add_argument("--splits", default="test", help="comma-separated splits, pooled")
    ap.add_argument("--data-dir", "--data_dir", dest="data_dir", help="local mirror (default: $DOMSUM_DATA_DIR, else hub)")
    ap.add_argument("--out", type=Path,
                    help="output folder (unset: out/domain_stats, with --synthetic out/domain_stats_synthetic)")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace what an earlier run wrote into --out (default: stop and say so)")
    ap.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE)
    ap.add_argument("--tokenizer", choices=sorted(TOKENIZERS),
                    help="word tokenizer (default: the profile's: "
                         + ", ".join(f"{p} -> {t}" for p, t in PROFILE_TOKENIZERS.items())
                         + "; spacy = SummEval data_stats / HELM)")
    ap.add_argument("--max-docs", "--max_docs", dest="max_docs", type=int,
                    help="at most this many pairs per domain")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                    help="processes (1 = in this process)")
    ap.add_argument("--chunk-size", "--chunk_size", dest="chunk_size", type=int,
                    help="pairs per task (default: adaptive)")
    ap.add_argument("--vocab-size", "--vocab_size", dest="vocab_size", type=int, default=10_000)
    ap.add_argument("--drop-duplicates", "--drop_duplicates", dest="drop_duplicates",
                    action="store_true",
                    help="leave repeated (document, summary) pairs out (always counted)")
    ap.add_argument("--keep-empty", "--keep_empty", dest="keep_empty", action="store_true",
                    help="keep pairs with an empty document or summary (the release's "
                         "zero conventions) instead of skipping them")
    ap.add_argument("--no-plots", "--no_plots", dest="no_plots", action="store_true",
                    help="tables only, no radar charts or heat maps")
    ap.add_argument("--no-progress", "--no_progress", dest="no_progress", action="store_true",
                    help="no progress bars (default: as $DOMSUM_PROGRESS says, on)")
    ap.add_argument("--quiet", action="store_true",
                    help="no progress bars and no per-domain timing lines")
    ap.add_argument("--synthetic", type=int, metavar="N",
                    help="time the pipeline on N synthetic pairs instead of data "
                         "(287113 = CNN/DailyMail train)")
    ap.add_argument("--synthetic-length", "--synthetic_length", dest="synthetic_length",
                    choices=("news", "long"), default="news")
    ap.add_argument("--synthetic-pool", "--synthetic_pool", dest="synthetic_pool", type=int,
                    default=10_000, help="distinct synthetic pairs, cycled up to N")
    args = ap.parse_args(argv)
    if args.benchmark is None:
        args.benchmark = catalog.USER_BENCHMARK if args.include_path else PAPER.name
    args.data_dir = resolve({"data_dir": args.data_dir}, "data_dir")
    for name in ("max_docs", "workers", "chunk_size", "vocab_size", "synthetic"):
        v = getattr(args, name)
        if v is not None and v < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.out is None:  # a timing run must not replace the statistics `domsum correlate` reads
        args.out = Path("out/domain_stats_synthetic" if args.synthetic else "out/domain_stats")
    if args.group_by is None:
        args.group_by = "none" if args.subsets else "level"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    try:
        targets = [] if args.synthetic else select(args.benchmark, args.level, args.subsets, args.group_by)
    except SelectionError as exc:
        raise SystemExit(str(exc)) from None
    try:
        with claimed_folder(args.out, args.overwrite):
            done = run_domain_stats(
                targets, args.out, benchmark=args.benchmark, splits=splits, data_dir=args.data_dir,
                profile=args.profile, tokenizer=args.tokenizer, max_docs=args.max_docs, workers=args.workers,
                chunk_size=args.chunk_size, vocab_size=args.vocab_size, drop_duplicates=args.drop_duplicates,
                keep_empty=args.keep_empty, plots=not args.no_plots,
                progress=False if (args.no_progress or args.quiet) else None, quiet=args.quiet,
                group_by=args.group_by, synthetic=args.synthetic, synthetic_length=args.synthetic_length,
                synthetic_pool=args.synthetic_pool)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_account(done, args.synthetic_length)
    return 0
