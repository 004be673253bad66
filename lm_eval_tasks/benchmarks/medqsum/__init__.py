"""Biomedical question summarization (Yuan et al.): the benchmark as one object, :data:`BENCHMARK`.

Its facts are :mod:`.record`'s (the record: subsets, sources, budgets, families,
headline keys, settings rows, citation); its behaviour (data, the patient's question, prompts)
is :mod:`.build`, held here as functions of a task's catalogue row. Why the hooks
import :mod:`.build` when they run: the behaviour reads the settings and the loader,
which read every record's facts, so the facts stay importable without it.
"""

from __future__ import annotations

from dataclasses import replace

from lm_eval_tasks.benchmarks.medqsum.record import RECORD
from lm_eval_tasks.benchmarks.record import TaskSpec


def build_docs(spec: TaskSpec, shots: int, metadata: dict, split: str = "test") -> tuple[list[dict], dict]:
    """The records of ``split`` for the task ``spec`` with their prompts, and the load facts."""
    from lm_eval_tasks.benchmarks.medqsum.build import build_docs as build

    return build(spec.subset, shots, spec.name, metadata, split)


BENCHMARK = replace(RECORD, build_docs=build_docs)

__all__ = ["BENCHMARK"]
