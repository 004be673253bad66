"""Domain-characteristic measures of a summarization corpus (DomainSum Table 5).

Two named profiles, because the literature computes these measures differently,
each with the tokenizer its source calls (:data:`PROFILE_TOKENIZERS`; any other can
be chosen with ``tokenizer=``, a name of :data:`custom_metrics.tokenize.TOKENIZERS`
or a callable):

* ``domainsum``: ``"nltk"`` -- ``nltk.word_tokenize(text.lower())`` as in the
  DomainSum release (:func:`custom_metrics.tokenize.word_tokenize`, NLTK's own
  tokenizer, English Punkt data bundled, no download at run time);
* ``newsroom``: ``"spacy"`` -- spaCy's English tokenizer, every token kept,
  lowercased after tokenizing, as Newsroom's ``Fragments`` and SummEval's
  ``data_stats`` (``case=False``) do (:func:`custom_metrics.tokenize.spacy_tokenize`,
  ``spacy.blank("en")``, no model download).

``D`` is the document's token list, ``S`` the summary's, ``G_n(X)`` the list of
``n``-grams of ``X`` and ``U_n(X)`` its set.

``profile="domainsum"`` -- exactly the DomainSum release's ``get_statistics.py``
(Yuan & Zhang, Findings of NAACL 2025, Table 5):

* ``doc_length`` / ``summary_length``: mean of ``|D|`` / ``|S|`` over pairs, with the
  population standard deviation (``numpy.std``, ddof 0) as ``*_std``;
* ``compression``: mean over pairs of ``|D| / |S|`` (0 when ``|S| = 0``);
* ``density``: mean over pairs of ``sum(f**2) / |S|`` over the fragments ``f`` of the
  release's two-pointer scan (:func:`custom_metrics.analysis.fragments.domainsum_fragments`);
* ``coverage``: mean over pairs of ``(1/3) * sum_{n=1..3} |U_n(S) & U_n(D)| / |U_n(S)|``
  (a term is 0 when ``U_n(S)`` is empty, and the sum is still divided by 3);
* ``doc_diversity`` / ``summary_diversity``: mean over texts of
  ``(1/3) * sum_{n=1..3} |U_n(X)| / |G_n(X)|`` (a term is 0 when ``G_n(X)`` is empty);
* ``abstractiveness``: mean over pairs of ``|U_3(S) - U_3(D)| / |U_3(S)|`` (0 when
  ``U_3(S)`` is empty); ``novel_1gram`` and ``novel_2gram`` are the same for n = 1, 2.

``profile="newsroom"`` -- Grusky, Naaman & Artzi (NAACL 2018), ``newsroom/analyze/
fragments.py``, as also used by SummEval (``data_stats``), HELM and lighteval:

* ``coverage``: mean over pairs of ``sum(f) / |S|``; ``density``: mean over pairs of
  ``sum(f**2) / |S|``; ``compression``: mean over pairs of ``|D| / |S|`` (each 0 when
  ``|S| = 0``, as in Newsroom); ``f`` are the fragments of Newsroom's greedy matcher
  (:func:`custom_metrics.analysis.fragments.newsroom_fragments`, its exact output); with the
  default spaCy tokens these are SummEval's ``data_stats`` per-pair
  ``coverage`` / ``density`` / ``compression``, averaged;
* Newsroom defines no length, diversity or abstractiveness measure: those keys are
  computed exactly as in the ``domainsum`` profile.

Bad input is never fatal: pairs with an empty document or summary (no tokens) are
skipped by default, duplicates are counted (and dropped on request), documents
shorter than their summaries and non-ASCII texts are counted; every count is in the
result. With no pair left, the measures are ``nan``.

Speed: the public functions use the fast path (integer token ids, sorted n-gram
codes with numpy, the fast fragment scans of :mod:`custom_metrics.analysis.fragments`);
:func:`custom_metrics.analysis.pair_values.reference_pair_values` is a straightforward
transcription of the published code, and the fast path is property-tested to give
identical floats. The per-pair formulas live in :mod:`custom_metrics.analysis.pair_values`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from custom_metrics.analysis.fragments import domainsum_fragments, longest_match_fragments, newsroom_fragments
from custom_metrics.analysis.pair_values import (
    PAIR_IMPLS,
    Tokens,
    fast_pair_values,
    ngram_coverage,
    ngram_diversity,
    novel_ngram_ratio,
)
from custom_metrics.tokenize import get_tokenizer

__all__ = [
    "PROFILES",
    "PROFILE_TOKENIZERS",
    "resolve_tokenizer",
    "MEASURES",
    "PAIR_FIELDS",
    "domain_measures",
    "pair_measures",
    "measure_pairs",
    "measure_token_pairs",
    "summarize_pairs",
    "find_duplicates",
    "ngram_diversity",
    "ngram_coverage",
    "novel_ngram_ratio",
    "newsroom_fragments",
    "longest_match_fragments",
    "domainsum_fragments",
]

PROFILES = ("domainsum", "newsroom")

#: the tokenizer each profile's source calls (names of custom_metrics.tokenize.TOKENIZERS)
PROFILE_TOKENIZERS = {"domainsum": "nltk", "newsroom": "spacy"}

#: the eight characteristic measures of DomainSum Table 5, in its order
MEASURES = (
    "doc_length",
    "summary_length",
    "compression",
    "density",
    "coverage",
    "doc_diversity",
    "summary_diversity",
    "abstractiveness",
)

#: per-pair values, in the order of the tuples the pair functions return
PAIR_FIELDS = (
    "doc_length",
    "summary_length",
    "compression",
    "density",
    "coverage",
    "doc_diversity",
    "summary_diversity",
    "abstractiveness",
    "novel_1gram",
    "novel_2gram",
)

#: skip reasons, in the order they are tested (a pair counts under the first)
SKIP_REASONS = ("empty_document", "empty_summary", "duplicate")

Tokenizer = str | Callable[[str], list[str]] | None


def _check_profile(profile: str) -> None:
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {PROFILES}")


def resolve_tokenizer(profile: str, tokenizer: Tokenizer = None) -> Callable[[str], list[str]]:
    """The tokenizer function: ``tokenizer`` (a name or a callable) or, when
    ``None``, the profile's own (:data:`PROFILE_TOKENIZERS`)."""
    _check_profile(profile)
    return get_tokenizer(PROFILE_TOKENIZERS[profile] if tokenizer is None else tokenizer)


