"""The task folders a harness run indexes: the suite's, and the user's from ``--include_path``.

Why a module of its own: ``domsum run`` and the harness adapter both read the folders
from the command line before the harness parses it (lm-eval's CLI keeps only the last
``--include_path``), and reading them needs no ``lm_eval``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def index_paths(folders: Sequence[str]) -> list[str]:
    """The suite's folder and the user's, each once."""
    from lm_eval_tasks import include_path

    seen: dict[str, str] = {}
    for folder in (include_path(), *folders):
        seen.setdefault(str(Path(folder).expanduser().resolve()), str(Path(folder).expanduser()))
    return list(seen.values())


def split_include_paths(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the arguments without ``--include_path``, the folders it gave), each of its values
    split at ``os.pathsep`` (lm-eval's CLI keeps only the last one given)."""
    rest: list[str] = []
    folders: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg in ("--include-path", "--include_path"):
            value = next(args, "")
        elif arg.startswith(("--include_path=", "--include-path=")):
            value = arg.split("=", 1)[1]
        else:
            rest.append(arg)
            continue
        folders += [f for f in value.split(os.pathsep) if f.strip()]
    return rest, folders


__all__ = ["index_paths", "split_include_paths"]
