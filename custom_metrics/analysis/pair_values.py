"""The per-pair values behind the domain measures: n-gram diversity, coverage and
novelty of one (document, summary) pair, in a fast and a reference implementation.

Why a module of its own: the formulas of one pair are the part a reader checks against
the published code (DomainSum's ``get_statistics.py``, Newsroom's ``fragments.py``),
and the two implementations are property-tested to give identical floats;
:mod:`custom_metrics.analysis.measures` adds profiles, tokenizing, skipping and corpus means.
:func:`reference_pair_values` is a straightforward transcription of the published
code; :func:`fast_pair_values` uses integer token ids and sorted n-gram codes (numpy).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from custom_metrics.analysis.fragments import (
    PairIndex,
    greedy_scan,
    reference_domainsum_fragments,
    reference_newsroom_fragments,
    two_pointer_scan,
)

Tokens = Sequence[Hashable]


# ------------------------------------------------------------ n-gram helpers


def _ngrams(tokens: Sequence, n: int) -> list[tuple]:
    """``nltk.util.ngrams``: the contiguous n-grams of ``tokens`` (none if shorter)."""
    return list(zip(*(tokens[i:] for i in range(n))))


def ngram_diversity(tokens: Tokens, max_n: int = 3) -> float:
    """Diversity of a text: ``(1/max_n) * sum_{n=1..max_n} |U_n| / |G_n|``.

    ``U_n`` is the set and ``G_n`` the list of the text's n-grams; a term is 0 when
    the text has no n-gram of that order. Source: DomainSum release,
    ``calculate_average_diversity`` (``max_n = 3``). Tokens: as given (the measures
    use the profile's tokenizer, :data:`custom_metrics.analysis.measures.PROFILE_TOKENIZERS`).
    """
    total = 0
    for n in range(1, max_n + 1):
        grams = _ngrams(tokens, n)
        total += len(set(grams)) / len(grams) if grams else 0
    return total / max_n


def ngram_coverage(document_tokens: Tokens, summary_tokens: Tokens, max_n: int = 3) -> float:
    """DomainSum coverage of one pair: ``(1/max_n) * sum_n |U_n(S) & U_n(D)| / |U_n(S)|``.

    The share of the summary's *unique* n-grams found in the document, averaged over
    n = 1..max_n (a term is 0 when the summary has no n-gram of that order). Source:
    DomainSum release, ``calculate_average_coverage``. Not Newsroom's coverage (see
    :func:`custom_metrics.analysis.measures.pair_measures` with ``profile="newsroom"``).
    """
    total = 0
    for n in range(1, max_n + 1):
        s = set(_ngrams(summary_tokens, n))
        d = set(_ngrams(document_tokens, n))
        total += sum(1 for g in s if g in d) / len(s) if s else 0
    return total / max_n


def novel_ngram_ratio(document_tokens: Tokens, summary_tokens: Tokens, n: int = 3) -> float:
    """Share of the summary's unique n-grams absent from the document:
    ``|U_n(S) - U_n(D)| / |U_n(S)|`` (0 when ``U_n(S)`` is empty).

    ``n = 3`` is DomainSum's abstractiveness. Source: DomainSum release,
    ``calculate_novel_ngrams``.
    """
    s = set(_ngrams(summary_tokens, n))
    if not s:
        return 0
    return len(s - set(_ngrams(document_tokens, n))) / len(s)


# ------------------------------------------------------------ per-pair values


def _n_unique_sorted(sorted_codes: np.ndarray) -> int:
    if sorted_codes.size == 0:
        return 0
    return int(np.count_nonzero(sorted_codes[1:] != sorted_codes[:-1])) + 1


def _n_found(sorted_codes: np.ndarray, queries: np.ndarray) -> int:
    """How many of ``queries`` occur in ``sorted_codes``."""
    if queries.size == 0 or sorted_codes.size == 0:
        return 0
    idx = np.searchsorted(sorted_codes, queries)
    np.minimum(idx, sorted_codes.size - 1, out=idx)
    return int(np.count_nonzero(sorted_codes[idx] == queries))


def fast_pair_values(doc: list, summ: list, profile: str) -> tuple:
    """All per-pair values of :data:`custom_metrics.analysis.measures.PAIR_FIELDS`, fast path (see the
    module docstring)."""
    n_d, n_s = len(doc), len(summ)
    ix = PairIndex(doc, summ)
    in_doc = ix.doc_id_limit

    # Document n-gram sets (sorted integer codes).
    if profile == "newsroom":
        doc_bi = ix.doc_bigrams()[0]
    else:
        doc_bi = np.sort(ix.bigram_codes(ix.doc_ids)) if n_d >= 2 else np.zeros(0, np.int64)
    doc_tri = ix.doc_trigrams()
    doc_unique = (ix.n_doc_types, _n_unique_sorted(doc_bi), _n_unique_sorted(doc_tri))

    # Summary n-gram sets and their overlap with the document.
    b = ix.summary_ids
    s_uni = np.unique(b)
    s_bi = np.unique(ix.bigram_codes(b)) if n_s >= 2 else np.zeros(0, np.int64)
    s_tri = np.unique(ix.trigram_codes(of_summary=True))
    sum_unique = (s_uni.size, s_bi.size, s_tri.size)
    found = (
        int(np.count_nonzero(s_uni < in_doc)),
        _n_found(doc_bi, s_bi),
        _n_found(doc_tri, s_tri),
    )

    # Same arithmetic, in the same order, as the reference (identical floats).
    doc_div = 0
    sum_div = 0
    for n in (1, 2, 3):
        g = n_d - n + 1
        doc_div += doc_unique[n - 1] / g if g > 0 else 0
        g = n_s - n + 1
        sum_div += sum_unique[n - 1] / g if g > 0 else 0
    doc_div /= 3
    sum_div /= 3
    novel = [
        (sum_unique[k] - found[k]) / sum_unique[k] if sum_unique[k] > 0 else 0
        for k in range(3)
    ]
    if profile == "newsroom":
        frags = greedy_scan(ix, skip_inside_runs=True)
        coverage = sum(frags) / n_s if n_s else 0
    else:
        frags = two_pointer_scan(ix.doc, ix.summary)
        coverage = 0
        for k in range(3):
            coverage += found[k] / sum_unique[k] if sum_unique[k] else 0
        coverage /= 3
    density = sum(f * f for f in frags) / n_s if n_s else 0
    compression = n_d / n_s if n_s else 0
    return (n_d, n_s, compression, density, coverage, doc_div, sum_div,
            novel[2], novel[0], novel[1])


def reference_pair_values(doc: Tokens, summ: Tokens, profile: str) -> tuple:
    """Straightforward transcription of the published code (one measure at a time,
    Python sets of n-gram tuples, the literal fragment loops)."""
    doc, summ = list(doc), list(summ)
    novel = []
    for n in (1, 2, 3):
        d, s = set(_ngrams(doc, n)), set(_ngrams(summ, n))
        novel.append(len(s - d) / len(s) if len(s) > 0 else 0)
    compression = len(doc) / len(summ) if len(summ) > 0 else 0
    if profile == "newsroom":
        frags = reference_newsroom_fragments(doc, summ)
        coverage = sum(frags) / len(summ) if len(summ) > 0 else 0
    else:
        frags = reference_domainsum_fragments(doc, summ)
        coverage = 0
        for n in (1, 2, 3):
            s, d = set(_ngrams(summ, n)), set(_ngrams(doc, n))
            coverage += sum(1 for g in s if g in d) / len(s) if s else 0
        coverage /= 3
    density = sum(f**2 for f in frags) / len(summ) if len(summ) > 0 else 0
    return (len(doc), len(summ), compression, density, coverage,
            ngram_diversity(doc), ngram_diversity(summ), novel[2], novel[0], novel[1])


#: the two implementations of the per-pair values, by the ``impl=`` name the measures take
PAIR_IMPLS: dict[str, Callable[[list, list, str], tuple]] = {
    "fast": fast_pair_values,
    "reference": reference_pair_values,
}


__all__ = ["PAIR_IMPLS", "Tokens", "fast_pair_values", "ngram_coverage", "ngram_diversity", "novel_ngram_ratio",
           "reference_pair_values"]
