"""Meta-evaluation of summary metrics against human judgments (FD / ScholarSum and any table).

Inputs (format detected, or ``--format``):

* **fd** — the ScholarSum/FD release: JSON lines, one paper per line, with ``article``,
  ``human`` (reference abstract), one key per system holding its summary,
  ``{system}_human`` (human total), ``{system}_human_list`` (four facet fractions),
  ``{system}_aspect`` / ``ground_aspect`` (facet segments, JSON strings) and
  precomputed metric scores ``{system}_{metric}``. Systems are the keys ``S`` for which
  ``S_human`` exists; metrics are the numeric ``S_{metric}`` keys.
* **long** — a CSV or JSONL table, one row per (document, system): ``doc_id``,
  ``system``, metric columns, a human column (``--human``, default ``human``) and
  optionally ``reference`` / ``summary`` texts (needed by ``--compute``).

* **ratings** (``--ratings FILE``, with either of the above as the metric table) — one
  row per human rating: ``doc_id``, ``system`` (empty for an aspect rated once per
  sample, e.g. speciality), ``annotator``, ``aspect``, ``rating``. Adds the
  correlation of every metric with every aspect, per annotator and for the consensus
  (mean over annotators), at every level and with every method below; Cohen's kappa
  (unweighted and quadratic-weighted) per aspect and annotator pair; and the mean
  consensus rating per system and aspect (Table 2 of the biomedical question
  summarization paper).

Reported for every metric vs the human score: Pearson, Spearman and Kendall (scipy) at
summary level pooled over all pairs (as the paper does) and averaged per document, and
at system level (system means), each with a seeded bootstrap 95% CI (pairs resampled
for pooled, documents for per-document and system level) and the number of pairs /
documents / systems it used. Also the metric-by-metric Spearman heat map (PNG), the
system rankings per metric side by side, and Cohen's kappa between two annotators
(``--kappa A,B``: two columns holding ratings or lists of facet ratings).

Bad input is counted, never fatal: NaN / missing scores drop only the pairs they touch,
empty summaries and (document, system) cells missing from some rows are counted, and a
correlation over fewer than 3 pairs (or without variation) is reported as n/a.

    domsum meta-eval data/pubmed.json --out out/meta --compute rouge,bertscore

This module is the statistics; the command line (``domsum meta-eval``) lives in
:mod:`lm_eval_tasks.commands.meta_eval`, which resolves the settings and the judge.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps


class MetaEvalError(ValueError):
    """Input meta-evaluation cannot use (a missing column, a repeated pair, a score that is
    not a number); the message names the file, rows or flag. Library code raises it; the
    ``domsum meta-eval`` command prints it as one line and exits 2."""

METHODS = ("pearson", "spearman", "kendall")
LEVELS = ("summary_pooled", "summary_per_doc", "system")
_FD_RESERVED = {"article", "human", "ground_aspect", "id", "doc_id", "title"}
_FD_SUFFIX_SKIP = ("human", "human_list", "aspect")


# =========================================================================== loading


def _read_records(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".csv":
        return pd.read_csv(path).to_dict("records")
    stripped = text.lstrip()
    if stripped.startswith("["):
        return json.loads(stripped)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def detect_format(records: list[dict]) -> str:
    return "fd" if any(isinstance(r, dict) and any(str(k).endswith("_human") for k in r) for r in records) else "long"


def _num(v: Any) -> float:
    if v is None or isinstance(v, bool):
        return float("nan")
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def fd_to_long(records: list[dict]) -> tuple[pd.DataFrame, dict[str, int]]:
    """One row per (paper, system) from the FD release format, plus counts."""
    systems: list[str] = []
    for r in records:
        for k in r:
            if k.endswith("_human") and k[: -len("_human")] not in systems and k[: -len("_human")]:
                systems.append(k[: -len("_human")])
    rows = []
    missing = 0
    for d, r in enumerate(records):
        doc = r.get("id", r.get("doc_id", d))
        for s in systems:
            if s not in r and f"{s}_human" not in r:
                missing += 1
                continue
            row: dict[str, Any] = {"doc_id": doc, "system": s, "reference": r.get("human") or "",
                                   "summary": r.get(s) if isinstance(r.get(s), str) else "",
                                   "human": _num(r.get(f"{s}_human"))}
            lst = r.get(f"{s}_human_list")
            if isinstance(lst, str):
                try:
                    lst = json.loads(lst)
                except ValueError:
                    lst = None
            row["human_list"] = lst if isinstance(lst, list) else None
            for k, v in r.items():
                if k.startswith(s + "_"):
                    metric = k[len(s) + 1:]
                    if metric in _FD_SUFFIX_SKIP or any(metric.startswith(x) for x in ("human_", "aspect")):
                        continue
                    if isinstance(v, (int, float)) and not isinstance(v, bool) or v is None:
                        # a metric prefix of a longer system name (e.g. "longt5" vs "longt5_block")
                        if any(k.startswith(o + "_") and len(o) > len(s) for o in systems):
                            continue
                        row[metric] = _num(v)
            rows.append(row)
    return pd.DataFrame(rows), {"systems": len(systems), "missing_cells": missing}


def load_table(path: str | Path, fmt: str = "auto", human: str = "human",
               require_human: bool = True) -> tuple[pd.DataFrame, dict]:
    """A long table (doc_id, system, reference, summary, human, metric columns) and counts.

    ``require_human=False`` (human ratings come from ``--ratings``) accepts a table
    without a human column.
    """
    path = Path(path)
    records = _read_records(path)
    fmt = detect_format(records) if fmt == "auto" else fmt
    if fmt == "fd":
        df, counts = fd_to_long(records)
    else:
        df = pd.DataFrame(records)
        for col in ("doc_id", "system"):
            if col not in df.columns:
                raise MetaEvalError(f"long table {path} lacks the column {col!r}")
        if human in df.columns:
            df = df.rename(columns={human: "human"})
        elif require_human:
            raise MetaEvalError(f"no human column {human!r} in {path} "
                             "(name it with --human, or give per-annotator ratings with --ratings)")
        _check_long_table(df, path)
        n_docs, n_sys = df["doc_id"].nunique(), df["system"].nunique()
        counts = {"systems": n_sys,
                  "missing_cells": int(n_docs * n_sys - len(df.drop_duplicates(["doc_id", "system"])))}
    counts["format"] = fmt
    counts["rows"] = len(df)
    if "summary" in df.columns:
        counts["empty_summaries"] = int(sum(not (isinstance(s, str) and s.strip()) for s in df["summary"]))
    return df, counts


def _check_long_table(df: pd.DataFrame, path: Path) -> None:
    """One row per (document, system) and numeric human scores, or an error naming the rows.

    Why: a pair given twice would be correlated twice (a silent weight), and a human
    score such as ``"good"`` used to crash deep inside the correlation. An empty human
    score is allowed (that pair is left out where human scores are needed).
    """
    dup = df[df.duplicated(["doc_id", "system"], keep=False)]
    if len(dup):
        pairs = dup.groupby(["doc_id", "system"], sort=False).groups
        shown = "; ".join(f"document {d!r}, system {sy!r} on rows {', '.join(str(i + 1) for i in rows)}"
                          for (d, sy), rows in list(pairs.items())[:3])
        more = f" (and {len(pairs) - 3} more pairs)" if len(pairs) > 3 else ""
        raise MetaEvalError(f"{path}: {len(pairs)} (document, system) pairs appear more than once: "
                         f"{shown}{more}. Keep one row per pair (average repeated ratings first).")
    if "human" in df.columns:
        given = df["human"].map(lambda v: not (v is None or (isinstance(v, float) and math.isnan(v))
                                                or (isinstance(v, str) and not v.strip())))
        numbers = pd.to_numeric(df["human"].where(given), errors="coerce")
        bad = df.index[given & (numbers.isna() | df["human"].map(lambda v: isinstance(v, bool)))]
        if len(bad):
            shown = ", ".join(f"row {i + 1} ({df.at[i, 'human']!r})" for i in bad[:3])
            raise MetaEvalError(f"{path}: {len(bad)} human score(s) are not numbers: {shown}"
                             f"{' ...' if len(bad) > 3 else ''}. Fix them, or leave them empty to leave those "
                             f"pairs out.")
        df["human"] = numbers


def metric_columns(df: pd.DataFrame, exclude: Sequence[str] = ()) -> list[str]:
    skip = {"doc_id", "system", "reference", "summary", "human", "human_list", "article", *exclude}
    cols = []
    for c in df.columns:
        if c in skip:
            continue
        vals = pd.to_numeric(df[c], errors="coerce")
        if vals.notna().any():
            cols.append(c)
    return cols


# =========================================================================== our metrics


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


# =========================================================================== statistics


def correlate(x: Sequence[float], y: Sequence[float], method: str) -> float:
    """scipy's coefficient, NaN when fewer than 3 finite pairs or no variation."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "pearson":
            return float(sps.pearsonr(x, y)[0])
        if method == "spearman":
            return float(sps.spearmanr(x, y)[0])
        return float(sps.kendalltau(x, y)[0])


