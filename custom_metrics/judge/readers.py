"""Readers: how one attempt of an item is asked and read, handed to
:class:`~custom_metrics.judge.engine.BatchRun` (which owns slots, sizing, retries,
cache, claims and counting for both).

* :class:`Ratings` (G-Eval, Liu et al., 2023): with log-probabilities, the
  probability-weighted score at the score position; without them (endpoint refuses or
  omits them), the mean of the scores parsed from ``n_samples`` sampled replies.
  ``logprobs="auto"`` tries log-probabilities first (one probe per batch; the other
  items wait for its answer) and falls back. A server that returns fewer sampled
  choices than ``n`` asked (``transformers serve`` always returns one) is made up to
  ``n_samples`` with single-choice requests, each its own cache key (``draw``), so
  "the mean of n samples" means what it says on every server.
* :class:`Texts`: replies that are text, not a number (FM's facet JSON, CCSBench's
  focus label): one greedy reply per attempt, read by ``parse``; None is unparsable.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from custom_metrics.judge import budget
from custom_metrics.judge.config import JudgeConfig, JudgeRequestError, Messages, Mode, Scale
from custom_metrics.judge.parse import score_from_logprobs, score_from_samples
from custom_metrics.judge.stats import ItemScore

if TYPE_CHECKING:
    from custom_metrics.judge.engine import BatchRun

log = logging.getLogger(__name__)

UNSUPPORTED = object()  # a logprobs request the endpoint refused or answered without them


class Ratings:
    """G-Eval scores on a number scale, in log-probability or sampling mode; one per
    batch (the mode found by the first item holds for the batch)."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.mode_lock = asyncio.Lock()
        # None = "auto", not yet known: the batch's first item probes for logprobs.
        self.mode: Mode | None = {"on": "logprobs", "off": "samples"}.get(config.logprobs)
        self.short_warned = False

    def first_params(self) -> dict[str, Any]:
        """The parameters of an item's first request, as far as known before the batch
        (``auto``: log-probabilities, tried first)."""
        return self.params(self.mode or "logprobs")

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

    async def try_logprobs(self, run: BatchRun, messages: Messages, scale: Scale, attempt: int) -> Any:
        """(score, replies) in log-probability mode, or UNSUPPORTED."""
        try:
            response = await run.answer(messages, self.params("logprobs"), attempt)
        except JudgeRequestError as exc:
            if exc.status == 400 and "logprob" in str(exc).lower():
                return UNSUPPORTED
            raise
        choices = (response.get("choices") or [])[:1]
        texts = run.choice_texts(response, 1)
        if not choices:
            return None, []
        content = (choices[0].get("logprobs") or {}).get("content")
        if not content:
            return UNSUPPORTED
        return score_from_logprobs(content, scale, texts[0]), texts

    async def try_samples(self, run: BatchRun, messages: Messages, scale: Scale,
                          attempt: int) -> tuple[float | None, list[str]]:
        """(score, replies) from ``n_samples`` sampled replies.

        A server that returns fewer choices than asked (``transformers serve`` always
        returns one) is made up to ``n_samples`` with single-choice requests, each
        its own cache key (``draw``): the score is then the mean over ``n_samples``
        replies as G-Eval defines it, not over whatever came back. Counted in
        ``choices_short`` / ``choices_missing`` / ``sample_topups``.
        """
        n = self.config.n_samples
        params = self.params("samples")
        response = await run.answer(messages, params, attempt)
        texts = run.choice_texts(response, n)
        missing = n - len(texts)
        if missing > 0:
            if not self.short_warned:
                self.short_warned = True
                known = budget.choices_returned(self.config) is not None
                budget.note_short_choices(self.config, len(texts))
                if not known:  # said once per judge and process; later estimates multiply by it
                    log.warning("judge %r at %s ignores n: it returned %d of the %d choices asked; each item now "
                                "takes %d requests (1 + %d single-choice), so that each score stays a mean of %d "
                                "replies: %dx the requests estimated (lower judge_n_samples / "
                                "DOMSUM_JUDGE_N_SAMPLES to pay for fewer)", self.config.model,
                                self.config.shown_endpoint, len(texts), n, 1 + missing, missing, n, 1 + missing)
            single = {**params, "n": 1}
            run.stats.sample_topups += missing
            got = await asyncio.gather(*(run.answer(messages, single, attempt, draw=k)
                                         for k in range(1, missing + 1)), return_exceptions=True)
            for g in got:  # all finished (no orphan request): now the first failure, if any
                if isinstance(g, BaseException):
                    raise g
            for g in got:
                texts.extend(run.choice_texts(g, 1))  # type: ignore[arg-type]
        return score_from_samples(texts, scale), texts

    def _set_logprobs_support(self, supported: bool) -> None:
        self.mode = "logprobs" if supported else "samples"

    def _unsupported(self, run: BatchRun) -> None:
        if self.config.logprobs == "on":
            raise JudgeRequestError(
                f"judge {self.config.model!r} at {self.config.shown_endpoint} returned no log-probabilities "
                "but logprobs='on' requires them; use 'auto' to fall back to sampling", reason="no_logprobs")
        if self.mode != "samples":
            run.stats.logprobs_fallbacks += 1
            log.warning("judge %r at %s gives no log-probabilities: scoring by the mean of %d "
                        "sampled replies instead", self.config.model, self.config.shown_endpoint,
                        self.config.n_samples)
        self._set_logprobs_support(False)

    async def attempt(self, run: BatchRun, messages: Messages, scale: Scale, attempt: int) -> ItemScore:
        if self.mode is None:  # auto, not yet known: the first item probes, the others wait
            async with self.mode_lock:
                if self.mode is None:
                    out = await self.try_logprobs(run, messages, scale, attempt)
                    if out is UNSUPPORTED:
                        self._unsupported(run)
                    else:
                        self._set_logprobs_support(True)
                        return ItemScore(out[0], "logprobs", out[1])
        if self.mode == "logprobs":
            out = await self.try_logprobs(run, messages, scale, attempt)
            if out is not UNSUPPORTED:
                return ItemScore(out[0], "logprobs", out[1])
            self._unsupported(run)
        score, texts = await self.try_samples(run, messages, scale, attempt)
        return ItemScore(score, "samples", texts)


class Texts:
    """One greedy reply per attempt (``config.temperature``, ``n`` 1), read by ``parse``;
    None is unparsable (asked once more, then a counted parse failure). ``score``
    makes the item's score from the parsed value (1.0 without it)."""

    def __init__(self, config: JudgeConfig, *, parse: Callable[[str], Any], max_tokens: int,
                 score: Callable[[Any], float] | None, mode: str) -> None:
        self.config = config
        self.parse, self.max_tokens, self.score_of, self.text_mode = parse, max_tokens, score, mode

    def text_params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"temperature": self.config.temperature, "max_tokens": self.max_tokens, "n": 1}
        if self.config.seed is not None:
            p["seed"] = self.config.seed
        return p

    def first_params(self) -> dict[str, Any]:
        return self.text_params()

    async def attempt(self, run: BatchRun, messages: Messages, scale: Scale, attempt: int) -> ItemScore:
        response = await run.answer(messages, self.text_params(), attempt)
        texts = run.choice_texts(response, 1)
        text = texts[0] if texts else ""
        value = self.parse(text)
        if value is None:
            return ItemScore(None, self.text_mode, [text])
        score = float(self.score_of(value)) if self.score_of is not None else 1.0
        return ItemScore(score, self.text_mode, [text], value=value)
