"""ROUGE-1/2/L, the stemming switch, and the papers' aggregate numbers.

Formula: per document, the F1 of unigram (ROUGE-1), bigram (ROUGE-2) and
longest-common-subsequence (ROUGE-L, summary-level without sentence splitting: rouge-score's
``rougeL``, not ``rougeLsum``) overlap between prediction and reference, as computed by
Google's ``rouge-score`` package (the reference implementation; we call its tokenizer).
Corpus scores are plain means of the per-document F1 values, as fractions in [0, 1].

- ``rouge_geo``: geometric mean of the three corpus means, (R1 * R2 * RL) ** (1/3) — the
  single "ROUGE" number as the AdaptEval and DomainSum papers define it in their text.
- ``rouge_mean``: their arithmetic mean, (R1 + R2 + RL) / 3 — what the DomainSum release
  (``scripts/json_evaluation.py``) prints as ``rougeSUM`` (a mean of three scores, not
  rouge-score's ``rougeLsum``).

Tokenizer: rouge-score's ``DefaultTokenizer`` (lowercase, every non ``[a-z0-9]`` character
becomes a separator; with stemming, Porter stems of tokens longer than 3 characters).
Consequence: text in non-Latin scripts has no tokens and scores 0 — ROUGE is not
meaningful there. Empty predictions score 0 (rouge-score returns 0 F1 for an empty side).

Stemming: rouge-score's Porter stemmer, on or off by the ``rouge_stemming`` setting, else
by the convention the caller passes (:func:`stemming_for`): the task side passes the
benchmark's release convention from its record (``lm_eval_tasks/benchmarks/``:
DomainSum's release scores without stemming, AdaptEval's with it; each record says where
its value comes from), and the results record which applied (``rouge_stemming_source``).
No setting and no convention (a direct library call): on, the library default.

Mean versus bootstrap: ``evaluate``'s ROUGE aggregates with ``use_aggregator=True``, i.e.
``rouge_score.scoring.BootstrapAggregator`` (1,000 unseeded resamples of the documents
with replacement; ``mid`` = the median of the 1,000 resample means), so the DomainSum
release's ``rouge1``/``rouge2``/``rougeL`` are bootstrap mids and its ``rougeSUM`` the mean
of those three mids. The suite's default is the plain mean (``aggregate_rouge``): it is
the quantity the mid estimates, it is deterministic, and the harness derives its standard
error from the per-document values. The mid differs from the plain mean by resampling
noise only (typically below 1e-3 on 500 documents, and it changes from run to run).
:func:`aggregate_rouge_bootstrap` reproduces the aggregator exactly (same resampling
loop and percentiles; equal to ``BootstrapAggregator`` under the same NumPy seed) for
those who want the release's number to the last digit.

Which defaults follow the paper and which the release: stemming follows the releases
(no paper states it); both means are reported (``rouge_geo`` as the papers' text defines
"ROUGE", ``rouge_mean`` as the DomainSum release computes ``rougeSUM``); the corpus
aggregate is the plain mean where the DomainSum release's is the bootstrap mid
(:func:`aggregate_rouge_bootstrap` offers the release's).

Speed: tokenization is rouge-score's own (with a memoised Porter stemmer); n-gram
overlap uses ``Counter`` intersections and the LCS length the bit-parallel algorithm
of Allison & Dix (1986) / Hyyrö (2004) on Python integers, instead of rouge-score's
quadratic Python table. The formulas are rouge-score's, operation for operation, so
scores are identical (tested against ``rouge_scorer.RougeScorer`` with and without
stemming, on the fixtures and on random texts).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from custom_metrics.registry import NAN, Batch, Context, Family, Key, column_means
from custom_metrics.setting import Setting, as_bool

log = logging.getLogger(__name__)

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")

#: stemming when neither the setting nor a convention says (direct library calls)
DEFAULT_STEMMING = True


class _MemoStemmer:
    """rouge-score's own Porter stemmer (NLTK's) with a memo: same stems, computed once per word.

    Stemming dominates rouge-score's run time and a corpus repeats its words, so
    this alone makes corpus ROUGE several times faster with identical output.
    """

    def __init__(self) -> None:
        from nltk.stem import porter

        self.stem = lru_cache(maxsize=1 << 18)(porter.PorterStemmer().stem)


class RougeTokenizer:
    """rouge-score's default tokenization through its public API.

    ``rouge_score.tokenize.tokenize(text, stemmer)`` is what rouge-score's
    ``DefaultTokenizer`` calls; this object has the ``tokenize(text)`` method that
    ``RougeScorer(tokenizer=...)`` accepts, with a memoised stemmer instead of patching
    the private ``_stemmer`` of a ``DefaultTokenizer``.
    """

    def __init__(self, use_stemmer: bool = True) -> None:
        self.use_stemmer = use_stemmer
        self._stem = _MemoStemmer() if use_stemmer else None

    def tokenize(self, text: str) -> list[str]:
        from rouge_score import tokenize

        return tokenize.tokenize(text, self._stem)


@lru_cache(maxsize=2)
def tokenizer(use_stemmer: bool = True) -> RougeTokenizer:
    """The shared tokenizer (one stem memo per stemming setting)."""
    return RougeTokenizer(use_stemmer)


def _fmeasure(precision: float, recall: float) -> float:
    # rouge_score.scoring.fmeasure
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


def _ngram_f(target: list[str], prediction: list[str], n: int) -> float:
    from collections import Counter

    t = Counter(tuple(target[i : i + n]) for i in range(len(target) - n + 1))
    p = Counter(tuple(prediction[i : i + n]) for i in range(len(prediction) - n + 1))
    overlap = sum((t & p).values())
    precision = overlap / max(sum(p.values()), 1)
    recall = overlap / max(sum(t.values()), 1)
    return _fmeasure(precision, recall)


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence, bit-parallel over ``b``."""
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, tok in enumerate(b):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(b)) - 1
    v = full
    for tok in a:
        u = v & masks.get(tok, 0)
        v = ((v + u) | (v - u)) & full
    return len(b) - bin(v).count("1")


