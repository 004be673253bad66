"""The judge's configuration: :class:`JudgeConfig`, the judge errors, the endpoint as
keyed and shown, and the constants that size a batch.

Why a frozen dataclass and no environment reads: settings (task metadata, then the
environment, then defaults) are resolved once, by ``lm_eval_tasks.settings.judge_config``;
this package takes what it is given (model, endpoint, key, cache path), so a library
caller, a test and the harness judge with exactly the configuration they pass.

The sizing constants are module constants, not settings: the batch's answers move
what they start, and tests shrink them here to exercise a "slow" server in
milliseconds; the client reads them from this module at run time.
"""

from __future__ import annotations

import logging
import threading
import urllib.parse
from dataclasses import MISSING, dataclass, field, fields
from collections.abc import Callable
from typing import Any, Literal

from custom_metrics.errors import SuiteError
from custom_metrics import secrets
from custom_metrics.setting import Setting, as_float, as_int

log = logging.getLogger(__name__)

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
# A cache another process holds write-locked (custom_metrics.judge.cache): wait briefly, then
# serve what it holds and keep new answers in memory, instead of SQLite's usual 30 s stall.
CACHE_BUSY_TIMEOUT_S = 0.2   # one write attempt waits at most this for the lock ...
CACHE_RETRY_MIN_S = 0.25     # ... then writes are skipped (not attempted) for this long,
CACHE_RETRY_MAX_S = 8.0      # doubling up to this while the lock stays held
CACHE_CLAIM_WAIT_S = 1.0     # an item waits at most this for a claim, then is requested unclaimed
CACHE_FLUSH_WAIT_S = 1.0     # at a batch's end, answers not yet saved get this long to be written
FAIL_FAST_ITEMS = 3  # items failing for good, with no answer yet, that prove the endpoint down
# Sizing when timeout / concurrency are unset (see the package docstring and
# custom_metrics.judge.pacing).
START_CONCURRENCY = 8        # requests in flight when a batch starts (its items at most) ...
FIRST_WAVE_STEP_S = 0.1      # ... doubled each time this passes with all sent and no answer ...
FIRST_WAVE_MAX = 16          # ... up to this (and the batch's items)
AUTO_CONCURRENCY_MAX = 64    # the most pacing raises it to
LATENCY_TOLERANCE = 1.5      # an answer within this x the fastest one: the server still has room
QUEUE_GAIN = 2.0             # a round trip of queued answers trims the bound to this x the server's width
QUEUE_FLOOR = 8              # ... never below this (a queue that covers the client's turnaround)
CONGESTION_STATUSES = (429, 503)  # halve the requests in flight (once per burst)
FIRST_TIMEOUT_S = 300.0      # a request sent before any answer of its batch waits up to this
AUTO_TIMEOUT_FLOOR_S = 60.0  # a sized per-request timeout is never shorter
AUTO_TIMEOUT_MAX_S = 900.0   # ... nor longer (a request this slow is a hung server)
AUTO_LATENCY_FACTOR = 3.0    # timeout >= this x the slowest answer seen so far
TIMEOUT_HINT = ("raise judge_timeout / DOMSUM_JUDGE_TIMEOUT (seconds per request) or lower "
                "judge_concurrency / DOMSUM_JUDGE_CONCURRENCY (requests in flight; 1 for a CPU-served model)")


# =========================================================================== errors


class JudgeError(SuiteError, RuntimeError):
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

#: The judge's settings rows, declared here once: each fills the :class:`JudgeConfig` field
#: declared with it (:func:`_filled`: the row's key in the field's metadata) and gives that
#: field its default, so the settings page, the resolver (``lm_eval_tasks.settings.judge_config``)
#: and the dataclass read one declaration. A row keeps one name from the settings page to
#: the code: ``judge_<field>``. A field filled by a suite-wide row names that row's key
#: (``progress``); a field no setting fills (library callers and tests tune it) names none.
S = Setting
MODEL = S("judge_model", "DOMSUM_JUDGE_MODEL", str, None,
          "Judge model; unset = no judge (judge metrics left out, never a surprise paid call).", "judge",
          system="judge", flag="judge model (DOMSUM_JUDGE_MODEL)")
