"""The LLM-judged metric families: AdaptEval's judge ratings and the Facet-aware Metric.

Their records sit here, beside the per-document functions that call the judge
(:func:`custom_metrics.judge.prompts.adapteval_judge`, :func:`custom_metrics.judge.fm.fm_scores`),
with the checks every judged family shares: :func:`check_endpoint` before generation,
and the judge configuration a family's context hands to those functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from custom_metrics.registry import (NAN, Batch, Context, Family, Key, ScorerUnavailable, nan_if_none,
                                     json_safe)


def check_endpoint(config: Any, timeout_s: float = 5.0) -> None:
    """Raise :class:`ScorerUnavailable` unless the judge endpoint answers HTTP at all.

    Any HTTP status (even 401/404) proves a server is there; a refused connection,
    an unknown host or a timeout does not. Why before generation: a run whose judge
    is unreachable would otherwise generate everything and only then fail to judge.
    """
    import urllib.error
    import urllib.request

    import urllib.parse

    base = (config.endpoint or "https://api.openai.com/v1").rstrip("/")
    parts = urllib.parse.urlsplit(base)
    # urllib reads "user:key@host" as a host name; any answer proves the server, so probe without them
    probe = parts._replace(netloc=parts.netloc.rpartition("@")[2], query="").geturl()
    try:
        urllib.request.urlopen(urllib.request.Request(probe + "/models", method="GET"), timeout=timeout_s)
    except urllib.error.HTTPError:
        return
    except (urllib.error.URLError, OSError) as exc:
        from custom_metrics import secrets

        reason = getattr(exc, "reason", exc)
        raise ScorerUnavailable(secrets.mask(
            f"judge endpoint {base} does not answer ({reason}); set metadata 'judge_base_url' or "
            f"$OPENAI_BASE_URL to a running OpenAI-compatible server, or unset judge_model / "
            f"$DOMSUM_JUDGE_MODEL to leave the judge metrics out", config)) from exc


def judge_of(ctx: Context) -> Any:
    """The context's judge, drawing its bar as ``ctx.progress`` says unless the judge's own
    configuration already decides."""
    import dataclasses

    if ctx.judge is None or ctx.progress is None or getattr(ctx.judge, "progress", False) is not None:
        return ctx.judge
    return dataclasses.replace(ctx.judge, progress=ctx.progress)


def judge_check(ctx: Context) -> None:
    if ctx.judge is not None:
        check_endpoint(ctx.judge)


def judge_describe(ctx: Context) -> dict[str, Any]:
    from urllib.parse import urlsplit

    if ctx.judge is None:
        return {}
    return {"judge_model_used": ctx.judge.model, "judge_base_url_used": ctx.judge.shown_endpoint,
            "judge_host": urlsplit(ctx.judge.endpoint or "https://api.openai.com/v1").hostname}


def judge_sampled(family: str, score: Callable[[Batch, Context], dict[str, list]]
                  ) -> Callable[[Batch, Context], dict[str, list]]:
    """``score`` of the judged family ``family``, restricted to the run's seeded sample of
    documents when the judge's ``sample`` (setting ``judge_sample``) is above 0, unchanged
    otherwise (:mod:`custom_metrics.judge.sample`, imported only then). Every judged family
    is declared with it, and reads ``sample_seed`` (:data:`SAMPLE_SETTINGS`)."""

    def sampled_score(batch: Batch, ctx: Context) -> dict[str, list]:
        n = int(getattr(ctx.judge, "sample", 0) or 0)
        if n <= 0:
            return score(batch, ctx)
        from custom_metrics import registry
        from custom_metrics.judge.sample import score_sample

        return score_sample(registry.get(family), score, batch, ctx, n)

    sampled_score.__doc__ = score.__doc__
    sampled_score.__name__ = getattr(score, "__name__", "score")
    return sampled_score


#: the settings a judged family reads for its sample, beside the judge's own
SAMPLE_SETTINGS = ("sample_seed",)

#: what :func:`judge_describe` records -> the setting that chooses it (``Family.recorded``)
JUDGE_RECORDED = {"judge_model_used": "judge_model"}

JUDGE_METRICS = ("domain_adaptation", "coherence", "fluency")


def _judge_prompt_variant(ctx: Context) -> str:
    from custom_metrics.judge.prompts import check_prompt_variant

    return check_prompt_variant(ctx.settings.get("judge_prompt_variant"))


def _adapteval_judge_describe(ctx: Context) -> dict[str, Any]:
    return {**judge_describe(ctx), "judge_prompt_variant_used": _judge_prompt_variant(ctx)}


def _adapteval_judge_score(batch: Batch, ctx: Context) -> dict[str, list]:
    """The three AdaptEval judge ratings per document.

    ``ctx.options``: ``judge_metrics`` (a subset of :data:`JUDGE_METRICS`) sends only
    those requests, since each one is a paid call; the others are NaN and do not count
    as parse failures. ``max_document_words`` truncates long sources in the prompt.
    Setting ``judge_prompt_variant``: the prompt texts (``paper``, the default, or
    ``release``/``suite``; see :mod:`custom_metrics.judge.prompts`), recorded as
    ``judge_prompt_variant_used``.
    """
    from custom_metrics.judge.prompts import adapteval_judge

    wanted = [m for m in JUDGE_METRICS if m in (ctx.options.get("judge_metrics") or JUDGE_METRICS)]
    variant = _judge_prompt_variant(ctx)
    ctx.record["judge_prompt_variant_used"] = variant
    res = adapteval_judge(batch.documents, batch.predictions, ctx.subset, judge_of(ctx), wanted,
                          max_document_words=ctx.options.get("max_document_words"),
                          stats=ctx.options.get("judge_stats"), prompt_variant=variant)
    ctx.record["judge_mode"] = res["judge_mode"]
    ctx.record["judge_usage"] = res["usage"]
    ctx.record["judge_failed"] = res["failed"]  # unscored items by reason: parse, empty, timeout, http_<n>, ...
    out = {k: nan_if_none(res["per_item"][k]) if k in wanted else [NAN] * len(batch) for k in JUDGE_METRICS}
    # only unparsable replies count here; empty summaries and transport faults are in judge_failed
    out["judge_parse_failures"] = [float(sum(res["reasons"][k][i] == "parse" for k in wanted))
                                   for i in range(len(batch))]
    return out


def _judge_select(keys: Sequence[str]) -> dict[str, Any]:
    """Only the chosen ratings are asked for (each is a paid call); all three when none is."""
    return {"judge_metrics": [k for k in JUDGE_METRICS if k in keys] or list(JUDGE_METRICS)}


def _judge_summary(ctx: Context, values: Mapping[str, list]) -> dict[str, Any]:
    """Per-rating parse failures, scored items and judge mode, from the per-document values
    and what scoring recorded (no second call)."""
    wanted = ctx.options["judge_metrics"]
    nan = {m: sum(1 for v in values[m] if math.isnan(v)) for m in wanted}
    failed = ctx.record.get("judge_failed", {})
    return {"judge": {"parse_failures": {m: failed.get(m, {}).get("parse", 0) for m in wanted},
                      "failed": {m: failed.get(m, {}) for m in wanted},
                      "n_scored": {m: len(values[m]) - nan[m] for m in wanted},
                      "judge_mode": ctx.record.get("judge_mode", {}), "usage": ctx.record.get("judge_usage"),
                      "judge": ctx.judge.describe()}}


JUDGE = Family(
    name="judge",
    keys=(Key("domain_adaptation", aggregation="nanmean", description="1-5 Domain Adaptation (GPT-4 judge)",
              display="Domain adaptation", unit="rating"),
          Key("coherence", aggregation="nanmean", description="1-5 Coherence (G-Eval)", display="Coherence",
              unit="rating"),
          Key("fluency", aggregation="nanmean", description="1-3 Fluency (G-Eval)", display="Fluency",
              unit="rating"),
          Key("judge_parse_failures", higher_is_better=False, aggregation="sum",
              description="judge replies with no valid rating after one retry (left out of the means)",
              unit="count")),
    score=judge_sampled("judge", _adapteval_judge_score),
    description="AdaptEval's LLM judge; probability-weighted ratings, unparsable replies counted, never 0.",
    source="custom_metrics.judge.prompts (AdaptEval Table 8 and G-Eval prompts; release gpt4-eval.py variant)",
    needs=("judge", "domain", "document"),
    settings=("judge_prompt_variant", *SAMPLE_SETTINGS),
    options=("max_document_words",),
    select=_judge_select,
    summary=_judge_summary,
    recorded=JUDGE_RECORDED,
    check=judge_check,
    describe=_adapteval_judge_describe,
)


#: what ``keep_details`` hands back per document (why each FM score is what it is)
FM_DETAIL_FIELDS = ("fractions", "ratings", "reference_facets", "candidate_facets", "failure")


#: the FM details file asked for -> the file this process appends to
_FM_DETAILS: dict[str, Path] = {}


def fm_details_file(asked: str) -> Path:
    """Where this process writes FM details asked for at ``asked``.

    Every task of one run appends to one file; a file an earlier run wrote is never
    replaced: the rows go to the first free ``<stem>.<n><suffix>`` beside it, recorded
    as ``fm_details_written``.
    """
    if asked not in _FM_DETAILS:
        path = Path(asked).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        n = 1
        while True:
            try:
                with open(path, "x", encoding="utf-8"):
                    break
            except FileExistsError:
                n += 1
                path = Path(asked).expanduser().with_name(f"{Path(asked).stem}.{n}{Path(asked).suffix}")
        _FM_DETAILS[asked] = path
    return _FM_DETAILS[asked]


def _fm_score(batch: Batch, ctx: Context) -> dict[str, list]:
    """FM and its vanilla baseline per document.

    ``fm_weights`` (setting) are the facet weights (default the paper's), recorded as
    ``fm_weights_used``. ``ctx.options``: ``fm_facets=False`` computes the vanilla rating only (no facet
    extraction or alignment calls) and ``fm_vanilla=False`` skips the vanilla calls;
    the key not computed is NaN. ``keep_details=True`` adds the non-key list
    ``fm_detail`` (each document's facet fractions, ratings, segments and failure) and
    ``fm_judge`` (scored pairs, failures by kind, variant, usage) to ``ctx.record``,
    so re-scoring can show why every score is what it is.
    """
    import json

    from custom_metrics.judge.fm import EXTRACT_MAX_TOKENS, FACET_WEIGHTS, facet_weights, fm_scores

    variant = str(ctx.settings.get("fm_variant") or "zero")
    if variant not in ("zero", "few"):
        raise ValueError(f"fm_variant must be 'zero' or 'few', got {variant!r}")
    weights = facet_weights(ctx.settings.get("fm_weights") or list(FACET_WEIGHTS.values()))
    res = fm_scores(batch.references, batch.predictions, judge_of(ctx), variant=variant,
                    facets=bool(ctx.options.get("fm_facets", True)),
                    vanilla=bool(ctx.options.get("fm_vanilla", True)), stats=ctx.options.get("judge_stats"),
                    extract_max_tokens=int(ctx.settings.get("fm_extract_max_tokens") or EXTRACT_MAX_TOKENS),
                    weights=weights)
    # the numbers, not the setting (which may name a file): JSON text, so ranks that agree merge to one
    ctx.record.update(fm_variant_used=variant, fm_weights_used=json.dumps(list(weights)), fm_usage=res["usage"],
                      fm_failures_by_kind=res["failures"], fm_vanilla_failures=res["vanilla_failures"])
    details = ctx.settings.get("fm_details")
    if details:
        path = fm_details_file(str(details))
        with open(path, "a", encoding="utf-8") as fh:
            for extra, item in zip(batch.extras, res["per_item"]):
                row = json_safe({"task": extra.get("task"), "id": extra.get("id"), **item})
                fh.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
        ctx.record["fm_details_written"] = str(path)
    per = res["per_item"]
    out: dict[str, list] = {"fm": nan_if_none([p["fm"] for p in per]),
                            "fm_vanilla": nan_if_none([p["fm_vanilla"] for p in per]),
                            "fm_failures": [0.0 if p["failure"] is None else 1.0 for p in per]}
    if ctx.options.get("keep_details"):
        out["fm_detail"] = [{k: p[k] for k in FM_DETAIL_FIELDS} for p in per]
        ctx.record["fm_judge"] = {k: res[k] for k in ("n_scored", "failures", "variant", "usage")}
    return out


def _fm_select(keys: Sequence[str]) -> dict[str, Any]:
    """``--metrics fm_vanilla`` skips the facet calls, ``fm`` the vanilla ones; the details are
    always kept: they carry the scored and failure counts :func:`_fm_summary` reports."""
    vanilla = "fm_vanilla" in keys
    return {"fm_facets": "fm" in keys or not vanilla, "fm_vanilla": vanilla, "keep_details": True}


def _fm_summary(ctx: Context, values: Mapping[str, list]) -> dict[str, Any]:
    """Scored pairs, failures by kind, variant and usage of the FM calls, with the judge."""
    return {"fm_judge": {**ctx.record.get("fm_judge", {}), "judge": ctx.judge.describe()}}


FM = Family(
    name="fm",
    keys=(Key("fm", aggregation="nanmean", description="Facet-aware Metric, weighted facet alignment",
              display="FM"),
          Key("fm_vanilla", aggregation="nanmean", description="one direct 1-4 rating, rescaled",
              display="FM (vanilla)"),
          Key("fm_failures", higher_is_better=False, aggregation="sum",
              description="pairs whose facet extraction or rating failed, whose reference had no facet, or whose vanilla rating failed (by kind in fm_failures_by_kind; left out of the means)",
              unit="count")),
    score=judge_sampled("fm", _fm_score),
    description="Facet-aware Metric (Chen et al.): LLM facet extraction and rating of scientific abstracts.",
    source="custom_metrics.judge.fm (the paper's prompts and weights)",
    needs=("judge",),
    settings=("fm_variant", "fm_weights", "fm_extract_max_tokens", "fm_details", *SAMPLE_SETTINGS),
    select=_fm_select,
    detail_lists={"fm_detail": "fm"},
    summary=_fm_summary,
    recorded=JUDGE_RECORDED,
    check=judge_check,
    describe=judge_describe,
)


METRIC_FAMILIES = (JUDGE, FM)