def _lcs_f(target: list[str], prediction: list[str]) -> float:
    if not target or not prediction:
        return 0.0
    lcs = lcs_length(target, prediction)
    return _fmeasure(lcs / len(prediction), lcs / len(target))


def rouge_tokens(text: str, use_stemmer: bool = True) -> list[str]:
    """The tokens ROUGE compares: rouge-score's tokenizer (lowercased ``[a-z0-9]+``, stemmed)."""
    return tokenizer(use_stemmer).tokenize(text or "")


def rouge_per_document(
    predictions: Sequence[str], references: Sequence[str], use_stemmer: bool = True,
    *, progress: bool | None = False, desc: str = "ROUGE",
) -> list[dict[str, float]]:
    """Per-document F1 for ROUGE-1/2/L (fractions).

    ``progress``: a bar on stderr per document (None: ``$DOMSUM_PROGRESS``); off by
    default, since bootstraps and analyses call this in loops.
    """
    from custom_metrics.progress import track

    if len(predictions) != len(references):
        raise ValueError(
            f"rouge: {len(predictions)} predictions but {len(references)} references"
        )
    out = []
    for pred, ref in track(list(zip(predictions, references)), desc, enabled=progress):
        t = rouge_tokens(ref, use_stemmer)
        p = rouge_tokens(pred, use_stemmer)
        out.append({"rouge1": _ngram_f(t, p, 1), "rouge2": _ngram_f(t, p, 2), "rougeL": _lcs_f(t, p)})
    return out


def geometric_mean(values: Sequence[float]) -> float:
    """(v1 * ... * vn) ** (1/n); 0 when any value is 0 (no log of zero)."""
    if not values or any(v <= 0 for v in values):
        return 0.0
    return math.exp(sum(math.log(v) for v in values) / len(values))


def stemming_for(setting: bool | None = None, convention: tuple[bool, str] | None = None) -> tuple[bool, str]:
    """(stemming, where it comes from) under the ``rouge_stemming`` setting.

    An explicit ``setting`` wins (source ``"setting"``); otherwise the ``convention`` the
    caller passes (``(value, source)``: a benchmark's release convention, from its record
    on the task side); otherwise :data:`DEFAULT_STEMMING` (``"library default"``).
    """
    if setting is not None:
        if not isinstance(setting, bool):
            raise ValueError(f"rouge_stemming must be true, false or unset, got {setting!r}")
        return setting, "setting"
    if convention is not None:
        return bool(convention[0]), str(convention[1])
    return DEFAULT_STEMMING, "library default"


def _with_means(corpus: dict[str, float]) -> dict[str, float]:
    vals = [corpus[k] for k in ROUGE_TYPES]
    corpus["rouge_geo"] = geometric_mean(vals)
    corpus["rouge_mean"] = sum(vals) / 3
    return corpus


def aggregate_rouge(per_doc: Sequence[dict[str, float]]) -> dict[str, float]:
    """Corpus means plus ``rouge_geo`` and ``rouge_mean`` from per-document scores."""
    n = len(per_doc)
    return _with_means({k: (sum(d[k] for d in per_doc) / n if n else 0.0) for k in ROUGE_TYPES})


def aggregate_rouge_bootstrap(
    per_doc: Sequence[dict[str, float]], n_samples: int = 1000, seed: int | None = None
) -> dict[str, float]:
    """rouge-score's ``BootstrapAggregator`` mid (what ``evaluate``'s ROUGE returns), plus the two means.

    Per ROUGE type, in the order rouge1, rouge2, rougeL (the aggregator resamples each
    type on its own): for each of ``n_samples`` rounds, draw ``len(per_doc)`` documents
    with replacement (``numpy.random.choice``) and take their mean F1; the value is the
    50th percentile of those means (``numpy.percentile``). ``rouge_geo`` and
    ``rouge_mean`` are then taken over the three mids, as the DomainSum release's
    ``rougeSUM`` is. ``seed`` seeds a private ``RandomState``: after
    ``numpy.random.seed(seed)`` the aggregator gives the same numbers (to float
    rounding). ``None`` draws from NumPy's global state, as the aggregator does.
    """
    import numpy as np

    if not per_doc:
        return aggregate_rouge(per_doc)
    rng = np.random if seed is None else np.random.RandomState(seed)
    n = len(per_doc)
    mids: dict[str, float] = {}
    for k in ROUGE_TYPES:
        column = np.array([d[k] for d in per_doc], dtype=float)
        means = np.array([column[rng.choice(np.arange(n), size=n)].mean() for _ in range(n_samples)])
        mids[k] = float(np.percentile(means, 50.0))
    return _with_means(mids)


