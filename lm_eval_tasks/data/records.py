"""Records of a data file: the checks and the line reader every data source shares.

Why a module below the loaders: the suite's mirror and hub loader
(:mod:`lm_eval_tasks.data.loader`) and a user domain's files
(:mod:`lm_eval_tasks.data.user_files`) report bad data the same way, naming the task,
the file, the line and the field; neither imports the other for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from custom_metrics.errors import SuiteError

#: the fields every summarization record has
DEFAULT_FIELDS = ("document", "summary")
#: the splits of a data source, in the mirror's file names
SPLITS = ("train", "validation", "test")


class DataError(SuiteError, ValueError):
    """Bad or missing data; the message always says where and what to do."""


def where_prefix(task: str | None) -> str:
    """``task 'NAME': `` before a message about that task's data (empty without a task)."""
    return f"task {task!r}: " if task else ""


def validate_record(rec: Any, required: Sequence[str], where: str) -> dict:
    """Check one record has every required field as a string; return it."""
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    for name in required:
        if name not in rec:
            raise DataError(
                f"{where}: missing field {name!r} (fields present: {sorted(rec)})"
            )
        if not isinstance(rec[name], str):
            raise DataError(
                f"{where}: field {name!r} must be a string, got {type(rec[name]).__name__}"
            )
        check_text(rec[name], name, where)
    return rec


def check_text(text: str, name: str, where: str) -> None:
    """A lone surrogate (``"\\ud800"`` in JSON) decodes but cannot be written as UTF-8:
    it would crash the run when samples are saved, long after loading."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DataError(f"{where}: field {name!r} holds a lone surrogate ({exc.object[exc.start]!a} at "
                        f"character {exc.start}), which is not text; fix the escape in the file") from None


def json_lines(path: Path, prefix: str = "", error: type[Exception] = DataError) -> Iterator[tuple[str, Any]]:
    """``(where, parsed value)`` of every non-blank line of a JSON-lines file.

    ``where`` is ``"<prefix><path>, line <n>"``, for the caller's own messages. Lines are
    decoded one by one so that bad UTF-8 is reported with its line number, not as a bare
    ``UnicodeDecodeError`` from deep inside the file iterator; bad UTF-8 and invalid JSON
    raise ``error`` naming the file and line.
    """
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            where = f"{prefix}{path}, line {lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise error(f"{where}: not valid UTF-8 ({exc.reason} at byte {exc.start} of the line); "
                            f"re-encode the file as UTF-8") from None
            if not line.strip():
                continue
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{where}: invalid JSON ({exc.msg})") from None



@dataclass(frozen=True)
class HubSource:
    """Where and how a subset comes from the hub.

    ``splits`` maps our split name to the hub split; a single hub split shared by
    several of ours (Reddit TIFU has only ``train``) is partitioned disjointly with
    the seed. ``sample`` gives the paper's per-split sample size (None = all).
    """

    path: str
    name: str | None
    document: str
    summary: str
    splits: dict[str, str] = field(default_factory=lambda: {s: s for s in SPLITS})
    sample: dict[str, int | None] = field(default_factory=dict)
    seed: int = 42
    note: str = ""


__all__ = ["HubSource", "SPLITS", "DEFAULT_FIELDS", "DataError", "check_text", "json_lines", "validate_record", "where_prefix"]
