"""The judge cache's writes of one batch, gathered per turn of the event loop: the
answers that arrived and the claims the next items asked for in the same moments go
to SQLite in one transaction (:meth:`~custom_metrics.judge.cache.JudgeCache.write`).

Why: a commit costs more than the statements it commits, and each item took two (its
claim, then its answer), which was most of the judge's CPU per call above a plain
``openai`` client's. The moments coincide: an answer frees a request slot, the item
waiting for that slot claims next, and a batching server answers many requests at once.

What is kept of the guarantees (``custom_metrics.judge.cache``):

* **Never paying twice across concurrent runs.** A claim is still decided under the
  write lock and committed before its request is sent: the item awaits its claim's
  state, which is set only after the commit.
* **Never paying twice across interrupted runs.** An answer is queued with no await
  between receiving and queueing, and committed in the next turn of the event loop,
  before any request or reply that came later is handled (the loop runs the callbacks
  queued before a turn's I/O first); the batch's end (:meth:`flush`, also when
  cancelled) writes whatever is still queued. A process killed in between loses at
  most the answers of its last turn, as it would lose an answer still being read; a
  rerun requests those again, once.
* **A locked cache costs no stall.** A refused write leaves the answers queued (kept in
  memory, written with the next write that succeeds) and answers the claims
  ``"locked"``: the engine then polls or requests unclaimed, as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from custom_metrics.judge.cache import CacheLocked, ClaimState, Entry, JudgeCache


class WriteQueue:
    """One batch's pending cache writes (module docstring). ``on_written`` is called after
    a write that succeeded, ``on_locked`` with the :class:`CacheLocked` of one refused."""

    def __init__(self, cache: JudgeCache, owner: str, ttl_s: float, on_written: Callable[[], None],
                 on_locked: Callable[[CacheLocked], None]) -> None:
        self.cache, self.owner, self.ttl_s = cache, owner, ttl_s
        self.on_written, self.on_locked = on_written, on_locked
        self.puts: list[Entry] = []  # answers not yet written (queued, or refused by a lock)
        self._claims: list[tuple[str, asyncio.Future]] = []
        self._scheduled = False

    def put(self, entry: Entry) -> None:
        """Queue an answer: written in the next turn of the event loop."""
        self.puts.append(entry)
        self._schedule()

    def claim(self, key: str) -> "asyncio.Future[tuple[ClaimState | str, dict | None]]":
        """Queue a claim on ``key``; the future gets the state :meth:`JudgeCache.claim` would
        return, or ``("locked", None)`` when the write was refused."""
        fut = asyncio.get_running_loop().create_future()
        self._claims.append((key, fut))
        self._schedule()
        return fut

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self, force: bool = False) -> None:
        """Write what is queued, now, in one transaction (``force``: try even within the
        interval after a refusal). An error other than a lock goes to the claims waiting;
        the answers stay queued, so that the batch's end meets it too and raises it."""
        self._scheduled = False
        claims = [(key, fut) for key, fut in self._claims if not fut.done()]  # done: cancelled
        self._claims = []
        if not claims and not self.puts:
            return
        puts = list(self.puts)
        try:
            states = self.cache.write(puts, [key for key, _ in claims], self.owner, self.ttl_s, force=force)
        except CacheLocked as exc:
            self.on_locked(exc)
            for _, fut in claims:
                fut.set_result(("locked", None))
            return
        except Exception as exc:  # e.g. a full disk: the items claiming fail; the answers stay queued
            for _, fut in claims:
                fut.set_exception(exc)
            return
        del self.puts[:len(puts)]
        self.on_written()
        for (_, fut), state in zip(claims, states):
            fut.set_result(state)
