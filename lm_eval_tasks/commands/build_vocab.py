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
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from custom_metrics.dvo import DEFAULT_VOCAB_SIZE, VocabularyBuilder, vocabulary_path, write_vocabulary
from lm_eval_tasks import catalog
from lm_eval_tasks.catalog import task_target
from lm_eval_tasks.data.loader import DataError, iter_split, mirror_path, resolve_data_dir
from lm_eval_tasks.settings import resolve


def _texts(benchmark: str, subset: str, split: str, data_dir: str | None, field: str,
           limit: int | None) -> Iterator[str]:
    task = f"{benchmark}/{subset}"
    for i, rec in enumerate(iter_split(benchmark, subset, split, data_dir, task=task,
                                       required=(field,))):
        if limit is not None and i >= limit:
            return
        yield rec[field]


def build_one(benchmark: str, subset: str, *, data_dir: str | None = None, split: str = "train",
              field: str = "document", size: int = DEFAULT_VOCAB_SIZE,
              vocab_dir: str | None = None, out: str | os.PathLike | None = None,
              limit: int | None = None, progress: bool | None = None) -> dict:
    """Stream one split, write its vocabulary file; return a summary dict."""
    from custom_metrics.progress import track

    data_dir = resolve({"data_dir": data_dir}, "data_dir")
    vocab_dir = resolve({"vocab_dir": vocab_dir}, "vocab_dir")
    root = resolve_data_dir(data_dir)
    source = (str(mirror_path(root, benchmark, subset, split)) if root is not None
              else f"hub ({benchmark}/{subset} {split})")
    path = Path(out) if out else vocabulary_path(benchmark, subset, vocab_dir, must_exist=False)
    builder = VocabularyBuilder()
    t0 = time.perf_counter()
    texts = _texts(benchmark, subset, split, data_dir, field, limit)
    for text in track(texts, f"{benchmark}/{subset}", enabled=progress):
        builder.add(text)
    entries = builder.top(size)
    elapsed = time.perf_counter() - t0
    if builder.documents == 0:
        raise DataError(f"{source}: the {split} split has no documents")
    write_vocabulary(
        path, entries, benchmark=benchmark, subset=subset, split=split, field=field,
        source=source, size_requested=size, documents=builder.documents,
        words=builder.words, tokens=builder.tokens, limit=limit,
    )
    return {
        "benchmark": benchmark, "subset": subset, "path": str(path), "size": len(entries),
        "documents": builder.documents, "words": builder.words, "tokens": builder.tokens,
        "seconds": elapsed, "words_per_second": builder.words / elapsed if elapsed > 0 else None,
    }


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

