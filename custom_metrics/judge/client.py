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
* Requests in flight, when unset, start with a first wave that widens until the first
  answer and adapt to the answers' latency and to 429/503/timeouts
  (:mod:`custom_metrics.judge.pacing`); an unset timeout follows the slowest answer
  (package docstring, "Sizing"). No request goes alone to measure.
* Requests are posted as the JSON body they are (``client.post``, the ``openai``
  client's own way to call any endpoint, with its authentication, errors and
  timeouts) and replies read from the raw body into a dict. ``chat.completions.create``
  would first walk the request against its typed parameter definitions (about 0.4 ms
  of CPU per call, for a body of plain strings and numbers it leaves unchanged) and
  build typed reply objects only for them to be dumped back (about 0.2 ms).
* **A deadline per attempt, not per read.** The timeout bounds each attempt as a
  whole (connect, send and every read, ``asyncio.timeout``), not only the wait for
  each byte, which is all an HTTP client's read timeout bounds: a server or gateway
  that drips its reply one byte every 2 s would otherwise hold one request for
  minutes under a 5 s timeout. Across retries a request thus ends within
  ``(judge_max_retries + 1) x timeout`` plus its backoffs (each at most
  ``backoff_cap_s``, or a ``Retry-After`` up to 60 s), however the server behaves.
  An unset timeout that grows (the first answer sizes it for the queue in flight, a
  slower answer or timeouts raise it) moves the deadlines of the attempts already in
  flight too, never earlier: they were sent under the same queue, and the first wave
  (sent with :data:`~custom_metrics.judge.config.FIRST_TIMEOUT_S`, up to 16 at once)
  would otherwise time out at the back of a slow one-at-a-time server's queue and be
  paid for twice.
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
import importlib
import logging
import random
import threading
import time
from collections.abc import Mapping
from typing import Any

from custom_metrics import secrets
from custom_metrics.judge import budget
from custom_metrics.judge import config as conf
from custom_metrics.judge.budget import BudgetExhausted
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


def completion_dict(body: bytes | str | Any) -> dict:
    """The reply body as a dict, or :class:`InvalidReply` when it is not a chat completion
    (not JSON: a proxy's HTML page, a truncated body; or a JSON value without
    ``choices``, such as ``{"error": ...}`` with status 200)."""
    if isinstance(body, (bytes, str)):
        try:
            data = json.loads(body)
        except ValueError:  # JSONDecodeError and UnicodeDecodeError alike
            raise InvalidReply(f"body is not JSON: {body[:200]!r}") from None
    else:
        data = body.to_dict(mode="json") if hasattr(body, "to_dict") else body
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise InvalidReply(f"JSON without 'choices': {json.dumps(data, default=str)[:200]}")
    return data


_TLS: list[Any] = []  # the process's TLS context, once made (see tls_context)
_TLS_LOCK = threading.Lock()


