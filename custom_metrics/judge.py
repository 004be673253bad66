"""LLM-judge core: configuration, an async OpenAI-compatible client, a SQLite cache,
G-Eval-style scoring and a batch API.

Used by the AdaptEval judge metrics (``custom_metrics.judge_prompts``), the
re-scoring command (``domsum rescore``), FM and CCSBench. Settings (metadata, then the
environment) are resolved by ``lm_eval_tasks.settings.judge_config``, which builds a
:class:`JudgeConfig`; this module reads no settings itself beyond the cache default.

Design, and why:

* **Endpoint.** The official ``openai`` package's ``AsyncOpenAI`` against any
  OpenAI-compatible ``/v1/chat/completions`` (OpenAI, a vLLM server). The client's
  own retries are disabled (``max_retries=0``) so that every retry is ours: counted,
  bounded, with backoff and jitter we control.
* **Concurrency.** A resizable slot pool bounds the HTTP requests in flight
  (``max_concurrency``): judge endpoints rate-limit, and a local vLLM server batches
  best with a steady, bounded load.
* **Sizing (timeout and concurrency unset).** A fixed "8 in flight, 60 s each" times
  out on a CPU-served model (``transformers serve`` answers one request at a time, so
  the eighth waits for the seven before it). So when ``timeout_s`` or
  ``max_concurrency`` is None (the default), a batch's first HTTP request is a
  *latency probe*: sent alone, allowed :data:`PROBE_TIMEOUT_S`. Its latency L sizes
  the rest: in flight ``clamp(AUTO_QUEUE_BUDGET_S // L, 1, 8)`` (about 8 for a hosted
  API, 1 for a server that takes 15 s or more a request), per-request timeout
  ``max(AUTO_TIMEOUT_FLOOR_S, AUTO_TIMEOUT_FACTOR * L * in_flight)``, raised to
  ``AUTO_LATENCY_FACTOR`` times the slowest answer seen. Timeouts of two different
  requests after sizing (a queue that outgrew the timeout, not one hung request)
  double the timeout and halve the requests in flight. A probe with no answer in
  :data:`PROBE_TIMEOUT_S` stops the batch with a message naming ``judge_timeout`` /
  ``DOMSUM_JUDGE_TIMEOUT``. A value that is set is used exactly as given, never
  adapted: only the unset one is sized. What each batch used is recorded in
  :attr:`JudgeStats.sizing`.
* **Retries.** 429, 408, 5xx, timeouts and connection errors are retried with
  exponential backoff and "equal jitter" (half the exponential delay plus a random
  half; a server's ``Retry-After`` is honoured up to 60 s); other 4xx fail fast with a
  :class:`JudgeRequestError` naming status, endpoint and model, because a bad key or
  an unknown model will not heal by waiting.
* **Cache.** Every answer is written (and committed) to SQLite as it arrives, before
  it is parsed or used, keyed by a SHA-256 of (endpoint, model, messages, every
  sampling parameter sent, parse attempt). An interrupted run therefore resumes
  without paying twice, and an identical second run makes zero HTTP calls.
  The harness's own ``--use_cache`` keys on the request only, not on the model —
  ours keys on everything that changes the answer.
* **Claims.** Two runs sharing one cache must not both pay for an item. Right before
  its first request, a run *claims* the item: in the same SQLite transaction that
  finds the answer missing it writes a ``pending`` row (owner id, claimed-at time,
  expiry). Another run that meets a live claim waits (short, bounded polls, without
  holding a concurrency slot) for the answer instead of paying again. A claim is
  abandoned and may be taken over when its expiry passes (``claim_ttl_s``, kept fresh
  by a heartbeat while its owner runs) or at once when its owner process is gone
  (same host, pid not running: a killed run). A failed or cancelled request releases
  its claim.
* **Item failures.** A transient fault that outlasts the retries (429/5xx, a
  timeout, a reset connection, an HTTP 200 whose body is not a JSON chat completion)
  fails that item only: score ``None``, counted by reason in
  :attr:`JudgeStats.failed`, logged with the endpoint — never a crash, never a 0.
  Only when the first items of a batch (:data:`FAIL_FAST_ITEMS`, or all of a smaller
  batch) fail with no answer at all does the batch raise :class:`JudgeRequestError`:
  then the endpoint, not an item, is broken, and waiting out every other item's
  retries would only delay the error.
* **Empty generations** (empty or whitespace-only; pass ``generations=``) are not
  sent: score ``None``, counted in ``JudgeStats.empty_skipped``, never a parse
  failure and never a paid call.
* **Secrets.** Servers may echo the API key in an error body. Every message, log
  line and exception text we format goes through :func:`custom_metrics.secrets.mask`,
  which hides the configured key, the ``OPENAI_API_KEY`` / ``DOMSUM_JUDGE_API_KEY``
  values and URL credentials; cache rows (request, reply, endpoint) are masked the same way.
* **Scoring** (Liu et al., 2023, "G-Eval", Eq. 1): with log-probabilities, the score
  is the probability-weighted mean of the valid score tokens at the score position
  (the token where :func:`parse_score` reads the reply's score), renormalised over
  the valid tokens; without them (endpoint refuses or omits them), the mean of the
  scores parsed from ``n_samples`` sampled replies (G-Eval used n=20, temperature 1).
  ``logprobs="auto"`` tries log-probabilities first (one probe per batch; the other
  items wait for its answer) and falls back. Each item records its mode.
* **Fewer choices than asked.** Some servers ignore ``n`` (``transformers serve``
  always returns one choice). A sampled reply with fewer than ``n_samples`` choices
  is made up to ``n_samples`` with separate single-choice requests (each its own
  cache key, ``draw`` 1, 2, ...), so "the mean of n samples" means what it says on
  every server; :attr:`JudgeStats.choices_short` counts such replies,
  ``choices_missing`` the choices they lacked and ``sample_topups`` the requests that
  made them up (each also counted in ``http_calls`` or ``cache_hits``).
* **Parse failures.** A reply with no valid score is asked again once (a new
  request: the attempt index is part of the cache key) and then counted as a parse
  failure: score ``None``, excluded from means, reported — never scored 0. A reply
  off the scale or in another scale ("-1", "0", "7" or "5/10" on a 1-5 scale) has no
  valid score: it is never clipped or rescaled onto the scale.
* **Accounting.** Every item ends in exactly one of: scored (:attr:`JudgeStats.scored`),
  a parse failure, a request failure by reason (:attr:`JudgeStats.failed`, where
  ``abandoned`` counts the items a stopped batch never finished), or an empty
  generation skipped; ``scored + n_failed + empty_skipped == items``.
* **Sync entry point.** :func:`judge_scores` works from plain code (``asyncio.run``)
  and from inside a running event loop (a worker thread with its own loop), since
  the harness aggregates synchronously but notebooks run a loop.

No harness import: this is a plain metric library.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import email.utils
import hashlib
import json
import logging
import math
import os
import random
import re
import socket
import sqlite3
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeVar

from custom_metrics import secrets

log = logging.getLogger(__name__)

T = TypeVar("T")
Message = dict[str, str]
Messages = list[Message]
Scale = tuple[int, int]
LogprobsSetting = Literal["on", "off", "auto"]
Mode = Literal["logprobs", "samples"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_CACHE_PATH = "~/.cache/domsum/judge.sqlite"
CACHE_SCHEMA = 1
PROGRESS_MIN_ITEMS = 20
RETRY_AFTER_MAX_S = 60.0  # a server's Retry-After is honoured up to this, beyond our own cap
CLAIM_POLL_MIN_S = 0.02  # first poll of a waiter on another run's claim ...
CLAIM_POLL_MAX_S = 0.5   # ... growing to this: short waits stay snappy, long ones cheap
FAIL_FAST_ITEMS = 3  # items failing for good, with no answer yet, that prove the endpoint down
# Sizing when timeout_s / max_concurrency are unset (see the module docstring). Module
# constants, not settings: one number (the probe's latency) decides them, and tests
# shrink them to exercise a "slow" server in milliseconds.
DEFAULT_MAX_CONCURRENCY = 8  # in flight against a fast endpoint (and the most sizing picks)
PROBE_TIMEOUT_S = 300.0      # the first request of a batch, sent alone, waits up to this
AUTO_TIMEOUT_FLOOR_S = 60.0  # a sized per-request timeout is never shorter
AUTO_TIMEOUT_MAX_S = 900.0   # ... nor longer (a request this slow is a hung server)
AUTO_TIMEOUT_FACTOR = 4.0    # timeout >= this x probe latency x requests in flight
AUTO_LATENCY_FACTOR = 3.0    # timeout >= this x the slowest answer seen so far
AUTO_QUEUE_BUDGET_S = 15.0   # in flight <= this / probe latency: a serialising server's queue
TIMEOUT_HINT = ("raise judge_timeout / DOMSUM_JUDGE_TIMEOUT (seconds per request) or lower "
                "judge_concurrency / DOMSUM_JUDGE_CONCURRENCY (requests in flight; 1 for a CPU-served model)")
_OFF_VALUES = {"", "0", "off", "none", "false", "no", "disabled"}


# =========================================================================== errors


class JudgeError(RuntimeError):
    """Base class of judge errors."""


class JudgeConfigError(JudgeError, ValueError):
    """The judge is configured inconsistently (bad value, missing key)."""


class JudgeRequestError(JudgeError):
    """A judge request failed for good: a non-retryable status or retries exhausted.

    Answers received before the failure are already in the cache, so fixing the
    cause and re-running pays only for the rest. ``reason`` is the failure kind as
    counted in :attr:`JudgeStats.failed` (``http_<status>``, ``timeout``,
    ``connection``, ``invalid_json``); ``transient`` is True when retries were
    exhausted on a fault that may heal (the item is then counted, not fatal);
    ``attempts`` is how many requests were sent. Message and body are masked.
    """

    def __init__(self, message: str, status: int | None = None, body: Any = None, *,
                 reason: str | None = None, attempts: int = 1, transient: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.reason = reason or (f"http_{status}" if status else None)
        self.attempts = attempts
        self.transient = transient


# =========================================================================== config


def default_cache_path() -> str | None:
    """``DOMSUM_JUDGE_CACHE`` if set (``off`` disables caching), else ~/.cache/domsum."""
    env = os.environ.get("DOMSUM_JUDGE_CACHE")
    if env is not None:
        return None if env.strip().lower() in _OFF_VALUES else env
    return DEFAULT_CACHE_PATH


def normalize_endpoint(base_url: str | None) -> str:
    """The endpoint as keyed in the cache: OpenAI's URL when unset, no trailing slash."""
    return (base_url or OPENAI_BASE_URL).strip().rstrip("/")


