"""The biomedical question-summarization metric battery: a list of metric families.

Yuan et al., "Revisiting Automatic Question Summarization Evaluation in the
Biomedical Domain", compare these automatic metrics against human judgements of
question summaries. The battery is :data:`MEDQSUM`, a list of family names of
:mod:`custom_metrics.registry`; each family's keys, scale, direction, aggregation and
model setting are in its own record, beside its formula (the generated reference:
``docs/metrics.md``). The paper's metrics, plus CIDEr-D (``cider``), which SummEval
reports and the paper does not.

The medqsum benchmark's record lists exactly these families, each optional, so a harness
run and a direct call score the same records. What a battery adds to scoring a family
alone (a family scored under a context marked :attr:`~custom_metrics.registry.Context.battery`):
a family whose model is missing is *skipped* (its values NaN, ``None`` items for
corpus keys, a notice naming the setting and environment variable that point it at a
local copy) and every other family still runs; ``metrics`` runs a subset (the others
are listed as "not requested").

:func:`battery_documents` gives one value per key and document plus ``facts``
(``skipped``, ``timings`` in seconds per family, ``details``: signatures, matching
mode, models); :func:`medqsum_battery` folds those values into corpus numbers with
each key's own aggregation (:func:`custom_metrics.registry.aggregate`).

``config`` (all optional) holds setting values under the settings' names
(``bertscore_model``, ``sci_bertscore_model``, ``blanc_model``, ``ppl_model``,
``mauve_model``, their ``*_layers``, ``blanc_tune_epochs``, ``rouge_stemming``),
plus ``batch_size`` (the ``metric_batch_size`` setting), ``use_wordnet`` (None = when
installed), ``metrics`` (a subset of :data:`MEDQSUM`) and ``progress`` (a bar over
the families; None = ``$DOMSUM_PROGRESS``).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any

from custom_metrics import registry
from custom_metrics.registry import NAN, Batch, Context, Family

log = logging.getLogger(__name__)

#: the battery: families of the registry, in the order they run
MEDQSUM: tuple[str, ...] = ("bleu", "rouge", "meteor", "chrf", "bertscore", "bertscore_sci",
                            "blanc_help", "blanc_tune", "perplexity", "mauve",
                            "cider")  # beyond the paper: SummEval's CIDEr-D


def missing_values(family: Family, n: int) -> dict[str, list]:
    """Per-document values of a family that was not computed: NaN, or ``None`` items."""
    return {k.name: [None if k.aggregation == "corpus" else NAN] * n for k in family.keys}


def requested(names: Sequence[str], metrics: Any, where: str = "medqsum_battery: metrics") -> list[str]:
    """The families of ``names`` that ``metrics`` (a comma string or list; empty = all) asks for.

    An unknown family name is an error, starting with ``where`` (what gave ``metrics``),
    that lists the battery's families.
    """
    if not metrics:
        return list(names)
    wanted = [m.strip() for m in metrics.split(",")] if isinstance(metrics, str) else list(metrics)
    unknown = [f for f in wanted if f not in names]
    if unknown:
        raise ValueError(f"{where}: unknown metric families {unknown}; known: {list(names)}")
    return [f for f in names if f in wanted]


def skips_missing_model(family: Family, exc: BaseException, in_battery: bool) -> bool:
    """Whether ``exc`` skips ``family`` (NaN, counted with its reason) instead of failing the run.

    A family marked ``optional`` is skipped when its model is missing at scoring time;
    one of a battery (``in_battery``: its context's :attr:`~custom_metrics.registry.Context.battery`,
    one of its benchmark's optional families) is skipped when it has a model and that model
    is missing, also when its preflight finds it missing (a ``ScorerUnavailable``), since
    the battery promises to score the families it can and count the others.
    """
    from custom_metrics.hf_models import ModelUnavailable

    if isinstance(exc, ModelUnavailable) and family.optional:
        return True
    return (in_battery and bool(family.model_setting)
            and isinstance(exc, (ModelUnavailable, registry.ScorerUnavailable)))


def skip_notice(family: Family, reason: str) -> dict[str, Any]:
    """Log the notice of a skipped family and return its ``skipped`` entry."""
    log.warning("NOTICE: %s skipped. %s", family.name, reason)
    return {"metric": family.name, "keys": list(family.key_names), "reason": reason}


def _settings(cfg: dict) -> dict[str, Any]:
    out = {k: v for k, v in cfg.items() if k not in ("metrics", "progress", "batch_size") and v not in (None, "")}
    if cfg.get("batch_size") not in (None, ""):
        out["metric_batch_size"] = int(cfg["batch_size"])
    return out


def _normalise(predictions: Sequence[str], references: Sequence[str],
               sources: Sequence[str] | None) -> Batch:
    preds = registry.stripped(predictions)
    refs = registry.stripped(references)
    srcs = ["" if s is None else str(s) for s in (sources if sources is not None else [""] * len(preds))]
    if not (len(preds) == len(refs) == len(srcs)):
        raise ValueError(f"medqsum_battery: {len(preds)} predictions, {len(refs)} references, "
                         f"{len(srcs)} sources")
    return Batch(preds, refs, srcs, [{} for _ in preds])


def battery_documents(predictions: Sequence[str], references: Sequence[str], sources: Sequence[str] | None = None,
                      *, config: dict | None = None, names: Sequence[str] = MEDQSUM
                      ) -> tuple[dict[str, list], dict[str, Any]]:
    """Every family of the battery, one value per key and document (see the module docstring).

    ``names``: the families to run (default the battery, :data:`MEDQSUM`); ``meta-eval
    --compute`` passes any family of the metric table here.

    Returns ``(values, facts)``: ``values`` maps every key of every battery family to a
    list with one entry per document (a float for ``mean``/``nanmean`` keys, a JSON item
    for ``corpus`` keys); ``facts`` holds ``skipped``, ``timings``, ``details`` and the
    ``contexts`` the families scored under (for :func:`medqsum_battery`'s corpus folding).
    """
    from custom_metrics.hf_models import ModelUnavailable
    from custom_metrics.progress import bar

    cfg = dict(config or {})
    batch = _normalise(predictions, references, sources)
    wanted = requested(names, cfg.get("metrics"))
    settings = _settings(cfg)
    n = len(batch)
    families = [registry.get(name) for name in names]
    contexts = {f.name: Context(battery=True, settings=settings, progress=False) for f in families}
    details: dict[str, Any] = {"models": {f.name: f.model(contexts[f.name]) for f in families
                                          if f.model_setting and f.name in wanted}}
    values: dict[str, list] = {}
    skipped: list[dict] = []
    timings: dict[str, float] = {}
    with bar(len(wanted) if n else 0, "metric battery", unit="metric", enabled=cfg.get("progress", False)) as shown:
        for fam in families:
            values.update(missing_values(fam, n))
            if fam.name not in wanted:
                skipped.append({"metric": fam.name, "keys": list(fam.key_names), "reason": "not requested"})
                continue
            shown.set_postfix_str(fam.name)
            ctx = contexts[fam.name]
            t0 = time.perf_counter()
            try:
                res = fam.score(batch, ctx)
            except ModelUnavailable as exc:
                skipped.append(skip_notice(fam, str(exc)))
                continue
            finally:
                timings[fam.name] = time.perf_counter() - t0
                shown.update(1)
            details.update({**ctx.record, **ctx.details})
            for k in fam.keys:
                per = res[k.name]
                if len(per) != n:
                    raise RuntimeError(f"medqsum_battery: {fam.name} gave {len(per)} values for {n} documents")
                values[k.name] = per if k.aggregation == "corpus" else [NAN if v is None else float(v) for v in per]
    return values, {"skipped": skipped, "timings": timings, "details": details, "contexts": contexts}


def corpus_value(key: str, items: Sequence[Any], config: dict | None = None) -> float:
    """The corpus number of the corpus key ``key`` of a battery family from its items.

    ``None`` items (documents whose family was skipped) are left out; all ``None`` (or no
    items) gives NaN. ``mauve`` loads its model here: MAUVE needs every text at once.
    """
    fam = registry.family_of(key) if registry.key(key) is not None else None
    if fam is None or fam.name not in MEDQSUM or fam.key(key).aggregation != "corpus":
        corpus = [k.name for name in MEDQSUM for k in registry.get(name).keys if k.aggregation == "corpus"]
        raise ValueError(f"corpus_value: {key!r} is not a corpus key of the battery ({', '.join(corpus)})")
    if all(it is None for it in items):
        return NAN
    ctx = Context(battery=True, settings=_settings(dict(config or {})))
    return registry.aggregate(fam, key, items, ctx)


def medqsum_battery(predictions: Sequence[str], references: Sequence[str], sources: Sequence[str] | None = None,
                    *, config: dict | None = None) -> dict[str, Any]:
    """Every metric of the battery over one corpus (see the module docstring).

    The per-document values of :func:`battery_documents` folded by each key's own
    aggregation, so this equals what the harness reports from the same documents.
    Returns the metric keys (floats; NaN when skipped) plus ``skipped``, ``timings``
    (seconds per family, corpus folding included) and ``details``.
    """
    from custom_metrics.hf_models import ModelUnavailable

    values, facts = battery_documents(predictions, references, sources, config=config)
    skipped, timings, contexts = facts["skipped"], facts["timings"], facts.pop("contexts")
    out: dict[str, Any] = {}
    for name in MEDQSUM:
        fam = registry.get(name)
        for k in fam.keys:
            t0 = time.perf_counter()
            try:
                out[k.name] = (NAN if k.aggregation == "corpus" and all(v is None for v in values[k.name])
                               else registry.aggregate(fam, k.name, values[k.name], contexts[name]))
            except ModelUnavailable as exc:  # a corpus key's model lost since scoring: skip it as well
                skipped.append({**skip_notice(fam, str(exc)), "keys": [k.name]})
                out[k.name] = NAN
            finally:
                if name in timings and k.aggregation == "corpus":
                    timings[name] += time.perf_counter() - t0
    out["skipped"] = skipped
    out["timings"] = timings
    out["details"] = facts["details"]
    return out


def is_missing(value: float) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
