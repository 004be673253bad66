"""Token distribution shift between two next-token distributions (AdaptEval, Section 4).

Paper: Afzal et al., "AdaptEval" (2024, arXiv:2407.11591); reference implementation:
the release's ``token_dist_shift_model2_model1.py`` and
``token_dist_shift_few_shot_zero_shot.py`` (https://github.com/anum94/AdaptEval). At
each position of a summary, a *base* distribution P (base model, or zero-shot prompt)
and an *adapted* distribution Q (fine-tuned/bigger model, or two-shot prompt) over the
same token ids are compared:

* ``KL(P || Q) = sum_v P(v) (log P(v) - log Q(v))`` in nats -- the release's
  ``sum(scipy.special.kl_div(p_before, p_after))``; averaged over positions;
* the adapted top-1 token ``a`` against the base top-3 ``b1, b2, b3``:
  *unshifted* if ``a == b1``; *marginal* if ``a in {b2, b3}``; *shifted* otherwise
  (``a`` not among the base top-3). Rates are percentages of positions; the three sum
  to 100. Token ids are compared (the release compares token strings; with one
  tokenizer that is the same). Top-k is taken with ``torch.topk`` on both sides, so
  ties are broken identically and identical distributions give 0 % shift.

Every statistic is reported over *domain-vocabulary positions*, under its plain name
(``kl``, ``shift_rate``, ...: the paper's statistic, "the token shift rate of those
tokens in the vocabulary domain", Section 4), and over all the *selected* summary
positions under the same name with :data:`ALL_POSITIONS` appended (``kl_all_positions``,
``shift_rate_all_positions``, ...). A position is a domain-vocabulary one when the word
its token begins is in the domain vocabulary (:func:`domain_word_mask`). Words are those of the DVO tokenizer
(:func:`custom_metrics.tokenize.word_tokenize`, lowercased), mapped to model tokens
through the tokenizer's character offsets: the token that covers a word's first
character *begins* that word. (The release instead picks whitespace words found in
the vocabulary and re-runs the model on each word prefix.)

Which positions are selected (setting ``token_shift_positions``): ``paper`` (default),
every summary position, as the paper's Section 4 describes it ("we process each token
in S sequentially"); ``release``, the release's part-of-speech selection
(:func:`release_pos_mask`; its ``find_indices_of_nouns_verbs_adjectives``): NLTK's
``word_tokenize`` and ``pos_tag`` on the summary, and every token tagged a noun,
adjective or verb (Penn tags ``N*``, ``J*``, ``V*``) gives the index ``i - 1``, which the
release uses as a *whitespace-word* index: it feeds the prompt plus the first ``i - 1``
whitespace words and reads the next-token distribution, i.e. the position whose token
begins whitespace word ``i - 1`` (``-1`` is the last word, as Python's ``words[:-1]``
makes it; an index past the last word predicts past the summary and is dropped,
counted). The paper's text does not describe this selection; the release's scripts call
it when no other selection is asked for.

This module is model-agnostic (logit tensors and character offsets in, numbers out);
``domsum token-shift`` (:mod:`lm_eval_tasks.analysis.token_shift`, with
:mod:`custom_metrics.analysis.shift_models`) runs the models. ``torch`` is imported lazily.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from custom_metrics.errors import SuiteError
from custom_metrics.setting import Setting, as_int
from custom_metrics.tokenize import word_tokenize

if TYPE_CHECKING:
    import torch

__all__ = [
    "ALL_POSITIONS",
    "CATEGORY_NAMES",
    "MARGINAL",
    "SHIFTED",
    "TABLE4_UNITS",
    "UNITS",
    "UNSHIFTED",
    "aggregate_shift",
    "domain_word_mask",
    "position_shift",
    "release_pos_mask",
    "release_pos_word_indices",
    "summarize_shift",
    "units",
    "word_spans",
]

UNSHIFTED, MARGINAL, SHIFTED = 0, 1, 2
CATEGORY_NAMES = ("unshifted", "marginal", "shifted")
BASE_TOP_K = 3
STAT_KEYS = ("kl", "shift_rate", "marginal_rate", "unshifted_rate")
#: the suffix of the statistics over every selected summary position (no suffix: the
#: domain-vocabulary positions, the paper's)
ALL_POSITIONS = "_all_positions"
#: the unit of each statistic, as the outputs state it
UNITS = {
    "kl": "nats per position: KL(P_base || P_adapted) with the natural logarithm at each position, "
          "averaged over a document's positions, then over documents",
    "shift_rate": "percent of positions whose adapted top-1 token is not in the base top-3",
    "marginal_rate": "percent of positions whose adapted top-1 token is in the base top-3 but not its top-1",
    "unshifted_rate": "percent of positions whose adapted top-1 token is the base top-1",
}
#: the release's part-of-speech classes, as Penn tag prefixes in its order: nouns, adjectives, verbs
RELEASE_POS_PREFIXES = ("N", "J", "V")
#: the NLTK data ``nltk.pos_tag`` loads (NLTK >= 3.9)
TAGGER_RESOURCE = "averaged_perceptron_tagger_eng"
#: the settings of the token shift (``domsum token-shift``), collected by ``lm_eval_tasks.settings``
SETTING_ROWS = (
    Setting("token_shift_positions", "DOMSUM_TOKEN_SHIFT_POSITIONS", str, "paper",
            "`domsum token-shift` positions scored: `paper` (default; every summary position, as AdaptEval "
            "Section 4 describes) or `release` (the release's part-of-speech selection: the nouns, adjectives "
            "and verbs NLTK's tagger finds, by the release's word indices; needs NLTK's "
            "`averaged_perceptron_tagger_eng` data): the positions of the `*_all_positions` statistics; the "
            "plain `kl`, `shift_rate` are over the domain-vocabulary positions either way.",
            "analysis", choices=("paper", "release")),
    Setting("token_shift_samples", "DOMSUM_TOKEN_SHIFT_SAMPLES", as_int, 10,
            "`domsum token-shift` documents drawn (seeded by `sample_seed`, file order kept) and averaged: "
            "default 10, the paper's Table 4 protocol (\"calculated over 10 samples\"); `0` = every document.",
            "analysis", low=0),
)

#: how AdaptEval Table 4's KL and shift rate may differ in unit from the statistics here: what
#: the paper and its release say, and no more (the paper names no unit for its KL)
TABLE4_UNITS = (
    "AdaptEval Table 4 reports 'KL divergence and Token Shift Rate (%) calculated over 10 samples' and Section 4 "
    "'KL-divergence scores and the token shift rate of those tokens in the vocabulary domain'; the paper states "
    "neither the logarithm base of its KL nor whether a document's KL is summed or averaged over its positions, "
    "so its KL values (0.18 to 21.49) may be on another scale than kl here (the mean over a document's "
    "domain-vocabulary positions of the per-position KL in nats, then over documents). Its release's scripts "
    "(token_dist_shift_*.py) average the per-position natural-log KL (scipy.special.kl_div summed over the "
    "vocabulary) over the positions they evaluate, and give the shift rate as a fraction; Table 4 and shift_rate "
    "here are percentages."
)


def units(positions: str) -> dict[str, str]:
    """Each statistic's unit and the positions it is over, as the result states them."""
    where = {"": "over the domain-vocabulary positions (AdaptEval Section 4's)",
             ALL_POSITIONS: "over every summary position" if positions == "paper" else
             "over the release's part-of-speech positions (token_shift_positions=release)"}
    return {f"{k}{sfx}": f"{UNITS[k]}; {text}" for sfx, text in where.items() for k in STAT_KEYS}


