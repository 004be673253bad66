"""The suite's one exception base class.

Why one base: library code (metrics, data loading, settings, analysis, fine-tuning)
raises typed errors whose message already names the task, file, line or setting; only
the ``domsum`` command layer turns them into a one-line message and an exit status
(:func:`lm_eval_tasks.cli.main` catches :class:`SuiteError`). A caller from Python
catches every suite error with one ``except SuiteError`` and still sees the specific
class (each also derives from the built-in it refines: ``ValueError`` for bad input,
``RuntimeError`` for a resource that cannot be had, ``KeyError`` for an unknown name).
"""

from __future__ import annotations


class SuiteError(Exception):
    """Base of every error the suite raises on purpose (bad input, missing resource)."""


__all__ = ["SuiteError"]
