"""Process and file plumbing shared by the ``domsum`` commands and the library behind them.

Why a module of its own: the library functions that run the harness as a process
(``domsum demo``, ``change-amplitude``, ``cross-domain-train``) and the commands that
write outputs need the same command line and child environment, and the library must not
import the command layer. Atomic writes are :mod:`lm_eval_tasks.outputs`. Nothing here imports ``lm_eval``: the
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


__all__ = ["HARNESS_CLI", "PACKAGE_PARENT", "subprocess_env"]
