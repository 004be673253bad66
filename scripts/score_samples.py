"""Re-score a harness ``--log_samples`` file with any suite metric, without regenerating.

The harness cannot do this: its metrics run only inside an evaluation. With
``--log_samples``, lm-eval 0.4.13 writes ``samples_<task>_<timestamp>.jsonl``, one
line per document and filter, with ``doc`` (our docs carry ``document`` and
``summary``), ``target``, ``resps`` (a list per request of generated strings),
``filtered_resps`` (one per request, after the filter) and ``doc_id``. This script
reads the generated summary from ``filtered_resps`` (the prediction the task scored),
strips it as the tasks do, and scores it with the chosen metrics:

* ``rouge``: ``rouge1``, ``rouge2``, ``rougeL`` per sample; corpus ``rouge_geo``,
  ``rouge_mean`` too (``custom_metrics.rouge_scores``).
* ``bertscore``: ``bertscore_p/r/f1`` (``custom_metrics.bertscore``; encoder from
  ``--bertscore-model`` / ``DOMSUM_BERTSCORE_MODEL``).
* ``dvo``: Domain Vocabulary Overlap (``custom_metrics.dvo``) against
  ``--vocabulary FILE``, or the domain's vocabulary under ``--vocab-dir`` /
  ``DOMSUM_VOCAB_DIR``.
* ``judge`` (all three) or any of ``domain_adaptation``, ``coherence``, ``fluency``:
  AdaptEval's LLM-judge metrics (``custom_metrics.judge_prompts.adapteval_judge``)
  with the judge from ``--judge-model`` / ``DOMSUM_JUDGE_MODEL`` etc.; no judge
  configured = skipped with one notice, as in the tasks. Answers are cached, so a
  re-run costs nothing.
* ``fm`` / ``fm_vanilla``: the Facet-aware Metric of scientific abstracts and its
  one-rating baseline (``custom_metrics.fm.fm_scores``, ``--fm-variant zero|few``),
  with the same judge settings; each sample's line keeps the four facet fractions,
  ratings and extracted segments (``fm_detail``), so every score is explainable.

Writes, next to each input (or into ``--out-dir``): ``<stem>.scores.jsonl`` (one line
per sample: ``doc_id``, the doc's ``id``, ``filter``, ``prediction`` and its
scores) and
``<stem>.summary.json`` (corpus scores, judge parse failures / mode / usage, settings).

    python scripts/score_samples.py out/model/samples_adapteval_pubmed_*.jsonl \\
        --metrics rouge,dvo,judge --judge-model gpt-4o-mini --vocab-dir ~/vocab
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

log = logging.getLogger("score_samples")

FAMILIES = ("rouge", "bertscore", "dvo", "judge", "fm", "fm_vanilla")
JUDGE_METRICS = ("domain_adaptation", "coherence", "fluency")
KNOWN_DOMAINS = ("arxiv", "pubmed", "govreport")
_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)$")


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
            samples.append(Sample(
                doc_id=rec.get("doc_id", lineno - 1),
                id=doc.get("id"),
                filter=filt,
                document=str(doc.get("document", "") or ""),
                reference=str(doc.get("summary", rec.get("target", "")) or ""),
                prediction=first_text(resps).strip(),
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


def infer_domain(task: str | None) -> str | None:
    """The domain in a task name: a known AdaptEval domain, else ``<bench>_<subset>``'s subset."""
    if not task:
        return None
    parts = task.split("_")
    for p in parts:
        if p in KNOWN_DOMAINS:
            return p
    return parts[1] if len(parts) > 1 else None


def parse_metrics(spec: str) -> tuple[list[str], list[str]]:
    """``rouge,dvo,coherence`` -> (families, judge metrics)."""
    families: list[str] = []
    judge: list[str] = []
    for name in (s.strip() for s in spec.split(",")):
        if not name:
            continue
        if name == "judge":
            judge.extend(m for m in JUDGE_METRICS if m not in judge)
        elif name in JUDGE_METRICS:
            if name not in judge:
                judge.append(name)
        elif name in FAMILIES:
            if name not in families:
                families.append(name)
        else:
            raise ScoreError(f"unknown metric {name!r}; choose from {', '.join(FAMILIES + JUDGE_METRICS)}")
    if judge:
        families.append("judge")
    return families, judge


