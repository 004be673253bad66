"""Process and file plumbing shared by the ``domsum`` commands and the library behind them.

Why a module of its own: the library functions that run the harness as a process
(``domsum demo``, ``change-amplitude``, ``cross-domain-train``) and the commands that
write outputs need the same command line, child environment and atomic writer, and
the library must not import the command layer (:mod:`lm_eval_tasks.commands`
re-exports these names for its modules). Nothing here imports ``lm_eval``: the
harness runs as a child process.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: the command line that starts the harness for suite tasks: ``domsum run`` (``lm_eval``'s
#: CLI, task index limited to the suite: :func:`lm_eval_tasks.harness.run_cli`)
HARNESS_CLI: tuple[str, ...] = (sys.executable, "-m", "lm_eval_tasks.cli", "run")

#: the folder holding the ``lm_eval_tasks`` package (the checkout, or site-packages)
PACKAGE_PARENT = Path(__file__).resolve().parent.parent


def subprocess_env() -> dict[str, str]:
    """This process's environment with the package importable in child processes."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PACKAGE_PARENT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def write_atomically(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all: a temporary file beside it, then a rename, so
    an interrupted command never leaves a half-written output or mirror split."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


__all__ = ["HARNESS_CLI", "PACKAGE_PARENT", "subprocess_env", "write_atomically"]
