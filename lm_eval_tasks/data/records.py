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


#: bad lines a :class:`BadLines` message shows in full; the rest are counted
BAD_LINES_SHOWN = 20


class BadLines(DataError):
    """Every bad line of a user's data files, as one error.

    Why not the first one only: a file exported by a script usually holds the same fault
    on many lines, and a user fixing them one run at a time reruns once per line. The
    message shows the first :data:`BAD_LINES_SHOWN` lines in full (file, line, field,
    reason) and counts the rest; ``problems`` holds them all. ``task``: named once, before
    them all, rather than on every line.
    """

    def __init__(self, problems: Sequence[str], task: str | None = None) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:
            super().__init__(where_prefix(task) + self.problems[0])
            return
        shown = capped(self.problems, BAD_LINES_SHOWN, "bad line(s)")
        super().__init__(f"{where_prefix(task)}{len(self.problems)} bad lines in the data; fix them and run "
                         f"again:\n  " + "\n  ".join(shown))


def capped(lines: list[str], limit: int = 10, what: str = "such record(s)") -> list[str]:
    """The first ``limit`` of ``lines`` and one line saying how many more: a file with
    thousands of empty records is a few console lines, not thousands."""
    return lines[:limit] + ([f"... and {len(lines) - limit} more {what}"] if len(lines) > limit else [])


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


def is_blank(text: Any) -> bool:
    """Whether a document or summary is empty (None, "" or whitespace only): such a record
    is left out of a task and counted (``skipped_empty``), never scored as 0."""
    return not str(text or "").strip()


def assign_ids(records: list[dict], places: Sequence[str], prefix: str, *, editable: bool,
               field: str = "id", problems: list[str] | None = None) -> int:
    """Give every record a string ``id`` (``<prefix>/<index>`` when it has none) and keep ids unique.

    Why here: scores, comparisons and demonstration draws are keyed by the id, so a repeat
    must be found wherever records are read, before a model loads (``domsum new-task``, the
    data check of ``domsum run``) as when the task loads. In a file the user can edit
    (``editable``) a repeat is a :class:`DataError` naming the file, the line and ``field``
    (the record's id field); a hub split cannot be edited, so the repeat is renamed
    ``<id>#<n>`` with the original in ``duplicate_id_of``. Returns how many were renamed.
    ``problems``: a list that collects every such error (one line each) instead of raising
    the first, for :class:`BadLines`.
    """
    seen: dict[str, str] = {}
    renamed = 0
    for i, rec in enumerate(records):
        rec.setdefault("id", f"{prefix}/{i}")
        if not isinstance(rec["id"], str):  # ids of mixed types would not fit one table column
            if isinstance(rec["id"], (dict, list)) or rec["id"] is None:
                fail_or_collect(problems, f"{places[i]}: field {field!r} must be a string or a number, got "
                                          f"{type(rec['id']).__name__}")
                continue
            rec["id"] = str(rec["id"])
        if rec["id"] in seen:
            if editable:
                fail_or_collect(problems, f"{places[i]}: field {field!r}: id {rec['id']!r} is already used at "
                                          f"{seen[rec['id']].rsplit(', ', 1)[-1]}; ids must be unique (scores "
                                          f"and comparisons are keyed by them). Give each record its own id, or "
                                          f"remove the id field to number records by position.")
                continue
            original, n = rec["id"], 2
            while f"{original}#{n}" in seen:
                n += 1
            rec["id"], rec["duplicate_id_of"] = f"{original}#{n}", original
            renamed += 1
        seen[rec["id"]] = places[i]
    return renamed


def fail_or_collect(problems: list[str] | None, message: str, error: type[Exception] = DataError) -> None:
    """Raise ``message``, or add it to ``problems`` when the caller collects every bad line."""
    if problems is None:
        raise error(message)
    problems.append(message)


def json_lines(path: Path, prefix: str = "", error: type[Exception] = DataError,
               problems: list[str] | None = None) -> Iterator[tuple[str, Any]]:
    """``(where, parsed value)`` of every non-blank line of a JSON-lines file.

    ``where`` is ``"<prefix><path>, line <n>"``, for the caller's own messages. Lines are
    decoded one by one so that bad UTF-8 is reported with its line number, not as a bare
    ``UnicodeDecodeError`` from deep inside the file iterator; bad UTF-8 and invalid JSON
    raise ``error`` naming the file and line, or, given ``problems``, are added there and
    skipped. A byte-order mark before the first line (Windows editors write one) is not
    part of it.
    """
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            where = f"{prefix}{path}, line {lineno}"
            value, bad = _parse_line(raw)
            if bad:
                fail_or_collect(problems, f"{where}: {bad}", error)
            elif value is not _BLANK:
                yield where, value


_BLANK = object()


def _parse_line(raw: bytes) -> tuple[Any, str | None]:
    """One line's JSON value (:data:`_BLANK` for a blank line), or why it has none."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 ({exc.reason} at byte {exc.start} of the line); re-encode the file as UTF-8"
    if not line.strip():
        return _BLANK, None
    try:
        return json.loads(line), None
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON ({exc.msg}: column {exc.colno})"


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


__all__ = ["BAD_LINES_SHOWN", "BadLines", "HubSource", "SPLITS", "DEFAULT_FIELDS", "DataError", "capped", "assign_ids", "fail_or_collect", "check_text", "is_blank", "json_lines",
           "validate_record", "where_prefix"]