def _per_doc(d: pd.DataFrame, metric: str, method: str) -> tuple[float, int]:
    vals = _per_doc_values(d, metric, method)
    vals = vals[~np.isnan(vals)]
    return (float(np.mean(vals)) if len(vals) else float("nan")), len(vals)


def _system_means(d: pd.DataFrame, metric: str) -> pd.DataFrame:
    return d.groupby("system", sort=True)[[metric, "human"]].mean()


def level_value(d: pd.DataFrame, metric: str, level: str, method: str) -> tuple[float, int]:
    if level == "summary_pooled":
        return correlate(d[metric], d["human"], method), len(d)
    if level == "summary_per_doc":
        return _per_doc(d, metric, method)
    m = _system_means(d, metric)
    return correlate(m[metric], m["human"], method), len(m)


def _per_doc_values(d: pd.DataFrame, metric: str, method: str) -> np.ndarray:
    """Each document's correlation between metric and human over its systems (NaN if < 3)."""
    return np.asarray([correlate(g[metric], g["human"], method) for _, g in d.groupby("doc_id", sort=False)])


def bootstrap_ci(d: pd.DataFrame, metric: str, level: str, method: str, n_boot: int,
                 rng: np.random.Generator) -> tuple[float, float]:
    """Percentile 95% CI; pairs resampled for pooled, documents otherwise.

    Why vectorised: a resample of documents only re-weights them, so the per-document
    level resamples the precomputed per-document coefficients, and the system level
    forms system means from document multiplicities with ``bincount`` instead of
    rebuilding data frames (minutes -> seconds on the 300-pair FD files).
    """
    if n_boot <= 0 or len(d) < 3:
        return float("nan"), float("nan")
    vals: list[float] = []
    if level == "summary_pooled":
        x, y = d[metric].to_numpy(float), d["human"].to_numpy(float)
        for _ in range(n_boot):
            idx = rng.integers(0, len(x), len(x))
            vals.append(correlate(x[idx], y[idx], method))
    elif level == "summary_per_doc":
        per = _per_doc_values(d, metric, method)
        for _ in range(n_boot):
            sample = per[rng.integers(0, len(per), len(per))]
            sample = sample[~np.isnan(sample)]
            vals.append(float(sample.mean()) if len(sample) else float("nan"))
    else:
        doc_codes, docs = pd.factorize(d["doc_id"], sort=False)
        sys_codes, systems = pd.factorize(d["system"], sort=True)
        x, y = d[metric].to_numpy(float), d["human"].to_numpy(float)
        n_sys = len(systems)
        for _ in range(n_boot):
            mult = np.bincount(rng.integers(0, len(docs), len(docs)), minlength=len(docs))[doc_codes]
            w = np.bincount(sys_codes, weights=mult, minlength=n_sys)
            keep = w > 0
            mx = np.bincount(sys_codes, weights=mult * x, minlength=n_sys)[keep] / w[keep]
            my = np.bincount(sys_codes, weights=mult * y, minlength=n_sys)[keep] / w[keep]
            vals.append(correlate(mx, my, method))
    arr = np.asarray([v for v in vals if not math.isnan(v)])
    if len(arr) < max(10, n_boot // 10):
        return float("nan"), float("nan")
    return float(np.percentile(arr, 2.5)), float(np.percentile(arr, 97.5))


def correlation_table(df: pd.DataFrame, metrics: Sequence[str], *, n_boot: int = 1000,
                      seed: int = 0) -> pd.DataFrame:
    rows = []
    for metric in metrics:
        d = df[["doc_id", "system", metric, "human"]].copy()
        d[metric] = pd.to_numeric(d[metric], errors="coerce")
        d["human"] = pd.to_numeric(d["human"], errors="coerce")
        dropped = int((~(np.isfinite(d[metric]) & np.isfinite(d["human"]))).sum())
        d = d[np.isfinite(d[metric]) & np.isfinite(d["human"])]
        for level in LEVELS:
            for method in METHODS:
                rng = np.random.default_rng([seed, LEVELS.index(level), METHODS.index(method)])
                value, n = level_value(d, metric, level, method)
                lo, hi = bootstrap_ci(d, metric, level, method, n_boot, rng) if not math.isnan(value) else (
                    float("nan"), float("nan"))
                rows.append({"metric": metric, "level": level, "method": method, "value": value,
                             "ci_low": lo, "ci_high": hi, "n": n, "n_pairs": len(d),
                             "dropped_pairs": dropped})
    return pd.DataFrame(rows)


def spearman_matrix(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    m = pd.DataFrame(index=list(columns), columns=list(columns), dtype=float)
    for a in columns:
        for b in columns:
            m.loc[a, b] = correlate(pd.to_numeric(df[a], errors="coerce"),
                                    pd.to_numeric(df[b], errors="coerce"), "spearman")
    return m


LOWER_IS_BETTER = ("perplexity", "ppl", "our_perplexity")


def rankings(df: pd.DataFrame, columns: Sequence[str],
             lower_is_better: Sequence[str] = LOWER_IS_BETTER) -> pd.DataFrame:
    """System means per metric (and human) with ranks (1 = best).

    Higher is better except for the columns named in ``lower_is_better`` (perplexity).
    """
    means = df.groupby("system")[list(columns)].mean(numeric_only=True)
    out = pd.DataFrame(index=means.index)
    for c in columns:
        out[c] = means[c]
        out[f"{c}_rank"] = means[c].rank(ascending=c in lower_is_better, method="min")
    return out.sort_values(f"{columns[0]}_rank")


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> tuple[float, int]:
    """Unweighted Cohen's kappa over the items both annotators rated; (kappa, n)."""
    pairs = [(x, y) for x, y in zip(a, b)
             if x is not None and y is not None and not (isinstance(x, float) and math.isnan(x))
             and not (isinstance(y, float) and math.isnan(y))]
    n = len(pairs)
    if n == 0:
        return float("nan"), 0
    cats = sorted({round(float(v), 6) for p in pairs for v in p})
    idx = {c: i for i, c in enumerate(cats)}
    m = np.zeros((len(cats), len(cats)))
    for x, y in pairs:
        m[idx[round(float(x), 6)], idx[round(float(y), 6)]] += 1
    po = np.trace(m) / n
    pe = float((m.sum(0) * m.sum(1)).sum()) / n ** 2
    return (float("nan") if pe == 1 else float((po - pe) / (1 - pe))), n


def _flatten_ratings(values: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError:
                v = _num(v)
        if isinstance(v, (list, tuple)):
            out.extend(_num(x) for x in v)
        else:
            out.append(_num(v))
    return out


# =========================================================================== per-annotator ratings


RATING_COLUMNS = ("doc_id", "system", "annotator", "aspect", "rating")
CONSENSUS = "consensus"


def load_ratings(path: str | Path) -> tuple[pd.DataFrame, dict[str, int]]:
    """Human ratings as a long table: doc_id, system, annotator, aspect, rating.

    ``system`` may be empty for an aspect rated once per sample (e.g. the speciality
    of a question); such a rating applies to every system's summary of that sample.
    ``annotator`` may be absent (one annotator). Non-numeric ratings are counted and
    dropped.
    """
    path = Path(path)
    df = pd.DataFrame(_read_records(path))
    missing = [c for c in ("doc_id", "aspect", "rating") if c not in df.columns]
    if missing:
        raise MetaEvalError(f"ratings file {path} lacks the column(s) {missing}; "
                         f"expected {', '.join(RATING_COLUMNS)}")
    if "annotator" not in df.columns:
        df["annotator"] = "a1"
    if "system" not in df.columns:
        df["system"] = ""
    df["system"] = df["system"].fillna("").astype(str)
    df["annotator"] = df["annotator"].astype(str)
    df["aspect"] = df["aspect"].astype(str)
    df["rating"] = pd.to_numeric(df["rating"], errors="coerce")
    bad = int(df["rating"].isna().sum())
    df = df[df["rating"].notna()].copy()
    return df, {"rating_rows": len(df) + bad, "unusable_ratings": bad,
                "annotators": df["annotator"].nunique(), "aspects": df["aspect"].nunique()}


def human_scores(ratings: pd.DataFrame, aspect: str, who: str) -> pd.DataFrame:
    """(doc_id, system, human) for one aspect: one annotator's rating, or the consensus.

    The consensus is the mean over annotators of each annotator's rating of the item
    (an annotator who rated an item twice counts once, by their mean).
    """
    r = ratings[ratings["aspect"] == aspect]
    per = r.groupby(["doc_id", "system", "annotator"], sort=False)["rating"].mean().reset_index()
    if who != CONSENSUS:
        per = per[per["annotator"] == who]
    return per.groupby(["doc_id", "system"], sort=False)["rating"].mean().reset_index().rename(
        columns={"rating": "human"})


def _attach_human(df: pd.DataFrame, human: pd.DataFrame) -> pd.DataFrame:
    """The metric table with one human column; per-sample ratings (system '') broadcast."""
    base = df.drop(columns=["human"], errors="ignore")
    base = base.assign(_doc=base["doc_id"].astype(str), _sys=base["system"].astype(str))
    h = human.assign(_doc=human["doc_id"].astype(str), _sys=human["system"].astype(str))
    per_system = h[h["_sys"] != ""][["_doc", "_sys", "human"]]
    per_sample = h[h["_sys"] == ""][["_doc", "human"]].rename(columns={"human": "_sample_human"})
    out = base.merge(per_system, on=["_doc", "_sys"], how="left").merge(per_sample, on="_doc", how="left")
    out["human"] = out["human"].fillna(out["_sample_human"])
    return out.drop(columns=["_doc", "_sys", "_sample_human"])


def weighted_kappa(a: Sequence[Any], b: Sequence[Any], weights: str = "quadratic") -> tuple[float, int]:
    """Cohen's kappa with ``"quadratic"`` or ``"linear"`` disagreement weights; (kappa, n).

    kappa_w = 1 - sum(w * O) / sum(w * E), O the observed and E the chance
    (outer product of marginals) joint distribution over the sorted categories both
    annotators used, w_ij = (|i - j| / (k - 1))^p with p = 2 (quadratic) or 1.
    """
    pairs = [(float(x), float(y)) for x, y in zip(a, b)
             if x is not None and y is not None and not (isinstance(x, float) and math.isnan(x))
             and not (isinstance(y, float) and math.isnan(y))]
    n = len(pairs)
    if n == 0:
        return float("nan"), 0
    cats = sorted({round(v, 6) for p in pairs for v in p})
    k = len(cats)
    if k < 2:
        return float("nan"), n
    idx = {c: i for i, c in enumerate(cats)}
    obs = np.zeros((k, k))
    for x, y in pairs:
        obs[idx[round(x, 6)], idx[round(y, 6)]] += 1
    obs /= n
    exp = np.outer(obs.sum(1), obs.sum(0))
    power = 2 if weights == "quadratic" else 1
    grid = np.arange(k)
    w = (np.abs(grid[:, None] - grid[None, :]) / (k - 1)) ** power
    denom = float((w * exp).sum())
    return (float("nan") if denom == 0 else 1.0 - float((w * obs).sum()) / denom), n


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


def system_ratings(ratings: pd.DataFrame) -> pd.DataFrame:
    """Mean consensus rating per system and aspect (the paper's Table 2), with item counts.

    Per-sample aspects (system '') are reported on a row named ``(per sample)``.
    """
    parts = []
    for aspect in sorted(ratings["aspect"].unique()):
        h = human_scores(ratings, aspect, CONSENSUS)
        h["system"] = h["system"].replace("", "(per sample)")
        g = h.groupby("system")["human"].agg(["mean", "count"])
        parts.append(g.rename(columns={"mean": aspect, "count": f"{aspect}_n"}))
    return pd.concat(parts, axis=1) if parts else pd.DataFrame()


def ratings_correlations(df: pd.DataFrame, ratings: pd.DataFrame, metrics: Sequence[str], *,
                         n_boot: int, seed: int) -> pd.DataFrame:
    """Every metric vs every aspect, per annotator and for the consensus, all levels/methods."""
    tables = []
    annotators = sorted(ratings["annotator"].unique())
    for aspect in sorted(ratings["aspect"].unique()):
        for who in [*annotators, CONSENSUS]:
            merged = _attach_human(df, human_scores(ratings, aspect, who))
            t = correlation_table(merged, metrics, n_boot=n_boot, seed=seed)
            t.insert(0, "annotator", who)
            t.insert(0, "aspect", aspect)
            tables.append(t)
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


def ratings_markdown(corr: pd.DataFrame, kappas: pd.DataFrame, sys_table: pd.DataFrame,
                     method: str = "spearman", level: str = "summary_pooled") -> list[str]:
    md = ["## Per-system mean human ratings (consensus)", "",
          sys_table.round(3).to_markdown() if _has_tabulate() else sys_table.round(3).to_string(), "",
          f"## Metric vs human ({method}, {level.replace('_', ' ')}; consensus of annotators)", ""]
    c = corr[(corr["annotator"] == CONSENSUS) & (corr["method"] == method) & (corr["level"] == level)]
    aspects = sorted(c["aspect"].unique())
    md.append("| metric | " + " | ".join(aspects) + " |")
    md.append("|---" * (len(aspects) + 1) + "|")
    for metric, g in c.groupby("metric", sort=False):
        cells = []
        for a in aspects:
            r = g[g["aspect"] == a].iloc[0]
            cells.append(f"{_fmt(r['value'])} [{_fmt(r['ci_low'], 2)}, {_fmt(r['ci_high'], 2)}] (n={r['n']})")
        md.append(f"| {metric} | " + " | ".join(cells) + " |")
    md += ["", "## Inter-annotator agreement (Cohen's kappa)", "",
           "| aspect | annotators | items | kappa | quadratic kappa |", "|---|---|---|---|---|"]
    for _, r in kappas.iterrows():
        md.append(f"| {r['aspect']} | {r['annotator_a']} vs {r['annotator_b']} | {r['n_items']} | "
                  f"{_fmt(r['kappa'])} | {_fmt(r['kappa_quadratic'])} |")
    return md


# =========================================================================== output


def _fmt(v: float, digits: int = 3) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def to_markdown(table: pd.DataFrame, method: str = "spearman") -> str:
    lines = [f"| metric | level | {method} | 95% CI | n |", "|---|---|---|---|---|"]
    for _, r in table[table["method"] == method].iterrows():
        lines.append(f"| {r['metric']} | {r['level']} | {_fmt(r['value'])} | "
                     f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}] | {r['n']} |")
    return "\n".join(lines)


def wide_markdown(table: pd.DataFrame) -> str:
    """One row per metric: every level x method (value, n)."""
    short = {"summary_pooled": "pooled", "summary_per_doc": "per-doc", "system": "system"}
    head = "| metric | " + " | ".join(f"{short[lv]} {m[0].upper()}" for lv in LEVELS for m in METHODS) + " | pairs |"
    lines = [head, "|---" * (len(LEVELS) * len(METHODS) + 2) + "|"]
    for metric, g in table.groupby("metric", sort=False):
        cells = []
        for lv in LEVELS:
            for m in METHODS:
                r = g[(g["level"] == lv) & (g["method"] == m)].iloc[0]
                cells.append(_fmt(r["value"]))
        lines.append(f"| {metric} | " + " | ".join(cells) + f" | {g['n_pairs'].iloc[0]} |")
    return "\n".join(lines)


def plot_heatmap(matrix: pd.DataFrame, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(matrix.columns)
    n = len(labels)
    size = max(4.0, 0.8 * n + 2.5)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    im = ax.imshow(matrix.to_numpy(float), cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=9)
    ax.set_yticklabels(labels, fontsize=9)
    for i in range(n):
        for j in range(n):
            v = matrix.iloc[i, j]
            ax.text(j, i, "n/a" if math.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=8)
    fig.colorbar(im, ax=ax, label="Spearman rho")
    ax.set_title("Metric-by-metric Spearman correlation (summary level)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run(path: str | Path, out: str | Path, *, fmt: str = "auto", human: str = "human",
        metrics: Sequence[str] | None = None, compute: Sequence[str] = (), n_boot: int = 1000,
        seed: int = 0, kappa: Sequence[str] | None = None, judge_config: Any = None,
        bertscore_model: str | None = None, bertscore_layers: int | None = None,
        fm_variant: str = "zero", ratings: str | Path | None = None, ppl_model: str | None = None,
        blanc_model: str | None = None, progress: bool | None = False) -> dict[str, Any]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    df, counts = load_table(path, fmt, human, require_human=ratings is None)
    info = compute_metrics(df, compute, bertscore_model=bertscore_model, bertscore_layers=bertscore_layers,
                           judge_config=judge_config, fm_variant=fm_variant, ppl_model=ppl_model,
                           blanc_model=blanc_model, progress=progress) if compute else {}
    cols = list(metrics) if metrics else metric_columns(df)
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise MetaEvalError(f"metric column(s) {missing} not in the data")
    rating_md: list[str] = []
    extra: dict[str, Any] = {}
    if ratings is not None:
        rdf, rcounts = load_ratings(ratings)
        counts.update(rcounts)
        if "human" not in df.columns:
            # For the rankings, heat map and overall table: the consensus rating averaged
            # over the per-summary aspects (per-sample aspects say nothing of a system).
            overall = rdf[rdf["system"] != ""].assign(aspect="all")
            df = _attach_human(df, human_scores(overall, "all", CONSENSUS))
            counts["human"] = "mean consensus rating over the per-summary aspects (--ratings)"
        corr = ratings_correlations(df, rdf, cols, n_boot=n_boot, seed=seed)
        kappas = kappa_table(rdf)
        sys_table = system_ratings(rdf)
        corr.to_csv(out / "human_correlations.csv", index=False)
        kappas.to_csv(out / "kappa.csv", index=False)
        sys_table.to_csv(out / "system_ratings.csv")
        rating_md = ratings_markdown(corr, kappas, sys_table)
        extra = {"human_correlations": corr, "kappas": kappas, "system_ratings": sys_table}
    counts["nan_human"] = int(pd.to_numeric(df["human"], errors="coerce").isna().sum())
    table = correlation_table(df, cols, n_boot=n_boot, seed=seed)
    matrix = spearman_matrix(df, cols + ["human"])
    ranks = rankings(df, ["human"] + cols)
    summary: dict[str, Any] = {"input": str(path), "counts": counts, "metrics": cols, "compute": info,
                               "bootstrap": n_boot, "seed": seed,
                               "ratings": None if ratings is None else str(ratings)}
    if kappa:
        a, b = kappa
        if a in df.columns and b in df.columns:
            k, n = cohen_kappa(_flatten_ratings(df[a]), _flatten_ratings(df[b]))
            summary["kappa"] = {"annotators": [a, b], "kappa": None if math.isnan(k) else k, "n_items": n}
        else:
            summary["kappa"] = {"annotators": [a, b], "kappa": None, "n_items": 0,
                                "note": "annotator column(s) missing"}
    table.to_csv(out / "correlations.csv", index=False)
    ranks.to_csv(out / "rankings.csv")
    matrix.to_csv(out / "spearman_matrix.csv")
    plot_heatmap(matrix, out / "spearman_heatmap.png")
    md = ["# Meta-evaluation", "", f"Input: `{path}` ({counts['format']}), {counts['rows']} (document, system) rows, "
          f"{counts['systems']} systems; missing cells {counts['missing_cells']}, "
          f"empty summaries {counts.get('empty_summaries', 0)}, NaN human scores {counts['nan_human']}."
          + (f" Human score: {counts['human']}." if "human" in counts else ""), "",
          "## All correlations (P/S/K = Pearson/Spearman/Kendall)", "", wide_markdown(table), "",
          "## Spearman with bootstrap 95% CI", "", to_markdown(table), "",
          "## System rankings", "", ranks.round(4).to_markdown() if _has_tabulate() else ranks.round(4).to_string()]
    if rating_md:
        md += ["", *rating_md]
    if "kappa" in summary:
        md += ["", f"Cohen's kappa ({kappa[0]} vs {kappa[1]}): {_fmt(summary['kappa']['kappa'])} "
               f"over {summary['kappa']['n_items']} items"]
    (out / "meta_eval.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    summary["table"] = table
    summary["rankings"] = ranks
    summary.update(extra)
    summary["markdown"] = "\n".join(md)
    return summary


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True
