"""Facet-aware Metric (FM) for scientific abstracts, and its "vanilla" baseline.

Source: Chen et al., "Rethinking Scientific Summarization Evaluation: Grounding
Explainable Metrics on Facet-aware Benchmark" (arXiv 2402.14359; benchmark FD,
released as ScholarSum, ``iriscxy/ScholarSum``, ``FM metric code/``).

Formula
-------
Prompts are the release's own strings (``1aspect_extraction.py``, ``2evaluation.py``),
which match the supplementary appendix's section B.1 and Figures 1-2
(:mod:`custom_metrics.judge.fm_prompts`).

1. **Facet extraction**: the judge reads one abstract (reference and
   candidate separately) and returns JSON with keys ``background``, ``method``,
   ``result``, ``conclusion``; each value is a segment copied from the abstract, an
   empty string when the facet is absent. Replies are parsed leniently (code fences,
   prose around the object, single quotes); a reply that is still not JSON is asked
   again once (a new, separately cached request) and then counted as a failure.
2. **Per-facet alignment** of candidate (Input2) to reference (Input1):
   background and conclusion on 1-3 (3 consistent, 2 not mentioned, 1 contradicts),
   method and result on 1-4 (4 covers / omits minor details, 3 omits important
   information, 2 not mentioned, 1 contradicts). A facet the reference lacks is left
   out (fraction 0, as in the release); a facet the reference has but the candidate
   lacks gets the lowest rating (1) without a judge call, as the release does.
   Ratings go through :func:`custom_metrics.judge.ask` with a scale (G-Eval scoring:
   log-probability weighted, or the mean of samples), so they may be fractional.
3. **Score** :func:`fm_aggregate`: rating / scale maximum per facet, weighted
   background 0.1, method 0.3, result 0.3, conclusion 0.3, renormalised over the
   facets the reference has. The released human totals follow exactly this:
   fractions ``[1.0, 0.5, 0.25, 1/3]`` give 0.425. The weights are the paper's fit of
   one annotator's overall scores to the facet scores (Section 4.2); the setting
   ``fm_weights`` puts weights fitted to your own human scores in their place
   (``domsum fm-weights``, :func:`facet_weights`).

The vanilla baseline (``fm_vanilla``) asks one direct 1-4 alignment rating of the
whole candidate against the whole reference, reported as rating / 4.

Empty candidates (empty or whitespace-only generations) cost no judge call: every
facet the reference has gets the lowest rating (the release's rule for a facet the
candidate lacks) and ``fm_vanilla`` is the lowest rating, 1/4. They are counted in
``JudgeStats.empty_skipped`` (``usage``). Why not NaN: leaving them out of the mean
would reward a model for producing nothing on hard documents.

Judge plumbing: every call goes through the judge's one entry,
:func:`custom_metrics.judge.ask`: free-text replies (facet JSON) with ``parse``, ratings
with ``scale``; the same client, sizing of timeout and concurrency, retries with
backoff, in-batch de-duplication, SQLite cache and per-item counting. Every pair is
scored or counted as a failure with a reason, also when the judge stops answering
(see :func:`fm_scores`).
"""

from __future__ import annotations

import ast
import json
import logging
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from custom_metrics import secrets
from custom_metrics.setting import Setting, as_int
from custom_metrics.judge.fm_prompts import DEMOS_3, DEMOS_4, EXTRACTION_INSTRUCTION, RULES_3, RULES_4, VANILLA_RULES
from custom_metrics.judge import (
    JudgeConfig,
    JudgeRequestError,
    JudgeStats,
    Messages,
    ask,
    is_empty_generation,
    notice_judge_skipped,
)

log = logging.getLogger(__name__)

FACETS: tuple[str, ...] = ("background", "method", "result", "conclusion")
FACET_WEIGHTS: dict[str, float] = {"background": 0.1, "method": 0.3, "result": 0.3, "conclusion": 0.3}
FACET_SCALES: dict[str, tuple[int, int]] = {"background": (1, 3), "method": (1, 4),
                                            "result": (1, 4), "conclusion": (1, 3)}
