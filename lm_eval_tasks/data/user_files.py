"""Reading a user domain's splits: JSON lines, CSV or a hub dataset, under the user's field names.

Why beside the loader and not in it: the suite's own benchmarks live in the mirror
layout (``DIR/<benchmark>/<subset>/<split>.jsonl``) or come from a registered hub source,
while a user's domain names its files and fields in its task YAML
(:mod:`lm_eval_tasks.benchmarks.own.configs`). Records come out as the loader's
(``document``, ``summary``, optional ``id``; the user's other fields kept), and every
problem names the task, the file, the line and the field, as the loader's do.
"""

from __future__ import annotations

import csv
import errno
import hashlib
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from custom_metrics.families.dvo import vocabulary_path
from lm_eval_tasks.data.records import BadLines, DataError, assign_ids, fail_or_collect, is_blank, json_lines, \
    validate_record, where_prefix as _where

#: the declared source of every registered user domain, by ``(benchmark, subset)``: the
#: index the loader asks (the catalogue's :func:`~lm_eval_tasks.catalog.register` fills it)
_SOURCES: dict[tuple[str, str], Any] = {}


#: the fields of a domain's record that name a field of its data, as ``DomainSource`` holds them
FIELD_ROLES = ("document_field", "summary_field", "id_field")


class FieldInNoRecord(DataError):
    """A field the domain names (``document_field``, ...) that no record of a file has.

    Why one error and not one bad line per record: a mistyped field name (``--document-field
    text`` for data whose field is ``dialogue``) makes every line bad in the same way, and
    a hundred identical lines hide the one thing to change. Said once, with the fields the
    records do have and the close ones; :meth:`said_as` names the field the way the caller
    took it (``domsum new-task``'s flag).
    """

    def __init__(self, where: str, name: str, role: str, records: int, present: list[str]) -> None:
        self.where, self.name, self.role, self.records, self.present = where, name, role, records, present
        super().__init__(self.said_as(role))

    def said_as(self, label: str) -> str:
        import difflib

        lowered = {p.lower(): p for p in self.present}
        close = [lowered[c] for c in difflib.get_close_matches(self.name.lower(), list(lowered), n=3, cutoff=0.5)]
        return (f"{self.where}: none of its {self.records} record(s) has the field {self.name!r} ({label}); "
                f"their fields: {', '.join(self.present) or 'none'}"
                + (f"; did you mean {' or '.join(map(repr, close))}?" if close else ""))


def register_source(benchmark: str, subset: str, source: Any) -> None:
    """Say where a user domain's records are read from (its task YAML's data files)."""
    _SOURCES[(benchmark, subset)] = source


def user_source(benchmark: str, subset: str) -> Any:
    """The data source a user domain's task YAML declares (None: a suite benchmark's subset,
    read from the mirror or its hub source)."""
    return _SOURCES.get((benchmark, subset))


def split_path(source: Any, split: str, task: str | None) -> Path:
    """The file of ``split``; a split the record does not name is an error saying where to add it."""
    files = source.splits
    if split not in files:
        raise DataError(f"{_where(task)}the domain {source.name!r} has no {split!r} split: add "
                        f"`{split}: FILE` under dataset_kwargs.data_files in its task YAML "
                        f"(it names {', '.join(sorted(files))})")
    return Path(files[split])


def unreadable(path: Path) -> str | None:
    """Why the data file ``path``, which is there, cannot be read (a folder, a symbolic link
    that loops or leads nowhere, not a regular file, forbidden), or None when it can be.

    Why asked of a name that is there: ``Path.is_file()`` answers False for each of these
    alike, so the file was reported as missing ("no test.jsonl", "no train split") while the
    user could see it in the folder.
    """
    if path.is_dir():
        return "it is a folder, not a file"
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the read below
            return "it is not a regular file"
        with open(path, "rb"):
            return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "it is a symbolic link that leads back to itself (too many levels of symbolic links)"
        if exc.errno == errno.ENOENT and path.is_symlink():
            return f"it is a symbolic link to {os.readlink(path)}, which does not exist"
        return (exc.strerror or type(exc).__name__).lower()


def _rename(rec: dict, source: Any, where: str) -> dict:
    out = dict(rec)
    out["document"], out["summary"] = rec[source.document_field], rec[source.summary_field]
    if source.id_field:
        if source.id_field not in rec:
            raise DataError(f"{where}: missing id field {source.id_field!r} (fields present: {sorted(rec)})")
        out["id"] = rec[source.id_field]
    return out


