"""The biomedical question-summarization metric battery, one batched call per corpus.

Yuan et al., "Revisiting Automatic Question Summarization Evaluation in the
Biomedical Domain", compare these automatic metrics against human judgements of
question summaries; :func:`medqsum_battery` computes all of them once per corpus:

| key(s) | metric | module | scale |
|---|---|---|---|
| ``bleu`` | mean smoothed sentence BLEU | :mod:`custom_metrics.bleu` | 0-100 |
| ``sacrebleu`` (+ signature) | corpus BLEU | :mod:`custom_metrics.bleu` | 0-100 |
| ``rouge1/2/L``, ``rouge_geo``, ``rouge_mean`` | ROUGE F1, stemmed | :mod:`custom_metrics.rouge` | 0-1 |
| ``meteor`` (+ matching stages) | METEOR | :mod:`custom_metrics.meteor` | 0-1 |
| ``chrf`` (+ signature) | corpus chrF | :mod:`custom_metrics.bleu` | 0-100 |
| ``bertscore_p/r/f1`` | BERTScore, general encoder (roberta-large) | :mod:`custom_metrics.bertscore` | cosine |
| ``bertscore_sci_p/r/f1`` | BERTScore, scientific encoder (SciBERT) | :mod:`custom_metrics.bertscore` | cosine |
| ``blanc_help``, ``blanc_tune`` | BLANC, reference-free (uses the source) | :mod:`custom_metrics.blanc` | -1..1 |
| ``perplexity`` | GPT-2 perplexity of the summary (lower is better) | :mod:`custom_metrics.perplexity` | >= 1 |
| ``mauve`` | MAUVE, generated vs reference summaries | :mod:`custom_metrics.mauve` | 0-1 |

``config`` (all optional) chooses models and settings: ``bertscore_model``,
``bertscore_layers``, ``sci_bertscore_model``, ``sci_bertscore_layers``,
``blanc_model``, ``ppl_model``, ``mauve_model`` (hub ids or local directories),
``batch_size``, ``blanc_tune_epochs``, ``use_wordnet`` (None = when installed),
``metrics`` (a subset of :data:`FAMILIES` to run).

A metric whose model or data is missing is *skipped*: its keys are NaN, the result's
``skipped`` list holds ``{"metric", "keys", "reason"}`` with a notice naming what is
missing and the metadata key / environment variable that points it at a local copy,
and every other metric still runs. ``timings`` gives wall seconds per metric family;
``details`` the signatures, matching mode and models used.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_SCI_BERTSCORE_MODEL = "allenai/scibert_scivocab_uncased"

#: family -> result keys
FAMILIES: dict[str, tuple[str, ...]] = {
    "bleu": ("bleu", "sacrebleu"),
    "rouge": ("rouge1", "rouge2", "rougeL", "rouge_geo", "rouge_mean"),
    "meteor": ("meteor",),
    "chrf": ("chrf",),
    "bertscore": ("bertscore_p", "bertscore_r", "bertscore_f1"),
    "bertscore_sci": ("bertscore_sci_p", "bertscore_sci_r", "bertscore_sci_f1"),
    "blanc_help": ("blanc_help",),
    "blanc_tune": ("blanc_tune",),
    "perplexity": ("perplexity",),
    "mauve": ("mauve",),
}
METRIC_KEYS: tuple[str, ...] = tuple(k for keys in FAMILIES.values() for k in keys)
LOWER_IS_BETTER = frozenset({"perplexity"})

#: family -> (config/metadata key, environment variable) of its model
MODEL_SETTINGS: dict[str, tuple[str, str]] = {
    "bertscore": ("bertscore_model", "DOMSUM_BERTSCORE_MODEL"),
    "bertscore_sci": ("sci_bertscore_model", "DOMSUM_SCI_BERTSCORE_MODEL"),
    "blanc_help": ("blanc_model", "DOMSUM_BLANC_MODEL"),
    "blanc_tune": ("blanc_model", "DOMSUM_BLANC_MODEL"),
    "perplexity": ("ppl_model", "DOMSUM_PPL_MODEL"),
    "mauve": ("mauve_model", "DOMSUM_MAUVE_MODEL"),
}


def default_models() -> dict[str, str]:
    """Default model of every model-based family."""
    from custom_metrics.bertscore import default_model
    from custom_metrics.blanc import DEFAULT_MODEL as BLANC_MODEL
    from custom_metrics.mauve import DEFAULT_MODEL as MAUVE_MODEL
    from custom_metrics.perplexity import DEFAULT_MODEL as PPL_MODEL

    return {"bertscore": default_model(), "bertscore_sci": DEFAULT_SCI_BERTSCORE_MODEL,
            "blanc_help": BLANC_MODEL, "blanc_tune": BLANC_MODEL,
            "perplexity": PPL_MODEL, "mauve": MAUVE_MODEL}


def resolved_models(config: dict | None) -> dict[str, str]:
    """Model each family will use under ``config``."""
    cfg = config or {}
    out = default_models()
    for fam, (key, _) in MODEL_SETTINGS.items():
        if cfg.get(key) not in (None, ""):
            out[fam] = str(cfg[key])
    return out


def _int(cfg: dict, key: str) -> int | None:
    v = cfg.get(key)
    return None if v in (None, "") else int(v)


def _bertscore(preds, refs, model, layers, batch_size, prefix, key, env) -> dict:
    from custom_metrics.bertscore import bertscore
    from custom_metrics.hf_models import ModelUnavailable, unavailable_message

    try:
        res = bertscore(preds, refs, model=model, num_layers=layers, batch_size=batch_size)
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(unavailable_message(prefix, model, key, env, exc)) from exc
    return {f"{prefix}_{s}": res[f"bertscore_{s}"] for s in ("p", "r", "f1")}


def _runners(preds: list[str], refs: list[str], srcs: list[str], cfg: dict,
             models: dict[str, str], details: dict) -> dict[str, Callable[[], dict]]:
    bs = _int(cfg, "batch_size") or 16

    def bleu():
        from custom_metrics.bleu import bleu_scores

        r = bleu_scores(preds, refs)
        details["sacrebleu_signature"] = r.pop("sacrebleu_signature")
        return r

    def rouge():
        from custom_metrics.rouge import rouge_scores

        return rouge_scores(preds, refs)

    def meteor():
        from custom_metrics.meteor import meteor_scores

        r = meteor_scores(preds, refs, cfg.get("use_wordnet"))
        details["meteor_matching"] = r.pop("meteor_matching")
        return r

    def chrf():
        from custom_metrics.bleu import chrf_scores

        r = chrf_scores(preds, refs)
        details["chrf_signature"] = r.pop("chrf_signature")
        return r

    def bert():
        return _bertscore(preds, refs, models["bertscore"], _int(cfg, "bertscore_layers"), bs,
                          "bertscore", *MODEL_SETTINGS["bertscore"])

    def bert_sci():
        return _bertscore(preds, refs, models["bertscore_sci"], _int(cfg, "sci_bertscore_layers"), bs,
                          "bertscore_sci", *MODEL_SETTINGS["bertscore_sci"])

    def blanc_params():
        from custom_metrics.blanc import BlancParams

        epochs = _int(cfg, "blanc_tune_epochs")
        return BlancParams(batch_size=max(bs, 16), **({"tune_epochs": epochs} if epochs is not None else {}))

    def blanc_help():
        from custom_metrics.blanc import blanc_help_per_document

        per = blanc_help_per_document(preds, srcs, models["blanc_help"], blanc_params())
        return {"blanc_help": sum(per) / len(per) if per else 0.0}

    def blanc_tune():
        from custom_metrics.blanc import blanc_tune_per_document

        per = blanc_tune_per_document(preds, srcs, models["blanc_tune"], blanc_params())
        return {"blanc_tune": sum(per) / len(per) if per else 0.0}

    def ppl():
        from custom_metrics.perplexity import perplexity_scores

        r = perplexity_scores(preds, models["perplexity"], bs)
        details["perplexity_scored"] = r.pop("perplexity_scored")
        return r

    def mauve_():
        from custom_metrics.mauve import mauve_scores

        r = mauve_scores(preds, refs, models["mauve"], bs)
        details["mauve_kmeans"] = r.pop("mauve_kmeans")
        details["mauve_texts"] = r.pop("mauve_texts")
        return r

    return {"bleu": bleu, "rouge": rouge, "meteor": meteor, "chrf": chrf, "bertscore": bert,
            "bertscore_sci": bert_sci, "blanc_help": blanc_help, "blanc_tune": blanc_tune,
            "perplexity": ppl, "mauve": mauve_}


def medqsum_battery(predictions: Sequence[str], references: Sequence[str], sources: Sequence[str] | None = None,
                    *, config: dict | None = None) -> dict[str, Any]:
    """Every metric of the battery over one corpus (see the module docstring).

    Returns the metric keys (floats; NaN when skipped) plus ``skipped`` (list of
    dicts), ``timings`` (seconds per family) and ``details`` (signatures, models).
    """
    from custom_metrics.hf_models import ModelUnavailable

    cfg = dict(config or {})
    preds = ["" if p is None else str(p).strip() for p in predictions]
    refs = ["" if r is None else str(r).strip() for r in references]
    srcs = ["" if s is None else str(s) for s in (sources if sources is not None else [""] * len(preds))]
    if not (len(preds) == len(refs) == len(srcs)):
        raise ValueError(f"medqsum_battery: {len(preds)} predictions, {len(refs)} references, "
                         f"{len(srcs)} sources")
    wanted = cfg.get("metrics") or list(FAMILIES)
    unknown = [f for f in wanted if f not in FAMILIES]
    if unknown:
        raise ValueError(f"medqsum_battery: unknown metric families {unknown}; known: {list(FAMILIES)}")
    models = resolved_models(cfg)
    details: dict[str, Any] = {"models": {f: models[f] for f in MODEL_SETTINGS if f in wanted}}
    out: dict[str, Any] = {k: float("nan") for k in METRIC_KEYS}
    skipped: list[dict] = []
    timings: dict[str, float] = {}
    runners = _runners(preds, refs, srcs, cfg, models, details)
    for fam in FAMILIES:
        if fam not in wanted:
            skipped.append({"metric": fam, "keys": list(FAMILIES[fam]), "reason": "not requested"})
            continue
        t0 = time.perf_counter()
        try:
            res = runners[fam]()
        except ModelUnavailable as exc:
            reason = str(exc)
            log.warning("NOTICE: %s skipped. %s", fam, reason)
            skipped.append({"metric": fam, "keys": list(FAMILIES[fam]), "reason": reason})
            continue
        finally:
            timings[fam] = time.perf_counter() - t0
        for k in FAMILIES[fam]:
            v = res.get(k, float("nan"))
            out[k] = float(v) if v is not None else float("nan")
    out["skipped"] = skipped
    out["timings"] = timings
    out["details"] = details
    return out


def is_missing(value: float) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
