"""Which documents a run's judged metrics scored, as a paper's protocol check compares them
(:mod:`lm_eval_tasks.published.protocol`, field ``judged documents``).

Why apart: AdaptEval judges "a random sample of 25 articles" (Table 5); a run may judge a
seeded random sample of the documents it evaluated (setting ``judge_sample``, recorded as
``judge_sample_*`` by :mod:`custom_metrics.judge.sample`), or every document it evaluated,
which ``sample_test`` drew at random from the test split or ``--limit`` cut to the first N.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def judged_of(record: Mapping[str, Any], documents: int | None) -> dict[str, Any]:
    """Which documents a run's judged metrics scored, from its task metadata (``record``):
    the seeded random sample ``judge_sample`` drew (``judge_sample_*``,
    :mod:`custom_metrics.judge.sample`), else every document it evaluated (``documents``),
    which ``sample_test`` drew at random from the test split and ``--limit`` cut to the first
    N. Empty when the count is not known."""
    if record.get("judge_sample_size") is not None:
        n, of, seed = record["judge_sample_size"], record.get("judge_sample_from"), record.get("judge_sample_seed")
        return {"count": n, "random": True,
                "words": f"a seeded random sample of {n} of the {of} documents evaluated (judge_sample, "
                         f"sample_seed {seed})"}
    if documents is None:
        return {}
    if record.get("sample_test"):
        seed = record.get("sample_seed")
        return {"count": documents, "random": True,
                "words": f"all {documents} documents evaluated, a seeded random sample of the test split "
                         f"(sample_test, {'the default sample_seed' if seed is None else f'sample_seed {seed}'})"}
    return {"count": documents, "random": False,
            "words": f"all {documents} documents evaluated (the first N under --limit, else the whole split; "
                     "not a random sample)"}


__all__ = ["judged_of"]
