"""CCSBench controllability metrics: length bins, keyword success, readability, focus.

Paper: Ding, Wu, Zhu, Qin, Liu, Kan, "CCSBench: Evaluating Compositional
Controllability in LLMs for Scientific Document Summarization" (arXiv 2410.12601).
Every function here is a plain function over strings and lists (no harness import).

* Length: word count (whitespace tokens, ``str.split()``) -> 50-word bin
  (bin 0 = 0-50 words, bin 1 = 51-100, bin 2 = 101-150, ...); Pearson correlation
  (PCC) between generated and requested bins, and mean absolute deviation (MAD).
* Keywords: success rate (SR) with Porter stemming (NLTK ``PorterStemmer``, the
  reference implementation) of both summary and keywords.
* Readability: Flesch-Kincaid grade level via ``textstat.flesch_kincaid_grade``
  (the reference implementation); delta FKGL = mean(normal) - mean(high).
* Empirical focus: per-class F1 and macro F1 of the judge's label against the
  requested focus (``high`` = empirical, ``low`` = conceptual).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

BIN_WIDTH = 50
FOCUS_CLASSES = ("high", "low")  # high = empirical focus, low = conceptual focus
_TOKEN_RE = re.compile(r"[a-z0-9]+")


# --------------------------------------------------------------------------- length


def word_count(text: str) -> int:
    """Whitespace-delimited words (``len(text.split())``), the paper's word count."""
    return len((text or "").split())


def length_bin(text: str, width: int = BIN_WIDTH, max_bin: int | None = None) -> int:
    """The 50-word length bin of ``text``.

    Formula: n = word count (whitespace tokens); bin = 0 if n == 0 else
    ``(n - 1) // width``, so bin 0 = 0-50 words, 1 = 51-100, 2 = 101-150, ...
    ``max_bin`` optionally caps the bin (CCSBench's targets are 0-4); uncapped by default.
    """
    n = word_count(text)
    b = 0 if n == 0 else (n - 1) // width
    return min(b, max_bin) if max_bin is not None else b


