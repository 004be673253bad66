"""METEOR with NLTK's matcher; WordNet synonyms only when WordNet data is installed.

Formula (Banerjee & Lavie, 2005, "METEOR: An Automatic Metric for MT Evaluation with
Improved Correlation with Human Judgments"), as ``nltk.translate.meteor_score``
computes it (the reference implementation; we call it): unigrams are aligned in
stages (exact surface match, then Porter-stem match, then WordNet-synonym match),
giving ``m`` matches grouped into ``ch`` chunks (runs contiguous and in the same
order on both sides); with P = m / |hypothesis|, R = m / |reference|,

    Fmean   = P * R / (alpha * P + (1 - alpha) * R)
    Penalty = gamma * (ch / m) ** beta
    METEOR  = Fmean * (1 - Penalty)

alpha = 0.9, beta = 3, gamma = 0.5 (NLTK's defaults); 0 when m = 0.

Matching stages: ``"exact+stem+wordnet"`` when the WordNet corpus is installed for
NLTK (``python -m nltk.downloader wordnet``; never downloaded at run time), else
``"exact+stem"`` (a stand-in WordNet with no synsets is passed to NLTK). Results
say which, under ``meteor_matching``: scores of the two modes are not comparable, so
the setting ``use_wordnet`` (``$DOMSUM_METEOR_WORDNET``; the record declares it) set to
false pins ``"exact+stem"`` on every machine; unset keeps "when installed".

Tokenizer: :func:`custom_metrics.tokenize.word_tokenize` (NLTK ``word_tokenize``
boundaries without the ``punkt`` download), lowercased by NLTK's ``preprocess``.
Scale: fraction in [0, 1]; corpus score = mean of per-pair scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from custom_metrics.registry import Batch, Context, Family, Key, stripped
from custom_metrics.setting import Setting, as_bool

MATCH_WORDNET = "exact+stem+wordnet"
MATCH_STEM = "exact+stem"


class _NoSynonyms:
    """Stand-in for NLTK's WordNet reader: no word has synsets (exact + stem only)."""

    def synsets(self, *args, **kwargs) -> list:
        return []


@lru_cache(maxsize=1)
def wordnet_reader():
    """NLTK's WordNet reader when its data is installed, else None (no download)."""
    try:
        import nltk
        from nltk.corpus import wordnet

        nltk.data.find("corpora/wordnet")  # .zip or unpacked; LookupError if absent
        wordnet.ensure_loaded()
        wordnet.synsets("dog")
        return wordnet
    except Exception:  # LookupError, a corrupt download, ...
        return None


def meteor_matching(use_wordnet: bool | None = None) -> str:
    """The matching stages that will be used: ``"exact+stem+wordnet"`` or ``"exact+stem"``."""
    if use_wordnet is False:
        return MATCH_STEM
    return MATCH_WORDNET if wordnet_reader() is not None else MATCH_STEM


def meteor_per_document(predictions: Sequence[str], references: Sequence[str],
                        use_wordnet: bool | None = None) -> list[float]:
    """METEOR of every (prediction, reference) pair; ``use_wordnet=None`` = when installed."""
    from nltk.stem.porter import PorterStemmer
    from nltk.translate.meteor_score import single_meteor_score

    from custom_metrics.tokenize import word_tokenize

    if len(predictions) != len(references):
        raise ValueError(f"meteor: {len(predictions)} predictions but {len(references)} references")
    wn = wordnet_reader() if meteor_matching(use_wordnet) == MATCH_WORDNET else _NoSynonyms()
    stemmer = PorterStemmer()
    out = []
    for pred, ref in zip(predictions, references):
        hyp = word_tokenize(pred or "", lowercase=False)
        rt = word_tokenize(ref or "", lowercase=False)
        if not hyp or not rt:
            out.append(0.0)
            continue
        out.append(float(single_meteor_score(rt, hyp, stemmer=stemmer, wordnet=wn)))
    return out


def meteor_scores(predictions: Sequence[str], references: Sequence[str],
                  use_wordnet: bool | None = None) -> dict:
    """``{"meteor": mean per-pair METEOR, "meteor_matching": stages used}``."""
    per = meteor_per_document(predictions, references, use_wordnet)
    return {"meteor": sum(per) / len(per) if per else 0.0, "meteor_matching": meteor_matching(use_wordnet)}


# =========================================================================== the family record


def _meteor_score(batch: Batch, ctx: Context) -> dict[str, list]:
    use_wordnet = ctx.settings.get("use_wordnet")
    per = meteor_per_document(stripped(batch.predictions), stripped(batch.references), use_wordnet)
    ctx.details["meteor_matching"] = meteor_matching(use_wordnet)
    return {"meteor": per}


def _meteor_describe(ctx: Context) -> dict:
    from custom_metrics.tokenize import tokenizer_info

    return {"meteor_tokenizer": tokenizer_info("nltk")}


METEOR = Family(
    name="meteor",
    keys=(Key("meteor", description="METEOR (NLTK), exact + stem (+ WordNet synonyms when installed)",
              display="METEOR"),),
    score=_meteor_score,
    description="METEOR, NLTK's implementation; fraction in [0, 1].",
    source="custom_metrics.families.meteor (nltk.translate.meteor_score)",
    settings=("use_wordnet",),
    describe=_meteor_describe,
)

SETTING_ROWS = (
    Setting("use_wordnet", "DOMSUM_METEOR_WORDNET", as_bool, None,
            "METEOR's WordNet-synonym stage: unset = when NLTK's WordNet data is installed (never downloaded); "
            "`false` = exact + stem on every machine, so scores compare across machines (results record "
            "`meteor_matching`).", "scorers", after="rouge_stemming"),
)
METRIC_FAMILIES = (METEOR,)
