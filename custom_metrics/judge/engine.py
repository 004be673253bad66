"""The batch engine: one batch of judge requests from start to end.

:class:`BatchRun` owns what the items of a batch share: the HTTP client
(:class:`~custom_metrics.judge.client.Client`: slots, sizing, retries), the cache and
this run's claims on it (kept live by a heartbeat), in-batch de-duplication (identical
requests share one call, also without the SQLite cache) and the per-item accounting.
How one attempt of an item is asked and read (G-Eval ratings or a parsed text) is a
*reader* (:mod:`custom_metrics.judge.readers`) handed in, not a subclass.

* **Item failures.** A transient fault that outlasts the retries fails that item only
  (score None, counted by reason, logged with the endpoint). Only when the first
  items of a batch (:data:`~custom_metrics.judge.config.FAIL_FAST_ITEMS`, or all of a
  smaller batch) fail with no answer at all does the batch raise: then the endpoint,
  not an item, is broken.
* **Parse failures.** An attempt without a valid score is asked again once (a new
  request: the attempt index is in the cache key), then counted as a parse failure.
* **Answers are kept before use**: masked and queued for the cache as they arrive,
  with no await between receiving and queueing, and committed in the next turn of the
  event loop together with the claims of that moment
  (:class:`~custom_metrics.judge.writes.WriteQueue`: one transaction, not two per item).
* **A cache another process holds locked** costs no stall and no second payment
  where it can be avoided: cached answers are still read (WAL); a claim is retried
  with backoff for up to :data:`~custom_metrics.judge.config.CACHE_CLAIM_WAIT_S`,
  then the item is requested unclaimed; answers that cannot be written are kept in
  memory, written with the next answer that can, and at the batch's end get
  :data:`~custom_metrics.judge.config.CACHE_FLUSH_WAIT_S`; what is still unsaved
  then, the wait and the unclaimed requests are counted (``cache_*`` in the stats).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from custom_metrics import secrets
from custom_metrics.judge import config as conf
from custom_metrics.judge.budget import BudgetExhausted
from custom_metrics.judge.cache import CacheLocked, JudgeCache, cache_key, new_owner_id, retire_owner
from custom_metrics.judge.client import Client
from custom_metrics.judge.config import JudgeConfig, JudgeError, JudgeRequestError, Messages, Scale
from custom_metrics.judge.stats import ItemScore, JudgeStats
from custom_metrics.judge.writes import WriteQueue

log = logging.getLogger(__name__)


class Reader(Protocol):
    """How one attempt of an item is asked and read (see :mod:`custom_metrics.judge.readers`)."""

    async def attempt(self, run: "BatchRun", messages: Messages, scale: Scale, attempt: int) -> ItemScore: ...

    def first_params(self) -> dict[str, Any]:
        """The parameters of an item's first request (the estimate before the batch)."""


