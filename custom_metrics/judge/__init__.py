"""The LLM judge: the client, with one entry, :func:`ask`, for every metric that asks a
judge (the AdaptEval G-Eval ratings, FM, CCSBench focus, ``meta-eval`` through FM,
``domsum rescore``), plus the prompt pipelines that run through it (AdaptEval's prompts
in :mod:`custom_metrics.judge.prompts`, FM's extraction and rating in
:mod:`custom_metrics.judge.fm`). Why the pipelines live here and not beside the metric
families: they are the judge's callers, heavy with it, and a family module imports them
only inside the function that scores, so building the metric table loads none of this
package.

``ask(config, requests, scale=(1, 5))`` rates on a number scale (G-Eval scoring);
``ask(config, requests, parse=fn)`` reads one text reply per request with ``fn``. Both
return a :class:`JudgeResult` (per-item scores, modes, replies, reasons, parsed values)
with its :class:`JudgeStats` counters (HTTP calls, cache hits, retries, failures by
reason, token usage). Settings (metadata, then the environment) are resolved by
``lm_eval_tasks.settings.judge_config``, which builds the :class:`JudgeConfig`: this
package reads no environment variable, so the cache path and the API key are the
configuration's.

Modules, and why each is apart:

* :mod:`~custom_metrics.judge.config` — :class:`JudgeConfig`, the errors, the
  endpoint as keyed and shown, the sizing constants.
* :mod:`~custom_metrics.judge.client` — the ``openai`` ``AsyncOpenAI`` client against
  any OpenAI-compatible endpoint: bounded concurrency, sizing, retries with backoff;
  :mod:`~custom_metrics.judge.pacing` — how many requests are in flight.
* :mod:`~custom_metrics.judge.cache` — the SQLite cache: keys over everything that
  changes the answer, answers committed before use, claims before a request so that
  concurrent runs never pay twice; a cache that cannot be used is skipped, not fatal.
* :mod:`~custom_metrics.judge.engine` — one batch: de-duplication, cache and claims,
  per-item accounting and fail-fast; :mod:`~custom_metrics.judge.readers` — how an
  attempt is asked and read (G-Eval ratings, parsed text).
* :mod:`~custom_metrics.judge.parse` — reply parsing (scores, log-probabilities).
* :mod:`~custom_metrics.judge.prompts` — AdaptEval's judge prompts and metrics.
* :mod:`~custom_metrics.judge.fm` — the Facet-aware Metric: facet extraction, per-facet
  alignment ratings and their weighting, asked through :func:`ask`;
  :mod:`~custom_metrics.judge.fm_prompts` — its prompt texts, verbatim from the release.

Behaviour every caller relies on:

* **Sizing (timeout and concurrency unset).** A fixed "8 in flight, 60 s each" times
  out on a CPU-served model (``transformers serve`` answers one request at a time) and
  leaves a batching server (vLLM) half idle. So when ``concurrency`` is None (the
  default) a batch starts with ``START_CONCURRENCY`` requests in flight, doubled every
  ``FIRST_WAVE_STEP_S`` until the first answer (to the batch's items, at most
  ``FIRST_WAVE_MAX``), and adapts (:mod:`~custom_metrics.judge.pacing`): doubled each
  round trip while answers come back near the fastest latency seen, held when they slow
  down (a queue at the server), trimmed to twice the server's width once a round trip
  of answers has shown its queue, halved on 429/503 and on timeouts of two different
  requests, at most ``AUTO_CONCURRENCY_MAX``. When ``timeout`` is None, requests sent before any answer
  wait up to ``FIRST_TIMEOUT_S``; then ``max(AUTO_TIMEOUT_FLOOR_S, AUTO_LATENCY_FACTOR *
  latency * in_flight)`` of the first answer (the queue of a one-at-a-time server),
  raised to ``AUTO_LATENCY_FACTOR`` times the slowest answer seen, doubled on timeouts
  of two different requests; a wait that grows is given to the requests already in
  flight too. No answer at all within the first wait stops the batch with a message
  naming ``judge_timeout`` / ``DOMSUM_JUDGE_TIMEOUT``. A value that is set is used exactly as given (a set
  ``concurrency`` is the fixed number in flight, never moved). What each batch used
  is recorded in :attr:`JudgeStats.sizing`.
* **Item failures** fail the item only (score None, counted by reason); only when the
  first items of a batch fail with no answer at all does it raise
  :class:`JudgeRequestError` (answers already received stay cached).
* **Empty generations** (pass ``generations=``) are not sent: score None, counted in
  ``JudgeStats.empty_skipped``, never a parse failure and never a paid call.
* **Parse failures**: a reply without a valid score (or value) is asked once more,
  then counted; never scored 0, never clipped onto the scale.
* **Accounting**: every item ends in exactly one of scored, a parse failure, a request
  failure by reason (``abandoned`` for items a stopped batch never finished), or an
  empty generation skipped; ``scored + n_failed + empty_skipped == items``.
* **Secrets**: every message, log line, exception and cache row passes
  :func:`custom_metrics.secrets.mask`.
* **Sync entry**: :func:`ask` works from plain code and from inside a running event
  loop (a worker thread with its own loop); :func:`ask_async` is its awaitable form.

No harness import: this is a plain metric library.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from custom_metrics.judge import budget
from custom_metrics.judge.budget import BUDGET_HINT
from custom_metrics.judge.cache import cache_key, usable_cache
from custom_metrics.judge.config import (
    DEFAULT_CACHE_PATH,
    JudgeConfig,
    JudgeConfigError,
    JudgeError,
    JudgeRequestError,
    Messages,
    Scale,
    notice_judge_skipped,
)
from custom_metrics.judge.engine import BatchRun, Reader
from custom_metrics.judge.parse import score_values
from custom_metrics.judge.readers import Ratings, Texts
from custom_metrics.judge.stats import ItemScore, JudgeResult, JudgeStats

__all__ = [
    "ask", "ask_async", "DEFAULT_CACHE_PATH", "JudgeConfig", "JudgeConfigError", "JudgeError",
    "JudgeRequestError", "JudgeResult", "JudgeStats", "Messages", "Scale", "is_empty_generation",
    "notice_judge_skipped", "judge_scores", "setting_rows", "judge_scores_async", "judge_texts", "judge_texts_async",
]

T = TypeVar("T")
log = logging.getLogger(__name__)


def setting_rows() -> tuple:
    """The settings rows the judge package declares: :class:`JudgeConfig`'s (which fill its
    fields), the AdaptEval prompts' and FM's, each beside the code that reads it. Imported
    here, when the settings table is built, not with the package."""
    from custom_metrics.judge import config, fm, prompts

    return (*config.ROWS, *prompts.SETTING_ROWS, *fm.SETTING_ROWS)


def is_empty_generation(text: str | None) -> bool:
    """True for a generation with nothing to judge (None, empty, whitespace only)."""
    return not (text or "").strip()


def _expand_scales(scale: Scale | Sequence[Scale], n: int) -> list[Scale]:
    if len(scale) == 2 and all(isinstance(v, (int, float)) for v in scale):  # one scale for all
        return [tuple(scale)] * n  # type: ignore[list-item]
    scales = [tuple(s) for s in scale]  # type: ignore[union-attr]
    if len(scales) != n:
        raise ValueError(f"judge: {n} requests but {len(scales)} scales")
    return scales  # type: ignore[return-value]


def _validate_requests(requests: Sequence[Messages]) -> None:
    for i, msgs in enumerate(requests):
        if not msgs or not all(isinstance(m, Mapping) and "role" in m and "content" in m for m in msgs):
            raise ValueError(f"judge request {i} is not a list of {{'role', 'content'}} messages")


async def ask_async(
    config: JudgeConfig,
    requests: Sequence[Messages],
    *,
    scale: Scale | Sequence[Scale] | None = None,
    parse: Callable[[str], Any] | None = None,
    score: Callable[[Any], float] | None = None,
    mode: str = "text",
    max_tokens: int | None = None,
    generations: Sequence[str | None] | None = None,
    stats: JudgeStats | None = None,
    desc: str | None = None,
    progress: bool | None = None,
) -> JudgeResult:
    """Awaitable form of :func:`ask` (same arguments, same result)."""
    if (scale is None) == (parse is None):
        raise ValueError("judge: give exactly one of scale= (a rating) or parse= (a text reply)")
    _validate_requests(requests)
    if generations is not None and len(generations) != len(requests):
        raise ValueError(f"judge: {len(requests)} requests but {len(generations)} generations")
    if progress is not None:
        config = dataclasses.replace(config, progress=progress)
    reader: Reader
    if scale is not None:
        scales = _expand_scales(scale, len(requests))
        for s in set(scales):
            score_values(s)
        reader, desc = Ratings(config), desc or "judge"
    else:
        tokens = int(max_tokens or config.max_tokens)
        if tokens < 1:
            raise ValueError(f"judge: max_tokens must be >= 1 (got {max_tokens})")
        scales = [(0, 1)] * len(requests)
        reader = Texts(config, parse=parse, max_tokens=tokens, score=score, mode=mode)  # type: ignore[arg-type]
        desc = desc or "judge texts"
    stats = stats if stats is not None else JudgeStats()
    stats.items += len(requests)
    todo = [i for i in range(len(requests))
            if generations is None or not is_empty_generation(generations[i])]
    stats.empty_skipped += len(requests) - len(todo)
    items = [ItemScore(None, None, [], "empty") for _ in requests]
    if todo:
        cache = usable_cache(config, stats)
        _estimate(config, reader, [requests[i] for i in todo], cache, stats, desc)
        skipped_before = stats.budget_skipped
        t0 = time.perf_counter()
        try:
            async with BatchRun(config, stats, cache, reader) as run:
                scored = await run.score_all([requests[i] for i in todo], [scales[i] for i in todo], desc)
        finally:
            stats.wall_s += time.perf_counter() - t0
        for i, item in zip(todo, scored):
            items[i] = item
        if stats.budget_skipped > skipped_before:
            log.warning("judge: %d of %d items of %s not judged: judge_max_requests (%s) reached; %s",
                        stats.budget_skipped - skipped_before, len(todo), desc, config.max_requests, BUDGET_HINT)
    return JudgeResult(scores=[i.score for i in items], modes=[i.mode for i in items],
                       replies=[i.replies for i in items], stats=stats, config=config.describe(),
                       reasons=[i.reason for i in items], values=[i.value for i in items])


def _estimate(config: JudgeConfig, reader: Reader, requests: Sequence[Messages], cache: Any,
              stats: JudgeStats, desc: str) -> None:
    """Log and record the bill of this batch before its first request (:mod:`.budget`)."""
    params = reader.first_params()
    keys = [cache_key(config.endpoint, config.model, m, params, 0) for m in requests]
    cached = cache.known(keys) if cache is not None else set()
    probing = isinstance(reader, Ratings) and reader.mode is None  # logprobs=auto, not yet known
    est = budget.estimate(config, requests, params, keys, cached, desc,
                          fallback=reader.params("samples") if probing else None)
    stats.estimates.append(est)
    log.warning("%s", budget.estimate_line(config, est))


def ask(
    config: JudgeConfig,
    requests: Sequence[Messages],
    *,
    scale: Scale | Sequence[Scale] | None = None,
    parse: Callable[[str], Any] | None = None,
    score: Callable[[Any], float] | None = None,
    mode: str = "text",
    max_tokens: int | None = None,
    generations: Sequence[str | None] | None = None,
    stats: JudgeStats | None = None,
    desc: str | None = None,
    progress: bool | None = None,
) -> JudgeResult:
    """Ask the judge once per request, batched and cached; one :class:`JudgeResult`.

    ``requests``: one list of ``{"role", "content"}`` messages per item. Give exactly
    one of:

    * ``scale``: ``(low, high)`` for all items, or one per item — a rating, scored as
      G-Eval does (log-probability weighted, or the mean of ``n_samples`` sampled
      replies; ``modes`` say which). None = no valid score after one retry.
    * ``parse``: a function reading one greedy reply (``config.temperature``, ``n``
      1, ``max_tokens`` or ``config.max_tokens``) into a value, None when unparsable
      (asked once more, then a counted parse failure). ``values`` hold what it
      returned, ``scores`` ``score(value)`` (1.0 without ``score``), ``modes`` ``mode``.
      Why beside ratings: FM's facet JSON and CCSBench's focus word are answers in
      words that need the same engine (sizing, retries, cache and claims, counting).

    ``generations``: the generated text each request judges; an empty one is not sent
    (score None, reason ``empty``, counted in ``JudgeStats.empty_skipped``).
    ``stats``: a :class:`JudgeStats` to count into (updated in place, also when the
    batch stops). ``desc``: the progress bar's label; ``progress``: draw it (None: as
    ``config.progress`` says).

    An item whose requests keep failing on a transient fault (429/5xx, timeout, reset
    connection, invalid JSON) is None with that reason. Raises
    :class:`JudgeRequestError` on a non-retryable error (bad key, unknown model), when
    the first items of the batch fail with no answer at all, and when no request of
    the batch gets an answer within the first wait; answers already received stay cached and ``stats`` still counts
    every item (the unfinished ones as ``failed["abandoned"]``).
    """
    return run_sync(lambda: ask_async(config, requests, scale=scale, parse=parse, score=score, mode=mode,
                                      max_tokens=max_tokens, generations=generations, stats=stats,
                                      desc=desc, progress=progress))


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


# The forms ``from custom_metrics import judge_scores, judge_texts, ...`` has always
# offered (the package's public API); each is :func:`ask` with its arguments in the old order.


def judge_scores(requests: Sequence[Messages], scale: Scale | Sequence[Scale], config: JudgeConfig, *,
                 stats: JudgeStats | None = None, desc: str = "judge",
                 generations: Sequence[str | None] | None = None) -> JudgeResult:
    """Ratings on ``scale``: ``ask(config, requests, scale=scale, ...)``."""
    return ask(config, requests, scale=scale, stats=stats, desc=desc, generations=generations)


async def judge_scores_async(requests: Sequence[Messages], scale: Scale | Sequence[Scale], config: JudgeConfig,
                             *, stats: JudgeStats | None = None, desc: str = "judge",
                             generations: Sequence[str | None] | None = None) -> JudgeResult:
    """Awaitable :func:`judge_scores`."""
    return await ask_async(config, requests, scale=scale, stats=stats, desc=desc, generations=generations)


def judge_texts(requests: Sequence[Messages], parse: Callable[[str], Any], config: JudgeConfig, *,
                max_tokens: int | None = None, score: Callable[[Any], float] | None = None, mode: str = "text",
                stats: JudgeStats | None = None, desc: str = "judge texts",
                generations: Sequence[str | None] | None = None) -> JudgeResult:
    """Parsed text replies: ``ask(config, requests, parse=parse, ...)``."""
    return ask(config, requests, parse=parse, max_tokens=max_tokens, score=score, mode=mode, stats=stats,
               desc=desc, generations=generations)


async def judge_texts_async(requests: Sequence[Messages], parse: Callable[[str], Any], config: JudgeConfig, *,
                            max_tokens: int | None = None, score: Callable[[Any], float] | None = None,
                            mode: str = "text", stats: JudgeStats | None = None, desc: str = "judge texts",
                            generations: Sequence[str | None] | None = None) -> JudgeResult:
    """Awaitable :func:`judge_texts`."""
    return await ask_async(config, requests, parse=parse, max_tokens=max_tokens, score=score, mode=mode,
                           stats=stats, desc=desc, generations=generations)
