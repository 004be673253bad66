"""Data-parallel runs (``accelerate launch``): the process group, and gathering from every rank.

Why a module of its own: each rank evaluates and scores its own shard, and the
harness gathers only per-document scores; the counts the suite records about a run
(generations, prompts, scored documents, scorer failures, every family's counters and
usage figures) are gathered here, with no ``lm_eval`` import.

How a family's record becomes the run's (:func:`merge_counts`): counts, token and
request figures and seconds are summed over ranks (seconds are then rank-seconds, not
elapsed time); a list of counts of the same length is summed element by element; any
other list (one entry per judge batch: estimates, sizing) is every rank's entries in
rank order; a ratio is recomputed from the summed counts; the attempts a failure took
are the most any rank needed; a figure every rank already holds for the whole run (a
corpus statistic gathered while scoring, a judged sample drawn over every rank's
documents) is kept once; a text or flag the ranks agree on is kept, and one they do not
agree on (each rank's FM details file) is ``{"per_rank": [...]}``.
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


#: counters that are the most over ranks, not their sum (the attempts a failure reason took)
MAXIMA = frozenset({"failed_tries"})
#: figures every rank already holds for the whole run, not its part: a corpus statistic the
#: family gathered over ranks while scoring (the documents CIDEr-D's idf counts), the judged
#: sample drawn over every rank's documents (custom_metrics.judge.sample); the same on every
#: rank, so the most is the figure, and a list of them is kept once
WHOLE_RUN = frozenset({"cider_idf_documents", "judge_sample_size", "judge_sample_from", "judge_sample_seed",
                       "judge_sample_ids"})
#: ratios recomputed from summed counts after merging: ratio -> (numerator, denominator)
RATIOS = {"share": ("count", "references")}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def merge_counts(values: list, key: str = "", most: bool = False) -> Any:
    """Every rank's ``values`` of one record entry (``key``), as the whole run's (see the module doc).

    Ranks that lack the entry (a family that found nothing to count there) are left out;
    ``most``: numbers are the most over ranks (inside a :data:`MAXIMA` entry).
    """
    most = most or key in MAXIMA or key in WHOLE_RUN
    values = [v for v in values if v is not None]
    if not values:
        return None
    if len(values) == 1 or (key in WHOLE_RUN and all(v == values[0] for v in values)):
        return values[0]  # a whole-run figure (a judged sample's ids) is held once, not once per rank
    if all(_number(v) for v in values):
        return max(values) if most else sum(values)
    if all(isinstance(v, dict) for v in values):
        keys = dict.fromkeys(k for v in values for k in v)
        merged = {k: merge_counts([v.get(k) for v in values], k, most) for k in keys}
        for ratio, (num, den) in RATIOS.items():
            if ratio in merged and _number(merged.get(num)) and _number(merged.get(den)):
                merged[ratio] = merged[num] / merged[den] if merged[den] else 0.0
        return merged
    if all(isinstance(v, list) for v in values):
        if len({len(v) for v in values}) == 1 and all(_number(x) for v in values for x in v):
            return [max(col) if most else sum(col) for col in zip(*values)]
        return [x for v in values for x in v]
    if all(v == values[0] for v in values):
        return values[0]
    return {"per_rank": values}


__all__ = ["MAXIMA", "RATIOS", "WHOLE_RUN", "all_ranks", "merge_counts", "process_group"]