def tls_context() -> Any:
    """The TLS context every batch's HTTP client uses: the HTTP package's own default
    (the package ``openai`` is built on, honouring ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``),
    made once per process; None when that package offers no way to make it (each client
    then makes its own).

    Why once: loading the certificate store costs about 20 ms of CPU, and each batch
    makes a new client (a run judges a batch per metric and task): against a local
    server that was 0.1-0.2 ms per call of a 100-200-call batch, for a context that
    is the same every time. An ``SSLContext`` may be shared by many connections.
    """
    with _TLS_LOCK:
        if not _TLS:
            ctx = None
            try:
                from openai import DefaultAsyncHttpxClient

                base = next(c for c in DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
                ctx = importlib.import_module(base.__module__.partition(".")[0]).create_ssl_context()
            except (ImportError, AttributeError, StopIteration, OSError) as exc:
                log.debug("judge: no shared TLS context (%s); each client makes its own", exc)
            _TLS.append(ctx)
        return _TLS[0]


class Slots:
    """The bound on requests in flight: a FIFO semaphore whose size may change in use.

    Why not ``asyncio.Semaphore``: pacing (:mod:`custom_metrics.judge.pacing`) moves the
    bound as answers come, and a semaphore's size is fixed when it is made. A
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

    def saturated(self) -> bool:
        """Every slot taken (or waited for): a larger bound would send more now."""
        return self.in_use + len(self._waiters) >= self.limit

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
    pacing, retries with backoff. Used as ``async with Client(config, stats) as c``."""

    def __init__(self, config: JudgeConfig, stats: JudgeStats) -> None:
        from custom_metrics.judge.pacing import Pacer

        self.config = config
        self.stats = stats
        self.client: Any = None
        # Sizing (package docstring): what is set is used as given; what is unset adapts.
        self.timeout_set = config.timeout is not None
        self.concurrency_set = config.concurrency is not None
        self.timeout_s: float = config.timeout if config.timeout is not None else conf.FIRST_TIMEOUT_S
        self.slots = Slots(int(config.concurrency) if self.concurrency_set else conf.START_CONCURRENCY)
        self.pacer = Pacer(self.slots, config.concurrency)
        self.timed_out_requests: set[int] = set()  # requests that timed out in this generation
        # the deadline of each attempt in flight, and when it was sent (loop time): moved when
        # an unset timeout grows (module docstring)
        self.deadlines: dict[asyncio.Timeout, float] = {}
        self.posted = 0  # requests posted and not yet answered (the pacer's "posted")
        self.last_post_at = 0.0  # loop time of the last request posted
        self._widening: asyncio.TimerHandle | None = None  # the first wave's next widening
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
        tls = tls_context()
        http = None
        if tls is not None:
            from openai import DefaultAsyncHttpxClient  # the defaults AsyncOpenAI would use, and our TLS context

            http = DefaultAsyncHttpxClient(verify=tls, timeout=self.timeout_s)
        self.client = AsyncOpenAI(api_key=api_key, base_url=cfg.endpoint, max_retries=0, http_client=http,
                                  timeout=self.timeout_s)  # each request passes its own
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._widening is not None:
            self._widening.cancel()
        if self.calls_sent:
            self.stats.sizing.append(self.sizing_record())
        if self.client is not None:
            await self.client.close()

    # ---- sizing (timeout and requests in flight)

    def first_wave(self, requests: int) -> None:
        """Open the batch's first wave for ``requests`` items and widen it every
        :data:`~custom_metrics.judge.config.FIRST_WAVE_STEP_S` until the first answer
        (:mod:`custom_metrics.judge.pacing`). Called in the event loop, before any request."""
        self.pacer.first_wave(requests)
        if self.pacer.widening:
            self._widening = asyncio.get_running_loop().call_later(conf.FIRST_WAVE_STEP_S, self._widen)

    def _widen(self) -> None:
        """A step counts only once every request the bound lets out has been posted, from
        the last of them (:mod:`custom_metrics.judge.pacing`: a client slow to send its
        wave reads the first answer as late)."""
        loop = asyncio.get_running_loop()
        self._widening = None
        if not self.pacer.widening:
            return
        wait = self.last_post_at + conf.FIRST_WAVE_STEP_S - loop.time()
        if self.posted < self.slots.in_use or wait > 0:  # still sending, or sent less than a step ago
            self._widening = loop.call_later(max(wait, conf.FIRST_WAVE_STEP_S / 5), self._widen)
        elif self.pacer.widen():
            self._widening = loop.call_later(conf.FIRST_WAVE_STEP_S, self._widen)

    def sizing_record(self) -> dict[str, Any]:
        """What this batch used, for :attr:`JudgeStats.sizing` and the results."""
        pacer = self.pacer
        return {"batch": self.desc, "requests": self.calls_sent,
                "floor_latency_s": round(pacer.floor_s, 3) if pacer.answered else None,
                "timeout_s": round(self.timeout_s, 3), "timeout_source": "set" if self.timeout_set else "auto",
                "start_concurrency": pacer.start, "max_concurrency": self.slots.limit,
                "peak_concurrency": pacer.peak, "concurrency_decreases": pacer.decreases,
                "concurrency_trims": pacer.trims,
                "concurrency_source": "set" if self.concurrency_set else "auto",
                "timeout_adaptations": self.adaptations}

    def _answered_in(self, latency: float, saturated: bool, posted: int) -> None:
        first = not self.pacer.answered
        self.pacer.on_answer(latency, saturated, posted)
        if not self.timeout_set:
            # the first answer sizes the wait, for a queue as long as the requests in flight (a
            # one-at-a-time server answers the last of them that much later); a slower answer
            # later (a longer queue, longer prompts) raises it
            queue = self.slots.limit if first else 1
            wait = min(conf.AUTO_TIMEOUT_MAX_S,
                       max(conf.AUTO_TIMEOUT_FLOOR_S, conf.AUTO_LATENCY_FACTOR * latency * queue))
            if first or wait > self.timeout_s:
                self.timeout_s = wait if first else max(self.timeout_s, wait)
                self._extend_deadlines()

    def _extend_deadlines(self) -> None:
        """The attempts in flight wait up to the current timeout from their start, never
        less than they were given (module docstring, "A deadline per attempt")."""
        for deadline, started in self.deadlines.items():
            if not deadline.expired():  # one that fired is ending its attempt now
                deadline.reschedule(max(deadline.when() or 0.0, started + self.timeout_s))

    def _congested(self, generation: int, status: int) -> None:
        """A 429 or 503: fewer requests at once, where unset (once per burst)."""
        if self.pacer.on_congestion(generation):
            log.info("judge at %s: HTTP %d; %s now sends %d request(s) at once", self.config.shown_endpoint,
                     status, self.desc, self.slots.limit)

    def _timed_out(self, generation: int, request: int, timeout: float) -> None:
        """After timeouts of two different requests under the same settings: wait
        longer and send fewer at once, where unset. Why two: one request that hangs
        again on its retry says nothing about the server's load, while a queue that
        outgrew the timeout fails several at once. A burst adapts once, not n times
        (``generation``)."""
        if generation != self.pacer.generation or (self.timeout_set and self.concurrency_set):
            return
        self.timed_out_requests.add(request)
        if len(self.timed_out_requests) < 2:
            return
        self.timed_out_requests.clear()
        self.adaptations += 1
        if not self.timeout_set:
            self.timeout_s = min(conf.AUTO_TIMEOUT_MAX_S, self.timeout_s * 2)
            self._extend_deadlines()
        if not self.pacer.on_congestion(generation):
            self.pacer.generation += 1  # a set concurrency: the timeout alone adapted
        log.warning("judge at %s: a request timed out after %g s; %s now sends %d request(s) at once, "
                    "%g s each (to set them yourself, %s)", self.config.shown_endpoint, timeout, self.desc,
                    self.slots.limit, self.timeout_s, conf.TIMEOUT_HINT)

    def _timeout_text(self, timeout: float) -> str:
        how = ("set by judge_timeout / DOMSUM_JUDGE_TIMEOUT" if self.timeout_set else
               "sized from the answers' latency" + (f" (fastest {self.pacer.floor_s:.2f} s)"
                                                     if self.pacer.answered else ""))
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
            try:
                budget.take(cfg)  # judge_max_requests: BudgetExhausted sends nothing
            except BudgetExhausted:
                self.slots.release()
                raise
            # read under the slot: a request waiting for one gets the sizing of its time
            answered, generation, timeout = self.pacer.answered, self.pacer.generation, self.timeout_s
            # an unset timeout may grow while the attempt is in flight: the HTTP client's own
            # (per read) then waits as long as sizing ever allows, and the deadline decides
            reads = timeout if self.timeout_set else max(timeout, conf.AUTO_TIMEOUT_MAX_S)
            started = asyncio.get_running_loop().time()
            deadline = asyncio.timeout_at(started + timeout)  # the whole attempt, every read included
            try:
                t0 = time.monotonic()
                try:
                    self.stats.http_calls += 1
                    self.calls_sent += 1
                    async with deadline:
                        self.deadlines[deadline] = started
                        self.posted += 1
                        posted, self.last_post_at = self.posted, started
                        try:
                            body = await self.client.post("/chat/completions", cast_to=bytes,
                                                          body={"model": cfg.model, "messages": messages,
                                                                **params},
                                                          options={"timeout": reads})
                        finally:
                            del self.deadlines[deadline]
                            self.posted -= 1
                        data = completion_dict(body)
                finally:
                    saturated = self.slots.saturated()
                    self.slots.release()
                self._answered_in(time.monotonic() - t0, saturated, posted)
                return data
            except openai.APIStatusError as exc:
                if not retryable_status(exc.status_code):
                    raise JudgeRequestError(
                        f"judge request rejected with HTTP {exc.status_code} by {cfg.shown_endpoint} "
                        f"(model {cfg.model!r}): {self.mask(exc.message)}", status=exc.status_code,
                        body=secrets.mask_obj(exc.body, self.secrets)) from None
                last, hint, reason = exc, retry_after_s(exc.response), f"http_{exc.status_code}"
                if exc.status_code in conf.CONGESTION_STATUSES:
                    self._congested(generation, exc.status_code)
            except (openai.APITimeoutError, TimeoutError) as exc:
                last, reason = exc, "timeout"
                timeout = round((deadline.when() or started) - started, 3)  # as moved in flight
                if not answered and not self.pacer.answered and not self.timeout_set:
                    # no answer at all yet, after the longest wait sizing allows: waiting again
                    # would only repeat it, for every item; stop the batch and say what to set
                    raise JudgeRequestError(
                        f"judge at {cfg.shown_endpoint} (model {cfg.model!r}) answered none of the first "
                        f"requests of {self.desc} within {timeout:g} s: the server is hung or slower than "
                        f"that; {conf.TIMEOUT_HINT}", reason="timeout", attempts=attempt + 1) from None
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
