"""Inputs of a rescore: a harness samples file or a table of predictions, told apart by content.

A samples file is read by :func:`lm_eval_tasks.results.read_samples` (the suite's one
reader of harness output); a table (CSV / TSV, JSON lines, a JSON list of records) by
:func:`read_table`, with the columns the ``--*-column`` flags name, else the one
conventional name present. Why strict: a missing column, two candidate columns, a
non-string or non-UTF-8 field, or a line that is not JSON is an error naming the file,
row/line and field, since a silently misread column gives plausible wrong numbers; a
row with an empty prediction or reference is skipped and listed with why, never scored
as 0.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from custom_metrics import registry
from lm_eval_tasks.catalog import UnknownTask, task_target
from lm_eval_tasks.rescoring.options import Options, ScoreError
from lm_eval_tasks.results import Sample, checked_text, read_samples, read_text

#: column names taken, in this order, when no ``--*-column`` flag names one (the DomainSum
#: paper names no release field; these are the names its and AdaptEval's releases use)
PREDICTION_COLUMNS = ("prediction", "output", "generated")
REFERENCE_COLUMNS = ("summary", "reference", "target")
DOCUMENT_COLUMNS = ("document", "article", "source", "text")
ID_COLUMNS = ("id", "doc_id")
#: input formats: a harness --log_samples file, or a table of predictions
FORMATS = ("harness", "csv", "tsv", "jsonl", "json")


@dataclass
class Loaded:
    """What one input file holds, and how it was read (recorded in the summary)."""

    samples: list[Sample]
    format: str
    #: role -> column read (tables only)
    columns: dict[str, str | None] = field(default_factory=dict)
    #: rows left out because they are empty: where, and the id when the row has one
    skipped_rows: list[dict[str, Any]] = field(default_factory=list)


def detect_format(path: Path, text: str) -> str:
    """One of :data:`FORMATS`, from the extension and then the content.

    A JSON-lines file whose first record has ``doc`` and ``resps`` / ``filtered_resps``
    is a harness samples file, whatever its name; ``.csv`` / ``.tsv`` are tables;
    ``.json`` is one JSON value (a list of records), unless it only parses line by line;
    any other name is read by its first character (``[``: a JSON list, ``{``: JSON lines,
    else a CSV, tab-separated when its header line has tabs and no commas).
    """
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return suffix[1:]
    head = text.lstrip()
    first_record = None
    if head.startswith("{"):
        try:
            first_record = json.loads(head.split("\n", 1)[0])
        except json.JSONDecodeError:
            pass
        if isinstance(first_record, dict) and "doc" in first_record and (
                "filtered_resps" in first_record or "resps" in first_record):
            return "harness"
    if suffix == ".json":
        if first_record is None or "\n" not in head.strip():
            return "json"
        try:
            json.loads(head)
            return "json"
        except json.JSONDecodeError:
            return "jsonl"  # JSON lines under a .json name
    if suffix in (".jsonl", ".ndjson") or head.startswith("{"):
        return "jsonl"
    if head.startswith("["):
        return "json"
    header = head.split("\n", 1)[0]
    return "tsv" if "\t" in header and "," not in header else "csv"


def read_input(path: Path, args: Options, task: str | None) -> Loaded:
    """Samples of one input: a harness samples file or a table of predictions."""
    text = read_text(path)
    fmt = detect_format(path, text)
    if fmt == "harness":
        return Loaded(read_samples(path, args.filter, args.limit, text=text), fmt)
    return read_table(path, text, fmt, args, task)


def table_records(path: Path, text: str, fmt: str) -> tuple[list[tuple[str, dict | None]], list[str]]:
    """(where, record) per row of a CSV / TSV / JSON-lines / JSON-list file, and every column name.

    A blank JSON line is a ``None`` record (an empty row, counted, not an error); a line
    that is not JSON, or a record that is not an object, is an error naming its line.
    """
    rows: list[tuple[str, dict | None]] = []
    columns: dict[str, None] = {}
    if fmt in ("csv", "tsv"):
        csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # whole articles in one cell
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if fmt == "tsv" else ",")
        columns.update(dict.fromkeys(reader.fieldnames or []))
        try:
            for i, rec in enumerate(reader, start=1):
                where = f"{path}, row {i} (line {reader.line_num})"
                if None in rec:
                    raise ScoreError(f"{where}: {len(rec) - 1 + len(rec[None])} fields, the header has "
                                     f"{len(reader.fieldnames or [])}")
                short = [k for k, v in rec.items() if v is None]
                if short and any(v not in (None, "") for v in rec.values()):  # not a blank row
                    raise ScoreError(f"{where}: {len(rec) - len(short)} fields, the header has {len(rec)} "
                                     f"(no {', '.join(map(repr, short))}); a short row would score an empty "
                                     f"{short[-1]}")
                rows.append((where, rec))
        except csv.Error as exc:
            raise ScoreError(f"{path}, line {reader.line_num}: not CSV ({exc})") from None
        return rows, list(columns)
    if fmt == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScoreError(f"{path}, line {exc.lineno}: not JSON ({exc.msg})") from None
        if not isinstance(data, list):
            raise ScoreError(f"{path}: expected a JSON list of records, got a {type(data).__name__}")
        items = [(f"{path}, item [{i}]", rec) for i, rec in enumerate(data)]
    else:
        items = []
        lines = text.split("\n")
        if lines and not lines[-1].strip():
            lines.pop()  # the newline that ends the last record
        for lineno, line in enumerate(lines, start=1):
            where = f"{path}, line {lineno}"
            if not line.strip():
                items.append((where, None))
                continue
            try:
                items.append((where, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise ScoreError(f"{where}: invalid JSON ({exc.msg})") from None
    for where, rec in items:
        if rec is not None and not isinstance(rec, dict):
            raise ScoreError(f"{where}: a record must be a JSON object, got {type(rec).__name__}")
        columns.update(dict.fromkeys(rec or {}))
        rows.append((where, rec))
    return rows, list(columns)


def choose_columns(path: Path, present: list[str], args: Options) -> dict[str, str | None]:
    """role -> column: the ``--*-column`` flag, else the one conventional name present.

    A named or required column that is absent is an error listing the columns present;
    so is a role with two conventional names present (``summary`` and ``target``): the
    scores must not depend on which one a rule happened to prefer. Only ``id`` takes the
    first of several (it names rows, it changes no score).
    """
    listing = ", ".join(present) or "none"
    chosen: dict[str, str | None] = {}
    for role, flag, names, required in (
            ("prediction", args.prediction_column, PREDICTION_COLUMNS, True),
            ("reference", args.reference_column, REFERENCE_COLUMNS, True),
            ("document", args.document_column, DOCUMENT_COLUMNS, False),
            ("id", args.id_column, ID_COLUMNS, False)):
        if flag:
            if flag not in present:
                raise ScoreError(f"{path}: no column {flag!r} (--{role}-column); columns: {listing}")
            chosen[role] = flag
            continue
        found = [n for n in names if n in present]
        if len(found) > 1 and role != "id":
            raise ScoreError(f"{path}: columns {', '.join(found)} could each be the {role}; choose one with "
                             f"--{role}-column (columns: {listing})")
        if not found and required:
            raise ScoreError(f"{path}: no {role} column (looked for {', '.join(names)}; give "
                             f"--{role}-column); columns: {listing}")
        chosen[role] = found[0] if found else None
    return chosen


def read_table(path: Path, text: str, fmt: str, args: Options, task: str | None) -> Loaded:
    """Samples of a table of predictions; rows with an empty prediction or reference are
    skipped and listed, any other bad row is an error naming file, row and field."""
    rows, present = table_records(path, text, fmt)
    cols = choose_columns(path, present, args)
    known = {k for f in registry.all_families() for k in f.key_names}
    given_cols = [c for c in present if c in known and c not in cols.values()]
    loaded = Loaded([], fmt, cols)
    for index, (where, rec) in enumerate(rows):
        rec = rec or {}
        ident = rec.get(cols["id"]) if cols["id"] else None
        if ident is not None and not isinstance(ident, (str, int, float)):
            raise ScoreError(f"{where}, field {cols['id']!r}: expected a string or number, "
                             f"got {type(ident).__name__}")
        ident = None if ident in (None, "") else checked_text(str(ident), where, str(cols["id"]))
        prediction = checked_text(rec.get(cols["prediction"]), where, str(cols["prediction"])).strip()
        reference = checked_text(rec.get(cols["reference"]), where, str(cols["reference"]))
        if not prediction or not reference.strip():  # nothing to compare: counted, never a score of 0
            why = "empty row" if not prediction and not reference.strip() else (
                "empty prediction" if not prediction else "empty reference")
            loaded.skipped_rows.append({"where": where.removeprefix(f"{path}, "), "id": ident, "why": why})
            continue
        document = checked_text(rec.get(cols["document"]), where, str(cols["document"])) if cols["document"] else ""
        try:
            extras = registry.extras_of({k: v for k, v in rec.items() if v not in (None, "")}, task)
            if isinstance(extras.get("length_bin"), str):  # CSV cells are text
                extras["length_bin"] = int(float(extras["length_bin"]))
        except (json.JSONDecodeError, ValueError) as exc:
            raise ScoreError(f"{where}: a control field (keywords, length_bin) is malformed ({exc})") from None
        extras["id"] = ident
        loaded.samples.append(Sample(doc_id=ident if ident is not None else index, id=ident, filter=None,
                                     document=document, reference=reference, prediction=prediction,
                                     extras=extras, given={c: rec.get(c) for c in given_cols}))
        if args.limit is not None and len(loaded.samples) >= args.limit:
            break
    if not loaded.samples:
        raise ScoreError(f"{path}: no rows with a prediction or a reference")
    return loaded


def target_of(task: str | None) -> tuple[str | None, str | None, str | None]:
    """(benchmark, domain, why not) of a samples file's task, from the catalogue.

    A task outside the suite (or no task) gives ``(None, None, reason)``; the reason
    becomes the error only when a metric needs the domain.
    """
    if not task:
        return None, None, "no task: give --task, or --benchmark/--domain (a harness file names its task " \
                           "as samples_<task>_<timestamp>.jsonl)"
    try:
        benchmark, domain = task_target(task)
    except UnknownTask as exc:
        return None, None, str(exc)
    return benchmark, domain, None


__all__ = ["DOCUMENT_COLUMNS", "FORMATS", "ID_COLUMNS", "Loaded", "PREDICTION_COLUMNS", "REFERENCE_COLUMNS",
           "choose_columns", "detect_format", "read_input", "read_table", "table_records", "target_of"]