def pair_measures(
    document_tokens: Tokens, summary_tokens: Tokens, profile: str = "domainsum"
) -> dict[str, float]:
    """The measures of one (document, summary) pair, as a dict keyed by
    :data:`PAIR_FIELDS`.

    Formulas per profile are in the module docstring (``doc_length = |D|``,
    ``compression = |D| / |S|``, ``density = sum(f**2) / |S|``, ...). Takes token
    lists: tokenize with the profile's tokenizer (:func:`resolve_tokenizer`) to
    match :func:`domain_measures`. Degenerate pairs follow the published code (0 for
    every ratio whose denominator is 0), never raise.
    """
    _check_profile(profile)
    values = fast_pair_values(list(document_tokens), list(summary_tokens), profile)
    return dict(zip(PAIR_FIELDS, values))


# ------------------------------------------------------------ corpus level


def measure_token_pairs(
    documents_tokens: Sequence[Tokens],
    summaries_tokens: Sequence[Tokens],
    profile: str = "domainsum",
    impl: str = "fast",
) -> dict[str, np.ndarray]:
    """Per-pair values of pre-tokenized pairs: a column per :data:`PAIR_FIELDS`
    entry (float64; lengths int64), no pair skipped.

    ``impl="reference"`` runs the straightforward transcription instead of the fast
    path (same values; for tests and benchmarks).
    """
    _check_profile(profile)
    if len(documents_tokens) != len(summaries_tokens):
        raise ValueError(
            f"{len(documents_tokens)} documents but {len(summaries_tokens)} summaries"
        )
    fn = PAIR_IMPLS[impl]
    rows = [fn(list(d), list(s), profile) for d, s in zip(documents_tokens, summaries_tokens)]
    return _columns(rows)