def rouge_scores(
    predictions: Sequence[str], references: Sequence[str], use_stemmer: bool = True
) -> dict[str, float]:
    """Corpus ROUGE: keys ``rouge1``, ``rouge2``, ``rougeL``, ``rouge_geo``, ``rouge_mean``."""
    return aggregate_rouge(rouge_per_document(predictions, references, use_stemmer))


# =========================================================================== the family record


def _rouge_stemming(ctx: Context) -> tuple[bool, str]:
    """(stemming, its source): the ``rouge_stemming`` setting, else the convention the task
    side passes in ``ctx.conventions``, else stemming."""
    return stemming_for(ctx.settings.get("rouge_stemming"), ctx.conventions.get("rouge_stemming"))


def _rouge_score(batch: Batch, ctx: Context) -> dict[str, list]:
    stem, _ = _rouge_stemming(ctx)
    ctx.record.update(_rouge_describe(ctx))
    per = rouge_per_document(batch.predictions, batch.references, use_stemmer=stem,
                             progress=ctx.progress, desc=ctx.bar_label("ROUGE"))
    # rouge-score keeps only [a-z0-9] tokens: a reference in another script scores 0 for any summary
    blank = sum(not rouge_tokens(r, stem) for r in batch.references if (r or "").strip())
    # the count of references beside the share: data-parallel ranks sum both and divide again
    ctx.record["rouge_references_without_tokens"] = {"count": blank, "references": len(batch),
                                                     "share": blank / len(batch) if len(batch) else 0.0}
    if blank:
        log.warning("ROUGE: %d of %d references have no [a-z0-9] token (non-Latin text?): they score 0 "
                    "whatever the summary; rouge-score does not support other scripts", blank, len(batch))
    out: dict[str, list] = {k: [d[k] for d in per] for k in ("rouge1", "rouge2", "rougeL")}
    out["rouge_mean"] = [(d["rouge1"] + d["rouge2"] + d["rougeL"]) / 3 for d in per]
    out["rouge_geo"] = [[d["rouge1"], d["rouge2"], d["rougeL"]] for d in per]
    return out


def _rouge_geo(items: Sequence[Sequence[float]], ctx: Context) -> float:
    means = column_means(items)
    return geometric_mean(means) if means else NAN


def _rouge_describe(ctx: Context) -> dict[str, Any]:
    stem, source = _rouge_stemming(ctx)
    return {"rouge_tokenizer": "rouge-score default tokenizer ([a-z0-9]+, lowercased)",
            "rouge_stemming": stem, "rouge_stemming_source": source,
            "rouge_aggregation": "plain mean of per-document F1 (not rouge-score's bootstrap mid)"}


ROUGE = Family(
    name="rouge",
    keys=(
        Key("rouge1", description="ROUGE-1 F1", display="ROUGE-1", scale=100.0),
        Key("rouge2", description="ROUGE-2 F1", display="ROUGE-2", scale=100.0),
        Key("rougeL", description="ROUGE-L F1 (summary-level LCS, no sentence split)", display="ROUGE-L",
            scale=100.0),
        Key("rouge_geo", aggregation="corpus", corpus=_rouge_geo,
            description="geometric mean of the corpus ROUGE-1/2/L means (the papers' stated \"ROUGE\")",
            display="ROUGE", scale=100.0),
        Key("rouge_mean", description="arithmetic mean of ROUGE-1/2/L (the DomainSum release's rougeSUM)",
            display="ROUGE (release mean)", scale=100.0),
    ),
    score=_rouge_score,
    description="ROUGE F1; Porter stemming per the benchmark's release (setting rouge_stemming); "
                "fractions in [0, 1].",
    source="custom_metrics.families.rouge (identical to rouge-score's RougeScorer)",
    settings=("rouge_stemming",),
    recorded={"rouge_stemming": "rouge_stemming"},  # the stemming used, whichever convention chose it
    describe=_rouge_describe,
)

SETTING_ROWS = (
    Setting("rouge_stemming", "DOMSUM_ROUGE_STEMMING", as_bool, None,
            "ROUGE Porter stemming; unset = the benchmark release's convention (DomainSum off; AdaptEval, "
            "CCSBench, medqsum on).", "scorers", after="score_cache_dir"),
)
METRIC_FAMILIES = (ROUGE,)
