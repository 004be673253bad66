"""Our own per-summary metric columns for meta-evaluation (``--compute``).

Why beside the inputs and not in the statistics: these columns are scored by the
suite's metric library (the medqsum battery, sentence chrF, the FM judge), so a
correlation is computed on exactly the numbers a harness run reports; a metric that
cannot run stops with :class:`~custom_metrics.analysis.errors.MetaEvalError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from custom_metrics import model_cache, registry
from custom_metrics.analysis.errors import MetaEvalError

#: the prefix of the columns ``--compute`` adds (``our_<key>``), so that a table's own column of
#: the same metric stays beside ours
OURS = "our_"


def _sentence_chrf(refs: list[str], cands: list[str], info: dict[str, Any], **_: Any) -> dict[str, list]:
    """Sentence-level chrF per summary (the table's chrF is a corpus number)."""
    from custom_metrics.families.bleu import sentence_chrf_scores

    return {OURS + "chrf": sentence_chrf_scores(cands, refs)}


def _fm_pairs(refs: list[str], cands: list[str], info: dict[str, Any], *, judge_config: Any,
              fm_variant: str, **_: Any) -> dict[str, list]:
    """FM and its vanilla rating per summary, from (reference, candidate) pairs with no
    document; nothing (and a note in ``info``) without a judge."""
    from custom_metrics.judge.fm import fm_scores

    out = fm_scores(refs, cands, judge_config, variant=fm_variant)
    if out is None:
        info["fm"] = "skipped: no judge configured"
        return {}
    info["fm"] = {"n_scored": out["n_scored"], "failures": out["failures"], "usage": out["usage"]}
    return {OURS + key: [np.nan if it[key] is None else it[key] for it in out["per_item"]]
            for key in ("fm", "fm_vanilla")}


#: names computed here, outside the metric table's per-document values, -> the function that
#: adds their columns (and notes in ``info``): sentence-level chrF and the FM judge
SPECIAL: dict[str, Callable[..., dict[str, list]]] = {"chrf": _sentence_chrf, "fm": _fm_pairs}

#: --compute name -> the one key whose per-document values become column ``our_<key>``
#: (the papers correlate ROUGE-L and BERTScore F1); any other family of the metric table
#: gives a column per per-document key
BATTERY_KEYS = {"rouge": "rougeL", "bertscore": "bertscore_f1"}


def computable() -> tuple[str, ...]:
    """Every ``--compute`` name: the special ones and each metric-table family with a
    per-document key that needs no judge (a new family is computable with no edit here)."""
    table = [f.name for f in registry.all_families()
             if "judge" not in f.needs and f.name not in SPECIAL
             and any(k.aggregation != "corpus" for k in f.keys)]
    return tuple(sorted({*SPECIAL, *table}))


def _columns(name: str) -> list[str]:
    """The keys of family ``name`` that become ``our_<key>`` columns."""
    if name in BATTERY_KEYS:
        return [BATTERY_KEYS[name]]
    return [k.name for k in registry.get(name).keys if k.aggregation != "corpus"]


def _texts(df: pd.DataFrame, *columns: str) -> list[str]:
    """The first of ``columns`` present, non-strings (NaN cells) as ''."""
    col = next((df[c] for c in columns if c in df.columns), pd.Series([""] * len(df)))
    return [v if isinstance(v, str) else "" for v in col]


def _battery_columns(df: pd.DataFrame, names: Sequence[str], refs: list[str], cands: list[str],
                     config: dict[str, Any]) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Per-summary values of the battery metrics in ``names``, one battery call, and the
    facts those families recorded about how they scored (METEOR's matching stages).

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
    details = {k: v for name in families for k, v in facts["contexts"][name].details.items()}
    return {key: values[key] for name in families for key in _columns(name)}, details


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
    (:func:`custom_metrics.families.rouge.stemming_for`); what was used is returned as
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
    if any("rouge_stemming" in registry.get(n).settings for n in which):  # whose records read it
        from custom_metrics.families.rouge import stemming_for

        try:
            stemming, info["rouge_stemming_source"] = stemming_for(rouge_stemming, rouge_convention)
        except ValueError as exc:
            raise MetaEvalError(str(exc)) from None
        info["rouge_stemming"] = stemming
    if any(n not in SPECIAL for n in which):
        try:
            battery, details = _battery_columns(df, which, refs, cands, {
                "bertscore_model": bertscore_model, "bertscore_layers": bertscore_layers,
                "ppl_model": ppl_model, "blanc_model": blanc_model, "progress": progress,
                "rouge_stemming": stemming})
        finally:  # the scorer models are done with: free them (custom_metrics.model_cache)
            model_cache.release()
        info.update(details)
    for name in which:  # columns in the order asked: the tables list them so
        if name in SPECIAL:
            columns = SPECIAL[name](refs, cands, info, judge_config=judge_config, fm_variant=fm_variant)
        else:
            columns = {OURS + key: battery[key] for key in _columns(name)}
        for column, values in columns.items():
            df[column] = values
    return info


__all__ = ["BATTERY_KEYS", "OURS", "SPECIAL", "computable", "compute_metrics"]
