"""``domsum cross-domain-train``: fine-tune on each source domain of a level, evaluate on all.

Flags -> :class:`lm_eval_tasks.analysis.cross_domain_train.TrainPlan` ->
:func:`lm_eval_tasks.analysis.cross_domain_train.run_cross_domain_train`, which
describes the loop, its restarts and the output layout (what ``domsum cross-domain`` reads).

    domsum cross-domain-train --benchmark domainsum --level genre \\
        --base meta-llama/Llama-2-7b-hf --method lora --out out/xdomain-genre --data-dir data/
"""

from __future__ import annotations

import argparse
import dataclasses

from lm_eval_tasks.analysis.cross_domain_train import CrossDomainTrainError, TrainPlan, run_cross_domain_train
from lm_eval_tasks.benchmarks.suite import ADAPTATION_STUDY, DOMAIN_STUDY
from lm_eval_tasks.commands import parse_metadata


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="domsum cross-domain-train", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="See lm_eval_tasks.analysis.cross_domain_train for the output layout.")
    domain, adaptation = DOMAIN_STUDY.name, ADAPTATION_STUDY.name
    *first, last = DOMAIN_STUDY.levels
    p.add_argument("--benchmark", default=domain, help=f"{domain} (default) or {adaptation}")
    p.add_argument("--level", default=None, help=f"{domain}: {', '.join(first)} or {last}; {adaptation}: all")
    p.add_argument("--base", required=True)
    p.add_argument("--method", default="lora")
    p.add_argument("--preset", default=None, help="default: the benchmark's own preset")
    p.add_argument("--model-type", default="auto")
    p.add_argument("--out", "--output", dest="out", required=True,
                   help="output folder (layout: see the module docstring)")
    p.add_argument("--data-dir", "--data_dir", dest="data_dir", help="local mirror (task metadata data_dir) for training and evaluation")
    p.add_argument("--metadata", default="{}", help="task metadata JSON for both finetune and lm_eval")
    p.add_argument("--sources", help="comma list of source domains (default: all of the level)")
    p.add_argument("--targets", help="comma list of target domains (default: all of the level)")
    p.add_argument("--include-base", action="store_true", help="also evaluate the base model (zero-shot row)")
    p.add_argument("--limit", type=int, help="lm_eval --limit per target task")
    p.add_argument("--batch-size", default="auto", help="lm_eval --batch_size")
    p.add_argument("--no-log-samples", action="store_true", help="do not pass --log_samples to lm_eval")
    p.add_argument("--finetune-args", default="", help="extra arguments for python -m finetune")
    p.add_argument("--lm-eval-args", default="", help="extra arguments for lm_eval")
    p.add_argument("--model-args-extra", default="", help="extra lm_eval --model_args (e.g. dtype=bfloat16)")
    p.add_argument("--launcher", default="", help='prefix for training, e.g. "accelerate launch --config_file X"')
    p.add_argument("--force", action="store_true", help="retrain and re-evaluate everything")
    p.add_argument("--dry-run", action="store_true", help="print the commands and the layout, run nothing")
    return p


def run(argv: list[str] | None = None) -> dict:
    """Plan (``--dry-run``) or run the loop; returns the manifest."""
    a = build_parser().parse_args(argv)
    fields = {f.name for f in dataclasses.fields(TrainPlan)} - {"metadata"}
    plan = TrainPlan(metadata=parse_metadata(a.metadata, "cross_domain_train"),
                     **{k: v for k, v in vars(a).items() if k in fields})
    try:
        return run_cross_domain_train(plan)
    except CrossDomainTrainError as exc:
        raise SystemExit(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0
