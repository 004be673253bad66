"""``domsum build-vocab``: the domain vocabulary (for DVO) of a task's training documents.

AdaptEval's Domain Vocabulary Overlap compares a generated summary with the 10,000 most
frequent words of the domain's training documents (see :mod:`custom_metrics.dvo` for
the exact definition). This command streams the train split once -- from the local
mirror (``--data-dir`` or ``$DOMSUM_DATA_DIR``) or else from the hub -- with a progress
bar on stderr (``--no-progress`` or ``DOMSUM_PROGRESS=0``: none), and writes
``VOCAB_DIR/<benchmark>/<subset>.tsv``, where the tasks look for it.

    domsum build-vocab --task adapteval_pubmed --data-dir ~/domsum_data
    domsum build-vocab --benchmark adapteval --subsets arxiv
    domsum build-vocab --all --data-dir ~/domsum_data --vocab-dir ~/vocab

``VOCAB_DIR``: ``--vocab-dir``, else ``$DOMSUM_VOCAB_DIR``, else ``~/.cache/domsum/vocab``
(give tasks the same directory with ``--metadata '{"vocab_dir": "DIR"}'`` or the
environment variable). Counting runs at several million words per second on one core
(``scripts/bench_vocab.py``). A task name means what the catalogue says
(:func:`lm_eval_tasks.catalog.lookup`): ``adapteval_pubmed_2shot`` and
``adapteval_pubmed_judged`` share ``adapteval_pubmed``'s vocabulary.
"""

from __future__ import annotations

import argparse
import sys

from custom_metrics.dvo import DEFAULT_VOCAB_SIZE
from lm_eval_tasks import catalog
from lm_eval_tasks.catalog import task_target
from lm_eval_tasks.data.loader import DataError
from lm_eval_tasks.data.vocab import build_one


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="domsum build-vocab",
        description="Build domain vocabularies (DVO) from a task's train split.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    which = p.add_argument_group("which domain(s)")
    which.add_argument("--task", action="append", default=[],
                       help="suite task, e.g. adapteval_pubmed (its benchmark and subset; "
                            "adapteval_pubmed_2shot means the same domain); repeatable")
    which.add_argument("--benchmark", choices=catalog.BENCHMARKS,
                       help="benchmark, e.g. adapteval (with --subsets, or --all)")
    which.add_argument("--subsets", "--subset", dest="subsets", action="append", default=[],
                       help="domain(s), e.g. pubmed or arxiv,pubmed; repeatable")
    which.add_argument("--all", action="store_true",
                       help="every subset of --benchmark (default: adapteval's arxiv, pubmed, govreport)")
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


def _targets(args: argparse.Namespace, p: argparse.ArgumentParser) -> list[tuple[str, str]]:
    targets: list[tuple[str, str]] = []
    for task in args.task:
        try:
            targets.append(task_target(task))
        except catalog.UnknownTask as exc:
            p.error(str(exc))
    if args.all:
        bench = args.benchmark or "adapteval"
        targets += [(bench, d) for d in catalog.subsets(bench)]
    subsets = [s.strip() for item in args.subsets for s in item.split(",") if s.strip()]
    if subsets:
        if not args.benchmark:
            p.error("--subsets needs --benchmark")
        known = catalog.subsets(args.benchmark)
        bad = [s for s in subsets if s not in known]
        if bad:
            p.error(f"{args.benchmark} has no subset {', '.join(bad)}; the catalogue lists {', '.join(known)}")
        targets += [(args.benchmark, s) for s in subsets]
    elif args.benchmark and not args.all:
        p.error("--benchmark needs --subsets (or --all)")
    if not targets:
        p.error("say which domain: --task NAME, --benchmark B --subsets S, or --all")
    if args.out and len(targets) != 1:
        p.error("--out works with exactly one domain")
    if args.size <= 0:
        p.error("--size must be positive")
    return list(dict.fromkeys(targets))


def main(argv: list[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    targets = _targets(args, p)
    for benchmark, subset in targets:
        try:
            info = build_one(benchmark, subset, data_dir=args.data_dir, split=args.split,
                             field=args.field, size=args.size, vocab_dir=args.vocab_dir,
                             out=args.out, limit=args.limit, progress=False if args.no_progress else None)
        except DataError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        rate = info["words_per_second"]
        print(f"{benchmark}/{subset}: {info['size']} words from {info['documents']} documents "
              f"({info['words']:,} words, {info['seconds']:.1f} s"
              + (f", {rate / 1e6:.2f} M words/s" if rate else "") + f") -> {info['path']}")
    return 0