VANILLA_SCALE = (1, 4)
EXTRACT_MAX_TOKENS = 1024

#: FM's settings rows (collected by :func:`custom_metrics.judge.setting_rows`)
SETTING_ROWS = (
    Setting("fm_variant", None, str, "zero", "FM: `zero` or `few` (the paper's in-context examples).", "scorers",
            choices=("zero", "few"), system="judge",
            flag="FM alignment prompts: zero-shot rules (default) or with the paper's examples"),
    Setting("fm_weights", "DOMSUM_FM_WEIGHTS", lambda value: facet_weights(value), list(FACET_WEIGHTS.values()),
            "FM: facet weights (background, method, result, conclusion), a JSON list of four numbers >= 0 or "
            "the path of the `fm_weights.json` that `domsum fm-weights` writes; default the paper's fit "
            "(Section 4.2). Renormalised over the facets a reference has; results record `fm_weights_used`.",
            "scorers", system="judge", kind_name="4 numbers >= 0 (JSON list, or a `domsum fm-weights` file)"),
    Setting("fm_extract_max_tokens", "DOMSUM_FM_EXTRACT_MAX_TOKENS", as_int, EXTRACT_MAX_TOKENS,
            "FM: reply budget of one facet extraction (the release's 1024); lower it to bound the cost of a "
            "slow or rambling judge.", "scorers", low=1),
    Setting("fm_details", None, str, None, "FM: JSONL path receiving each document's facets and ratings.",
            "scorers"),
)


# =========================================================================== prompts


def extraction_messages(abstract: str) -> Messages:
    return [{"role": "user", "content": f"{EXTRACTION_INSTRUCTION} Input: {abstract or ''}"}]


def alignment_messages(facet: str, reference_segment: str, candidate_segment: str,
                       variant: str = "zero") -> Messages:
    if facet not in FACET_SCALES:
        raise ValueError(f"unknown facet {facet!r}; choose from {FACETS}")
    four = FACET_SCALES[facet][1] == 4
    rules = RULES_4 if four else RULES_3
    demos = (DEMOS_4 if four else DEMOS_3) if variant == "few" else ""
    return [{"role": "user", "content": f"{rules}{demos} Input1: '{reference_segment}' \n "
                                        f"Input2: '{candidate_segment}'"}]


def vanilla_messages(reference: str, candidate: str) -> Messages:
    return [{"role": "user", "content": f"{VANILLA_RULES} Input1: '{reference or ''}' \n "
                                        f"Input2: '{candidate or ''}'"}]