@dataclass(frozen=True)
class JudgeConfig:
    """Everything that decides which judge answers, how, and where answers are cached.

    ``temperature`` applies to log-probability requests (0: the reply text is
    deterministic; the score comes from the distribution anyway), ``sample_temperature``
    and ``n_samples`` to the sampling fallback (G-Eval: 1 and 20). ``logprobs``:
    ``"on"`` (require them; an endpoint without them is an error), ``"off"`` (always
    sample), ``"auto"`` (try, fall back). ``cache_path=None`` disables the cache.
    ``claim_ttl_s``: how long another run's claim on an item is honoured without a
    heartbeat (default: three :attr:`nominal_timeout_s`; see :attr:`claim_ttl`).

    ``max_concurrency`` (requests in flight) and ``timeout_s`` (seconds per request)
    default to None: sized per batch from the latency of its first request (module
    docstring, "Sizing"), because no fixed pair suits both a hosted API and a model
    served on a CPU. A value that is set is used exactly as given.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    max_concurrency: int | None = None
    timeout_s: float | None = None
    max_retries: int = 5
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 30.0
    temperature: float = 0.0
    sample_temperature: float = 1.0
    max_tokens: int = 5
    n_samples: int = 20
    top_logprobs: int = 20
    logprobs: LogprobsSetting = "auto"
    seed: int | None = None
    cache_path: str | None = field(default_factory=default_cache_path)
    #: a bar on stderr per batch of at least PROGRESS_MIN_ITEMS requests (None: $DOMSUM_PROGRESS)
    progress: bool | None = None
    claim_ttl_s: float | None = None

    def __post_init__(self) -> None:
        problems = []
        if not self.model or not str(self.model).strip():
            problems.append("model must be a non-empty string")
        if self.max_concurrency is not None and self.max_concurrency < 1:
            problems.append(f"max_concurrency must be >= 1 (got {self.max_concurrency})")
        if self.timeout_s is not None and not self.timeout_s > 0:
            problems.append(f"timeout_s must be > 0 (got {self.timeout_s})")
        if self.max_retries < 0:
            problems.append(f"max_retries must be >= 0 (got {self.max_retries})")
        if self.backoff_base_s < 0 or self.backoff_cap_s < 0:
            problems.append("backoff_base_s and backoff_cap_s must be >= 0")
        if self.max_tokens < 1:
            problems.append(f"max_tokens must be >= 1 (got {self.max_tokens})")
        if self.n_samples < 1:
            problems.append(f"n_samples must be >= 1 (got {self.n_samples})")
        if not 1 <= self.top_logprobs <= 20:
            problems.append(f"top_logprobs must be in 1..20 (got {self.top_logprobs})")
        if self.logprobs not in ("on", "off", "auto"):
            problems.append(f"logprobs must be 'on', 'off' or 'auto' (got {self.logprobs!r})")
        if self.claim_ttl_s is not None and self.claim_ttl_s <= 0:
            problems.append(f"claim_ttl_s must be > 0 (got {self.claim_ttl_s})")
        if problems:
            raise JudgeConfigError("invalid JudgeConfig: " + "; ".join(problems))

    @property
    def endpoint(self) -> str:
        return normalize_endpoint(self.base_url)

    @property
    def nominal_timeout_s(self) -> float:
        """``timeout_s``, or :data:`AUTO_TIMEOUT_FLOOR_S` when it is sized per batch:
        the unit of the claim timings below, which must be known before any request."""
        return self.timeout_s if self.timeout_s is not None else AUTO_TIMEOUT_FLOOR_S

    @property
    def claim_ttl(self) -> float:
        """Seconds a claim stays valid without a heartbeat: ``claim_ttl_s``, else three
        request timeouts (a live owner refreshes it far more often than that)."""
        return self.claim_ttl_s if self.claim_ttl_s is not None else 3.0 * self.nominal_timeout_s

    @property
    def claim_wait_s(self) -> float:
        """The longest a run waits on another live run's claim before paying itself:
        every attempt of the other's retry chain at full timeout, the longest backoff
        between them, and one claim lifetime of slack. Bounded, so no wait hangs."""
        backoff = max(self.backoff_cap_s, RETRY_AFTER_MAX_S)
        return (self.max_retries + 1) * self.nominal_timeout_s + self.max_retries * backoff + self.claim_ttl

    @property
    def shown_endpoint(self) -> str:
        """The endpoint as every message, log line and file shows it: credentials masked."""
        return secrets.mask(self.endpoint, self)

    def describe(self) -> dict[str, Any]:
        """What to record beside the scores (never the API key). ``"auto"`` marks a
        timeout or concurrency sized per batch (the sizes used are in
        :attr:`JudgeStats.sizing`)."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("api_key", "progress")}
        d["base_url"] = self.shown_endpoint
        for name in ("max_concurrency", "timeout_s"):
            if d[name] is None:
                d[name] = "auto"
        return d


_NOTICE_LOCK = threading.Lock()
_NOTICE_EMITTED = False


def notice_judge_skipped(what: str = "judge metrics") -> bool:
    """Log, once per process, that judge metrics are skipped for lack of a judge.

    Returns True when this call emitted the notice. Tasks call it every time they
    would have judged; only the first call speaks, so logs stay readable.
    """
    global _NOTICE_EMITTED
    with _NOTICE_LOCK:
        if _NOTICE_EMITTED:
            return False
        _NOTICE_EMITTED = True
    log.warning(
        "%s skipped: no judge configured (set metadata 'judge_model' or DOMSUM_JUDGE_MODEL, "
        "optionally 'judge_base_url' / OPENAI_BASE_URL and OPENAI_API_KEY)", what)
    return True


