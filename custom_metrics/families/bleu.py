"""BLEU (sentence-level and corpus SacreBLEU) and chrF, through ``sacrebleu``.

Formulas (Papineni et al., 2002, "BLEU: a Method for Automatic Evaluation of Machine
Translation"; Post, 2018, "A Call for Clarity in Reporting BLEU Scores"):

    BLEU = BP * exp( sum_{n=1..4} 1/4 * log p_n ),   BP = min(1, exp(1 - r / c))

with ``p_n`` the clipped n-gram precision, ``c`` the candidate length and ``r`` the
reference length (in tokens).

- ``sentence_bleu_scores``: one BLEU per (prediction, reference) pair, for
  segment-level correlations. ``sacrebleu.sentence_bleu`` defaults: ``exp``
  smoothing (Chen & Cherry, 2014, method 3: the k-th zero n-gram count is replaced
  by 1 / 2**k) and *effective order* (orders longer than the candidate are left
  out of the geometric mean). ``bleu`` is the mean of these.
- ``corpus_sacrebleu``: corpus BLEU (counts summed over the corpus before the
  precisions are taken), sacrebleu defaults (``exp`` smoothing, no effective
  order), returned with sacrebleu's *signature* string
  (``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:...``), which must be
  reported beside the number.
- ``chrf_scores``: corpus chrF (Popović, 2015): character n-gram (n = 1..6)
  F-beta with beta = 2 over corpus-summed statistics, sacrebleu's ``CHRF`` defaults
  (no word n-grams, whitespace ignored), with its signature; per-pair chrF is
  available for correlations.

Tokenizer: sacrebleu's ``13a`` (the mteval-v13a rules: punctuation split off, case
kept). Scale: percent, 0-100 (sacrebleu's convention). The reference implementation
is ``sacrebleu`` itself, which we call; hand-computed cases are in the tests.
Empty predictions score 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from custom_metrics.registry import NAN, Batch, Context, Family, Key, paired_texts, stripped, text_pairs


def _check(predictions: Sequence[str], references: Sequence[str], what: str) -> None:
    if len(predictions) != len(references):
        raise ValueError(f"{what}: {len(predictions)} predictions but {len(references)} references")


def sentence_bleu_scores(predictions: Sequence[str], references: Sequence[str]) -> list[float]:
    """Smoothed sentence BLEU (0-100) for every pair (``sacrebleu.sentence_bleu`` defaults)."""
    from sacrebleu.metrics import BLEU

    _check(predictions, references, "bleu")
    scorer = BLEU(effective_order=True)
    return [float(scorer.sentence_score(p or "", [r or ""]).score) for p, r in zip(predictions, references)]


def corpus_sacrebleu(predictions: Sequence[str], references: Sequence[str]) -> dict:
    """Corpus BLEU: ``{"sacrebleu": score (0-100), "sacrebleu_signature": str}``."""
    from sacrebleu.metrics import BLEU

    _check(predictions, references, "sacrebleu")
    scorer = BLEU()
    res = scorer.corpus_score([p or "" for p in predictions], [[r or "" for r in references]])
    return {"sacrebleu": float(res.score), "sacrebleu_signature": str(scorer.get_signature())}


def sentence_chrf_scores(predictions: Sequence[str], references: Sequence[str]) -> list[float]:
    """chrF (0-100) for every pair."""
    from sacrebleu.metrics import CHRF

    _check(predictions, references, "chrf")
    scorer = CHRF()
    return [float(scorer.sentence_score(p or "", [r or ""]).score) for p, r in zip(predictions, references)]


def chrf_scores(predictions: Sequence[str], references: Sequence[str]) -> dict:
    """Corpus chrF: ``{"chrf": score (0-100), "chrf_signature": str}``."""
    from sacrebleu.metrics import CHRF

    _check(predictions, references, "chrf")
    scorer = CHRF()
    res = scorer.corpus_score([p or "" for p in predictions], [[r or "" for r in references]])
    return {"chrf": float(res.score), "chrf_signature": str(scorer.get_signature())}


def bleu_scores(predictions: Sequence[str], references: Sequence[str]) -> dict:
    """``bleu`` (mean sentence BLEU), ``sacrebleu`` (corpus) and its signature."""
    per = sentence_bleu_scores(predictions, references)
    out = {"bleu": sum(per) / len(per) if per else 0.0}
    out.update(corpus_sacrebleu(predictions, references))
    return out


# =========================================================================== the family records


def _bleu_score(batch: Batch, ctx: Context) -> dict[str, list]:
    # the signature describes the scorer's settings, not the texts: one throw-away pair reads it
    ctx.details["sacrebleu_signature"] = corpus_sacrebleu(["x"], ["x"])["sacrebleu_signature"]
    return {"bleu": sentence_bleu_scores(stripped(batch.predictions), stripped(batch.references)),
            "sacrebleu": text_pairs(batch)}


def _corpus_bleu(items: Sequence, ctx: Context) -> float:
    texts = paired_texts(items)
    return NAN if texts is None else float(corpus_sacrebleu(*texts)["sacrebleu"])


def _chrf_score(batch: Batch, ctx: Context) -> dict[str, list]:
    ctx.details["chrf_signature"] = chrf_scores(["x"], ["x"])["chrf_signature"]
    return {"chrf": text_pairs(batch)}


def _corpus_chrf(items: Sequence, ctx: Context) -> float:
    texts = paired_texts(items)
    return NAN if texts is None else float(chrf_scores(*texts)["chrf"])


BLEU = Family(
    name="bleu",
    keys=(Key("bleu", description="mean smoothed sentence BLEU", display="BLEU", unit="score"),
          Key("sacrebleu", aggregation="corpus", corpus=_corpus_bleu, display="SacreBLEU", unit="score",
              description="corpus BLEU (n-gram counts summed over the corpus), signature in the details",
              no_interval="corpus BLEU recomputed from the texts per resample: too slow for a default run")),
    score=_bleu_score,
    description="BLEU through sacrebleu, 0-100.",
    source="custom_metrics.families.bleu (sacrebleu)",
)

CHRF = Family(
    name="chrf",
    keys=(Key("chrf", aggregation="corpus", corpus=_corpus_chrf, display="chrF", unit="score",
              description="corpus chrF (character n-gram statistics summed over the corpus), 0-100",
              no_interval="corpus chrF recomputed from the texts per resample: too slow for a default run"),),
    score=_chrf_score,
    description="chrF through sacrebleu, 0-100.",
    source="custom_metrics.families.bleu (sacrebleu)",
)

METRIC_FAMILIES = (BLEU, CHRF)
