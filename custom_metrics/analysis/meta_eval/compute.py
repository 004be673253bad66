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

from custom_metrics.analysis.errors import MetaEvalError

COMPUTABLE = ("rouge", "bertscore", "fm", "bleu", "chrf", "meteor", "perplexity", "blanc_help")

#: --compute name -> the battery key whose per-document values become column ``our_<key>``
#: (the name is also the battery family that computes it)
BATTERY_KEYS = {"rouge": "rougeL", "bertscore": "bertscore_f1", "bleu": "bleu", "meteor": "meteor",
                "perplexity": "perplexity", "blanc_help": "blanc_help"}


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

    families = [n for n in BATTERY_KEYS if n in names]
    cfg = {"metrics": families, **{k: v for k, v in config.items() if v is not None}}
    values, facts = battery_documents(cands, refs, _texts(df, "article", "source"), config=cfg)
    for item in facts["skipped"]:
        if item["metric"] in families:
            raise MetaEvalError(f"--compute {item['metric']} cannot run: {item['reason']}")
    out = {name: values[BATTERY_KEYS[name]] for name in families}
    if "meteor" in families:
        out["meteor_matching"] = facts["details"]["meteor_matching"]
    return out


def compute_metrics(df: pd.DataFrame, which: Sequence[str], *, bertscore_model: str | None = None,
                    bertscore_layers: int | None = None, judge_config: Any = None,
                    fm_variant: str = "zero", ppl_model: str | None = None,
                    blanc_model: str | None = None, progress: bool | None = False) -> dict[str, Any]:
    """Add our own per-summary metric columns (``our_<name>``) in place.

    ``rouge`` -> ``our_rougeL``; ``bertscore`` -> ``our_bertscore_f1``; ``bleu`` (smoothed
    sentence BLEU), ``meteor``, ``perplexity`` (of the summary, lower is better) and
    ``blanc_help`` (reference-free, needs an ``article`` or ``source`` column) come
    from the medqsum battery's per-document values (:func:`_battery_columns`);
    ``chrf`` -> sentence-level chrF (the battery's chrF is corpus-level); ``fm`` ->
    ``our_fm``, ``our_fm_vanilla`` (judge). ``progress``: the battery's bar on stderr
    (:mod:`custom_metrics.progress`; the judge's follows its own configuration).
    """
    unknown = [n for n in which if n not in COMPUTABLE]
    if unknown:
        raise MetaEvalError(f"unknown --compute metric {unknown[0]!r} "
                         f"(one of {', '.join(COMPUTABLE)})")
    refs = _texts(df, "reference")
    cands = _texts(df, "summary")
    info: dict[str, Any] = {}
    battery: dict[str, Any] = {}
    if any(n in BATTERY_KEYS for n in which):
        battery = _battery_columns(df, which, refs, cands, {
            "bertscore_model": bertscore_model, "bertscore_layers": bertscore_layers,
            "ppl_model": ppl_model, "blanc_model": blanc_model, "progress": progress})
    if "meteor_matching" in battery:
        info["meteor_matching"] = battery.pop("meteor_matching")
    for name in which:  # columns in the order asked: the tables list them so
        if name in battery:
            df[f"our_{BATTERY_KEYS[name]}"] = battery[name]
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


__all__ = ["BATTERY_KEYS", "COMPUTABLE", "compute_metrics"]
