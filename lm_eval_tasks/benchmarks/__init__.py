"""The suite's benchmarks, one package per paper, and the calls into their hooks.

Each package (``adapteval/``, ``ccsbench/``, ``domainsum/``, ``medqsum/``, and ``own/``
for every user domain) exports one :class:`~lm_eval_tasks.benchmarks.record.Benchmark`,
``BENCHMARK``: its facts (its ``record`` module; :mod:`.suite` collects them) and
references to its behaviour (``build_docs``, and where the benchmark has them
``stop_sequences`` and ``family_options``, each a function of a task's row). A task's
row holds its benchmark's object, so the functions below (and the catalogue's
``load_task``) call its hooks directly. Nothing in this package imports the catalogue,
which imports the packages and expands them into tasks, nor ``lm_eval``: fine-tuning,
token-shift analysis and re-scoring use *exactly* the prompt the harness task uses,
without importing the harness.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lm_eval_tasks.benchmarks.record import TaskSpec

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


def stop_sequences(spec: TaskSpec, metadata: dict | None = None) -> tuple[str, ...] | None:
    """Stop strings a benchmark's prompt settings impose instead of the catalogue's (None: keep)."""
    override = spec.record.stop_sequences
    return override(spec, dict(metadata or {})) if override else None


def family_options(spec: TaskSpec, family: str, metadata: dict | None = None) -> dict[str, Any]:
    """``Context.options`` a benchmark gives a metric family (e.g. CCSBench's focus-judge prompt)."""
    provide = spec.record.family_options
    return provide(spec, family, dict(metadata or {})) if provide else {}


__all__ = ["drop_empty", "family_options", "stop_sequences"]