# =========================================================================== metrics


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def score_rouge(samples: Sequence[Sample]) -> tuple[list[dict], dict]:
    from custom_metrics import rouge_scores

    preds = [s.prediction for s in samples]
    refs = [s.reference for s in samples]
    try:
        from custom_metrics.rouge import rouge_per_document
        per = rouge_per_document(preds, refs)
    except ImportError:  # older library: one pair at a time
        per = [{k: v for k, v in rouge_scores([p], [r]).items() if k in ("rouge1", "rouge2", "rougeL")}
               for p, r in zip(preds, refs)]
    return per, dict(rouge_scores(preds, refs))


def score_bertscore(samples: Sequence[Sample], args: argparse.Namespace) -> tuple[list[dict], dict]:
    from custom_metrics import bertscore

    model = args.bertscore_model or _env("DOMSUM_BERTSCORE_MODEL")
    layers = args.bertscore_layers or (int(_env("DOMSUM_BERTSCORE_LAYERS")) if _env("DOMSUM_BERTSCORE_LAYERS") else None)
    preds = [s.prediction for s in samples]
    refs = [s.reference for s in samples]
    try:
        from custom_metrics.bertscore import bertscore_per_document
    except ImportError:
        bertscore_per_document = None
    if bertscore_per_document is not None:
        triples = bertscore_per_document(preds, refs, model=model, num_layers=layers,
                                         batch_size=args.bertscore_batch_size)
        per = [{"bertscore_p": p, "bertscore_r": r, "bertscore_f1": f} for p, r, f in triples]
        n = len(per)
        summary = {k: sum(d[k] for d in per) / n for k in ("bertscore_p", "bertscore_r", "bertscore_f1")}
    else:
        summary = dict(bertscore(preds, refs, model=model, num_layers=layers, batch_size=args.bertscore_batch_size))
        per = [dict(bertscore([p], [r], model=model, num_layers=layers)) for p, r in zip(preds, refs)]
    summary["bertscore_model"] = model or "library default"
    return per, summary


def load_dvo(args: argparse.Namespace, domain: str | None) -> tuple[Any, list[str], str]:
    """(module, vocabulary, where it came from); clear errors when either is missing."""
    try:
        # import_module, not ``import custom_metrics.dvo as``: the package re-exports a
        # function named ``dvo`` that shadows the submodule attribute.
        dvo_mod = importlib.import_module("custom_metrics.dvo")
    except ImportError as exc:
        raise ScoreError(f"metric 'dvo' needs custom_metrics.dvo, which is not available here ({exc})") from None
    if not hasattr(dvo_mod, "dvo"):
        raise ScoreError("metric 'dvo': custom_metrics.dvo has no dvo() function")
    if args.vocabulary:
        path = Path(args.vocabulary).expanduser()
        if not path.is_file():
            raise ScoreError(f"metric 'dvo': vocabulary file {path} not found")
    else:
        if not domain:
            raise ScoreError("metric 'dvo': give --vocabulary FILE or --domain (the task name has none)")
        try:
            path = dvo_mod.vocabulary_path(args.benchmark, domain, args.vocab_dir)
        except FileNotFoundError as exc:
            raise ScoreError(f"metric 'dvo': {exc}") from None
    loader = getattr(dvo_mod, "load_vocabulary", None)
    vocab = loader(path) if loader else [ln.split("\t")[0].strip() for ln in open(path, encoding="utf-8")
                                        if ln.strip() and not ln.startswith("#")]
    return dvo_mod, vocab, str(path)


def score_dvo(samples: Sequence[Sample], dvo_mod: Any, vocab: list[str], where: str) -> tuple[list[dict], dict]:
    preds = [s.prediction for s in samples]
    per_fn = getattr(dvo_mod, "dvo_scores", None)
    values = per_fn(preds, vocab) if per_fn else [dvo_mod.dvo([p], vocab) for p in preds]
    return [{"dvo": v} for v in values], {"dvo": dvo_mod.dvo(preds, vocab), "vocabulary": where}