def _columns(rows: list[tuple]) -> dict[str, np.ndarray]:
    if rows:
        arr = np.array(rows, dtype=np.float64).reshape(len(rows), len(PAIR_FIELDS))
    else:
        arr = np.zeros((0, len(PAIR_FIELDS)))
    cols = {name: arr[:, k].copy() for k, name in enumerate(PAIR_FIELDS)}
    for name in ("doc_length", "summary_length"):
        cols[name] = cols[name].astype(np.int64)
    return cols


def _as_text(x) -> str:
    if x is None:
        return ""
    if not isinstance(x, str):
        raise TypeError(f"documents and summaries must be strings, got {type(x).__name__}")
    return x


def measure_pairs(
    documents: Sequence[str | None],
    summaries: Sequence[str | None],
    profile: str = "domainsum",
    tokenizer: Tokenizer = None,
    impl: str = "fast",
    token_counts: Counter | None = None,
    count_mask: Sequence[bool] | None = None,
) -> dict[str, np.ndarray]:
    """Tokenize and measure every pair: the columns of :func:`measure_token_pairs`
    plus ``non_ascii`` (bool: document or summary has a non-ASCII character).

    Tokenizer: ``tokenizer`` (a name of :data:`custom_metrics.tokenize.TOKENIZERS`
    or a callable ``text -> tokens``), by default the profile's
    (:data:`PROFILE_TOKENIZERS`). ``None`` texts count as empty.
    No pair is skipped here; :func:`summarize_pairs` decides. When ``token_counts``
    is given, the tokens of each pair (of each pair whose ``count_mask`` entry is
    true, if given) are added to it in the same pass, e.g. for a vocabulary.
    """
    if len(documents) != len(summaries):
        raise ValueError(f"{len(documents)} documents but {len(summaries)} summaries")
    tokenize = resolve_tokenizer(profile, tokenizer)
    fn = PAIR_IMPLS[impl]
    rows = []
    non_ascii = np.zeros(len(documents), dtype=bool)
    for k, (d, s) in enumerate(zip(documents, summaries)):
        d, s = _as_text(d), _as_text(s)
        non_ascii[k] = not (d.isascii() and s.isascii())
        dt, st = tokenize(d), tokenize(s)
        rows.append(fn(dt, st, profile))
        if token_counts is not None and (count_mask is None or count_mask[k]):
            token_counts.update(dt)
            token_counts.update(st)
    cols = _columns(rows)
    cols["non_ascii"] = non_ascii
    return cols


def find_duplicates(documents: Sequence[str | None], summaries: Sequence[str | None]) -> np.ndarray:
    """Bool mask of pairs whose exact (document, summary) strings occurred earlier."""
    seen: set[tuple] = set()
    out = np.zeros(len(documents), dtype=bool)
    for k, key in enumerate(zip(documents, summaries)):
        if key in seen:
            out[k] = True
        else:
            seen.add(key)
    return out


