"""The judge's HTTP client: the official ``openai`` package's ``AsyncOpenAI`` against
any OpenAI-compatible ``/v1/chat/completions``, with bounded concurrency, sizing of
timeout and requests in flight, and retries with backoff, each counted in
:class:`~custom_metrics.judge.stats.JudgeStats` (``http_calls``, ``retries``, ``sizing``).

* The client's own retries are disabled (``max_retries=0``) so that every retry is
  ours: counted, bounded, with backoff and "equal jitter" (half the exponential delay
  plus a random half; a server's ``Retry-After`` is honoured up to 60 s). 429, 408,
  5xx, timeouts, connection errors and an HTTP 200 whose body is not a JSON chat
  completion are retried; other 4xx fail fast with a :class:`JudgeRequestError`
  naming status, endpoint and model, because a bad key or an unknown model will not
  heal by waiting.
* A resizable slot pool (:class:`Slots`) bounds the requests in flight: judge
  endpoints rate-limit, and a local vLLM server batches best with a steady load.
* Sizing (timeout or concurrency unset): the batch's first request goes alone as a
  latency probe; its latency sizes the rest (package docstring, "Sizing").
* The API key comes from the configuration only (the settings resolver reads the
  environment); every error text passes :func:`custom_metrics.secrets.mask`.

The sizing constants are read from :mod:`custom_metrics.judge.config` at run time.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import email.utils
import json
import logging
import random
import time
from collections.abc import Mapping
from typing import Any

from custom_metrics import secrets
from custom_metrics.judge import config as conf
from custom_metrics.judge.config import JudgeConfig, JudgeConfigError, JudgeRequestError, Messages
from custom_metrics.judge.stats import JudgeStats

log = logging.getLogger(__name__)


def retry_after_s(response: Any) -> float | None:
    """Seconds from ``Retry-After`` / ``retry-after-ms`` headers, if any."""
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    if headers.get("retry-after-ms"):
        try:
            return float(headers["retry-after-ms"]) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def retryable_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def describe_error(exc: BaseException) -> str:
    msg = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {msg}"


class InvalidReply(ValueError):
    """An HTTP 200 whose body is not a JSON chat completion (a proxy's HTML page, a
    truncated body, ``{"error": ...}`` with status 200): retried like a 5xx."""


REASON_TEXT = {"invalid_json": "HTTP 200 reply that is not a JSON chat completion",
                "timeout": "timeout", "connection": "connection error"}


def completion_dict(completion: Any) -> dict:
    """The reply as a dict, or :class:`InvalidReply` when it is not a chat completion.

    With a non-JSON content type the ``openai`` client returns the body as text; with
    a JSON content type but a bad body it raises ``JSONDecodeError`` (caught by the
    caller); a JSON value without ``choices`` is no completion either.
    """
    if isinstance(completion, (str, bytes)):
        raise InvalidReply(f"body is not JSON: {str(completion)[:200]!r}")
    data = completion.to_dict(mode="json") if hasattr(completion, "to_dict") else completion
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise InvalidReply(f"JSON without 'choices': {json.dumps(data, default=str)[:200]}")
    return data


class Slots:
    """The bound on requests in flight: a FIFO semaphore whose size may change in use.

    Why not ``asyncio.Semaphore``: sizing sets the bound after the latency probe and
    halves it after a timeout, and a semaphore's size is fixed when it is made. A
    lowered bound takes effect as requests in flight finish; none is interrupted.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.in_use = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self) -> None:
        if self.in_use < self.limit and not self._waiters:
            self.in_use += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        except BaseException:
            if fut.done() and not fut.cancelled():
                self.release()  # handed a slot just as we were cancelled: give it back
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(fut)
            raise

    def release(self) -> None:
        self.in_use -= 1
        self._wake()

    def resize(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_use < self.limit:
            fut = self._waiters.popleft()
            if not fut.done():
                self.in_use += 1  # the slot passes to the waiter directly: no overtaking
                fut.set_result(None)


class Client:
    """One batch's HTTP side: the ``openai`` client, the request slots and their
    sizing, retries with backoff. Used as ``async with Client(config, stats) as c``."""

    def __init__(self, config: JudgeConfig, stats: JudgeStats) -> None:
        self.config = config
        self.stats = stats
        self.client: Any = None
        # Sizing (package docstring): what is set is used as given; what is unset is
        # sized from the latency of the first request, which goes alone.
        self.timeout_set = config.timeout_s is not None
        self.concurrency_set = config.max_concurrency is not None
        self.probing = not (self.timeout_set and self.concurrency_set)
        self.timeout_s: float = config.timeout_s if config.timeout_s is not None else conf.PROBE_TIMEOUT_S
        self.slots = Slots(1 if self.probing else int(config.max_concurrency or 1))
        self.probe_latency_s: float | None = None
        self.generation = 0  # bumped by each adaptation, so one burst of timeouts adapts once
        self.timed_out_requests: set[int] = set()  # requests that timed out in this generation
        self.request_ids = 0
        self.adaptations = 0
        self.calls_sent = 0
        self.desc = "judge"
        self.secrets = secrets.known(config)

    def mask(self, text: Any) -> str:
        """Every error text we format passes here (see :mod:`custom_metrics.secrets`)."""
        return secrets.mask(text, self.config)

    async def __aenter__(self) -> "Client":
        from openai import AsyncOpenAI

        secrets.install_log_masking()  # httpx and openai log request URLs and bodies
        cfg = self.config
        api_key = cfg.api_key
        if not api_key:
            if cfg.endpoint == conf.OPENAI_BASE_URL:
                raise JudgeConfigError(
                    "judge endpoint is OpenAI but no API key is set: export OPENAI_API_KEY, "
                    "or point judge_base_url / OPENAI_BASE_URL at your own server "
                    "(a JudgeConfig built in code takes the key as api_key=)")
            api_key = "EMPTY"  # local servers (vLLM) accept any key unless started with --api-key
        self.client = AsyncOpenAI(api_key=api_key, base_url=cfg.endpoint, max_retries=0,
                                  timeout=self.timeout_s)  # each request passes its own
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self.calls_sent:
            self.stats.sizing.append(self.sizing_record())
        if self.client is not None:
            await self.client.close()

    # ---- sizing (timeout and requests in flight)

    def sizing_record(self) -> dict[str, Any]:
        """What this batch used, for :attr:`JudgeStats.sizing` and the results."""
        return {"batch": self.desc, "requests": self.calls_sent,
                "probe_latency_s": None if self.probe_latency_s is None else round(self.probe_latency_s, 3),
                "timeout_s": round(self.timeout_s, 3), "timeout_source": "set" if self.timeout_set else "auto",
                "max_concurrency": self.slots.limit,
                "concurrency_source": "set" if self.concurrency_set else "auto",
                "timeout_adaptations": self.adaptations}

    def _size_from(self, latency: float) -> None:
        """Size the batch from the probe's latency (package docstring, "Sizing")."""
        cfg = self.config
        lat = max(latency, 1e-3)
        if cfg.max_concurrency is not None:
            n = cfg.max_concurrency
        else:
            n = max(1, min(conf.DEFAULT_MAX_CONCURRENCY, int(conf.AUTO_QUEUE_BUDGET_S // lat)))
            if cfg.timeout_s is not None:  # a set timeout: no more in flight than it can wait for
                n = max(1, min(n, int(cfg.timeout_s // (2 * lat))))
        if cfg.timeout_s is None:
            self.timeout_s = min(conf.AUTO_TIMEOUT_MAX_S,
                                 max(conf.AUTO_TIMEOUT_FLOOR_S, conf.AUTO_TIMEOUT_FACTOR * lat * n))
        self.slots.resize(n)
        log.info("judge at %s: first reply in %.2f s; %s: %d request(s) in flight (%s), %g s per request (%s)",
                 cfg.shown_endpoint, latency, self.desc, n, "set" if self.concurrency_set else "sized",
                 self.timeout_s, "set" if self.timeout_set else "sized")

    def _answered_in(self, latency: float) -> None:
        if self.probing:
            self.probing = False
            self.probe_latency_s = latency
            self._size_from(latency)
        elif not self.timeout_set and conf.AUTO_LATENCY_FACTOR * latency > self.timeout_s:
            # answers come slower than sized (a busier server, longer prompts): wait longer
            self.timeout_s = min(conf.AUTO_TIMEOUT_MAX_S, conf.AUTO_LATENCY_FACTOR * latency)

    def _timed_out(self, generation: int, request: int, timeout: float) -> None:
        """After timeouts of two different requests under the same settings: wait
        longer and send fewer at once, where unset. Why two: one request that hangs
        again on its retry says nothing about the server's load, while a queue that
        outgrew the timeout fails several at once. A burst adapts once, not n times
        (``generation``)."""
        if self.probing or generation != self.generation or (self.timeout_set and self.concurrency_set):
            return
        self.timed_out_requests.add(request)
        if len(self.timed_out_requests) < 2:
            return
        self.timed_out_requests.clear()
        self.generation += 1
        self.adaptations += 1
        if not self.timeout_set:
            self.timeout_s = min(conf.AUTO_TIMEOUT_MAX_S, self.timeout_s * 2)
        if not self.concurrency_set:
            self.slots.resize(self.slots.limit // 2)
        log.warning("judge at %s: a request timed out after %g s; %s now sends %d request(s) at once, "
                    "%g s each (to set them yourself, %s)", self.config.shown_endpoint, timeout, self.desc,
                    self.slots.limit, self.timeout_s, conf.TIMEOUT_HINT)

    def _timeout_text(self, timeout: float) -> str:
        how = ("set by judge_timeout / DOMSUM_JUDGE_TIMEOUT" if self.timeout_set else
               "sized from the first reply's latency" + (f" ({self.probe_latency_s:.2f} s)"
                                                         if self.probe_latency_s is not None else ""))
        return f"no answer within {timeout:g} s per request ({how}); {conf.TIMEOUT_HINT}"

    # ---- HTTP with retries

    def backoff(self, attempt: int, hint: float | None) -> float:
        cfg = self.config
        exp = min(cfg.backoff_cap_s, cfg.backoff_base_s * (2 ** attempt))
        delay = exp / 2 + random.uniform(0, exp / 2)
        if hint is not None:
            delay = max(delay, min(hint, conf.RETRY_AFTER_MAX_S))
        return delay

    async def http(self, messages: Messages, params: Mapping[str, Any], slot_held: bool = False) -> dict:
        """One answer, retrying transient failures; non-retryable 4xx raise at once.

        ``slot_held``: the caller already holds a concurrency slot for the first
        attempt (it claimed the item under it); the slot is released after that
        attempt, and every later attempt takes its own, so backoff holds none.
        """
        import openai

        cfg = self.config
        last: BaseException | None = None
        reason = "connection"
        timeout = self.timeout_s
        self.request_ids += 1
        request = self.request_ids  # one id for all attempts of this request
        for attempt in range(cfg.max_retries + 1):
            hint = None
            if not slot_held:
                await self.slots.acquire()
            slot_held = False
            # read under the slot: a request waiting for one gets the sizing of its time
            probe, generation, timeout = self.probing, self.generation, self.timeout_s
            try:
                t0 = time.monotonic()
                try:
                    self.stats.http_calls += 1
                    self.calls_sent += 1
                    completion = await self.client.chat.completions.create(
                        model=cfg.model, messages=messages, timeout=timeout, **params)
                    data = completion_dict(completion)
                finally:
                    self.slots.release()
                self._answered_in(time.monotonic() - t0)
                return data
            except openai.APIStatusError as exc:
                if not retryable_status(exc.status_code):
                    raise JudgeRequestError(
                        f"judge request rejected with HTTP {exc.status_code} by {cfg.shown_endpoint} "
                        f"(model {cfg.model!r}): {self.mask(exc.message)}", status=exc.status_code,
                        body=secrets.mask_obj(exc.body, self.secrets)) from None
                last, hint, reason = exc, retry_after_s(exc.response), f"http_{exc.status_code}"
            except openai.APITimeoutError as exc:
                last, reason = exc, "timeout"
                if probe and not self.timeout_set:
                    # alone, with the longest wait sizing allows: waiting again would only
                    # repeat it, for every item; stop the batch and say what to set
                    raise JudgeRequestError(
                        f"judge at {cfg.shown_endpoint} (model {cfg.model!r}) did not answer the first request "
                        f"of {self.desc} (sent alone, to measure its latency) within {timeout:g} s: the "
                        f"server is hung or slower than that; {conf.TIMEOUT_HINT}", reason="timeout",
                        attempts=attempt + 1) from None
                self._timed_out(generation, request, timeout)
            except openai.APIConnectionError as exc:
                last, reason = exc, "connection"
            except (json.JSONDecodeError, UnicodeDecodeError, openai.APIResponseValidationError,
                    InvalidReply) as exc:
                last, reason = exc, "invalid_json"
            if attempt < cfg.max_retries:
                self.stats.retries += 1
                delay = self.backoff(attempt, hint)
                log.debug("judge: %s from %s; retry %d in %.2fs", self.mask(describe_error(last)),
                          cfg.shown_endpoint, attempt + 1, delay)
                await asyncio.sleep(delay)
        status = getattr(last, "status_code", None)
        what = self._timeout_text(timeout) if reason == "timeout" else self.mask(describe_error(last))
        raise JudgeRequestError(
            f"judge request to {cfg.shown_endpoint} (model {cfg.model!r}) still failing after "
            f"{cfg.max_retries + 1} attempts: {REASON_TEXT.get(reason, reason.replace('_', ' '))} "
            f"({what}). Answers so far are cached; re-run to resume.",
            status=status, reason=reason, attempts=cfg.max_retries + 1, transient=True) from None
