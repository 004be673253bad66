"""``domsum run``: the harness's own ``lm_eval`` CLI, with checks before the model loads.

Same flags, outputs and results as ``lm_eval`` (``domsum run --help`` is its help),
plus ``--no-progress``. What it adds:

* ``--include_path`` may be given several times: the suite's folder is always indexed,
  each given folder too (your own tasks, ``domsum new-task``).
* The harness's own built-in tasks are indexed only when a requested name needs them
  (lm-eval indexes all 14,755 of them at every start, about 4.5 s on two cores), so a
  suite task and a harness task run in one call.
* A task found nowhere is one line with the close names; every requested suite or user
  task's data (missing split, wrong ``data_dir``, unreachable hub) is checked before
  the model loads.

    domsum run --model hf --model_args pretrained=gpt2 --tasks domainsum_genre --log_samples --output_path out/runs
"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    # options of its own; every other argument is the harness's, passed through unchanged
    ap = argparse.ArgumentParser(prog="domsum run", add_help=False, allow_abbrev=False)
    ap.add_argument("--no-progress", action="store_true",
                    help="no progress bars: the suite's (DOMSUM_PROGRESS=0) nor the harness's (TQDM_DISABLE=1)")
    ns, rest = ap.parse_known_args(argv or [])
    if ns.no_progress:
        os.environ.update({"DOMSUM_PROGRESS": "0", "TQDM_DISABLE": "1"})
    from custom_metrics.errors import SuiteError
    from lm_eval_tasks import preflight
    from lm_eval_tasks.harness import run_cli, split_include_paths

    rest, folders = split_include_paths(rest)
    request = preflight.requested(rest)
    try:
        include_defaults = preflight.check(request, folders) if request.tasks else False
    except SuiteError as exc:
        print(f"domsum run: error: {exc}", file=sys.stderr)
        return 2
    for note in dict.fromkeys(request.notes):  # a file two tasks read is said once
        print(f"domsum run: note: {note}", file=sys.stderr)
    try:
        run_cli(rest, folders, include_defaults)
    except SystemExit as exc:  # the harness CLI exits through argparse/sys.exit
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0
