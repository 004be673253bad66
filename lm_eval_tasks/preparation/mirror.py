"""Building the local data mirror ``DIR/<benchmark>/<subset>/<split>.jsonl`` (``domsum prepare-data``).

Two sources:

* a benchmark's authors' release of their sampled splits (:func:`convert_release`), read by
  the benchmark's :attr:`~lm_eval_tasks.benchmarks.record.Benchmark.release` (DomainSum's:
  :mod:`lm_eval_tasks.benchmarks.domainsum.release`);
* the Hugging Face hub (:func:`from_hub`), with the paper's seeded sampling (DomainSum
  genre level: 500 test / 500 validation / 10,000 train per domain; AdaptEval: the full
  splits). DomainSum's style level (Newsroom publications) and topic level (CNN topic
  clusters) exist only in the authors' release or Newsroom's manual download, so the
  hub refuses them.

Why all-or-nothing: every split is converted and checked before any is written, and
each is written atomically, so a bad or partial input leaves an existing mirror as it
was. Domains, levels, hub sources and releases come from the benchmark's record, which the
task catalogue (:mod:`lm_eval_tasks.catalog`) holds.
Errors are :class:`lm_eval_tasks.data.loader.DataError` (or
:class:`lm_eval_tasks.catalog.UnknownTask` for a benchmark the suite lacks).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

from lm_eval_tasks import catalog
from lm_eval_tasks.benchmarks.record import Benchmark
from lm_eval_tasks.data.loader import DataError, load_split
from lm_eval_tasks.outputs import write_atomically


def jsonl_text(records: list[dict]) -> str:
    """One JSON object per line, UTF-8 text kept as it is."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def check_out(out: Path) -> None:
    """Refuse an ``out`` that is a file: the mirror is a folder."""
    if out.exists() and not out.is_dir():
        raise DataError(f"--out {out} is a file; give the folder the mirror goes in")


def write_splits(planned: dict[Path, list[dict]], overwrite: bool) -> list[str]:
    """Write every split, each whole or not at all (a temporary file, then a rename).

    Called only once every split is converted and checked, so a bad input file leaves
    the mirror as it was. A split that exists with other content is replaced only with
    ``--overwrite``; one with the same content is left alone.
    """
    texts = {dest: jsonl_text(recs) for dest, recs in planned.items()}
    changed = [d for d, t in texts.items() if d.is_file() and d.read_text(encoding="utf-8") != t]
    if changed and not overwrite:
        raise DataError(f"{len(changed)} split(s) of the mirror already exist with other content: "
                        + ", ".join(str(d) for d in changed[:5]) + ("..." if len(changed) > 5 else "")
                        + "; pass --overwrite to replace them, or --out another folder")
    written = []
    for dest, text in texts.items():
        n = len(planned[dest])
        if dest.is_file() and dest not in changed:
            written.append(f"{dest} ({n} records, unchanged)")
            continue
        write_atomically(dest, text)
        written.append(f"{dest} ({n} records)")
    return written


def convert_release(record: Benchmark, src: Path, out: Path, topic_order: tuple[str, ...],
                    overwrite: bool = False) -> list[str]:
    """Convert the authors' release of ``record`` under ``src`` (its :attr:`~Benchmark.release`
    reads and checks every file) into ``out/<benchmark>/``; return what was written."""
    if record.release is None:
        having = [r.name for r in catalog.RECORDS.values() if r.release is not None]
        raise DataError(f"{record.name} has no authors' release to convert (--release converts "
                        f"{', '.join(having)}'s); --hub downloads its hub sources")
    splits = record.release.read(src, topic_order)
    planned = {out / record.name / subset / f"{split}.jsonl": recs for (subset, split), recs in splits.items()}
    return write_splits(planned, overwrite)


def from_hub(record: Benchmark, subsets: list[str], out: Path, splits: list[str], overwrite: bool = False) -> list[str]:
    """Download ``splits`` of each subset of ``record`` from its hub sources with the paper's
    sampling; write them once all are downloaded; return what was written."""
    known = record.all_subsets()
    planned: dict[Path, list[dict]] = {}
    for subset in subsets:
        if subset not in known:
            raise DataError(f"{record.name} has no subset {subset!r}; the catalogue lists {', '.join(known)}")
        hub = record.hub_sources.get(subset)
        if hub is None:
            how = ("convert the authors' release (--release DIR)" if record.release is not None
                   else f"write its splits into the mirror as {out / record.name / subset}/<split>.jsonl")
            raise DataError(f"{record.name}/{subset} cannot be built from the hub (its record declares no "
                            f"hub source): {how}")
        for split in splits:
            planned[out / record.name / subset / f"{split}.jsonl"] = load_split(record.name, subset, split,
                                                                                 data_dir=None, hub=hub)
    return write_splits(planned, overwrite)


@contextlib.contextmanager
def hub_bars(on: bool) -> Iterator[None]:
    """The download bars of ``datasets`` and ``huggingface_hub``, off while ``on`` is False
    (``--no-progress`` or ``DOMSUM_PROGRESS=0``).

    Why restore afterwards: both switches are process-wide, and ``main`` also runs from
    Python (tests, notebooks), where later downloads should show their bars again.
    """
    if on:
        yield
        return
    import datasets
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    datasets_was_on, hub_was_on = datasets.is_progress_bar_enabled(), not are_progress_bars_disabled()
    datasets.disable_progress_bars()
    disable_progress_bars()
    try:
        yield
    finally:
        if datasets_was_on:
            datasets.enable_progress_bars()
        if hub_was_on:
            enable_progress_bars()


def hub_subsets(record: Benchmark, level: str | None = None, subsets: list[str] | None = None) -> list[str]:
    """The subsets a hub download builds: those given, else a level's of the benchmark with
    levels (``--level``), else every subset of ``record`` that the hub has."""
    if subsets:
        return subsets
    if level:
        if level not in record.levels:
            raise DataError(f"{record.name} has no level {level!r}"
                            + (f"; its levels: {', '.join(record.levels)}" if record.levels else ""))
        return list(record.levels[level])
    return list(record.hub_sources)


def prepare_mirror(out: Path, benchmark: str, *, release: Path | None = None, topic_order: tuple[str, ...] | None = None,
                   level: str | None = None, subsets: list[str] | None = None,
                   splits: tuple[str, ...] | list[str] = ("train", "validation", "test"),
                   overwrite: bool = False, progress: bool = True) -> list[str]:
    """Build ``benchmark``'s part of the mirror under ``out`` from ``release`` (a folder of its
    authors' release files; ``topic_order`` None: the release's own) or, without it, from the
    hub (download bars as ``progress`` says); return a line per split written."""
    check_out(out)
    record = catalog.record(benchmark)  # UnknownTask for a benchmark the suite lacks
    if release is not None:
        order = topic_order if topic_order is not None else record.release.topic_order if record.release else ()
        return convert_release(record, release, out, order, overwrite)
    with hub_bars(progress):
        return from_hub(record, hub_subsets(record, level, subsets), out, list(splits), overwrite)
