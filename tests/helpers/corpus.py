"""A synthetic corpus shaped like scientific prose, for vocabulary tests and benchmarks.

Why synthetic: the vocabulary builder's speed and exactness must be checked on
millions of words, which no fixture holds; the corpus mimics real text (Zipfian word
types, capitalisation, punctuation attached to words, citations) so the tokenizer
meets the cases it meets in practice.
"""

from __future__ import annotations

import bisect
import itertools
import random

from custom_metrics.stopwords import ENGLISH_STOPWORD_LIST

# Frequent content words of scientific/medical prose: ranks right after the stopwords.
DOMAIN_WORDS = (
    "patients study results also using two model data used one analysis time group "
    "treatment cells however may case effect high different first clinical levels "
    "significant found well risk based method system increased associated function "
    "compared energy field figure values disease studies expression observed years "
    "number potential protein shown state including performed cancer age total"
).split()
_ONSETS = ["", "", "b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "v",
           "w", "st", "pr", "tr", "ch", "th", "br", "cl", "gr", "sp", "pl", "sc"]
_NUCLEI = ["a", "e", "i", "o", "u", "a", "e", "i", "o", "ea", "io", "ou", "ai", "y"]
_CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "d", "nt", "st", "ng", "ct", "x", "ph"]
_SUFFIXES = ["", "", "", "", "s", "ed", "ing", "tion", "al", "ic", "ity", "ous", "ly", "ment"]


def _types(n: int, rng: random.Random) -> list[str]:
    """``n`` distinct word types, most frequent first: stopwords (the most frequent
    words of English), frequent domain words, then pronounceable made-up words (1-4
    syllables and a suffix), a few numbers and hyphenated compounds."""
    types = [w for w in ENGLISH_STOPWORD_LIST if "'" not in w]
    types += [w for w in DOMAIN_WORDS if w not in types]
    seen = set(types)

    def word() -> str:
        k = rng.choices([1, 2, 3, 4], [20, 40, 28, 12])[0]
        w = "".join(rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS)
                    for _ in range(k))
        return w + rng.choice(_SUFFIXES)

    while len(types) < n:
        r = rng.random()
        if r < 0.03:
            w = str(rng.choice([rng.randint(0, 100), rng.randint(1900, 2024),
                                round(rng.uniform(0, 10), 2)]))
        elif r < 0.06:
            w = word() + "-" + word()
        else:
            w = word()
        if len(w) > 1 and w not in seen:
            seen.add(w)
            types.append(w)
    return types


def synthetic_corpus(n_words: int, seed: int = 0, n_types: int = 60000,
                     doc_words: int = 400) -> list[str]:
    """Documents totalling about ``n_words`` whitespace-delimited words."""
    rng = random.Random(seed)
    types = _types(n_types, rng)
    cum = list(itertools.accumulate(1.0 / (r + 1) ** 1.07 for r in range(len(types))))
    total = cum[-1]
    docs: list[str] = []
    made = 0
    while made < n_words:
        n = max(20, int(rng.gauss(doc_words, doc_words / 4)))
        words = []
        start = True
        for _ in range(n):
            w = types[bisect.bisect_left(cum, rng.random() * total)]
            x = rng.random()
            if start or x < 0.02:
                w = w.capitalize()
            start = False
            if x > 0.93:
                w += "," if x < 0.975 else "."
                start = x >= 0.975
            elif 0.90 < x < 0.905:
                w = f"({w})"
            elif 0.905 < x < 0.907:
                w += "'s"
            elif 0.907 < x < 0.908:
                w = f"[{rng.randint(1, 60)}]"
            words.append(w)
        docs.append(" ".join(words) + ".")
        made += n
    return docs
