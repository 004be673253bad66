"""Building a domain vocabulary (what AdaptEval's DVO reads) from a split of the mirror or the hub.

Why here and not in :mod:`custom_metrics.dvo`: the metric library counts words and
reads and writes vocabulary files (:class:`custom_metrics.dvo.VocabularyBuilder`,
:func:`custom_metrics.dvo.write_vocabulary`) without knowing where the suite's data
lives; streaming a benchmark's split (mirror or hub, through the one loader) is the
suite's side. ``domsum build-vocab`` calls :func:`build_one` per domain.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

from custom_metrics.dvo import DEFAULT_VOCAB_SIZE, VocabularyBuilder, vocabulary_path, write_vocabulary
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
