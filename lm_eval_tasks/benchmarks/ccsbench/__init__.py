"""CCSBench (Ding et al., 2024): the benchmark as one object, :data:`BENCHMARK`.

Its facts are :mod:`.record`'s (the record: subsets, sources, budgets, families,
headline keys, settings rows, citation); its behaviour (data, prompts and stops with
the texts of :mod:`.prompts`, the focus judge's messages) is :mod:`.build`, held here as functions of a task's catalogue row. Why the hooks
import :mod:`.build` when they run: the behaviour reads the settings and the loader,
which read every record's facts, so the facts stay importable without it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lm_eval_tasks.benchmarks.ccsbench.record import RECORD
from lm_eval_tasks.benchmarks.record import TaskSpec


def build_docs(spec: TaskSpec, shots: int, metadata: dict, split: str = "test") -> tuple[list[dict], dict]:
    """The records of ``split`` for the task ``spec`` with their prompts, and the load facts."""
    from lm_eval_tasks.benchmarks.ccsbench.build import build_docs as build

    return build(spec.subset, shots, spec.name, metadata, split, hard=spec.variant == "hard",
                 fulltext=spec.variant == "fulltext")


def stop_sequences(spec: TaskSpec, metadata: dict) -> tuple[str, ...] | None:
    """Stops a prompt file imposes instead of the record's (None: keep them)."""
    from lm_eval_tasks.benchmarks.ccsbench.build import stop_sequences as stops

    return stops(spec.name, metadata, hard=spec.variant == "hard")


def family_options(spec: TaskSpec, family: str, metadata: dict) -> dict[str, Any]:
    """``Context.options`` the benchmark gives ``family`` for the task ``spec``."""
    from lm_eval_tasks.benchmarks.ccsbench.build import family_options as options

    return options(spec.name, family, metadata)


def check_fields(spec: TaskSpec, fields: list[str], metadata: dict, where: str) -> None:
    """A record with ``fields`` feeds the task ``spec`` (its controls, and for the ``_fulltext``
    tasks a full-text column), or the :class:`DataError` the task would stop with when it loads."""
    from lm_eval_tasks.benchmarks.ccsbench.build import resolve_columns
    from lm_eval_tasks.settings import resolve

    resolve_columns(fields, spec.subset, resolve(metadata, "column_map"), where, fulltext=spec.variant == "fulltext")


BENCHMARK = replace(RECORD, build_docs=build_docs, stop_sequences=stop_sequences, family_options=family_options,
                    check_fields=check_fields)

__all__ = ["BENCHMARK"]