def summarize_pairs(
    columns: dict[str, np.ndarray],
    profile: str = "domainsum",
    duplicate: np.ndarray | None = None,
    skip_empty: bool = True,
    drop_duplicates: bool = False,
) -> dict[str, float | int | str]:
    """Corpus measures from per-pair columns (:func:`measure_pairs`).

    Means over the used pairs with ``numpy.mean`` (as the DomainSum release), lengths
    also with ``numpy.std`` (ddof 0). Each skipped pair counts under its first reason
    of :data:`SKIP_REASONS`: ``empty_document`` / ``empty_summary`` (no tokens; only
    when ``skip_empty``; with ``skip_empty=False`` such pairs enter the means with the
    published code's zero conventions) and ``duplicate`` (only when
    ``drop_duplicates``). Counts: ``n_pairs`` (input), ``n_used``, ``n_skipped``,
    ``skipped_<reason>``, ``n_duplicate`` (repeats among the input, dropped or not),
    ``n_doc_shorter_than_summary`` and ``n_non_ascii`` (among the used pairs).
    With no used pair every measure is ``nan``.
    """
    _check_profile(profile)
    n = len(columns["doc_length"])
    dl, sl = columns["doc_length"], columns["summary_length"]
    dup = np.zeros(n, bool) if duplicate is None else np.asarray(duplicate, bool)
    if dup.shape != (n,):
        raise ValueError(f"duplicate mask has shape {dup.shape}, expected ({n},)")
    remaining = np.ones(n, dtype=bool)
    skipped = {}
    for reason, mask, active in (
        ("empty_document", dl == 0, skip_empty),
        ("empty_summary", sl == 0, skip_empty),
        ("duplicate", dup, drop_duplicates),
    ):
        hit = remaining & mask if active else np.zeros(n, bool)
        skipped[reason] = int(hit.sum())
        remaining &= ~hit
    used = remaining
    n_used = int(used.sum())
    out: dict[str, float | int | str] = {"profile": profile}

    def mean(x: np.ndarray) -> float:
        return float(np.mean(x[used])) if n_used else math.nan

    def std(x: np.ndarray) -> float:
        return float(np.std(x[used])) if n_used else math.nan

    out["doc_length"] = mean(dl)
    out["doc_length_std"] = std(dl)
    out["summary_length"] = mean(sl)
    out["summary_length_std"] = std(sl)
    for name in PAIR_FIELDS[2:]:
        out[name] = mean(columns[name])
    out["n_pairs"] = n
    out["n_used"] = n_used
    out["n_skipped"] = n - n_used
    for reason in SKIP_REASONS:
        out[f"skipped_{reason}"] = skipped[reason]
    out["n_duplicate"] = int(dup.sum())
    out["n_doc_shorter_than_summary"] = int((used & (dl < sl)).sum())
    na = columns.get("non_ascii")
    out["n_non_ascii"] = int((used & na).sum()) if na is not None else 0
    return out


def domain_measures(
    documents: Sequence[str | None],
    summaries: Sequence[str | None],
    profile: str = "domainsum",
    *,
    skip_empty: bool = True,
    drop_duplicates: bool = False,
    tokenizer: Tokenizer = None,
) -> dict[str, float | int | str]:
    """The characteristic measures of a corpus of (document, summary) pairs.

    Keys: ``doc_length``, ``doc_length_std``, ``summary_length``,
    ``summary_length_std``, ``compression``, ``density``, ``coverage``,
    ``doc_diversity``, ``summary_diversity``, ``abstractiveness``, ``novel_1gram``,
    ``novel_2gram`` (means over used pairs), ``profile`` and the pair counts of
    :func:`summarize_pairs`. Formulas, tokenizer and sources per ``profile``
    (``"domainsum"``: DomainSum release ``get_statistics.py``, NLTK tokens;
    ``"newsroom"``: Grusky et al. 2018 / SummEval ``data_stats``, spaCy tokens) are
    in the module docstring; ``tokenizer`` overrides the profile's (a name of
    :data:`custom_metrics.tokenize.TOKENIZERS` or a callable).

    Example: ``domain_measures(["a b c d"], ["b c x"])`` gives ``compression`` 4/3
    and ``density`` 4/3 (one fragment ``b c``).
    """
    cols = measure_pairs(documents, summaries, profile, tokenizer)
    dup = find_duplicates(documents, summaries)
    return summarize_pairs(cols, profile, dup, skip_empty, drop_duplicates)
