"""Synthetic (document, summary) pairs shaped like news or scientific articles.

Why: timing the domain measures on the size of a real training split (287,113
CNN/DailyMail pairs) needs text that exercises the fragment matcher the way real
summaries do, without the data. Documents draw words from a Zipf law (exponent 1.07
over 30,000 pseudo-words plus ``,`` and ``.``); summaries copy document spans
(geometric length, mean 4) with 20% novel words, so fragments, repeats and
common-word collisions look like real text. ``domsum domain-stats --synthetic`` and
the measures benchmark use them.
"""

from __future__ import annotations

import string

import numpy as np

#: (document, summary) token lengths: news (CNN/DM-like) and long (arXiv/PubMed-like)
LENGTHS = {"news": (780, 56), "long": (6000, 270)}


def _pseudo_words(n: int) -> list[str]:
    """``n`` distinct lowercase letter strings (``a``, ``b``, ..., ``ba``, ...)."""
    letters = string.ascii_lowercase
    out = []
    for k in range(n):
        w = ""
        k += 26  # start at two letters: no clash with clitics or single letters
        while k:
            k, r = divmod(k, 26)
            w = letters[r] + w
        out.append(w)
    return out


def synthetic_pairs(
    n: int,
    doc_len: int = 780,
    summary_len: int = 56,
    seed: int = 0,
    vocab_size: int = 30_000,
    zipf: float = 1.07,
    novel_rate: float = 0.2,
    mean_copy: float = 4.0,
) -> tuple[list[str], list[str]]:
    """``n`` synthetic (document, summary) texts of the given token lengths."""
    rng = np.random.default_rng(seed)
    words = [",", "."] + _pseudo_words(vocab_size - 2)
    p = 1.0 / np.arange(1, vocab_size + 1) ** zipf
    p /= p.sum()
    cdf = np.cumsum(p)
    docs, sums = [], []
    for _ in range(n):
        ids = np.searchsorted(cdf, rng.random(doc_len) * cdf[-1])
        doc = [words[i] for i in ids]
        summ: list[str] = []
        while len(summ) < summary_len:
            if rng.random() < novel_rate:
                summ.append(words[int(np.searchsorted(cdf, rng.random() * cdf[-1]))])
            else:
                start = int(rng.integers(doc_len))
                summ.extend(doc[start : start + int(rng.geometric(1.0 / mean_copy))])
        docs.append(" ".join(doc))
        sums.append(" ".join(summ[:summary_len]))
    return docs, sums