def iter_records(source: Any, split: str, task: str | None = None,
                 problems: list[str] | None = None) -> Iterator[tuple[str, dict]]:
    """``(where, record)`` of one split, validated, under the loader's field names.

    A bad line raises its :class:`DataError`; given ``problems``, its message is added
    there and the line skipped, so that one read finds every bad line. A file that
    cannot be read at all (missing, not UTF-8 as CSV) raises either way."""
    fields = (source.document_field, source.summary_field)
    if source.format == "hub":
        rows = _hub_rows(source, split, task, fields)
    else:
        path = split_path(source, split, task)
        if not path.is_file():
            why = unreadable(path) if os.path.lexists(path) else None
            raise DataError(f"{_where(task)}{split} file {path} "
                            + (f"cannot be read: {why}" if why else "does not exist")
                            + f" (dataset_kwargs.data_files.{split} in the task YAML)")
        rows = (_csv_rows(path, _where(task), problems) if source.format == "csv"
                else json_lines(path, _where(task), problems=problems))
    present: dict[str, None] = {}  # every field name of the records read, in first-seen order
    records = 0
    for where, rec in rows:
        if isinstance(rec, dict):
            present.update(dict.fromkeys(rec))
            records += 1
        try:
            yield where, _rename(validate_record(rec, fields, where), source, where)
        except DataError as exc:
            if problems is None:
                raise
            problems.append(str(exc))
    if problems is not None and records and source.format != "hub":  # a hub split's columns are checked first
        for role in FIELD_ROLES:
            name = getattr(source, role)
            if name and name not in present:
                raise FieldInNoRecord(f"{_where(task)}{path}", name, role, records, list(present))


def _csv_rows(path: Path, prefix: str, problems: list[str] | None = None) -> Iterator[tuple[str, dict]]:
    """Rows of a CSV file with a header line, each with its line number (a row with more
    cells than the header is an error, or one of ``problems``). A byte-order mark, which
    Excel's "CSV UTF-8" writes before the header, is not part of the first column's name;
    Windows line ends are read as line ends."""
    csv.field_size_limit(sys.maxsize)  # documents are long; the default limit is 128 KiB
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            for row in reader:
                where = f"{prefix}{path}, line {reader.line_num}"
                if None in row:
                    fail_or_collect(problems, f"{where}: more cells than the header has columns")
                    continue
                yield where, {k: ("" if v is None else v) for k, v in row.items()}
    except UnicodeDecodeError as exc:
        raise DataError(f"{prefix}{path}: not valid UTF-8 ({exc.reason}); re-encode the file as UTF-8") from None


def table_lines(path: Path, problems: list[str] | None = None) -> Iterator[tuple[str, Any]]:
    """``(where, record)`` of a table a command reads (``domsum rankings``): a CSV file with a
    header line (by its ``.csv`` suffix), else JSON lines, read as a user domain's splits are
    (byte-order mark and Windows line ends handled, a bad line named by file and line)."""
    path = Path(path)
    if not path.is_file():
        why = unreadable(path) if os.path.lexists(path) else "it does not exist"
        raise DataError(f"{path} cannot be read: {why}")
    return _csv_rows(path, "", problems) if path.suffix.lower() == ".csv" else json_lines(path, problems=problems)


def _hub_rows(source: Any, split: str, task: str | None, fields: tuple[str, str]) -> Iterator[tuple[str, dict]]:
    from lm_eval_tasks.data.hub import OFFLINE_HINT, one_line, unreachable

    hub_split = split_path(source, split, task).as_posix()
    what = f"{_where(task)}{source.where(split)}"
    if (reason := unreachable(what)) is not None:
        raise DataError(reason)
    import datasets

    try:
        ds = datasets.load_dataset(source.hub_path, source.hub_name, split=hub_split)
    except Exception as exc:  # network, auth, missing config ...
        raise DataError(f"could not load {what} from the hub ({one_line(exc)}); without internet, "
                        f"{OFFLINE_HINT}.") from exc
    missing = [f for f in fields if f not in ds.column_names]
    if missing:
        raise DataError(f"{what}: no column {', '.join(map(repr, missing))}; columns: {ds.column_names} "
                        f"(set document_field / summary_field under metadata.domain)")
    for i, row in enumerate(ds):
        yield f"{what}, row {i}", dict(row)