def reset_judge_notice() -> None:
    """Let :func:`notice_judge_skipped` speak again (tests, long-lived services)."""
    global _NOTICE_EMITTED
    with _NOTICE_LOCK:
        _NOTICE_EMITTED = False


# =========================================================================== cache


def cache_key(endpoint: str | None, model: str, messages: Sequence[Mapping[str, Any]],
              params: Mapping[str, Any], attempt: int = 0, draw: int = 0) -> str:
    """SHA-256 over everything that changes the answer, in canonical JSON.

    ``draw`` tells apart the single-choice requests that make up a sampled reply
    with fewer choices than asked (1, 2, ...): the same request, a different sample.
    It is part of the key only when set, so every key of earlier runs stays valid.
    """
    payload: dict[str, Any] = {
        "schema": CACHE_SCHEMA,
        "endpoint": normalize_endpoint(endpoint),
        "model": model,
        "messages": [dict(m) for m in messages],
        "params": dict(params),
        "attempt": attempt,
    }
    if draw:
        payload["draw"] = draw
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


ClaimState = Literal["answer", "claimed", "taken_over", "pending"]

_LIVE_OWNERS: set[str] = set()  # claim owners of this process whose batch is still running
_LIVE_OWNERS_LOCK = threading.Lock()
_HOST = socket.gethostname()


def new_owner_id() -> str:
    """A claim owner id: ``host:pid:random``, so that a waiter on the same host can
    tell a killed owner (pid gone) from a slow one."""
    owner = f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
    with _LIVE_OWNERS_LOCK:
        _LIVE_OWNERS.add(owner)
    return owner


def retire_owner(owner: str) -> None:
    with _LIVE_OWNERS_LOCK:
        _LIVE_OWNERS.discard(owner)


def owner_alive(owner: str) -> bool:
    """False only when we know the owner is gone: a finished batch of this process,
    or a pid on this host that no longer runs. Other hosts: assume alive (the
    claim's expiry then decides)."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != _HOST or not pid_text.isdigit() or os.name != "posix":
        return True
    pid = int(pid_text)
    if pid == os.getpid():
        with _LIVE_OWNERS_LOCK:
            return owner in _LIVE_OWNERS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class JudgeCache:
    """SQLite store of judge answers (JSON), one row per cache key, and of claims.

    WAL mode lets other processes read while we write; ``synchronous=NORMAL``
    survives a killed process (not a power cut) at a fraction of the fsync cost.
    One connection per path and process, guarded by a lock, so the event loop and
    worker threads may share it. Transactions are explicit (``BEGIN IMMEDIATE``):
    a claim must be decided under the write lock, or two runs could both find an
    item missing and both pay for it.

    ``claims`` rows (``status`` ``pending``, ``owner``, ``claimed_at``,
    ``expires_at``) mark items whose request is in flight somewhere; storing the
    answer deletes the claim in the same transaction.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False,
                                     isolation_level=None)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            with self._tx():
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, endpoint TEXT, "
                    "model TEXT, request TEXT, response TEXT NOT NULL, created REAL)")
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, "
                    "status TEXT NOT NULL DEFAULT 'pending', owner TEXT NOT NULL, "
                    "claimed_at REAL NOT NULL, expires_at REAL NOT NULL)")

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (the caller holds ``self._lock``)."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._conn.execute("SELECT response FROM answers WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def claim(self, key: str, owner: str, ttl_s: float, force: bool = False) -> tuple[ClaimState, dict | None]:
        """Find the answer or claim the item, atomically.

        Returns ``("answer", response)`` when answered; ``("pending", None)`` when a
        live claim of another owner stands (wait, then ask again); else the claim is
        now ours: ``("claimed", None)``, or ``("taken_over", None)`` when we replaced
        an expired claim, one of a dead owner, or (``force``) one we waited on too long.
        """
        with self._lock:
            # read-only fast path: waiters poll without taking the write lock
            row = self._conn.execute("SELECT response FROM answers WHERE key = ?", (key,)).fetchone()
            if row:
                return "answer", json.loads(row[0])
            other = self._conn.execute("SELECT owner, expires_at FROM claims WHERE key = ?", (key,)).fetchone()
            if not force and other and other[0] != owner and other[1] > time.time() and owner_alive(other[0]):
                return "pending", None
            with self._tx() as conn:
                row = conn.execute("SELECT response FROM answers WHERE key = ?", (key,)).fetchone()
                if row:
                    return "answer", json.loads(row[0])
                other = conn.execute("SELECT owner, expires_at FROM claims WHERE key = ?", (key,)).fetchone()
                now = time.time()
                live = other is not None and other[0] != owner and other[1] > now and owner_alive(other[0])
                if live and not force:
                    return "pending", None
                conn.execute("INSERT OR REPLACE INTO claims VALUES (?, 'pending', ?, ?, ?)",
                             (key, owner, now, now + ttl_s))
        return ("taken_over" if other is not None and other[0] != owner else "claimed"), None

    def refresh(self, owner: str, ttl_s: float) -> int:
        """Extend every claim of ``owner`` (the heartbeat); returns how many."""
        with self._lock, self._tx() as conn:
            return conn.execute("UPDATE claims SET expires_at = ? WHERE owner = ?",
                                (time.time() + ttl_s, owner)).rowcount

    def release(self, key: str | None, owner: str) -> None:
        """Drop ``owner``'s claim on ``key`` (all its claims when ``key`` is None), so
        that another run may take the item at once instead of waiting for expiry."""
        with self._lock, self._tx() as conn:
            if key is None:
                conn.execute("DELETE FROM claims WHERE owner = ?", (owner,))
            else:
                conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))

    def pending(self) -> list[tuple[str, str, float]]:
        """Open claims as (key, owner, claimed_at): what a killed run left in flight."""
        with self._lock:
            return [tuple(r) for r in self._conn.execute("SELECT key, owner, claimed_at FROM claims")]

    def put(self, key: str, endpoint: str, model: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        """Insert and commit at once (the answer must survive an interruption), and
        drop the item's claim in the same transaction: waiters see the answer."""
        with self._lock, self._tx() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?)",
                (key, endpoint, model, json.dumps(request, ensure_ascii=False),
                 json.dumps(response, ensure_ascii=False), time.time()))
            conn.execute("DELETE FROM claims WHERE key = ?", (key,))

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


_CACHES: dict[str, JudgeCache] = {}
_CACHES_LOCK = threading.Lock()


def open_cache(path: str | os.PathLike) -> JudgeCache:
    """The process-wide :class:`JudgeCache` for ``path``."""
    resolved = str(Path(path).expanduser().resolve())
    with _CACHES_LOCK:
        cache = _CACHES.get(resolved)
        if cache is None:
            cache = _CACHES[resolved] = JudgeCache(resolved)
        return cache


def _usable_cache(config: JudgeConfig, stats: JudgeStats) -> JudgeCache | None:
    """The judge cache, or None (judging goes on without it) when it cannot be used.

    Why not an error: a cache that is corrupt, locked, read-only or a folder would
    otherwise stop the run after generation and cost the user their generations; without
    a cache every request is still made and scored, only not kept for a rerun. Said once
    on the log and recorded (``cache_unusable`` in the judge's usage).
    """
    if not config.cache_path:
        return None
    try:
        return open_cache(config.cache_path)
    except (sqlite3.Error, OSError) as exc:
        why = f"{type(exc).__name__}: {exc}"
        if stats.cache_unusable is None:
            log.warning("judge: the cache %s cannot be used (%s); judging without a cache, so replies are "
                        "not kept for a rerun. Fix or remove the file, or set judge_cache to another path "
                        "(or off).", config.cache_path, why)
        stats.cache_unusable = f"{config.cache_path}: {why}"
        return None


# =========================================================================== scoring


def score_values(scale: Scale) -> range:
    lo, hi = scale
    if lo > hi:
        raise ValueError(f"score scale {scale}: low end above high end")
    return range(int(lo), int(hi) + 1)


_NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
_RANGE_RE = re.compile(r"\d+(?:\.\d+)?\s*(?:-|\u2013|\u2014|\u2212|to)\s*\d+(?:\.\d+)?")
_MINUS = ("-", "\u2212", "\u2013", "\u2014")  # hyphen, minus sign, en and em dash right before a number
_DENOMINATOR_RE = re.compile(r"\s*(?:/|out\s+of\b|of\b)\s*(\d+(?:\.\d+)?)", re.I)


def _find_score(text: str | None, scale: Scale) -> tuple[float, int] | None:
    """(score, offset of its first character in ``text``), or None: see :func:`parse_score`."""
    if not text:
        return None
    # blank out ranges that echo the scale, keeping every offset where it was
    cleaned = _RANGE_RE.sub(lambda m: " " * len(m.group()), text)
    m = _NUMBER_RE.search(cleaned)
    if not m:
        return None
    if m.start() > 0 and cleaned[m.start() - 1] in _MINUS:
        return None  # "-1": a negative number is no score on any of our scales
    after = cleaned[m.end():]
    if after.lstrip().startswith("%"):
        return None  # "80%": a percentage, another scale
    lo, hi = scale
    denominator = _DENOMINATOR_RE.match(after)
    if denominator and float(denominator.group(1)) != float(hi):
        return None  # "5/10", "4 out of 10": a score on another scale, never rescaled
    value = float(m.group())
    return (value, m.start()) if lo <= value <= hi else None


def parse_score(text: str | None, scale: Scale) -> float | None:
    """The first number of a reply, if it is a score on ``scale``; else None.

    Ranges that echo the scale ("Coherence (1-5): 4") are skipped, so the 4 is read,
    not the 1. "4/5" and "4 out of 5" read 4 on a 1-5 scale. Not a score, so None
    (a parse failure, never coerced onto the scale): a number off the scale ("0",
    "7"), a negative one ("-1"), one on another scale ("5/10", "3 out of 10"), a
    percentage ("80%"). Why so strict: clipping "7" to 5 or reading "5/10" as 5 would
    turn a judge that misread the instructions into a confident score.
    """
    found = _find_score(text, scale)
    return None if found is None else found[0]


def score_from_logprobs(content: Sequence[Mapping[str, Any]] | None, scale: Scale,
                        text: str | None = None) -> float | None:
    """G-Eval's weighted score from chat-completion logprobs ``content``.

    The reply (``text``, else the tokens joined) must itself hold a valid score
    (:func:`parse_score`): a greedy reply "7", "-1" or "5/10" on a 1-5 scale is a
    judge answering off the scale, unparsable, whatever mass the alternatives carry.
    The score position is the token holding the first character of that score (the
    first numeric token when the tokens do not spell the reply). There, the
    probabilities of the chosen token and its ``top_logprobs`` alternatives that are
    valid scores (whitespace stripped; " 4" and "4" both count as 4) are summed per
    score and renormalised: score = sum_s s * p(s) / sum_s p(s). None when there is
    no valid score.
    """
    positions = list(content or ())
    tokens = [str(pos.get("token", "")) for pos in positions]
    joined = "".join(tokens)
    found = _find_score(text if text is not None else joined, scale)
    if found is None:
        return None
    index: int | None = None
    if text is None or joined == text:
        offset = 0
        for i, token in enumerate(tokens):
            if offset <= found[1] < offset + len(token):
                index = i
                break
            offset += len(token)
    if index is None:
        index = next((i for i, t in enumerate(tokens) if t.strip().isdecimal()), None)
    if index is None:
        return None
    valid = set(score_values(scale))
    pos = positions[index]
    mass: Counter[int] = Counter()
    seen: set[str] = set()
    for alt in [pos, *(pos.get("top_logprobs") or ())]:
        token = str(alt.get("token", ""))
        if token in seen:
            continue
        seen.add(token)
        stripped = token.strip()
        if stripped.isdecimal() and int(stripped) in valid:
            mass[int(stripped)] += math.exp(float(alt.get("logprob", -math.inf)))
    total = sum(mass.values())
    if total <= 0:
        return None
    return sum(s * p for s, p in mass.items()) / total


def score_from_samples(texts: Sequence[str | None], scale: Scale) -> float | None:
    """Mean of the valid scores parsed from sampled replies; None if none is valid."""
    scores = [s for s in (parse_score(t, scale) for t in texts) if s is not None]
    return sum(scores) / len(scores) if scores else None


# =========================================================================== results


#: how :meth:`JudgeStats.summary_line` names each failure reason
_REASON_WORDS = {"invalid_json": "invalid JSON", "timeout": "timeout", "connection": "connection error",
                 "abandoned": "not finished (the batch stopped)"}


@dataclass
class JudgeStats:
    """Counters of one batch (or several, when the same object is passed along).

    ``http_calls``: requests sent (each retry counts); ``answers``: successful
    answers received (each one cached at once); ``cache_hits``: requests served from
    the cache or by an identical request of the same batch; ``parse_retries``:
    second attempts after a reply without a valid score; ``parse_failures``: items
    left unscored; token counts are those of answers paid in this run
    (``cached_*``: those of answers reused from the cache).
    ``empty_skipped``: items whose generation was empty, never sent; ``failed``:
    items whose requests failed for good, by reason (``http_<status>``, ``timeout``,
    ``connection``, ``invalid_json``, ``abandoned``: not finished when a batch stopped
    on an endpoint-level error), and ``failed_tries`` the attempts each reason
    took; ``claim_waits``: items another run was already requesting, waited for
    instead of paid again; ``claims_taken_over``: expired or orphaned claims of
    another run that this run took over.

    ``scored``: items that got a score (or, for text replies, a parsed value); every
    item is counted once in exactly one of ``scored``, ``parse_failures``, ``failed``
    and ``empty_skipped`` (:attr:`accounted`). ``choices_short``: replies that held
    fewer choices than the ``n`` asked (servers that ignore ``n``);
    ``choices_missing``: the choices they lacked; ``sample_topups``: single-choice
    requests made to fill them (each also in ``http_calls`` or ``cache_hits``).
    ``sizing``: per batch that sent requests, the per-request timeout and requests in
    flight it used, whether each was set or sized (``auto``), the latency probe's
    seconds, and how often timeouts made it adapt.
    """

    items: int = 0
    scored: int = 0
    http_calls: int = 0
    answers: int = 0
    cache_hits: int = 0
    retries: int = 0
    parse_retries: int = 0
    parse_failures: int = 0
    empty_skipped: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    failed_tries: dict[str, int] = field(default_factory=dict)
    claim_waits: int = 0
    claims_taken_over: int = 0
    logprobs_fallbacks: int = 0
    choices_short: int = 0
    choices_missing: int = 0
    sample_topups: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    wall_s: float = 0.0
    sizing: list[dict[str, Any]] = field(default_factory=list)
    #: why the judge cache could not be used (judged without it), else None
    cache_unusable: str | None = None

    def count_failure(self, reason: str, tries: int, n: int = 1) -> None:
        if n <= 0:
            return
        self.failed[reason] = self.failed.get(reason, 0) + n
        self.failed_tries[reason] = max(self.failed_tries.get(reason, 0), tries)

    @property
    def accounted(self) -> int:
        """Items with a known outcome: ``scored + n_failed + empty_skipped``; equals
        ``items`` once every batch counted here has finished (a test invariant)."""
        return self.scored + self.n_failed + self.empty_skipped

    @property
    def n_failed(self) -> int:
        """Items without a score for a fault: request failures plus parse failures."""
        return sum(self.failed.values()) + self.parse_failures

    def failures_by_reason(self) -> dict[str, int]:
        """``parse``, each request-failure reason, and ``empty_skipped`` (zeros kept
        for ``parse`` and ``empty_skipped``, so readers need not guess)."""
        return {"parse": self.parse_failures, **dict(sorted(self.failed.items())),
                "empty_skipped": self.empty_skipped}

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["failed"] = self.failures_by_reason()
        d["total_tokens"] = self.prompt_tokens + self.completion_tokens
        d["wall_s"] = round(self.wall_s, 3)
        return d

    def summary_line(self) -> str:
        """One line for a human: how many items failed and why, e.g. "3 of 29 judge
        items failed: 2 invalid JSON after 3 tries, 1 timeout after 3 tries"."""
        parts: list[tuple[int, str]] = []
        for reason, n in self.failed.items():
            word = _REASON_WORDS.get(reason) or (f"HTTP {reason[5:]}" if reason.startswith("http_") else reason)
            tries = self.failed_tries.get(reason, 0)
            parts.append((n, f"{n} {word}" + (f" after {tries} tries" if tries > 1 else "")))
        if self.parse_failures:
            parts.append((self.parse_failures, f"{self.parse_failures} without a valid score (asked twice)"))
        parts.sort(key=lambda p: -p[0])
        n_failed = self.n_failed
        if n_failed:
            line = f"{n_failed} of {self.items} judge items failed: " + ", ".join(p[1] for p in parts)
        else:
            line = f"all {self.items - self.empty_skipped} judge items scored"
        if self.empty_skipped:
            noun = "summary" if self.empty_skipped == 1 else "summaries"
            line += f"; {self.empty_skipped} empty {noun} skipped (not sent)"
        if self.failed.get("timeout"):
            line += f"; to avoid timeouts {TIMEOUT_HINT}"
        if self.cache_unusable:
            line += "; judged without a cache (it cannot be used: see cache_unusable)"
        if self.choices_short:
            line += (f"; {self.choices_short} judge replies held fewer choices than asked "
                     f"({self.choices_missing} missing, made up with {self.sample_topups} single-choice requests)")
        return line