class TaggerMissing(SuiteError, LookupError):
    """NLTK's part-of-speech tagger data, which the release's position selection needs, is not installed."""


# --------------------------------------------------------------------------- words


#: NLTK writes a double quote as `` (opening) or '' (closing): the text may hold any of these
_QUOTE_TOKENS = ("``", "''")
_QUOTE_FORMS = ('"', "``", "''")


def _find_token(text: str, tok: str, pos: int) -> tuple[int, int]:
    """(start, end) of ``tok`` in ``text`` from ``pos``; a quote token matches any quote form."""
    if tok not in _QUOTE_TOKENS:
        start = text.find(tok, pos)
        return start, start + len(tok)
    hits = [(i, i + len(q)) for q in _QUOTE_FORMS if (i := text.find(q, pos)) >= 0]
    return min(hits) if hits else (-1, -1)


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """``(word, start, end)`` of each DVO word token of ``text`` (lowercased word,
    character span in the original ``text``)."""
    lowered = text.lower()
    index: list[int] | None = None
    if len(lowered) != len(text):  # rare: a character whose lowercase is longer (İ)
        pieces, index = [], []
        for i, ch in enumerate(text):
            low = ch.lower()
            pieces.append(low)
            index.extend([i] * len(low))
        lowered = "".join(pieces)
        index.append(len(text))
    spans = []
    pos = 0
    for tok in word_tokenize(lowered, lowercase=False):
        start, end = _find_token(lowered, tok, pos)
        if start < 0:  # cannot happen: tokens are ordered substrings (quotes aside, handled)
            raise RuntimeError(f"token {tok!r} not found in {text!r} after position {pos}")
        pos = end
        if index is not None:
            spans.append((tok, index[start], index[end - 1] + 1))
        else:
            spans.append((tok, start, end))
    return spans


