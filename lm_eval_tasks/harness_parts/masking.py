"""Keys in ``--model_args`` kept out of what lm-eval writes and prints once a run ends.

Why a hook of its own: an API model's URL may carry a key
(``base_url=https://user:KEY@host/v1/chat/completions`` or ``...?api_key=KEY``), and
lm-eval 0.4.13 copies ``--model_args`` as given into the results JSON
(``config.model_args``), into every task's configuration (it merges them into the task
metadata) and into the summary line it prints after the run. The suite's own task
configurations are masked where they are dumped (``SuiteTask.dump_config``), but the
results' ``config`` block and the summary line are built by ``simple_evaluate`` and the
CLI from the very ``model_args`` dict they were given, *after* ``evaluate`` returns. The
model was built from that dict before ``evaluate`` and keeps its own copy of the URL,
so masking the dict's values in place when ``evaluate`` returns hides the key from both
without touching the model. The configurations ``evaluate`` returns (a harness task run
beside the suite's included) are masked there too. What is masked, and how, is
:mod:`custom_metrics.secrets`.

Log lines are masked elsewhere: plain ``lm_eval`` logs ``--model_args`` at INFO when it
builds the model, before it has loaded any task, so the installation writes a start-up
line that masks every log record of an ``lm_eval`` process from its start
(:mod:`lm_eval_tasks.build_hooks`); ``domsum run`` does the same first thing.
Nothing here imports ``lm_eval``.
"""

from __future__ import annotations

import functools
import sys
from types import FrameType
from typing import Any

from custom_metrics import secrets


def mask_in_place(args: Any) -> None:
    """Replace each value of the dict ``args`` that holds a secret by its masked form."""
    if not isinstance(args, dict):
        return
    for key, value in secrets.mask_obj(dict(args)).items():
        if value != args[key]:
            args[key] = value


def _callers_model_args(frame: FrameType | None) -> Any:
    """``model_args`` as ``simple_evaluate`` (the nearest caller of that name) holds it."""
    while frame is not None:
        if frame.f_code.co_name == "simple_evaluate" and "model_args" in frame.f_locals:
            return frame.f_locals["model_args"]
        frame = frame.f_back
    return None


def install(evaluator: Any) -> None:
    """Mask ``--model_args`` and the returned task configurations whenever lm-eval's
    ``evaluator.evaluate`` returns (once per process; see the module docstring)."""
    evaluate = evaluator.evaluate
    if getattr(evaluate, "suite_masking", False):
        return

    @functools.wraps(evaluate)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            results = evaluate(*args, **kwargs)
        finally:
            mask_in_place(_callers_model_args(sys._getframe(1)))
        if isinstance(results, dict) and isinstance(results.get("configs"), dict):
            results["configs"] = secrets.mask_obj(results["configs"])
        return results

    run.suite_masking = True  # type: ignore[attr-defined]
    evaluator.evaluate = run


__all__ = ["install", "mask_in_place"]
