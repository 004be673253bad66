"""Extractive-fragment matchers between a summary and its source document.

Three matchers are in use in the literature, and they do **not** agree:

``newsroom_fragments``
    The greedy matcher of Newsroom (Grusky, Naaman & Artzi, NAACL 2018, Section 4.1;
    ``newsroom/analyze/fragments.py``, ``Fragments._match``), reused verbatim by
    SummEval's ``data_stats``, HELM and lighteval. For each summary position ``s``
    (left to right) it scans the article left to right; at an article position
    ``t`` whose token equals ``S[s]`` it measures the common run ``k`` of
    ``S[s:]`` and ``A[t:]``, keeps it if strictly longer than the best so far,
    and **resumes the scan at** ``t + k`` (not ``t + 1``). The summary then
    advances by the best length (or by 1 if ``S[s]`` is not in the article).
    Because of the jump, an occurrence that starts inside an earlier run is never
    tried: summary ``x x y`` against article ``x x x y`` gives ``[2, 1]``, not
    ``[3]``. We reproduce that output exactly.

``longest_match_fragments``
    The same greedy walk over the summary, but every article position is tried, so
    each fragment is the longest common run starting at ``s`` (``x x y`` against
    ``x x x y`` gives ``[3]``). Offered for comparison only; no profile uses it.

``domainsum_fragments``
    The two-pointer scan of the DomainSum release (``get_statistics.py``,
    ``calculate_density``): pointers ``i`` (document) and ``j`` (summary) start at 0;
    while both are in range, if ``D[i] == S[j]`` the run is extended as long as the
    tokens keep matching, its length recorded and both pointers advance by it;
    otherwise only ``i`` advances. A summary token absent from the rest of the
    document therefore ends the scan (nothing after it is counted); that is the
    release's behaviour and we keep it.

Every public function takes token lists (any hashable tokens compared with ``==``;
the metrics pass each source's own lowercased tokens: Newsroom and SummEval tokenize
with spaCy's English tokenizer and lowercase the tokens
(:func:`custom_metrics.tokenize.spacy_tokenize`), the DomainSum release calls
``nltk.word_tokenize(text.lower())`` (:func:`custom_metrics.tokenize.word_tokenize`))
and has a straightforward ``_reference_*`` twin kept below, a literal transcription
of the published loops, against which the fast versions are property-tested for
identical output.

How the fast versions are fast:

* tokens are mapped to integer ids once per pair (:class:`PairIndex`);
* the DomainSum scan jumps ``i`` with ``list.index`` (a C loop) instead of a
  Python ``i += 1`` loop: O(|D| + |S|) work, almost all of it in C;
* the Newsroom and longest-match scans only visit article positions whose *bigram*
  equals ``S[s:s+2]``, found by binary search in the sorted document bigram codes.
  That is exact: an occurrence matching a single token (run length 1) never makes
  the scan skip a later position (it resumes at ``t + 1``), and the first
  occurrence of ``S[s]`` is always visited, so the best run is
  ``max(1, longest visited run among the bigram matches)`` and only runs of length
  >= 2 decide which later bigram matches are skipped. Work per pair is
  O((|D| + |S|) log |D| + number of bigram matches tried), instead of the
  reference's O(|S| * |D|).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import count

import numpy as np

__all__ = [
    "PairIndex",
    "newsroom_fragments",
    "longest_match_fragments",
    "domainsum_fragments",
]

# Trigram codes ``(x * V + y) * V + z`` must fit in int64 (V = |D| + |S|).
_MAX_DENSE_VOCAB = 2_097_151  # floor(cbrt(2**63 - 1))


class PairIndex:
    """Integer encoding of one (document, summary) token pair, with lazily built
    sorted n-gram codes of the document.

    A token's id is the position of its first occurrence in ``document + summary``
    (one C-level ``dict.setdefault`` probe per token), so equal tokens get equal ids,
    every document id is ``< len(document)`` and a summary id ``>= len(document)``
    means "not in the document". Ids are below :attr:`vocab_size`
    ``= len(document) + len(summary)``, the base of the n-gram codes.
    """

    __slots__ = (
        "doc", "summary", "vocab_size", "n_doc_types", "doc_ids", "summary_ids",
        "_doc_list", "_summary_list", "_doc_bigrams", "_doc_trigrams",
    )

    def __init__(self, document: Sequence[Hashable], summary: Sequence[Hashable]):
        self.doc = document if isinstance(document, list) else list(document)
        self.summary = summary if isinstance(summary, list) else list(summary)
        n_d, n_s = len(self.doc), len(self.summary)
        first: dict = {}
        put = first.setdefault
        self.doc_ids = np.fromiter(map(put, self.doc, count()), np.int64, n_d)
        self.n_doc_types = len(first)
        self.summary_ids = np.fromiter(map(put, self.summary, count(n_d)), np.int64, n_s)
        self.vocab_size = n_d + n_s
        self._doc_list: list[int] | None = None
        self._summary_list: list[int] | None = None
        self._doc_bigrams: tuple[np.ndarray, np.ndarray] | None = None
        self._doc_trigrams: np.ndarray | None = None

    @property
    def doc_id_limit(self) -> int:
        """Summary ids at or above this are tokens absent from the document."""
        return len(self.doc)

    # Python lists of the ids: indexing a list is much cheaper than a numpy array.
    @property
    def doc_list(self) -> list[int]:
        if self._doc_list is None:
            self._doc_list = self.doc_ids.tolist()
        return self._doc_list

    @property
    def summary_list(self) -> list[int]:
        if self._summary_list is None:
            self._summary_list = self.summary_ids.tolist()
        return self._summary_list

    def bigram_codes(self, ids: np.ndarray) -> np.ndarray:
        return ids[:-1] * self.vocab_size + ids[1:]

    def trigram_codes(self, of_summary: bool = False) -> np.ndarray:
        """Exact trigram codes of the document (or summary). Above
        :data:`_MAX_DENSE_VOCAB` types the bigram part is rank-reduced first so that
        the code still fits in int64."""
        ids = self.summary_ids if of_summary else self.doc_ids
        if len(ids) < 3:
            return np.zeros(0, np.int64)
        v = self.vocab_size
        if v <= _MAX_DENSE_VOCAB:
            return (ids[:-2] * v + ids[1:-1]) * v + ids[2:]
        doc_bi = self.bigram_codes(self.doc_ids)
        _, rank = np.unique(
            np.concatenate([doc_bi, self.bigram_codes(self.summary_ids)]), return_inverse=True
        )
        rank = rank[len(doc_bi):] if of_summary else rank[: len(doc_bi)]
        return rank[:-1] * v + ids[2:]

    def doc_bigrams(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted document bigram codes and their start positions (ascending within
        equal codes)."""
        if self._doc_bigrams is None:
            ids = self.doc_ids
            n = len(ids) - 1
            if n <= 0:
                empty = np.zeros(0, np.int64)
                self._doc_bigrams = (empty, empty)
            else:
                codes = self.bigram_codes(ids)
                v2 = self.vocab_size * self.vocab_size
                if v2 < (2**63 - 1) // (n + 1):
                    # One plain sort of code * n + position: cheaper than a stable argsort.
                    key = np.sort(codes * n + np.arange(n, dtype=np.int64))
                    self._doc_bigrams = (key // n, key % n)
                else:  # pragma: no cover - needs > ~3 million distinct tokens in a pair
                    order = np.argsort(codes, kind="stable")
                    self._doc_bigrams = (codes[order], order)
        return self._doc_bigrams

    def doc_trigrams(self) -> np.ndarray:
        """Sorted document trigram codes."""
        if self._doc_trigrams is None:
            self._doc_trigrams = np.sort(self.trigram_codes())
        return self._doc_trigrams


# --------------------------------------------------------------------- Newsroom


def greedy_scan(index: PairIndex, skip_inside_runs: bool) -> list[int]:
    """Fragment lengths of the greedy summary walk (see module docstring)."""
    S = index.summary_list
    A = index.doc_list
    n_s, n_a = len(S), len(A)
    if n_s == 0 or n_a == 0:
        return []
    in_doc = index.doc_id_limit
    frags: list[int] = []
    if n_s >= 2 and n_a >= 2:
        codes, positions = index.doc_bigrams()
        queries = index.bigram_codes(index.summary_ids)
        lo = np.searchsorted(codes, queries, "left").tolist()
        hi = np.searchsorted(codes, queries, "right").tolist()
        pos = positions.tolist()
    else:
        lo = hi = [0] * n_s
        pos = []
    s = 0
    while s < n_s:
        if S[s] >= in_doc:  # token not in the article
            s += 1
            continue
        best = 1  # the first occurrence of S[s] is always tried
        limit = n_s - s
        if limit > 1:
            resume = 0
            for t in pos[lo[s]:hi[s]]:  # starts of A's bigrams equal to S[s:s+2]
                if t < resume:
                    continue  # inside an earlier run: Newsroom's scan jumped over it
                k = 2
                m = min(limit, n_a - t)
                while k < m and A[t + k] == S[s + k]:
                    k += 1
                if k > best:
                    best = k
                    if k == limit:
                        break  # nothing later can be strictly longer
                if skip_inside_runs:
                    resume = t + k
        frags.append(best)
        s += best
    return frags


def newsroom_fragments(
    article_tokens: Sequence[Hashable], summary_tokens: Sequence[Hashable]
) -> list[int]:
    """Fragment lengths of Newsroom's greedy matcher, in summary order.

    Source: Grusky et al. (2018), ``newsroom/analyze/fragments.py``
    (``Fragments._match``), also used by SummEval, HELM and lighteval. Output is
    identical to that code, including its jump quirk:
    ``newsroom_fragments("x x x y".split(), "x x y".split()) == [2, 1]``.
    Tokens are compared with ``==``; pass lowercased spaCy tokens
    (:func:`custom_metrics.tokenize.spacy_tokenize`) to match Newsroom's and
    SummEval's defaults (spaCy English tokenizer, ``case=False``). Coverage = ``sum(f) / |S|``, density =
    ``sum(f**2) / |S|``.
    """
    return greedy_scan(PairIndex(article_tokens, summary_tokens), skip_inside_runs=True)


def longest_match_fragments(
    article_tokens: Sequence[Hashable], summary_tokens: Sequence[Hashable]
) -> list[int]:
    """Greedy walk over the summary taking, at each position, the longest common run
    with *any* article position (``x x y`` vs ``x x x y`` gives ``[3]``).

    Not Newsroom's output (see :func:`newsroom_fragments`); offered for comparison.
    Tokens compared with ``==`` (pass lowercased tokens, as above); density
    from it would be ``sum(f**2) / |S|``. Source: the "longest match" reading of
    Grusky et al. (2018), Section 4.1, without their scan's jump.
    """
    return greedy_scan(PairIndex(article_tokens, summary_tokens), skip_inside_runs=False)


# -------------------------------------------------------------------- DomainSum


def two_pointer_scan(doc: list, summary: list) -> list[int]:
    n_d, n_s = len(doc), len(summary)
    frags: list[int] = []
    i = j = 0
    find = doc.index
    while j < n_s:
        try:
            i = find(summary[j], i)  # next i with D[i] == S[j]; none: the scan ends
        except ValueError:
            break
        k = 1
        m = min(n_d - i, n_s - j)
        while k < m and doc[i + k] == summary[j + k]:
            k += 1
        frags.append(k)
        i += k
        j += k
    return frags


def domainsum_fragments(
    document_tokens: Sequence[Hashable], summary_tokens: Sequence[Hashable]
) -> list[int]:
    """Fragment lengths of the DomainSum release's two-pointer scan.

    Source: DomainSum release, ``get_statistics.py`` (``calculate_density``);
    density = ``sum(f**2) / |S|``. Tokens compared with ``==``; the release uses
    ``nltk.word_tokenize(text.lower())`` (:func:`custom_metrics.tokenize.word_tokenize`,
    NLTK's tokenizer). ``i`` walks the document, ``j`` the summary;
    on a match both advance by the run length, otherwise only ``i`` advances, so a
    summary token missing from the rest of the document ends the scan. Example:
    document ``a b c d``, summary ``b c a d`` gives ``[2]``: ``b c`` matches at
    ``i = 1``, then ``a`` does not occur at or after ``i = 3`` and the scan stops
    before reaching ``d``.
    """
    doc = document_tokens if isinstance(document_tokens, list) else list(document_tokens)
    summ = summary_tokens if isinstance(summary_tokens, list) else list(summary_tokens)
    return two_pointer_scan(doc, summ)


# ------------------------------------------------------------ reference scans


def reference_newsroom_fragments(article_tokens, summary_tokens) -> list[int]:
    """Literal transcription of Newsroom's ``Fragments._match`` loop: O(|S| * |A|)."""
    a, b = list(summary_tokens), list(article_tokens)
    out: list[int] = []
    a_start = 0
    while a_start < len(a):
        best_len = 0
        b_start = 0
        while b_start < len(b):
            if a[a_start] == b[b_start]:
                a_end, b_end = a_start, b_start
                while a_end < len(a) and b_end < len(b) and b[b_end] == a[a_end]:
                    a_end += 1
                    b_end += 1
                length = a_end - a_start
                if length > best_len:
                    best_len = length
                b_start = b_end
            else:
                b_start += 1
        if best_len > 0:
            out.append(best_len)
            a_start += best_len
        else:
            a_start += 1
    return out


def _reference_longest_match_fragments(article_tokens, summary_tokens) -> list[int]:
    """Every article start tried for every summary start: O(|S| * |A| * run)."""
    a, b = list(summary_tokens), list(article_tokens)
    out: list[int] = []
    s = 0
    while s < len(a):
        best = 0
        for t in range(len(b)):
            k = 0
            while s + k < len(a) and t + k < len(b) and a[s + k] == b[t + k]:
                k += 1
            best = max(best, k)
        if best:
            out.append(best)
            s += best
        else:
            s += 1
    return out


def reference_domainsum_fragments(document_tokens, summary_tokens) -> list[int]:
    """Literal transcription of the DomainSum release's ``calculate_density`` scan."""
    d, s = list(document_tokens), list(summary_tokens)
    out: list[int] = []
    i = j = 0
    while i < len(d) and j < len(s):
        if d[i] == s[j]:
            k = 0
            while i + k < len(d) and j + k < len(s) and d[i + k] == s[j + k]:
                k += 1
            if k > 0:
                out.append(k)
            i += k
            j += k
        else:
            i += 1
    return out
