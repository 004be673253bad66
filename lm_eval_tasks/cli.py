"""``domsum``: the suite's one command, with a subcommand per tool.

Follows the harness's ``lm-eval run|ls|validate`` layout. This module holds no
logic: it picks the subcommand and hands the remaining arguments to that command
module's ``main(argv)`` (``domsum COMMAND --help`` is the command's own help), so
every command also runs as a function from Python and from tests.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: subcommand -> (module with ``main(argv)``, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "include-path": ("lm_eval_tasks.commands.include_path",
                     "print the folder to give lm_eval --include_path"),
    "run": ("lm_eval_tasks.commands.run",
            "lm_eval's own CLI for suite tasks, indexing only the suite's tasks (faster start)"),
    "tasks": ("lm_eval_tasks.commands.tasks",
              "list the catalogue's tasks and groups (--write-yaml regenerates the YAMLs)"),
    "prepare-data": ("lm_eval_tasks.commands.prepare_data",
                     "build the local data mirror from the DomainSum release or the hub"),
    "build-vocab": ("lm_eval_tasks.commands.build_vocab", "build the domain vocabularies DVO reads"),
    "domain-stats": ("lm_eval_tasks.commands.domain_stats",
                     "per-domain corpus statistics, radar charts, vocabulary overlap"),
    "rescore": ("lm_eval_tasks.commands.rescore",
                "re-score --log_samples files with suite metrics, without regenerating"),
    "token-shift": ("lm_eval_tasks.commands.token_shift",
                    "token distribution shift (KL, shift rate) between two settings"),
    "correlate": ("lm_eval_tasks.commands.correlate",
                  "correlate domain measures with model performance"),
    "cross-domain": ("lm_eval_tasks.commands.cross_domain",
                     "cross-domain matrices and heat maps from result folders"),
    "cross-domain-train": ("lm_eval_tasks.commands.cross_domain_train",
                           "fine-tune on each source domain of a level, evaluate on all"),
    "report": ("lm_eval_tasks.commands.report",
               "the papers' tables, paired significance tests and figures (HTML) from result folders"),
    "meta-eval": ("lm_eval_tasks.commands.meta_eval",
                  "correlate summary metrics with human judgments"),
    "change-amplitude": ("lm_eval_tasks.commands.change_amplitude",
                         "CCSBench attribute dependency: flip one control, regenerate, compare"),
    "demo": ("lm_eval_tasks.commands.demo", "offline demo: a tiny model trained on the sample data, through lm_eval, with its report"),
    "finetune": ("finetune.cli", "fine-tune a model on a suite task (LoRA or full)"),
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: the subcommand names and their one-line help."""
    ap = argparse.ArgumentParser(
        prog="domsum", description="The domain-summarization suite's tools, one subcommand each.",
        epilog="`domsum COMMAND --help` shows a command's own options.")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, text) in COMMANDS.items():
        sub.add_parser(name, help=text, description=text, add_help=False)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv`` (default: the command line) to the subcommand's ``main``.

    A :class:`~custom_metrics.errors.SuiteError` a command lets through (its message
    names the file, line, task or setting) becomes one line on stderr and exit status 2,
    never a traceback: the library raises, only this layer prints.
    """
    from custom_metrics.errors import SuiteError

    args = list(sys.argv[1:] if argv is None else argv)
    ns = build_parser().parse_args(args[:1])
    try:
        result = importlib.import_module(COMMANDS[ns.command][0]).main(args[1:])
        sys.stdout.flush()  # inside the try: a pipe closed early fails here, not at exit
    except SuiteError as exc:
        text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"domsum {ns.command}: error: {text}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `domsum tasks | head`: the reader left; not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
