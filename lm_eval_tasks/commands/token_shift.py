"""``domsum token-shift``: token distribution shift (KL, shift rate) between two settings.

Flags -> :class:`lm_eval_tasks.analysis.token_shift.ShiftConfig` ->
:func:`lm_eval_tasks.analysis.token_shift.compute_shift`; the method, the two modes and
the statistics are described there (and in ``domsum token-shift --help``).

    domsum token-shift --samples out/.../samples_adapteval_pubmed_<date>.jsonl \\
        --base meta-llama/Llama-2-7b-hf --adapted-peft out/lora_pubmed \\
        --dtype bfloat16 --out shift.json --csv shift.csv
    domsum token-shift --mode prompt --model meta-llama/Llama-2-7b-chat-hf \\
        --samples samples_adapteval_pubmed_2shot_<date>.jsonl --rebuild-zero-shot
"""

from __future__ import annotations

import argparse
import logging
import sys

from lm_eval_tasks.analysis import token_shift as runner
from lm_eval_tasks.analysis.token_shift import (
    DEFAULT_TURN_MARKER,
    SUMMARY_SOURCES,
    ModelSpec,
    ShiftConfig,
    compute_shift,
    format_summary,
    task_vocabulary,
    write_result,
)

log = logging.getLogger("token_shift")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="domsum token-shift", description=runner.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--samples", required=True, help="lm-eval --log_samples JSONL of the adapted run")
    p.add_argument("--mode", choices=("model", "prompt"), default="model")
    g = p.add_argument_group("model vs model")
    g.add_argument("--base", help="base model (hub id or path)")
    g.add_argument("--base-peft", help="PEFT adapter on the base model")
    g.add_argument("--base-tokenizer", help="tokenizer of the base model (default: its own)")
    g.add_argument("--adapted", help="adapted model (default: --base)")
    g.add_argument("--adapted-peft", help="PEFT adapter on the adapted model")
    g.add_argument("--adapted-tokenizer", help="tokenizer of the adapted model (default: its own)")
    g = p.add_argument_group("prompt vs prompt")
    g.add_argument("--model", help="the one model (hub id or path)")
    g.add_argument("--peft", help="PEFT adapter on it")
    g.add_argument("--base-samples", help="samples file of the base-prompt (zero-shot) run, matched by doc_id")
    g.add_argument("--rebuild-zero-shot", action="store_true",
                   help="base prompt = the samples' prompt without its demonstrations")
    g.add_argument("--turn-marker", default=DEFAULT_TURN_MARKER,
                   help=f"text that starts each turn (default: {DEFAULT_TURN_MARKER!r})")
    g = p.add_argument_group("data")
    g.add_argument("--summary", choices=SUMMARY_SOURCES, default="generated",
                   help="which summary to read: the generation (resps, default), after filters, or the reference")
    g.add_argument("--filter", help="use the sample lines of this filter (default: the first per doc_id)")
    g.add_argument("--limit", type=int, help="only the first N documents")
    g.add_argument("--vocabulary", "--vocab", dest="vocabulary",
                   help="domain vocabulary file (default: the task's, see --task)")
    g.add_argument("--task", help="task name for the vocabulary (default: from the samples file name)")
    g.add_argument("--vocab-dir", help="vocabulary root (default: $DOMSUM_VOCAB_DIR, ~/.cache/domsum/vocab)")
    g.add_argument("--no-vocab", action="store_true", help="skip the domain-vocabulary statistics")
    g = p.add_argument_group("run")
    g.add_argument("--dtype", default="auto", help="auto (bf16 on GPU, fp32 on CPU), float32, bfloat16, float16")
    g.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, or balanced (accelerate device_map)")
    g.add_argument("--max-length", type=int, help="context limit (default: the models' own)")
    g.add_argument("--add-bos-token", choices=("auto", "true", "false"), default="auto",
                   help="special tokens on the prompt (default: as lm-eval, the tokenizer's default)")
    g.add_argument("--trust-remote-code", action="store_true")
    g = p.add_argument_group("output")
    g.add_argument("--out", "--output", dest="out",
                   help="JSON file: config, overall, top shifted tokens, per-document rows")
    g.add_argument("--csv", help="CSV file of per-document rows (streamed)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar (stderr)")
    return p


def config_from_args(args: argparse.Namespace, p: argparse.ArgumentParser) -> ShiftConfig:
    if args.mode == "model":
        if args.model or args.peft:
            p.error("--model/--peft are for --mode prompt; use --base/--adapted here")
        if not args.base:
            p.error("--mode model needs --base (and --adapted and/or --adapted-peft)")
        base = ModelSpec(args.base, args.base_peft, args.base_tokenizer)
        adapted = ModelSpec(args.adapted or args.base, args.adapted_peft, args.adapted_tokenizer)
        if adapted == base:
            log.warning("base and adapted are the same model: every shift will be 0")
        if args.base_samples or args.rebuild_zero_shot:
            p.error("--base-samples/--rebuild-zero-shot belong to --mode prompt")
    else:
        if args.adapted or args.adapted_peft or args.base_peft:
            p.error("--mode prompt compares two prompts on one model: use --model (and --peft)")
        path = args.model or args.base
        if not path:
            p.error("--mode prompt needs --model")
        if bool(args.base_samples) == bool(args.rebuild_zero_shot):
            p.error("--mode prompt needs exactly one of --base-samples FILE and --rebuild-zero-shot")
        base = ModelSpec(path, args.peft, args.base_tokenizer)
        adapted = None
    if args.limit is not None and args.limit < 0:
        p.error("--limit must be >= 0")
    return ShiftConfig(
        samples=args.samples, mode=args.mode, base=base, adapted=adapted,
        base_samples=args.base_samples, rebuild_zero_shot=args.rebuild_zero_shot,
        turn_marker=args.turn_marker, summary=args.summary, filter=args.filter,
        limit=args.limit, dtype=args.dtype, device=args.device, max_length=args.max_length,
        add_bos={"auto": None, "true": True, "false": False}[args.add_bos_token],
        trust_remote_code=args.trust_remote_code,
    )


def _vocabulary(args: argparse.Namespace, p: argparse.ArgumentParser) -> tuple[list[str] | None, str | None]:
    from custom_metrics.dvo import VocabularyError, load_vocabulary
    from lm_eval_tasks.catalog import UnknownTask

    if args.no_vocab:
        return None, None
    try:
        if args.vocabulary:
            return load_vocabulary(args.vocabulary), args.vocabulary
        found = task_vocabulary(args.samples, args.task, args.vocab_dir)
    except (VocabularyError, UnknownTask) as exc:
        p.exit(2, f"error: {exc}\n")
    if found is None:
        p.error("cannot tell the task from the samples file name: "
                "pass --vocabulary FILE, --task NAME or --no-vocab")
    return found


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    p = _parser()
    args = p.parse_args(argv)
    cfg = config_from_args(args, p)
    vocabulary, cfg.vocab = _vocabulary(args, p)
    try:
        result = compute_shift(cfg, vocabulary, args.csv, progress=False if args.no_progress else None)
    except ValueError as exc:  # SamplesError, TokenizerMismatchError, bad settings
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        write_result(result, args.out)
    print(format_summary(result))
    if args.out:
        print(f"written: {args.out}" + (f", {args.csv}" if args.csv else ""))
    return 0
