"""The one data loader every benchmark of the suite uses.

Why one loader: every task, the fine-tuning module and the analysis scripts must see
exactly the same records (same filtering, same seeded sampling, same field names), or
training and evaluation silently drift apart.

Sources, in order:
1. a local mirror, when ``data_dir`` (task metadata, CLI ``--metadata
   '{"data_dir": "DIR"}'``) or the environment variable ``DOMSUM_DATA_DIR`` is set:
   ``DIR/<benchmark>/<subset>/<split>.jsonl``, one JSON object per line with at least
   ``document`` and ``summary``;
2. otherwise the Hugging Face hub: the :class:`~lm_eval_tasks.data.records.HubSource` the
   caller hands in (``hub``: the source each paper used, a fact of its benchmark's record),
   with the paper's seeded sampling.

Why handed in, not looked up: the loader serves the suite's benchmarks and the user's
domains alike and knows none of them by name; the caller holds the task's record.

Errors name the task, the file, the line and the field, and say how to prepare the
missing data.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lm_eval_tasks.data.records import DEFAULT_FIELDS, SPLITS, DataError, HubSource, assign_ids, json_lines, \
    validate_record, where_prefix
from lm_eval_tasks.data.user_files import checked_lines, iter_records, user_source
from lm_eval_tasks.settings import SETTINGS, resolve

log = logging.getLogger(__name__)

#: the environment variable of the ``data_dir`` setting (read by the settings resolver only)
ENV_DATA_DIR = SETTINGS["data_dir"].env
PREPARE_HINT = "domsum prepare-data --help"


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The mirror root: explicit ``data_dir`` first, then ``$DOMSUM_DATA_DIR`` (the settings
    resolver's order for setting ``data_dir``); None: no mirror, the hub."""
    value = resolve({"data_dir": os.fspath(data_dir) if data_dir is not None else None}, "data_dir")
    if value in (None, ""):
        return None
    return Path(os.path.expanduser(str(value))).resolve()


def mirror_path(data_dir: Path, benchmark: str, subset: str, split: str) -> Path:
    """``DIR/<benchmark>/<subset>/<split>.jsonl``."""
    return Path(data_dir) / benchmark / subset / f"{split}.jsonl"


def split_source(benchmark: str, subset: str, split: str, data_dir: str | os.PathLike | None = None,
                 hub_path: str | None = None, hub: HubSource | None = None) -> str:
    """Where :func:`load_split` reads ``split`` from, in words (the run records it as
    ``data_source``, and the report's provenance shows it): the user's file, the mirror's
    file, or the hub dataset; the same order :func:`load_split` follows."""
    source = user_source(benchmark, subset)
    if source is not None:
        return source.where(split)
    root = resolve_data_dir(data_dir)
    if root is not None:
        return str(mirror_path(root, benchmark, subset, split))
    if hub is None:
        return "no source"
    return f"hub {hub_path or hub.path}{f' ({hub.name})' if hub.name else ''}, split {hub.splits.get(split, split)}"


def iter_jsonl(
    path: Path, required: Sequence[str] = DEFAULT_FIELDS, task: str | None = None
) -> Iterator[dict]:
    """Stream validated records from a JSONL file (blank lines skipped)."""
    for where, rec in json_lines(path, where_prefix(task)):
        yield validate_record(rec, required, where)


def seeded_sample(records: Sequence[Any], n: int | None, seed: int) -> list[Any]:
    """``n`` records drawn without replacement with ``random.Random(seed)``.

    Reproducible across runs and machines (Python's Mersenne Twister is specified);
    the drawn records keep their original order so that a sample is readable.
    ``n`` of None or >= len(records) returns everything.
    """
    if n is None or n >= len(records):
        return list(records)
    idx = sorted(random.Random(seed).sample(range(len(records)), n))
    return [records[i] for i in idx]


def draw_demos(pool: list[dict], doc_id: str, seed: int, k: int = 2) -> list[dict]:
    """``k`` demonstrations for one test document, seeded by (seed, document id): every
    benchmark's few-shot draw.

    Seeding per document (not one stream for the whole split) keeps each
    document's demonstrations fixed under ``--limit`` and across shards.
    """
    if len(pool) < k:
        raise DataError(f"demonstration pool has {len(pool)} records; {k} are needed")
    rng = random.Random(f"{seed}:{doc_id}")
    return rng.sample(pool, k)


def sampled_test(records: Sequence[Any], metadata: Any) -> list[Any]:
    """The records a task evaluates: all, or the seeded sample that settings ``sample_test``
    (how many) and ``sample_seed`` ask for (:func:`seeded_sample`)."""
    n = resolve(metadata, "sample_test")
    return list(records) if n is None else seeded_sample(records, n, resolve(metadata, "sample_seed"))


# --------------------------------------------------------------------------- hub