BASE_URL = S("judge_base_url", "OPENAI_BASE_URL", str, None,
             "OpenAI-compatible endpoint of the judge; unset = the openai client's default.", "judge",
             flag="OpenAI-compatible endpoint (OPENAI_BASE_URL)")
CONCURRENCY = S("judge_concurrency", "DOMSUM_JUDGE_CONCURRENCY", as_int, None,
                "Judge requests in flight, fixed; unset = adapted per batch: starts at 8 (16 when 0.1 s pass "
                "without an answer), grows while answers stay near the fastest latency, trimmed to twice the "
                "server's width once a round trip shows a queue, halves on 429/503/timeouts (at most 64).",
                "judge", low=1,
                flag="requests in flight, fixed (default: adapted to the answers)")
CACHE = S("judge_cache", "DOMSUM_JUDGE_CACHE", str, DEFAULT_CACHE_PATH,
          "SQLite cache of judge replies (`off` disables).", "judge",
          flag="SQLite cache path, or 'off' (DOMSUM_JUDGE_CACHE)")
LOGPROBS = S("judge_logprobs", "DOMSUM_JUDGE_LOGPROBS", str, "auto",
             "Score from the rating's token probabilities: on, off, auto.", "judge",
             choices=("on", "off", "auto", "true", "false", "1", "0", "yes", "no"),
             flag="", flag_choices=("on", "off", "auto"))
N_SAMPLES = S("judge_n_samples", "DOMSUM_JUDGE_N_SAMPLES", as_int, 20, "Sampled replies when logprobs are off.",
              "judge", low=1, flag="replies per item without logprobs (default 20)")
TIMEOUT = S("judge_timeout", "DOMSUM_JUDGE_TIMEOUT", as_float, None,
            "Seconds per judge request attempt, in total (connect, send and every read: a reply dripped "
            "byte by byte is cut too); unset = 3 x the slowest answer, at least 60 (requests sent before "
            "any answer wait up to 300).", "judge", low=0, low_open=True)
MAX_REQUESTS = S("judge_max_requests", "DOMSUM_JUDGE_MAX_REQUESTS", as_int, None,
                 "Most judge requests one run sends; items beyond are not judged (counted as `budget_skipped`, "
                 "NaN); re-run with a higher cap and the same cache to judge only those.", "judge", low=0,
                 flag="most judge requests to send; the rest is left for a re-run (DOMSUM_JUDGE_MAX_REQUESTS)")
SAMPLE = S("judge_sample", "DOMSUM_JUDGE_SAMPLE", as_int, 0,
           "Judge only this many of the run's documents, a random sample drawn with `sample_seed` by document "
           "id (the same documents for every system evaluated on them; AdaptEval Table 5: 25); the others are NaN, "
           "counted as `judge_not_sampled`, and the drawn ids are recorded as `judge_sample_ids`. 0 = all.",
           "judge", low=0, flag="judge only a seeded random sample of this many documents; 0 = all "
                                "(DOMSUM_JUDGE_SAMPLE)")
PRICE_PROMPT = S("judge_price_prompt", "DOMSUM_JUDGE_PRICE_PROMPT", as_float, None,
                 "Price per 1,000 prompt tokens: the estimate printed before judging shows a cost.", "judge", low=0)
PRICE_COMPLETION = S("judge_price_completion", "DOMSUM_JUDGE_PRICE_COMPLETION", as_float, None,
                     "Price per 1,000 completion tokens (see `judge_price_prompt`).", "judge", low=0)
MAX_RETRIES = S("judge_max_retries", "DOMSUM_JUDGE_MAX_RETRIES", as_int, 5, "Retries on 429/5xx/timeouts.",
                "judge", low=0)
API_KEY = S("judge_api_key", "DOMSUM_JUDGE_API_KEY", str, None,
            "Judge key, environment only (else `OPENAI_API_KEY`); never written anywhere.", "judge", secret=True,
            env_also="OPENAI_API_KEY")
#: the rows in the order of the settings page
ROWS = (MODEL, BASE_URL, CONCURRENCY, CACHE, LOGPROBS, N_SAMPLES, TIMEOUT, MAX_REQUESTS, SAMPLE, PRICE_PROMPT,
        PRICE_COMPLETION, MAX_RETRIES, API_KEY)