def domain_word_mask(text: str, offsets: Sequence[tuple[int, int]],
                     vocabulary: Iterable[str]) -> list[bool]:
    """Which model tokens begin a domain-vocabulary word.

    ``offsets``: the ``(start, end)`` character span of each model token in ``text``
    (a fast tokenizer's ``offset_mapping``; zero-width spans, e.g. special tokens,
    never count). A token *begins* a word when it covers the word's first character
    (so ``"Ġprotein"`` begins ``protein`` whether or not its offsets include the
    space); if the tokenizer's offsets leave that character uncovered, the first
    token starting inside the word begins it. Continuation pieces of a word never
    count. Returns one boolean per token.
    """
    vocab = vocabulary if isinstance(vocabulary, (set, frozenset)) else frozenset(vocabulary)
    return _begin_mask(offsets, ((ws, we) for word, ws, we in word_spans(text) if word in vocab))


def _begin_mask(offsets: Sequence[tuple[int, int]], spans: Iterable[tuple[int, int]]) -> list[bool]:
    """One boolean per model token: does it begin one of the character ``spans``
    (see :func:`domain_word_mask` for what *begins* means)."""
    mask = [False] * len(offsets)
    order = sorted((s, e, j) for j, (s, e) in enumerate(offsets) if e > s)
    starts = [s for s, _, _ in order]
    for ws, we in spans:
        k = bisect.bisect_right(starts, ws) - 1  # last token starting at or before ws
        hit = None
        # the first token (in sequence order) covering ws; byte-level tokenizers give
        # the pieces of one multi-byte character overlapping spans
        while k >= 0 and order[k][1] > ws:
            hit = order[k][2] if hit is None else min(hit, order[k][2])
            k -= 1
        if hit is None:
            k = bisect.bisect_left(starts, ws)
            if k < len(order) and order[k][0] < we:
                hit = order[k][2]
        if hit is not None:
            mask[hit] = True
    return mask


def _nltk_pos_tag(tokens: list[str]) -> list[tuple[str, str]]:
    import nltk

    try:
        return nltk.pos_tag(tokens)
    except LookupError:
        raise TaggerMissing(
            f"the release's part-of-speech position selection (token_shift_positions=release) needs NLTK's "
            f"tagger data {TAGGER_RESOURCE!r}: python -m nltk.downloader {TAGGER_RESOURCE} (or set "
            f"token_shift_positions=paper)") from None


