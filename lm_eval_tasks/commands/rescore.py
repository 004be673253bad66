"""``domsum rescore``: re-score generated summaries with suite metrics, no regeneration.

Flags in, settings resolved (flags over ``--metadata`` over the environment), then
:func:`lm_eval_tasks.rescoring.rescore`; what each input is, which metrics run and what
is written is described, with examples, in :mod:`lm_eval_tasks.rescoring`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from custom_metrics import registry
from custom_metrics.outputs import OutputError
from lm_eval_tasks.commands import add_include_path, parse_metadata, with_flags
from lm_eval_tasks.rescoring import Options, ScoreError, flagged, rescore, setting_flags, summary_text
from lm_eval_tasks.results import ResultsError
from lm_eval_tasks.settings import SettingError


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="domsum rescore",
                                 description="Re-score lm-eval --log_samples files, or CSV / JSON-lines / JSON "
                                             "tables of predictions, with suite metrics.")
    ap.add_argument("samples", nargs="+", type=Path, metavar="INPUT",
                    help="samples_<task>_<timestamp>.jsonl file(s), or prediction tables (.csv, .tsv, .jsonl, "
                         ".json list) with prediction / reference (/ document) columns")
    ap.add_argument("--metrics",
                    help="comma list of metric families (" + ", ".join(registry.names())
                         + ") or single keys of them (e.g. rouge1, coherence, fm_vanilla, meteor); "
                           "default: the task's catalogue families")
    ap.add_argument("--task", help="task the predictions are for (benchmark, domain, default metrics, scoring "
                                   "conventions); default: the one a samples file names")
    add_include_path(ap)
    ap.add_argument("--bootstrap", type=int, default=1000,
                    help="bootstrap resamples for the 95%% intervals (0 = none; default 1000)")
    ap.add_argument("--seed", type=int, default=1234, help="bootstrap seed (default 1234)")
    g = ap.add_argument_group("prediction tables (default: the conventional name present)")
    g.add_argument("--prediction-column", help="generated summary (prediction, output, generated)")
    g.add_argument("--reference-column", help="reference summary (summary, reference, target)")
    g.add_argument("--document-column", help="source document (document, article, source, text)")
    g.add_argument("--id-column", help="row id (id, doc_id; default: the row index)")
    ap.add_argument("--out", "--out-dir", dest="out", help="output folder (default: next to each input)")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace outputs an earlier rescore wrote (default: stop and say which)")
    ap.add_argument("--domain", help="domain for DVO vocabulary and judge prompts (default: the task's, "
                                     "from the catalogue)")
    ap.add_argument("--metadata", default="{}", type=lambda text: parse_metadata(text, "rescore"),
                    help="settings JSON as for lm_eval --metadata (flags below win over it)")
    ap.add_argument("--filter", help="filter key to score (default: the file's first)")
    ap.add_argument("--limit", type=int, help="score only the first N samples")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars (stderr) while scoring")
    setting_flags(ap.add_argument_group("BERTScore"), "bertscore_model", "bertscore_layers", "bertscore_batch_size")
    g = ap.add_argument_group("DVO")
    g.add_argument("--vocabulary", help="vocabulary file (default: VOCAB_DIR/<benchmark>/<domain>.tsv)")
    setting_flags(g, "vocab_dir")
    g.add_argument("--benchmark", help="benchmark whose conventions and vocabulary root apply (default: the task's)")
    g = ap.add_argument_group("judge (each falls back to the environment, as in the tasks)")
    setting_flags(g, "judge_model", "judge_base_url", "judge_concurrency", "judge_max_requests", "judge_cache",
                  "judge_logprobs", "judge_n_samples", "judge_sample")
    g.add_argument("--max-document-words", type=int, help="truncate sources in judge prompts")
    setting_flags(g, "fm_variant")
    return ap


def main(argv: list[str] | None = None) -> int:
    from custom_metrics.judge import JudgeError

    args = build_parser().parse_args(argv)
    args.metadata = with_flags(args.metadata, **flagged(args), progress=False if args.no_progress else None)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    options = Options(
        metadata=args.metadata, task=args.task, benchmark=args.benchmark, domain=args.domain,
        vocabulary=args.vocabulary, max_document_words=args.max_document_words, filter=args.filter,
        limit=args.limit, prediction_column=args.prediction_column, reference_column=args.reference_column,
        document_column=args.document_column, id_column=args.id_column, bootstrap=args.bootstrap,
        seed=args.seed, out=Path(args.out) if args.out else None, overwrite=args.overwrite)
    try:
        for path, summary in rescore(args.samples, args.metrics, options):
            print(summary_text(path, summary))
    except (ScoreError, ResultsError, JudgeError, SettingError, OutputError) as exc:
        print(f"rescore: error: {exc}", file=sys.stderr)
        return 2
    return 0

