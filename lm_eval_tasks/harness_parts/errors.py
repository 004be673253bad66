"""How the suite's errors reach someone running ``lm_eval``: one paragraph, not a traceback.

Why a module of its own: ``lm_eval`` lets any exception reach the interpreter; the
suite's input errors already name the task, file or setting to change, so the harness
adapter installs this hook when it is imported.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from custom_metrics.errors import SuiteError
from lm_eval_tasks import settings
from lm_eval_tasks.harness_parts import resume
from lm_eval_tasks.harness_parts.generations import SAVED_GENERATIONS


class ScorerUnavailableError(SuiteError, RuntimeError):
    """Raised before generation when a requested task's scorer cannot be had."""


def _user_errors() -> tuple[type[BaseException], ...]:
    from lm_eval_tasks.benchmarks.own.configs import RecordError
    from lm_eval_tasks.data.loader import DataError

    return (DataError, RecordError, settings.SettingError, ScorerUnavailableError)


def _interrupted(exc: KeyboardInterrupt) -> str:
    """The one line an interrupted run ends with: what was kept, and how to go on."""
    parts = []
    if SAVED_GENERATIONS:
        parts.append("the generations were saved before judging: " + ", ".join(SAVED_GENERATIONS)
                     + ". Finish the scoring with `domsum rescore FILE` (the judge cache holds every answer "
                     "already paid for)")
    if resume.interrupted_line():
        parts.append(str(resume.interrupted_line()))
    return ("terminated" if isinstance(exc, resume.Terminated) else "interrupted") + "; " + "; ".join(parts) + "."


def _suite_excepthook(previous: Callable) -> Callable:
    """An excepthook that prints the suite's own input errors as one paragraph.

    Why: ``lm_eval`` lets any exception reach the interpreter, which prints a
    traceback; for a bad setting, a missing file or a prompt that cannot fit the
    model, the message already names the task, the file or the setting to change, and
    a traceback only buries it. Every other exception keeps its traceback.
    """
    def hook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        if isinstance(exc, _user_errors()):
            sys.stderr.write(f"error: {exc}\n")
            return
        if isinstance(exc, KeyboardInterrupt):
            if SAVED_GENERATIONS or resume.interrupted_line():
                sys.stderr.write(_interrupted(exc) + "\n")
                sys.stderr.flush()
            else:
                previous(kind, exc, tb)
            resume.exit_after(exc)  # SIGTERM ends the process as SIGTERM would have
            return
        previous(kind, exc, tb)

    hook.suite_hook = True  # type: ignore[attr-defined]
    return hook


def install_excepthook() -> None:
    """Put the suite's hook in front of the current one (once per process)."""
    if not getattr(sys.excepthook, "suite_hook", False):
        sys.excepthook = _suite_excepthook(sys.excepthook)


__all__ = ["ScorerUnavailableError", "install_excepthook"]
