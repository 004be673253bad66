"""What ``domsum run`` checks before the harness builds a model.

Why a step of its own: lm-eval 0.4.13 builds the model before the tasks, so a mistyped
task name, a forgotten ``--include_path`` or a wrong ``data_dir`` surfaced only after
the model had loaded (minutes for an 8B model), and then as a 20-line traceback. Here
the requested names are looked up in the suite's catalogue, the user's task folders
and, only when a name needs them, the harness's own tasks; every suite or user task's
data is checked, and a harness task's hub dataset is looked up in the local cache
offline, or the hub probed (:mod:`lm_eval_tasks.preparation.check`). Each problem is one line.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from custom_metrics.errors import SuiteError


class PreflightError(SuiteError, ValueError):
    """A requested task found nowhere, or data that cannot be read; the message is the
    whole answer (one line per problem)."""


@dataclass
class Request:
    """The parts of a harness command line the checks need (the line itself is unchanged)."""

    tasks: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    #: what the data check found that does not stop the run (records left out), one line each
    notes: list[str] = field(default_factory=list)


def requested(argv: Sequence[str]) -> Request:
    """``--tasks`` names and the ``--metadata`` object of the harness's arguments."""
    peek = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    peek.add_argument("--tasks", "-t", default="")
    peek.add_argument("--metadata", default=None)
    known, _ = peek.parse_known_args(list(argv))
    try:
        metadata = json.loads(known.metadata) if known.metadata else {}
    except json.JSONDecodeError:
        metadata = {}  # the harness reports it, with its own message
    names = [n.strip() for n in str(known.tasks).split(",") if n.strip()]
    return Request(names, metadata if isinstance(metadata, dict) else {})


def check(request: Request, folders: Sequence[str]) -> bool:
    """Whether the harness's own task index is needed; :class:`PreflightError` for a name
    found nowhere or data that cannot be read."""
    from lm_eval_tasks import catalog
    from lm_eval_tasks.preparation.check import data_problems, harness_data_problem
    from lm_eval_tasks.catalog import register_folders
    from lm_eval_tasks.harness import harness_task_configs, needs_harness_tasks

    register_folders(folders)
    include_defaults = needs_harness_tasks(request.tasks, folders)
    known = [n for n in request.tasks if n in catalog.all_tasks() or n in catalog.all_groups()]
    problems = list(dict.fromkeys(p for spec in map(catalog.lookup, catalog.expand(known))
                                  for p in data_problems(spec, request.metadata, request.notes)))
    if include_defaults:  # the harness's own tasks load their data after the model too
        problems += [p for name, tasks in harness_task_configs(request.tasks, folders).items()
                     if (p := harness_data_problem(name, tasks))]
    if problems:
        raise PreflightError("stopping before the model loads:\n  - " + "\n  - ".join(problems))
    return include_defaults


__all__ = ["PreflightError", "Request", "check", "requested"]