class BatchRun:
    """State of one batch: the client, the reader, in-flight requests, this run's claim
    owner id and the heartbeat that keeps its claims live, and the item counts."""

    def __init__(self, config: JudgeConfig, stats: JudgeStats, cache: JudgeCache | None, reader: Reader) -> None:
        self.config = config
        self.stats = stats
        self.cache = cache
        self.reader = reader
        self.client = Client(config, stats)
        # cache key -> task: identical requests of one batch share one call (in flight
        # or done), also when the SQLite cache is off
        self.shared: dict[str, asyncio.Task] = {}
        self.secrets = self.client.secrets
        self.owner = ""
        self.held: set[str] = set()  # keys this run has claimed and not yet answered
        self.writes: WriteQueue | None = None  # the cache's writes, one transaction per loop turn
        self.shown_endpoint = config.shown_endpoint  # masked once, not per answer
        self.locked_since: float | None = None  # since when writes have been refused (None: not locked)
        self._heartbeat_task: asyncio.Task | None = None
        self.failures: list[JudgeRequestError] = []  # items failed for good, this batch
        self.answered = False  # any answer (fresh or cached) in this batch
        self.n_items = 0
        self.finished = 0  # items whose outcome is counted (scored, parse failure, failed)

    def mask(self, text: Any) -> str:
        """Every error text we format passes here (see :mod:`custom_metrics.secrets`)."""
        return secrets.mask(text, self.config)

    # ---- lifecycle

    async def __aenter__(self) -> "BatchRun":
        await self.client.__aenter__()
        if self.cache is not None:
            self.owner = new_owner_id()
            self.writes = WriteQueue(self.cache, self.owner, self.config.claim_ttl, self._unlocked, self._locked)
            self._heartbeat_task = asyncio.ensure_future(self._heartbeat())
        return self

    async def __aexit__(self, *exc: Any) -> None:
        # claims first, without awaiting: a cancelled run must not leave them behind
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
        try:
            if self.cache is not None and self.owner:
                try:
                    await self._flush(interrupted=exc[0] is not None)
                    self.cache.release(None, self.owner)
                except CacheLocked as locked:  # left behind: taken over at once, their owner being gone
                    self._locked(locked)
                finally:
                    retire_owner(self.owner)
        finally:
            await self.client.__aexit__(*exc)
        if self._heartbeat_task is not None:
            await asyncio.gather(self._heartbeat_task, return_exceptions=True)

    async def _heartbeat(self) -> None:
        """Keep this run's claims from expiring while it queues, retries or backs off."""
        ttl = self.config.claim_ttl
        while True:
            await asyncio.sleep(ttl / 3)
            if self.held and self.cache is not None:
                try:
                    self.cache.refresh(self.owner, ttl)
                except (sqlite3.Error, CacheLocked) as exc:  # a busy database: the next beat tries again
                    log.debug("judge: claim heartbeat failed: %s", exc)

    # ---- a cache locked by another process

    def _locked(self, exc: CacheLocked) -> None:
        """Count a write the lock refused (and its wait); said once per lock."""
        if self.locked_since is None:
            self.locked_since = time.monotonic()
            log.warning("judge: %s; serving its answers and keeping new ones in memory until it is free",
                        exc)
        if exc.waited_s:  # an attempt made, not one skipped in the interval after a refusal
            self.stats.cache_locked_writes += 1
            self.stats.cache_lock_wait_s += exc.waited_s

    async def _flush(self, interrupted: bool) -> None:
        """Write the answers still queued, or kept in memory while the cache was locked:
        retried with backoff for :data:`~conf.CACHE_FLUSH_WAIT_S` (one try when
        interrupted); what stays unsaved is counted, since a rerun pays for it again."""
        assert self.cache is not None and self.writes is not None
        deadline, delay = time.monotonic() + conf.CACHE_FLUSH_WAIT_S, conf.CACHE_RETRY_MIN_S / 4
        unsaved = self.writes.puts
        while unsaved:
            try:
                self.cache.put_many(unsaved, force=True)
                unsaved.clear()
            except CacheLocked as exc:
                self._locked(exc)
                if interrupted or time.monotonic() + delay > deadline:
                    break
                await asyncio.sleep(delay)
                delay *= 2
        if unsaved:
            self.stats.cache_unsaved += len(unsaved)
            log.warning("judge: %d answer(s) paid for in this run could not be saved: %s; a rerun pays for "
                        "them again", len(unsaved), CacheLocked(self.cache.path, 0.0))
            unsaved.clear()

    def _unlocked(self) -> None:
        if self.locked_since is not None:
            log.info("judge: the judge cache is writable again")
        self.locked_since = None

    async def _claim(self, key: str, force: bool, queued: bool) -> tuple[str, dict | None]:
        """:meth:`JudgeCache.claim`, or ``("locked", None)`` when its write was refused.
        ``queued``: in the write queue's next transaction (an item's first try); else at
        once, read-only while another run's claim stands (a waiter polling)."""
        assert self.cache is not None and self.writes is not None
        if queued:
            return await self.writes.claim(key)
        try:
            state = self.cache.claim(key, self.owner, self.config.claim_ttl, force=force)
        except CacheLocked as exc:
            self._locked(exc)
            return "locked", None
        if state[0] != "pending":
            self._unlocked()
        return state

    # ---- cache, claims, dedup

    async def answer(self, messages: Messages, params: Mapping[str, Any], attempt: int, draw: int = 0) -> dict:
        """The answer for this exact request: this batch's, the cache's (also one
        another run is fetching right now), or a new HTTP call. ``draw``: which extra
        sample of a short sampled reply this is (see :func:`cache_key`)."""
        cfg = self.config
        key = cache_key(cfg.endpoint, cfg.model, messages, params, attempt, draw)
        task = self.shared.get(key)
        if task is not None:
            result = await task
            self.stats.cache_hits += 1
            return result
        task = asyncio.ensure_future(self._resolve(key, messages, params, attempt, draw))
        self.shared[key] = task
        try:
            return await task
        except BaseException:
            self.shared.pop(key, None)
            raise

    async def _resolve(self, key: str, messages: Messages, params: Mapping[str, Any], attempt: int,
                       draw: int = 0) -> dict:
        cache = self.cache
        if cache is None:
            return self._store(key, messages, params, attempt, await self.client.http(messages, params), draw)
        hit = cache.get(key)
        if hit is not None:
            self._count(hit, cached=True)
            return hit
        waited_since: float | None = None
        poll, force = conf.CLAIM_POLL_MIN_S, False
        while True:
            # claim under a concurrency slot: a claim then means "in flight", not "queued"
            await self.client.slots.acquire()
            try:
                state, hit = await self._claim(key, force, queued=waited_since is None and not force)
            except BaseException:
                self.client.slots.release()
                raise
            if state == "answer":
                self.client.slots.release()
                self._count(hit, cached=True)
                return hit  # type: ignore[return-value]
            if state == "locked":
                assert self.locked_since is not None
                if time.monotonic() - self.locked_since > conf.CACHE_CLAIM_WAIT_S:
                    # the lock outlasted the wait: pay without a claim rather than stall the run
                    self.stats.cache_unclaimed += 1
                    return self._store(key, messages, params, attempt,
                                       await self.client.http(messages, params, slot_held=True), draw)
                self.client.slots.release()
                await asyncio.sleep(poll)
                poll = min(poll * 1.5, conf.CLAIM_POLL_MAX_S)
                continue
            if state != "pending":
                if state == "taken_over":
                    self.stats.claims_taken_over += 1
                    log.info("judge: took over an abandoned claim on one item at %s", self.config.shown_endpoint)
                self.held.add(key)
                try:
                    response = await self.client.http(messages, params, slot_held=True)
                except BaseException:
                    try:
                        cache.release(key, self.owner)  # another run may take it now
                    except CacheLocked as exc:
                        self._locked(exc)
                    raise
                finally:
                    self.held.discard(key)
                return self._store(key, messages, params, attempt, response, draw)
            self.client.slots.release()
            now = time.monotonic()
            if waited_since is None:
                waited_since = now
                self.stats.claim_waits += 1
            elif now - waited_since > self.config.claim_wait_s:
                log.warning("judge: another run has held one item for %.0f s; requesting it here too",
                            now - waited_since)
                force = True
                continue
            await asyncio.sleep(poll)
            poll = min(poll * 1.5, conf.CLAIM_POLL_MAX_S)

    def _store(self, key: str, messages: Messages, params: Mapping[str, Any], attempt: int,
               response: dict, draw: int = 0) -> dict:
        """Keep an answer: masked, queued for the cache (releasing its claim), counted."""
        response, response_text = secrets.masked_json(response, self.secrets)
        # No await between receiving and queueing: once answered, the answer is kept.
        if self.writes is not None:
            record: dict[str, Any] = {"messages": messages, "params": dict(params), "attempt": attempt}
            if draw:
                record["draw"] = draw
            request_text = secrets.masked_json(record, self.secrets)[1]
            self.writes.put((key, self.shown_endpoint, self.config.model, request_text, response_text))
        self._count(response, cached=False)
        return response

    def _count(self, response: Mapping[str, Any], cached: bool) -> None:
        self.answered = True
        usage = response.get("usage") or {}
        pt, ct = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        if cached:
            self.stats.cache_hits += 1
            self.stats.cached_prompt_tokens += pt
            self.stats.cached_completion_tokens += ct
        else:
            self.stats.answers += 1
            self.stats.prompt_tokens += pt
            self.stats.completion_tokens += ct

    # ---- items

    def choice_texts(self, response: Mapping[str, Any], asked: int) -> list[str]:
        """The reply texts of up to ``asked`` choices; a reply with fewer is counted
        (``choices_short``, ``choices_missing``) where it is read."""
        texts = [(c.get("message") or {}).get("content") or "" for c in (response.get("choices") or [])][:asked]
        if len(texts) < asked:
            self.stats.choices_short += 1
            self.stats.choices_missing += asked - len(texts)
        return texts

    def _scored(self, item: ItemScore) -> ItemScore:
        self.stats.scored += 1
        self.finished += 1
        return item

    async def score_item(self, messages: Messages, scale: Scale) -> ItemScore:
        """Score one request; a reply without a valid score is asked once more.

        A request that fails for good on a transient fault fails this item only
        (counted by reason, logged with the endpoint); other errors (a rejected key,
        an unknown model, no answer at all within the first wait) are counted for this
        item and end the batch, since every item would fail the same way.
        """
        try:
            first = await self.reader.attempt(self, messages, scale, 0)
            if first.score is not None:
                return self._scored(first)
            self.stats.parse_retries += 1
            second = await self.reader.attempt(self, messages, scale, 1)
        except BudgetExhausted:
            # not judged, not failed: a later run with a higher cap judges it (cached answers are free)
            self.stats.count_failure("budget", 0)
            self.finished += 1
            return ItemScore(None, None, [], "budget")
        except JudgeRequestError as exc:
            if not exc.transient:
                self.stats.count_failure(exc.reason or "error", exc.attempts)
                self.finished += 1
                raise
            return self._item_failed(exc)
        if second.score is None:
            self.stats.parse_failures += 1
            self.finished += 1
            log.debug("judge: no valid score in %s then %s", self.mask(repr(first.replies)),
                      self.mask(repr(second.replies)))
            return ItemScore(None, second.mode, first.replies + second.replies, "parse")
        return self._scored(second)

    def _item_failed(self, exc: JudgeRequestError) -> ItemScore:
        reason = exc.reason or "connection"
        self.stats.count_failure(reason, exc.attempts)
        self.finished += 1
        self.failures.append(exc)
        log.warning("judge item not scored (counted as failed, %s): %s", reason, self.mask(str(exc)))
        if not self.answered and len(self.failures) >= min(conf.FAIL_FAST_ITEMS, self.n_items):
            first = self.failures[0]
            rest = max(0, self.n_items - self.finished)  # counted as "abandoned" by score_all
            raise JudgeRequestError(
                f"judge at {self.config.shown_endpoint} (model {self.config.model!r}) answered none of "
                f"the first {len(self.failures)} items ({self.stats.summary_line()})"
                + (f"; giving up on the other {rest}" if rest else "") + f". First failure: {first}",
                status=first.status, reason=first.reason, attempts=first.attempts)
        return ItemScore(None, None, [], reason)

    async def score_all(self, requests: Sequence[Messages], scales: Sequence[Scale], desc: str) -> list[ItemScore]:
        """Every item of the batch, concurrently. When the batch stops on an error,
        the items it had not finished are counted as ``abandoned``, so that the stats
        still account for every item."""
        from custom_metrics.progress import bar as progress_bar

        self.n_items = len(requests)
        self.client.desc = desc
        self.client.first_wave(self.n_items)
        bar = progress_bar(len(requests), desc, unit="item", enabled=self.config.progress,
                           min_total=conf.PROGRESS_MIN_ITEMS)
        tasks = [asyncio.ensure_future(self.score_item(list(m), s)) for m, s in zip(requests, scales)]
        for t in tasks:
            t.add_done_callback(lambda _t: bar.update(1))
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException as exc:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if isinstance(exc, JudgeError):
                self.stats.count_failure("abandoned", 0, self.n_items - self.finished)
            raise
        finally:
            bar.close()

