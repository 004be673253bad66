"""Data-parallel runs (``accelerate launch``): the process group, and gathering from every rank.

Why a module of its own: each rank evaluates and scores its own shard, and the
harness gathers only per-document scores; the counts the suite records about a run
(generations, prompts, scored documents, scorer failures) are gathered here, with no
``lm_eval`` import.
"""

from __future__ import annotations

from typing import Any


def process_group() -> Any:
    """``torch.distributed`` when this run is data-parallel (``accelerate launch``), else None."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist
    return None


def all_ranks(obj: Any) -> list:
    """``[obj]`` of every rank, in rank order (``[obj]`` in a single process).

    Why: under ``accelerate launch`` each rank evaluates and scores its own shard, and
    lm-eval gathers only the per-document scores to rank 0, which alone writes the
    results; what the suite records about the run (counts of generations, prompts,
    scored documents, scorer failures) must be the whole run's, not rank 0's shard.
    Every rank calls this at the same point: the first ``process_results`` of a task,
    which lm-eval makes on every rank, task by task in the same order.
    """
    dist = process_group()
    if dist is None:
        return [obj]
    parts: list = [None] * dist.get_world_size()
    dist.all_gather_object(parts, obj)
    return parts


__all__ = ["all_ranks", "process_group"]
