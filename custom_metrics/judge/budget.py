"""The bill before paying: an estimate of every batch before its first request, and a
cap on the requests one process sends (``judge_max_requests``).

Why here and not after the fact: judged metrics are the costly ones (G-Eval's 20
samples become 20 requests per item against a server that ignores ``n``; FM makes an
extraction and a rating call per pair), and a user who learns the count from the
invoice learns it too late.

* **Estimate** (:func:`estimate`): per batch, the requests to send (items whose first
  request is already in the cache, and repeats of one request in the batch, cost
  nothing), prompt tokens as characters / :data:`CHARS_PER_TOKEN` of the messages
  (English text averages about four characters a token in GPT tokenizers; a real
  tokenizer would tie the estimate to one model family), completion tokens as
  ``max_tokens`` times the choices asked (an upper bound: replies stop early), and the
  cost when prices per 1,000 tokens are set. A server known to return fewer choices
  than ``n`` asks (:func:`note_short_choices`) multiplies the requests of a sampled
  item. ``requests`` counts first attempts; ``requests_at_most`` is the bound when every
  reply has to be asked again (one re-ask per unparsable reply), a server whose
  handling of ``n`` is not yet known returns one choice per request, and, while
  log-probabilities are still being probed (``judge_logprobs=auto``), the endpoint turns
  out to have none (one probe, then sampled replies). Retries after a fault
  (429/5xx/timeouts, ``judge_max_retries``) are on top of both; everything sent is
  counted afterwards in ``JudgeStats``.
* **Cap** (:func:`take`): every HTTP request of the process counts against
  ``JudgeConfig.max_requests``; a request beyond it is not sent and its item is
  counted as ``budget`` (score None, never 0). Cached answers cost nothing, so
  re-running with a higher cap and the same cache sends only the requests not yet
  answered.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from custom_metrics.judge.config import JudgeConfig, JudgeError, Messages

#: characters per prompt token assumed by the estimate (module docstring)
CHARS_PER_TOKEN = 4.0
#: tokens a chat message costs beyond its text (role and separators, as OpenAI counts them)
TOKENS_PER_MESSAGE = 4


class BudgetExhausted(JudgeError):
    """``judge_max_requests`` is reached: this request is not sent (its item is counted
    as ``budget``, never scored 0)."""


_LOCK = threading.Lock()
_SPENT = 0  # HTTP requests this process has sent to judges
#: (endpoint, model) -> the choices its replies held when more were asked
_SHORT_CHOICES: dict[tuple[str, str], int] = {}


def take(config: JudgeConfig) -> None:
    """Count one request about to be sent; :class:`BudgetExhausted` when the cap is reached."""
    global _SPENT
    with _LOCK:
        if config.max_requests is not None and _SPENT >= config.max_requests:
            raise BudgetExhausted(f"judge_max_requests ({config.max_requests}) reached")
        _SPENT += 1


def spent() -> int:
    """Requests this process has sent to judges (what ``judge_max_requests`` caps)."""
    return _SPENT


def reset() -> None:
    """Forget the requests sent and the servers seen (tests; a long-lived service's new run)."""
    global _SPENT
    with _LOCK:
        _SPENT = 0
        _SHORT_CHOICES.clear()


def note_short_choices(config: JudgeConfig, returned: int) -> None:
    """This judge answered ``returned`` choices where more were asked (it ignores ``n``)."""
    with _LOCK:
        _SHORT_CHOICES[(config.endpoint, config.model)] = max(1, returned)


def choices_returned(config: JudgeConfig) -> int | None:
    """The choices this judge is known to return when more are asked, else None."""
    return _SHORT_CHOICES.get((config.endpoint, config.model))


def prompt_tokens(messages: Messages) -> int:
    """The estimate of one request's prompt tokens (module docstring)."""
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return int(round(chars / CHARS_PER_TOKEN)) + TOKENS_PER_MESSAGE * len(messages)


def requests_per_item(config: JudgeConfig, params: Mapping[str, Any]) -> int:
    """Requests one item's first attempt takes: 1, or ``1 + missing`` single-choice
    requests against a server known to return fewer choices than ``n`` asks."""
    n = int(params.get("n") or 1)
    got = choices_returned(config)
    return 1 + max(0, n - got) if got is not None and n > got else 1


def most_requests_per_item(config: JudgeConfig, params: Mapping[str, Any]) -> int:
    """Requests one attempt of an item may take: as :func:`requests_per_item` on a server
    whose choices are known, else ``n`` (a server that ignores ``n`` answers one choice per
    request, and the missing ones are asked one by one)."""
    n = int(params.get("n") or 1)
    return requests_per_item(config, params) if choices_returned(config) is not None else n


#: attempts an item may take without a fault: the first and one re-ask of an unparsable reply
ATTEMPTS = 2


def estimate(config: JudgeConfig, requests: Sequence[Messages], params: Mapping[str, Any],
             keys: Sequence[str], cached: set[str], desc: str,
             fallback: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The estimate of one batch (module docstring): ``keys`` are the first requests'
    cache keys, ``cached`` those already answered; ``fallback``: the sampled replies'
    parameters while log-probabilities are still being probed (``params`` ask for them)."""
    per_item = requests_per_item(config, params)
    n = int(params.get("n") or 1)
    seen: set[str] = set()
    todo = 0
    ptok = 0
    for messages, key in zip(requests, keys):
        if key in cached or key in seen:
            continue
        seen.add(key)
        todo += 1
        ptok += prompt_tokens(messages) * per_item
    ctok = todo * int(params.get("max_tokens") or config.max_tokens) * n
    most = ATTEMPTS * todo * most_requests_per_item(config, params)
    if fallback is not None and todo:
        most = max(most, 1 + ATTEMPTS * todo * most_requests_per_item(config, fallback))
    out: dict[str, Any] = {"batch": desc, "items": len(requests), "items_cached": len(requests) - todo,
                           "requests": todo * per_item, "requests_at_most": most, "requests_per_item": per_item,
                           "prompt_tokens": ptok, "completion_tokens": ctok, "cost": None,
                           "fallback": fallback is not None and todo > 0}
    if config.price_prompt is not None or config.price_completion is not None:
        out["cost"] = round(ptok / 1000 * (config.price_prompt or 0.0)
                            + ctok / 1000 * (config.price_completion or 0.0), 6)
    if config.max_requests is not None:
        out["max_requests"] = config.max_requests
        out["requests_left"] = max(0, config.max_requests - _SPENT)
    return out


def estimate_line(config: JudgeConfig, est: Mapping[str, Any]) -> str:
    """The estimate as one line for the log."""
    per = est["requests_per_item"]
    line = (f"judge estimate for {est['batch']} ({config.model} at {config.shown_endpoint}): "
            f"{est['requests']} requests for {est['items'] - est['items_cached']} items"
            + (f" ({per} per item: the server returns fewer choices than n asks)" if per > 1 else "")
            + f", {est['items_cached']} cached; at most {est['requests_at_most']} if every reply is asked again"
            + (", one choice per request" if est["requests_at_most"] > 2 * est["requests"] and not est.get("fallback")
               else "")
            + (" and the endpoint has no log-probabilities" if est.get("fallback") else "")
            + f"; ~{est['prompt_tokens']} prompt tokens (chars/{CHARS_PER_TOKEN:g}), "
            f"<= {est['completion_tokens']} completion tokens (max_tokens x choices)")
    if est["cost"] is not None:
        line += f"; ~{est['cost']:.4f} at the judge_price_prompt / judge_price_completion set per 1k tokens"
    if "max_requests" in est:
        line += f"; {est['requests_left']} of judge_max_requests ({est['max_requests']}) left"
    return line


BUDGET_HINT = ("re-run with a higher judge_max_requests / DOMSUM_JUDGE_MAX_REQUESTS and the same judge cache: "
               "answers already received cost nothing, only the items not judged are sent")
