"""The ``domsum`` subcommands, one module each, every one with ``main(argv) -> int``.

Why a package of the library and not loose scripts: the commands need the task
catalogue and the settings resolver, and an installed wheel must run them from any
directory (``domsum <command>``, see :mod:`lm_eval_tasks.cli`). Nothing here imports
``lm_eval``; commands that run the harness start it as a process (:data:`HARNESS_CLI`:
the harness's own CLI indexing only the suite's tasks, see ``domsum run``).

The helpers below are what several commands share, and nothing but commands uses:
the flag conventions, ``--metadata`` parsing, and the folder to put on ``PYTHONPATH``
for harness subprocesses. Logic the library needs lives in the library (the task-name
lookup in :func:`lm_eval_tasks.catalog.task_target`, atomic writes in
:mod:`lm_eval_tasks.outputs`).

Flags mean the same in every command (``tests/test_cli_flags.py`` checks all of them):
long flags are hyphenated, with underscore spellings only as aliases; where a command
writes is ``--out``; subsets are ``--subsets`` (comma-separated); the data mirror is
``--data-dir``; a vocabulary file is ``--vocabulary``; and a command that draws
progress bars (always on stderr, since stdout carries tables and JSON) turns them off
with ``--no-progress`` (``DOMSUM_PROGRESS=0`` turns off every bar). Older spellings
stay accepted as aliases, listed in :data:`FLAG_ALIASES`::

    domsum rescore samples_adapteval_pubmed_<date>.jsonl --out out/rescored --no-progress
    domsum build-vocab --benchmark adapteval --subsets arxiv,pubmed --data-dir ~/domsum_data
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: the command line that starts the harness for suite tasks: ``domsum run`` (``lm_eval``'s
#: CLI, task index limited to the suite: :func:`lm_eval_tasks.harness.run_cli`)
HARNESS_CLI: tuple[str, ...] = (sys.executable, "-m", "lm_eval_tasks.cli", "run")

#: conventional flag -> the older spellings some commands still accept for it, as aliases
#: of the same destination (never as a flag of its own)
FLAG_ALIASES: dict[str, tuple[str, ...]] = {
    "--out": ("--out-dir", "--output", "--output-path", "--output_path", "--output-dir"),
    "--subsets": ("--subset",),
    "--data-dir": ("--data_dir",),
    "--vocabulary": ("--vocab",),
}

#: the folder holding the ``lm_eval_tasks`` package (the checkout, or site-packages)
PACKAGE_PARENT = Path(__file__).resolve().parent.parent.parent


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


def with_flags(metadata: Mapping[str, Any] | None, **flags: Any) -> dict[str, Any]:
    """Metadata with the command's explicit flags on top (a flag left unset changes nothing),
    so :func:`lm_eval_tasks.settings.resolve` sees flag > metadata > environment > default."""
    return {**dict(metadata or {}), **{k: v for k, v in flags.items() if v is not None}}


def subprocess_env() -> dict[str, str]:
    """This process's environment with the package importable in child processes."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PACKAGE_PARENT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


__all__ = ["FLAG_ALIASES", "HARNESS_CLI", "PACKAGE_PARENT", "parse_metadata", "subprocess_env", "with_flags"]
