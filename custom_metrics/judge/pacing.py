"""How many judge requests are in flight: a fixed bound, or one adapted as answers come.

Why adapt, and not measure once: a batching server (vLLM, ``transformers serve
--continuous-batching``) answers 16 or more requests in about the time of one, a model
served on a CPU answers one at a time, and a hosted API answers many until it rate-limits.
A serial first-request probe (what sized batches before) cost one latency per batch and,
under load, read a slow answer as a slow server: it kept 2 requests in flight against a
server with room for 16.

* **A first wave that widens until the first answer.** A batch starts with
  :data:`~.config.START_CONCURRENCY` (8) requests in flight, doubled each time
  :data:`~.config.FIRST_WAVE_STEP_S` (0.1 s) passes with all of them sent and no answer
  yet, up to :data:`~.config.FIRST_WAVE_MAX` (16); never more than the batch's items
  (a batch of 3 starts with 3, so that a 429 halving it means something). Why: what a
  first wave narrower than the server costs grows with the server's latency (its idle
  slots for a whole round trip: starting at 8 and doubling only per round trip left
  half of a 16-slot server idle for its first 0.2 s round trip and under-filled the
  second), while what a wider one costs does not (a deeper queue at a narrow server and
  a burst of new connections: milliseconds of client and server CPU per request, which
  slowed a one-at-a-time server answering in 20 ms by a few percent with 16-32 in
  flight rather than 8). So a server that answers within a step, whose round trips are
  cheap, keeps 8, and one that leaves the wave unanswered (a batching server, a hosted
  API, a large model) gets 16 after 0.1 s, within its first round trip. Not wider
  unseen: the fastest latency is measured under the first wave's load, and a server
  whose latency grows with it (``transformers serve --continuous-batching`` on a CPU
  answered 32 in flight 16 % slower than 8 or 16) would be judged by a floor it can no
  longer show; beyond 16 the answers decide ("Increase"). The time counts from the
  last request sent, not from the start: a client starved of CPU on a loaded machine
  takes tens of milliseconds to send a wave, and reads its first answer as late. The
  requests in flight when the first answer sizes the wait get that wait too
  (:class:`~.client.Client`), so the back of a one-at-a-time server's queue does not
  time out. (docs/speed.md has the figures.)
* **Increase** while answers come back near the fastest latency seen in the batch
  (within :data:`~.config.LATENCY_TOLERANCE` of it: the server still has room) and
  requests are waiting for a slot: +1 per answer at first ("slow start", so that the
  bound doubles each round trip), then +1 per round trip once the server has shown a
  queue. Never above :data:`~.config.AUTO_CONCURRENCY_MAX`.
* **Hold** when answers come back slower than that: requests queue at the server, and
  more in flight would only lengthen the queue.
* **Trim** to :data:`~.config.QUEUE_GAIN` (2) times the server's width once a whole round
  trip of answers (as many as the bound) shows a queue: a wide first wave at a narrow
  server (one at a time on a CPU) would otherwise keep its queue that deep for the whole
  batch, each answer waiting behind 32, for no throughput. The width an answer shows is
  ``n x fastest / latency``, ``n`` the requests posted (this one included) when it was
  posted: a FIFO server of width ``w`` answers it after about ``n / w`` fastest
  latencies. The round trip's largest is taken, so that one answer near the fastest
  (a server whose latency merely varies, as a hosted API's does) keeps the bound: only
  a queue slows every answer of a round trip. (A server that does not answer in order
  of arrival may thus never be trimmed: the bound then holds, as before.) Never below
  :data:`~.config.QUEUE_FLOOR` (a queue of several covers the client's turnaround
  between an answer and the next request, which on a loaded machine takes
  milliseconds), and only while requests wait for a slot (otherwise ``n`` is the
  batch's demand, not the server's width).
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
        self.trims = 0
        self.wave = slots.limit  # the most the first wave widens to
        self._new_round()

    def _new_round(self) -> None:
        """Start a round trip of answers to judge the queue by (see "Trim")."""
        self.round_answers = 0
        self.round_width = 0.0  # the largest width an answer of the round showed
        self.round_queued = False  # an answer of the round was slow
        self.round_demand = True  # requests waited for a slot at every answer of the round

    def first_wave(self, requests: int) -> None:
        """Size the first wave from the batch's ``requests`` (module docstring); before
        any request. :meth:`widen` then widens it."""
        if self.fixed:
            return
        self.wave = max(1, min(conf.FIRST_WAVE_MAX, requests))
        self.slots.resize(min(conf.START_CONCURRENCY, self.wave))
        self.start = self.peak = self.slots.limit

    @property
    def widening(self) -> bool:
        """The first wave may still widen: no answer yet, no 429/503 or timeouts, not at
        its width."""
        return not (self.fixed or self.answered or self.decreases or self.slots.limit >= self.wave)

    def widen(self) -> bool:
        """No answer yet, another :data:`~.config.FIRST_WAVE_STEP_S` on: twice as many in
        flight, up to the first wave's width. True while it may widen again."""
        if not self.widening:
            return False
        self._resize(min(self.wave, 2 * self.slots.limit))
        self.start = self.slots.limit
        return self.widening

    @property
    def answered(self) -> bool:
        return self.floor_s < math.inf

    def on_answer(self, latency_s: float, saturated: bool, posted: int) -> None:
        """One answer in ``latency_s``; ``saturated``: every slot was taken or waited for
        when it came (otherwise a larger bound would have changed nothing); ``posted``:
        the requests posted and not yet answered when it was posted, itself included."""
        self.floor_s = min(self.floor_s, latency_s)
        if self.fixed:
            return
        slow = latency_s > self.floor_s * conf.LATENCY_TOLERANCE
        self._round(latency_s, saturated, posted, slow)
        if slow:
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

    def _round(self, latency_s: float, saturated: bool, posted: int, slow: bool) -> None:
        """Count the answer into this round trip; at its end, trim the bound to the width
        it showed when every answer of it was slow (module docstring, "Trim")."""
        self.round_answers += 1
        self.round_width = max(self.round_width, posted * self.floor_s / max(latency_s, 1e-9))
        self.round_queued = self.round_queued or slow
        self.round_demand = self.round_demand and saturated
        limit = self.slots.limit
        if self.round_answers < limit:
            return
        target = max(conf.QUEUE_FLOOR, math.ceil(conf.QUEUE_GAIN * self.round_width))
        if self.round_queued and self.round_demand and target < limit:
            self.trims += 1
            self.credit = 0.0
            self.slots.resize(target)
        self._new_round()

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
        self._new_round()
        return True

    def _resize(self, limit: int) -> None:
        limit = max(1, min(conf.AUTO_CONCURRENCY_MAX, limit))
        self.slots.resize(limit)
        self.peak = max(self.peak, self.slots.limit)
