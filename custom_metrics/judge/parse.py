"""Reading a judge's reply: the score a text holds on a scale (:func:`parse_score`),
G-Eval's probability-weighted score from log-probabilities
(:func:`score_from_logprobs`) and the mean of sampled replies
(:func:`score_from_samples`).

Scoring (Liu et al., 2023, "G-Eval", Eq. 1): with log-probabilities, the score is the
probability-weighted mean of the valid score tokens at the score position (the token
where :func:`parse_score` reads the reply's score), renormalised over the valid
tokens; without them, the mean of the scores parsed from sampled replies. A reply off
the scale or in another scale ("-1", "0", "7" or "5/10" on a 1-5 scale) has no valid
score: it is never clipped or rescaled onto the scale.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from custom_metrics.judge.config import Scale

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
