"""``domsum run``: the harness's own ``lm_eval`` CLI for suite tasks, without indexing the harness's tasks.

Same flags, outputs and results as ``lm_eval`` (``domsum run --help`` is its help),
plus ``--no-progress``; ``--include_path`` defaults to the suite's folder. The difference: lm-eval indexes the
YAML of all its own 14,755 tasks at every start (about 4.5 s on two cores) and this
command indexes the suite's alone, which matters to every command that starts the
harness more than once (the demo, ``change-amplitude``, ``cross-domain-train``).

    domsum run --model hf --model_args pretrained=gpt2 --tasks domainsum_genre --log_samples --output_path out/runs
"""

from __future__ import annotations

import argparse
import os


def main(argv: list[str] | None = None) -> int:
    # one option of its own; every other argument is the harness's, passed through unchanged
    ap = argparse.ArgumentParser(prog="domsum run", add_help=False, allow_abbrev=False)
    ap.add_argument("--no-progress", action="store_true",
                    help="no progress bars: the suite's (DOMSUM_PROGRESS=0) nor the harness's (TQDM_DISABLE=1)")
    ns, rest = ap.parse_known_args(argv or [])
    if ns.no_progress:
        os.environ.update({"DOMSUM_PROGRESS": "0", "TQDM_DISABLE": "1"})
    from lm_eval_tasks.harness import run_cli

    try:
        run_cli(rest)
    except SystemExit as exc:  # the harness CLI exits through argparse/sys.exit
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0
