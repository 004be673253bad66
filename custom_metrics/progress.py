"""Progress bars for the long scoring and counting loops, drawn one way everywhere.

Why one helper: scoring a shard (BERTScore batches, judge requests, ROUGE over thousands
of documents), re-scoring a file, building a vocabulary and token shift all run for
minutes without output otherwise. Every bar goes to stderr, because stdout carries the
commands' tables and JSON; every bar obeys the same switch: an explicit ``enabled``
(a command's ``--no-progress``, the ``progress`` setting), else the ``DOMSUM_PROGRESS``
environment variable (``0``/``false``/``no``/``off`` turn bars off), else on. A loop
over nothing draws nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

#: environment variable that turns every bar off (the ``progress`` row of lm_eval_tasks/setting_table.py)
ENV = "DOMSUM_PROGRESS"
_OFF = frozenset({"0", "false", "no", "off"})


def is_enabled(flag: bool | None = None) -> bool:
    """Whether bars are drawn: ``flag`` when given, else ``$DOMSUM_PROGRESS`` (default on)."""
    if flag is not None:
        return bool(flag)
    return os.environ.get(ENV, "").strip().lower() not in _OFF


def bar(total: int | None, desc: str, *, unit: str = "doc", enabled: bool | None = None,
        min_total: int = 1, leave: bool = True) -> Any:
    """A tqdm bar on stderr (a context manager with ``update``); a silent one when bars are
    off or ``total`` is below ``min_total`` (0 by default: nothing to count)."""
    from tqdm.auto import tqdm

    off = not is_enabled(enabled) or (total is not None and total < max(min_total, 1))
    return tqdm(total=total, desc=desc, unit=unit, disable=off, file=sys.stderr, leave=leave,
                mininterval=0.5, dynamic_ncols=True)


def track(items: Iterable[T], desc: str, *, total: int | None = None, unit: str = "doc",
          enabled: bool | None = None, min_total: int = 1) -> Iterator[T]:
    """``items`` with a bar advancing per item (``total`` defaults to ``len(items)``)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with bar(total, desc, unit=unit, enabled=enabled, min_total=min_total) as b:
        for item in items:
            yield item
            b.update(1)