def judge_config(args: argparse.Namespace):
    from custom_metrics.judge import resolve_judge_config

    metadata = {
        "judge_model": args.judge_model,
        "judge_base_url": args.judge_base_url,
        "judge_concurrency": args.judge_concurrency,
        "judge_cache": args.judge_cache,
        "judge_logprobs": args.judge_logprobs,
        "judge_n_samples": args.judge_n_samples,
    }
    return resolve_judge_config(metadata)


def score_judge(samples: Sequence[Sample], metrics: Sequence[str], domain: str, config: Any,
                args: argparse.Namespace) -> tuple[list[dict], dict]:
    from custom_metrics.judge_prompts import adapteval_judge

    out = adapteval_judge([s.document for s in samples], [s.prediction for s in samples], domain,
                          config, metrics, max_document_words=args.max_document_words)
    per = [{m: out["per_item"][m][i] for m in metrics} for i in range(len(samples))]
    summary: dict[str, Any] = {m: out[m] for m in metrics}
    summary["judge"] = {k: out[k] for k in ("parse_failures", "n_scored", "judge_mode", "usage", "judge")}
    return per, summary


def score_fm(samples: Sequence[Sample], families: Sequence[str], config: Any,
             args: argparse.Namespace) -> tuple[list[dict], dict]:
    """FM (and/or the vanilla baseline) of each prediction against its reference abstract."""
    from custom_metrics.fm import fm_scores

    want_fm = "fm" in families
    out = fm_scores([s.reference for s in samples], [s.prediction for s in samples], config,
                    variant=args.fm_variant, vanilla="fm_vanilla" in families, facets=want_fm)
    per: list[dict] = []
    for item in out["per_item"]:
        row: dict[str, Any] = {}
        if want_fm:
            row["fm"] = item["fm"]
            row["fm_detail"] = {k: item[k] for k in ("fractions", "ratings", "reference_facets",
                                                     "candidate_facets", "failure")}
        if "fm_vanilla" in families:
            row["fm_vanilla"] = item["fm_vanilla"]
        per.append(row)
    summary: dict[str, Any] = {}
    if want_fm:
        summary["fm"] = out["fm"]
    if "fm_vanilla" in families:
        summary["fm_vanilla"] = out["fm_vanilla"]
    summary["fm_judge"] = {k: out[k] for k in ("n_scored", "failures", "variant", "usage", "judge")}
    return per, summary


# =========================================================================== driver


def output_paths(path: Path, out_dir: Path | None) -> tuple[Path, Path]:
    directory = out_dir or path.parent
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{path.stem}.scores.jsonl", directory / f"{path.stem}.summary.json"


