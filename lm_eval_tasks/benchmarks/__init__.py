"""The suite's benchmarks, one package per paper, and the entry points to their records.

Each package (``adapteval/``, ``ccsbench/``, ``domainsum/``, ``medqsum/``, and ``own/``
for every user domain) exports one :class:`~lm_eval_tasks.benchmarks.record.Benchmark`,
``BENCHMARK``: its facts (its ``record`` module; :mod:`.suite` collects them) and
references to its behaviour (``build_docs``, and where the benchmark has them
``stop_sequences`` and ``family_options``, each a function of a task's row). A task's
row holds its benchmark's object, so the functions below call its hooks directly.

Why here and not in the task classes: fine-tuning, token-shift analysis and re-scoring
must use *exactly* the prompt the harness task uses, without importing the harness.
Nothing in this package imports ``lm_eval``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the catalogue imports this package's records
    from lm_eval_tasks.catalog import TaskSpec

log = logging.getLogger(__name__)


@dataclass
class Loaded:
    """A task's records of one split and what loading them found (for the results)."""

    spec: TaskSpec
    split: str
    docs: list[dict]
    report: dict[str, Any] = field(default_factory=dict)


def load_task(task: str | TaskSpec, split: str = "test", metadata: dict | None = None,
              shots: int | None = None) -> Loaded:
    """Records of ``split`` for ``task`` with the task's ``prompt`` and ``summary``.

    ``shots=0`` gives the zero-shot prompt of the same benchmark and subset (what
    fine-tuning trains on); None keeps the task's own. The prompts hold each document
    within the benchmark's word (or token) budget; fitting a prompt into the evaluated
    model's window happens per document when the harness renders it
    (:mod:`~lm_eval_tasks.benchmarks.budget`).
    """
    from lm_eval_tasks.catalog import lookup

    spec = lookup(task) if isinstance(task, str) else task
    n = spec.shots if shots is None else shots

    docs, report = spec.record.build_docs(spec, n, dict(metadata or {}), split)
    if "data_source" not in report:  # where the documents came from, for the report's provenance
        from lm_eval_tasks.data.loader import split_source

        report = {**report, "data_source": split_source(spec.benchmark, spec.subset, split,
                                                        (metadata or {}).get("data_dir"))}
    kept, empty = drop_empty(docs)
    if empty:
        log.warning("%s: %d %s record(s) with an empty document or reference summary left out: %s",
                    spec.name, len(empty), split, ", ".join(empty[:10]) + (" ..." if len(empty) > 10 else ""))
        report = {**report, "skipped_empty": {"split": split, "count": len(empty), "ids": empty}}
    return Loaded(spec, split, kept, report)


def drop_empty(docs: list[dict]) -> tuple[list[dict], list[str]]:
    """Records with a non-blank ``document`` and ``summary``, and the ids of the others.

    Why: an empty source or reference makes every metric meaningless for that record
    (ROUGE 0, BERTScore 0), and averaging it in silently lowers the task's score.
    """
    from lm_eval_tasks.data.records import is_blank

    kept, empty = [], []
    for d in docs:
        if not is_blank(d.get("document")) and not is_blank(d.get("summary")):
            kept.append(d)
        else:
            empty.append(str(d.get("id", "")))
    return kept, empty


def task_examples(task: str | TaskSpec, split: str = "test", metadata: dict | None = None,
                  shots: int | None = None) -> list[dict]:
    """The records of :func:`load_task` alone."""
    return load_task(task, split, metadata, shots).docs


def stop_sequences(spec: TaskSpec, metadata: dict | None = None) -> tuple[str, ...] | None:
    """Stop strings a benchmark's prompt settings impose instead of the catalogue's (None: keep)."""
    override = spec.record.stop_sequences
    return override(spec, dict(metadata or {})) if override else None


def family_options(spec: TaskSpec, family: str, metadata: dict | None = None) -> dict[str, Any]:
    """``Context.options`` a benchmark gives a metric family (e.g. CCSBench's focus-judge prompt)."""
    provide = spec.record.family_options
    return provide(spec, family, dict(metadata or {})) if provide else {}


__all__ = ["Loaded", "drop_empty", "family_options", "load_task", "stop_sequences",
           "task_examples"]
