"""The suite's data by benchmark and subset name: the loader with each record's hub source handed in.

Why here: the loader (:mod:`lm_eval_tasks.data.loader`) knows no benchmark; a caller that
holds a task's record hands the loader its hub source (``spec.hub_source``). A caller that
starts from names (a command's ``--benchmark``/``--subsets``, an analysis over a
benchmark's subsets, the mirror's download) finds the source here, among the facts the
records declare.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from lm_eval_tasks.benchmarks.suite import RECORDS
from lm_eval_tasks.data import loader
from lm_eval_tasks.data.records import DEFAULT_FIELDS, DataError, HubSource

#: every hub source of the suite's benchmarks, by ``(benchmark, subset)``: each declared in its record
HUB_SOURCES: dict[tuple[str, str], HubSource] = {
    (rec.name, subset): src for rec in RECORDS.values() for subset, src in rec.hub_sources.items()}


def hub_source(benchmark: str, subset: str) -> HubSource | None:
    """The hub dataset ``benchmark``'s ``subset`` comes from, or None (mirror only)."""
    return HUB_SOURCES.get((benchmark, subset))


def load_split(benchmark: str, subset: str, split: str, data_dir: str | os.PathLike | None = None,
               task: str | None = None, required: Sequence[str] = DEFAULT_FIELDS,
               hub_path: str | None = None) -> list[dict]:
    """:func:`lm_eval_tasks.data.loader.load_split` with the subset's hub source."""
    return loader.load_split(benchmark, subset, split, data_dir, task, required, hub_path,
                             hub=hub_source(benchmark, subset))


def iter_split(benchmark: str, subset: str, split: str, data_dir: str | os.PathLike | None = None,
               task: str | None = None, required: Sequence[str] = DEFAULT_FIELDS) -> Iterator[dict]:
    """:func:`lm_eval_tasks.data.loader.iter_split` with the subset's hub source."""
    return loader.iter_split(benchmark, subset, split, data_dir, task, required, hub=hub_source(benchmark, subset))


__all__ = ["DataError", "HUB_SOURCES", "hub_source", "iter_split", "load_split"]
