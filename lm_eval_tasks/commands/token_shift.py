"""``domsum token-shift``: token distribution shift (KL, shift rate) between two settings.

Flags -> :func:`lm_eval_tasks.analysis.token_shift.config_from_flags` and
:func:`~lm_eval_tasks.analysis.token_shift.flag_vocabulary` ->
:func:`~lm_eval_tasks.analysis.token_shift.run_shift`; the method, the two modes and the
statistics are described there (its docstring is this command's ``--help``; see
``docs/cli.md``).
"""

from __future__ import annotations

import argparse
import logging
import sys

from lm_eval_tasks.analysis import token_shift as runner
from lm_eval_tasks.analysis.token_shift import (
    DEFAULT_TURN_MARKER,
    SUMMARY_SOURCES,
    FlagError,
    config_from_flags,
    flag_vocabulary,
    run_shift,
)


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
    g.add_argument("--n-samples", dest="sample_count", type=int,
                   help="documents drawn from them and averaged (setting token_shift_samples; default 10, "
                        "the paper's Table 4; 0 = all)")
    g.add_argument("--seed", type=int, help="seed of the draw (setting sample_seed; default 42)")
    g.add_argument("--positions", choices=("paper", "release"),
                   help="positions scored (setting token_shift_positions): paper = every summary position "
                        "(default), release = the release's nouns, adjectives and verbs")
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


def main(argv: list[str] | None = None) -> int:
    from custom_metrics.families.dvo import VocabularyError
    from lm_eval_tasks.catalog import UnknownTask

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    p = _parser()
    args = p.parse_args(argv)
    try:
        cfg = config_from_flags(vars(args))
        vocabulary, cfg.vocab = flag_vocabulary(args.samples, args.vocabulary, args.task, args.vocab_dir,
                                                args.no_vocab)
    except FlagError as exc:
        p.error(str(exc))
    except (VocabularyError, UnknownTask) as exc:
        p.exit(2, f"error: {exc}\n")
    try:
        text = run_shift(cfg, vocabulary, args.csv, args.out, progress=False if args.no_progress else None)
    except ValueError as exc:  # SamplesError, TokenizerMismatchError, bad settings
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(text)
    return 0
