"""The task folders a harness run indexes: the suite's, and the user's from ``--include_path``.

Why a module of its own: ``domsum run`` and the harness adapter both read the folders
from the command line before the harness parses it (lm-eval's CLI keeps only the last
``--include_path``), and reading them needs no ``lm_eval``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


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


def index_leaves(index: Mapping[str, Any], name: str) -> list[tuple[str, dict]]:
    """``(task, configuration)`` of every task that ``name`` (a task, group or tag of the
    harness's index, ``TaskManager.task_index``) stands for, as the index read them.

    Why here: the index's entries are plain data (a kind, the YAML's configuration, a tag's
    task names), so walking them needs no ``lm_eval`` import; a group's or tag's members are
    followed through the index, each once.
    """
    seen: set[str] = set()

    def leaves(item: str) -> list[tuple[str, dict]]:
        entry = index.get(item)
        if entry is None or item in seen:
            return []
        seen.add(item)
        kind = entry.kind.name  # TASK, PY_TASK, GROUP or TAG
        if kind in ("TASK", "PY_TASK"):
            return [(item, dict(entry.cfg or {}))]
        listed = (entry.cfg or {}).get("task") if kind == "GROUP" else sorted(entry.tags)
        members = listed if isinstance(listed, list) else [listed] if listed else []
        names = [m if isinstance(m, str) else m.get("task") or m.get("group") for m in members
                 if isinstance(m, (str, dict))]
        return [leaf for m in names if isinstance(m, str) for leaf in leaves(m)]

    return leaves(name)


__all__ = ["index_leaves", "index_paths", "split_include_paths"]