def release_pos_word_indices(text: str,
                             tagger: Callable[[list[str]], list[tuple[str, str]]] | None = None) -> list[int]:
    """The whitespace-word indices the release evaluates, in its order (nouns, adjectives,
    verbs): ``i - 1`` for every NLTK token ``i`` of ``text`` (case kept) whose Penn tag
    starts with ``N``, ``J`` or ``V``. ``tagger``: ``nltk.pos_tag`` unless given."""
    tagged = (tagger or _nltk_pos_tag)(word_tokenize(text, lowercase=False))
    return [i - 1 for prefix in RELEASE_POS_PREFIXES for i, (_, tag) in enumerate(tagged) if tag.startswith(prefix)]


def release_pos_mask(text: str, offsets: Sequence[tuple[int, int]],
                     tagger: Callable[[list[str]], list[tuple[str, str]]] | None = None) -> tuple[list[bool], int]:
    """``(mask, dropped)``: which model tokens are the release's part-of-speech positions.

    Index ``k`` of :func:`release_pos_word_indices` selects the token that begins
    whitespace word ``k`` of ``text`` (``str.split()`` words; ``-1`` is the last word, as
    the release's ``words[:-1]`` prefix predicts it); ``dropped`` counts the indices past
    the last word, whose prediction lies after the summary. A position selected twice
    counts once.
    """
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    spans, dropped = [], 0
    for k in release_pos_word_indices(text, tagger):
        k = k + len(words) if k < 0 else k
        if 0 <= k < len(words):
            spans.append(words[k])
        else:
            dropped += 1
    return _begin_mask(offsets, spans), dropped


# --------------------------------------------------------------------------- positions


