"""Our own per-summary metric columns for meta-evaluation (``--compute``).

Why beside the inputs and not in the statistics: these columns are scored by the
suite's metric library (the medqsum battery, sentence chrF, the FM judge), so a
correlation is computed on exactly the numbers a harness run reports; a metric that
cannot run stops with :class:`~custom_metrics.analysis.errors.MetaEvalError` naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from custom_metrics import model_cache
from custom_metrics.analysis.errors import MetaEvalError

#: names computed outside the metric table: sentence-level chrF (the table's chrF is a
#: corpus number) and the FM judge (pairs of references and candidates, no document)
SPECIAL = ("chrf", "fm")

#: --compute name -> the one key whose per-document values become column ``our_<key>``
#: (the papers correlate ROUGE-L and BERTScore F1); any other family of the metric table
#: gives a column per per-document key
BATTERY_KEYS = {"rouge": "rougeL", "bertscore": "bertscore_f1"}


def computable() -> tuple[str, ...]:
    """Every ``--compute`` name: the special ones and each metric-table family with a
    per-document key that needs no judge (a new family is computable with no edit here)."""
    from custom_metrics import registry

    table = [f.name for f in registry.all_families()
             if "judge" not in f.needs and f.name not in SPECIAL
             and any(k.aggregation != "corpus" for k in f.keys)]
    return tuple(sorted({*SPECIAL, *table}))


def _columns(name: str) -> list[str]:
    """The keys of family ``name`` that become ``our_<key>`` columns."""
    from custom_metrics import registry

    if name in BATTERY_KEYS:
        return [BATTERY_KEYS[name]]
    return [k.name for k in registry.get(name).keys if k.aggregation != "corpus"]


def _texts(df: pd.DataFrame, *columns: str) -> list[str]:
    """The first of ``columns`` present, non-strings (NaN cells) as ''."""
    col = next((df[c] for c in columns if c in df.columns), pd.Series([""] * len(df)))
    return [v if isinstance(v, str) else "" for v in col]


def _battery_columns(df: pd.DataFrame, names: Sequence[str], refs: list[str], cands: list[str],
                     config: dict[str, Any]) -> dict[str, list[float]]:
    """Per-summary values of the battery metrics in ``names``, one battery call.

    Why the battery: its per-document values are the numbers a harness run averages,
    so a correlation is computed on exactly the metric the suite reports. A metric the
    battery had to skip (model missing) stops here, naming the metric and the reason,
    rather than leaving a column of NaN that would read as "no correlation".
    """
    from custom_metrics.battery import battery_documents

    families = [n for n in names if n not in SPECIAL]
    cfg = {"metrics": families, **{k: v for k, v in config.items() if v is not None}}
    values, facts = battery_documents(cands, refs, _texts(df, "article", "source"), config=cfg, names=families)
    for item in facts["skipped"]:
        if item["metric"] in families:
            raise MetaEvalError(f"--compute {item['metric']} cannot run: {item['reason']}")
    out: dict[str, Any] = {key: values[key] for name in families for key in _columns(name)}
    if "meteor" in families:
        out["meteor_matching"] = facts["details"]["meteor_matching"]
    return out


def compute_metrics(df: pd.DataFrame, which: Sequence[str], *, bertscore_model: str | None = None,
                    bertscore_layers: int | None = None, judge_config: Any = None,
                    fm_variant: str = "zero", ppl_model: str | None = None,
                    blanc_model: str | None = None, progress: bool | None = False,
                    rouge_stemming: bool | None = None,
                    rouge_convention: tuple[bool, str] | None = None) -> dict[str, Any]:
    """Add our own per-summary metric columns (``our_<name>``) in place.

    ``rouge`` -> ``our_rougeL``; ``bertscore`` -> ``our_bertscore_f1``; any other family
    of the metric table (:func:`computable`: ``bleu`` (smoothed sentence BLEU),
    ``meteor``, ``perplexity`` (lower is better), ``blanc_help`` (reference-free, needs
    an ``article`` or ``source`` column), ``cider``, ...) -> ``our_<key>`` per
    per-document key, from the battery runner's values (:func:`_battery_columns`);
    ``chrf`` -> sentence-level chrF (the battery's chrF is corpus-level); ``fm`` ->
    ``our_fm``, ``our_fm_vanilla`` (judge). ``progress``: the battery's bar on stderr
    (:mod:`custom_metrics.progress`; the judge's follows its own configuration).
    ``rouge_stemming`` / ``rouge_convention``: ROUGE's Porter stemming is the setting when
    given, else the convention passed (``(value, source)``: a benchmark's release convention,
    which the command reads from the benchmark's record), else the library default
    (:func:`custom_metrics.rouge.stemming_for`); what was used is returned as
    ``rouge_stemming`` and ``rouge_stemming_source``.
    """
    names = computable()
    unknown = [n for n in which if n not in names]
    if unknown:
        raise MetaEvalError(f"unknown --compute metric {unknown[0]!r} "
                            f"(one of {', '.join(names)})")
    refs = _texts(df, "reference")
    cands = _texts(df, "summary")
    info: dict[str, Any] = {}
    battery: dict[str, Any] = {}
    stemming: bool | None = None
    if "rouge" in which:
        from custom_metrics.rouge import stemming_for

        try:
            stemming, info["rouge_stemming_source"] = stemming_for(rouge_stemming, rouge_convention)
        except ValueError as exc:
            raise MetaEvalError(str(exc)) from None
        info["rouge_stemming"] = stemming
    if any(n not in SPECIAL for n in which):
        try:
            battery = _battery_columns(df, which, refs, cands, {
                "bertscore_model": bertscore_model, "bertscore_layers": bertscore_layers,
                "ppl_model": ppl_model, "blanc_model": blanc_model, "progress": progress,
                "rouge_stemming": stemming})
        finally:  # the scorer models are done with: free them (custom_metrics.model_cache)
            model_cache.release()
    if "meteor_matching" in battery:
        info["meteor_matching"] = battery.pop("meteor_matching")
    for name in which:  # columns in the order asked: the tables list them so
        if name not in SPECIAL:
            for key in _columns(name):
                df[f"our_{key}"] = battery[key]
        elif name == "chrf":
            from custom_metrics.bleu import sentence_chrf_scores

            df["our_chrf"] = sentence_chrf_scores(cands, refs)
        elif name == "fm":
            from custom_metrics.fm import fm_scores

            out = fm_scores(refs, cands, judge_config, variant=fm_variant)
            if out is None:
                info["fm"] = "skipped: no judge configured"
                continue
            df["our_fm"] = [np.nan if it["fm"] is None else it["fm"] for it in out["per_item"]]
            df["our_fm_vanilla"] = [np.nan if it["fm_vanilla"] is None else it["fm_vanilla"]
                                    for it in out["per_item"]]
            info["fm"] = {"n_scored": out["n_scored"], "failures": out["failures"], "usage": out["usage"]}
    return info


__all__ = ["BATTERY_KEYS", "SPECIAL", "computable", "compute_metrics"]
