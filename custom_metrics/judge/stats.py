"""What a judge batch did: :class:`JudgeStats` (counters, one object that may run
along several batches), :class:`JudgeResult` (per-item scores, modes, replies,
reasons and parsed values) and :class:`ItemScore` (one item's outcome inside a batch).

Why counters and reasons beside every score: an item without a score is never 0; it
is left out of means and counted by why (unparsable, empty, a request failure), so
``scored + n_failed + empty_skipped == items`` holds for every batch.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from custom_metrics.judge.budget import BUDGET_HINT
from custom_metrics.judge.config import TIMEOUT_HINT

#: how :meth:`JudgeStats.summary_line` names each failure reason
REASON_WORDS = {"invalid_json": "invalid JSON", "timeout": "timeout", "connection": "connection error",
                 "abandoned": "not finished (the batch stopped)",
                 "budget": "not judged (judge_max_requests reached)"}


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
    A cache another process held write-locked: ``cache_lock_wait_s``, the seconds
    this run waited on it (each write at most a short busy timeout);
    ``cache_locked_writes``, write attempts (claims, answers, releases) it refused;
    ``cache_unclaimed``, items requested without a claim because the lock outlasted
    the claim's wait (another run may pay for them too); ``cache_unsaved``, answers
    paid for in this run that could not be saved (a rerun pays for them again).

    ``scored``: items that got a score (or, for text replies, a parsed value); every
    item is counted once in exactly one of ``scored``, ``parse_failures``, ``failed``
    and ``empty_skipped`` (:attr:`accounted`). ``choices_short``: replies that held
    fewer choices than the ``n`` asked (servers that ignore ``n``);
    ``choices_missing``: the choices they lacked; ``sample_topups``: single-choice
    requests made to fill them (each also in ``http_calls`` or ``cache_hits``).
    ``estimates``: per batch, the estimate made before its first request
    (:func:`custom_metrics.judge.budget.estimate`: requests, prompt and completion
    tokens, cost); ``failed["budget"]`` (also ``budget_skipped`` in :meth:`as_dict`):
    items not judged because ``judge_max_requests`` was reached.
    ``sizing``: per batch that sent requests, the per-request timeout and requests in
    flight it ended with (``start_concurrency``, ``peak_concurrency``), whether each was
    set or sized (``auto``), the fastest answer's seconds (``floor_latency_s``), how
    often 429/503/timeouts halved the requests in flight (``concurrency_decreases``), how
    often a round trip of queued answers trimmed them to the server's width
    (``concurrency_trims``) and how often timeouts doubled the wait (``timeout_adaptations``).
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
    cache_lock_wait_s: float = 0.0
    cache_locked_writes: int = 0
    cache_unclaimed: int = 0
    cache_unsaved: int = 0
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
    estimates: list[dict[str, Any]] = field(default_factory=list)
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

    @property
    def budget_skipped(self) -> int:
        """Items not judged because ``judge_max_requests`` was reached."""
        return self.failed.get("budget", 0)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["budget_skipped"] = self.budget_skipped
        d["failed"] = self.failures_by_reason()
        d["total_tokens"] = self.prompt_tokens + self.completion_tokens
        d["wall_s"] = round(self.wall_s, 3)
        d["cache_lock_wait_s"] = round(self.cache_lock_wait_s, 3)
        return d

    def summary_line(self) -> str:
        """One line for a human: how many items failed and why, e.g. "3 of 29 judge
        items failed: 2 invalid JSON after 3 tries, 1 timeout after 3 tries"."""
        parts: list[tuple[int, str]] = []
        for reason, n in self.failed.items():
            word = REASON_WORDS.get(reason) or (f"HTTP {reason[5:]}" if reason.startswith("http_") else reason)
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
        if self.budget_skipped:
            line += f"; to judge the {self.budget_skipped} not judged, {BUDGET_HINT}"
        if self.cache_unusable:
            line += "; judged without a cache (it cannot be used: see cache_unusable)"
        if self.cache_locked_writes:
            line += (f"; the judge cache was locked by another process ({self.cache_lock_wait_s:.1f} s waited, "
                     f"{self.cache_unsaved} answers not saved, {self.cache_unclaimed} requested unclaimed)")
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
    #: the parsed value of each item (text replies: what ``parse`` returned; None = not parsed)
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
class ItemScore:
    """One item's outcome in a batch (what :class:`JudgeResult` is assembled from)."""

    score: float | None
    mode: str | None
    replies: list[str]
    reason: str | None = None  # why there is no score (None when scored)
    value: Any = None  # a text item's parsed value (``parse``)
