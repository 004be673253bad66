"""Meta-evaluation tables beyond the correlations themselves: system rankings, human
scores from per-annotator ratings (one annotator or the consensus), kappa per aspect,
per-system mean ratings, and every metric against every rated aspect.

The coefficients, levels, intervals and kappa come from :mod:`custom_metrics.analysis.stats`;
this module only shapes the tables they are computed on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from custom_metrics import registry
from custom_metrics.analysis.meta_eval.compute import OURS
from custom_metrics.analysis.meta_eval.converters import LOWER_IS_BETTER_COLUMNS
from custom_metrics.analysis.meta_eval.inputs import flatten_ratings
from custom_metrics.analysis.stats.agreement import cohen_kappa, krippendorff_alpha, weighted_kappa
from custom_metrics.analysis.stats.consensus import consensus as pool
from custom_metrics.analysis.stats.table import correlation_table

CONSENSUS = "consensus"


def lower_is_better_columns() -> tuple[str, ...]:
    """The columns ranked lower-first: every key whose record says lower is better
    (:attr:`~custom_metrics.registry.Key.higher_is_better` False), under its own name and as
    the ``--compute`` column (``our_<key>``), and the release columns holding such a metric
    (:data:`~custom_metrics.analysis.meta_eval.converters.LOWER_IS_BETTER_COLUMNS`)."""
    keys = [k for k, higher in registry.higher_is_better().items() if higher is False]
    return (*keys, *(OURS + k for k in keys), *LOWER_IS_BETTER_COLUMNS)


#: :func:`lower_is_better_columns` when the module was imported (perplexity, its ``ppl`` and ``our_`` columns, ...)
LOWER_IS_BETTER = lower_is_better_columns()


def rankings(df: pd.DataFrame, columns: Sequence[str],
             lower_is_better: Sequence[str] = LOWER_IS_BETTER) -> pd.DataFrame:
    """System means per metric (and human) with ranks (1 = best).

    Higher is better except for the columns named in ``lower_is_better`` (perplexity and
    every other key its record ranks lower-first: :func:`lower_is_better_columns`).
    """
    means = df.groupby("system")[list(columns)].mean(numeric_only=True)
    out = pd.DataFrame(index=means.index)
    for c in columns:
        out[c] = means[c]
        out[f"{c}_rank"] = means[c].rank(ascending=c in lower_is_better, method="min")
    return out.sort_values(f"{columns[0]}_rank")


def human_scores(ratings: pd.DataFrame, aspect: str, who: str, consensus: str = "mean") -> pd.DataFrame:
    """(doc_id, system, human) for one aspect: one annotator's rating, or the consensus.

    The consensus pools each annotator's rating of the item (an annotator who rated an
    item twice counts once, by their mean) with ``consensus`` (mean, median or majority,
    :func:`custom_metrics.analysis.stats.consensus.consensus`).
    """
    r = ratings[ratings["aspect"] == aspect]
    per = r.groupby(["doc_id", "system", "annotator"], sort=False)["rating"].mean().reset_index()
    if who != CONSENSUS:
        per = per[per["annotator"] == who]
        return per.groupby(["doc_id", "system"], sort=False)["rating"].mean().reset_index().rename(
            columns={"rating": "human"})
    wide = per.pivot_table(index=["doc_id", "system"], columns="annotator", values="rating", sort=False)
    return pd.DataFrame({"doc_id": wide.index.get_level_values(0), "system": wide.index.get_level_values(1),
                         "human": pool(wide.to_numpy(float), consensus)})


def attach_human(df: pd.DataFrame, human: pd.DataFrame) -> pd.DataFrame:
    """The metric table with one human column; per-sample ratings (system '') broadcast."""
    base = df.drop(columns=["human"], errors="ignore")
    base = base.assign(_doc=base["doc_id"].astype(str), _sys=base["system"].astype(str))
    h = human.assign(_doc=human["doc_id"].astype(str), _sys=human["system"].astype(str))
    per_system = h[h["_sys"] != ""][["_doc", "_sys", "human"]]
    per_sample = h[h["_sys"] == ""][["_doc", "human"]].rename(columns={"human": "_sample_human"})
    out = base.merge(per_system, on=["_doc", "_sys"], how="left").merge(per_sample, on="_doc", how="left")
    out["human"] = out["human"].fillna(out["_sample_human"])
    return out.drop(columns=["_doc", "_sys", "_sample_human"])


def kappa_table(ratings: pd.DataFrame) -> pd.DataFrame:
    """Inter-annotator agreement per aspect and annotator pair: unweighted and quadratic kappa."""
    rows = []
    for aspect, r in ratings.groupby("aspect", sort=True):
        wide = r.groupby(["doc_id", "system", "annotator"])["rating"].mean().unstack("annotator")
        names = sorted(wide.columns)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                k, n = cohen_kappa(list(wide[a]), list(wide[b]))
                kq, _ = weighted_kappa(list(wide[a]), list(wide[b]), "quadratic")
                rows.append({"aspect": aspect, "annotator_a": a, "annotator_b": b, "n_items": n,
                             "kappa": k, "kappa_quadratic": kq})
    return pd.DataFrame(rows, columns=["aspect", "annotator_a", "annotator_b", "n_items", "kappa",
                                       "kappa_quadratic"])


def alpha_table(ratings: pd.DataFrame) -> pd.DataFrame:
    """Krippendorff's alpha per aspect over all annotators, interval and ordinal.

    ``n_items`` counts the items at least two annotators rated (the only ones alpha uses).
    """
    rows = []
    for aspect, r in ratings.groupby("aspect", sort=True):
        wide = r.groupby(["doc_id", "system", "annotator"])["rating"].mean().unstack("annotator")
        data = wide.to_numpy(float).T
        rows.append({"aspect": aspect, "annotators": wide.shape[1],
                     "n_items": int((np.isfinite(data).sum(0) >= 2).sum()),
                     "alpha_interval": krippendorff_alpha(data, "interval"),
                     "alpha_ordinal": krippendorff_alpha(data, "ordinal")})
    return pd.DataFrame(rows, columns=["aspect", "annotators", "n_items", "alpha_interval", "alpha_ordinal"])


def system_ratings(ratings: pd.DataFrame, consensus: str = "mean") -> pd.DataFrame:
    """Mean consensus rating per system and aspect (the paper's Table 2), with item counts.

    Per-sample aspects (system '') are reported on a row named ``(per sample)``.
    """
    parts = []
    for aspect in sorted(ratings["aspect"].unique()):
        h = human_scores(ratings, aspect, CONSENSUS, consensus)
        h["system"] = h["system"].replace("", "(per sample)")
        g = h.groupby("system")["human"].agg(["mean", "count"])
        parts.append(g.rename(columns={"mean": aspect, "count": f"{aspect}_n"}))
    return pd.concat(parts, axis=1) if parts else pd.DataFrame()


def ratings_correlations(df: pd.DataFrame, ratings: pd.DataFrame, metrics: Sequence[str], *,
                         n_boot: int, seed: int, consensus: str = "mean", resampling: str = "both",
                         progress: bool | None = False) -> pd.DataFrame:
    """Every metric vs every aspect, per annotator and for the consensus (pooled by
    ``consensus``), all levels and coefficients
    (:func:`~custom_metrics.analysis.stats.table.correlation_table`)."""
    from custom_metrics.progress import track

    tables = []
    annotators = sorted(ratings["annotator"].unique())
    jobs = [(aspect, who) for aspect in sorted(ratings["aspect"].unique()) for who in [*annotators, CONSENSUS]]
    for aspect, who in track(jobs, "meta-eval: rated aspects", unit="table", enabled=progress):
        merged = attach_human(df, human_scores(ratings, aspect, who, consensus))
        t = correlation_table(merged, metrics, n_boot=n_boot, seed=seed, resampling=resampling)
        t.insert(0, "annotator", who)
        t.insert(0, "aspect", aspect)
        tables.append(t)
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


def annotator_kappa(df: pd.DataFrame, columns: Sequence[str]) -> dict[str, Any]:
    """``--kappa A,B``: Cohen's kappa between two annotator columns of the metric table
    (cells holding one rating or a list of facet ratings, :func:`flatten_ratings`)."""
    a, b = columns
    if a in df.columns and b in df.columns:
        k, n = cohen_kappa(flatten_ratings(df[a]), flatten_ratings(df[b]))
        return {"annotators": [a, b], "kappa": None if math.isnan(k) else k, "n_items": n}
    return {"annotators": [a, b], "kappa": None, "n_items": 0, "note": "annotator column(s) missing"}


__all__ = ["CONSENSUS", "LOWER_IS_BETTER", "alpha_table", "annotator_kappa", "attach_human", "human_scores", "kappa_table",
           "lower_is_better_columns", "rankings", "ratings_correlations", "system_ratings"]
