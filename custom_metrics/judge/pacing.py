"""How many judge requests are in flight: a fixed bound, or one adapted as answers come.

Why adapt, and not measure once: a batching server (vLLM, ``transformers serve
--continuous-batching``) answers 16 or more requests in about the time of one, a model
served on a CPU answers one at a time, and a hosted API answers many until it rate-limits.
A serial first-request probe (what sized batches before) cost one latency per batch and,
under load, read a slow answer as a slow server: it kept 2 requests in flight against a
server with room for 16.

* **A wide first wave.** A batch starts with all its items in flight, at most
  :data:`~.config.START_CONCURRENCY` (32). Why this wide, unmeasured: each round trip
  the bound spends below the server's width costs that round trip's idle slots, and
  nothing is known before the first answers anyway. Starting at 8 and doubling per
  round trip left half of a 16-slot server idle for the first round trip and reached
  48 only after two (docs/speed.md has the figures). Too wide costs little: a narrower server queues the rest (its throughput is the same),
  and the requests in flight when the first answer sizes the wait get that wait too
  (:class:`~.client.Client`), so the back of a one-at-a-time server's queue does not
  time out. Sized from the batch, not fixed: a batch of 3 starts with 3, so that a
  429 halving it means something.
* **Increase** while answers come back near the fastest latency seen in the batch
  (within :data:`~.config.LATENCY_TOLERANCE` of it: the server still has room) and
  requests are waiting for a slot: +1 per answer at first ("slow start", so that the
  bound doubles each round trip), then +1 per round trip once the server has shown a
  queue. Never above :data:`~.config.AUTO_CONCURRENCY_MAX`.
* **Hold** when answers come back slower than that: requests queue at the server, and
  more in flight would only lengthen the queue. Not a decrease: a loaded client reads
  answers late, and a bound cut on latency alone would read that as a narrow server
  (the probe's fault above); a queue the bound outgrew shows as timeouts, which halve it.
* **Halve** on HTTP 429 or 503 and when timeouts show the queue outgrew the timeout,
  once per burst (``generation``): the answers to requests sent before a decrease say
  nothing of the new bound.

A bound the user set (``judge_concurrency``) is used exactly as given and never moved.
"""

from __future__ import annotations

import math

from custom_metrics.judge import config as conf


class Pacer:
    """The bound on requests in flight of one batch (module docstring). ``slots`` is the
    :class:`~.client.Slots` pool it resizes; ``fixed`` a bound set by the user."""

    def __init__(self, slots, fixed: int | None) -> None:
        self.slots = slots
        self.fixed = fixed is not None
        self.start = slots.limit
        self.peak = slots.limit
        self.floor_s = math.inf  # the fastest answer of the batch: the server's latency without a queue
        self.slow_start = True
        self.credit = 0.0
        self.generation = 0  # bumped by each decrease: one burst of faults decreases once
        self.decreases = 0

    def first_wave(self, requests: int) -> None:
        """Size the first wave from the batch: its ``requests``, at most
        :data:`~.config.START_CONCURRENCY` (module docstring); before any request."""
        if self.fixed:
            return
        self.slots.resize(max(1, min(conf.START_CONCURRENCY, requests)))
        self.start = self.peak = self.slots.limit

    @property
    def answered(self) -> bool:
        return self.floor_s < math.inf

    def on_answer(self, latency_s: float, saturated: bool) -> None:
        """One answer in ``latency_s``; ``saturated``: every slot was taken or waited for
        when it came (otherwise a larger bound would have changed nothing)."""
        self.floor_s = min(self.floor_s, latency_s)
        if self.fixed:
            return
        if latency_s > self.floor_s * conf.LATENCY_TOLERANCE:
            self.slow_start = False  # a queue at the server: hold
            return
        if not saturated:
            return
        limit = self.slots.limit
        if self.slow_start:
            self._resize(limit + 1)
            return
        self.credit += 1.0 / limit
        if self.credit >= 1.0:
            self.credit -= 1.0
            self._resize(limit + 1)

    def on_congestion(self, generation: int) -> bool:
        """A 429/503, or timeouts of two requests, among requests sent under ``generation``:
        halve the bound, unless this burst already did. True when it did now."""
        if self.fixed or generation != self.generation:
            return False
        self.generation += 1
        self.decreases += 1
        self.slow_start = False
        self.credit = 0.0
        self._resize(self.slots.limit // 2)
        return True

    def _resize(self, limit: int) -> None:
        limit = max(1, min(conf.AUTO_CONCURRENCY_MAX, limit))
        self.slots.resize(limit)
        self.peak = max(self.peak, self.slots.limit)