del S


def _filled(row: Setting | str, **kw: Any) -> Any:
    """A field the settings row ``row`` fills, with the row's default unless ``default`` is given
    (``MISSING``: a required field)."""
    if isinstance(row, Setting) and "default" not in kw:
        kw["default"] = row.default
    return field(metadata={"setting": row if isinstance(row, str) else row.key}, **kw)


def setting_of(name: str) -> str | None:
    """The settings row that fills :class:`JudgeConfig` field ``name``; None for a field no
    setting fills."""
    return SETTING_OF.get(name)


def _label(name: str) -> str:
    """A field as a validation message names it: with its setting, the name users set."""
    row = setting_of(name)
    return f"{name} (setting {row})" if row else name


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
    sample), ``"auto"`` (try, fall back). ``cache=None`` disables the cache;
    ``api_key=None`` sends none to a server of one's own and is an error against
    OpenAI's (the settings resolver fills both from the environment; this package
    reads neither there).
    ``claim_ttl_s``: how long another run's claim on an item is honoured without a
    heartbeat (default: three :attr:`nominal_timeout_s`; see :attr:`claim_ttl`).

    ``concurrency`` (requests in flight) and ``timeout`` (seconds per request)
    default to None: adapted per batch to the answers' latency and to 429/503/timeouts
    (package docstring, "Sizing"), because no fixed pair suits both a hosted API and a
    model served on a CPU. A value that is set is used exactly as given.
    """

    model: str = _filled(MODEL, default=MISSING)  # required: no judge without a model
    base_url: str | None = _filled(BASE_URL)
    api_key: str | None = _filled(API_KEY, repr=False)
    concurrency: int | None = _filled(CONCURRENCY)
    timeout: float | None = _filled(TIMEOUT)
    max_retries: int = _filled(MAX_RETRIES)
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 30.0
    temperature: float = 0.0
    sample_temperature: float = 1.0
    max_tokens: int = 5
    n_samples: int = _filled(N_SAMPLES)
    top_logprobs: int = 20
    logprobs: LogprobsSetting = _filled(LOGPROBS)
    seed: int | None = None
    cache: str | None = _filled(CACHE)
    #: a bar on stderr per batch of at least PROGRESS_MIN_ITEMS requests (None: $DOMSUM_PROGRESS)
    progress: bool | None = _filled("progress", default=None)
    claim_ttl_s: float | None = None
    #: HTTP requests this process may send to judges (None: no cap); see custom_metrics.judge.budget
    max_requests: int | None = _filled(MAX_REQUESTS)
    #: documents a judged family scores, a seeded random sample by document id (0: all);
    #: see custom_metrics.judge.sample
    sample: int = _filled(SAMPLE)
    #: prices per 1,000 prompt / completion tokens, for the estimate before a batch (None: no cost shown)
    price_prompt: float | None = _filled(PRICE_PROMPT)
    price_completion: float | None = _filled(PRICE_COMPLETION)

    def __post_init__(self) -> None:
        self._take_url_key()
        problems = []
        bad_key = secrets.key_problem(self.api_key)
        if bad_key:
            problems.append(f"{_label('api_key')} must be {bad_key}")
        if not self.model or not str(self.model).strip():
            problems.append(f"{_label('model')} must be a non-empty string")
        checks: list[tuple[str, bool, str]] = [
            ("concurrency", self.concurrency is None or self.concurrency >= 1, ">= 1"),
            ("timeout", self.timeout is None or self.timeout > 0, "> 0"),
            ("max_retries", self.max_retries >= 0, ">= 0"),
            ("backoff_base_s", self.backoff_base_s >= 0, ">= 0"),
            ("backoff_cap_s", self.backoff_cap_s >= 0, ">= 0"),
            ("max_tokens", self.max_tokens >= 1, ">= 1"),
            ("n_samples", self.n_samples >= 1, ">= 1"),
            ("top_logprobs", 1 <= self.top_logprobs <= 20, "in 1..20"),
            ("logprobs", self.logprobs in ("on", "off", "auto"), "'on', 'off' or 'auto'"),
            ("claim_ttl_s", self.claim_ttl_s is None or self.claim_ttl_s > 0, "> 0"),
            ("max_requests", self.max_requests is None or self.max_requests >= 0, ">= 0"),
            ("sample", isinstance(self.sample, int) and self.sample >= 0, ">= 0"),
            ("price_prompt", self.price_prompt is None or self.price_prompt >= 0, ">= 0"),
            ("price_completion", self.price_completion is None or self.price_completion >= 0, ">= 0"),
        ]
        problems += [f"{_label(name)} must be {want} (got {getattr(self, name)!r})" for name, ok, want in checks if not ok]
        if problems:
            raise JudgeConfigError("invalid JudgeConfig: " + "; ".join(problems))

    @classmethod
    def from_settings(cls, read: Callable[[str], Any], given: Callable[[str], bool],
                      **overrides: Any) -> JudgeConfig | None:
        """The configuration the settings rows describe, or None when no judge model is set.

        ``read(key)``: the row's value (``lm_eval_tasks.settings.resolve``: metadata, then
        the environment, then the default; a ValueError names the key); ``given(key)``:
        whether a user set it. Each field a row fills (:data:`SETTING_OF`) takes the row's
        value when given, else its own default, which is the row's; the cache path is
        always passed (this package reads no environment variable), ``off`` as None.
        ``overrides``: a command's flags, over everything.
        """
        from custom_metrics.reference_cache import is_off

        model = overrides.pop("model", None) or read(MODEL.key)
        if not model:
            return None
        kwargs: dict[str, Any] = {"model": str(model)}
        for name, key in SETTING_OF.items():
            if name == "model" or (not given(key) and name != "cache"):
                continue
            try:
                kwargs[name] = read(key)
            except ValueError as exc:
                raise JudgeConfigError(str(exc)) from None
        if "cache" in kwargs and is_off(kwargs["cache"]):
            kwargs["cache"] = None
        if "logprobs" in kwargs:
            v = str(kwargs["logprobs"]).strip().lower()
            kwargs["logprobs"] = {"true": "on", "1": "on", "yes": "on", "false": "off", "0": "off", "no": "off"}.get(v, v)
        kwargs.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**kwargs)

    def _take_url_key(self) -> None:
        """A key in ``base_url`` (user-info or an ``api_key=`` query) is moved to
        ``api_key``, so it is sent as the Bearer key (not as Basic auth), the request path
        stays ``.../chat/completions``, and no URL the suite or the HTTP client logs holds
        it. It replaces ``api_key``: a key written into this endpoint's URL is meant for
        it, while ``OPENAI_API_KEY`` is often set for another service or as a placeholder.
        A URL that keeps another query is refused (the client would append the path
        after it)."""
        if not self.base_url:
            return
        clean, key = secrets.split_url_key(str(self.base_url))
        if key is None:
            return
        secrets.register(key)
        object.__setattr__(self, "base_url", clean)
        object.__setattr__(self, "api_key", key)
        if urllib.parse.urlsplit(clean).query:
            raise JudgeConfigError(f"the judge base URL {secrets.mask(clean)} has a query (?...): the client appends "
                                   f"/chat/completions to the URL, so give the URL without it")

    @property
    def endpoint(self) -> str:
        return normalize_endpoint(self.base_url)

    @property
    def nominal_timeout_s(self) -> float:
        """``timeout``, or :data:`AUTO_TIMEOUT_FLOOR_S` when it is sized per batch:
        the unit of the claim timings below, which must be known before any request."""
        return self.timeout if self.timeout is not None else AUTO_TIMEOUT_FLOOR_S

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
        for name in ("concurrency", "timeout"):
            if d[name] is None:
                d[name] = "auto"
        return d


#: field -> the setting that fills it, read from the fields' metadata; the fields a setting
#: fills, those settings (the rows every judged family reads, ``Family.reads``;
#: ``lm_eval_tasks.settings.judge_config`` builds the configuration from them), and the
#: fields no setting fills
SETTING_OF: dict[str, str] = {f.name: f.metadata["setting"] for f in fields(JudgeConfig) if "setting" in f.metadata}
FIELDS: tuple[str, ...] = tuple(SETTING_OF)
SETTINGS: tuple[str, ...] = tuple(SETTING_OF.values())
NO_SETTING = frozenset(f.name for f in fields(JudgeConfig)) - set(SETTING_OF)


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