def position_shift(base_logits: torch.Tensor, adapted_logits: torch.Tensor,
                   top_k: int = BASE_TOP_K) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-position ``KL(P_base || P_adapted)``, shift category and adapted top-1 id.

    ``base_logits`` and ``adapted_logits``: ``[positions, vocab]`` logits (any float
    dtype; computed in float32) over the same token ids. Returns ``(kl, category,
    adapted_top1)``, each of shape ``[positions]``; categories are :data:`UNSHIFTED`,
    :data:`MARGINAL`, :data:`SHIFTED`.
    """
    import torch

    if base_logits.shape != adapted_logits.shape or base_logits.dim() != 2:
        raise ValueError(
            f"logits must be [positions, vocab] of the same shape, got "
            f"{tuple(base_logits.shape)} and {tuple(adapted_logits.shape)}"
        )
    if base_logits.shape[0] == 0:
        empty = base_logits.new_zeros(0, dtype=torch.float32)
        return empty, empty.long(), empty.long()
    lp = torch.log_softmax(base_logits.float(), dim=-1)
    lq = torch.log_softmax(adapted_logits.float().to(lp.device), dim=-1)
    p = lp.exp()
    kl = torch.where(p > 0, p * (lp - lq), torch.zeros_like(p)).sum(-1).clamp_min(0.0)
    k = min(top_k, base_logits.shape[1])
    base_top = torch.topk(lp, k, dim=-1).indices              # [S, k]
    adapted_top1 = torch.topk(lq, 1, dim=-1).indices           # [S, 1], same tie rule
    unshifted = base_top[:, :1] == adapted_top1
    in_top = (base_top == adapted_top1).any(-1, keepdim=True)
    category = torch.full_like(adapted_top1, SHIFTED)
    category[in_top] = MARGINAL
    category[unshifted] = UNSHIFTED
    return kl, category.squeeze(-1), adapted_top1.squeeze(-1)


def _rates(kl: Sequence[float], cat: Sequence[int], suffix: str) -> dict[str, Any]:
    n = len(cat)
    counts = [0, 0, 0]
    for c in cat:
        counts[c] += 1
    out: dict[str, Any] = {
        f"positions{suffix}": n,
        f"kl_sum{suffix}": math.fsum(kl),
        f"unshifted{suffix}": counts[UNSHIFTED],
        f"marginal{suffix}": counts[MARGINAL],
        f"shifted{suffix}": counts[SHIFTED],
    }
    if n:
        out[f"kl{suffix}"] = out[f"kl_sum{suffix}"] / n
        out[f"shift_rate{suffix}"] = 100.0 * counts[SHIFTED] / n
        out[f"marginal_rate{suffix}"] = 100.0 * counts[MARGINAL] / n
        out[f"unshifted_rate{suffix}"] = 100.0 * counts[UNSHIFTED] / n
    else:
        for key in STAT_KEYS:
            out[f"{key}{suffix}"] = None
    return out


def summarize_shift(kl: torch.Tensor | Sequence[float], category: torch.Tensor | Sequence[int],
                    vocab_mask: Sequence[bool] | None = None,
                    selected: Sequence[bool] | None = None) -> dict[str, Any]:
    """One document's statistics over domain-vocabulary positions and over all selected positions.

    Keys: ``positions``, ``kl`` (mean KL, nats per position), ``shift_rate``,
    ``marginal_rate``, ``unshifted_rate`` (percent), the counts
    ``shifted``/``marginal``/``unshifted`` and ``kl_sum`` (for pooling), over the
    positions whose ``vocab_mask`` is true (None when there is no such position, or no
    mask); and the same with the :data:`ALL_POSITIONS` suffix over the positions whose
    ``selected`` is true (every one when None).
    """
    kl_list = [float(x) for x in (kl.tolist() if hasattr(kl, "tolist") else kl)]
    cat_list = [int(x) for x in (category.tolist() if hasattr(category, "tolist") else category)]
    if len(kl_list) != len(cat_list):
        raise ValueError("kl and category must have one value per position")
    if selected is not None and len(selected) != len(cat_list):
        raise ValueError(f"selected has {len(selected)} entries for {len(cat_list)} positions")
    if vocab_mask is None:
        out: dict[str, Any] = {k: None for k in ("positions", *STAT_KEYS)}
    else:
        if len(vocab_mask) != len(cat_list):
            raise ValueError(f"vocab_mask has {len(vocab_mask)} entries for {len(cat_list)} positions")
        sel = [i for i, m in enumerate(vocab_mask) if m]
        out = _rates([kl_list[i] for i in sel], [cat_list[i] for i in sel], "")
    chosen = range(len(cat_list)) if selected is None else [i for i, m in enumerate(selected) if m]
    out.update(_rates([kl_list[i] for i in chosen], [cat_list[i] for i in chosen], ALL_POSITIONS))
    return out


def aggregate_shift(documents: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Overall statistics from per-document :func:`summarize_shift` dicts.

    Top level: the mean over documents (each document weighs the same, as the release
    averages per-sample scores; documents without such positions are left out), plus
    ``documents``, ``positions`` (domain-vocabulary) and ``positions_all_positions``
    totals. ``pooled``: every position of every document weighs the same (sums of counts
    and KL).
    """
    out: dict[str, Any] = {"documents": len(documents)}
    pooled: dict[str, Any] = {}
    for suffix in ("", ALL_POSITIONS):
        docs = [d for d in documents if d.get(f"positions{suffix}")]
        out[f"documents_with_positions{suffix}"] = len(docs)
        for key in STAT_KEYS:
            vals = [d[f"{key}{suffix}"] for d in docs]
            out[f"{key}{suffix}"] = math.fsum(vals) / len(vals) if vals else None
        n = sum(d[f"positions{suffix}"] for d in docs)
        out[f"positions{suffix}"] = n
        if n:
            pooled[f"kl{suffix}"] = math.fsum(d[f"kl_sum{suffix}"] for d in docs) / n
            for name in CATEGORY_NAMES:
                rate = "shift_rate" if name == "shifted" else f"{name}_rate"
                pooled[f"{rate}{suffix}"] = 100.0 * sum(d[f"{name}{suffix}"] for d in docs) / n
        else:
            pooled.update({f"{k}{suffix}": None for k in STAT_KEYS})
    out["pooled"] = pooled
    return out
