"""The ``domsum`` subcommands, one module each, every one with ``main(argv) -> int``.

A command parses flags, resolves settings, calls one library function and maps its
errors to a message and an exit status; nothing here imports ``lm_eval`` (the harness
runs as a process, :data:`lm_eval_tasks.runtime.HARNESS_CLI`). :data:`COMMANDS` is the
table ``domsum`` dispatches from and ``docs/cli.md`` is generated from; the helpers below
are the flag conventions all commands share (``tests/unit/test_cli_flags.py`` checks them):
hyphenated long flags, ``--out``, ``--subsets``, ``--data-dir``, ``--vocabulary``,
``--no-progress``, with older spellings as aliases (:data:`FLAG_ALIASES`), and
``--metadata`` parsing.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

#: subcommand -> (module with ``main(argv)``, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "include-path": ("lm_eval_tasks.commands.include_path",
                     "print the folder to give lm_eval --include_path"),
    "run": ("lm_eval_tasks.commands.run",
            "lm_eval's own CLI for suite tasks, indexing only the suite's tasks (faster start)"),
    "new-task": ("lm_eval_tasks.commands.new_task",
                 "write harness task YAML that evaluates your own domain (docs/own_domain.md)"),
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
    "fm-weights": ("lm_eval_tasks.commands.fm_weights", "fit FM's facet weights to your overall human scores"),
    "rankings": ("lm_eval_tasks.commands.rankings", "expert rankings: top-k shares, pairwise kappa, Kendall's W"),
    "change-amplitude": ("lm_eval_tasks.commands.change_amplitude",
                         "CCSBench attribute dependency: flip one control, regenerate, compare"),
    "demo": ("lm_eval_tasks.commands.demo", "offline demo: a tiny model trained on the sample data, through lm_eval, with its report"),
    "finetune": ("finetune.cli", "fine-tune a model on a suite task (LoRA, prefix tuning or full)"),
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


#: conventional flag -> the older spellings some commands still accept for it, as aliases
#: of the same destination (never as a flag of its own)
FLAG_ALIASES: dict[str, tuple[str, ...]] = {
    "--out": ("--out-dir", "--output", "--output-path", "--output_path", "--output-dir"),
    "--subsets": ("--subset",),
    "--data-dir": ("--data_dir",),
    "--vocabulary": ("--vocab",),
}


def parse_metadata(text: str | None, command: str) -> dict[str, Any]:
    """``--metadata`` JSON as a dict; invalid JSON is a one-line error naming the command."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"{command}: --metadata is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise SystemExit(f"{command}: --metadata must be a JSON object, got {type(value).__name__}")
    from lm_eval_tasks.settings import SettingError, check_metadata

    try:
        check_metadata(value, f"{command} --metadata")
    except SettingError as exc:
        raise SystemExit(f"{command}: error: {exc}") from None
    return value


class _IncludePath(argparse.Action):
    """Each folder given joins the catalogue as it is read (a bad folder or YAML: one line, status 2)."""

    def __call__(self, parser, namespace, value, option_string=None) -> None:
        from custom_metrics.errors import SuiteError
        from lm_eval_tasks.catalog import register_folders
        try:
            register_folders([value])
        except SuiteError as exc:
            parser.exit(2, f"{parser.prog}: error: {exc}\n")
        setattr(namespace, self.dest, [*getattr(namespace, self.dest), value])


def add_include_path(ap: argparse.ArgumentParser) -> None:
    """``--include_path FOLDER`` as ``lm_eval``'s: a folder of task YAMLs (your own, ``domsum new-task``)."""
    ap.add_argument("--include-path", "--include_path", dest="include_path", action=_IncludePath, default=[],
                    metavar="FOLDER", help="a folder of your own task YAMLs (domsum new-task), as lm_eval's "
                                           "--include_path; repeatable (also $DOMSUM_INCLUDE_PATH)")


def with_flags(metadata: Mapping[str, Any] | None, **flags: Any) -> dict[str, Any]:
    """Metadata with the command's explicit flags on top (a flag left unset changes nothing),
    so :func:`lm_eval_tasks.settings.resolve` sees flag > metadata > environment > default."""
    return {**dict(metadata or {}), **{k: v for k, v in flags.items() if v is not None}}


__all__ = ["COMMANDS", "FLAG_ALIASES", "add_include_path", "build_parser", "parse_metadata", "with_flags"]