# =========================================================================== parsing

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def _load_object(text: str) -> Any:
    for loader in (json.loads, ast.literal_eval):
        try:
            return loader(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
    try:  # single-quoted keys/values that literal_eval could not read (e.g. true/null)
        return json.loads(re.sub(r"(?<![A-Za-z])'|'(?![A-Za-z])", '"', text))
    except ValueError:
        return None


def parse_facets(text: str | None) -> dict[str, str] | None:
    """The four facet segments from a judge reply, or None when it holds no JSON object.

    Survives code fences, prose before or after the object and single quotes. Keys are
    matched case-insensitively; a missing key is an empty facet; list values are joined.
    """
    if not text or not text.strip():
        return None
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for chunk in candidates:
        start, end = chunk.find("{"), chunk.rfind("}")
        if start < 0 or end <= start:
            continue
        obj = _load_object(chunk[start:end + 1])
        if not isinstance(obj, dict):
            continue
        lowered = {str(k).strip().lower(): v for k, v in obj.items()}
        if not any(f in lowered for f in FACETS):
            continue
        out = {}
        for f in FACETS:
            v = lowered.get(f, "")
            if isinstance(v, (list, tuple)):
                v = " ".join(str(x) for x in v if x)
            out[f] = "" if v is None else str(v).strip()
        return out
    return None


# =========================================================================== aggregation


def facet_weights(value: Any) -> tuple[float, float, float, float]:
    """FM's four facet weights (background, method, result, conclusion) from the setting
    ``fm_weights``: a list of four numbers (or its JSON text), or the path of the JSON
    ``domsum fm-weights`` writes (its ``weights``: a list or ``{facet: weight}``).

    Each weight is a finite number >= 0, one at least > 0; else :class:`ValueError` (the
    resolver names the key). A path, because the fit's file then records where they came from."""
    if isinstance(value, str) and value.strip()[:1] not in "[{":
        path = Path(value.strip()).expanduser()
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a readable JSON file of weights ({exc})") from None
    elif isinstance(value, str):
        value = json.loads(value)
    if isinstance(value, dict) and "weights" in value:
        if value.get("intercept") not in (None, 0):  # FM's total has no constant term to put it in
            raise ValueError(f"these weights were fitted with an intercept ({value['intercept']!r}), which FM "
                             "has no place for; fit without one")
        value = value["weights"]
    if isinstance(value, dict):
        if set(value) != set(FACETS):
            raise ValueError(f"weights name {sorted(value)}, not the facets {list(FACETS)}")
        value = [value[f] for f in FACETS]
    if not isinstance(value, (list, tuple)) or len(value) != len(FACETS):
        raise ValueError(f"weights must be {len(FACETS)} numbers ({', '.join(FACETS)}), got {value!r}")
    out = []
    for w in value:
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            raise ValueError(f"each weight must be a finite number >= 0, got {w!r}")
        out.append(float(w))
    if not any(out):
        raise ValueError("at least one weight must be > 0")
    return out[0], out[1], out[2], out[3]


def fm_aggregate(facet_fractions: Sequence[float | None], weights: Sequence[float] | None = None) -> float:
    """FM total from the four facet fractions (background, method, result, conclusion).

    Each fraction is rating / scale maximum; 0 (or None / NaN) means the reference
    lacks the facet, which is then left out and the weights (``weights`` in facet
    order; default the paper's 0.1/0.3/0.3/0.3) are renormalised over the rest.
    ``[1.0, 0.5, 0.25, 1/3]`` -> 0.425. NaN when the reference has no facet at all,
    or when every facet it has weighs 0.
    """
    if len(facet_fractions) != len(FACETS):
        raise ValueError(f"fm_aggregate needs {len(FACETS)} fractions {FACETS}, got {len(facet_fractions)}")
    table = FACET_WEIGHTS if weights is None else dict(zip(FACETS, facet_weights(list(weights))))
    num = den = 0.0
    for facet, frac in zip(FACETS, facet_fractions):
        if frac is None or (isinstance(frac, float) and math.isnan(frac)) or frac == 0:
            continue
        w = table[facet]
        num += w * float(frac)
        den += w
    return num / den if den else float("nan")


# =========================================================================== judge text replies


def _extract(abstracts: Sequence[str], config: JudgeConfig, stats: JudgeStats, max_tokens: int,
             desc: str) -> tuple[list[dict[str, str] | None], list[str | None]]:
    """Facets of each abstract and, where None, why (the judge's reason: ``parse``,
    ``timeout``, ``http_500``, ...). Each distinct non-empty abstract is asked once;
    an empty one has no facets and costs no call. Raises :class:`JudgeRequestError`
    when the judge stops the batch (endpoint down, rejected key)."""
    todo = sorted({a for a in abstracts if a and a.strip()})
    table: dict[str, tuple[Any, str | None]] = {}
    if todo:
        res = ask(config, [extraction_messages(a) for a in todo], parse=parse_facets, max_tokens=max_tokens,
                  stats=stats, desc=desc)
        table = {a: (v, r) for a, v, r in zip(todo, res.values, res.reasons)}
    facets: list[dict[str, str] | None] = []
    reasons: list[str | None] = []
    for a in abstracts:
        value, reason = table[a] if a and a.strip() else (dict.fromkeys(FACETS, ""), None)
        facets.append(dict(value) if value is not None else None)
        reasons.append(reason)
    return facets, reasons


def extract_facets(abstracts: Sequence[str], config: JudgeConfig, *, stats: JudgeStats | None = None,
                   max_tokens: int = EXTRACT_MAX_TOKENS) -> list[dict[str, str] | None]:
    """Facet segments of each abstract (None = no JSON after one retry, or a request
    that failed for good: a counted failure, its reason in ``stats``).

    Runs on the judge's text replies (:func:`custom_metrics.judge.ask` with ``parse``:
    sizing, retries, cache, claims and counting shared with the ratings). An empty
    abstract has no facets (all four empty) and costs no call.
    """
    return _extract(abstracts, config, stats if stats is not None else JudgeStats(), max_tokens,
                    "fm extract")[0]


# =========================================================================== batch API

#: FM's per-pair failure kinds (``per_item[i]["failure"]``; ``failures`` counts each)
FAILURE_KINDS = ("reference_extraction", "candidate_extraction", "no_reference_facets", "rating",
                 "vanilla_rating")


def fm_scores(references: Sequence[str], candidates: Sequence[str], config: JudgeConfig | None,
              variant: str = "zero", *, vanilla: bool = True, facets: bool = True,
              reference_facets: Sequence[dict[str, str] | None] | None = None,
              stats: JudgeStats | None = None,
              extract_max_tokens: int = EXTRACT_MAX_TOKENS,
              weights: Sequence[float] | None = None) -> dict[str, Any] | None:
    """FM (and the vanilla baseline) of each candidate abstract against its reference.

    ``variant``: ``"zero"`` (zero-shot alignment prompts, default) or ``"few"``
    (with demonstrations). ``reference_facets`` may pass already extracted reference
    segments (e.g. ScholarSum's ``ground_aspect``) to skip that extraction.
    ``facets=False`` computes only the vanilla baseline (no extraction, no facet calls).
    ``extract_max_tokens``: the reply budget of a facet extraction. ``weights``: the
    facet weights of :func:`fm_aggregate` (default the paper's).
    Returns None (after a once-per-process notice) without a judge. Otherwise a dict:
    ``fm`` and ``fm_vanilla`` (means over scored pairs, None if none), ``per_item``
    (one dict per pair: ``fm``, ``fractions`` [4], ``ratings`` {facet: rating or
    None}, ``reference_facets``, ``candidate_facets``, ``fm_vanilla``, ``failure``
    (None or one of :data:`FAILURE_KINDS`), ``reason`` (why: the judge's reason
    such as ``parse``, ``timeout``, ``http_500``, ``abandoned``), ``vanilla_failure``
    (why ``fm_vanilla`` is None when it was asked for)), ``n_scored``,
    ``n_scored_vanilla``, ``failures`` (pairs by kind), ``vanilla_failures``,
    ``errors`` (judge errors that stopped the judging, masked), ``usage`` and ``judge``.

    Accounting, so that ``fm_failures`` says what happened: every pair is either
    scored or has a ``failure``; with ``facets``, ``n_scored`` plus the pairs whose
    failure is not ``vanilla_rating`` equals the number of pairs; with ``vanilla``,
    ``n_scored_vanilla + vanilla_failures`` does. ``vanilla_rating`` marks a pair
    whose FM is fine (or not asked for) but whose vanilla rating failed. A reference
    without any facet (an empty reference, or an extraction that found none) has no
    FM: ``no_reference_facets``, never a silent gap.

    A judge error that stops a batch (endpoint down, a latency probe without an
    answer, a rejected key) does not raise here: it is logged, kept in ``errors``,
    and every pair it left unjudged fails with its reason; the later steps are not
    sent (reason ``abandoned``). Why: raising would leave the harness with NaN
    metrics and an ``fm_failures`` of 0, hiding that FM failed.
    """
    if config is None:
        notice_judge_skipped("FM judge metrics")
        return None
    if variant not in ("zero", "few"):
        raise ValueError(f"variant must be 'zero' or 'few', got {variant!r}")
    if len(references) != len(candidates):
        raise ValueError(f"fm_scores: {len(references)} references but {len(candidates)} candidates")
    if not facets and not vanilla:
        raise ValueError("fm_scores: nothing to compute (facets=False and vanilla=False)")
    if reference_facets is not None and len(reference_facets) != len(references):
        raise ValueError("reference_facets must have one entry per reference")
    stats = stats if stats is not None else JudgeStats()
    n = len(references)
    errors: list[str] = []
    halted: list[str] = []  # the reason of the judge error that stopped the judging, if any

    def halt(exc: JudgeRequestError) -> str:
        reason = exc.reason or "error"
        halted.append(reason)
        message = secrets.mask(str(exc), config)
        errors.append(message)
        log.error("FM: the judge stopped (%s): %s; the pairs left unjudged are counted as failures",
                  reason, message)
        return reason

    empty = [is_empty_generation(c) for c in candidates]
    stats.items += sum(empty)  # an empty candidate is one item, never sent: its facets and
    stats.empty_skipped += sum(empty)  # vanilla get the lowest rating below

    # 1. facets: references (unless given), then the candidates whose reference has any
    ref_f: list[dict[str, str] | None] = [dict.fromkeys(FACETS, "") for _ in range(n)]
    cand_f: list[dict[str, str] | None] = [dict.fromkeys(FACETS, "") for _ in range(n)]
    ref_why: list[str | None] = [None] * n
    cand_why: list[str | None] = [None] * n
    if facets:
        if reference_facets is not None:
            ref_f = [None if f is None else dict(f) for f in reference_facets]
            ref_why = [None if f is not None else "missing" for f in ref_f]
        else:
            try:
                ref_f, ref_why = _extract(references, config, stats, extract_max_tokens, "fm extract references")
            except JudgeRequestError as exc:
                reason = halt(exc)
                ref_f, ref_why = [None] * n, [reason] * n
        # a candidate is extracted only where FM can exist: its reference has a facet
        wanted = [i for i in range(n) if ref_f[i] is not None and _has_facet(ref_f[i])]
        cand_f = [None] * n
        cand_why = ["abandoned" if halted else None] * n
        if wanted and not halted:
            try:
                got, why = _extract([candidates[i] for i in wanted], config, stats, extract_max_tokens,
                                    "fm extract candidates")
                for i, f, r in zip(wanted, got, why):
                    cand_f[i], cand_why[i] = f, r
            except JudgeRequestError as exc:
                reason = halt(exc)
                for i in wanted:
                    cand_why[i] = reason

    # 2. alignment ratings: only where both segments exist
    requests: list[Messages] = []
    scales: list[tuple[int, int]] = []
    slots: list[tuple[int, str]] = []
    for i in range(n):
        if not facets or ref_f[i] is None or cand_f[i] is None:
            continue
        for facet in FACETS:
            r, c = ref_f[i].get(facet, ""), cand_f[i].get(facet, "")
            if r.strip() and c.strip():
                requests.append(alignment_messages(facet, r, c, variant))
                scales.append(FACET_SCALES[facet])
                slots.append((i, facet))
    rated: dict[tuple[int, str], tuple[float | None, str | None]] = {}
    if requests and halted:
        rated = {slot: (None, "abandoned") for slot in slots}
    elif requests:
        try:
            res = ask(config, requests, scale=scales, stats=stats, desc="fm align")
            rated = {slot: (s, r) for slot, s, r in zip(slots, res.scores, res.reasons)}
        except JudgeRequestError as exc:
            reason = halt(exc)
            rated = {slot: (None, reason) for slot in slots}

    # 3. the vanilla rating of whole abstracts
    van: list[float | None] = [None] * n
    van_why: list[str | None] = [None] * n
    if vanilla:
        idx = []
        for i in range(n):
            if not (references[i] or "").strip():
                van_why[i] = "empty_reference"
            elif empty[i]:
                van[i] = VANILLA_SCALE[0] / VANILLA_SCALE[1]  # an empty abstract aligns with nothing
            else:
                idx.append(i)
        if idx and halted:
            for i in idx:
                van_why[i] = "abandoned"
        elif idx:
            try:
                res = ask(config, [vanilla_messages(references[i], candidates[i]) for i in idx],
                          scale=VANILLA_SCALE, stats=stats, desc="fm vanilla")
                for i, s, r in zip(idx, res.scores, res.reasons):
                    van[i] = None if s is None else s / VANILLA_SCALE[1]
                    van_why[i] = r
            except JudgeRequestError as exc:
                reason = halt(exc)
                for i in idx:
                    van_why[i] = reason

    per_item: list[dict[str, Any]] = []
    failures = dict.fromkeys(FAILURE_KINDS, 0)
    for i in range(n):
        item: dict[str, Any] = {"fm": None, "fractions": None, "ratings": None,
                                "reference_facets": ref_f[i] if facets else None,
                                "candidate_facets": cand_f[i] if facets else None,
                                "fm_vanilla": van[i], "failure": None, "reason": None,
                                "vanilla_failure": (van_why[i] or "error") if vanilla and van[i] is None else None}
        if facets:
            _fm_item(item, ref_f[i], cand_f[i], ref_why[i], cand_why[i],
                     {f: rated.get((i, f), (None, None)) for f in FACETS}, weights)
        if item["failure"] is None and item["vanilla_failure"] is not None:
            item["failure"], item["reason"] = "vanilla_rating", item["vanilla_failure"]
        if item["failure"] is not None:
            failures[item["failure"]] += 1
        per_item.append(item)
    scored = [it["fm"] for it in per_item if it["fm"] is not None]
    vscored = [v for v in van if v is not None]
    return {
        "fm": (sum(scored) / len(scored) if scored else None) if facets else None,
        "fm_vanilla": (sum(vscored) / len(vscored) if vscored else None) if vanilla else None,
        "per_item": per_item,
        "n_scored": len(scored),
        "n_scored_vanilla": len(vscored),
        "failures": failures,
        "vanilla_failures": sum(it["vanilla_failure"] is not None for it in per_item),
        "errors": errors,
        "variant": variant,
        "usage": stats.as_dict(),
        "judge": config.describe(),
    }


def _has_facet(segments: dict[str, str]) -> bool:
    return any((segments.get(f) or "").strip() for f in FACETS)


def _fm_item(item: dict[str, Any], ref: dict[str, str] | None, cand: dict[str, str] | None,
             ref_why: str | None, cand_why: str | None,
             rated: dict[str, tuple[float | None, str | None]], weights: Sequence[float] | None = None) -> None:
    """Fill one pair's FM fields (``fm``, ``fractions``, ``ratings``) or its failure."""
    if ref is None:
        item["failure"], item["reason"] = "reference_extraction", ref_why or "error"
        return
    if not _has_facet(ref):
        item["failure"], item["reason"] = "no_reference_facets", "no_facets"
        return
    if cand is None:
        item["failure"], item["reason"] = "candidate_extraction", cand_why or "error"
        return
    ratings: dict[str, float | None] = {}
    fractions: list[float] = []
    failed_why: str | None = None
    for facet in FACETS:
        r, c = ref.get(facet, ""), cand.get(facet, "")
        if not r.strip():
            ratings[facet], frac = None, 0.0
        elif not c.strip():
            ratings[facet] = float(FACET_SCALES[facet][0])
            frac = ratings[facet] / FACET_SCALES[facet][1]
        else:
            score, why = rated[facet]
            ratings[facet] = score
            if score is None:
                frac = float("nan")
                failed_why = failed_why or why or "error"
            else:
                frac = score / FACET_SCALES[facet][1]
        fractions.append(frac)
    item["ratings"], item["fractions"] = ratings, fractions
    if failed_why is not None:
        item["failure"], item["reason"] = "rating", failed_why
    else:
        total = fm_aggregate(fractions, weights)
        item["fm"] = None if math.isnan(total) else total
