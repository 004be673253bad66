"""The biomedical question-summarization metric battery, one batched call per corpus.

Yuan et al., "Revisiting Automatic Question Summarization Evaluation in the
Biomedical Domain", compare these automatic metrics against human judgements of
question summaries; the battery computes all of them once per corpus:

| key(s) | metric | module | scale | per document -> corpus |
|---|---|---|---|---|
| ``bleu`` | mean smoothed sentence BLEU | :mod:`custom_metrics.bleu` | 0-100 | mean |
| ``sacrebleu`` (+ signature) | corpus BLEU | :mod:`custom_metrics.bleu` | 0-100 | corpus |
| ``rouge1/2/L``, ``rouge_mean`` | ROUGE F1 (stemmed unless ``rouge_stemming`` is false); mean of the three | :mod:`custom_metrics.rouge` | 0-1 | mean |
| ``rouge_geo`` | geometric mean of the corpus ROUGE-1/2/L means | :mod:`custom_metrics.rouge` | 0-1 | corpus |
| ``meteor`` (+ matching stages) | METEOR | :mod:`custom_metrics.meteor` | 0-1 | mean |
| ``chrf`` (+ signature) | corpus chrF | :mod:`custom_metrics.bleu` | 0-100 | corpus |
| ``bertscore_p/r/f1`` | BERTScore, general encoder (roberta-large) | :mod:`custom_metrics.bertscore` | cosine | mean |
| ``bertscore_sci_p/r/f1`` | BERTScore, scientific encoder (SciBERT) | :mod:`custom_metrics.bertscore` | cosine | mean |
| ``blanc_help``, ``blanc_tune`` | BLANC, reference-free (uses the source) | :mod:`custom_metrics.blanc` | -1..1 | mean |
| ``perplexity`` | GPT-2 perplexity of the summary (lower is better) | :mod:`custom_metrics.perplexity` | >= 1 | nanmean |
| ``mauve`` | MAUVE, generated vs reference summaries | :mod:`custom_metrics.mauve` | 0-1 | corpus |

One code path, two entry points. :func:`battery_documents` scores every document
(one value per key and document) and :data:`KEY_AGGREGATION` says how a key's
per-document values become its corpus number:

- ``"mean"``: a per-document float, averaged (the harness derives a standard error);
- ``"nanmean"``: the same, NaN where the metric does not apply (``perplexity`` of an
  empty summary, which has no token to score), left out of the mean;
- ``"corpus"``: the corpus number is not a mean of per-document numbers (corpus
  BLEU and chrF sum n-gram statistics over the corpus first; ``rouge_geo`` is a
  geometric mean of means; MAUVE compares two *distributions* of texts), so the
  per-document value is a small JSON item (``[prediction, reference]``, or the three
  ROUGE F1 values) and :func:`corpus_value` folds the items into the number.

:func:`medqsum_battery` is the corpus view: it aggregates exactly those per-document
values, so a harness run (per-document scores through the metric registry) and a
direct call report the same numbers.

``config`` (all optional) chooses models and settings: ``bertscore_model``,
``bertscore_layers``, ``sci_bertscore_model``, ``sci_bertscore_layers``,
``blanc_model``, ``ppl_model``, ``mauve_model`` (hub ids or local directories),
``batch_size``, ``blanc_tune_epochs``, ``use_wordnet`` (None = when installed),
``rouge_stemming`` (None = medqsum's convention, stemming; see :mod:`custom_metrics.rouge`),
``metrics`` (a subset of :data:`FAMILIES` to run), ``progress`` (a bar on stderr over
the metrics run; None = ``$DOMSUM_PROGRESS``, see :mod:`custom_metrics.progress`).

A metric whose model or data is missing is *skipped*: its per-document values are
NaN (``None`` items for corpus keys, so its corpus values are NaN too), the
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

NAN = float("nan")
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
#: key -> its family
FAMILY_OF: dict[str, str] = {k: fam for fam, keys in FAMILIES.items() for k in keys}

#: key -> how its per-document values become the corpus number (see the module docstring)
KEY_AGGREGATION: dict[str, str] = {
    **{k: "mean" for k in METRIC_KEYS},
    "sacrebleu": "corpus",  # n-gram counts summed over the corpus, then BLEU
    "rouge_geo": "corpus",  # geometric mean of the three corpus means: not linear in documents
    "chrf": "corpus",  # character n-gram statistics summed over the corpus, then F-beta
    "perplexity": "nanmean",  # mean per-summary perplexity; empty summaries have none
    "mauve": "corpus",  # compares the two text distributions as wholes
}

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


def rouge_stemming(config: dict | None) -> tuple[bool, str]:
    """(stemming, its source) of the battery's ROUGE: ``config["rouge_stemming"]`` (with
    ``config["rouge_stemming_source"]`` when the caller resolved it), else the release
    convention of medqsum (:data:`custom_metrics.rouge.RELEASE_STEMMING`: stemming)."""
    from custom_metrics.rouge import stemming_for

    cfg = config or {}
    stem, source = stemming_for("medqsum", cfg.get("rouge_stemming"))
    return stem, str(cfg.get("rouge_stemming_source") or source)


def _int(cfg: dict, key: str) -> int | None:
    v = cfg.get(key)
    return None if v in (None, "") else int(v)


def _batch_size(cfg: dict) -> int:
    return _int(cfg, "batch_size") or 16


# =========================================================================== per document


def _pairs(preds: list[str], refs: list[str]) -> list[list[str]]:
    """The ``[prediction, reference]`` item of every document (a fresh list per key)."""
    return [[p, r] for p, r in zip(preds, refs)]


def _signature(corpus_fn: Callable[[Sequence[str], Sequence[str]], dict], key: str) -> str:
    """sacrebleu's signature string of a corpus scorer.

    The signature describes the scorer's settings (tokenizer, smoothing, version),
    not the texts, so one throw-away pair reads it without scoring the corpus twice;
    the corpus number itself comes from :func:`corpus_value`.
    """
    return corpus_fn(["x"], ["x"])[key]


def _bertscore_documents(preds: list[str], refs: list[str], model: str, layers: int | None,
                         batch_size: int, prefix: str, key: str, env: str) -> dict[str, list]:
    from custom_metrics.bertscore import bertscore_per_document
    from custom_metrics.hf_models import ModelUnavailable, unavailable_message

    try:
        per = bertscore_per_document(preds, refs, model=model, num_layers=layers, batch_size=batch_size)
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(unavailable_message(prefix, model, key, env, exc)) from exc
    return {f"{prefix}_{s}": [float(x[i]) for x in per] for i, s in enumerate(("p", "r", "f1"))}


def _runners(preds: list[str], refs: list[str], srcs: list[str], cfg: dict,
             models: dict[str, str], details: dict) -> dict[str, Callable[[], dict[str, list]]]:
    """family -> a function returning its per-document values (and filling ``details``)."""
    bs = _batch_size(cfg)

    def bleu() -> dict[str, list]:
        from custom_metrics.bleu import corpus_sacrebleu, sentence_bleu_scores

        details["sacrebleu_signature"] = _signature(corpus_sacrebleu, "sacrebleu_signature")
        return {"bleu": sentence_bleu_scores(preds, refs), "sacrebleu": _pairs(preds, refs)}

    def rouge() -> dict[str, list]:
        from custom_metrics.rouge import ROUGE_TYPES, rouge_per_document

        stem, source = rouge_stemming(cfg)
        details["rouge_stemming"], details["rouge_stemming_source"] = stem, source
        per = rouge_per_document(preds, refs, use_stemmer=stem)
        out: dict[str, list] = {k: [d[k] for d in per] for k in ROUGE_TYPES}
        out["rouge_geo"] = [[d[k] for k in ROUGE_TYPES] for d in per]
        out["rouge_mean"] = [sum(d[k] for k in ROUGE_TYPES) / 3 for d in per]
        return out

    def meteor() -> dict[str, list]:
        from custom_metrics.meteor import meteor_matching, meteor_per_document

        per = meteor_per_document(preds, refs, cfg.get("use_wordnet"))
        details["meteor_matching"] = meteor_matching(cfg.get("use_wordnet"))
        return {"meteor": per}

    def chrf() -> dict[str, list]:
        from custom_metrics.bleu import chrf_scores

        details["chrf_signature"] = _signature(chrf_scores, "chrf_signature")
        return {"chrf": _pairs(preds, refs)}

    def bert() -> dict[str, list]:
        return _bertscore_documents(preds, refs, models["bertscore"], _int(cfg, "bertscore_layers"), bs,
                                    "bertscore", *MODEL_SETTINGS["bertscore"])

    def bert_sci() -> dict[str, list]:
        return _bertscore_documents(preds, refs, models["bertscore_sci"], _int(cfg, "sci_bertscore_layers"),
                                    bs, "bertscore_sci", *MODEL_SETTINGS["bertscore_sci"])

    def blanc_params():
        from custom_metrics.blanc import BlancParams

        epochs = _int(cfg, "blanc_tune_epochs")
        return BlancParams(batch_size=max(bs, 16), **({"tune_epochs": epochs} if epochs is not None else {}))

    def blanc_help() -> dict[str, list]:
        from custom_metrics.blanc import blanc_help_per_document

        return {"blanc_help": blanc_help_per_document(preds, srcs, models["blanc_help"], blanc_params())}

    def blanc_tune() -> dict[str, list]:
        from custom_metrics.blanc import blanc_tune_per_document

        return {"blanc_tune": blanc_tune_per_document(preds, srcs, models["blanc_tune"], blanc_params())}

    def ppl() -> dict[str, list]:
        from custom_metrics.perplexity import perplexity_per_text

        per = perplexity_per_text(preds, models["perplexity"], bs)
        details["perplexity_scored"] = sum(1 for v in per if not math.isnan(v))
        return {"perplexity": per}

    def mauve_() -> dict[str, list]:
        # MAUVE is computed from the items by corpus_value; loading the model here makes a
        # missing model a skip (with featurize's own notice) before any item is handed out,
        # and the cached model is the one corpus_value then uses.
        from custom_metrics.hf_models import load_model
        from custom_metrics.mauve import MAX_TOKENS, kmeans_impl

        key, env = MODEL_SETTINGS["mauve"]
        tok, _ = load_model("causal", models["mauve"], metric="mauve", key=key, env=env)

        def featurized(texts: list[str]) -> int:  # the texts featurize keeps: non-empty after tokenizing
            return sum(1 for t in texts if t.strip()
                       and tok(t.strip(), add_special_tokens=False)["input_ids"][:MAX_TOKENS])

        details["mauve_kmeans"] = kmeans_impl()
        details["mauve_texts"] = [featurized(preds), featurized(refs)]
        return {"mauve": _pairs(preds, refs)}

    return {"bleu": bleu, "rouge": rouge, "meteor": meteor, "chrf": chrf, "bertscore": bert,
            "bertscore_sci": bert_sci, "blanc_help": blanc_help, "blanc_tune": blanc_tune,
            "perplexity": ppl, "mauve": mauve_}


def _missing(key: str, n: int) -> list:
    """Per-document values of a key that was not computed: NaN, or ``None`` items."""
    return [None] * n if KEY_AGGREGATION[key] == "corpus" else [NAN] * n


def _normalise(predictions: Sequence[str], references: Sequence[str],
               sources: Sequence[str] | None) -> tuple[list[str], list[str], list[str]]:
    preds = ["" if p is None else str(p).strip() for p in predictions]
    refs = ["" if r is None else str(r).strip() for r in references]
    srcs = ["" if s is None else str(s) for s in (sources if sources is not None else [""] * len(preds))]
    if not (len(preds) == len(refs) == len(srcs)):
        raise ValueError(f"medqsum_battery: {len(preds)} predictions, {len(refs)} references, "
                         f"{len(srcs)} sources")
    return preds, refs, srcs


def _wanted(cfg: dict) -> list[str]:
    wanted = list(cfg.get("metrics") or FAMILIES)
    unknown = [f for f in wanted if f not in FAMILIES]
    if unknown:
        raise ValueError(f"medqsum_battery: unknown metric families {unknown}; known: {list(FAMILIES)}")
    return wanted


def battery_documents(predictions: Sequence[str], references: Sequence[str], sources: Sequence[str] | None = None,
                      *, config: dict | None = None) -> tuple[dict[str, list], dict[str, Any]]:
    """Every metric of the battery, one value per document (see the module docstring).

    Returns ``(values, facts)``. ``values`` maps every key of :data:`METRIC_KEYS` to a
    list with one entry per document: a float for ``mean`` / ``nanmean`` keys, a JSON
    item for ``corpus`` keys (fold with :func:`corpus_value`). Per-document values are
    what a metric-vs-human correlation needs, and what lets the harness give every
    averaged key a standard error. ``facts`` holds ``skipped`` (``{"metric", "keys",
    "reason"}`` per family not run; its values are NaN / ``None``), ``timings``
    (seconds per family) and ``details`` (signatures, matching mode, models).
    """
    from custom_metrics.hf_models import ModelUnavailable
    from custom_metrics.progress import bar

    cfg = dict(config or {})
    preds, refs, srcs = _normalise(predictions, references, sources)
    wanted = _wanted(cfg)
    models = resolved_models(cfg)
    n = len(preds)
    details: dict[str, Any] = {"models": {f: models[f] for f in MODEL_SETTINGS if f in wanted}}
    values: dict[str, list] = {k: _missing(k, n) for k in METRIC_KEYS}
    skipped: list[dict] = []
    timings: dict[str, float] = {}
    runners = _runners(preds, refs, srcs, cfg, models, details)
    with bar(len([f for f in FAMILIES if f in wanted]) if n else 0, "medqsum metrics", unit="metric",
             enabled=cfg.get("progress", False)) as shown:
        for fam in FAMILIES:
            if fam not in wanted:
                skipped.append({"metric": fam, "keys": list(FAMILIES[fam]), "reason": "not requested"})
                continue
            shown.set_postfix_str(fam)
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
                shown.update(1)
            for k in FAMILIES[fam]:
                per = res[k]
                if len(per) != n:
                    raise RuntimeError(f"medqsum_battery: {fam} gave {len(per)} values for {n} documents")
                values[k] = per if KEY_AGGREGATION[k] == "corpus" else [NAN if v is None else float(v) for v in per]
    return values, {"skipped": skipped, "timings": timings, "details": details}


# =========================================================================== corpus values


def _texts(items: Sequence[Any]) -> tuple[list[str], list[str]]:
    pairs = [it for it in items if it is not None]
    return [str(p) for p, _ in pairs], [str(r) for _, r in pairs]


def _corpus_sacrebleu(items: Sequence[Any], cfg: dict) -> float:
    from custom_metrics.bleu import corpus_sacrebleu

    return float(corpus_sacrebleu(*_texts(items))["sacrebleu"])


def _corpus_chrf(items: Sequence[Any], cfg: dict) -> float:
    from custom_metrics.bleu import chrf_scores

    return float(chrf_scores(*_texts(items))["chrf"])


def _corpus_rouge_geo(items: Sequence[Any], cfg: dict) -> float:
    from custom_metrics.rouge import ROUGE_TYPES, aggregate_rouge

    return float(aggregate_rouge([dict(zip(ROUGE_TYPES, it)) for it in items if it is not None])["rouge_geo"])


def _corpus_mauve(items: Sequence[Any], cfg: dict) -> float:
    from custom_metrics.mauve import mauve_scores

    preds, refs = _texts(items)
    return float(mauve_scores(preds, refs, resolved_models(cfg)["mauve"], _batch_size(cfg))["mauve"])


_CORPUS: dict[str, Callable[[Sequence[Any], dict], float]] = {
    "sacrebleu": _corpus_sacrebleu,
    "chrf": _corpus_chrf,
    "rouge_geo": _corpus_rouge_geo,
    "mauve": _corpus_mauve,
}
assert set(_CORPUS) == {k for k, a in KEY_AGGREGATION.items() if a == "corpus"}


def corpus_value(key: str, items: Sequence[Any], config: dict | None = None) -> float:
    """The corpus number of the corpus key ``key`` from its per-document items.

    ``None`` items (documents whose family was skipped) are left out; all ``None``
    (or no items) gives NaN. ``mauve`` loads its model (``config['mauve_model']``,
    ``batch_size``) here: MAUVE needs every text of both sides at once.
    """
    if KEY_AGGREGATION.get(key) != "corpus":
        raise ValueError(f"corpus_value: {key!r} is not a corpus key of the battery "
                         f"({', '.join(_CORPUS)})")
    if all(it is None for it in items):
        return NAN
    return _CORPUS[key](items, dict(config or {}))


def aggregate_value(key: str, values: Sequence[Any], config: dict | None = None) -> float:
    """The corpus number of any battery key from its per-document values.

    ``mean``: the mean (NaN values make it NaN); ``nanmean``: the mean of the
    non-NaN values; ``corpus``: :func:`corpus_value`. No documents gives NaN.
    """
    how = KEY_AGGREGATION[key]
    if how == "corpus":
        return corpus_value(key, values, config)
    vals = [float(v) for v in values]
    if how == "nanmean":
        vals = [v for v in vals if not math.isnan(v)]
    return math.fsum(vals) / len(vals) if vals else NAN


# =========================================================================== corpus view


def medqsum_battery(predictions: Sequence[str], references: Sequence[str], sources: Sequence[str] | None = None,
                    *, config: dict | None = None) -> dict[str, Any]:
    """Every metric of the battery over one corpus (see the module docstring).

    The per-document values of :func:`battery_documents` aggregated by
    :func:`aggregate_value`, so this equals what the harness reports from the same
    documents. Returns the metric keys (floats; NaN when skipped) plus ``skipped``
    (list of dicts), ``timings`` (seconds per family, corpus folding included) and
    ``details`` (signatures, models).
    """
    from custom_metrics.hf_models import ModelUnavailable

    cfg = dict(config or {})
    values, facts = battery_documents(predictions, references, sources, config=cfg)
    skipped, timings = facts["skipped"], facts["timings"]
    out: dict[str, Any] = {}
    for k in METRIC_KEYS:
        fam = FAMILY_OF[k]
        t0 = time.perf_counter()
        try:
            out[k] = aggregate_value(k, values[k], cfg)
        except ModelUnavailable as exc:  # a corpus key's model lost since scoring: skip it as well
            reason = str(exc)
            log.warning("NOTICE: %s skipped. %s", fam, reason)
            skipped.append({"metric": fam, "keys": [k], "reason": reason})
            out[k] = NAN
        finally:
            if fam in timings and KEY_AGGREGATION[k] == "corpus":
                timings[fam] += time.perf_counter() - t0
    out["skipped"] = skipped
    out["timings"] = timings
    out["details"] = facts["details"]
    return out


def is_missing(value: float) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
