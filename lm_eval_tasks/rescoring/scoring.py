"""Scoring one rescore input and writing its two outputs; :func:`rescore` runs a list of them.

Predictions are stripped as the tasks strip them and scored through the metric registry
(:mod:`custom_metrics.registry`), so a re-scored number is the number a harness run of
the same predictions reports.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from custom_metrics import battery, model_cache, registry, secrets
from custom_metrics.hf_models import ModelUnavailable
from custom_metrics.registry import json_safe
from lm_eval_tasks.catalog import UnknownTask, task_target
from lm_eval_tasks.outputs import claim, write_atomically
from lm_eval_tasks.rescoring.inputs import DOCUMENT_COLUMNS, read_input, target_of
from lm_eval_tasks.rescoring.options import Options, ScoreError
from lm_eval_tasks.rescoring.recorded import recorded_settings, taken, task_yaml_settings
from lm_eval_tasks.rescoring.selection import (family_context, parse_metrics, preflight, reads_document,
                                               task_selection, user_vocabulary)
from lm_eval_tasks.results import Sample, task_from_samples_name, task_of_samples

log = logging.getLogger("rescore")

#: why a judge family is skipped when no judge is configured
NO_JUDGE = "no judge configured (--judge-model or DOMSUM_JUDGE_MODEL)"


def intervals(fam: registry.Family, keys: list[str], scored: dict[str, list], ctx: registry.Context,
              n_boot: int, seed: int) -> tuple[dict[str, Any], dict[str, str]]:
    """(key -> [low, high] or None, key -> why None): the percentile bootstrap 95% interval of
    every chosen key, documents resampled (:mod:`custom_metrics.analysis.stats.bootstrap`).

    ``mean`` / ``nanmean`` keys resample the per-document values; a ``corpus`` key
    recomputes its corpus function (:func:`registry.aggregate`) on the resampled items,
    unless its record says why that is too slow (``Key.no_interval``: corpus BLEU and
    chrF re-tokenise every text, ~0.1 s per 500 short questions, so minutes per 1000
    resamples; MAUVE refits its clustering: hours); a ``sum`` key is a count of
    events in this file, not an estimate, and gets none.
    """
    from custom_metrics.analysis.stats.bootstrap import bootstrap_interval

    out: dict[str, Any] = {}
    why: dict[str, str] = {}
    for key in keys:
        agg, skip = fam.key(key).aggregation, fam.key(key).no_interval
        if agg in ("mean", "nanmean"):
            out[key] = list(bootstrap_interval(scored[key], agg, n_boot, seed))
        elif agg == "corpus" and not skip:
            out[key] = list(bootstrap_interval(
                scored[key], lambda items, k=key: registry.aggregate(fam, k, items, ctx), n_boot, seed))
        else:
            out[key] = None
            why[key] = skip or "a count of events in this file, not an estimate"
    return out, why


def agreement(samples: list[Sample], per_sample: list[dict]) -> dict[str, dict[str, Any]]:
    """Per score column the input carries (a release's ``rouge1``...): how far it is from ours.

    ``max_abs_diff`` over the rows with a number in both; ``file_scale`` is 100 where the
    file writes percentages of our fractions (whichever scale agrees better), so a
    release's rounding shows as a small difference and not as a factor.
    """
    out: dict[str, dict[str, Any]] = {}
    for col in (samples[0].given if samples else {}):
        if col not in per_sample[0]:
            continue
        pairs, bad = [], 0
        for s, row in zip(samples, per_sample):
            raw, ours = s.given.get(col), row.get(col)
            if raw in (None, "") or not isinstance(ours, (int, float)) or math.isnan(ours):
                continue
            try:
                pairs.append((float(raw), float(ours), s.doc_id))
            except (TypeError, ValueError):
                bad += 1
        best: dict[str, Any] | None = None
        for scale in (1, 100):
            diffs = [(abs(f - scale * o), d) for f, o, d in pairs if not math.isnan(f)]
            worst = max(diffs, default=(math.nan, None), key=lambda t: t[0])
            if best is None or worst[0] < best["max_abs_diff"]:
                best = {"max_abs_diff": worst[0], "worst_doc_id": worst[1], "file_scale": scale}
        out[col] = {**(best or {}), "n_compared": len(pairs), "n_not_numeric": bad}
    return out


def unknown_task(path: Path, task: str | None, fmt: str) -> str:
    """The one line that asks for the task of an input whose task is not known.

    Why an error: the task gives the scoring conventions (ROUGE stemming, the DVO
    vocabulary); scoring with another benchmark's would give plausible numbers of another
    protocol, labelled as this one's.
    """
    if fmt != "harness":
        return (f"{path}: a table of predictions with no --task or --benchmark; give the task (or benchmark) they "
                f"are for, whose ROUGE stemming and tokenizer apply (none is guessed)")
    which = (f"task {task!r} is neither a suite task nor one of a task folder given (--include_path FOLDER or "
             f"$DOMSUM_INCLUDE_PATH), and no results file of its run is beside it" if task else
             "the samples name no task (a harness file is samples_<task>_<timestamp>.jsonl)")
    return (f"{path}: {which}; give --include_path FOLDER (the folder of your task's YAML) or --task NAME (the "
            f"suite task the samples are for): the task's scoring conventions apply, none is guessed")


def score_file(path: Path, explicit: dict[str, list[str]] | None, args: Options) -> dict:
    """Score one input with the chosen families (default: its task's); write its two outputs;
    return the summary."""
    if args.task:
        try:
            task_target(args.task)
        except UnknownTask as exc:
            raise ScoreError(f"--task: {exc}") from None
    named, recorded = task_from_samples_name(path), task_of_samples(path)
    task = args.task or recorded or named
    if not args.task and recorded and named and recorded != named:
        log.warning("%s: the file name says task %s, its samples say %s; scoring as %s", path, named, recorded,
                    recorded)
    loaded = read_input(path, args, task)
    # the run's results file first: it records the settings the run scored with, and
    # registers the user domains it evaluated, so that their task is known below
    results_path, kept = recorded_settings(path, task) if loaded.format == "harness" else (None, {})
    source = {"results_file": str(results_path)} if kept else {}
    if not kept:
        yaml_path, kept = task_yaml_settings(task)
        source = {"task_yaml": str(yaml_path)} if kept else {}
    samples = loaded.samples
    benchmark, domain, why = target_of(task)
    if not benchmark and not args.benchmark:
        raise ScoreError(unknown_task(path, task, loaded.format))
    selection = explicit or task_selection(task)
    adopted: dict[str, Any] = {}
    if kept:
        metadata, took = taken(args.metadata, kept)
        args = dataclasses.replace(args, metadata=metadata)
        adopted = {**source, "taken": took, "kept_from_flags": {k: args.metadata[k] for k in kept if k not in took}}
    if loaded.format != "harness" and loaded.columns.get("document") is None and reads_document(selection):
        raise ScoreError(f"{path}: {', '.join(reads_document(selection))} read the source document and no "
                         f"document column was found (looked for {', '.join(DOCUMENT_COLUMNS)}; give "
                         f"--document-column)")
    benchmark = args.benchmark or benchmark
    domain = args.domain or domain
    summary: dict[str, Any] = {"samples_file": str(path), "input_format": loaded.format, "task": task,
                               "benchmark": benchmark, "domain": domain, "n_samples": len(samples),
                               "filter": samples[0].filter, "metrics": {}, "skipped": {}, "record": {},
                               "settings": {}}
    if adopted:
        summary["settings_from_run" if "results_file" in adopted else "settings_from_task_yaml"] = adopted
    if loaded.format != "harness":
        del summary["filter"]
        summary["columns"] = loaded.columns
        summary["skipped_rows"] = {"count": len(loaded.skipped_rows), "rows": loaded.skipped_rows}
    from custom_metrics.judge import JudgeStats

    built = user_vocabulary(task, selection, args, benchmark)
    if built:
        summary["record"]["user_vocabulary"] = built
    judge_stats = JudgeStats()  # one tally for the file's judge calls: what failed and why
    contexts: dict[str, registry.Context] = {}
    unavailable: dict[str, str] = {}  # battery families whose model the preflight found missing
    for name, keys in selection.items():
        fam = registry.get(name)
        ctx = family_context(name, keys, args, task, benchmark, domain)
        if "judge" in fam.needs:
            ctx.options = {**ctx.options, "judge_stats": judge_stats}
        if "judge" in fam.needs and ctx.judge is None:
            from custom_metrics.judge import notice_judge_skipped

            notice_judge_skipped(f"{name} metrics (rescore)")
            summary["skipped"][name] = NO_JUDGE
            continue
        try:
            summary["record"].update(preflight(fam, ctx, args, why))
        except (registry.ScorerUnavailable, ModelUnavailable) as exc:  # preflight: to be skipped and counted
            unavailable[name] = str(exc)
        summary["settings"].update(ctx.settings)
        contexts[name] = ctx

    batch = registry.Batch(predictions=[s.prediction for s in samples],
                           references=[s.reference for s in samples],
                           documents=[s.document for s in samples],
                           extras=[s.extras for s in samples])
    per_sample: list[dict] = [{"doc_id": s.doc_id, "id": s.id, "filter": s.filter,
                               "prediction": s.prediction} for s in samples]
    if loaded.format != "harness":
        for row in per_sample:
            del row["filter"]
    ci: dict[str, Any] = {}
    ci_why: dict[str, str] = {}
    for name, ctx in contexts.items():
        fam, keys = registry.get(name), selection[name]
        try:
            if name in unavailable:
                raise ModelUnavailable(unavailable[name])
            scored = fam.score(batch, ctx)
        except registry.ScorerUnavailable as exc:
            raise ScoreError(str(exc)) from None
        except ModelUnavailable as exc:  # a battery family whose model is missing: skipped, the others run
            if not battery.skips_missing_model(fam, exc, ctx.battery):
                raise
            summary["skipped"][name] = battery.skip_notice(fam, str(exc))["reason"]
            scored = battery.missing_values(fam, len(batch))
        # the chosen keys, plus per-document lists beyond the family's keys (a detail list,
        # fm_detail, only with the key it explains)
        shown = keys + [k for k in scored if k not in fam.key_names
                        and (k not in fam.detail_lists or fam.detail_lists[k] in keys)]
        for i, row in enumerate(per_sample):
            row.update({k: scored[k][i] for k in shown})
        for key in keys:
            summary["metrics"][key] = registry.aggregate(fam, key, scored[key], ctx)
        if args.bootstrap > 0:
            fam_ci, fam_why = intervals(fam, keys, scored, ctx, args.bootstrap, args.seed)
            ci.update(fam_ci)
            ci_why.update(fam_why)
        sections = fam.summary(ctx, scored) if fam.summary is not None else {}
        summary.update(sections)
        summary["record"].update({k: v for k, v in ctx.record.items() if k not in sections})
    summary["bootstrap"] = {"resamples": args.bootstrap, "seed": args.seed, "confidence": 0.95,
                            "method": "percentile; documents resampled with replacement, the same resamples "
                                      "for every key"}
    summary["intervals"] = ci
    summary["intervals_not_computed"] = ci_why
    agree = agreement(samples, per_sample)
    if agree:
        summary["agreement"] = agree
    if judge_stats.items:
        summary["judge_calls"] = {**judge_stats.as_dict(), "summary": judge_stats.summary_line(),
                                  "any_unscored": bool(judge_stats.n_failed or judge_stats.empty_skipped)}

    # NaN (a metric that does not apply to a document) is written as null: strict JSON
    scores_path, summary_path = output_paths(path, args.out)
    # the rows are texts and scores, written as they are (masking could alter a document's text)
    write_atomically(scores_path, "".join(json.dumps(json_safe(row), ensure_ascii=False) + "\n"
                                          for row in per_sample), replace=args.overwrite)
    summary["outputs"] = {"scores": str(scores_path), "summary": str(summary_path)}
    summary = secrets.mask_obj(json_safe(summary))
    write_atomically(summary_path, json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n",
                     replace=args.overwrite)
    return summary


def output_paths(path: Path, out_dir: Path | None) -> tuple[Path, Path]:
    """``<stem>.scores.jsonl`` and ``<stem>.summary.json`` next to the input (or in ``out_dir``)."""
    directory = out_dir or path.parent
    return directory / f"{path.stem}.scores.jsonl", directory / f"{path.stem}.summary.json"


def check_outputs(inputs: Sequence[Path], out_dir: Path | None, overwrite: bool) -> None:
    """Before anything is scored: no two inputs write the same file, and nothing an
    earlier run wrote (judge scores that were paid for) is replaced unless asked."""
    planned: dict[Path, Path] = {}
    for path in inputs:
        for out in output_paths(path, out_dir):
            key = out.resolve()
            if key in planned and planned[key] != path.resolve():
                raise ScoreError(f"{planned[key]} and {path} would both write {out}; score them into different "
                                 f"--out folders")
            planned[key] = path.resolve()
            if out.is_dir():
                raise ScoreError(f"{out} is a folder; the scores of {path} are written to a file of that name")
            if out.exists() and not overwrite:
                raise ScoreError(f"{out} already exists (an earlier rescore, perhaps with paid judge scores); pass "
                                 f"--overwrite to replace it, or --out another folder")


def rescore(paths: Sequence[Path], metrics: str | None, args: Options) -> Iterator[tuple[Path, dict]]:
    """Score every input with ``metrics`` (a ``--metrics`` list; None: each input's task's
    families), yielding each input with its summary as it is written.

    Everything that can be checked before scoring is checked first (the metric names, the
    options, every output path), so a bad request costs no scoring.
    """
    explicit = parse_metrics(metrics) if metrics is not None else None
    if explicit is not None and not explicit:
        raise ScoreError("--metrics names no metric")
    if args.bootstrap < 0:
        raise ScoreError("--bootstrap must be >= 0")
    check_outputs(paths, args.out, args.overwrite)
    # every output is claimed for the whole command: a second rescore into the same files
    # refuses now, before it pays for any scoring, instead of replacing ours at the end
    with claim(*(out for path in paths for out in output_paths(path, args.out))):
        try:
            for path in paths:
                yield path, score_file(path, explicit, args)
        finally:  # the inputs share their encoders: models are freed once, after the last input
            model_cache.release()


def summary_text(path: Path, summary: dict) -> str:
    """The console lines of one rescored input: its corpus scores, what was skipped, how
    its own scores agree with ours, unscored judge calls (or a locked judge cache), and the
    two files written."""
    shown = {k: v for k, v in summary["metrics"].items() if isinstance(v, (int, float))}
    rows = summary.get("skipped_rows", {}).get("count")
    lines = [f"{path.name}: {summary['n_samples']} samples"
             + (f" ({rows} rows with an empty prediction or reference skipped)" if rows else "") + "; "
             + ", ".join(f"{k}={v:.4f}" for k, v in shown.items())
             + (f"; skipped {len(summary['skipped'])}: {', '.join(summary['skipped'])} (why: the summary's "
                f"'skipped')" if summary["skipped"] else "")]
    if summary.get("agreement"):
        lines.append("  the file's own scores vs ours, max |diff|: " + ", ".join(
            f"{k}={a['max_abs_diff']:.2g}" if a["max_abs_diff"] is not None else f"{k}=n/a"
            for k, a in summary["agreement"].items()))
    calls = summary.get("judge_calls")
    if calls and (calls["any_unscored"] or calls["cache_locked_writes"]):
        lines.append(f"  judge: {calls['summary']}")
    for key, what, where in (("settings_from_run", "settings the run recorded", "results_file"),
                             ("settings_from_task_yaml", "settings of the task's YAML", "task_yaml")):
        adopted = summary.get(key)
        if adopted:
            lines.append(f"  {what} ({Path(adopted[where]).name}), taken: "
                         + (", ".join(f"{k}={v}" for k, v in adopted["taken"].items()) or "none")
                         + ("; given by flags instead: " + ", ".join(f"{k}={v}" for k, v in
                                                                      adopted["kept_from_flags"].items())
                            if adopted["kept_from_flags"] else ""))
    lines.append(f"  -> {summary['outputs']['scores']}\n  -> {summary['outputs']['summary']}")
    return "\n".join(lines)


__all__ = ["NO_JUDGE", "agreement", "check_outputs", "intervals", "output_paths", "rescore", "score_file", "summary_text",
           "unknown_task"]
