"""``domsum meta-eval``: correlate summary metrics with human judgments.

Flags -> :func:`custom_metrics.analysis.meta_eval.run`, with the settings of the computed
metrics (judge, encoders, models) resolved by :mod:`lm_eval_tasks.settings`, so
``--metadata`` and the ``DOMSUM_*`` variables mean what they mean in a harness run.

    domsum meta-eval data/pubmed.json --out out/meta --compute rouge,bertscore
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from custom_metrics import registry
from custom_metrics.analysis.meta_eval import MetaEvalError, computable, run
from custom_metrics.analysis.meta_eval.inputs import RATING_COLUMNS as COLUMN_KEYS
from custom_metrics.analysis.stats.consensus import CONSENSUS_METHODS
from custom_metrics.analysis.stats.coefficients import COEFFICIENTS
from custom_metrics.analysis.stats.levels import LEVELS
from custom_metrics.analysis.stats.resampling import RESAMPLING, TESTS
from custom_metrics.outputs import OutputError, output_folder
from lm_eval_tasks import catalog
from lm_eval_tasks.commands import parse_metadata, with_flags
from lm_eval_tasks.report.meta_eval_page import write_page
from lm_eval_tasks.scoring_context import conventions
from lm_eval_tasks.settings import judge_config, resolve


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="domsum meta-eval", description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="FD/ScholarSum JSONL, a long CSV/JSONL table, or a SummEval / DialSummEval "
                                  "release file (--format)")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace the analysis an earlier run wrote into --out (default: stop and say so)")
    ap.add_argument("--format", choices=("auto", "fd", "long", "summeval", "dialsummeval"), default="auto",
                    help="input layout (docs/meta_eval.md); summeval and dialsummeval bring their ratings")
    ap.add_argument("--human", default="human", help="human score column of a long table")
    ap.add_argument("--metrics", default=None, help="comma-separated metric columns (default: all numeric)")
    ap.add_argument("--compute", default="",
                    help="comma-separated per-summary metrics to add: " + ",".join(computable()))
    ap.add_argument("--bootstrap", type=int, default=1000,
                    help="bootstrap resamples for the CIs and permutations for the test (0 = none)")
    ap.add_argument("--resample", choices=RESAMPLING, default="both",
                    help="what the bootstrap and the permutation test resample (Deutsch et al. 2021)")
    ap.add_argument("--test", choices=TESTS, default="permutation", help="metric-vs-metric test")
    ap.add_argument("--test-level", choices=LEVELS, default="global", help="level of the metric-vs-metric test")
    ap.add_argument("--test-coefficient", choices=COEFFICIENTS, default="pearson",
                    help="coefficient of the metric-vs-metric test")
    ap.add_argument("--benchmark", choices=sorted(catalog.BENCHMARKS), default=None,
                    help="--compute rouge stems as its release does; medqsum or none: its paper's correlations beside")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kappa", default=None, help="two annotator columns A,B")
    ap.add_argument("--ratings", default=None,
                    help="per-annotator human ratings (CSV/JSONL: doc_id, system, annotator, aspect, rating): "
                         "correlations per aspect, annotator and consensus, kappa, per-system means")
    ap.add_argument("--consensus", choices=CONSENSUS_METHODS, default="mean",
                    help="pool annotators' ratings: mean, median, or majority (two agreeing outvote the third, "
                         "else the mean)")
    ap.add_argument("--columns", default=None,
                    help="the files' column names where they differ: doc_id=paper,system=model,annotator=rater,"
                         "aspect=dimension,rating=score")
    ap.add_argument("--annotators", choices=("expert", "turker", "all"), default="expert",
                    help="SummEval: whose ratings to read")
    ap.add_argument("--scores", default=None,
                    help="metric scores to join on (doc_id, system): a long CSV/JSONL table, or DialSummEval's "
                         "models_eval_new folder")
    ap.add_argument("--fm-variant", choices=("zero", "few"), default=None,
                    help="FM prompts (default: metadata fm_variant, else zero)")
    ap.add_argument("--metadata", default="{}", help="JSON: judge_model, judge_base_url, bertscore_model, ...")
    ap.add_argument("--no-progress", action="store_true", help="no progress bars (stderr)")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    compute = [c.strip() for c in args.compute.split(",") if c.strip()]
    meta = with_flags(parse_metadata(args.metadata, "meta-eval"), fm_variant=args.fm_variant,
                      progress=False if args.no_progress else None)
    judged = [n for n in compute if n in registry.names() and "judge" in registry.get(n).needs]
    judge = judge_config(meta) if judged else None
    kappa = [c.strip() for c in args.kappa.split(",")] if args.kappa else None
    if kappa is not None and len(kappa) != 2:
        ap.error("--kappa takes exactly two columns A,B")
    pairs = [c.split("=", 1) for c in (args.columns or "").split(",") if c.strip()]
    if any(len(p) != 2 or p[0].strip() not in COLUMN_KEYS for p in pairs):
        ap.error(f"--columns takes KEY=NAME pairs with KEY one of {', '.join(COLUMN_KEYS)}")
    columns = {k.strip(): v.strip() for k, v in pairs}
    out = Path(args.out)
    try:
        with output_folder(out, args.overwrite) as partial:  # refused before any work; put in place whole
            summary = run(args.input, partial, fmt=args.format, human=args.human,
                          metrics=[m.strip() for m in args.metrics.split(",")] if args.metrics else None,
                          compute=compute, n_boot=args.bootstrap, seed=args.seed, kappa=kappa, judge_config=judge,
                          bertscore_model=resolve(meta, "bertscore_model"),
                          bertscore_layers=resolve(meta, "bertscore_layers"),
                          fm_variant=resolve(meta, "fm_variant"), ratings=args.ratings,
                          ppl_model=resolve(meta, "ppl_model"), blanc_model=resolve(meta, "blanc_model"),
                          progress=resolve(meta, "progress"), consensus=args.consensus, columns=columns,
                          annotators=args.annotators, scores=args.scores, resampling=args.resample, test=args.test,
                          test_level=args.test_level, test_coefficient=args.test_coefficient,
                          rouge_stemming=resolve(meta, "rouge_stemming"),
                          rouge_convention=conventions(args.benchmark or "").get("rouge_stemming"))
            page = out / write_page(partial, summary, args.benchmark).name
    except (MetaEvalError, OutputError) as exc:  # the library names the file and rows; one line, no traceback
        print(f"meta_eval: error: {exc}", file=sys.stderr)
        return 2
    print(summary["markdown"])
    print(f"\nHTML page: {page}")
    return 0