def _load_hub_split(
    benchmark: str, subset: str, split: str, task: str | None, hub_path: str | None, src: HubSource | None
) -> list[dict]:
    if src is None:
        raise DataError(
            f"{where_prefix(task)}{benchmark}/{subset} has no hub source: set data_dir "
            f"(--metadata '{{\"data_dir\": \"DIR\"}}' or ${ENV_DATA_DIR}) to a mirror "
            f"holding {benchmark}/{subset}/{split}.jsonl; prepare it with "
            f"`{PREPARE_HINT}`"
        )
    if split not in src.splits:
        raise DataError(f"{where_prefix(task)}{benchmark}/{subset} has no {split!r} split")
    from lm_eval_tasks.data.hub import OFFLINE_HINT, one_line, unreachable

    hub_split = src.splits[split]
    what = f"{where_prefix(task)}{hub_path or src.path} ({src.name}) split {hub_split!r}"
    if (reason := unreachable(what)) is not None:
        raise DataError(reason)
    import datasets  # heavy: imported only when the hub is really used

    try:
        ds = datasets.load_dataset(hub_path or src.path, src.name, split=hub_split)
    except Exception as exc:  # network, auth, missing config ...
        raise DataError(f"could not load {what} from the hub ({one_line(exc)}); without internet, "
                        f"{OFFLINE_HINT}.") from exc
    for col in (src.document, src.summary):
        if col not in ds.column_names:
            raise DataError(
                f"{where_prefix(task)}{src.path} has no column {col!r}; columns: {ds.column_names}"
            )
    n_total = len(ds)
    shared = [s for s in SPLITS if src.splits.get(s) == hub_split]
    if len(shared) > 1:
        # Disjoint seeded partition of one hub split into several of ours.
        order = list(range(n_total))
        random.Random(src.seed).shuffle(order)
        start = 0
        for s in shared:
            size = src.sample.get(s) or 0
            if s == split:
                idx = sorted(order[start : start + size])
                break
            start += size
    else:
        n = src.sample.get(split)
        idx = seeded_sample(range(n_total), n, src.seed)
    sub = ds.select(idx)
    records = []
    for i, row in zip(idx, sub):
        records.append(
            {"document": row[src.document], "summary": row[src.summary], "source_id": i}
        )
    return records


# --------------------------------------------------------------------------- API


def load_split(
    benchmark: str,
    subset: str,
    split: str,
    data_dir: str | os.PathLike | None = None,
    task: str | None = None,
    required: Sequence[str] = DEFAULT_FIELDS,
    hub_path: str | None = None,
    hub: HubSource | None = None,
) -> list[dict]:
    """All records of one split, validated, from the mirror or the hub (``hub``: the
    subset's hub source, None where it has none; ``hub_path``: another copy of it).

    Every record gets ``id`` (``<benchmark>/<subset>/<split>/<index>``) when it has
    none, so logged samples can be traced back to their source line.
    """
    source = user_source(benchmark, subset)
    root = None if source is not None else resolve_data_dir(data_dir)
    editable = source is not None and source.format != "hub"  # the user's own file: they can fix it
    if source is not None:
        lines = checked_lines(source, split, task)
        if not lines:
            raise DataError(f"{where_prefix(task)}{source.where(split)} holds no records")
        records = [rec for _, rec in lines]
        places = [where for where, _ in lines]
    elif root is not None:
        editable = True
        path = mirror_path(root, benchmark, subset, split)
        if not path.is_file():
            have = sorted(p.name for p in path.parent.glob("*.jsonl")) if path.parent.is_dir() else []
            raise DataError(
                f"{where_prefix(task)}missing split {split!r}: expected {path}"
                + (f" (found {have})" if have else f" ({path.parent} does not exist)")
                + f". Prepare the mirror with `{PREPARE_HINT}`."
            )
        lines = [(where, validate_record(rec, required, where)) for where, rec in json_lines(path, where_prefix(task))]
        if not lines:
            raise DataError(f"{where_prefix(task)}{path} holds no records (empty or blank lines only); "
                            f"prepare the mirror with `{PREPARE_HINT}`")
        records = [rec for _, rec in lines]
        places = [where for where, _ in lines]
    else:
        records = _load_hub_split(benchmark, subset, split, task, hub_path, hub)
        places = [f"{where_prefix(task)}{benchmark}/{subset} {split} split, row {i}" for i in range(len(records))]
    id_field = (source.id_field if source is not None else None) or "id"
    renamed = assign_ids(records, places, f"{benchmark}/{subset}/{split}", editable=editable, field=id_field)
    if renamed:
        log.warning("%s%s/%s %s: %d record(s) repeat an earlier id; renamed <id>#<n>, the original kept in "
                    "their duplicate_id_of field", where_prefix(task), benchmark, subset, split, renamed)
    return records


def iter_split(
    benchmark: str,
    subset: str,
    split: str,
    data_dir: str | os.PathLike | None = None,
    task: str | None = None,
    required: Sequence[str] = DEFAULT_FIELDS,
    hub: HubSource | None = None,
) -> Iterator[dict]:
    """Stream a split (line by line from a mirror; the ``hub`` split otherwise)."""
    source = user_source(benchmark, subset)
    if source is not None:
        yield from (rec for _, rec in iter_records(source, split, task))
        return
    root = resolve_data_dir(data_dir)
    if root is not None:
        path = mirror_path(root, benchmark, subset, split)
        if path.is_file():
            yield from iter_jsonl(path, required, task)
            return
    yield from load_split(benchmark, subset, split, data_dir, task, required, hub=hub)


def split_exists(benchmark: str, subset: str, split: str, data_dir=None, hub: HubSource | None = None) -> bool:
    """Whether a mirror split file exists (a ``hub`` source's splits are assumed to exist)."""
    source = user_source(benchmark, subset)
    if source is not None:
        return split in source.splits and (source.format == "hub" or Path(source.splits[split]).is_file())
    root = resolve_data_dir(data_dir)
    if root is None:
        return hub is not None
    return mirror_path(root, benchmark, subset, split).is_file()