def read_split(source: Any, split: str, task: str | None = None) -> tuple[list[dict], list[str]]:
    """Every record of a local ``split`` with its id checked, and one line per record with
    an empty document or summary: what ``domsum new-task`` and ``domsum run``'s data check
    read before a model loads.

    Every bad line (invalid JSON, a missing or non-text field, a repeated id: file, line,
    field and reason) is found in one read and raised as one :class:`BadLines`, in the
    file's order; an empty document or summary is not an error: the record is left out
    when the task loads and counted in the results (``skipped_empty``;
    ``demo_pool_skipped_empty`` for the two-shot task's demonstrations), as for every
    benchmark, and the line says so.
    """
    problems: list[str] = []
    lines = list(iter_records(source, split, task, problems))
    records = [rec for _, rec in lines]
    assign_ids(records, [where for where, _ in lines], split, editable=source.format != "hub",
               field=source.id_field or "id", problems=problems)
    if problems:
        raise BadLines(sorted(problems, key=_line_number))
    counted = ("left out and counted (skipped_empty in the results)" if split != "train" else
               "left out of the demonstrations and counted (demo_pool_skipped_empty in the two-shot task's results)")
    empty = []
    for where, rec in lines:
        blank = [name for name, key in ((source.document_field, "document"), (source.summary_field, "summary"))
                 if is_blank(rec[key])]
        if blank:
            empty.append(f"{where}: field {blank[0]!r} is empty: the record is {counted}")
    return records, empty


def checked_lines(source: Any, split: str, task: str | None = None) -> list[tuple[str, dict]]:
    """Every ``(where, record)`` of a split, or one :class:`BadLines` naming every bad line
    in the file's order, the task named once: what the task reads when it loads (plain
    ``lm_eval`` reaches no data check before the model), so that a file with many bad lines
    is fixed in one go there too."""
    problems: list[str] = []
    try:
        lines = list(iter_records(source, split, None, problems))
    except DataError as exc:  # the file cannot be read at all: the task named, as everywhere
        raise DataError(f"{_where(task)}{exc}") from None
    if problems:
        raise BadLines(sorted(problems, key=_line_number), task=task)
    return lines


def _line_number(problem: str) -> int:
    """The line (or hub row) a problem names: repeated ids, found after every line is read,
    take their place in the file's order."""
    found = re.search(r", (?:line|row) (\d+): ", problem)
    return int(found.group(1)) if found else 0


def first_problem(source: Any, split: str, task: str | None = None) -> str | None:
    """Why ``split`` cannot be read (its first record checked), or None: the check run
    before a model loads."""
    try:
        for _ in iter_records(source, split, task):
            return None
    except DataError as exc:
        return str(exc)
    return f"{_where(task)}{source.where(split)} holds no records"


def data_fingerprint(source) -> str:
    """What identifies a user domain's train data: the file's path, size and modification
    time (a hub split: its dataset, config and split), so an edited file gets a new vocabulary."""
    where = source.where("train")
    if source.format == "hub":
        return where
    st = Path(where).stat()
    return f"{where}:{st.st_size}:{st.st_mtime_ns}"


def domain_vocabulary_path(benchmark: str, subset: str, vocab_dir: str | None) -> Path:
    """The vocabulary file a domain's DVO reads: ``VOCAB_DIR/<benchmark>/<subset>.tsv`` for
    the suite's domains; for a user domain ``VOCAB_DIR/own/<subset>-<digest>.tsv``, the
    digest (12 hex digits) that of its train data's :func:`data_fingerprint`.

    Why the digest in the name: a user domain is named by its task YAML, and two folders
    may name theirs alike; keyed by the name alone they would share one file, each run
    rebuilding it from its own train file under the other's feet. With the digest each
    train file has its own vocabulary, and an edited one gets a new file.
    """
    path = vocabulary_path(benchmark, subset, vocab_dir, must_exist=False)
    source = user_source(benchmark, subset)
    if source is None or "train" not in source.splits:
        return path
    try:
        stamp = data_fingerprint(source)
    except OSError:  # no train file: the run's data check names it
        return path
    return path.with_name(f"{subset}-{hashlib.sha256(stamp.encode()).hexdigest()[:12]}{path.suffix}")
