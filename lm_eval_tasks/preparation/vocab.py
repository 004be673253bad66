"""Building a domain vocabulary (what AdaptEval's DVO reads) from a split of the mirror or the hub.

Why here and not in :mod:`custom_metrics.families.dvo`: the metric library counts words and
reads and writes vocabulary files (:class:`custom_metrics.families.dvo.VocabularyBuilder`,
:func:`custom_metrics.families.dvo.write_vocabulary`) without knowing where the suite's data
lives; streaming a benchmark's split (mirror or hub, through the one loader) is the
suite's side. ``domsum build-vocab`` names the domains with :func:`targets` and builds them
with :func:`build_all`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from custom_metrics.errors import SuiteError
from custom_metrics.families.dvo import DEFAULT_VOCAB_SIZE, VocabularyBuilder, write_vocabulary
from lm_eval_tasks import catalog
from lm_eval_tasks.benchmarks.sources import hub_source
from lm_eval_tasks.benchmarks.suite import ADAPTATION_STUDY
from lm_eval_tasks.data.loader import DataError, iter_split, mirror_path, resolve_data_dir, user_source
from lm_eval_tasks.data.user_files import data_fingerprint, domain_vocabulary_path
from lm_eval_tasks.settings import resolve


class TargetError(SuiteError, ValueError):
    """Flags that name no domain, an unknown one, or more than one for one output file."""


def targets(tasks: Sequence[str], benchmark: str | None, subsets: Sequence[str], every: bool, *,
            one_file: bool = False, size: int = DEFAULT_VOCAB_SIZE) -> list[tuple[str, str]]:
    """The (benchmark, subset) pairs that ``--task``, ``--benchmark``/``--subsets`` (items
    may be comma lists) and ``--all`` name, each once, in order; :class:`TargetError` says
    what is missing or wrong (``one_file``: an explicit output file, for one domain only)."""
    found: list[tuple[str, str]] = []
    for task in tasks:
        try:
            found.append(catalog.task_target(task))
        except catalog.UnknownTask as exc:
            raise TargetError(str(exc)) from None
    if every:
        bench = benchmark or ADAPTATION_STUDY.name
        found += [(bench, d) for d in catalog.subsets(bench)]
    names = [s.strip() for item in subsets for s in item.split(",") if s.strip()]
    if names:
        if not benchmark:
            raise TargetError("--subsets needs --benchmark")
        known = catalog.subsets(benchmark)
        bad = [s for s in names if s not in known]
        if bad:
            raise TargetError(f"{benchmark} has no subset {', '.join(bad)}; the catalogue lists {', '.join(known)}")
        found += [(benchmark, s) for s in names]
    elif benchmark and not every:
        raise TargetError("--benchmark needs --subsets (or --all)")
    if not found:
        raise TargetError("say which domain: --task NAME, --benchmark B --subsets S, or --all")
    if one_file and len(found) != 1:
        raise TargetError("--out works with exactly one domain")
    if size <= 0:
        raise TargetError("--size must be positive")
    return list(dict.fromkeys(found))


def build_all(pairs: Sequence[tuple[str, str]], **options) -> Iterator[str]:
    """:func:`build_one` (with ``options``) for each pair, yielding its line for the console
    as it is written."""
    for benchmark, subset in pairs:
        info = build_one(benchmark, subset, **options)
        rate = info["words_per_second"]
        yield (f"{benchmark}/{subset}: {info['size']} words from {info['documents']} documents "
               f"({info['words']:,} words, {info['seconds']:.1f} s"
               + (f", {rate / 1e6:.2f} M words/s" if rate else "") + f") -> {info['path']}")


def _texts(benchmark: str, subset: str, split: str, data_dir: str | None, field: str,
           limit: int | None) -> Iterator[str]:
    task = f"{benchmark}/{subset}"
    for i, rec in enumerate(iter_split(benchmark, subset, split, data_dir, task=task,
                                       required=(field,), hub=hub_source(benchmark, subset))):
        if limit is not None and i >= limit:
            return
        yield rec[field]


def build_one(benchmark: str, subset: str, *, data_dir: str | None = None, split: str = "train",
              field: str = "document", size: int = DEFAULT_VOCAB_SIZE,
              vocab_dir: str | None = None, out: str | os.PathLike | None = None,
              limit: int | None = None, progress: bool | None = None,
              extra_header: dict | None = None) -> dict:
    """Stream one split, write its vocabulary file; return a summary dict."""
    from custom_metrics.progress import track

    data_dir = resolve({"data_dir": data_dir}, "data_dir")
    vocab_dir = resolve({"vocab_dir": vocab_dir}, "vocab_dir")
    root = resolve_data_dir(data_dir)
    declared = user_source(benchmark, subset)
    if declared is not None:
        if split not in declared.splits:
            raise DataError(f"{benchmark}/{subset}: a domain vocabulary is built from the {split!r} split, "
                            f"which its task YAML does not name (dataset_kwargs.data_files); add it, or drop "
                            f"dvo from metadata.domain.families")
        source = declared.where(split)
    else:
        source = (str(mirror_path(root, benchmark, subset, split)) if root is not None
                  else f"hub ({benchmark}/{subset} {split})")
    path = Path(out) if out else domain_vocabulary_path(benchmark, subset, vocab_dir)
    if declared is not None and split == "train" and "data_fingerprint" not in (extra_header or {}):
        extra_header = {**(extra_header or {}), "data_fingerprint": data_fingerprint(declared)}
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
        words=builder.words, tokens=builder.tokens, limit=limit, **(extra_header or {}),
    )
    return {
        "benchmark": benchmark, "subset": subset, "path": str(path), "size": len(entries),
        "documents": builder.documents, "words": builder.words, "tokens": builder.tokens,
        "seconds": elapsed, "words_per_second": builder.words / elapsed if elapsed > 0 else None,
    }


def ensure_vocabulary(spec: "catalog.TaskSpec", metadata: dict, progress: bool | None = None) -> dict:
    """A user domain's DVO vocabulary: the cached file under ``vocab_dir``
    (:func:`domain_vocabulary_path`) when it was built from the same train data, else built
    now from the domain's train split.

    Why built on demand: the user's domain has no released vocabulary, and asking for a
    separate ``build-vocab`` step before the first run is one more thing to get wrong;
    the fingerprint in the file's header keeps a changed train file from being scored
    against a stale vocabulary. Returns what the results record.
    """
    from custom_metrics.families.dvo import VocabularyError, read_vocabulary

    vocab_dir = resolve(metadata, "vocab_dir")
    path = domain_vocabulary_path(spec.benchmark, spec.subset, vocab_dir)
    if spec.source is None or "train" not in spec.source.splits:
        return {"path": str(path), "built": False}
    stamp = data_fingerprint(spec.source)
    if path.is_file():
        try:
            if read_vocabulary(path).header.get("data_fingerprint") == stamp:
                return {"path": str(path), "built": False, "data_fingerprint": stamp}
        except VocabularyError:
            pass  # unreadable: built again below
    info = build_one(spec.benchmark, spec.subset, vocab_dir=vocab_dir, progress=progress)
    return {"path": info["path"], "built": True, "data_fingerprint": stamp, "documents": info["documents"]}
