"""Ranks as threads: a real collective for unit tests of what a data-parallel run gathers.

Why threads: a family that gathers a corpus statistic over ranks (CIDEr-D's idf) is
called through :attr:`custom_metrics.registry.Context.gather`, which under
``accelerate launch`` is ``torch.distributed.all_gather_object``. Here each rank is a
thread and :meth:`ThreadRanks.gather_of` behaves as that collective does: it returns
every rank's part, in rank order, once every rank has called it, and a rank that never
calls it leaves the others waiting (the barrier's timeout makes that an error). The
two-rank run of the real harness is ``tests/integration/test_data_parallel_counters.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from custom_metrics import registry


class ThreadRanks:
    """``world`` ranks' collective; :attr:`calls` counts each rank's calls."""

    def __init__(self, world: int, timeout_s: float = 10.0) -> None:
        self.parts: list = [None] * world
        self.calls = [0] * world
        self._barrier = threading.Barrier(world, timeout=timeout_s)

    def gather_of(self, rank: int) -> Callable[[Any], list]:
        def gather(part: Any) -> list:
            self.calls[rank] += 1
            self.parts[rank] = part
            self._barrier.wait()
            return list(self.parts)
        return gather


def score_on_ranks(family: str, shards: Sequence[tuple[Sequence[str], Sequence[str]]]) -> list[tuple[dict, dict]]:
    """``family`` scored on every (predictions, references) shard at once, one thread a rank,
    each with its own context: every rank's (values, details). Every rank must have joined
    the collective exactly once; ranks that raised are raised together, in rank order."""
    ranks, out = ThreadRanks(len(shards)), [None] * len(shards)
    errors: list[tuple[int, Exception]] = []
    fam = registry.get(family)

    def rank(r: int) -> None:
        preds, refs = shards[r]
        ctx = registry.Context(gather=ranks.gather_of(r))
        try:
            values = fam.score(registry.Batch(list(preds), list(refs), [""] * len(refs), [{}] * len(refs)), ctx)
            out[r] = (values, ctx.details)
        except Exception as exc:  # noqa: BLE001 - raised below, with every other rank's
            errors.append((r, exc))

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(len(shards))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert ranks.calls == [1] * len(shards), f"collective calls per rank: {ranks.calls}"
    if errors:
        raise ExceptionGroup(f"{len(errors)} rank(s) failed", [e for _, e in sorted(errors, key=lambda x: x[0])])
    return out  # type: ignore[return-value]