def score_file(path: Path, families: list[str], judge_metrics: list[str], args: argparse.Namespace) -> dict:
    """Score one samples file; write its two outputs; return the summary."""
    samples = read_samples(path, args.filter, args.limit)
    task = task_from_filename(path)
    domain = args.domain or infer_domain(task)
    # Everything that can fail cheaply is checked before any scoring.
    dvo_parts = load_dvo(args, domain) if "dvo" in families else None
    needs_judge = any(f in families for f in ("judge", "fm", "fm_vanilla"))
    config = judge_config(args) if needs_judge else None
    if "judge" in families and config is not None and not domain:
        raise ScoreError("judge metrics: give --domain (the task name has none)")

    per_sample: list[dict] = [{"doc_id": s.doc_id, "id": s.id, "filter": s.filter,
                               "prediction": s.prediction} for s in samples]
    summary: dict[str, Any] = {"samples_file": str(path), "task": task, "domain": domain,
                               "n_samples": len(samples), "filter": samples[0].filter,
                               "metrics": {}, "skipped": {}}
    fm_done = False
    for family in families:
        if family in ("fm", "fm_vanilla"):
            if fm_done:
                continue
            fm_done = True
            if config is None:
                from custom_metrics.judge import notice_judge_skipped

                notice_judge_skipped("FM metrics (score_samples)")
                summary["skipped"]["fm"] = "no judge configured (--judge-model or DOMSUM_JUDGE_MODEL)"
                continue
            per, agg = score_fm(samples, families, config, args)
            summary["fm_judge"] = agg.pop("fm_judge")
        elif family == "rouge":
            per, agg = score_rouge(samples)
        elif family == "bertscore":
            per, agg = score_bertscore(samples, args)
        elif family == "dvo":
            per, agg = score_dvo(samples, *dvo_parts)
        else:
            if config is None:
                from custom_metrics.judge import notice_judge_skipped

                notice_judge_skipped("judge metrics (score_samples)")
                summary["skipped"]["judge"] = "no judge configured (--judge-model or DOMSUM_JUDGE_MODEL)"
                continue
            per, agg = score_judge(samples, judge_metrics, domain, config, args)
            summary["judge"] = agg.pop("judge")
        for row, scores in zip(per_sample, per):
            row.update(scores)
        summary["metrics"].update(agg)

    scores_path, summary_path = output_paths(path, Path(args.out_dir) if args.out_dir else None)
    with open(scores_path, "w", encoding="utf-8") as fh:
        for row in per_sample:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary["outputs"] = {"scores": str(scores_path), "summary": str(summary_path)}
    summary_path.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return summary


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description="Re-score lm-eval --log_samples files with suite metrics.")
    ap.add_argument("samples", nargs="+", type=Path, help="samples_<task>_<timestamp>.jsonl file(s)")
    ap.add_argument("--metrics", required=True,
                    help="comma list of: rouge, bertscore, dvo, judge, domain_adaptation, coherence, fluency, "
                         "fm, fm_vanilla")
    ap.add_argument("--out-dir", help="where to write outputs (default: next to each input)")
    ap.add_argument("--domain", help="domain for DVO vocabulary and judge prompts (default: from the task name)")
    ap.add_argument("--filter", help="filter key to score (default: the file's first)")
    ap.add_argument("--limit", type=int, help="score only the first N samples")
    g = ap.add_argument_group("BERTScore")
    g.add_argument("--bertscore-model", help="encoder (default: DOMSUM_BERTSCORE_MODEL, else roberta-large)")
    g.add_argument("--bertscore-layers", type=int)
    g.add_argument("--bertscore-batch-size", type=int, default=64)
    g = ap.add_argument_group("DVO")
    g.add_argument("--vocabulary", help="vocabulary file (default: VOCAB_DIR/<benchmark>/<domain>.tsv)")
    g.add_argument("--vocab-dir", help="vocabulary root (default: DOMSUM_VOCAB_DIR)")
    g.add_argument("--benchmark", default="adapteval", help="benchmark folder under the vocabulary root")
    g = ap.add_argument_group("judge (each falls back to the environment, as in the tasks)")
    g.add_argument("--judge-model", help="judge model (DOMSUM_JUDGE_MODEL)")
    g.add_argument("--judge-base-url", help="OpenAI-compatible endpoint (OPENAI_BASE_URL)")
    g.add_argument("--judge-concurrency", type=int, help="requests in flight (default 8)")
    g.add_argument("--judge-cache", help="SQLite cache path, or 'off' (DOMSUM_JUDGE_CACHE)")
    g.add_argument("--judge-logprobs", choices=("on", "off", "auto"))
    g.add_argument("--judge-n-samples", type=int, help="replies per item without logprobs (default 20)")
    g.add_argument("--max-document-words", type=int, help="truncate sources in judge prompts")
    g.add_argument("--fm-variant", choices=("zero", "few"), default="zero",
                   help="FM alignment prompts: zero-shot rules (default) or with the paper's examples")
    return ap


def main(argv: list[str] | None = None) -> int:
    from custom_metrics.judge import JudgeError

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        families, judge_metrics = parse_metrics(args.metrics)
        if not families:
            raise ScoreError("--metrics names no metric")
        for path in args.samples:
            summary = score_file(path, families, judge_metrics, args)
            shown = {k: v for k, v in summary["metrics"].items() if isinstance(v, (int, float))}
            print(f"{path.name}: {summary['n_samples']} samples; "
                  + ", ".join(f"{k}={v:.4f}" for k, v in shown.items())
                  + (f"; skipped: {', '.join(summary['skipped'])}" if summary["skipped"] else ""))
            print(f"  -> {summary['outputs']['scores']}\n  -> {summary['outputs']['summary']}")
    except (ScoreError, JudgeError) as exc:
        print(f"score_samples: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
