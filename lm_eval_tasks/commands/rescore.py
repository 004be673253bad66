"""``domsum rescore``: re-score a harness ``--log_samples`` file with suite metrics, no regeneration.

The harness cannot do this: its metrics run only inside an evaluation. With
``--log_samples``, lm-eval 0.4.13 writes ``samples_<task>_<timestamp>.jsonl``, one
line per document and filter, with ``doc`` (our docs carry ``document`` and
``summary``), ``target``, ``resps`` (a list per request of generated strings),
``filtered_resps`` (one per request, after the filter) and ``doc_id``. This command
reads the generated summary from ``filtered_resps`` (the prediction the task scored),
strips it as the tasks do, and scores it through the metric registry
(:mod:`custom_metrics.registry`), so a re-scored number is the number a harness run
of the same predictions reports.

``--metrics`` takes any registry family (``rouge``, ``bertscore``, ``dvo``, ``judge``,
``fm``, ``ccs_length``, ``ccs_keywords``, ``ccs_readability``, ``ccs_focus``,
``medqsum``) or any single key of one (``rouge1``, ``coherence``, ``fm_vanilla``,
``meteor``, ...): a key selects its family and restricts the output, and the cost,
to the chosen keys. A name that is both a family and one of its keys (``fm``,
``dvo``) means the key, so ``fm`` alone makes no vanilla-rating calls, as before.

* ``dvo`` reads ``--vocabulary FILE``, or the domain's vocabulary under
  ``--vocab-dir`` / ``DOMSUM_VOCAB_DIR``.
* judge families (``judge`` and its three ratings, ``fm`` / ``fm_vanilla``,
  ``ccs_focus``) use the judge of ``--judge-model`` / ``DOMSUM_JUDGE_MODEL`` etc.; no
  judge configured = skipped with one notice, as in the tasks. Answers are cached, so
  a re-run costs nothing. Only the chosen judge ratings are requested.
* ``fm`` keeps, per sample, the four facet fractions, ratings and extracted segments
  (``fm_detail``), so every score is explainable.
* CCSBench families read the doc's control fields (``length_bin``, ``keywords``,
  ``readability``, ``focus``).

Writes, next to each input (or into ``--out-dir``): ``<stem>.scores.jsonl`` (one line
per sample: ``doc_id``, the doc's ``id``, ``filter``, ``prediction`` and its
per-document values; NaN written as null) and ``<stem>.summary.json`` (corpus scores
aggregated as the harness does, judge parse failures / mode / usage, what each family
recorded, the settings used).

    domsum rescore out/model/samples_adapteval_pubmed_*.jsonl \\
        --metrics rouge,dvo,judge --judge-model gpt-4o-mini --vocab-dir ~/vocab

The task in the file name is looked up in the task catalogue for its benchmark and
domain (``--benchmark`` / ``--domain`` override them; a file of a task outside the
suite needs them only for DVO's vocabulary and the judge's domain). Every setting
(flags, then ``--metadata``, then the environment) is resolved by
:mod:`lm_eval_tasks.settings`, as in a harness run.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from custom_metrics import registry
from lm_eval_tasks import settings
from lm_eval_tasks.catalog import UnknownTask
from lm_eval_tasks.commands import json_safe, parse_metadata, task_target, with_flags
from lm_eval_tasks.settings import SettingError

log = logging.getLogger("rescore")

_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)$")
#: doc fields handed to families as ``Batch.extras`` (the CCSBench controls)
NO_JUDGE = "no judge configured (--judge-model or DOMSUM_JUDGE_MODEL)"


class ScoreError(RuntimeError):
    """A requested metric cannot run (missing module, vocabulary, bad input)."""


# =========================================================================== input


@dataclass
class Sample:
    doc_id: Any
    id: str | None
    filter: str
    document: str
    reference: str
    prediction: str
    #: per-document fields the families read beyond the texts (``Batch.extras``)
    extras: dict[str, Any] = field(default_factory=dict)


def first_text(value: Any) -> str:
    """The first string inside (possibly nested) lists: the generated summary."""
    while isinstance(value, (list, tuple)):
        if not value:
            return ""
        value = value[0]
    return "" if value is None else str(value)


def read_samples(path: Path, filter_key: str | None = None, limit: int | None = None) -> list[Sample]:
    """Samples of one filter (default: the file's first) from a ``--log_samples`` file."""
    samples: list[Sample] = []
    task = task_from_filename(path)
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScoreError(f"{path}, line {lineno}: not JSON ({exc.msg})") from None
            if not isinstance(rec, dict) or "doc" not in rec:
                raise ScoreError(f"{path}, line {lineno}: no 'doc' field; is this a --log_samples file?")
            filt = str(rec.get("filter", "none"))
            if filter_key is None:
                filter_key = filt
            if filt != filter_key:
                continue
            doc = rec["doc"] if isinstance(rec["doc"], dict) else {}
            resps = rec.get("filtered_resps", rec.get("resps"))
            if resps is None:
                raise ScoreError(f"{path}, line {lineno}: neither 'filtered_resps' nor 'resps'")
            try:
                extras = registry.extras_of(doc, task)
            except json.JSONDecodeError as exc:
                raise ScoreError(f"{path}, line {lineno}: doc 'keywords' is not a JSON list ({exc.msg})") from None
            samples.append(Sample(
                doc_id=rec.get("doc_id", lineno - 1),
                id=doc.get("id"),
                filter=filt,
                document=str(doc.get("document", "") or ""),
                reference=str(doc.get("summary", rec.get("target", "")) or ""),
                prediction=first_text(resps).strip(),
                extras=extras,
            ))
            if limit is not None and len(samples) >= limit:
                break
    if not samples:
        raise ScoreError(f"{path}: no samples" + (f" for filter {filter_key!r}" if filter_key else ""))
    return samples


def task_from_filename(path: Path) -> str | None:
    """``samples_<task>_<timestamp>.jsonl`` -> task name."""
    m = _SAMPLES_NAME.match(path.stem)
    return m.group("task") if m else None


def target_of(task: str | None) -> tuple[str | None, str | None, str | None]:
    """(benchmark, domain, why not) of a samples file's task, from the catalogue.

    A task outside the suite (or no task) gives ``(None, None, reason)``; the reason
    becomes the error only when a metric needs the domain.
    """
    if not task:
        return None, None, "the file name names no task (samples_<task>_<timestamp>.jsonl)"
    try:
        benchmark, domain = task_target(task)
    except UnknownTask as exc:
        return None, None, str(exc)
    return benchmark, domain, None


# =========================================================================== metric selection


def parse_metrics(spec: str) -> dict[str, list[str]]:
    """``rouge,dvo,coherence`` -> {family: the keys chosen}, in the registry's key order.

    A family name chooses all its keys; a key chooses itself (and so its family). A
    name that is both a family and one of its keys (``fm``, ``dvo``) is the key: the
    long-standing meaning of ``--metrics fm`` is the facet score without the vanilla
    rating's calls.
    """
    chosen: dict[str, set[str]] = {}
    for name in (s.strip() for s in spec.split(",")):
        if not name:
            continue
        try:
            fam = registry.family_of(name)
            keys = {name}
        except KeyError:
            try:
                fam = registry.get(name)
            except KeyError:
                raise ScoreError(f"unknown metric {name!r}; choose a family ({', '.join(registry.names())}) "
                                 f"or one of its keys") from None
            keys = set(fam.key_names)
        chosen.setdefault(fam.name, set()).update(keys)
    return {name: [k for k in registry.get(name).key_names if k in keys] for name, keys in chosen.items()}


def family_options(name: str, keys: list[str], args: argparse.Namespace, task: str | None,
                   benchmark: str) -> dict[str, Any]:
    """``Context.options`` of one family: what the chosen keys and the flags ask of it."""
    if name == "judge":
        wanted = [k for k in registry.JUDGE_METRICS if k in keys] or list(registry.JUDGE_METRICS)
        return {"judge_metrics": wanted, "max_document_words": args.max_document_words}
    if name == "fm":
        # details always: they carry the scored/failure counts of the summary's fm_judge
        vanilla = "fm_vanilla" in keys
        return {"fm_facets": "fm" in keys or not vanilla, "fm_vanilla": vanilla, "keep_details": True}
    if name == "dvo" and args.vocabulary:
        return {"vocabulary_file": args.vocabulary}
    if task and benchmark:  # what the task's own benchmark gives the family (CCSBench's focus prompt)
        from lm_eval_tasks.benchmarks import family_options as benchmark_options
        from lm_eval_tasks.catalog import lookup

        try:
            spec = lookup(task)
        except UnknownTask:
            return {}
        if spec.benchmark == benchmark:
            return benchmark_options(spec, name, args.metadata)
    return {}


def family_settings(fam: registry.Family, keys: list[str], meta: dict) -> dict[str, Any]:
    """The family's resolved settings; a key choice of the battery runs only the battery
    families those keys belong to (``medqsum_metrics``), since each loads a model."""
    resolved = settings.resolve_many(meta, fam.settings)
    if fam.name == "medqsum" and len(keys) < len(fam.keys):
        from custom_metrics.battery import FAMILIES, FAMILY_OF

        needed = {FAMILY_OF[k] for k in keys}
        resolved["medqsum_metrics"] = [f for f in FAMILIES if f in needed]
    return resolved


# =========================================================================== scoring


def judge_summary(ctx: registry.Context, values: dict[str, list]) -> dict[str, Any]:
    """Per-rating parse failures, scored items and judge mode of the AdaptEval judge, from its
    per-document values and what it recorded (no second call)."""
    wanted = ctx.options["judge_metrics"]
    nan = {m: sum(1 for v in values[m] if math.isnan(v)) for m in wanted}
    failed = ctx.record.get("judge_failed", {})
    return {"parse_failures": {m: failed.get(m, {}).get("parse", 0) for m in wanted},
            "failed": {m: failed.get(m, {}) for m in wanted},
            "n_scored": {m: len(values[m]) - nan[m] for m in wanted},
            "judge_mode": ctx.record.get("judge_mode", {}), "usage": ctx.record.get("judge_usage"),
            "judge": ctx.judge.describe()}


def _context(name: str, keys: list[str], args: argparse.Namespace, task: str | None, benchmark: str,
             domain: str | None) -> registry.Context:
    fam = registry.get(name)
    return registry.Context(
        benchmark=benchmark, subset=domain or "",
        settings=family_settings(fam, keys, args.metadata),
        judge=settings.judge_config(args.metadata) if "judge" in fam.needs else None,
        options=family_options(name, keys, args, task, benchmark))


def _preflight(fam: registry.Family, ctx: registry.Context, args: argparse.Namespace, why: str | None) -> dict:
    """Everything that can fail cheaply, before any family scores; returns what ``describe`` says."""
    if "vocabulary" in fam.needs and not ctx.options.get("vocabulary_file") and not ctx.subset:
        raise ScoreError(f"metric '{fam.name}': give --vocabulary FILE or --benchmark/--domain ({why})")
    if fam.name == "judge" and not ctx.subset:
        raise ScoreError(f"judge metrics: give --domain ({why})")
    try:
        if fam.check is not None and settings.resolve(args.metadata, "preflight"):
            fam.check(ctx)
        return fam.describe(ctx) if fam.describe is not None else {}
    except registry.ScorerUnavailable as exc:
        raise ScoreError(str(exc)) from None


def score_file(path: Path, selection: dict[str, list[str]], args: argparse.Namespace) -> dict:
    """Score one samples file with the chosen families; write its two outputs; return the summary."""
    samples = read_samples(path, args.filter, args.limit)
    task = task_from_filename(path)
    benchmark, domain, why = target_of(task)
    benchmark = args.benchmark or benchmark or "adapteval"
    domain = args.domain or domain
    summary: dict[str, Any] = {"samples_file": str(path), "task": task, "benchmark": benchmark, "domain": domain,
                               "n_samples": len(samples), "filter": samples[0].filter,
                               "metrics": {}, "skipped": {}, "record": {}, "settings": {}}
    from custom_metrics.judge import JudgeStats

    judge_stats = JudgeStats()  # one tally for the file's judge calls: what failed and why
    contexts: dict[str, registry.Context] = {}
    for name, keys in selection.items():
        fam = registry.get(name)
        ctx = _context(name, keys, args, task, benchmark, domain)
        if "judge" in fam.needs:
            ctx.options = {**ctx.options, "judge_stats": judge_stats}
        if "judge" in fam.needs and ctx.judge is None:
            from custom_metrics.judge import notice_judge_skipped

            notice_judge_skipped(f"{name} metrics (rescore)")
            summary["skipped"][name] = NO_JUDGE
            continue
        summary["record"].update(_preflight(fam, ctx, args, why))
        summary["settings"].update(ctx.settings)
        contexts[name] = ctx

    batch = registry.Batch(predictions=[s.prediction for s in samples],
                           references=[s.reference for s in samples],
                           documents=[s.document for s in samples],
                           extras=[s.extras for s in samples])
    per_sample: list[dict] = [{"doc_id": s.doc_id, "id": s.id, "filter": s.filter,
                               "prediction": s.prediction} for s in samples]
    for name, ctx in contexts.items():
        fam, keys = registry.get(name), selection[name]
        try:
            scored = fam.score(batch, ctx)
        except registry.ScorerUnavailable as exc:
            raise ScoreError(str(exc)) from None
        # the chosen keys, plus per-document lists beyond the family's keys (fm_detail,
        # which explains the facet score and so goes with it)
        shown = keys + [k for k in scored if k not in fam.key_names and (k != "fm_detail" or "fm" in keys)]
        for i, row in enumerate(per_sample):
            row.update({k: scored[k][i] for k in shown})
        for key in keys:
            summary["metrics"][key] = registry.aggregate(fam, key, scored[key], ctx)
        record = dict(ctx.record)
        if name == "judge":
            summary["judge"] = judge_summary(ctx, scored)
        elif name == "fm":
            summary["fm_judge"] = {**record.pop("fm_judge", {}), "judge": ctx.judge.describe()}
        elif name == "medqsum":
            for item in record.get("medqsum_skipped", []):
                if item["reason"] != "not requested" and set(item["keys"]) & set(keys):
                    summary["skipped"][f"medqsum.{item['metric']}"] = item["reason"]
        summary["record"].update(record)
    if judge_stats.items:
        summary["judge_calls"] = {**judge_stats.as_dict(), "summary": judge_stats.summary_line(),
                                  "any_unscored": bool(judge_stats.n_failed or judge_stats.empty_skipped)}

    # NaN (a metric that does not apply to a document) is written as null: strict JSON

    scores_path, summary_path = output_paths(path, Path(args.out_dir) if args.out_dir else None)
    with open(scores_path, "w", encoding="utf-8") as fh:
        for row in per_sample:
            fh.write(json.dumps(json_safe(row), ensure_ascii=False) + "\n")
    summary["outputs"] = {"scores": str(scores_path), "summary": str(summary_path)}
    summary = json_safe(summary)
    summary_path.write_text(json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n",
                            encoding="utf-8")
    return summary


def output_paths(path: Path, out_dir: Path | None) -> tuple[Path, Path]:
    directory = out_dir or path.parent
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{path.stem}.scores.jsonl", directory / f"{path.stem}.summary.json"


# =========================================================================== command line


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="domsum rescore",
                                 description="Re-score lm-eval --log_samples files with suite metrics.")
    ap.add_argument("samples", nargs="+", type=Path, help="samples_<task>_<timestamp>.jsonl file(s)")
    ap.add_argument("--metrics", required=True,
                    help="comma list of metric families (" + ", ".join(registry.names())
                         + ") or single keys of them (e.g. rouge1, coherence, fm_vanilla, meteor)")
    ap.add_argument("--out-dir", help="where to write outputs (default: next to each input)")
    ap.add_argument("--domain", help="domain for DVO vocabulary and judge prompts (default: the task's, "
                                     "from the catalogue)")
    ap.add_argument("--metadata", default="{}", type=lambda text: parse_metadata(text, "rescore"),
                    help="settings JSON as for lm_eval --metadata (flags below win over it)")
    ap.add_argument("--filter", help="filter key to score (default: the file's first)")
    ap.add_argument("--limit", type=int, help="score only the first N samples")
    g = ap.add_argument_group("BERTScore")
    g.add_argument("--bertscore-model", help="encoder (default: DOMSUM_BERTSCORE_MODEL, else roberta-large)")
    g.add_argument("--bertscore-layers", type=int)
    g.add_argument("--bertscore-batch-size", type=int, help="default 64")
    g = ap.add_argument_group("DVO")
    g.add_argument("--vocabulary", help="vocabulary file (default: VOCAB_DIR/<benchmark>/<domain>.tsv)")
    g.add_argument("--vocab-dir", help="vocabulary root (default: DOMSUM_VOCAB_DIR)")
    g.add_argument("--benchmark", help="benchmark under the vocabulary root (default: the task's, else adapteval)")
    g = ap.add_argument_group("judge (each falls back to the environment, as in the tasks)")
    g.add_argument("--judge-model", help="judge model (DOMSUM_JUDGE_MODEL)")
    g.add_argument("--judge-base-url", help="OpenAI-compatible endpoint (OPENAI_BASE_URL)")
    g.add_argument("--judge-concurrency", type=int, help="requests in flight (default 8)")
    g.add_argument("--judge-cache", help="SQLite cache path, or 'off' (DOMSUM_JUDGE_CACHE)")
    g.add_argument("--judge-logprobs", choices=("on", "off", "auto"))
    g.add_argument("--judge-n-samples", type=int, help="replies per item without logprobs (default 20)")
    g.add_argument("--max-document-words", type=int, help="truncate sources in judge prompts")
    g.add_argument("--fm-variant", choices=("zero", "few"),
                   help="FM alignment prompts: zero-shot rules (default) or with the paper's examples")
    return ap


