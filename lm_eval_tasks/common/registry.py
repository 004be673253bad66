"""Task name -> the records and prompts that task evaluates on.

Why: fine-tuning, token-shift analysis and re-scoring must use *exactly* the prompt
the harness task uses; this is the one place that maps a suite task name to its
benchmark glue's ``build_docs``.
"""

from __future__ import annotations

import importlib
from typing import Any

from lm_eval_tasks.common.data import DataError, parse_task_name

#: benchmark -> glue module exposing ``build_docs(domain, shots, task, metadata, split)``
GLUE = {
    "domainsum": "lm_eval_tasks.domainsum.utils",
    "adapteval": "lm_eval_tasks.adapteval.utils",
    "ccsbench": "lm_eval_tasks.ccsbench.utils",
    "medqsum": "lm_eval_tasks.medqsum.utils",
}


def task_shots(task: str) -> int:
    """Demonstrations in a task's prompt, from its name (``_2shot`` -> 2)."""
    for part in task.split("_"):
        if part.endswith("shot") and part[:-4].isdigit():
            return int(part[:-4])
    return 0


def task_examples(task: str, split: str = "test", metadata: dict | None = None,
                  shots: int | None = None) -> list[dict]:
    """Records of ``split`` for ``task`` with the task's ``prompt`` and ``summary``.

    ``shots=0`` gives the zero-shot prompt of the same benchmark and domain (what
    fine-tuning trains on).
    """
    benchmark, domain = parse_task_name(task)
    if benchmark not in GLUE:
        raise DataError(f"unknown suite task {task!r}: benchmarks are {sorted(GLUE)}")
    glue = importlib.import_module(GLUE[benchmark])
    n = task_shots(task) if shots is None else shots
    out: Any = glue.build_docs(domain, n, task, dict(metadata or {}), split=split)
    return out[0] if isinstance(out, tuple) else out
