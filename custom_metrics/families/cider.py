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

In a harness run the documents scored together are a task's documents, on every rank
of a data-parallel run too: each rank counts the document frequencies of its shard's
references, the counts are summed over ranks (the scoring context's ``gather``), and
each rank scores its documents with the idf of the whole run, so every number equals
a single-process run's. ``domsum rescore`` and ``meta-eval --compute`` score a whole
file at once.
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


def reference_frequencies(references: Sequence[str], n: int = N_GRAMS) -> Counter[tuple[str, ...]]:
    """The document frequency of every n-gram (1..n) of ``references``: in how many of
    them it occurs. A part's counts add up to the corpus's, so the parts of a corpus
    scored on several processes can be summed into its idf."""
    return Counter(g for r in references for g in _ngrams(cider_tokens(r), n))


def cider_documents(predictions: Sequence[str], references: Sequence[str], *,
                    n: int = N_GRAMS, sigma: float = SIGMA,
                    corpus: tuple[int, Counter[tuple[str, ...]]] | None = None) -> list[float]:
    """CIDEr-D of every (prediction, reference) pair, idf over the references given.

    Why one call for the whole corpus: the idf is a corpus statistic, so scoring
    documents one by one would give every document 0. ``corpus``: (documents, their
    :func:`reference_frequencies`) of the corpus these references are part of, when it
    is larger than they are (one rank's shard of a data-parallel run).
    """
    if len(predictions) != len(references):
        raise ValueError(f"cider: {len(predictions)} predictions but {len(references)} references")
    if not predictions:
        return []
    documents, df = corpus if corpus is not None else (len(references), reference_frequencies(references, n))
    cands = [_ngrams(cider_tokens(p), n) for p in predictions]
    refs = [_ngrams(cider_tokens(r), n) for r in references]
    idf = _IdfTable(df, math.log(documents))
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
    """Every document's CIDEr-D, with the idf of every part of the corpus ``ctx.gather`` joins.

    Why the gather comes first and never fails: in a data-parallel run every rank must
    join it, also a rank with no documents or one whose counting failed, or the others
    wait for it forever; a failure is passed on and raised on every rank alike.
    """
    references: list[str] = []
    try:
        references = stripped(batch.references)
        part: tuple[int, Counter[tuple[str, ...]]] | str = (len(references), reference_frequencies(references))
    except Exception as exc:  # noqa: BLE001 - raised below, after every process has joined
        part = f"{type(exc).__name__}: {exc}"
    parts = ctx.gather(part)
    failed = [p for p in parts if isinstance(p, str)]
    if failed:
        raise RuntimeError(f"cider: counting the references' n-grams failed: {failed[0]}")
    documents, df = 0, Counter()
    for count, frequencies in parts:
        documents += count
        df.update(frequencies)
    ctx.details["cider_tokenizer"] = "regex \\w+ (NLTK RegexpTokenizer(r'\\w+')), case kept; n=4, sigma=6"
    ctx.details["cider_idf_documents"] = documents  # the whole run's: the N of the idf
    return {"cider": cider_documents(stripped(batch.predictions), references, corpus=(documents, df))}


CIDER = Family(
    name="cider",
    keys=(Key("cider", display="CIDEr-D", unit="score",
              description="CIDEr-D (coco-caption scorer, SummEval tokenization), idf over the task's "
                          "documents (every rank's in a data-parallel run); 0-10"),),
    score=_cider_score,
    description="CIDEr-D as SummEval reports it (pycocoevalcap's scorer, \\w+ tokens); 0-10.",
    source="custom_metrics.families.cider (equal to pycocoevalcap.cider.cider_scorer.CiderScorer)",
)

METRIC_FAMILIES = (CIDER,)