@dataclass
class JudgeResult:
    """Per-item scores (None = not scored), the mode each was scored in, replies,
    why each unscored item has no score (``reasons``: None when scored, else
    ``parse``, ``empty`` or a request-failure reason), stats."""

    scores: list[float | None]
    modes: list[str | None]
    replies: list[list[str]]
    stats: JudgeStats
    config: dict[str, Any] = field(default_factory=dict)
    reasons: list[str | None] = field(default_factory=list)
    #: the parsed value of each item (:func:`judge_texts`: what ``parse`` returned; None = not parsed)
    values: list[Any] = field(default_factory=list)

    @property
    def n_scored(self) -> int:
        return sum(s is not None for s in self.scores)

    @property
    def parse_failures(self) -> int:
        if not self.reasons:
            return len(self.scores) - self.n_scored
        return sum(r == "parse" for r in self.reasons)

    @property
    def empty_skipped(self) -> int:
        return sum(r == "empty" for r in self.reasons)

    @property
    def failed(self) -> dict[str, int]:
        """Unscored items by reason (``parse``, ``empty``, ``timeout``, ...)."""
        return dict(Counter(r for r in self.reasons if r))

    @property
    def mean(self) -> float | None:
        """Mean over scored items only; None when nothing was scored."""
        vals = [s for s in self.scores if s is not None]
        return sum(vals) / len(vals) if vals else None

    @property
    def mode(self) -> str:
        """``logprobs``, ``samples``, ``mixed``, or ``none`` (nothing scored)."""
        used = {m for m, s in zip(self.modes, self.scores) if s is not None and m}
        return used.pop() if len(used) == 1 else ("mixed" if used else "none")

    def summary(self) -> dict[str, Any]:
        return {"mean": self.mean, "n_scored": self.n_scored, "parse_failures": self.parse_failures,
                "failed": self.failed, "mode": self.mode, "stats": self.stats.as_dict()}


@dataclass
class _ItemScore:
    score: float | None
    mode: str | None
    replies: list[str]
    reason: str | None = None  # why there is no score (None when scored)
    value: Any = None  # a text item's parsed value (judge_texts)


# =========================================================================== engine

_UNSUPPORTED = object()  # a logprobs request the endpoint refused or answered without them


def _retry_after_s(response: Any) -> float | None:
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


def _retryable_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def _describe_error(exc: BaseException) -> str:
    msg = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {msg}"


class _InvalidReply(ValueError):
    """An HTTP 200 whose body is not a JSON chat completion (a proxy's HTML page, a
    truncated body, ``{"error": ...}`` with status 200): retried like a 5xx."""


_REASON_TEXT = {"invalid_json": "HTTP 200 reply that is not a JSON chat completion",
                "timeout": "timeout", "connection": "connection error"}


def _completion_dict(completion: Any) -> dict:
    """The reply as a dict, or :class:`_InvalidReply` when it is not a chat completion.

    With a non-JSON content type the ``openai`` client returns the body as text; with
    a JSON content type but a bad body it raises ``JSONDecodeError`` (caught by the
    caller); a JSON value without ``choices`` is no completion either.
    """
    if isinstance(completion, (str, bytes)):
        raise _InvalidReply(f"body is not JSON: {str(completion)[:200]!r}")
    data = completion.to_dict(mode="json") if hasattr(completion, "to_dict") else completion
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise _InvalidReply(f"JSON without 'choices': {json.dumps(data, default=str)[:200]}")
    return data


class _Slots:
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


