"""Judging a seeded random sample of a run's documents (setting ``judge_sample``).

Why: a judge is the costly scorer, and AdaptEval judges "a random sample of 25 articles"
(Table 5, Section 3.2: "25 random instances" of four models' outputs), the same 25 for
every system compared. ``--limit`` takes the first N documents of one order, which is
neither random nor the judge's alone: it cuts every metric.

How the sample is drawn (:func:`draw`): each document's identity (its record ``id``,
else a hash of its text, :func:`identities`) is ranked by
``sha256("<sample_seed>:<identity>")`` and the ``n`` smallest are the sample. So the
sample depends on the seed and on which documents the run evaluated, never on their order,
on the model or on its generations: two systems evaluated on the same documents with the
same seed are judged on the same documents. In a data-parallel run each rank sends its
shard's identities through :attr:`~custom_metrics.registry.Context.gather` and ranks the
whole run's: exactly ``n`` over the run, not ``n`` per rank (a per-document threshold
would give about ``n``).

What the documents outside the sample carry (:func:`score_sample`): no judged value (NaN
for a mean key, None for a corpus key's item and a detail list, 0 for a count of
failures) and they are counted in the record's ``judge_not_sampled``, never as failures.
The record also holds the sample's size, the documents it was drawn from, the seed and
the drawn identities (``judge_sample_*``: every rank records the whole run's, kept once
when ranks merge, ``lm_eval_tasks.harness_parts.ranks.WHOLE_RUN``). The judge sees only
the sample, so its estimate and ``judge_max_requests`` count only the sample's requests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from custom_metrics.registry import NAN, Batch, Context, Family, one_process

#: where a context keeps the sample it drew (a document scored alone later, on one rank,
#: is judged only if it is in the run's sample)
DRAWN = "judge_sample_drawn"


def identities(batch: Batch) -> list[str]:
    """Each document's identity across systems: its record id, else a hash of its text
    (documents without ids are still the same documents for every system)."""
    out = []
    for i, doc in enumerate(batch.documents):
        extra = batch.extras[i] if i < len(batch.extras) else {}
        ident = str(extra.get("id") or "")
        out.append(ident or "text:" + hashlib.sha256(str(doc).encode("utf-8")).hexdigest()[:16])
    return out


def rank_of(seed: int, identity: str) -> str:
    """The key a document is ranked by: a hash of the seed and its identity only."""
    return hashlib.sha256(f"{seed}:{identity}".encode("utf-8")).hexdigest()


def draw(ids: Iterable[str], n: int, seed: int) -> list[str]:
    """The ``n`` distinct identities of ``ids`` whose :func:`rank_of` is smallest, sorted
    (all of them when ``n`` is 0 or at least their number). Deterministic, and the same for
    the same identities in any order or repetition."""
    unique = sorted(set(ids))
    if n <= 0 or n >= len(unique):
        return unique
    return sorted(sorted(unique, key=lambda i: (rank_of(seed, i), i))[:n])


def _population(ids: Sequence[str], ctx: Context) -> list[str]:
    """The identities of every document the run scores: this process's and, through
    ``ctx.gather``, every other rank's (every rank calls this once per scoring of its shard)."""
    parts = ctx.gather(sorted(set(ids)))
    return sorted({i for part in parts for i in part})


def not_sampled_value(fam: Family, key: str) -> Any:
    """What a document outside the sample carries for ``key``: no value, and no failure."""
    if key not in fam.key_names:
        return None  # a detail list beside the keys
    agg = fam.key(key).aggregation
    return None if agg == "corpus" else 0.0 if agg == "sum" else NAN


def score_sample(fam: Family, score: Callable[[Batch, Context], dict[str, list]], batch: Batch, ctx: Context,
                 n: int) -> dict[str, list]:
    """``score`` on the documents of ``batch`` in the run's sample of ``n``; the others get
    :func:`not_sampled_value` and are counted in ``ctx.record["judge_not_sampled"]``."""
    seed = ctx.settings.get("sample_seed")
    if seed is None:
        raise ValueError(f"{fam.name}: judge_sample {n} needs the setting sample_seed in the family's context")
    seed = int(seed)
    ids = identities(batch)
    kept = ctx.options.get(DRAWN)
    if ctx.gather is one_process and kept is not None and kept["seed"] == seed and kept["n"] == n \
            and set(ids) <= kept["from"]:
        drawn, population = kept["ids"], kept["from"]
    else:
        population = set(_population(ids, ctx))
        drawn = draw(population, n, seed)
        if isinstance(ctx.options, dict):
            ctx.options[DRAWN] = {"seed": seed, "n": n, "from": population, "ids": drawn}
    chosen = set(drawn)
    inside = [i for i, ident in enumerate(ids) if ident in chosen]
    sub = Batch(predictions=[batch.predictions[i] for i in inside],
                references=[batch.references[i] for i in inside],
                documents=[batch.documents[i] for i in inside],
                extras=[batch.extras[i] for i in inside] if batch.extras else [])
    scored = score(sub, ctx) if inside else {}
    out: dict[str, list] = {}
    for key in dict.fromkeys([*fam.key_names, *scored]):
        values = [not_sampled_value(fam, key)] * len(batch)
        for j, i in enumerate(inside):
            values[i] = scored[key][j]
        out[key] = values
    ctx.record.update(judge_sample_size=len(drawn), judge_sample_from=len(population),
                      judge_sample_seed=seed, judge_sample_ids=list(drawn))
    ctx.record["judge_not_sampled"] = ctx.record.get("judge_not_sampled", 0) + len(batch) - len(inside)
    return out


__all__ = ["DRAWN", "draw", "identities", "not_sampled_value", "rank_of", "score_sample"]
