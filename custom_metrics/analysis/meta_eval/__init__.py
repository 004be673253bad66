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

* **summeval** / **dialsummeval** — those studies' release files, converted with their
  ratings by :mod:`.converters` (metric scores from the file, ``--scores`` or ``--compute``).

* **ratings** (``--ratings FILE``, with fd or long as the metric table) — one
  row per human rating: ``doc_id``, ``system`` (empty for an aspect rated once per
  sample, e.g. speciality), ``annotator``, ``aspect``, ``rating`` (or one column per
  aspect; ``--columns`` names columns that differ). Adds the
  correlation of every metric with every aspect, per annotator and for the consensus
  (``--consensus`` mean, median or majority, :mod:`~custom_metrics.analysis.stats.consensus`),
  at every level and with every method below; Cohen's kappa (unweighted and
  quadratic-weighted) per aspect and annotator pair; Krippendorff's alpha (interval and
  ordinal) per aspect; and the mean consensus rating per system and aspect (Table 2 of
  the biomedical question summarization paper).

Reported for every metric vs the human score (:mod:`.correlations`): Pearson, Spearman,
Kendall tau-b and tau-c at summary level (per document, averaged), system level
(system means) and global level (all pairs pooled, as the FM paper does), each with a
seeded percentile bootstrap 95% CI resampling systems, documents or both (Deutsch,
Dror & Roth 2021) and the number of documents / systems / pairs it used; the paired
permutation test (or Williams' test) between every two metrics; the metric-by-metric
global Pearson matrix and heat map (the FM paper's Figure 3); the system rankings per
metric side by side; and Cohen's kappa between two annotators (``--kappa A,B``: two
columns holding ratings or lists of facet ratings).

Bad input is counted, never fatal: NaN / missing scores drop only the pairs they touch,
empty summaries and (document, system) cells missing from some rows are counted, and a
correlation over fewer than 3 pairs (or without variation) is reported as n/a.

    domsum meta-eval data/pubmed.json --out out/meta --compute rouge,bertscore

The package: :mod:`.inputs` reads and checks the files (:mod:`.converters` the
releases), :mod:`.compute` adds our own
metric columns, :mod:`.tables` shapes rankings and rating tables, :mod:`.output` writes
the folder, :mod:`.page_data` shapes what the command's HTML page shows; the
coefficients, levels, intervals and agreement come from
:mod:`custom_metrics.analysis.stats`. Unusable files (a missing column, a repeated pair)
raise :class:`~custom_metrics.analysis.errors.MetaEvalError`, never ``SystemExit``; the
command line (``domsum meta-eval``) lives in :mod:`lm_eval_tasks.commands.meta_eval`,
which resolves the settings and the judge and turns an error into one line, exit 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from custom_metrics.analysis.errors import MetaEvalError
from custom_metrics.analysis.meta_eval.compute import compute_metrics, computable
from custom_metrics.analysis.meta_eval.correlations import CorrelationResults, correlate_metrics
from custom_metrics.analysis.meta_eval.inputs import load_inputs, load_ratings, load_table, metric_columns
from custom_metrics.analysis.meta_eval.output import write_outputs
from custom_metrics.analysis.meta_eval.tables import (
    CONSENSUS,
    alpha_table,
    annotator_kappa,
    attach_human,
    human_scores,
    kappa_table,
    rankings,
    ratings_correlations,
    system_ratings,
)
from custom_metrics.analysis.stats.consensus import CONSENSUS_METHODS


def run(path: str | Path, out: str | Path, *, fmt: str = "auto", human: str = "human",
        metrics: Sequence[str] | None = None, compute: Sequence[str] = (), n_boot: int = 1000,
        seed: int = 0, kappa: Sequence[str] | None = None, judge_config: Any = None,
        bertscore_model: str | None = None, bertscore_layers: int | None = None,
        fm_variant: str = "zero", ratings: str | Path | None = None, ppl_model: str | None = None,
        blanc_model: str | None = None, progress: bool | None = False, consensus: str = "mean",
        columns: dict[str, str] | None = None, annotators: str = "expert",
        scores: str | Path | None = None, resampling: str = "both", test: str = "permutation",
        test_level: str = "global", test_coefficient: str = "pearson", rouge_stemming: bool | None = None,
        rouge_convention: tuple[bool, str] | None = None) -> dict[str, Any]:
    """Meta-evaluate the metric table at ``path`` into the folder ``out``.

    Returns what ``summary.json`` holds plus the data frames (``table``: every
    correlation; ``results``: the :class:`CorrelationResults` with one table per level,
    the significance matrix and the metric matrix; ``matrix``; ``data`` (the table
    correlated); ``rankings``; and with ratings ``human_correlations``, ``kappas``,
    ``alphas``, ``system_ratings``) and the Markdown report (``markdown``).
    ``consensus`` pools annotators (mean, median, majority); ``columns``,
    ``annotators`` and ``scores`` are :func:`.inputs.load_inputs`'s. ``resampling``: the
    bootstrap and permutation unit (``systems``, ``documents``, ``both``); ``test``:
    ``permutation`` or ``williams`` at ``test_level`` / ``test_coefficient``;
    ``rouge_stemming``: ``--compute rouge``'s Porter stemming (None: ``rouge_convention``,
    a benchmark's ``(value, source)``, when given, else the library default;
    :func:`custom_metrics.families.rouge.stemming_for`), recorded in ``compute``. Raises
    :class:`MetaEvalError` on unusable input.
    """
    if consensus not in CONSENSUS_METHODS:
        raise MetaEvalError(f"unknown consensus {consensus!r}; expected one of {', '.join(CONSENSUS_METHODS)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    df, counts, rdf = load_inputs(path, fmt, human, ratings, columns=columns, annotators=annotators, scores=scores)
    info = compute_metrics(df, compute, bertscore_model=bertscore_model, bertscore_layers=bertscore_layers,
                           judge_config=judge_config, fm_variant=fm_variant, ppl_model=ppl_model,
                           blanc_model=blanc_model, progress=progress,
                           rouge_stemming=rouge_stemming, rouge_convention=rouge_convention) if compute else {}
    cols = list(metrics) if metrics else metric_columns(df)
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise MetaEvalError(f"metric column(s) {missing} not in the data")
    extra: dict[str, Any] = {}
    if rdf is not None:
        if "human" not in df.columns:
            # For the rankings, heat map and overall table: the consensus rating averaged
            # over the per-summary aspects (per-sample aspects say nothing of a system).
            overall = rdf[rdf["system"] != ""].assign(aspect="all")
            df = attach_human(df, human_scores(overall, "all", CONSENSUS, consensus))
            counts["human"] = f"{consensus} consensus of the annotators' mean over the per-summary aspects"
        extra = {"human_correlations": ratings_correlations(df, rdf, cols, n_boot=n_boot, seed=seed,
                                                            consensus=consensus, resampling=resampling,
                                                            progress=progress),
                 "kappas": kappa_table(rdf), "alphas": alpha_table(rdf),
                 "system_ratings": system_ratings(rdf, consensus)}
    counts["nan_human"] = int(pd.to_numeric(df["human"], errors="coerce").isna().sum())
    results = correlate_metrics(df, cols, n_boot=n_boot, seed=seed, resampling=resampling, test=test,
                                test_level=test_level, test_coefficient=test_coefficient, progress=progress)
    ranks = rankings(df, ["human"] + cols)
    summary: dict[str, Any] = {"input": str(path), "counts": counts, "metrics": cols, "compute": info,
                               "bootstrap": n_boot, "seed": seed, "statistics": results.settings,
                               "ratings": None if ratings is None else str(ratings),
                               "consensus": consensus if rdf is not None else None}
    if kappa:
        summary["kappa"] = annotator_kappa(df, kappa)
    markdown = write_outputs(out, summary, results, ranks, extra if rdf is not None else None)
    summary["table"] = results.table
    summary["results"] = results
    summary["rankings"] = ranks
    summary["matrix"] = results.matrix
    summary["significance"] = results.significance
    summary["data"] = df
    summary.update(extra)
    summary["markdown"] = markdown
    return summary


__all__ = ["CorrelationResults", "MetaEvalError", "compute_metrics", "computable", "correlate_metrics",
           "load_inputs", "load_ratings", "load_table", "metric_columns",
           "ratings_correlations", "run"]