class _BatchRun:
    """State of one batch: the client, the request slots and their sizing, the mode
    gate, in-flight requests, this run's claim owner id and the heartbeat that keeps
    its claims live."""

    def __init__(self, config: JudgeConfig, stats: JudgeStats, cache: JudgeCache | None) -> None:
        self.config = config
        self.stats = stats
        self.cache = cache
        self.client: Any = None
        # Sizing (module docstring): what is set is used as given; what is unset is
        # sized from the latency of the first request, which goes alone.
        self.timeout_set = config.timeout_s is not None
        self.concurrency_set = config.max_concurrency is not None
        self.probing = not (self.timeout_set and self.concurrency_set)
        self.timeout_s: float = config.timeout_s if config.timeout_s is not None else PROBE_TIMEOUT_S
        self.slots = _Slots(1 if self.probing else int(config.max_concurrency or 1))
        self.probe_latency_s: float | None = None
        self.generation = 0  # bumped by each adaptation, so one burst of timeouts adapts once
        self.timed_out_requests: set[int] = set()  # requests that timed out in this generation
        self.request_ids = 0
        self.adaptations = 0
        self.calls_sent = 0
        self.desc = "judge"
        self.short_warned = False
        # cache key -> task: identical requests of one batch share one call (in flight
        # or done), also when the SQLite cache is off
        self.shared: dict[str, asyncio.Task] = {}
        self.mode_lock = asyncio.Lock()
        # None = "auto", not yet known: the batch's first item probes for logprobs.
        self.mode: Mode | None = {"on": "logprobs", "off": "samples"}.get(config.logprobs)
        self.secrets = secrets.known(config)
        self.owner = ""
        self.held: set[str] = set()  # keys this run has claimed and not yet answered
        self._heartbeat_task: asyncio.Task | None = None
        self.failures: list[JudgeRequestError] = []  # items failed for good, this batch
        self.answered = False  # any answer (fresh or cached) in this batch
        self.n_items = 0
        self.finished = 0  # items whose outcome is counted (scored, parse failure, failed)

    def mask(self, text: Any) -> str:
        """Every error text we format passes here (see :mod:`custom_metrics.secrets`)."""
        return secrets.mask(text, self.config)

    # ---- client lifecycle

    async def __aenter__(self) -> "_BatchRun":
        from openai import AsyncOpenAI

        cfg = self.config
        api_key = cfg.api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            if cfg.endpoint == OPENAI_BASE_URL:
                raise JudgeConfigError(
                    "judge endpoint is OpenAI but no API key is set: export OPENAI_API_KEY, "
                    "or point judge_base_url / OPENAI_BASE_URL at your own server")
            api_key = "EMPTY"  # local servers (vLLM) accept any key unless started with --api-key
        self.client = AsyncOpenAI(api_key=api_key, base_url=cfg.endpoint, max_retries=0,
                                  timeout=self.timeout_s)  # each request passes its own
        if self.cache is not None:
            self.owner = new_owner_id()
            self._heartbeat_task = asyncio.ensure_future(self._heartbeat())
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self.calls_sent:
            self.stats.sizing.append(self.sizing_record())
        # claims first, without awaiting: a cancelled run must not leave them behind
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
        if self.cache is not None and self.owner:
            try:
                self.cache.release(None, self.owner)
            finally:
                retire_owner(self.owner)
        if self.client is not None:
            await self.client.close()
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
                except sqlite3.Error as exc:  # a busy database: the next beat tries again
                    log.debug("judge: claim heartbeat failed: %s", exc)

    # ---- request parameters (the same dict is sent and keyed)

    def params(self, mode: Mode) -> dict[str, Any]:
        cfg = self.config
        if mode == "logprobs":
            p: dict[str, Any] = {"temperature": cfg.temperature, "max_tokens": cfg.max_tokens, "n": 1,
                                 "logprobs": True, "top_logprobs": cfg.top_logprobs}
        else:
            p = {"temperature": cfg.sample_temperature, "max_tokens": cfg.max_tokens, "n": cfg.n_samples}
        if cfg.seed is not None:
            p["seed"] = cfg.seed
        return p

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
        """Size the batch from the probe's latency (module docstring, "Sizing")."""
        cfg = self.config
        lat = max(latency, 1e-3)
        if cfg.max_concurrency is not None:
            n = cfg.max_concurrency
        else:
            n = max(1, min(DEFAULT_MAX_CONCURRENCY, int(AUTO_QUEUE_BUDGET_S // lat)))
            if cfg.timeout_s is not None:  # a set timeout: no more in flight than it can wait for
                n = max(1, min(n, int(cfg.timeout_s // (2 * lat))))
        if cfg.timeout_s is None:
            self.timeout_s = min(AUTO_TIMEOUT_MAX_S, max(AUTO_TIMEOUT_FLOOR_S, AUTO_TIMEOUT_FACTOR * lat * n))
        self.slots.resize(n)
        log.info("judge at %s: first reply in %.2f s; %s: %d request(s) in flight (%s), %g s per request (%s)",
                 cfg.shown_endpoint, latency, self.desc, n, "set" if self.concurrency_set else "sized",
                 self.timeout_s, "set" if self.timeout_set else "sized")

    def _answered_in(self, latency: float) -> None:
        if self.probing:
            self.probing = False
            self.probe_latency_s = latency
            self._size_from(latency)
        elif not self.timeout_set and AUTO_LATENCY_FACTOR * latency > self.timeout_s:
            # answers come slower than sized (a busier server, longer prompts): wait longer
            self.timeout_s = min(AUTO_TIMEOUT_MAX_S, AUTO_LATENCY_FACTOR * latency)

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
            self.timeout_s = min(AUTO_TIMEOUT_MAX_S, self.timeout_s * 2)
        if not self.concurrency_set:
            self.slots.resize(self.slots.limit // 2)
        log.warning("judge at %s: a request timed out after %g s; %s now sends %d request(s) at once, "
                    "%g s each (to set them yourself, %s)", self.config.shown_endpoint, timeout, self.desc,
                    self.slots.limit, self.timeout_s, TIMEOUT_HINT)

    def _timeout_text(self, timeout: float) -> str:
        how = ("set by judge_timeout / DOMSUM_JUDGE_TIMEOUT" if self.timeout_set else
               "sized from the first reply's latency" + (f" ({self.probe_latency_s:.2f} s)"
                                                         if self.probe_latency_s is not None else ""))
        return f"no answer within {timeout:g} s per request ({how}); {TIMEOUT_HINT}"

    # ---- HTTP with retries

    def backoff(self, attempt: int, hint: float | None) -> float:
        cfg = self.config
        exp = min(cfg.backoff_cap_s, cfg.backoff_base_s * (2 ** attempt))
        delay = exp / 2 + random.uniform(0, exp / 2)
        if hint is not None:
            delay = max(delay, min(hint, RETRY_AFTER_MAX_S))
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
                    data = _completion_dict(completion)
                finally:
                    self.slots.release()
                self._answered_in(time.monotonic() - t0)
                return data
            except openai.APIStatusError as exc:
                if not _retryable_status(exc.status_code):
                    raise JudgeRequestError(
                        f"judge request rejected with HTTP {exc.status_code} by {cfg.shown_endpoint} "
                        f"(model {cfg.model!r}): {self.mask(exc.message)}", status=exc.status_code,
                        body=secrets.mask_obj(exc.body, self.secrets)) from None
                last, hint, reason = exc, _retry_after_s(exc.response), f"http_{exc.status_code}"
            except openai.APITimeoutError as exc:
                last, reason = exc, "timeout"
                if probe and not self.timeout_set:
                    # alone, with the longest wait sizing allows: waiting again would only
                    # repeat it, for every item; stop the batch and say what to set
                    raise JudgeRequestError(
                        f"judge at {cfg.shown_endpoint} (model {cfg.model!r}) did not answer the first request "
                        f"of {self.desc} (sent alone, to measure its latency) within {timeout:g} s: the "
                        f"server is hung or slower than that; {TIMEOUT_HINT}", reason="timeout",
                        attempts=attempt + 1) from None
                self._timed_out(generation, request, timeout)
            except openai.APIConnectionError as exc:
                last, reason = exc, "connection"
            except (json.JSONDecodeError, UnicodeDecodeError, openai.APIResponseValidationError,
                    _InvalidReply) as exc:
                last, reason = exc, "invalid_json"
            if attempt < cfg.max_retries:
                self.stats.retries += 1
                delay = self.backoff(attempt, hint)
                log.debug("judge: %s from %s; retry %d in %.2fs", self.mask(_describe_error(last)),
                          cfg.shown_endpoint, attempt + 1, delay)
                await asyncio.sleep(delay)
        status = getattr(last, "status_code", None)
        what = self._timeout_text(timeout) if reason == "timeout" else self.mask(_describe_error(last))
        raise JudgeRequestError(
            f"judge request to {cfg.shown_endpoint} (model {cfg.model!r}) still failing after "
            f"{cfg.max_retries + 1} attempts: {_REASON_TEXT.get(reason, reason.replace('_', ' '))} "
            f"({what}). Answers so far are cached; re-run to resume.",
            status=status, reason=reason, attempts=cfg.max_retries + 1, transient=True) from None

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
            return self._store(key, messages, params, attempt, await self.http(messages, params), draw)
        hit = cache.get(key)
        if hit is not None:
            self._count(hit, cached=True)
            return hit
        waited_since: float | None = None
        poll, force = CLAIM_POLL_MIN_S, False
        while True:
            # claim under a concurrency slot: a claim then means "in flight", not "queued"
            await self.slots.acquire()
            try:
                state, hit = cache.claim(key, self.owner, self.config.claim_ttl, force=force)
            except BaseException:
                self.slots.release()
                raise
            if state == "answer":
                self.slots.release()
                self._count(hit, cached=True)
                return hit  # type: ignore[return-value]
            if state != "pending":
                if state == "taken_over":
                    self.stats.claims_taken_over += 1
                    log.info("judge: took over an abandoned claim on one item at %s", self.config.shown_endpoint)
                self.held.add(key)
                try:
                    response = await self.http(messages, params, slot_held=True)
                except BaseException:
                    cache.release(key, self.owner)  # another run may take it now
                    raise
                finally:
                    self.held.discard(key)
                return self._store(key, messages, params, attempt, response, draw)
            self.slots.release()
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
            poll = min(poll * 1.5, CLAIM_POLL_MAX_S)

    def _store(self, key: str, messages: Messages, params: Mapping[str, Any], attempt: int,
               response: dict, draw: int = 0) -> dict:
        """Keep an answer: masked, cached (releasing its claim), counted."""
        response = secrets.mask_obj(response, self.secrets)
        # No await between receiving and storing: once answered, the answer is kept.
        if self.cache is not None:
            record: dict[str, Any] = {"messages": messages, "params": dict(params), "attempt": attempt}
            if draw:
                record["draw"] = draw
            request = secrets.mask_obj(record, self.secrets)
            self.cache.put(key, self.config.shown_endpoint, self.config.model, request,
                           response)
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

    # ---- scoring one item

    def _choice_texts(self, response: Mapping[str, Any], asked: int) -> list[str]:
        """The reply texts of up to ``asked`` choices; a reply with fewer is counted
        (``choices_short``, ``choices_missing``) where it is read."""
        texts = [(c.get("message") or {}).get("content") or "" for c in (response.get("choices") or [])][:asked]
        if len(texts) < asked:
            self.stats.choices_short += 1
            self.stats.choices_missing += asked - len(texts)
        return texts

    async def try_logprobs(self, messages: Messages, scale: Scale, attempt: int) -> Any:
        """(score, replies) in log-probability mode, or _UNSUPPORTED."""
        try:
            response = await self.answer(messages, self.params("logprobs"), attempt)
        except JudgeRequestError as exc:
            if exc.status == 400 and "logprob" in str(exc).lower():
                return _UNSUPPORTED
            raise
        choices = (response.get("choices") or [])[:1]
        texts = self._choice_texts(response, 1)
        if not choices:
            return None, []
        content = (choices[0].get("logprobs") or {}).get("content")
        if not content:
            return _UNSUPPORTED
        return score_from_logprobs(content, scale, texts[0]), texts

    async def try_samples(self, messages: Messages, scale: Scale, attempt: int) -> tuple[float | None, list[str]]:
        """(score, replies) from ``n_samples`` sampled replies.

        A server that returns fewer choices than asked (``transformers serve`` always
        returns one) is made up to ``n_samples`` with single-choice requests, each
        its own cache key (``draw``): the score is then the mean over ``n_samples``
        replies as G-Eval defines it, not over whatever came back. Counted in
        ``choices_short`` / ``choices_missing`` / ``sample_topups``.
        """
        n = self.config.n_samples
        params = self.params("samples")
        response = await self.answer(messages, params, attempt)
        texts = self._choice_texts(response, n)
        missing = n - len(texts)
        if missing > 0:
            if not self.short_warned:
                self.short_warned = True
                log.warning("judge %r at %s returned %d of the %d choices asked (n=%d); asking for the other "
                            "%d with single-choice requests, so that each score stays a mean of %d replies "
                            "(lower judge_n_samples / DOMSUM_JUDGE_N_SAMPLES to pay for fewer)",
                            self.config.model, self.config.shown_endpoint, len(texts), n, n, missing, n)
            single = {**params, "n": 1}
            self.stats.sample_topups += missing
            got = await asyncio.gather(*(self.answer(messages, single, attempt, draw=k)
                                         for k in range(1, missing + 1)), return_exceptions=True)
            for g in got:  # all finished (no orphan request): now the first failure, if any
                if isinstance(g, BaseException):
                    raise g
            for g in got:
                texts.extend(self._choice_texts(g, 1))  # type: ignore[arg-type]
        return score_from_samples(texts, scale), texts

    def _set_logprobs_support(self, supported: bool) -> None:
        self.mode = "logprobs" if supported else "samples"

    def _unsupported(self) -> None:
        if self.config.logprobs == "on":
            raise JudgeRequestError(
                f"judge {self.config.model!r} at {self.config.shown_endpoint} returned no log-probabilities "
                "but logprobs='on' requires them; use 'auto' to fall back to sampling", reason="no_logprobs")
        if self.mode != "samples":
            self.stats.logprobs_fallbacks += 1
            log.warning("judge %r at %s gives no log-probabilities: scoring by the mean of %d "
                        "sampled replies instead", self.config.model, self.config.shown_endpoint,
                        self.config.n_samples)
        self._set_logprobs_support(False)

    async def attempt_once(self, messages: Messages, scale: Scale, attempt: int) -> _ItemScore:
        if self.mode is None:  # auto, not yet known: the first item probes, the others wait
            async with self.mode_lock:
                if self.mode is None:
                    out = await self.try_logprobs(messages, scale, attempt)
                    if out is _UNSUPPORTED:
                        self._unsupported()
                    else:
                        self._set_logprobs_support(True)
                        return _ItemScore(out[0], "logprobs", out[1])
        if self.mode == "logprobs":
            out = await self.try_logprobs(messages, scale, attempt)
            if out is not _UNSUPPORTED:
                return _ItemScore(out[0], "logprobs", out[1])
            self._unsupported()
        score, texts = await self.try_samples(messages, scale, attempt)
        return _ItemScore(score, "samples", texts)

    def valid(self, item: _ItemScore) -> bool:
        """Whether an attempt produced what the item needs (here: a score)."""
        return item.score is not None

    def _scored(self, item: _ItemScore) -> _ItemScore:
        self.stats.scored += 1
        self.finished += 1
        return item

    async def score_item(self, messages: Messages, scale: Scale) -> _ItemScore:
        """Score one request; a reply without a valid score is asked once more.

        A request that fails for good on a transient fault fails this item only
        (counted by reason, logged with the endpoint); other errors (a rejected key,
        an unknown model, a latency probe without an answer) are counted for this
        item and end the batch, since every item would fail the same way.
        """
        try:
            first = await self.attempt_once(messages, scale, 0)
            if self.valid(first):
                return self._scored(first)
            self.stats.parse_retries += 1
            second = await self.attempt_once(messages, scale, 1)
        except JudgeRequestError as exc:
            if not exc.transient:
                self.stats.count_failure(exc.reason or "error", exc.attempts)
                self.finished += 1
                raise
            return self._item_failed(exc)
        if not self.valid(second):
            self.stats.parse_failures += 1
            self.finished += 1
            log.debug("judge: no valid score in %s then %s", self.mask(repr(first.replies)),
                      self.mask(repr(second.replies)))
            return _ItemScore(None, second.mode, first.replies + second.replies, "parse")
        return self._scored(second)

    def _item_failed(self, exc: JudgeRequestError) -> _ItemScore:
        reason = exc.reason or "connection"
        self.stats.count_failure(reason, exc.attempts)
        self.finished += 1
        self.failures.append(exc)
        log.warning("judge item not scored (counted as failed, %s): %s", reason, self.mask(str(exc)))
        if not self.answered and len(self.failures) >= min(FAIL_FAST_ITEMS, self.n_items):
            first = self.failures[0]
            rest = max(0, self.n_items - self.finished)  # counted as "abandoned" by score_all
            raise JudgeRequestError(
                f"judge at {self.config.shown_endpoint} (model {self.config.model!r}) answered none of "
                f"the first {len(self.failures)} items ({self.stats.summary_line()})"
                + (f"; giving up on the other {rest}" if rest else "") + f". First failure: {first}",
                status=first.status, reason=first.reason, attempts=first.attempts)
        return _ItemScore(None, None, [], reason)

    async def score_all(self, requests: Sequence[Messages], scales: Sequence[Scale], desc: str) -> list[_ItemScore]:
        """Every item of the batch, concurrently. When the batch stops on an error,
        the items it had not finished are counted as ``abandoned``, so that the stats
        still account for every item."""
        from custom_metrics.progress import bar as progress_bar

        self.n_items = len(requests)
        self.desc = desc
        bar = progress_bar(len(requests), desc, unit="item", enabled=self.config.progress,
                           min_total=PROGRESS_MIN_ITEMS)
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


class _TextRun(_BatchRun):
    """The batch engine for replies that are text, not a number (FM's facet JSON,
    CCSBench's focus label): one greedy reply per attempt (``config.temperature``,
    ``n`` 1), read by ``parse``; None is unparsable (asked once more, then a counted
    parse failure). Everything else — slots and sizing, retries, cache and claims,
    in-batch de-duplication, counting — is the core's, not a copy."""

    def __init__(self, config: JudgeConfig, stats: JudgeStats, cache: JudgeCache | None, *,
                 parse: Callable[[str], Any], max_tokens: int, score: Callable[[Any], float] | None,
                 mode: str) -> None:
        super().__init__(config, stats, cache)
        self.parse, self.max_tokens, self.score_of, self.text_mode = parse, max_tokens, score, mode

    def text_params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"temperature": self.config.temperature, "max_tokens": self.max_tokens, "n": 1}
        if self.config.seed is not None:
            p["seed"] = self.config.seed
        return p

    async def attempt_once(self, messages: Messages, scale: Scale, attempt: int) -> _ItemScore:
        response = await self.answer(messages, self.text_params(), attempt)
        texts = self._choice_texts(response, 1)
        text = texts[0] if texts else ""
        value = self.parse(text)
        if value is None:
            return _ItemScore(None, self.text_mode, [text])
        score = float(self.score_of(value)) if self.score_of is not None else 1.0
        return _ItemScore(score, self.text_mode, [text], value=value)


# =========================================================================== public API


def _expand_scales(scale: Scale | Sequence[Scale], n: int) -> list[Scale]:
    if len(scale) == 2 and all(isinstance(v, (int, float)) for v in scale):  # one scale for all
        return [tuple(scale)] * n  # type: ignore[list-item]
    scales = [tuple(s) for s in scale]  # type: ignore[union-attr]
    if len(scales) != n:
        raise ValueError(f"judge_scores: {n} requests but {len(scales)} scales")
    return scales  # type: ignore[return-value]


def _validate_requests(requests: Sequence[Messages]) -> None:
    for i, msgs in enumerate(requests):
        if not msgs or not all(isinstance(m, Mapping) and "role" in m and "content" in m for m in msgs):
            raise ValueError(f"judge request {i} is not a list of {{'role', 'content'}} messages")


def is_empty_generation(text: str | None) -> bool:
    """True for a generation with nothing to judge (None, empty, whitespace only)."""
    return not (text or "").strip()


async def _judge_batch(make_run: Callable[[JudgeConfig, JudgeStats, JudgeCache | None], _BatchRun],
                       requests: Sequence[Messages], scales: Sequence[Scale], config: JudgeConfig,
                       stats: JudgeStats | None, desc: str,
                       generations: Sequence[str | None] | None) -> JudgeResult:
    """One batch through an engine (scores or texts): empty generations left out and
    counted, the rest judged, every item's outcome in the result and the stats."""
    if generations is not None and len(generations) != len(requests):
        raise ValueError(f"judge: {len(requests)} requests but {len(generations)} generations")
    stats = stats if stats is not None else JudgeStats()
    stats.items += len(requests)
    todo = [i for i in range(len(requests))
            if generations is None or not is_empty_generation(generations[i])]
    stats.empty_skipped += len(requests) - len(todo)
    items = [_ItemScore(None, None, [], "empty") for _ in requests]
    if todo:
        cache = _usable_cache(config, stats)
        t0 = time.perf_counter()
        try:
            async with make_run(config, stats, cache) as run:
                scored = await run.score_all([requests[i] for i in todo], [scales[i] for i in todo], desc)
        finally:
            stats.wall_s += time.perf_counter() - t0
        for i, item in zip(todo, scored):
            items[i] = item
    return JudgeResult(scores=[i.score for i in items], modes=[i.mode for i in items],
                       replies=[i.replies for i in items], stats=stats, config=config.describe(),
                       reasons=[i.reason for i in items], values=[i.value for i in items])


async def judge_scores_async(
    requests: Sequence[Messages],
    scale: Scale | Sequence[Scale],
    config: JudgeConfig,
    *,
    stats: JudgeStats | None = None,
    desc: str = "judge",
    generations: Sequence[str | None] | None = None,
) -> JudgeResult:
    """Async form of :func:`judge_scores`.

    ``stats`` may be passed to watch progress (it is updated in place), e.g. to see
    how many answers were cached before a cancellation.
    """
    _validate_requests(requests)
    scales = _expand_scales(scale, len(requests))
    for s in set(scales):
        score_values(s)
    return await _judge_batch(_BatchRun, requests, scales, config, stats, desc, generations)


async def judge_texts_async(
    requests: Sequence[Messages],
    parse: Callable[[str], Any],
    config: JudgeConfig,
    *,
    max_tokens: int | None = None,
    score: Callable[[Any], float] | None = None,
    mode: str = "text",
    stats: JudgeStats | None = None,
    desc: str = "judge texts",
    generations: Sequence[str | None] | None = None,
) -> JudgeResult:
    """Async form of :func:`judge_texts`."""
    _validate_requests(requests)
    tokens = int(max_tokens or config.max_tokens)
    if tokens < 1:
        raise ValueError(f"judge_texts: max_tokens must be >= 1 (got {max_tokens})")

    def make_run(c: JudgeConfig, st: JudgeStats, cache: JudgeCache | None) -> _BatchRun:
        return _TextRun(c, st, cache, parse=parse, max_tokens=tokens, score=score, mode=mode)

    return await _judge_batch(make_run, requests, [(0, 1)] * len(requests), config, stats, desc, generations)


def judge_texts(
    requests: Sequence[Messages],
    parse: Callable[[str], Any],
    config: JudgeConfig,
    *,
    max_tokens: int | None = None,
    score: Callable[[Any], float] | None = None,
    mode: str = "text",
    stats: JudgeStats | None = None,
    desc: str = "judge texts",
    generations: Sequence[str | None] | None = None,
) -> JudgeResult:
    """One parsed text reply per request (FM's facet JSON, CCSBench's focus word).

    Why beside :func:`judge_scores`: these judges answer in words, not on a number
    scale, yet need the same engine (sizing, retries, cache and claims, counting).
    Each attempt is one greedy reply (``config.temperature``, ``n`` 1, ``max_tokens``
    or ``config.max_tokens``) passed to ``parse``; None means unparsable: asked once
    more (a new cache key), then a counted parse failure. The result's ``values`` hold
    what ``parse`` returned (None when unscored, ``reasons`` saying why), ``scores``
    ``score(value)`` (1.0 without ``score``), ``modes`` ``mode``. Errors and empty
    generations are handled as in :func:`judge_scores`.
    """
    return run_sync(lambda: judge_texts_async(requests, parse, config, max_tokens=max_tokens, score=score,
                                              mode=mode, stats=stats, desc=desc, generations=generations))


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code, with or without a running loop.

    Without a loop in this thread: ``asyncio.run``. Inside one (a notebook, an async
    caller), blocking it would deadlock, so the coroutine runs on a fresh loop in a
    worker thread and this call waits for it.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def judge_scores(
    requests: Sequence[Messages],
    scale: Scale | Sequence[Scale],
    config: JudgeConfig,
    *,
    stats: JudgeStats | None = None,
    desc: str = "judge",
    generations: Sequence[str | None] | None = None,
) -> JudgeResult:
    """Score chat requests with the judge: one score per request, batched and cached.

    ``requests``: one list of ``{"role", "content"}`` messages per item. ``scale``:
    ``(low, high)`` for all items, or one per item. Returns a :class:`JudgeResult`
    with per-item scores (None = no valid score after one retry: a parse failure,
    excluded from ``mean``), the mode each item was scored in (``logprobs`` or
    ``samples``), the raw replies, why each unscored item has no score, and
    :class:`JudgeStats` (HTTP calls, cache hits, retries, parse failures, failures
    by reason, token usage; ``summary_line()`` for people).

    ``generations``: the generated text each request judges (e.g. the summary). An
    empty or whitespace-only one is not sent, because a paid rating of nothing says
    nothing about the model: its score is None, its reason ``empty``, and it counts
    in ``JudgeStats.empty_skipped`` (not a parse failure, never 0).

    An item whose requests keep failing on a transient fault (429/5xx, timeout,
    reset connection, invalid JSON) is None with that reason and logged with the
    endpoint. Raises :class:`JudgeRequestError` on a non-retryable error (bad key,
    unknown model), when the first :data:`FAIL_FAST_ITEMS` items (all, in a
    smaller batch) fail with no answer at all, and when the latency probe (the first
    request, with the timeout unset) gets no answer in :data:`PROBE_TIMEOUT_S`;
    answers already received stay cached, and ``stats`` (when passed) still counts
    every item: the unfinished ones as ``failed["abandoned"]``.

    ``config.timeout_s`` / ``config.max_concurrency`` unset (the default): sized from
    the first request's latency (module docstring, "Sizing"; recorded in
    ``stats.sizing``). Set: used as given.
    """
    return run_sync(lambda: judge_scores_async(requests, scale, config, stats=stats, desc=desc,
                                               generations=generations))