def bin_bounds(b: int, width: int = BIN_WIDTH) -> tuple[int, int]:
    """The word counts (lowest, highest) that :func:`length_bin` maps to bin ``b``:
    bin 0 = 0-50, bin b = ``width * b + 1`` .. ``width * (b + 1)``; what a prompt asks for."""
    return (0 if b == 0 else width * b + 1), width * (b + 1)


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Pearson correlation r = cov(x, y) / (sd(x) sd(y)); NaN when n < 2 or a side is constant.

    Agrees with ``scipy.stats.pearsonr`` (which warns and returns NaN for constant input).
    """
    n = len(xs)
    if n != len(ys):
        raise ValueError(f"pearson: {n} vs {len(ys)} values")
    if n < 2:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return float("nan")
    return sxy / math.sqrt(sxx * syy)


def length_scores(summaries: Sequence[str], target_bins: Sequence[int | None]) -> dict[str, float]:
    """``length_pcc`` and ``length_mad`` of generated vs requested bins.

    PCC = Pearson r between ``length_bin(summary)`` and the target bin; MAD =
    mean |generated bin - target bin| (in bins; lower is better). Rows whose target
    is None are left out; ``length_n`` counts the rows used. NaN when no row remains.
    """
    pairs = [(length_bin(s), int(t)) for s, t in zip(summaries, target_bins) if t is not None]
    if not pairs:
        return {"length_pcc": float("nan"), "length_mad": float("nan"), "length_n": 0.0}
    gen, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    mad = sum(abs(g - t) for g, t in pairs) / len(pairs)
    return {"length_pcc": pearson(gen, tgt), "length_mad": mad, "length_n": float(len(pairs))}


# --------------------------------------------------------------------------- keywords


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()


def stem_tokens(text: str) -> list[str]:
    """Tokenizer of the keyword metric: lowercase, ``[a-z0-9]+`` runs, Porter-stemmed (NLTK)."""
    stem = _stemmer().stem
    return [stem(t) for t in _TOKEN_RE.findall((text or "").lower())]


def _contains(hay: list[str], needle: list[str]) -> bool:
    k = len(needle)
    return k > 0 and any(hay[i : i + k] == needle for i in range(len(hay) - k + 1))


def keyword_hits(summary: str, keywords: Sequence[str]) -> list[bool]:
    """Per keyword: does its stemmed token sequence occur contiguously in the stemmed summary?"""
    hay = stem_tokens(summary)
    return [_contains(hay, stem_tokens(k)) for k in keywords]


def keyword_success_rate(summaries: Sequence[str], keywords: Sequence[Sequence[str] | None]) -> float:
    """Keyword success rate (SR), a fraction in [0, 1].

    Formula: for each row with at least one keyword, the share of its keywords found
    in the summary (exact match after Porter stemming of both, multi-word keywords
    matched as contiguous stemmed token sequences; keywords that stem to no token are
    dropped); SR = mean of those shares over rows with keywords. NaN when no row has one.
    Tokenizer: :func:`stem_tokens`.
    """
    if len(summaries) != len(keywords):
        raise ValueError(f"keyword_success_rate: {len(summaries)} summaries vs {len(keywords)} keyword lists")
    shares = []
    for summ, kws in zip(summaries, keywords):
        kws = [k for k in (kws or []) if stem_tokens(k)]
        if not kws:
            continue
        hits = keyword_hits(summ, kws)
        shares.append(sum(hits) / len(hits))
    return sum(shares) / len(shares) if shares else float("nan")


# --------------------------------------------------------------------------- readability


@lru_cache(maxsize=1)
def fkgl_syllable_source() -> str:
    """``"cmudict"`` when NLTK's cmudict corpus is installed, else ``"pyphen"``.

    textstat counts syllables with CMUdict and falls back to pyphen hyphenation for
    words CMUdict lacks; without the corpus it tries to download it (impossible
    offline). We then run textstat with CMUdict absent, i.e. pyphen for every word
    (textstat's own path for languages without CMUdict). Results record the source.
    """
    import nltk

    try:
        nltk.data.find("corpora/cmudict")
        return "cmudict"
    except LookupError:
        return "pyphen"


def fkgl(text: str) -> float:
    """Flesch-Kincaid grade level, ``textstat.flesch_kincaid_grade(text)``.

    Formula: 0.39 * words/sentences + 11.8 * syllables/words - 15.59 (textstat's
    word, sentence and syllable counting; syllables per :func:`fkgl_syllable_source`).
    Empty text gives 0.0.
    """
    import textstat

    if fkgl_syllable_source() == "cmudict":
        return float(textstat.flesch_kincaid_grade(text or ""))
    from textstat.backend.counts import _count_syllables as cs

    saved = cs.get_cmudict
    cs.get_cmudict = lambda lang: None  # no download attempt; pyphen for every word
    try:
        return float(textstat.flesch_kincaid_grade(text or ""))
    finally:
        cs.get_cmudict = saved


def readability_scores(summaries: Sequence[str], levels: Sequence[str | None]) -> dict[str, float]:
    """``fkgl_normal``, ``fkgl_high`` (mean FKGL of rows requesting each level) and
    ``delta_fkgl`` = fkgl_normal - fkgl_high (higher = better readability control).
    Rows with another or no level are left out; a missing side gives NaN.
    """
    groups: dict[str, list[float]] = {"normal": [], "high": []}
    for s, lv in zip(summaries, levels):
        if lv in groups:
            groups[lv].append(fkgl(s))
    mean = {k: (sum(v) / len(v) if v else float("nan")) for k, v in groups.items()}
    return {"fkgl_normal": mean["normal"], "fkgl_high": mean["high"],
            "delta_fkgl": mean["normal"] - mean["high"]}


# --------------------------------------------------------------------------- focus


def focus_f1(predicted: Sequence[str | None], target: Sequence[str | None],
             classes: Sequence[str] = FOCUS_CLASSES) -> dict[str, float]:
    """Per-class F1 and macro F1 of predicted vs requested focus labels.

    F1_c = 2 TP_c / (2 TP_c + FP_c + FN_c) (0 when the class never occurs in either);
    macro F1 = mean over ``classes``. Pairs with a None on either side (no target, or
    a judge parse failure) are left out. Agrees with ``sklearn.metrics.f1_score(...,
    average=None / "macro", labels=classes, zero_division=0)``.
    Keys: ``focus_f1_<class>`` and ``focus_macro_f1``.
    """
    pairs = [(p, t) for p, t in zip(predicted, target) if p is not None and t is not None]
    out: dict[str, float] = {}
    for c in classes:
        tp = sum(p == c and t == c for p, t in pairs)
        fp = sum(p == c and t != c for p, t in pairs)
        fn = sum(p != c and t == c for p, t in pairs)
        denom = 2 * tp + fp + fn
        out[f"focus_f1_{c}"] = 2 * tp / denom if denom else 0.0
    out["focus_macro_f1"] = sum(out[f"focus_f1_{c}"] for c in classes) / len(classes)
    return out


FOCUS_SYSTEM = "You are an expert reader of scientific papers."
# Our wording after the paper's Appendix C.3 classification instruction (the exact text
# could not be retrieved offline); the judge answers with one digit so that the judge
# core's scoring (logprobs or samples) applies: 1 = empirical, 0 = conceptual.
FOCUS_INSTRUCTION = (
    "Classify the focus of the following summary of a scientific paper. A summary is "
    "EMPIRICAL if it centres on experiments, datasets, measurements, numbers and results; "
    "it is CONCEPTUAL if it centres on ideas, motivation, theory and the proposed method, "
    "with few or no experimental details.\n\nSummary: {summary}\n\n"
    "Answer with a single digit: 1 if the summary is empirical, 0 if it is conceptual.\nAnswer:"
)


def focus_messages(summary: str, instruction: str = FOCUS_INSTRUCTION,
                   system: str = FOCUS_SYSTEM) -> list[dict[str, str]]:
    """The judge request classifying one summary's focus (``instruction`` has
    ``{summary}``; an empty ``system`` sends no system message)."""
    user = {"role": "user", "content": instruction.format(summary=summary)}
    return [{"role": "system", "content": system}, user] if system else [user]


def judge_focus(summaries: Sequence[str], config: Any,
                messages: Callable[[str], list[dict[str, str]]] = focus_messages,
                ) -> tuple[list[str | None], Any]:
    """Judge labels (``high``/``low``/None) for ``summaries``, batched and cached.

    ``messages`` builds one request per summary (default :func:`focus_messages`; the
    CCSBench tasks pass the prompt file's instruction). Uses
    :func:`custom_metrics.judge.judge_scores` on scale (0, 1): the judge answers 1
    (empirical) or 0 (conceptual); a score >= 0.5 (a probability-weighted or sample
    mean) is ``high`` (empirical), else ``low``; None is a parse failure. Returns
    (labels, JudgeResult).
    """
    from custom_metrics.judge import judge_scores

    res = judge_scores([messages(s) for s in summaries], (0, 1), config, desc="ccsbench focus")
    labels = [None if s is None else ("high" if s >= 0.5 else "low") for s in res.scores]
    return labels, res
