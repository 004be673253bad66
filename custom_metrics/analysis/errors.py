"""Typed errors of the analysis library.

Why typed: analysis functions are called from commands and notebooks alike; they raise
these instead of ``SystemExit``, and only the ``domsum`` command that called them turns
one into a one-line message and an exit code. Each message names the file, rows or
flag at fault.
"""

from __future__ import annotations

from custom_metrics.errors import SuiteError


class AnalysisError(SuiteError, ValueError):
    """Input an analysis cannot use; the message says which file, column or flag."""


class MetaEvalError(AnalysisError):
    """Input meta-evaluation cannot use (a missing column, a repeated pair, a score that is
    not a number); the message names the file, rows or flag. Library code raises it; the
    ``domsum meta-eval`` command prints it as one line and exits 2."""


__all__ = ["AnalysisError", "MetaEvalError"]
