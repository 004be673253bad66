"""Per-domain corpus statistics: the measures and the domain vocabulary of one domain's pairs,
and the vocabulary overlap of several domains (DomainSum Table 5, Figures 3 and 4).

Why here: the computation needs no suite fact (texts in, numbers and word lists out),
so ``domsum domain-stats`` (:mod:`lm_eval_tasks.analysis.domain_stats`) and the report's
domain figures (:mod:`lm_eval_tasks.report.figures`) share it.

A domain's vocabulary is its most frequent tokens over documents and summaries (the
measures' tokens), excluding English stopwords (NLTK's list when its data is installed,
else the bundled copy in :mod:`custom_metrics.stopwords` as NLTK shipped it before 2025,
plus the clitics ``n't``, ``'s``, ...) and punctuation-only tokens; ties by token.
Overlap(A, B) = ``|A & B| / min(|A|, |B|) * 100``, i.e. ``|A & B| / 10,000`` as in the
paper when both vocabularies are full.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Executor

import numpy as np

from custom_metrics.analysis.measures import PAIR_FIELDS, find_duplicates, measure_pairs, summarize_pairs
from custom_metrics.stopwords import ENGLISH_STOPWORD_LIST, NLTK_2025_ADDITIONS
from custom_metrics.tokenize import is_punct

__all__ = ["BUNDLED_STOPWORDS", "CLITICS", "analyse_pairs", "domain_vocabulary", "overlap_matrix", "stopwords"]

#: NLTK's English stopword list of 179 words (nltk_data corpora/stopwords/english before its
#: 2025 additions), used when the NLTK data package is not installed (no download at run time)
BUNDLED_STOPWORDS: tuple[str, ...] = tuple(w for w in ENGLISH_STOPWORD_LIST if w not in NLTK_2025_ADDITIONS)
#: tokens our tokenizer splits off contractions: function words, never vocabulary
CLITICS = ("n't", "'s", "'m", "'d", "'ll", "'re", "'ve")


def stopwords() -> tuple[frozenset[str], str]:
    """English stopwords and where they came from (``nltk`` or ``bundled``)."""
    try:
        from nltk.corpus import stopwords as nltk_stopwords

        words = set(nltk_stopwords.words("english"))
        source = "nltk"
    except (LookupError, ImportError, OSError):
        words = set(BUNDLED_STOPWORDS)
        source = "bundled NLTK list"
    return frozenset(words | set(CLITICS)), source


def domain_vocabulary(counts: Counter, size: int, stop: frozenset[str]) -> list[str]:
    """The ``size`` most frequent non-stopword, non-punctuation tokens (ties by token)."""
    items = [(w, c) for w, c in counts.items() if w not in stop and not is_punct(w)]
    items.sort(key=lambda wc: (-wc[1], wc[0]))
    return [w for w, _ in items[:size]]


def overlap_matrix(vocabs: Sequence[Sequence[str]]) -> list[list[float]]:
    """Pairwise ``|A & B| / min(|A|, |B|) * 100`` (nan when one is empty)."""
    sets = [set(v) for v in vocabs]
    out = []
    for a in sets:
        row = []
        for b in sets:
            denom = min(len(a), len(b))
            row.append(len(a & b) / denom * 100 if denom else math.nan)
        out.append(row)
    return out


def _work(task: tuple) -> tuple[int, dict[str, np.ndarray], Counter]:
    """Measure one chunk of pairs; count its tokens for the vocabulary in the same pass."""
    index, documents, summaries, vocab_mask, profile, tokenizer = task
    counts: Counter = Counter()
    cols = measure_pairs(documents, summaries, profile, tokenizer, token_counts=counts,
                         count_mask=vocab_mask)
    return index, cols, counts


def analyse_pairs(
    documents: Sequence[str],
    summaries: Sequence[str],
    profile: str = "domainsum",
    executor: Executor | None = None,
    chunk_size: int | None = None,
    workers: int = 1,
    skip_empty: bool = True,
    drop_duplicates: bool = False,
    desc: str = "",
    progress: bool | None = None,
    tokenizer: str | None = None,
) -> tuple[dict, Counter]:
    """Measures (as :func:`custom_metrics.domain_measures`, identical values) and the
    token counts of one domain; chunks go to ``executor`` when given. ``tokenizer``:
    a name of :data:`custom_metrics.tokenize.TOKENIZERS` (``None``: the profile's).
    ``progress``: bar over pairs (``None``: as ``$DOMSUM_PROGRESS`` says, see
    :mod:`custom_metrics.progress`)."""
    from custom_metrics.progress import bar as progress_bar

    n = len(documents)
    dup = find_duplicates(documents, summaries)
    vocab_mask = ~(dup & drop_duplicates)
    if chunk_size is None:
        chunk_size = max(64, min(5000, math.ceil(n / max(1, 4 * workers))))
    tasks = [
        (k, documents[i : i + chunk_size], summaries[i : i + chunk_size],
         vocab_mask[i : i + chunk_size], profile, tokenizer)
        for k, i in enumerate(range(0, n, chunk_size))
    ]
    results: dict[int, tuple] = {}
    counts: Counter = Counter()
    bar = progress_bar(n, f"{desc or 'pairs'}: measures", unit="pair", enabled=progress,
                       leave=False)
    mapped = executor.map(_work, tasks) if executor is not None else map(_work, tasks)
    for index, cols, c in mapped:
        results[index] = cols
        counts.update(c)
        bar.update(len(cols["doc_length"]))
    bar.close()
    if results:
        parts = [results[k] for k in sorted(results)]
        cols = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    else:
        cols = {name: np.zeros(0) for name in PAIR_FIELDS}
        cols.update(doc_length=np.zeros(0, np.int64), summary_length=np.zeros(0, np.int64),
                    non_ascii=np.zeros(0, bool))
    stats = summarize_pairs(cols, profile, dup, skip_empty, drop_duplicates)
    return stats, counts
