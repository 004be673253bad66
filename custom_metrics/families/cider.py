"""CIDEr-D (Vedantam et al., 2015, "CIDEr: Consensus-based Image Description Evaluation").

SummEval (Fabbri et al., 2021) reports CIDEr among its summarization metrics; the suite
follows its ``CiderMetric`` convention, which runs the coco-caption scorer
(``pycocoevalcap.cider.cider_scorer.CiderScorer``, the "CIDEr-D" variant) over text
tokenized by NLTK's ``RegexpTokenizer(r"\\w+")`` with case kept.

For a candidate ``c`` and its references ``S`` (one reference per document here), with
``g_n(x)`` the TF-IDF vector of the n-grams of ``x`` (tf = count in ``x``, idf =
``log(N) - log(max(1, df))`` where ``df`` counts the scored documents whose references
hold the n-gram and ``N`` is the number of documents scored together)::

    CIDEr-D_n(c, S) = 1/|S| * sum_s  exp(-(l_c - l_s)^2 / (2 sigma^2)) *
                      <min(g_n(c), g_n(s)), g_n(s)> / (|g_n(c)| |g_n(s)|)
    CIDEr-D(c, S)   = 10 * 1/4 * sum_{n=1..4} CIDEr-D_n(c, S)

with the candidate's vector clipped by the reference's, ``sigma = 6`` and ``l`` the
length the coco-caption scorer uses (its count of bigrams: words - 1). The idf comes
from the references of the documents scored together, so the number of a document
depends on its corpus; the corpus score is the mean over documents, as in
coco-caption and SummEval. A corpus of one document scores 0 (every idf is 0).

Scale: 0-10 (the coco-caption factor 10; typical summaries score well under 2).
Higher is better. Tested against ``pycocoevalcap``'s scorer on shared inputs.

In a harness run the documents scored together are a task's documents on one process
(with data parallelism, one rank's shard: each rank's idf comes from its own shard);
``domsum rescore`` and ``meta-eval --compute`` score a whole file at once.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from custom_metrics.registry import Batch, Context, Family, Key, stripped

_WORD = re.compile(r"\w+")   # NLTK RegexpTokenizer(r"\w+") is re.findall of this pattern

N_GRAMS = 4
SIGMA = 6.0


def cider_tokens(text: str) -> list[str]:
    """SummEval's CIDEr tokenization: runs of word characters, case kept."""
    return _WORD.findall(text or "")


def _ngrams(words: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i:i + k]) for k in range(1, n + 1) for i in range(len(words) - k + 1))


def _vector(counts: Counter[tuple[str, ...]], idf: dict[tuple[str, ...], float], n: int
            ) -> tuple[list[dict[tuple[str, ...], float]], list[float], int]:
    vec: list[dict[tuple[str, ...], float]] = [{} for _ in range(n)]
    for gram, tf in counts.items():
        vec[len(gram) - 1][gram] = tf * idf[gram]
    norms = [math.sqrt(sum(v * v for v in part.values())) for part in vec]
    bigrams = sum(tf for gram, tf in counts.items() if len(gram) == 2)
    return vec, norms, bigrams


def cider_documents(predictions: Sequence[str], references: Sequence[str], *,
                    n: int = N_GRAMS, sigma: float = SIGMA) -> list[float]:
    """CIDEr-D of every (prediction, reference) pair, idf over the references given.

    Why one call for the whole corpus: the idf is a corpus statistic, so scoring
    documents one by one would give every document 0.
    """
    if len(predictions) != len(references):
        raise ValueError(f"cider: {len(predictions)} predictions but {len(references)} references")
    if not predictions:
        return []
    cands = [_ngrams(cider_tokens(p), n) for p in predictions]
    refs = [_ngrams(cider_tokens(r), n) for r in references]
    df: Counter[tuple[str, ...]] = Counter(g for r in refs for g in r)
    log_n = math.log(len(refs))
    idf = _IdfTable(df, log_n)
    scores = []
    for cand, ref in zip(cands, refs):
        vc, nc, lc = _vector(cand, idf, n)
        vr, nr, lr = _vector(ref, idf, n)
        penalty = math.exp(-((lc - lr) ** 2) / (2 * sigma ** 2))
        total = 0.0
        for k in range(n):
            dot = sum(min(w, vr[k].get(g, 0.0)) * vr[k].get(g, 0.0) for g, w in vc[k].items())
            if nc[k] and nr[k]:
                dot /= nc[k] * nr[k]
            total += dot * penalty
        scores.append(10.0 * total / n)
    return scores


class _IdfTable(dict):
    """idf of an n-gram: ``log N - log max(1, df)`` (unseen n-grams get ``log N``)."""

    def __init__(self, df: Counter[tuple[str, ...]], log_n: float) -> None:
        super().__init__()
        self._df, self._log_n = df, log_n

    def __missing__(self, gram: tuple[str, ...]) -> float:
        value = self._log_n - math.log(max(1.0, self._df.get(gram, 0)))
        self[gram] = value
        return value


def cider(predictions: Sequence[str], references: Sequence[str]) -> float:
    """Corpus CIDEr-D: the mean of :func:`cider_documents` (NaN for an empty corpus)."""
    scores = cider_documents(predictions, references)
    return sum(scores) / len(scores) if scores else float("nan")


# =========================================================================== the family record


def _cider_score(batch: Batch, ctx: Context) -> dict[str, list]:
    ctx.details["cider_tokenizer"] = "regex \\w+ (NLTK RegexpTokenizer(r'\\w+')), case kept; n=4, sigma=6"
    ctx.details["cider_idf_documents"] = len(batch)
    return {"cider": cider_documents(stripped(batch.predictions), stripped(batch.references))}


CIDER = Family(
    name="cider",
    keys=(Key("cider", display="CIDEr-D", unit="score",
              description="CIDEr-D (coco-caption scorer, SummEval tokenization), idf over the documents "
                          "scored together; 0-10"),),
    score=_cider_score,
    description="CIDEr-D as SummEval reports it (pycocoevalcap's scorer, \\w+ tokens); 0-10.",
    source="custom_metrics.families.cider (equal to pycocoevalcap.cider.cider_scorer.CiderScorer)",
)

METRIC_FAMILIES = (CIDER,)
