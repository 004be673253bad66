"""Command line: ``python -m finetune`` (and ``accelerate launch -m finetune``).

Examples::

    python -m finetune --task domainsum_samsum --base meta-llama/Llama-2-7b-hf \\
        --method lora --preset domainsum --bf16 --gradient-checkpointing --out out/samsum-lora
    python -m finetune --task domainsum_cnndm --base facebook/bart-large --method full \\
        --preset domainsum --out out/cnndm-bart
    python -m finetune --task ccsbench_compositional --base google/flan-t5-large --method prefix \\
        --preset ccsbench --num-virtual-tokens 20 --out out/ccs-prefix
    accelerate launch --config_file finetune/configs/accelerate_ddp.yaml -m finetune \\
        --task adapteval_pubmed --base mistralai/Mistral-7B-v0.1 --method lora --preset adapteval \\
        --train-size 5000 --out out/pubmed-5k

Every flag overrides the preset and the ``--config`` YAML; ``--set KEY=VALUE`` reaches
any configuration key (``python -m finetune --list-keys``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from finetune.config import ConfigError, FinetuneConfig, resolve_config
from finetune.presets import preset_names


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m finetune",
        description="LoRA or prefix tuning (causal LM or seq2seq) and full seq2seq fine-tuning on a "
                    "suite task's train split, with the task's own zero-shot prompt; writes an adapter "
                    "or model directory that lm_eval loads, and a run card beside it. Trained LoRA "
                    "adapters combine with fixed weights: python -m finetune.combine.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("Examples::", 1)[1],
    )
    g = p.add_argument_group("what to train")
    g.add_argument("--task", help="suite task, e.g. domainsum_samsum or adapteval_pubmed")
    g.add_argument("--base", help="base model: hub id or local directory")
    g.add_argument("--method", help="lora (causal or seq2seq), prefix (peft prefix tuning, causal or "
                                    "seq2seq) or full (seq2seq)")
    g.add_argument("--preset", help=f"hyper-parameters from a paper: {', '.join(preset_names())}")
    g.add_argument("--config", help="YAML file of configuration keys (overrides the preset)")
    g.add_argument("--out", "--output", dest="output",
                   help="output directory (adapter or model, run_card.json, checkpoints/)")
    g.add_argument("--model-type", dest="model_type", help="auto (default), causal or seq2seq")
    g.add_argument("--metadata", help="task metadata JSON, as lm_eval --metadata (e.g. prompt budgets)")
    g.add_argument("--data-dir", "--data_dir", dest="data_dir", help="local data mirror (metadata data_dir)")
    g.add_argument("--baseline", metavar="DIR",
                   help="the lm_eval --output_path of the base model's run of the task: its settings (--metadata: "
                        "BERTScore encoder, budgets, data_dir) are taken for training and the printed evaluation "
                        "command, so the two runs compare")

    g = p.add_argument_group("data")
    g.add_argument("--train-size", dest="train_size", type=int,
                   help="seeded subset of N train examples that fit (AdaptEval: 1000, 5000, 10000)")
    g.add_argument("--limit", type=int, help="smoke runs: at most N train (and validation) examples")
    g.add_argument("--eval-limit", dest="eval_limit", type=int, help="at most N validation examples")
    g.add_argument("--max-length", dest="max_length", type=int,
                   help="token window (causal: prompt + summary; seq2seq: source)")
    g.add_argument("--max-target-length", dest="max_target_length", type=int, help="seq2seq label tokens")
    g.add_argument("--overlong", help="drop (default) or truncate examples over the window")
    g.add_argument("--packing", action=argparse.BooleanOptionalAction, default=None,
                   help="pack causal examples into full windows (off by default)")

    g = p.add_argument_group("method")
    g.add_argument("--lora-r", dest="lora_r", type=int)
    g.add_argument("--lora-alpha", dest="lora_alpha", type=int)
    g.add_argument("--lora-dropout", dest="lora_dropout", type=float)
    g.add_argument("--target-modules", dest="lora_target_modules",
                   help="auto (default), all-linear, or NAME[,NAME...]")
    g.add_argument("--load-in-8bit", dest="load_in_8bit", nargs="?", const="true",
                   help="8-bit base weights: true, false or auto (needs bitsandbytes + CUDA)")
    g.add_argument("--load-in-4bit", dest="load_in_4bit", action="store_const", const=True)
    g.add_argument("--merge", action="store_const", const=True,
                   help="LoRA: also save the merged model under OUTPUT/merged")
    g.add_argument("--num-virtual-tokens", dest="num_virtual_tokens", type=int,
                   help="prefix: trainable key/value positions per layer (default 20)")

    g = p.add_argument_group("optimisation")
    g.add_argument("--lr", "--learning-rate", dest="learning_rate", type=float)
    g.add_argument("--scheduler", dest="lr_scheduler", help="constant, constant_with_warmup, linear, cosine")
    g.add_argument("--warmup-ratio", dest="warmup_ratio", type=float)
    g.add_argument("--weight-decay", dest="weight_decay", type=float)
    g.add_argument("--optim", help="a transformers optimizer name, e.g. adamw_torch, paged_adamw_32bit")
    g.add_argument("--beta2", dest="adam_beta2", type=float)
    g.add_argument("--batch-size", dest="batch_size", type=int, help="per device")
    g.add_argument("--eval-batch-size", dest="eval_batch_size", type=int)
    g.add_argument("--grad-accum", dest="grad_accum", type=int, help="gradient accumulation steps")
    g.add_argument("--epochs", type=float)
    g.add_argument("--max-steps", dest="max_steps", type=int, help="stop after N optimizer steps")
    g.add_argument("--bf16", dest="precision", action="store_const", const="bf16")
    g.add_argument("--fp16", dest="precision", action="store_const", const="fp16")
    g.add_argument("--fp32", dest="precision", action="store_const", const="fp32")
    g.add_argument("--gradient-checkpointing", dest="gradient_checkpointing",
                   action=argparse.BooleanOptionalAction, default=None)
    g.add_argument("--seed", type=int)

    g = p.add_argument_group("evaluation, checkpoints, logging")
    g.add_argument("--eval-strategy", dest="eval_strategy", help="epoch (default), steps or no")
    g.add_argument("--eval-steps", dest="eval_steps", type=int)
    g.add_argument("--best-by-validation", dest="best_by_validation",
                   action=argparse.BooleanOptionalAction, default=None)
    g.add_argument("--early-stopping-patience", dest="early_stopping_patience", type=int)
    g.add_argument("--save-steps", dest="save_steps", type=int, help="checkpoint every N steps")
    g.add_argument("--save-total-limit", dest="save_total_limit", type=int)
    g.add_argument("--keep-checkpoints", dest="keep_checkpoints", action="store_const", const=True,
                   help="keep OUTPUT/checkpoints after the run finishes")
    g.add_argument("--logging-steps", dest="logging_steps", type=int)
    g.add_argument("--report-to", dest="report_to", help="auto (default), none, tensorboard, wandb")
    g.add_argument("--resume", nargs="?", const=True, default=None, metavar="CHECKPOINT",
                   help="continue from the last checkpoint in OUTPUT/checkpoints (or the one given)")
    g.add_argument("--overwrite", action="store_true", help="replace an earlier run in OUTPUT")
    g.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="set any configuration key (repeatable)")
    g.add_argument("--print-config", action="store_true", help="print the resolved configuration and exit")
    g.add_argument("--list-keys", action="store_true", help="list the configuration keys and exit")
    g.add_argument("--no-progress", action="store_true", help="no progress bars (as DOMSUM_PROGRESS=0)")
    return p


NOT_CONFIG = {"config", "data_dir", "sets", "resume", "overwrite", "print_config", "list_keys", "no_progress"}


def config_from_args(ns: argparse.Namespace) -> FinetuneConfig:
    overrides: dict[str, Any] = {k: v for k, v in vars(ns).items() if k not in NOT_CONFIG and v is not None}
    if overrides.get("metadata") is not None:
        try:
            overrides["metadata"] = json.loads(overrides["metadata"])
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--metadata is not valid JSON: {exc}") from None
    for item in ns.sets:
        if "=" not in item:
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        overrides[k.strip().replace("-", "_")] = v
    if ns.data_dir:
        meta = dict(overrides.get("metadata") or {})
        meta["data_dir"] = ns.data_dir
        overrides["metadata"] = meta
    return resolve_config(overrides, ns.config)


def main(argv: list[str] | None = None) -> dict | None:
    """Parse, resolve, train; clear one-line errors (exit status 2) for bad input."""
    from lm_eval_tasks.benchmarks.own.configs import RecordError
    from lm_eval_tasks.catalog import register_folders
    from lm_eval_tasks.data.loader import DataError

    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    ns = parser.parse_args(args)
    if ns.no_progress:  # the trainer reads the suite's one progress switch
        os.environ["DOMSUM_PROGRESS"] = "0"
    if ns.list_keys:
        print("\n".join(FinetuneConfig.field_names()))
        return None
    try:
        register_folders()  # the user's task folders ($DOMSUM_INCLUDE_PATH): --task may name one of theirs
        cfg = config_from_args(ns)
        if ns.print_config:
            print(json.dumps(cfg.to_dict(), indent=2))
            return None
        from finetune.train import run

        return run(cfg, resume=ns.resume, overwrite=ns.overwrite, argv=["python", "-m", "finetune", *args])
    except (ConfigError, DataError, RecordError) as exc:
        parser.exit(2, f"finetune: error: {exc}\n")