def main(argv: list[str] | None = None) -> int:
    from custom_metrics.judge import JudgeError

    args = build_parser().parse_args(argv)
    args.metadata = with_flags(
        args.metadata, bertscore_model=args.bertscore_model, bertscore_layers=args.bertscore_layers,
        bertscore_batch_size=args.bertscore_batch_size, vocab_dir=args.vocab_dir,
        judge_model=args.judge_model, judge_base_url=args.judge_base_url,
        judge_concurrency=args.judge_concurrency, judge_cache=args.judge_cache,
        judge_logprobs=args.judge_logprobs, judge_n_samples=args.judge_n_samples,
        fm_variant=args.fm_variant)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        selection = parse_metrics(args.metrics)
        if not selection:
            raise ScoreError("--metrics names no metric")
        for path in args.samples:
            summary = score_file(path, selection, args)
            shown = {k: v for k, v in summary["metrics"].items() if isinstance(v, (int, float))}
            print(f"{path.name}: {summary['n_samples']} samples; "
                  + ", ".join(f"{k}={v:.4f}" for k, v in shown.items())
                  + (f"; skipped: {', '.join(summary['skipped'])}" if summary["skipped"] else ""))
            calls = summary.get("judge_calls")
            if calls and calls["any_unscored"]:
                print(f"  judge: {calls['summary']}")
            print(f"  -> {summary['outputs']['scores']}\n  -> {summary['outputs']['summary']}")
    except (ScoreError, JudgeError, SettingError) as exc:
        print(f"rescore: error: {exc}", file=sys.stderr)
        return 2
    return 0
