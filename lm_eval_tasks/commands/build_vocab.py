"""``domsum build-vocab``: the domain vocabulary (for DVO) of a task's training documents.

Flags -> :func:`lm_eval_tasks.preparation.vocab.targets` (which domains) ->
:func:`lm_eval_tasks.preparation.vocab.build_all`, which writes ``VOCAB_DIR/<benchmark>/<subset>.tsv``
(a user domain's ``VOCAB_DIR/own/<subset>-<digest>.tsv``, keyed by its train file) where the
tasks look for it; see ``docs/benchmarks/adapteval.md`` and ``docs/settings.md``.
"""

from __future__ import annotations

import argparse
import sys

from custom_metrics.families.dvo import DEFAULT_VOCAB_SIZE
from lm_eval_tasks import catalog
from lm_eval_tasks.benchmarks.record import task_name
from lm_eval_tasks.benchmarks.suite import ADAPTATION_STUDY
from lm_eval_tasks.data.loader import DataError
from lm_eval_tasks.preparation.vocab import TargetError, build_all, targets


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="domsum build-vocab",
        description="Build domain vocabularies (DVO) from a task's train split.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    which = p.add_argument_group("which domain(s)")
    study = ADAPTATION_STUDY
    example = study.subsets[1]  # the domain every example of the help names
    which.add_argument("--task", action="append", default=[],
                       help=f"suite task, e.g. {task_name(study.name, example, 0, '')} (its benchmark and subset; "
                            f"{task_name(study.name, example, 2, '')} means the same domain); repeatable")
    which.add_argument("--benchmark", choices=catalog.BENCHMARKS,
                       help=f"benchmark, e.g. {study.name} (with --subsets, or --all)")
    which.add_argument("--subsets", "--subset", dest="subsets", action="append", default=[],
                       help="domain(s), e.g. pubmed or arxiv,pubmed; repeatable")
    which.add_argument("--all", action="store_true",
                       help=f"every subset of --benchmark (default: {study.name}'s {', '.join(study.subsets)})")
    p.add_argument("--data-dir", "--data_dir", dest="data_dir",
                   help="local mirror root (default: $DOMSUM_DATA_DIR, else the hub)")
    p.add_argument("--vocab-dir", help="output root (default: $DOMSUM_VOCAB_DIR, else ~/.cache/domsum/vocab)")
    p.add_argument("--out", help="explicit output file (one domain only)")
    p.add_argument("--split", default="train", help="split to count (default: train)")
    p.add_argument("--field", default="document",
                   help="record field to count (default: document, as the paper: training articles)")
    p.add_argument("--size", type=int, default=DEFAULT_VOCAB_SIZE, help="vocabulary size (default: 10000)")
    p.add_argument("--limit", type=int, help="only the first N documents (quick tries)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (stderr)")
    return p


def main(argv: list[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    try:
        pairs = targets(args.task, args.benchmark, args.subsets, args.all, one_file=bool(args.out), size=args.size)
    except TargetError as exc:
        p.error(str(exc))
    try:
        for line in build_all(pairs, data_dir=args.data_dir, split=args.split, field=args.field, size=args.size,
                              vocab_dir=args.vocab_dir, out=args.out, limit=args.limit,
                              progress=False if args.no_progress else None):
            print(line)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
