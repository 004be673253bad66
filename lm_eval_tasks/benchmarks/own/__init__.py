"""Your own domains (every user domain): the benchmark as one object, :data:`BENCHMARK`.

Its facts are :mod:`.record`'s (the record: subsets, sources, budgets, families,
headline keys, settings rows, citation); its behaviour (the user's data and prompts, the domain vocabulary's file)
is :mod:`.build`, held here as functions of a task's catalogue row. Why the hooks
import :mod:`.build` when they run: the behaviour reads the settings and the loader,
which read every record's facts, so the facts stay importable without it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lm_eval_tasks.benchmarks.own.record import RECORD
from lm_eval_tasks.benchmarks.record import TaskSpec


def build_docs(spec: TaskSpec, shots: int, metadata: dict, split: str = "test") -> tuple[list[dict], dict]:
    """The records of ``split`` for the user task ``spec`` with their prompts, and the load facts."""
    from lm_eval_tasks.benchmarks.own.build import build_docs as build

    return build(spec, shots, metadata, split)


def family_options(spec: TaskSpec, family: str, metadata: dict) -> dict[str, Any]:
    """``Context.options`` a user domain gives ``family`` (its own vocabulary file for DVO)."""
    from lm_eval_tasks.benchmarks.own.build import family_options as options

    return options(spec, family, metadata)


BENCHMARK = replace(RECORD, build_docs=build_docs, family_options=family_options)

__all__ = ["BENCHMARK"]
