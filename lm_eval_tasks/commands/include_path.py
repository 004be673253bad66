"""``domsum include-path``: the folder to give ``lm_eval --include_path``.

Same output as ``python -m lm_eval_tasks``, so
``lm_eval --include_path "$(domsum include-path)" ...`` works from any directory.
"""

from __future__ import annotations

import argparse

from lm_eval_tasks import include_path


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="domsum include-path", description=__doc__.split("\n\n")[0]).parse_args(argv)
    print(include_path())
    return 0
